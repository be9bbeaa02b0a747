"""The compiler-built stencil files under concurrent writers (issue 17): each
writer has a temporary name of its own and renames it into place, so no
writer loses its file to another and no reader sees half an entry; an entry
that does not parse is rebuilt."""
from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys

import pytest

from conftest import compiler_for
from shimlab.jit import clang_stencils


def _writer(path, barrier, n, tag):
    barrier.wait()
    for i in range(n):
        clang_stencils._write_cache(path, json.dumps({"writer": tag, "i": i, "pad": "x" * 50_000}))


def _reader(path, barrier, n, queue):
    barrier.wait()
    bad = 0
    for _ in range(n):
        try:
            json.loads(path.read_text())
        except FileNotFoundError:
            pass            # before the first rename
        except ValueError:
            bad += 1        # half a file
    queue.put(bad)


def test_concurrent_writers_and_readers_never_see_half_an_entry(tmp_path):
    path = tmp_path / "clang-stencils-cc-key.json"
    ctx = multiprocessing.get_context("fork")
    writers, readers, rounds = 4, 2, 100
    barrier, queue = ctx.Barrier(writers + readers), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(path, barrier, rounds, w))
             for w in range(writers)]
    procs += [ctx.Process(target=_reader, args=(path, barrier, 4 * rounds, queue))
              for _ in range(readers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0      # no writer failed (the shared .tmp name did)
    assert [queue.get(timeout=5) for _ in range(readers)] == [0] * readers
    assert json.loads(path.read_text())["i"] == rounds - 1
    assert os.listdir(tmp_path) == [path.name]      # no temporary left behind


_LOAD = """
import sys
from shimlab.jit import clang_stencils
s = clang_stencils.load(sys.argv[1])
print(len(s), sorted(s)[0], s[sorted(s)[0]].code.hex())
"""


@pytest.mark.slow      # four clang builds and compiler probes on an empty cache: about a minute
def test_concurrent_first_loads_on_an_empty_cache_all_succeed(tmp_path):
    cc = compiler_for("jit-direct", family="clang")
    env = {**os.environ, "SHIMLAB_BUILD_DIR": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", _LOAD, cc], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(4)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    assert len({o for o, _ in outs}) == 1
    entries = [f for f in os.listdir(tmp_path) if f.startswith("clang-stencils-")]
    assert len(entries) == 1 and entries[0].endswith(".json"), entries
    # a corrupted entry is rebuilt, not a crash
    (tmp_path / entries[0]).write_text('{"half": ')
    again = subprocess.run([sys.executable, "-c", _LOAD, cc], env=env, capture_output=True,
                           text=True, timeout=600)
    assert again.returncode == 0 and again.stdout == outs[0][0], again.stderr
