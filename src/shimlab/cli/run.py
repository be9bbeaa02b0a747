"""`shimlab run FILE`: a program under one execution mode, its output exactly."""
from __future__ import annotations

import argparse
import os
import stat
import sys
import time

from .. import isa, isolate, modes, oracle, vm
from ..errors import ShimlabError
from ..frontend import load_program
from ..interp import build
from ..interp.generate import CACHE_MAX
from ..frontend import bf
# the JIT's defaults alone: the JIT itself loads only in a JIT mode
from ..jit.defaults import DEFAULT_LEVEL, DEFAULT_THRESHOLD, LEVELS, PAYBACK_MS
from ..progio import Streams
from ..result import TAPE_LEN, Result, describe_error
from . import numbers, stdout

RUN_MODES = modes.NAMES + (modes.REFERENCE,)
MAX_TAPE = 1 << 30      # 1 GiB of cells, allocated and zeroed up front


def add_parser(sub, help_text: str) -> None:
    p = sub.add_parser("run", help=help_text)
    p.add_argument("file", help="the program: BF (.b, .bf), minipy (.py) or bytecode as "
                   "JSON (.slbc)")
    p.add_argument("--mode", choices=RUN_MODES, default="tailcall",
                   help="the interpreter (default tailcall); reference is the Python oracle")
    p.add_argument("--cc", help="compiler (default: the best one found)")
    p.add_argument("--cache", type=numbers.int_in(0, CACHE_MAX, "a number of cached values"),
                   default=0, metavar="K",
                   help=f"keep the operand stack's top K values in registers (0 to "
                        f"{CACHE_MAX}, default 0): tailcall and the JIT modes; traces are "
                        f"entered with them in registers (jit-shim's C call spills them "
                        f"first) and keep them there while they can (--jit-opt 0 spills them "
                        f"on entry)")
    p.add_argument("--input", help="file to read the program's input from ('-' for stdin; "
                   "default: stdin when it is not a terminal), read as the program reads it")
    p.add_argument("--count", action="store_true",
                   help="print how many VM instructions ran, by opcode, on stderr")
    p.add_argument("--jit-threshold", default=None, metavar="N",
                   help=f"JIT modes: back-edges (calls, returns) before a loop (a "
                        f"function's entry, a return point) is traced (1 traces at "
                        f"once); default {DEFAULT_THRESHOLD}, and nothing is compiled "
                        f"before the run has spent {PAYBACK_MS} ms in the interpreter, "
                        f"about what the JIT's start costs")
    p.add_argument("--jit-opt", type=int, choices=LEVELS, default=DEFAULT_LEVEL,
                   metavar="LEVEL",
                   help=f"JIT modes: the trace optimizer's level: 0 one stencil per "
                        f"instruction (the crossing benchmarks' traces), 1 a virtual BF "
                        f"head with one bounds check per stretch, 2 also fuses minipy's "
                        f"stack traffic, 3 also keeps a loop's locals in registers "
                        f"(default {DEFAULT_LEVEL})")
    p.add_argument("--bf-opt", type=int, choices=bf.LEVELS, default=bf.DEFAULT_LEVEL,
                   metavar="LEVEL",
                   help=f"BF programs: {bf.LEVELS_HELP} (default {bf.DEFAULT_LEVEL})")
    p.add_argument("--stats", action="store_true",
                   help="JIT modes: traces compiled, their sizes, entries and exits (stderr)")
    p.add_argument("--perf-map", action="store_true",
                   help="JIT modes: write /tmp/perf-PID.map so perf report names the traces")
    p.add_argument("--trace-cache", action=argparse.BooleanOptionalAction, default=None,
                   help="JIT modes: place a trace recorded again from the plan an earlier "
                        "run of the same program and options kept in the build directory, "
                        "instead of optimizing and laying it out anew (default: on, or as "
                        "SHIMLAB_TRACE_CACHE says: 0, 1 or verify)")
    p.add_argument("--stencil", action="append", metavar="OP=NAME",
                   help="JIT modes: use stencil NAME for instruction OP (a prototype; OP "
                        "is the standard stencil it replaces, e.g. CELL_ADD=CELL_ADD:rmw)")
    p.add_argument("--check", action="store_true",
                   help="also run the program on the Python oracle and fail (exit 1), "
                        "naming the first difference, when the two disagree")
    p.add_argument("--isolate", action=argparse.BooleanOptionalAction, default=None,
                   help="run in a child process, so a crash is reported, not fatal "
                        "(default: on for native modes and with --timeout)")
    p.add_argument("--timeout", metavar="SECONDS",
                   help="stop the run after SECONDS (exit status 3); the output up to "
                        "there is written")
    p.add_argument("--max-output", metavar="BYTES",
                   help="stop the run with an error when the program has output BYTES bytes "
                        "and outputs more (default: no limit; output is written as it is "
                        "produced, so memory stays bounded either way)")
    p.add_argument("--tape-size", default=TAPE_LEN, metavar="N",
                   help=f"BF programs: cells on the tape (default {TAPE_LEN}, at "
                        f"most {MAX_TAPE}); moving the head past either end is an error")
    p.add_argument("--code-layout", default=0, metavar="N",
                   help="run on the interpreter built with its code shifted to layout N "
                        "(as benchmarks' --code-layouts place it; layouts 1 to 4 are the "
                        "four 16-byte offsets in a cache line; default 0, the compiler's "
                        "placement)")
    p.set_defaults(fn=cmd_run)


def check_numbers(args) -> None:
    """The numeric options, range-checked: a bad value is one line, exit 1."""
    numbers.convert(args, "--jit-threshold", numbers.positive_int)
    numbers.convert(args, "--timeout", numbers.seconds)
    numbers.convert(args, "--max-output", numbers.positive_int)
    numbers.convert(args, "--tape-size", numbers.int_in(1, MAX_TAPE, "a number of cells"))
    numbers.convert(args, "--code-layout", numbers.int_in(0, 1 << 20, "a code layout"))


def _stdin_fd(arg: str | None) -> int | None:
    """fd 0 when it is the program's input: with `--input -` (an error when
    stdin is closed), or by default when it is not a terminal."""
    closed = sys.stdin is None
    if not closed:
        try:
            os.fstat(0)
        except OSError:
            closed = True
    if arg == "-" and closed:
        raise ShimlabError("--input -: stdin is closed; nothing to read the input from")
    if closed or (arg is None and sys.stdin.isatty()):
        return None
    return 0


def _input_fd(arg: str | None) -> int | None:
    """The fd the run reads its input from as the program reads it (never
    whole: a pipe that never ends works, /dev/zero costs nothing), or None
    for no input."""
    if arg is None or arg == "-":
        return _stdin_fd(arg)
    try:
        fd = os.open(arg, os.O_RDONLY)
    except OSError as e:
        raise ShimlabError(f"{arg}: cannot read input: {e.strerror}") from None
    if stat.S_ISDIR(os.fstat(fd).st_mode):
        os.close(fd)
        raise ShimlabError(f"{arg}: cannot read input: it is a directory")
    return fd


class _Tee:
    """--check's input: the run reads it from a pipe as the program reads it,
    and every byte passed on is kept to give the oracle the same input.  A
    thread copies the input into the pipe a chunk at a time; it blocks while
    the pipe is full, so what is kept is what the program read, plus at most
    a pipe's and a chunk's worth (an endless input is not read whole)."""

    def __init__(self, fd: int | None):
        import threading
        self.kept = bytearray()
        self.src = fd
        self.stopped = False
        self.lock = threading.Lock()
        self.r, self.w = os.pipe()
        threading.Thread(target=self._copy, daemon=True).start()

    def _copy(self) -> None:
        from ..progio import CHUNK
        try:
            while self.src is not None:
                try:
                    data = os.read(self.src, CHUNK)
                except OSError:
                    break
                if not data:
                    break
                with self.lock:
                    if self.stopped:
                        return
                    view = memoryview(data)
                    while view:
                        try:
                            n = os.write(self.w, view)
                        except OSError:     # the run is over: done() closed the read end
                            return
                        self.kept += view[:n]
                        view = view[n:]
        finally:
            # the end of the input for the run: the write end is replaced,
            # not closed, so its number is never reused while a run that
            # closes its copy (in_child) may be forking
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, self.w)
            os.close(null)

    def in_child(self) -> None:
        """First thing in a forked run: its copy of the write end closed, or
        it would never see the end of the input."""
        os.close(self.w)

    def done(self) -> bytes:
        """After the run: what the run was given, for the oracle.  The thread
        is not waited for (it may wait for input that never comes)."""
        os.close(self.r)        # a write blocked on a full pipe fails: the lock comes free
        with self.lock:
            self.stopped = True
            return bytes(self.kept)


def _print_counts(counts, out) -> None:
    total = sum(counts)
    out.write(f"{total} VM instructions executed\n")
    for i in sorted(range(len(counts)), key=lambda i: -counts[i]):
        if counts[i]:
            out.write(f"  {isa.INSTRUCTIONS[i].name:<18} {counts[i]:>14}  "
                      f"{100.0 * counts[i] / total:5.1f}%\n")


def stencil_overrides(specs, cc: str | None = None) -> dict:
    """--stencil OP=NAME (repeatable): the JIT uses stencil NAME (a prototype)
    in place of OP.  Checked against the stencils written for compiler `cc`'s
    registers before anything runs: misuse is one line, never a fault."""
    if not specs:
        return {}
    from ..abi import contract
    from ..jit import stencil_store      # here: a run without --stencil never loads them
    return stencil_store.parse_overrides(specs, contract.state_of(cc) if cc else None)


def _note_unused(overrides: dict, program) -> None:
    """A prototype for an instruction the program never runs changes nothing:
    say so (BF at --bf-opt 1 turns much of CELL_ADD and MOVE into others)."""
    ops = {isa.INSTRUCTIONS[op].name for op, _ in program.code}
    for op, name in overrides.items():
        if op.split(":")[0] not in ops:
            print(f"shimlab: note: --stencil {op}={name}: {program.name} has no "
                  f"{op.split(':')[0]} instruction, so the prototype never runs",
                  file=sys.stderr)


def check_against_oracle(program, data: bytes, result, what: str, timeout=None,
                         isolated: bool = True, **limits) -> None:
    """--check: the Python oracle runs the same program on the same input; a
    difference is one line naming the first one (after the program's output)."""
    from ..first_difference import first_difference
    if isolated:
        want = isolate.call(f"the oracle running {program.name}", oracle.run, program, data,
                            timeout=timeout, **limits)
    else:
        want = oracle.run(program, data, **limits)
    diff = first_difference(program, result, want, what)
    if diff:
        raise ShimlabError(f"--check: {diff}")


class _Terminated(BaseException):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum, frame):
    raise _Terminated(signum)


def _unwinding_on_termination(fn):
    """fn() in this process (the oracle without --isolate), where SIGTERM or
    SIGHUP would end Python at once and lose the output the run holds: they
    unwind the run instead, so its `finally` writes that output out, and then
    the process dies of the same signal (the native modes' driver.c does the
    same in C)."""
    import signal
    caught = (signal.SIGTERM, signal.SIGHUP)
    old = {sig: signal.signal(sig, _raise_terminated) for sig in caught}
    try:
        return fn()
    except _Terminated as t:
        for sig in caught:
            signal.signal(sig, signal.SIG_IGN)
        try:
            sys.stdout.flush()
        except OSError:
            pass
        signal.signal(t.signum, signal.SIG_DFL)
        os.kill(os.getpid(), t.signum)
        raise SystemExit(128 + t.signum) from None       # not reached
    finally:
        for sig, handler in old.items():
            if signal.getsignal(sig) is _raise_terminated:
                signal.signal(sig, handler)


def _run_history(args, program, count: bool):
    """The run history a JIT mode's run reads and keeps (jit/run_history.py),
    read once here for both the choice to sit the JIT out and the JIT's
    wait; None where none is kept: --jit-threshold (no payback wait) or the
    trace cache off."""
    if not modes.is_jit(args.mode) or args.jit_threshold:
        return None
    from ..jit.defaults import trace_cache_setting
    if trace_cache_setting(args.trace_cache) == "off":
        return None
    from ..jit.run_history import RunHistory, run_options
    return RunHistory(run_options(args.mode, args.jit_opt, args.cache, count, args.tape_size),
                      program.code, program.consts)


def _sits_out(args, history, overrides: dict) -> bool:
    """The history says the JIT loses on this program here (jit/sit_out.py);
    never with --stencil, --perf-map or --check, whose user wants the JIT
    itself run."""
    if history is None or overrides or args.perf_map or args.check:
        return False
    from ..jit.policy import sits_out
    return sits_out(history.last, int(PAYBACK_MS * 1e6))


def cmd_run(args) -> int:
    check_numbers(args)
    # --isolate: the run happens in a forked child, so a fault or a timeout
    # is reported and never takes shimlab down; on by default for native
    # modes, and needed by --timeout (stopping a run means killing it)
    isolated = args.isolate
    if isolated is None:
        isolated = args.mode != modes.REFERENCE or args.timeout is not None
    if args.timeout is not None and args.timeout <= 0:
        raise ShimlabError(f"--timeout {args.timeout:g}: needs a positive number of seconds")
    if args.timeout is not None and not isolated:
        raise ShimlabError("--timeout needs --isolate (a run is stopped by killing its child)")
    if args.check and args.mode == modes.REFERENCE:
        raise ShimlabError("--check holds a mode to the oracle: the reference mode is the "
                           "oracle (choose another --mode)")
    if args.cache and args.mode == modes.REFERENCE:
        raise ShimlabError(f"--cache {args.cache}: the reference mode keeps no values in "
                           f"registers (modes that can: {', '.join(modes.CACHING)})")
    if not modes.is_jit(args.mode) and (args.stats or args.perf_map or args.stencil
                                        or args.trace_cache is not None):
        raise ShimlabError(f"--stats, --perf-map, --stencil and --trace-cache need a JIT mode "
                           f"({', '.join(modes.JIT)})")
    if modes.is_jit(args.mode) and args.trace_cache is None:
        from ..jit.defaults import trace_cache_setting   # SHIMLAB_TRACE_CACHE, checked
        trace_cache_setting()                               # before any work
    if args.code_layout and args.mode == modes.REFERENCE:
        raise ShimlabError(f"--code-layout {args.code_layout}: the reference mode is Python, "
                           "it has no machine code to place")
    build.check_cache(args.mode if args.mode != modes.REFERENCE else "tailcall", args.cache)
    # --stencil is checked against the stencils of the compiler the build
    # will use, before the program is compiled and the interpreter built
    overrides = {}
    if args.stencil:
        from .. import toolchain
        cc = toolchain.get_compiler(args.cc, need=set(modes.get(args.mode).features))
        overrides = stencil_overrides(args.stencil, cc.name)
    program = load_program(args.file, bf_opt=args.bf_opt)
    # input is read and output written as the program runs (in the child,
    # which inherits the fds): memory stays bounded, and a timeout or Ctrl-C
    # loses nothing already output.  --check keeps the output whole (it
    # compares it with the oracle's) and the input the run read (a tee: the
    # oracle gets the same, and an endless input is not read whole).
    tee = None
    if args.check:
        # the run streams the input through a tee, which keeps it for the oracle
        tee = _Tee(_input_fd(args.input))
        data, streams = b"", Streams(in_fd=tee.r, max_output=args.max_output)
    else:
        data = b""
        streams = Streams(in_fd=_input_fd(args.input), out_fd=stdout.fd(),
                          max_output=args.max_output)
    limits = {"tape_len": args.tape_size, "streams": streams}

    def _lean(result):
        # the final tape goes back to the parent only for --check: a big
        # --tape-size would cost its size again in the pipe
        if not args.check:
            result.tape = b""
        return result.plain()       # (plain values cross from a child fastest: isolate.py)
    if args.mode == modes.REFERENCE:
        what = f"the reference interpreter running {args.file}"

        def child():
            return _lean(oracle.run(program, data, **limits))
    else:
        count = args.count or args.stats      # --stats: the share of them that ran in traces
        history = _run_history(args, program, count)
        sat_out = _sits_out(args, history, overrides)
        if sat_out:
            from ..jit import sit_out
        b = build.build(sit_out.PLAIN_MODE if sat_out else args.mode, args.cc, count=count,
                        cache=args.cache, code_layout=args.code_layout)
        jit = None
        if modes.is_jit(args.mode) and not sat_out:
            jit = {"threshold": args.jit_threshold or DEFAULT_THRESHOLD,
                   "payback_ms": 0 if args.jit_threshold else PAYBACK_MS,
                   "stats": args.stats, "opt": args.jit_opt,
                   "perf_map": args.perf_map,
                   "stencils": overrides, "trace_cache": args.trace_cache,
                   "history": history}
            _note_unused(overrides, program)
        what = f"the {args.mode} interpreter ({b.compiler.name}) running {args.file}"

        def child():
            if tee is not None and isolated:
                tee.in_child()
            # the run history's lengths: thread CPU from loading to closing
            t0 = time.thread_time_ns()
            if sat_out:
                with vm.Loaded(b, program, data, **limits) as loaded:
                    result = _lean(loaded.run())
                history.save(time.thread_time_ns() - t0)
                return result, sit_out.report(args.mode, history) if args.stats else None
            if jit is None:
                return _lean(vm.run(b, program, data, **limits)), None
            with vm.Loaded(b, program, data, jit=dict(jit, loading_since_ns=t0),
                           **limits) as loaded:
                result = loaded.run()
                return _lean(result), (loaded.jit.report(result.counts)
                                       if loaded.jit and args.stats else None)
    if args.mode == modes.REFERENCE:
        result = (isolate.call(what, child, timeout=args.timeout) if isolated
                  else _unwinding_on_termination(child))
    else:
        result, report = (isolate.call(what, child, timeout=args.timeout) if isolated
                          else child())
        if report:
            print(report, file=sys.stderr)
    result = Result.from_plain(result)
    stdout.write(result.output)       # what was not streamed (all of it under --check)
    if args.count:
        _print_counts(result.counts, sys.stderr)
    if args.check:
        # the same input and limits as the run (a --tape-size, where given)
        check_against_oracle(program, tee.done(), result, args.mode, args.timeout, isolated,
                             tape_len=args.tape_size,
                             streams=Streams(max_output=args.max_output))
    if result.status:
        print(f"shimlab: {describe_error(program, result)}", file=sys.stderr)
        return 1
    return 0
