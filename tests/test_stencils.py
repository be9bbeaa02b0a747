"""The PeachPy stencils: the hole checks of peachpy_stencils.asm, patching in
jit.compile, the artifact jit.stencil_store loads, the stencil tester and the
`shimlab stencils` commands."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("peachpy")

from conftest import ROOT, interpreter_configs  # noqa: E402
from peachpy_stencils import asm  # noqa: E402
from peachpy_stencils import build as stub_build  # noqa: E402
from peachpy_stencils.asm import PLACEHOLDER, AsmError, Hole, Stencil  # noqa: E402
from peachpy.x86_64 import ADD, MOV, eax, ecx, rax  # noqa: E402
from shimlab import isa, isolate, modes  # noqa: E402
from shimlab.record import replace  # noqa: E402
from shimlab.jit import stencil_store  # noqa: E402
from shimlab.jit.compile import CompileError, Context, compile_trace  # noqa: E402
from shimlab.jit.trace import Trace, TraceOp  # noqa: E402
from shimlab.stencil import StencilError, find_holes  # noqa: E402

OP = isa.OPCODE
TAILCALL_CCS = [cc for mode, cc in interpreter_configs() if mode == "tailcall"]
needs_jit = pytest.mark.skipif(not TAILCALL_CCS, reason="no compiler here builds the "
                               "tail-call interpreter the JIT modes need")


def _jit_cc():
    from shimlab import toolchain
    try:
        cc = toolchain.get_compiler(None, need=set(modes.get("tailcall").features)).name
    except Exception:
        return TAILCALL_CCS[0] if TAILCALL_CCS else None
    return cc if cc in TAILCALL_CCS else (TAILCALL_CCS[0] if TAILCALL_CCS else None)


JIT_CC = _jit_cc()


# ---- peachpy_stencils.asm: every hole found exactly once ------------------------------------------

def _p32(kind):
    return PLACEHOLDER[kind]


def test_a_well_formed_stencil_has_its_holes_where_they_were_emitted():
    def fn(a, r):
        a(MOV(eax, a.hole("oparg")), MOV(rax, a.hole("const")))
        a.jcc_hole("e", "deopt")
    s = asm.assemble("GOOD", fn, "a test")
    # mov eax, imm32 is b8+imm32; mov rax, imm64 is 48 b8+imm64; jcc rel32 is 0f 8x+rel32
    assert s.holes == (Hole(1, 4, "oparg"), Hole(7, 8, "const"), Hole(17, 4, "deopt"))
    for h in s.holes:
        assert s.code[h.offset:h.offset + h.width] == \
            PLACEHOLDER[h.kind].to_bytes(h.width, "little")


@pytest.mark.parametrize("name, fn, kind, pattern", [
    ("MISSING", lambda a, r: (a.hole("oparg"), a(MOV(eax, 1))), "oparg",
     r"declared 1 time\(s\) but its placeholder occurs 0 time\(s\)"),
    ("TWICE", lambda a, r: (lambda p: a(MOV(eax, p), MOV(ecx, p)))(a.hole("oparg")), "oparg",
     r"declared 1 time\(s\) but its placeholder occurs 2 time\(s\)"),
    ("UNDECLARED", lambda a, r: a(MOV(eax, _p32("local"))), "local",
     r"declared 0 time\(s\) but its placeholder occurs 1 time\(s\)"),
    ("UNDECLARED64", lambda a, r: a(MOV(rax, PLACEHOLDER["const"])), "const",
     r"declared 0 time\(s\) but its placeholder occurs 1 time\(s\)"),
    ("DECLARED_TWICE", lambda a, r: a(MOV(eax, a.hole("oparg")), ADD(ecx, a.hole("oparg"))),
     "oparg", r"declared 2 times"),
    ("TWO_DEOPTS", lambda a, r: (a.jcc_hole("e", "deopt"), a.jcc_hole("ne", "deopt")), "deopt",
     r"declared 2 times"),
])
def test_hole_table_errors_name_the_stencil_and_the_hole(name, fn, kind, pattern):
    with pytest.raises(AsmError) as e:
        asm.assemble(name, fn)
    msg = str(e.value)
    assert f"stencil {name}" in msg and f"hole {kind}" in msg, msg
    assert re.search(pattern, msg), msg


def test_find_holes_checks_raw_bytes_too():
    code = b"\x90" + _p32("oparg").to_bytes(4, "little") + b"\x90"
    assert find_holes("RAW", code, ["oparg"]) == (Hole(1, 4, "oparg"),)
    with pytest.raises(StencilError, match=r"stencil RAW: hole oparg"):
        find_holes("RAW", code, [])
    with pytest.raises(StencilError, match=r"stencil RAW: hole count"):
        find_holes("RAW", code, ["oparg", "count"])


@pytest.mark.parametrize("how", ["hole", "jcc_hole", "jmp_hole"])
def test_unknown_hole_kind_is_an_asm_error_naming_the_stencil(how):
    emit = {"hole": lambda a, r: a(MOV(eax, a.hole("bogus"))),
            "jcc_hole": lambda a, r: a.jcc_hole("e", "bogus"),
            "jmp_hole": lambda a, r: a.jmp_hole("bogus")}[how]
    with pytest.raises(AsmError, match=r"stencil PROTO\b.*bogus|bogus.*stencil PROTO\b"):
        asm.assemble("PROTO", emit)


def test_local_jumps_are_checked():
    def undefined(a, r):
        a.jcc("e", "nowhere")
    with pytest.raises(AsmError, match="nowhere"):
        asm.assemble("J", undefined)

    def twice(a, r):
        a.label("x").label("x")
    with pytest.raises(AsmError, match="label x defined twice"):
        asm.assemble("J", twice)


def test_every_built_stencil_has_a_consistent_hole_table():
    st = stencil_store.standard()
    assert set(st) == set(stub_build.load_families())
    for s in st.values():
        kinds = [h.kind for h in s.holes]
        assert len(kinds) == len(set(kinds)), s.name
        assert [h.offset for h in s.holes] == sorted(h.offset for h in s.holes)
        for h in s.holes:
            assert h.width == asm.HOLE_WIDTH[h.kind], (s.name, h)
            assert 0 <= h.offset and h.offset + h.width <= len(s.code), (s.name, h)
            assert s.code[h.offset:h.offset + h.width] == \
                PLACEHOLDER[h.kind].to_bytes(h.width, "little"), (s.name, h)
        if s.code:
            assert s.disassembly.strip(), s.name


# ---- jit.compile: a hole it has no value for ------------------------------------------

def _nop_loop_trace():
    code = [(OP["NOP"], 0), (OP["LOOP"], -1), (OP["HALT"], 0)]
    trace = Trace(0, [TraceOp(0, OP["NOP"], 0, "NOP"), TraceOp(1, OP["LOOP"], -1, "LOOP:close")])
    return code, trace


@pytest.mark.parametrize("count", [False, True])
def test_a_hole_the_compiler_does_not_fill_is_a_compile_error(monkeypatch, count):
    real = stencil_store.load()
    code, trace = _nop_loop_trace()
    # mov rax, TALLY; inc qword [rax]: a "tally" hole, which only --stats fills
    fake_code = b"\x48\xb8" + PLACEHOLDER["tally"].to_bytes(8, "little") + b"\x48\xff\x00"
    fake = dict(real)
    fake["NOP"] = Stencil("NOP", fake_code, find_holes("NOP", fake_code, ["tally"]), "fake")
    ctx_modes = list(modes.JIT)
    for mode in ctx_modes:      # the real stencils compile
        compile_trace(trace, Context(mode, 0x10000, [], code, [0x20000] * isa.NUM_OPCODES,
                                     count=count), None)
    monkeypatch.setattr(stencil_store, "load", lambda *args, **kwargs: fake)
    for mode in ctx_modes:
        ctx = Context(mode, 0x10000, [], code, [0x20000] * isa.NUM_OPCODES, count=count)
        with pytest.raises(CompileError, match=r"stencil NOP: hole tally at \+2 left "
                                               r"unpatched \(NOP@pc0\)"):
            compile_trace(trace, ctx, None)


@pytest.mark.parametrize("distance", [1 << 20, 3 << 30])
def test_an_exit_links_only_to_a_trace_within_rel32_reach(distance):
    # a sanitizer's allocator once placed two traces more than 2 GiB apart: the
    # exit must then stay a crossing, not fail the compile
    code = [(OP["NOP"], 0), (OP["NOP"], 0), (OP["HALT"], 0)]
    trace = Trace(0, [TraceOp(0, OP["NOP"], 0, "NOP")], closed=False, end_pc=1)
    base = 0x5550_0000_0000
    for mode in modes.JIT:
        ctx = Context(mode, 0x10000, [], code, [0x20000] * isa.NUM_OPCODES, heat=0x30000,
                      rec_table=0x40000, traces_at={1: base + distance})
        sized = compile_trace(trace, ctx, None)
        placed = compile_trace(trace, ctx, base)
        assert len(placed.code) == len(sized.code)
        assert placed.linked == [distance < (1 << 31)], mode


def test_a_trace_naming_a_missing_stencil_is_a_compile_error():
    code, _ = _nop_loop_trace()
    trace = Trace(0, [TraceOp(0, OP["NOP"], 0, "NOP:nonesuch"),
                      TraceOp(1, OP["LOOP"], -1, "LOOP:close")])
    with pytest.raises(CompileError, match=r"no stencil NOP:nonesuch \(pc 0\)"):
        compile_trace(trace, Context("jit-direct", 0x10000, [], code), None)
    with pytest.raises(CompileError, match="not a JIT mode"):
        compile_trace(_nop_loop_trace()[1], Context("tailcall", 0x10000, [], code), None)


# ---- the artifact ---------------------------------------------------------------------

@pytest.fixture
def build_dir(monkeypatch, tmp_path):
    """A private SHIMLAB_BUILD_DIR, and no stencils cached from elsewhere (before or after)."""
    monkeypatch.setenv("SHIMLAB_BUILD_DIR", str(tmp_path))
    stencil_store.load.cache_clear()
    yield tmp_path
    stencil_store.load.cache_clear()


def test_artifact_is_built_headed_by_the_inputs_hash(build_dir):
    path = stencil_store.artifact_path()
    assert path == build_dir / "stencils.json"      # build_root reads the variable at call time
    assert not path.exists()
    st = stencil_store.load()
    text = path.read_text()
    want = stub_build.input_hash()
    assert re.fullmatch(r"[0-9a-f]{16}", want)
    assert text.lstrip().startswith('{\n "generated_by"') and f'"hash": "{want}"' in text[:200]
    data = json.loads(text)
    assert data["hash"] == want
    assert set(data["stencils"]) == set(st) and "ADD" in st
    assert not list(build_dir.glob(".stencils-*")), "a temporary file was left behind"


def _tamper(path, hash_=None, add_code="90"):
    data = json.loads(path.read_text())
    if hash_ is not None:
        data["hash"] = hash_
    data["stencils"]["ADD"]["code"] = add_code
    data["stencils"]["ADD"]["holes"] = []
    path.write_text(json.dumps(data))


def test_stale_artifact_is_rebuilt(build_dir):
    real_add = stencil_store.load()["ADD"].code
    path = stencil_store.artifact_path()
    _tamper(path, hash_="0" * 16)
    stencil_store.load.cache_clear()
    assert stencil_store.load()["ADD"].code == real_add
    assert json.loads(path.read_text())["hash"] == stub_build.input_hash()


def test_current_artifact_is_used_as_it_is(build_dir):
    """The hash alone decides: an artifact whose hash matches is not rebuilt (so
    the tampered ADD comes back), and the lru_cache serves it until cleared."""
    stencil_store.load()
    path = stencil_store.artifact_path()
    _tamper(path)
    assert stencil_store.load()["ADD"].code != b"\x90"       # still the cached one
    stencil_store.load.cache_clear()
    assert stencil_store.load()["ADD"].code == b"\x90"


@pytest.mark.parametrize("garbage", ["", "{not json", "[]", '{"hash": null}'])
def test_unreadable_artifact_is_rebuilt(build_dir, garbage):
    path = stencil_store.artifact_path()
    path.write_text(garbage)
    st = stencil_store.load()
    assert "ADD" in st
    assert json.loads(path.read_text())["hash"] == stub_build.input_hash()


# ---- the artifact's prepared form (what a JIT run reads) ------------------------------

def _rewrite_prepared(path, change):
    """The prepared file with its payload changed by `change` (marshal data
    in, out), its CRC made to match: a well-formed file saying other things."""
    import marshal
    import zlib
    blob = path.read_bytes()
    head = len(stencil_store._PREPARED_MAGIC)
    payload = marshal.dumps(change(marshal.loads(blob[head + 4:])))
    path.write_bytes(blob[:head] + zlib.crc32(payload).to_bytes(4, "little") + payload)


def _with_add_code(parts, code):
    import marshal
    digest, hash_, blobs, kept = parts
    _, *fields = marshal.loads(blobs["ADD"])
    return (digest, hash_, {**blobs, "ADD": marshal.dumps((code, *fields))}, kept)


def test_prepared_form_is_written_and_read_as_the_artifact_says(build_dir):
    st = stencil_store.load()
    prepared = Path(stencil_store.prepared_path(stencil_store.artifact_path()))
    assert prepared.is_file()
    stencil_store.load.cache_clear()
    again = stencil_store.load()        # from the prepared form: the same stencils
    assert again == st and list(again) == list(st)
    # it is what a load reads: a (well-formed) change to it shows
    _rewrite_prepared(prepared, lambda parts: _with_add_code(parts, b"\x90"))
    stencil_store.load.cache_clear()
    assert stencil_store.load()["ADD"].code == b"\x90"


def test_prepared_form_of_other_artifact_bytes_is_not_used(build_dir):
    """The artifact rewritten (even with the same inputs' hash, as _tamper
    does): its prepared form names other bytes and is made again."""
    stencil_store.load()
    path = stencil_store.artifact_path()
    _tamper(path)
    stencil_store.load.cache_clear()
    assert stencil_store.load()["ADD"].code == b"\x90"
    _rewrite_prepared(Path(stencil_store.prepared_path(path)),
                      lambda parts: _with_add_code(parts, b"\xcc"))
    # and a prepared form made for other inputs (the hash it was made for) is not used
    _rewrite_prepared(Path(stencil_store.prepared_path(path)),
                      lambda parts: (parts[0], "0" * 16, *parts[2:]))
    stencil_store.load.cache_clear()
    assert stencil_store.load()["ADD"].code == b"\x90"


@pytest.mark.parametrize("damage", ["empty", "garbage", "truncated", "bit flip", "other magic"])
def test_damaged_prepared_form_is_made_again_never_read(build_dir, damage):
    st = stencil_store.load()
    prepared = Path(stencil_store.prepared_path(stencil_store.artifact_path()))
    blob = prepared.read_bytes()
    head = len(stencil_store._PREPARED_MAGIC)
    bad = {"empty": b"", "garbage": b"not marshal data at all" * 10,
           "truncated": blob[:len(blob) // 2],
           # one bit of a stencil's code: unmarshals, so only the CRC tells
           "bit flip": blob[:-5000] + bytes([blob[-5000] ^ 1]) + blob[-4999:],
           "other magic": b"X" + blob[1:]}[damage]
    assert len(blob) > head + 5000
    prepared.write_bytes(bad)
    stencil_store.load.cache_clear()
    assert stencil_store.load() == st
    path = stencil_store.artifact_path()           # made again from the artifact
    from shimlab.digest import sha1
    made = stencil_store._from_prepared(path, sha1(path.read_bytes()).digest(),
                                        stub_build.input_hash())
    assert made is not None and made[0] == st


def test_a_stamped_prepared_form_is_read_without_the_artifact_or_its_inputs(build_dir,
                                                                             monkeypatch):
    """While the artifact and its inputs are as stamped (stat: inode, size,
    mtime, ctime), a load neither hashes the inputs nor reads the artifact;
    a touched input, or the artifact, sends it back to both."""
    from shimlab import cachefile
    monkeypatch.setattr(cachefile, "SETTLED_NS", -10**12)     # every file settled
    st = stencil_store.load()
    path = stencil_store.artifact_path()
    stencil_store.load.cache_clear()
    digest = stencil_store.digest()
    hashed = []
    real_hash = stub_build.input_hash
    monkeypatch.setattr(stub_build, "input_hash", lambda *a: hashed.append(1) or real_hash(*a))
    stencil_store.load.cache_clear()
    assert stencil_store.load() == st and stencil_store.digest() == digest and not hashed
    for touched in (stub_build.input_files()[0], path):
        t = os.stat(touched).st_mtime_ns
        os.utime(touched, ns=(t, t + 1000))
        stencil_store.load.cache_clear()
        hashed.clear()
        assert stencil_store.load() == st and hashed, touched      # hashed and read again
        stencil_store.load.cache_clear()
        hashed.clear()
        assert stencil_store.load() == st and not hashed           # and stamped again
        os.utime(touched, ns=(t, t))


# ---- the stencil tester --------------------------------------------------------------

def _in_child(fn, *args):
    def child():
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(60)
        return fn(*args)
    return isolate.call("stencil test", child)


@needs_jit
def test_run_stencil_passes_the_real_stencils():
    from shimlab import stencil_check
    names = [n for n in stencil_store.load()
             if not n.startswith(("exit:", "count", "uncount", "tally"))]

    def all_of_them():
        return {n: stencil_check.run_stencil(n, 8, 1, JIT_CC) for n in names}
    bad = {n: f for n, f in _in_child(all_of_them).items() if f}
    assert not bad, bad


@needs_jit
@pytest.mark.parametrize("victim, impostor", [
    ("ADD", "SUB"), ("EQ", "NE"), ("MOVE", "CELL_ADD"), ("FLOORDIV", "MOD"),
    # an off-by-one comparison (the wrong setcc) differs only when a == b
    ("LT", "LE"), ("GT", "GE"),
])
def test_run_stencil_detects_a_wrong_stencil(monkeypatch, victim, impostor):
    from shimlab import stencil_check
    real = stencil_store.load()
    fake = dict(real)
    fake[victim] = replace(real[impostor], name=victim)
    monkeypatch.setattr(stencil_store, "load", lambda *args, **kwargs: fake)
    failures = _in_child(stencil_check.run_stencil, victim, 40, 0, JIT_CC)
    assert failures, f"{victim} with {impostor}'s code passed"
    assert all(f.startswith("trial ") for f in failures), failures


# ---- `shimlab stencils` ---------------------------------------------------------------

def _shimlab(*args):
    return subprocess.run([sys.executable, "-m", "shimlab.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def test_stencils_list_lists_every_stencil():
    p = _shimlab("stencils", "list")
    assert p.returncode == 0, p.stderr
    rows = p.stdout.splitlines()[2:]            # header, rule
    listed = [r.split()[0] for r in rows if r.strip()]
    st = stencil_store.load()
    assert sorted(listed) == sorted(st)
    for r in rows:
        name, size = r.split()[:2]
        assert int(size) == len(st[name].code), r


def test_stencils_show_marks_the_holes():
    p = _shimlab("stencils", "show", "MOVE")
    assert p.returncode == 0, p.stderr
    move = stencil_store.load()["MOVE"]
    assert p.stdout.startswith(f"MOVE: {len(move.code)} bytes")
    kinds = {h.kind for h in move.holes}
    assert {"oparg", "deopt"} <= kinds
    for h in move.holes:
        assert re.search(rf"hole {h.kind}\s+at \+{h.offset}, {h.width} bytes", p.stdout)
        assert f"<- hole {h.kind}@{h.offset}" in p.stdout, p.stdout
    marked = [ln for ln in p.stdout.splitlines() if "<- hole" in ln]
    assert len(marked) == len(move.holes)


@pytest.mark.parametrize("args", [("show", "NOPE"), ("show", "add"), ("test", "NOPE")])
def test_stencils_unknown_name_is_a_one_line_error(args):
    p = _shimlab("stencils", *args)
    assert p.returncode == 1, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("shimlab: no stencil named"), p.stderr
    assert "Traceback" not in p.stderr and p.stdout == ""
    if args[1] == "add":
        assert "did you mean ADD" in lines[0]


@needs_jit
def test_stencils_test_add_passes():
    p = _shimlab("stencils", "test", "ADD", "--trials", "20", "--cc", JIT_CC)
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert re.search(r"ok\s+ADD", p.stdout), p.stdout
    assert "1 of 1 stencils agree with the oracle" in p.stderr
