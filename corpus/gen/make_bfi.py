"""Generate corpus/bf/bfi.bf: a BF interpreter written in BF.

It reads a BF program from its input up to a '!', then runs it; the inner
program's ',' reads the rest of the input.  The layout on the tape:

    record 0 (5 cells)      op 0, t 0 (the left end), m (the mailbox), 2 scratch
    records 1 .. N          the program, one instruction a record:
                            op (1 + - > < [ ] . , as 1..8), t, x, y, f
    record N + 1            the end: op 0, t 1
    cell P = 5 (N + 2) + 1  the separator (0), where the data starts
    data cell j             v at P + 2 + 3j, h at P + 3 + 3j, w at P + 4 + 3j

t is 1 in every instruction record but the current one (the interpreter's
ip), so a scan over the t cells from either side stops at the ip; h is 1
in every data cell left of the inner program's head and 0 at the head, so
a scan from the separator stops at the head.  A bracket that jumps is
decided at the data cell and carried to the ip through the mailbox; the
search for the matching bracket moves the ip carrying the depth along in
the x cells.  The scans are the loops of a hand-written interpreter's kind
(`[>>>>>]`, `[<<<]`), every instruction is decoded by a chain of nested
tests.  The generator only spells out the moves; bfi_model below is the
same machine in Python, and main checks the program's output against it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import header, check_output  # noqa: E402

OUT = HERE.parent / "bf"
CODE = 5            # cells of an instruction record: op t x y f
OP, T, X, Y, F = range(CODE)
DATA = 3            # cells of a data record: v h w
OPS = "+-><[].,"     # op codes 1..8


def mv(n: int) -> str:
    return ">" * n if n > 0 else "<" * -n


class Asm:
    """BF text with the head's offset within the current record tracked."""

    def __init__(self):
        self.parts: list[str] = []
        self.off = 0

    def to(self, off: int) -> "Asm":
        self.parts.append(mv(off - self.off))
        self.off = off
        return self

    def put(self, text: str) -> "Asm":
        self.parts.append(text)
        return self

    def comment(self, text: str) -> "Asm":
        assert not set(text) & set("+-<>[].,"), text
        self.parts.append("\n" + text + "\n")
        return self

    def text(self) -> str:
        return "".join(self.parts)


def to_head(a: Asm) -> None:
    """From the ip record's t to the inner head's v (offset 0 of its data record)."""
    a.to(T).put(mv(CODE) + "[" + mv(CODE) + "]")         # over the t cells to the separator
    a.put(mv(DATA) + "[" + mv(DATA) + "]" + mv(-1))      # over the h cells to the head, to v
    a.off = 0


def to_ip_from_head(a: Asm, at: int) -> None:
    """From offset `at` of the head's data record back to the ip's t."""
    a.put(mv(1 - at) + mv(-DATA) + "[" + mv(-DATA) + "]")   # h cells, to the separator
    a.put(mv(-CODE) + "[" + mv(-CODE) + "]")                 # t cells, to the ip
    a.off = T


def ip_to_mailbox(a: Asm) -> None:
    a.to(T).put(mv(-CODE) + "[" + mv(-CODE) + "]" + mv(1))  # to record 0's t, then m
    a.off = "m"


def mailbox_to_ip(a: Asm) -> None:
    assert a.off == "m"
    a.put(mv(-1) + mv(CODE) + "[" + mv(CODE) + "]")
    a.off = T


def switch(a: Asm, cases: list, y: int, f: int) -> None:
    """Runs cases[k - 1] when cell y holds k (1 .. len(cases)); f is 1 on
    entry, y and f are 0 after; every case starts and ends at offset f."""
    def level(k: int) -> None:
        a.to(y).put("-[")
        if k < len(cases):
            level(k + 1)
        else:
            a.to(y).put("[-]").to(f).put("-")           # none of them: nothing to do
        a.to(y).put("[-]]")
        a.to(f).put("[-")
        cases[k - 1](a)
        a.to(f).put("]")
    level(1)


def step_data(a: Asm, code: str) -> None:
    to_head(a)
    a.put(code)
    to_ip_from_head(a, 0)


def move_right(a: Asm) -> None:
    to_head(a)
    a.put(">+" + mv(DATA) + "[-]" + mv(-1))               # h = 1 here, 0 at the next
    a.off = 0
    to_ip_from_head(a, 0)


def move_left(a: Asm) -> None:
    to_head(a)
    a.put(">+" + mv(-DATA) + "-" + mv(-1))
    a.off = 0
    to_ip_from_head(a, 0)


def bracket(a: Asm, jump_if_zero: bool) -> None:
    """'[' (jump_if_zero) or ']': decided at the head, carried by the mailbox."""
    to_head(a)
    # w = 1 when the bracket jumps: '[' when v == 0, ']' when v != 0; v is
    # kept (moved to h and back)
    if jump_if_zero:
        a.put(">>+<<[->+>[-]<<]>[-<+>]")        # at h
    else:
        a.put("[->+>[-]+<<]>[-<+>]")            # at h
    a.put(">")                                  # at w
    a.put("[-")
    a.off = 2
    to_ip_from_head(a, 2)
    ip_to_mailbox(a)
    a.put("+")
    mailbox_to_ip(a)
    to_head(a)
    a.put(">>]")                                 # at w (0) on both paths
    a.off = 2
    to_ip_from_head(a, 2)
    ip_to_mailbox(a)
    a.put("[-")
    mailbox_to_ip(a)
    search(a, forward=jump_if_zero)
    ip_to_mailbox(a)
    a.put("]")
    mailbox_to_ip(a)


def search(a: Asm, forward: bool) -> None:
    """Moves the ip to the matching bracket, the depth carried in x."""
    step = CODE if forward else -CODE
    opens, closes = (5, 6) if forward else (6, 5)
    a.to(X).put("+[")
    a.put("[-" + mv(step) + "+" + mv(-step) + "]")      # the depth to the next record
    a.to(T).put("+" + mv(step) + "-")                  # the ip moves
    a.off = T
    a.to(OP).put("[-" + mv(Y) + "+" + mv(F - Y) + "+" + mv(-F) + "]")
    a.to(F).put("[-" + mv(-F) + "+" + mv(F) + "]")     # y = op, op kept
    a.put("+")                                         # f = 1
    a.to(Y).put("-" * opens + "[")
    a.put("-" * (closes - opens) if closes > opens else "+" * (opens - closes))
    a.put("[[-]").to(F).put("-").to(Y).put("]")
    a.to(F).put("[-").to(X).put("-").to(F).put("]")          # a closing one: out a level
    a.to(Y).put("]")
    a.to(F).put("[-").to(X).put("+").to(F).put("]")          # an opening one: in a level
    a.to(X).put("]")


def build() -> str:
    a = Asm()
    a.comment("load the program: one record an instruction up to the first exclamation mark")
    # record 1 onwards; cell y of the record being read is the char, x the
    # flag "go on reading", f a scratch flag
    a.put(mv(CODE))                              # record 1, offset 0
    a.to(X).put("+[")                            # while reading
    a.to(X).put("-")
    a.to(Y).put(",")
    # classify the char in y; op is set to its code, x to 1 unless it is '!'
    codes = {"!": 0, "+": 1, "-": 2, ">": 3, "<": 4, "[": 5, "]": 6, ".": 7, ",": 8}
    order = sorted(codes, key=ord)               # ! + , - . < > [ ]
    a.to(F).put("+")
    prev = 0

    def chain(i: int) -> None:
        nonlocal prev
        ch = order[i]
        a.to(Y).put("-" * (ord(ch) - prev))
        prev = ord(ch)
        a.put("[")
        if i + 1 < len(order):
            chain(i + 1)
        else:
            a.to(Y).put("[-]").to(X).put("+")    # not a command: read on, same record
            a.to(F).put("-")
        a.to(Y).put("[-]]")
        a.to(F).put("[-")
        if ch == "!":
            pass                                  # x stays 0: loading stops
        else:
            a.to(OP).put("+" * codes[ch])
            a.to(T).put("+")
            a.put(mv(CODE))                       # the next record gets the next one
            a.to(X).put("+")
            a.to(F).put("")
        a.to(F).put("]")
    chain(0)
    a.to(X).put("]")
    a.comment("the end record and the separator")
    a.to(T).put("+")                              # the end record: op 0 and t 1
    a.put(mv(CODE))                               # the separator: t of the record after
    a.off = T
    a.comment("back to record 1 and make it the ip")
    a.put(mv(-CODE) + "[" + mv(-CODE) + "]")      # to record 0's t
    a.put(mv(CODE) + "-")                         # record 1: t = 0
    a.comment("the first data cell is the head: h 0 already")
    a.comment("run: while the op at the ip is not 0")
    a.to(OP).put("[")
    a.put("[-" + mv(X) + "+" + mv(Y - X) + "+" + mv(-Y) + "]")
    a.to(X).put("[-" + mv(-X) + "+" + mv(X) + "]")    # y = op
    a.to(F).put("+")
    switch(a, [
        lambda a: step_data(a, "+"),
        lambda a: step_data(a, "-"),
        move_right,
        move_left,
        lambda a: bracket(a, True),
        lambda a: bracket(a, False),
        lambda a: step_data(a, "."),
        lambda a: step_data(a, ","),
    ], Y, F)
    a.comment("next instruction")
    a.to(T).put("+" + mv(CODE) + "-")
    a.off = T
    a.to(OP).put("]")
    return a.text()


def bfi_model(program: str, data: bytes) -> bytes:
    """What bfi.bf prints for `program` and `data` (plain BF, 8-bit cells,
    ',' at end of input leaves the cell as it is)."""
    code = [c for c in program if c in OPS]
    match, stack = {}, []
    for i, c in enumerate(code):
        if c == "[":
            stack.append(i)
        elif c == "]":
            j = stack.pop()
            match[i], match[j] = j, i
    tape, head, ip, out, inp = [0] * 30000, 0, 0, bytearray(), 0
    while ip < len(code):
        c = code[ip]
        if c == "+":
            tape[head] = (tape[head] + 1) & 255
        elif c == "-":
            tape[head] = (tape[head] - 1) & 255
        elif c == ">":
            head += 1
        elif c == "<":
            head -= 1
        elif c == ".":
            out.append(tape[head])
        elif c == ",":
            if inp < len(data):
                tape[head] = data[inp]
                inp += 1
        elif c == "[" and tape[head] == 0:
            ip = match[ip]
        elif c == "]" and tape[head] != 0:
            ip = match[ip]
        ip += 1
    return bytes(out)


def inner_program(rows: int, delay: int) -> str:
    """The inner program bfi.bf runs (its input file is this program, then
    '!'): a triangle of letters, each letter after a countdown loop.
    Written for this corpus."""
    return ("++++++++[>++++++++<-]>+"          # cell 1 = 65 ('A')
            ">++++++++++"                      # cell 2 = 10 (newline)
            ">" + "+" * rows +                 # cell 3 = rows
            "[>+"                              # cell 4 = this row's length
            "[->+>+<<]>>[-<<+>>]<"             # cell 5 = a copy of it (through cell 6)
            "[>>" + "+" * delay + "[-]<<"      # cell 7 = a countdown, counted down
            "<<<<.>>>>-]"                      # print 'A' and count the row down
            "<<<.>-]")                         # a newline; the next row


ROWS, DELAY = 48, 80


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    src = OUT / "bfi.bf"
    desc = ["A BF interpreter written in BF that reads a program up to an exclamation",
            "mark from its input and runs it with the rest of the input as its input"]
    src.write_text(header("make_bfi.py", desc) + wrap(build()))
    INPUT.write_bytes(inner_program(ROWS, DELAY).encode() + b"!")
    data = INPUT.read_bytes()
    program, _, rest = data.partition(b"!")
    (OUT / "bfi.out").write_bytes(bfi_model(program.decode("latin-1"), rest))
    if args.check:
        check_output(src)


INPUT = OUT / "bfi.in"


def wrap(text: str, width: int = 78) -> str:
    out = []
    for part in text.split("\n"):
        if part and set(part) <= set("+-<>[].,"):
            out += [part[k:k + width] for k in range(0, len(part), width)]
        elif part:
            out.append(part)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
