"""A run's limits and Result are one definition (shimlab.result) that the
native loader and the oracle both use: neither takes them from the other."""
from __future__ import annotations

import inspect
import re

from shimlab import oracle, result
from shimlab.abi.vmh import ffi
from shimlab.interp import loader


def test_the_loader_and_the_oracle_default_to_the_same_limits():
    native = inspect.signature(loader.Loaded).parameters
    python = inspect.signature(oracle.run).parameters
    for name, value in (("tape_len", result.TAPE_LEN), ("stack_size", result.STACK_SIZE),
                        ("max_depth", result.MAX_DEPTH)):
        assert native[name].default == value == python[name].default, name


def test_both_return_the_one_result_type():
    assert loader.Result is result.Result and oracle.Result is result.Result
    assert oracle.describe_error is result.describe_error


def test_the_limits_are_fields_of_sl_vm():
    fields = dict(ffi().typeof("sl_vm").fields)
    for name in ("tape_len", "stack_size", "max_depth"):
        assert name in fields


def test_the_loader_does_not_import_the_oracle():
    src = inspect.getsource(loader)
    assert not re.search(r"^\s*from \S*oracle import|^\s*from \.+ import .*\boracle\b", src, re.M)
