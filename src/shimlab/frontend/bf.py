"""BF to shimlab bytecode, with the folding every serious BF interpreter does.

Runs of + and - become one CELL_ADD, runs of < and > one MOVE (the tape
bounds are checked once per folded move), [-] and [+] become CELL_ZERO.
'[' is a forward JUMP_IF_CELL_ZERO, ']' the LOOP_IF_CELL back-edge.
"""
from __future__ import annotations

from ..bytecode import Assembler, Function, Program
from ..errors import FrontendError

COMMANDS = set("+-<>[].,")


def _positions(source: str):
    line, col = 1, 1
    for ch in source:
        yield ch, line, col
        if ch == "\n":
            line, col = line + 1, 1
        else:
            col += 1


def compile_source(source: str, filename: str = "<bf>") -> Program:
    tokens = [(ch, ln, col) for ch, ln, col in _positions(source) if ch in COMMANDS]
    asm = Assembler(filename, "bf")
    open_loops: list[tuple[int, int, object, object]] = []  # line, col, body label, exit label
    i = 0
    while i < len(tokens):
        ch, ln, col = tokens[i]
        asm.position = (ln, col)
        if ch in "+-":
            total = 0
            while i < len(tokens) and tokens[i][0] in "+-":
                total += 1 if tokens[i][0] == "+" else -1
                i += 1
            total %= 256
            if total:
                asm.emit("CELL_ADD", total - 256 if total > 127 else total)
            continue
        if ch in "<>":
            total = 0
            while i < len(tokens) and tokens[i][0] in "<>":
                total += 1 if tokens[i][0] == ">" else -1
                i += 1
            if total:
                asm.emit("MOVE", total)
            continue
        if ch == "[" and i + 2 < len(tokens) and tokens[i + 1][0] in "+-" and tokens[i + 2][0] == "]":
            asm.emit("CELL_ZERO")
            i += 3
            continue
        if ch == "[":
            body, exit_ = asm.label(), asm.label()
            asm.emit("JUMP_IF_CELL_ZERO", exit_)
            asm.bind(body)
            open_loops.append((ln, col, body, exit_))
        elif ch == "]":
            if not open_loops:
                raise FrontendError(f"{filename}:{ln}:{col}: unbalanced ']' (no '[' before it)")
            _, _, body, exit_ = open_loops.pop()
            asm.emit("LOOP_IF_CELL", body)
            asm.bind(exit_)
        elif ch == ".":
            asm.emit("CELL_OUT")
        elif ch == ",":
            asm.emit("CELL_IN")
        i += 1
    if open_loops:
        ln, col, _, _ = open_loops[-1]
        raise FrontendError(f"{filename}:{ln}:{col}: unbalanced '[' (no matching ']')")
    if tokens:
        asm.position = tokens[-1][1:]
    asm.emit("HALT")
    program = asm.finish()
    program.functions = [Function("<bf>", 0, 0, 0)]
    return program
