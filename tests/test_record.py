"""shimlab.record: the records `shimlab run`'s modules declare instead of
dataclasses behave as the dataclasses they replaced."""
from __future__ import annotations

import copy
import pickle

import pytest

from shimlab.record import Frozen, Record, factory


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
