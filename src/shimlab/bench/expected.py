"""What a benchmark's program must compute, and the check that every worker
makes before it times anything: its first run held to that result.  A
configuration that computes a wrong answer is reported and never timed.

The result comes from the Python oracle when the program finishes within
ORACLE_STEPS (about a second); a longer one is run on the switch interpreter
instead, at K = 0 without the JIT (the differential tests hold it to the
oracle on random programs), and the check says so.
"""
from __future__ import annotations

from pathlib import Path

from .. import isolate, oracle, vm
from ..digest import sha256
from ..errors import RunError
from ..frontend import load_program
from ..interp import build as build_mod
from ..result import describe_error
from . import synthetic

ORACLE_STEPS = 1_000_000
_SHOWN = 1 << 16          # output kept as it is up to this many bytes (beyond: its hash)


def _sha(data: bytes) -> str:
    return sha256(bytes(data)).hexdigest()


def summary(result) -> dict:
    """What two runs of one program must agree on, compact enough for a job:
    output, how the run ended, the tape (its hash) and head, the entry
    function's locals."""
    out = bytes(result.output)
    return {"output": out.decode("latin-1") if len(out) <= _SHOWN else None,
            "output_len": len(out), "output_sha256": _sha(out),
            "status": int(result.status), "err_pc": int(result.err_pc),
            "err_value": int(result.err_value), "tape_sha256": _sha(result.tape),
            "head": int(result.head), "locals": [int(x) for x in result.locals]}


def difference(got: dict, want: dict, what: str) -> str | None:
    """None when the two summaries agree, else the first difference in words."""
    if got["output_sha256"] != want["output_sha256"]:
        a, b = got.get("output"), want.get("output")
        if a is not None and b is not None:
            n = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), None)
            if n is not None:
                return (f"output byte {n} is {ord(a[n]):#04x} in {what}, {ord(b[n]):#04x} "
                        f"from {want['by']}")
        return (f"output is {got['output_len']} bytes in {what}, {want['output_len']} from "
                f"{want['by']} (they differ)")
    for key, name in (("status", "status"), ("err_pc", "error pc"),
                      ("err_value", "error value"), ("head", "tape head"),
                      ("locals", "entry function's locals")):
        if got[key] != want[key]:
            return f"{name} is {got[key]} in {what}, {want[key]} from {want['by']}"
    if got["tape_sha256"] != want["tape_sha256"]:
        return f"the tape differs in {what} from {want['by']}'s"
    return None


def program_of(workload: str, bf_opt: int):
    """A workload's program (a file, or a transition benchmark's spec)."""
    if synthetic.is_synthetic(workload):
        return synthetic.build(workload)[0]
    return load_program(workload, bf_opt=bf_opt)


def expected(workload: str, bf_opt: int, input: str | None, tape_len: int,
             timeout: float) -> tuple[dict, int]:
    """The summary a workload's run must match (with "by": who computed it)
    and the VM instructions one run executes.  RunError when the program
    itself fails (a crash, an error status, a timeout)."""
    program = program_of(workload, bf_opt)
    data = Path(input).read_bytes() if input else b""
    try:
        if synthetic.is_synthetic(workload) and \
                synthetic.instructions_per_run(workload) > ORACLE_STEPS:
            raise TimeoutError      # known to be past the budget: no second spent finding out
        result = oracle.run(program, data, tape_len=tape_len, max_steps=ORACLE_STEPS)
        by = "the oracle"
    except TimeoutError:
        b = build_mod.build("switch", None, count=True)
        by = f"the switch interpreter ({b.compiler.name})"
        result = isolate.call(f"{by} running {Path(workload).name}", vm.run, b, program,
                              data, timeout=timeout, tape_len=tape_len)
    if result.status:
        raise RunError(describe_error(program, result))
    return {**summary(result), "by": by}, result.instructions
