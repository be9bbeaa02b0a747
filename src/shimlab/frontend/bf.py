"""BF to shimlab bytecode, with the folding every serious BF interpreter does.

Runs of + and - become one CELL_ADD, runs of < and > one MOVE (the tape
bounds are checked once per folded move), [-] and [+] become CELL_ZERO.
'[' is a forward JUMP_IF_CELL_ZERO, ']' the LOOP_IF_CELL back-edge.
"""
from __future__ import annotations

import re
from bisect import bisect_right

from .. import isa
from ..bytecode import Function, Program
from ..errors import FrontendError

COMMANDS = set("+-<>[].,")
_COMMAND_RE = re.compile(r"[-+<>\[\].,]")


def compile_source(source: str, filename: str = "<bf>") -> Program:
    # One flat loop over the commands, brackets patched through a list used
    # as a stack: a program of 10**6 nested loops compiles in seconds, with
    # no recursion and no per-loop label objects (the Assembler's labels cost
    # several times more per bracket).
    offsets = [m.start() for m in _COMMAND_RE.finditer(source)]
    chars = [source[o] for o in offsets]
    line_starts = [0] + [m.end() for m in re.finditer("\n", source)]

    def position(k: int) -> tuple[int, int]:
        line = bisect_right(line_starts, offsets[k])
        return line, offsets[k] - line_starts[line - 1] + 1

    op = isa.OPCODE
    CELL_ADD, MOVE, CELL_ZERO = op["CELL_ADD"], op["MOVE"], op["CELL_ZERO"]
    OPEN, CLOSE = op["JUMP_IF_CELL_ZERO"], op["LOOP_IF_CELL"]
    SIMPLE = {".": op["CELL_OUT"], ",": op["CELL_IN"]}
    code: list[tuple[int, int]] = []
    positions: list[tuple[int, int]] = []
    open_loops: list[tuple[int, int]] = []   # (pc of the '[', its token index)
    i, n = 0, len(chars)
    while i < n:
        ch = chars[i]
        start = i
        if ch in "+-":
            total = 0
            while i < n and chars[i] in "+-":
                total += 1 if chars[i] == "+" else -1
                i += 1
            total %= 256
            if total:
                code.append((CELL_ADD, total - 256 if total > 127 else total))
                positions.append(position(start))
            continue
        if ch in "<>":
            total = 0
            while i < n and chars[i] in "<>":
                total += 1 if chars[i] == ">" else -1
                i += 1
            if total:
                code.append((MOVE, total))
                positions.append(position(start))
            continue
        if ch == "[" and i + 2 < n and chars[i + 1] in "+-" and chars[i + 2] == "]":
            code.append((CELL_ZERO, 0))
            positions.append(position(start))
            i += 3
            continue
        if ch == "[":
            open_loops.append((len(code), i))
            code.append((OPEN, 0))                  # patched at the matching ']'
        elif ch == "]":
            if not open_loops:
                ln, col = position(i)
                raise FrontendError(f"{filename}:{ln}:{col}: unbalanced ']' (no '[' before it)")
            open_pc, _ = open_loops.pop()
            pc = len(code)
            code.append((CLOSE, open_pc + 1 - pc))   # back to the first instruction of the body
            code[open_pc] = (OPEN, pc + 1 - open_pc)  # forward past the ']'
        else:
            code.append((SIMPLE[ch], 0))
        positions.append(position(i))
        i += 1
    if open_loops:
        ln, col = position(open_loops[-1][1])
        raise FrontendError(f"{filename}:{ln}:{col}: unbalanced '[' (no matching ']')")
    code.append((op["HALT"], 0))
    positions.append(position(n - 1) if n else (0, 0))
    return Program(name=filename, code=code, positions=positions, language="bf",
                   functions=[Function("<bf>", 0, 0, 0)])
