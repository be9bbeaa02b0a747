"""Records declared as dataclasses are, for the modules `shimlab run` imports.

dataclasses imports inspect, and with it ast, dis and tokenize: about a tenth
of a tiny run's start-up.  A class deriving from Record (or Frozen) declares
its fields with annotations and defaults as a dataclass does (`factory(list)`
for a fresh default per record) and gets the same positional and keyword
constructor, value equality and repr; Frozen records are also immutable and
hashable, as `@dataclass(frozen=True)` makes them.

The JIT's modules, which a JIT run imports, declare theirs with `record`,
a class decorator taking the subset of @dataclass they use (frozen, slots,
field(default, default_factory, init, repr, compare), __post_init__ and
replace): its __init__ is generated as a dataclass's is, so records made by
the thousand (a trace's instructions and pieces, the stencils) cost what a
dataclass's do, while declaring one costs a tenth (dataclasses' import and
its ~0.6 ms a class were ~22 ms of a JIT process's start, issue 24).

The rule (tests/test_fast_start.py holds it): Record and `record` in the
modules `shimlab run` imports (a tiny interpreter run's and a JIT run's),
dataclasses everywhere else.  Converging on dataclasses would cost a tiny
interpreter run about 10 ms, 6-7% of it (measured side by side, AMD EPYC
Zen 4); converging on Record would give up field(init=False), __post_init__,
asdict, replace and slots, which 15 of them use.
"""
from __future__ import annotations

import sys
import types
from operator import attrgetter

_MISSING = object()


class factory:
    """A default made anew for each record (a dataclass's default_factory)."""
    __slots__ = ("make",)

    def __init__(self, make):
        self.make = make


class Record:
    # (not annotated: annotations are the fields)
    _fields = ()                # the fields' names, in order
    _defaults = {}              # name -> default (or factory)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        names = [name for klass in reversed(cls.__mro__)
                 for name in vars(klass).get("__annotations__", {})]
        cls._fields = tuple(dict.fromkeys(names))
        cls._defaults = {name: getattr(cls, name) for name in cls._fields if hasattr(cls, name)}
        required = [name for name in cls._fields if name not in cls._defaults]
        if required and cls._fields.index(required[-1]) >= len(required):
            raise TypeError(f"{cls.__name__}: field {required[-1]!r} without a default "
                            "follows one with a default")

    def __init__(self, *args, **kwargs):
        fields = self._fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__}() takes {len(fields)} arguments, "
                            f"{len(args)} given")
        values = dict(zip(fields, args))
        for name, value in kwargs.items():
            if name not in fields:
                raise TypeError(f"{type(self).__name__}() has no field {name!r}")
            if name in values:
                raise TypeError(f"{type(self).__name__}() got {name!r} twice")
            values[name] = value
        for name in fields:
            if name not in values:
                default = self._defaults.get(name, _MISSING)
                if default is _MISSING:
                    raise TypeError(f"{type(self).__name__}() needs {name!r}")
                values[name] = default.make() if isinstance(default, factory) else default
            object.__setattr__(self, name, values[name])

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    __hash__ = None     # mutable: unhashable, as a dataclass with eq is

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({fields})"


class Frozen(Record):
    """An immutable Record, hashable by its values."""

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")

    def __delattr__(self, name):
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")

    def __hash__(self):
        return hash(self._values())


# -- `record`: generated records ------------------------------------------------

class field:
    """A field's options, as dataclasses.field's (those `record` supports)."""
    __slots__ = ("name", "default", "default_factory", "init", "repr", "compare")

    def __init__(self, *, default=_MISSING, default_factory=_MISSING, init: bool = True,
                 repr: bool = True, compare: bool = True):
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("a field has a default or a default_factory, not both")
        self.name = ""
        self.default, self.default_factory = default, default_factory
        self.init, self.repr, self.compare = init, repr, compare


def record(cls=None, /, *, frozen: bool = False, slots: bool = False):
    """@record, @record(frozen=True), @record(slots=True): a class whose
    annotations are its fields, given what @dataclass with those options
    gives it (__init__, __repr__, __eq__, a __hash__ when frozen, none when
    not) and what a method the class defines itself is kept in place of.
    Fields of a base class decorated so come first."""
    def wrap(c):
        return _make(c, frozen, slots)
    return wrap if cls is None else wrap(cls)


def replace(obj, /, **changes):
    """A copy of a `record` with some fields changed (dataclasses.replace)."""
    for f in obj.__record_fields__:
        if not f.init:
            if f.name in changes:
                raise ValueError(f"field {f.name} is not set by __init__: replace cannot change it")
        elif f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)


def _getter(names: tuple):
    """obj -> the tuple of those attributes (attrgetter: in C)."""
    if len(names) >= 2:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _frozen_setattr(self, name, value):
    raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")


def _frozen_delattr(self, name):
    raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")


# -- the generated __init__s' code, kept between processes ----------------------
# Compiling a record's __init__ took ~170 us, ~2.7 ms of a JIT run's start
# (16 records) and ~1.5 ms of a tiny interpreter run's.  The code objects
# are kept in one file of the build directory, keyed by their source (which
# decides them) under this Python's exact version (marshal's format), and
# read once a process; a record not there is compiled and the file
# rewritten, merged with what other processes wrote meanwhile.
_CODES_MAGIC = b"SLRI1" + sys.version.encode() + b"\0"
_codes: dict | None = None


def _codes_path() -> str:
    import os
    from .paths import build_dir
    return os.path.join(build_dir(), "record-inits.bin")


def _read_codes() -> dict:
    from .cachefile import read_sealed
    codes = read_sealed(_codes_path(), _CODES_MAGIC)
    return codes if isinstance(codes, dict) else {}


def _init_code(src: str):
    """The compiled code of a generated __init__'s source (a module's code
    that defines it)."""
    global _codes
    if _codes is None:
        _codes = _read_codes()
    code = _codes.get(src)
    if code is None or not isinstance(code, types.CodeType):
        code = _codes[src] = compile(src, "<record __init__>", "exec")
        try:
            from .cachefile import write_sealed
            path = _codes_path()
            write_sealed(path, _CODES_MAGIC, {**_read_codes(), **_codes})
        except OSError:
            pass            # a read-only build directory: compiled again next time
    return code


def _make(cls, frozen: bool, slots: bool):
    fields = {f.name: f for base in reversed(cls.__mro__[1:])
              for f in base.__dict__.get("__record_fields__", ())}
    for name in cls.__dict__.get("__annotations__", {}):
        value = cls.__dict__.get(name, _MISSING)
        f = value if isinstance(value, field) else field(default=value)
        f.name = name
        fields[name] = f
        if f.default is _MISSING or slots:
            if name in cls.__dict__:
                delattr(cls, name)        # a field() or a slot's name: not a class attribute
        else:
            setattr(cls, name, f.default)
    fields = tuple(fields.values())
    cls.__record_fields__ = fields
    # __init__, generated: positional and keyword arguments as the dataclass's
    glob = {"_MISSING": _MISSING, "_set": object.__setattr__}
    params, body, seen_default = [], [], None
    for f in fields:
        d, fac = f"_d_{f.name}", f"_f_{f.name}"
        glob[d], glob[fac] = f.default, f.default_factory
        if f.init:
            if f.default is not _MISSING:
                params.append(f"{f.name}={d}")
                seen_default = f.name
            elif f.default_factory is not _MISSING:
                params.append(f"{f.name}=_MISSING")
                seen_default = f.name
            elif seen_default:
                raise TypeError(f"{cls.__name__}: field {f.name!r} without a default "
                                f"follows one with a default")
            else:
                params.append(f.name)
            value = f"{fac}() if {f.name} is _MISSING else {f.name}" \
                if f.default_factory is not _MISSING else f.name
        elif f.default_factory is not _MISSING:
            value = f"{fac}()"
        elif f.default is not _MISSING:
            value = d
        else:
            continue                      # set by __post_init__
        body.append(f"_set(self, {f.name!r}, {value})" if frozen else f"self.{f.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    src = f"def __init__(self, {', '.join(params)}):\n    " + "\n    ".join(body or ["pass"])
    exec(_init_code(src), glob)
    init = glob["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    shown = tuple(f.name for f in fields if f.repr)
    key = _getter(tuple(f.name for f in fields if f.compare))

    def __repr__(self):
        return f"{type(self).__qualname__}(" + ", ".join(
            f"{name}={getattr(self, name)!r}" for name in shown) + ")"

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    def __hash__(self):
        return hash(key(self))

    own = dict(cls.__dict__)
    methods = {"__init__": init, "__repr__": __repr__, "__eq__": __eq__}
    if "__hash__" not in own or (own["__hash__"] is None and "__eq__" not in own):
        methods["__hash__"] = __hash__ if frozen else None
    if frozen:
        methods.update(__setattr__=_frozen_setattr, __delattr__=_frozen_delattr)
    for name, fn in methods.items():
        if name not in own or name == "__hash__":
            if fn is not None:
                fn.__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(cls, name, fn)
    if slots:
        own = dict(cls.__dict__)
        for name in ("__dict__", "__weakref__"):
            own.pop(name, None)
        own["__slots__"] = tuple(f.name for f in fields)
        qualname = cls.__qualname__
        cls = type(cls)(cls.__name__, cls.__bases__, own)
        cls.__qualname__ = qualname
    return cls
