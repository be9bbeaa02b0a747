"""shimlab.record: the records `shimlab run`'s modules declare instead of
dataclasses behave as the dataclasses they replaced (Record and Frozen, and
the `record` decorator the JIT's modules use), here side by side with the
dataclasses they stand for."""
from __future__ import annotations

import copy
import pickle

import pytest

import dataclasses

from shimlab.record import Frozen, Record, factory, field, record, replace


class Point(Record):
    x: int
    y: int = 0
    tags: list = factory(list)


class Key(Frozen):
    name: str
    size: int = 1


class Key3(Key):
    extra: str = ""


def test_positional_keyword_and_default_arguments():
    assert (Point(1).x, Point(1).y, Point(1).tags) == (1, 0, [])
    assert Point(1, 2, ["a"]) == Point(y=2, x=1, tags=["a"])
    assert Point(1).tags is not Point(1).tags          # a fresh default per record
    assert repr(Point(1, 2)) == "Point(x=1, y=2, tags=[])"


@pytest.mark.parametrize("args, kwargs, message", [
    ((), {}, "needs 'x'"),
    ((1, 2, [], 4), {}, "takes 3 arguments, 4 given"),
    ((1,), {"x": 2}, "got 'x' twice"),
    ((1,), {"z": 2}, "has no field 'z'"),
])
def test_bad_arguments_are_type_errors(args, kwargs, message):
    with pytest.raises(TypeError, match=message):
        Point(*args, **kwargs)


def test_equality_is_by_class_and_values():
    assert Point(1, 2) != Point(1, 3)
    assert Point(1) != Key("a")
    assert Point(1) != (1, 0, [])
    with pytest.raises(TypeError):
        hash(Point(1))                         # mutable: unhashable


def test_frozen_records_are_immutable_and_hashable():
    k = Key("a")
    with pytest.raises(AttributeError, match="immutable"):
        k.size = 2
    with pytest.raises(AttributeError, match="immutable"):
        del k.name
    assert {Key("a"): 1}[Key("a", 1)] == 1
    assert Key3("a", 2, "e")._fields == ("name", "size", "extra")   # inherited fields first


def test_records_survive_pickle_and_copy():
    # a run's Result crosses back from its child process pickled
    for r in (Point(1, 2, ["t"]), Key3("a", 2, "e")):
        assert pickle.loads(pickle.dumps(r)) == r
        assert copy.deepcopy(r) == r and copy.copy(r) == r


def test_a_required_field_after_a_default_is_refused():
    with pytest.raises(TypeError, match="'b' without a default follows one with a default"):
        class Bad(Record):
            a: int = 0
            b: int


# -- the `record` decorator, against @dataclass with the same declaration ---------

def _pair(frozen=False, slots=False):
    """One declaration, as a `record` and as a dataclass."""
    def declare(deco, fld):
        class Op:
            pc: int
            name: str = "x"
            tags: list = fld(default_factory=list)
            derived: int = fld(init=False, repr=False, compare=False)
            cached: object = fld(default=None, init=False, repr=False, compare=False)

            def __post_init__(self):
                object.__setattr__(self, "derived", 2 * self.pc)
        return deco(frozen=frozen, slots=slots)(Op)
    return declare(record, field), declare(dataclasses.dataclass, dataclasses.field)


@pytest.mark.parametrize("frozen, slots", [(False, False), (True, False), (False, True)])
def test_record_behaves_as_the_dataclass(frozen, slots):
    mine, theirs = _pair(frozen, slots)
    for cls in (mine, theirs):
        a, b = cls(1), cls(1, "x", [])
        assert (a.pc, a.name, a.tags, a.derived, a.cached) == (1, "x", [], 2, None)
        assert a == b and a.tags is not cls(1).tags            # a fresh default each
        assert cls(1, tags=[1]) != a and cls(2) != a and a != (1, "x", [])
        assert repr(a).split("(", 1)[1] == "pc=1, name='x', tags=[])"
        with pytest.raises(TypeError):
            cls()                                               # pc is required
        with pytest.raises(TypeError):
            cls(1, derived=3)                                   # not an __init__ argument
        if frozen:
            c, d = cls(1, "x", ()), cls(1, "x", ())           # (a list field: unhashable)
            assert hash(c) == hash(d) and {c: 1}[d] == 1
            with pytest.raises(AttributeError):
                a.pc = 2
            with pytest.raises(AttributeError):
                del a.pc
        else:
            with pytest.raises(TypeError):
                hash(a)                                          # mutable: unhashable
            a.pc = 5
            assert a.pc == 5
        assert hasattr(a, "__dict__") == (not slots)
    if slots:
        assert mine.__slots__ == ("pc", "name", "tags", "derived", "cached")


def test_replace_makes_a_changed_copy_as_dataclasses_replace():
    mine, theirs = _pair(frozen=True)
    for cls, rep in ((mine, replace), (theirs, dataclasses.replace)):
        a = cls(3, "y", [1])
        b = rep(a, pc=4)
        assert (b.pc, b.name, b.tags, b.derived) == (4, "y", [1], 8)   # __post_init__ ran
        assert a.pc == 3
        with pytest.raises(ValueError):
            rep(a, derived=1)                  # init=False: not replaceable


def test_record_fields_of_a_base_come_first_and_order_is_checked():
    @record(frozen=True)
    class Base:
        a: int
        b: int = 0

    @record(frozen=True)
    class Derived(Base):
        c: str = ""
    assert repr(Derived(1, 2, "z")).endswith(".Derived(a=1, b=2, c='z')")
    assert Derived(1) != Base(1)                          # another class: never equal
    with pytest.raises(TypeError, match="'d' without a default follows one with a default"):
        @record
        class Bad:
            c: int = 0
            d: int


def test_a_method_the_class_defines_is_kept():
    @record(frozen=True)
    class Named:
        name: str

        def __repr__(self):
            return f"<{self.name}>"
    assert repr(Named("n")) == "<n>" and Named("n") == Named("n")


@pytest.mark.parametrize("frozen, slots", [(False, False), (True, False), (False, True)])
def test_records_of_the_decorator_survive_pickle_and_copy(frozen, slots):
    cls = _PICKLED[(frozen, slots)]
    r = cls(1, "x", [2])
    for again in (pickle.loads(pickle.dumps(r)), copy.deepcopy(r), copy.copy(r)):
        assert again == r and again.derived == 2


def _module_level(frozen, slots):
    class Op:
        pc: int
        name: str = "x"
        tags: list = field(default_factory=list)
        derived: int = field(init=False, repr=False, compare=False)

        def __post_init__(self):
            object.__setattr__(self, "derived", 2 * self.pc)
    Op.__qualname__ = Op.__name__ = f"Op_{int(frozen)}{int(slots)}"
    cls = record(frozen=frozen, slots=slots)(Op)
    globals()[cls.__name__] = cls                        # where pickle finds it
    return cls


_PICKLED = {k: _module_level(*k) for k in [(False, False), (True, False), (False, True)]}


def test_generated_inits_are_compiled_once_and_kept_between_processes(tmp_path, monkeypatch):
    """The __init__ of a record is compiled once and its code kept in the
    build directory: a later process (here: the module's memory of the file
    cleared) reads it instead of compiling; a damaged file is ignored."""
    from shimlab import record as rec
    monkeypatch.setenv("SHIMLAB_BUILD_DIR", str(tmp_path))
    monkeypatch.setattr(rec, "_codes", None)

    def declare():
        @record
        class Kept:
            alpha_kept: int
            beta_kept: list = field(default_factory=list)
        return Kept

    assert declare()(1).beta_kept == []
    path = tmp_path / "record-inits.bin"
    assert path.is_file() and b"alpha_kept" in path.read_bytes()

    def no_compile(*args):
        raise AssertionError("compiled again")
    monkeypatch.setattr(rec, "_codes", None)
    monkeypatch.setattr(rec, "compile", no_compile, raising=False)
    kept = declare()
    assert kept(2, [3]) == kept(2, [3]) != kept(2)

    blob = bytearray(path.read_bytes())
    blob[-3] ^= 0xFF                   # one byte of the code: the CRC tells
    path.write_bytes(bytes(blob))
    monkeypatch.setattr(rec, "_codes", None)
    with pytest.raises(AssertionError, match="compiled again"):
        declare()
    monkeypatch.delattr(rec, "compile")
    assert declare()(4).alpha_kept == 4
