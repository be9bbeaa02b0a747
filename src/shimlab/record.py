"""Records declared as dataclasses are, for the modules `shimlab run` imports.

dataclasses imports inspect, and with it ast, dis and tokenize: about a tenth
of a tiny run's start-up.  A class deriving from Record (or Frozen) declares
its fields with annotations and defaults as a dataclass does (`factory(list)`
for a fresh default per record) and gets the same positional and keyword
constructor, value equality and repr; Frozen records are also immutable and
hashable, as `@dataclass(frozen=True)` makes them.

The rule (tests/test_fast_start.py holds it): Record in the modules a tiny
interpreter run imports, dataclasses everywhere else.  Converging on
dataclasses would cost such a run about 10 ms, 6-7% of it (measured side by
side, AMD EPYC Zen 4); converging on Record would give up field(init=False),
__post_init__, asdict, replace and slots, which 15 of them use.
"""
from __future__ import annotations

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
