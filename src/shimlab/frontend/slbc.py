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
"""
from __future__ import annotations

import json

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
    try:
        data = json.loads(source)
    except json.JSONDecodeError as e:
        raise FrontendError(f"{filename}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    return from_dict(data, filename)


def to_dict(program: Program) -> dict:
    """The .slbc form of a program (instructions by name)."""
    return {"code": [[isa.INSTRUCTIONS[op].name if 0 <= op < isa.NUM_OPCODES else op, arg]
                     for op, arg in program.code],
            "consts": list(program.consts),
            "functions": [{"name": f.name, "entry": f.entry, "nargs": f.nargs,
                           "nlocals": f.nlocals} for f in program.functions]}
