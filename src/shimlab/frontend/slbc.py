"""Raw bytecode as a JSON file (.slbc), so bytecode no front end would emit
can be run, disassembled and kept as a regression case (tests/regression).

    {"code": [["LOAD_INT", 7], ["PRINT", 10], ["HALT", 0]],
     "consts": [1099511627776],
     "functions": [{"name": "main", "entry": 0, "nargs": 0, "nlocals": 0}]}

An instruction is [opcode, operand]; the opcode is a name from isa.py or a
number (a number out of range is left for the verifier to refuse, which is
how a bad opcode is tested).  "consts" and "functions" may be left out (no
constants; one entry function with no locals).  This module checks only the
shape of the JSON; the verifier checks the bytecode, as for every front end.

Big files: the "code" list is parsed a chunk of instructions at a time into
shared (opcode, operand) tuples, never as one JSON tree, so memory stays a few
bytes per source byte; anything the fast path does not recognise is parsed
whole by `json`, which gives the exact error.
"""
from __future__ import annotations

import gc
import json
import re
import sys
from operator import itemgetter

from .. import isa
from ..bytecode import Function, Program
from ..errors import FrontendError

KEYS = {"code", "consts", "functions"}
FUNCTION_KEYS = {"name", "entry", "nargs", "nlocals"}


def _int(value, what: str, filename: str, lo: int, hi: int) -> int:
    if type(value) is not int or not lo <= value <= hi:
        raise FrontendError(f"{filename}: {what} must be an integer in {lo}..{hi}, "
                            f"not {json.dumps(value)}")
    return value


def from_dict(data, filename: str) -> Program:
    if not isinstance(data, dict):
        raise FrontendError(f"{filename}: .slbc must be a JSON object with a \"code\" list")
    unknown = set(data) - KEYS
    if unknown:
        raise FrontendError(f"{filename}: unknown key {sorted(unknown)[0]!r} "
                            f"(expected {', '.join(sorted(KEYS))})")
    code_in = data.get("code")
    if not isinstance(code_in, list):
        raise FrontendError(f"{filename}: \"code\" must be a list of [opcode, operand]")
    code = []
    for pc, ins in enumerate(code_in):
        if not (isinstance(ins, list) and len(ins) == 2):
            raise FrontendError(f"{filename}: pc {pc}: an instruction is [opcode, operand], "
                                f"not {json.dumps(ins)}")
        op, arg = ins
        if isinstance(op, str):
            if op not in isa.OPCODE:
                raise FrontendError(f"{filename}: pc {pc}: unknown instruction {op!r}")
            op = isa.OPCODE[op]
        elif type(op) is not int:
            raise FrontendError(f"{filename}: pc {pc}: opcode must be a name or a number, "
                                f"not {json.dumps(op)}")
        # operand range and kind are the verifier's job; here only "an int"
        if type(arg) is not int:
            raise FrontendError(f"{filename}: pc {pc}: operand must be an integer, "
                                f"not {json.dumps(arg)}")
        code.append((op, arg))
    consts_in = data.get("consts", [])
    if not isinstance(consts_in, list):
        raise FrontendError(f"{filename}: \"consts\" must be a list of integers")
    consts = [_int(c, f"constant {i}", filename, isa.INT64_MIN, isa.INT64_MAX)
              for i, c in enumerate(consts_in)]
    funcs_in = data.get("functions", [{"name": "main", "entry": 0, "nargs": 0, "nlocals": 0}])
    if not isinstance(funcs_in, list):
        raise FrontendError(f"{filename}: \"functions\" must be a list of objects")
    functions = []
    for i, f in enumerate(funcs_in):
        if not isinstance(f, dict) or set(f) - FUNCTION_KEYS or "entry" not in f:
            raise FrontendError(f"{filename}: function {i} must be an object with \"entry\" "
                                f"and optionally \"name\", \"nargs\", \"nlocals\"")
        name = f.get("name", f"f{i}")
        if not isinstance(name, str):
            raise FrontendError(f"{filename}: function {i}: name must be a string")
        functions.append(Function(name, _int(f["entry"], f"function {i} entry", filename,
                                              0, isa.INT32_MAX),
                                   _int(f.get("nargs", 0), f"function {i} nargs", filename,
                                        0, isa.INT32_MAX),
                                   _int(f.get("nlocals", 0), f"function {i} nlocals", filename,
                                        0, isa.INT32_MAX)))
    return Program(name=filename, code=code, consts=consts, functions=functions,
                   language="bytecode")


def compile_source(source: str, filename: str = "<slbc>") -> Program:
    # Millions of new lists and tuples, none of them cyclic: the cyclic
    # garbage collector would rescan them all again and again (2-3x the time).
    collecting = gc.isenabled()
    gc.disable()
    try:
        program = _fast(source, filename)
        if program is not None:
            return program
        return from_dict(_loads(source, filename), filename)
    except MemoryError:
        raise FrontendError(f"{filename}: out of memory reading {len(source):,} bytes of "
                            f"bytecode JSON") from None
    finally:
        if collecting:
            gc.enable()


def _loads(text: str, filename: str):
    """json.loads with one-line errors for everything it can raise."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise FrontendError(f"{filename}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    except RecursionError:
        raise FrontendError(f"{filename}: JSON nested too deeply (a .slbc file is an object "
                            f"of lists of [opcode, operand])") from None
    except ValueError:      # an integer beyond Python's str-to-int digit limit
        raise FrontendError(f"{filename}: an integer with more than "
                            f"{sys.get_int_max_str_digits()} digits (operands and constants "
                            f"are 64-bit)") from None


# -- the fast path for big files -----------------------------------------------

_HEAD = re.compile(r'\s*\{\s*"code"\s*:\s*\[\s*')
_CHUNK = 1 << 20      # source characters parsed at once


def _chunk(source: str, pos: int):
    """The instructions from pos to about _CHUNK characters on, parsed, and
    where the list goes on (at "," or its closing "]"); (None, 0) if no
    stretch of instructions from pos parses.

    A chunk ends after a "]" followed by "," or "]".  If that "]" was not an
    instruction's end (inside a string, a nested list, past the end of the
    code list), the chunk does not parse and a shorter one is tried."""
    n, step = len(source), _CHUNK
    while True:
        end = source.find("]", pos + step) if pos + step < n else -1
        if end >= 0:
            after = end + 1
            while after < n and source[after] in " \t\r\n":
                after += 1
            if after < n and source[after] in ",]":
                try:
                    return json.loads("[" + source[pos:end + 1] + "]"), after
                except (ValueError, RecursionError):
                    pass
        if step == 0:
            return None, 0
        step //= 2


def _append(code: list, shared: dict, chunk: list) -> bool:
    """Append the chunk's instructions as shared (opcode, operand) tuples;
    False if one is not [name or int, int].  Checked a whole chunk at a
    time with C-level loops (map, set): a 50 MB file has 3 million of them."""
    if set(map(type, chunk)) != {list} or set(map(len, chunk)) != {2}:
        return False
    ops = list(map(itemgetter(0), chunk))
    args = list(map(itemgetter(1), chunk))
    if set(map(type, args)) != {int} or not set(map(type, ops)) <= {str, int}:
        return False
    names = isa.OPCODE
    table = {op: (op if type(op) is int else names.get(op)) for op in set(ops)}
    if None in table.values():
        return False              # an unknown name: the slow path says which and where
    pairs = list(zip(map(table.__getitem__, ops), args))
    code.extend(map(shared.setdefault, pairs, pairs))
    return True


def _fast(source: str, filename: str) -> Program | None:
    """The program, when "code" comes first and every chunk of it parses;
    None to let the whole-document path decide (and word the error)."""
    head = _HEAD.match(source)
    if head is None or len(source) < _CHUNK:
        return None
    code: list[tuple[int, int]] = []
    shared: dict[tuple[int, int], tuple[int, int]] = {}
    pos = head.end()
    if source.startswith("]", pos):
        return None
    while True:
        chunk, after = _chunk(source, pos)
        if chunk is None:
            return None
        if not _append(code, shared, chunk):
            return None
        del chunk
        if source[after] == "]":
            break
        pos = after + 1
    # the rest of the document (a second "code" key, which JSON lets win,
    # and any error there are the slow path's to decide and word)
    if source.find('"code"', after) >= 0:
        return None
    try:
        rest = json.loads('{"code": []' + source[after + 1:])
    except (ValueError, RecursionError):
        return None
    program = from_dict(rest, filename)
    program.code = code
    return program


def to_dict(program: Program) -> dict:
    """The .slbc form of a program (instructions by name)."""
    return {"code": [[isa.INSTRUCTIONS[op].name if 0 <= op < isa.NUM_OPCODES else op, arg]
                     for op, arg in program.code],
            "consts": list(program.consts),
            "functions": [{"name": f.name, "entry": f.entry, "nargs": f.nargs,
                           "nlocals": f.nlocals} for f in program.functions]}
