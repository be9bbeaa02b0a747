"""From a recording (the pcs the interpreter ran from a hot loop header) to
a trace: which stencil each instruction gets, where each guard leaves, and
how the trace ends (back to its start, or out to the interpreter).

A trace runs through calls and returns (isa.Instr.in_trace): after a CALL
its instructions are the callee's, in a frame of their own, and after a
RETURN the caller's.  Each instruction carries the frame it runs in
(TraceOp.frame: 0 the frame the trace starts in, every other frame a number
of its own), because a pc stands for one place in the trace only within
its frame: only the start frame's instructions are labels a guard or a
back-edge may jump to, and a loop met in another frame ends the trace
there.  Calls nest at most MAX_INLINE deep (recursion would otherwise
unroll as deep as the recording went); the trace ends at a call deeper
than that, which the interpreter then makes.  A RETURN whose CALL is in
the trace goes on at that call's return point; one from a frame the trace
did not make can go to any return point of its function (return_points):
RETURN:out returns, a RETURN:to after it for each other return point
leaves for it (a side exit, linked like any to a trace there), and the
trace goes on at the recorded one; with more than MAX_RETURNS others, or
none known, RETURN:guard deopts unless the return goes where recorded."""
from __future__ import annotations

from array import array
from bisect import bisect_right

from .. import isa
from ..isa import Flow
from ..record import field, record

# Instructions that have stencils (isa.Instr.no_stencil, or in_trace); every other one ends a trace.
TRACEABLE = isa.TRACEABLE

MAX_INLINE = 3      # calls nested in a trace (from its start frame's depth)


@record(frozen=True)
class TraceOp:
    pc: int
    op: int
    arg: int
    stencil: str
    exit_pc: int | None = None     # where its guard leaves to (branch), if it has one
    loop_pc: int | None = None     # an inner loop's back-edge: its header, in this trace
    # the jump at the end of a block (add_blocks) back into the trace: no
    # instruction of the program, so never counted
    synthetic: bool = False
    # the frame it runs in: 0 the trace's start frame, each other a number of
    # its own (a callee's, or a caller's the trace returned to)
    frame: int = 0
    # CALL: its return point; RETURN: where it returns to (the recorded
    # return point, checked by RETURN:guard when the trace made no such frame)
    ret_pc: int | None = None
    # the instruction's name, set once here: the optimizer asks for it often
    # (a cached_property's first use takes a lock, per instruction)
    name: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", _NAMES[self.op])


_NAMES = tuple(ins.name for ins in isa.INSTRUCTIONS)
# opcodes that neither branch nor go back: a trace takes them as they are
_STRAIGHT = frozenset(op for op, ins in enumerate(isa.INSTRUCTIONS)
                      if ins.flow not in (Flow.BRANCH, Flow.BACKEDGE, Flow.BACKEDGE_BRANCH,
                                          Flow.CALL, Flow.RETURN))


@record
class Trace:
    start: int
    ops: list[TraceOp] = field(default_factory=list)
    closed: bool = True             # ends by jumping back to its start
    end_pc: int | None = None       # otherwise: the exit at the end resumes here
    why_end: str = "loop closed"
    retry: bool = False             # it left the loop: worth recording again first


class Decline(Exception):
    """The recording does not make a trace worth compiling (the reason says why)."""

    def __init__(self, reason: str, retry: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.retry = retry


def from_recording(code: list[tuple[int, int]], rec: list[int], stop_pc: int,
                   stop_op: int | None = None, max_ops: int | None = None,
                   traced: frozenset = frozenset(), returns: dict | None = None) -> Trace:
    """code: the program's (op, arg); stop_op: the opcode now at stop_pc, which
    is ENTER_JIT when the path ran into another trace.  An inner loop whose
    header is already in the trace becomes a back-edge inside it; its further
    recorded iterations are skipped.  traced: pcs where a trace starts; a
    back-edge the recording took to one ends this trace there (a side trace
    going back into its loop's trace).  returns: each RETURN's pc -> every
    return point its function has (return_points), which a return from a
    frame the trace did not make is dispatched on (else guarded)."""
    if not rec:
        raise Decline(f"the loop starts with {isa.INSTRUCTIONS[code[stop_pc][0]].name}, "
                      "which has no stencil")
    if stop_op is not None and stop_op >= isa.NUM_OPCODES and stop_pc == rec[0]:
        raise Decline("the loop already has a trace")
    start = rec[0]
    trace = Trace(start)
    seen: set[int] = set()           # the start frame's pcs so far
    memo: dict = {}                  # _past_loop's copy of the recording as bytes
    i, n, ops = 0, len(rec), trace.ops
    frame, frames, calls = 0, 0, []  # the frame now, the last one numbered, the open calls
    while i < n:
        if max_ops is not None and len(ops) > max_ops:
            if frames:               # the calls made it long: up to here, as without them
                return _ends(trace, rec[i], f"longer than {max_ops} instructions with its calls")
            raise Decline(f"longer than {max_ops} instructions")
        pc = rec[i]
        op, arg = code[pc]
        if not frame:
            seen.add(pc)
        if op in _STRAIGHT:          # most instructions: no jump to follow
            ops.append(TraceOp(pc, op, arg, _NAMES[op], frame=frame))
            i += 1
            continue
        nxt = rec[i + 1] if i + 1 < n else stop_pc
        ins = isa.INSTRUCTIONS[op]
        if ins.flow is Flow.CALL:
            if len(calls) >= MAX_INLINE:
                return _ends(trace, pc, f"calls nested more than {MAX_INLINE} deep")
            ops.append(TraceOp(pc, op, arg, ins.name, frame=frame, ret_pc=pc + 1))
            calls.append(frame)
            frames += 1
            frame = frames
        elif ins.flow is Flow.RETURN:
            if calls:                # the trace made this frame: it returns to the CALL's
                ops.append(TraceOp(pc, op, arg, ins.name, frame=frame, ret_pc=_return_point(ops)))
                frame = calls.pop()
            else:                    # to a caller's frame: where the recording returned, guarded
                if not frame and _is_loop_header(code, start):
                    # the recording left its loop by returning: as by a back-edge
                    # elsewhere, worth recording again (a closed trace)
                    return _ends(trace, pc, "the recording left the loop by returning",
                                 retry=True)
                others = _other_returns(returns, pc, nxt)
                frames += 1
                if others is None:   # too many callers, or not known: guarded
                    ops.append(TraceOp(pc, op, arg, f"{ins.name}:guard", frame=frame,
                                       ret_pc=nxt))
                else:
                    # the frame's return point is one of its function's: the
                    # others leave (side exits there, in the caller's frame)
                    ops.append(TraceOp(pc, op, arg, f"{ins.name}:out", frame=frame, ret_pc=nxt))
                    ops += [TraceOp(pc, op, arg, f"{ins.name}:to", r, frame=frames,
                                    synthetic=True, ret_pc=r) for r in others]
                frame = frames
        if ins.flow in (Flow.CALL, Flow.RETURN):
            i += 1
            if nxt == start and i == n:
                # a call (recursion) or a return back to the start, in another
                # frame: an exit there, which jumps in again once linked
                return _ends(trace, start, f"{ins.name} back to its start")
            continue
        disp = isa.jump_disp(ins, arg)
        if ins.flow in (Flow.BACKEDGE, Flow.BACKEDGE_BRANCH) and nxt == pc + disp and (
                frame or (pc + disp != start and pc + disp in seen
                          and _calls_in(code, pc + disp, pc))):
            # a loop in another frame than the start's, or an inner loop that
            # calls (its recorded iterations are not skipped by pc range): the
            # trace ends at its back-edge, which the interpreter runs, counting
            # the header towards a trace of the loop's own (an exit to the
            # header would not count it), or, when the loop has a trace, it
            # jumps into that
            why = "a loop in a called function" if frame else "an inner loop that calls"
            if pc + disp in traced:
                trace.ops.append(TraceOp(pc, op, arg, f"{ins.name}:taken",
                                         pc + 1 if ins.flow is Flow.BACKEDGE_BRANCH else None,
                                         frame=frame))
                return _ends(trace, pc + disp, why)
            if i == 0:
                raise Decline("the path left the loop at once", retry=True)
            return _ends(trace, pc, why)
        if ins.flow in (Flow.BACKEDGE, Flow.BACKEDGE_BRANCH):
            target = pc + disp
            if nxt == target == start and i == len(rec) - 1:
                trace.ops.append(TraceOp(pc, op, arg, f"{ins.name}:close",
                                         pc + 1 if ins.flow is Flow.BACKEDGE_BRANCH else None))
                return trace
            if ins.flow is Flow.BACKEDGE_BRANCH and nxt == pc + 1:
                trace.ops.append(TraceOp(pc, op, arg, f"{ins.name}:fallthrough", target))
                i += 1
                continue
            if target in seen and target != start:
                # an inner loop: jump back to its header in this trace, and skip
                # the iterations the recording went on to make
                trace.ops.append(TraceOp(pc, op, arg, f"{ins.name}:inner", loop_pc=target))
                j = _past_loop(code, rec, i + 1, target, pc, memo)
                after = rec[j] if j < len(rec) else stop_pc
                if ins.flow is Flow.BACKEDGE_BRANCH and after != pc + 1:
                    return _ends(trace, pc + 1, "the recording left an inner loop sideways")
                if j == len(rec) and target <= stop_pc <= pc:
                    return _ends(trace, pc + 1, "the recording ended inside an inner loop")
                i = j
                continue
            if target in traced and nxt == target:
                variant = "taken"
                trace.ops.append(TraceOp(pc, op, arg, f"{ins.name}:{variant}",
                                         pc + 1 if ins.flow is Flow.BACKEDGE_BRANCH else None))
                return _ends(trace, target, f"runs into the trace at pc {target}")
            # a jump back to somewhere else: out of this loop
            if i == 0:
                raise Decline("the path left the loop at once", retry=True)
            return _ends(trace, pc, "a back-edge to another loop", retry=True)
        taken = nxt == pc + disp     # a forward branch (the rest are _STRAIGHT)
        ops.append(TraceOp(pc, op, arg, f"{ins.name}:{'taken' if taken else 'fallthrough'}",
                           pc + 1 if taken else pc + disp, frame=frame))
        i += 1
    if stop_op is not None and stop_op >= isa.NUM_OPCODES:
        why = f"runs into the trace at pc {stop_pc}"
    elif stop_pc == start:           # (it left the start frame: a call or return got there)
        why = "back at its start in another frame"
    else:
        why = f"{isa.INSTRUCTIONS[code[stop_pc][0]].name} has no stencil"
    return _ends(trace, stop_pc, why)


BLOCK_MAX = 48      # instructions of one block (add_blocks)


def add_blocks(trace: Trace, code, max_ops: int | None = None) -> int:
    """Regions instead of side traces: where a closed trace's guard leaves for
    code the recording did not run (an if's body it skipped, the else of a
    minipy if) and that code comes back into the trace within BLOCK_MAX
    instructions, without a loop, the code goes into the trace as a block
    after its end, and the guard jumps there; the block jumps back where it
    meets the trace (or an earlier block).  Inside a block a branch goes the
    way that falls through, its other way a label or an exit as anywhere.
    Returns the number of blocks added."""
    if not trace.closed:
        return 0
    in_trace = {t.pc for t in trace.ops if not t.frame}    # (the labels: trace.py's docstring)
    added = 0
    for t in list(trace.ops):
        if t.frame or t.exit_pc is None or t.exit_pc in in_trace or t.loop_pc is not None \
                or t.exit_pc <= t.pc or isa.INSTRUCTIONS[t.op].flow is not Flow.BRANCH:
            continue
        block = _block(code, t.exit_pc, in_trace)
        if block is None or (max_ops is not None and len(trace.ops) + len(block) > max_ops):
            continue
        trace.ops += block
        in_trace |= {b.pc for b in block if not b.synthetic}
        added += 1
    return added


def _block(code, pc: int, in_trace: set) -> list[TraceOp] | None:
    ops: list[TraceOp] = []
    while len(ops) < BLOCK_MAX and 0 <= pc < len(code):
        if pc in in_trace:                  # back into the trace
            ops.append(TraceOp(-1, isa.OPCODE["JUMP"], 0, "JUMP:to", loop_pc=pc, synthetic=True))
            return ops
        op, arg = code[pc]
        ins = isa.INSTRUCTIONS[op]
        if ins.name not in TRACEABLE:
            return None
        if ins.flow is Flow.NEXT:
            ops.append(TraceOp(pc, op, arg, ins.name))
            pc += 1
        elif ins.flow is Flow.BRANCH:
            ops.append(TraceOp(pc, op, arg, f"{ins.name}:fallthrough", pc + isa.jump_disp(ins, arg)))
            pc += 1
        elif ins.flow is Flow.JUMP:
            ops.append(TraceOp(pc, op, arg, ins.name))
            pc += isa.jump_disp(ins, arg)
        else:
            return None                     # a loop, a call: not a block
    return None


def _past_loop(code, rec, i: int, first: int, last: int, memo: dict | None = None) -> int:
    """The first index from i on whose pc is outside first..last: where the
    recording left an inner loop (its header `first`, back-edge `last`).

    A short stay is walked; a long one (tens of thousands of pcs through a
    long inner loop) is not: the first pc outside follows one inside, so it
    is the successor of an instruction of the loop (a branch or jump target,
    or a fall-through) that lies outside the loop, and a C-level bytes
    search for each such pc finds the first of them.  memo keeps the
    recording's bytes for the next inner loop of the same recording."""
    stop = min(len(rec), i + _WALK)
    while i < stop and first <= rec[i] <= last:
        i += 1
    if i < stop or i == len(rec):
        return i
    outside = set()
    for pc in range(first, last + 1):
        op, arg = code[pc]
        ins = isa.INSTRUCTIONS[op]
        if ins.flow not in _SUCCESSORS:
            return _walk(rec, i, first, last)    # other successors (none has a stencil): walk
        fall, jump = _SUCCESSORS[ins.flow]
        if fall:
            outside.add(pc + 1)
        if jump:
            outside.add(pc + isa.jump_disp(ins, arg))
    if memo is None:
        memo = {}
    if "data" not in memo:
        memo["data"] = rec.tobytes() if isinstance(rec, array) else array("i", rec).tobytes()
    end = first_of(rec, outside - set(range(first, last + 1)), i, memo["data"], walk=0)
    return len(rec) if end is None else end


_WALK = 256         # pcs walked before searching instead (an inner loop's, a side exit's path)


# flow -> (falls through, jumps): an instruction's possible successors
_SUCCESSORS = {Flow.NEXT: (True, False), Flow.JUMP: (False, True), Flow.BRANCH: (True, True),
               Flow.BACKEDGE: (False, True), Flow.BACKEDGE_BRANCH: (True, True)}


def first_of(rec, pcs, i: int = 0, data: bytes | None = None,
             walk: int = _WALK) -> int | None:
    """The first index from i on whose pc is one of `pcs` (None: none is):
    a walk over the first `walk` (where a side exit's path usually meets a
    trace), then a C-level bytes search for each pc rather than a walk in
    Python (data: rec as bytes, when the caller has them).  The search of
    a pc that is not there reads the whole recording, up to 200,000 pcs."""
    stop = min(len(rec), i + walk)
    for k in range(i, stop):
        if rec[k] in pcs:
            return k
    if stop == len(rec):
        return None
    i = stop
    if data is None:
        data = rec.tobytes() if isinstance(rec, array) else array("i", rec).tobytes()
    end = len(rec)
    for pc in pcs:
        pattern, at = pc.to_bytes(4, "little", signed=True), 4 * i
        while (k := data.find(pattern, at, 4 * end)) >= 0 and k % 4:
            at = k + 1                        # not on an element's boundary
        if k >= 0:
            end = k // 4
    return end if end < len(rec) else None


def _walk(rec, i: int, first: int, last: int) -> int:
    while i < len(rec) and first <= rec[i] <= last:
        i += 1
    return i


MAX_RETURNS = 8     # return points a return from an unknown frame compares with (RETURN:to)


def return_points(code, entries) -> dict:
    """Each RETURN's pc -> the return points of its function (the pc after
    each CALL of it), sorted; entries: each function's entry pc, by index.
    A frame of a function is made by a CALL of it and nothing else, so its
    return goes to one of these."""
    order = sorted(range(len(entries)), key=lambda f: entries[f])
    starts = [entries[f] for f in order]
    points: dict[int, list[int]] = {f: [] for f in range(len(entries))}
    for pc, (op, arg) in enumerate(code):
        if isa.INSTRUCTIONS[op].flow is Flow.CALL and 0 <= arg < len(entries):
            points[arg].append(pc + 1)
    out = {}
    for pc, (op, _) in enumerate(code):
        if isa.INSTRUCTIONS[op].flow is Flow.RETURN:
            k = bisect_right(starts, pc) - 1
            if k >= 0:
                out[pc] = tuple(points[order[k]])
    return out


def _other_returns(returns: dict | None, pc: int, recorded: int) -> tuple | None:
    """The return points RETURN:to compares with besides the recorded one,
    or None (guard instead): unknown, the recorded one not among them, or
    more than MAX_RETURNS others."""
    points = None if returns is None else returns.get(pc)
    if points is None or recorded not in points or len(points) - 1 > MAX_RETURNS:
        return None
    return tuple(r for r in points if r != recorded)


def _is_loop_header(code, pc: int) -> bool:
    """Some back-edge jumps to pc."""
    for at, (op, arg) in enumerate(code):
        ins = isa.INSTRUCTIONS[op]
        if isa.is_backedge(ins) and at + isa.jump_disp(ins, arg) == pc:
            return True
    return False


def _calls_in(code, first: int, last: int) -> bool:
    return any(isa.INSTRUCTIONS[code[pc][0]].flow is Flow.CALL for pc in range(first, last + 1))


def _return_point(ops: list[TraceOp]) -> int:
    """The return point of the innermost call still open at the end of ops."""
    depth = 0
    for t in reversed(ops):
        if t.name == "RETURN" and not t.synthetic:
            depth += 1
        elif t.name == "CALL":
            if not depth:
                return t.ret_pc
            depth -= 1
    raise AssertionError("a RETURN matched to no CALL")


def _ends(trace: Trace, pc: int, why: str, retry: bool = False) -> Trace:
    trace.closed, trace.end_pc, trace.why_end = False, pc, why
    trace.retry = retry
    return trace
