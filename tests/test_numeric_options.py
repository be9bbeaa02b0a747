"""Every numeric option of every command refuses values that cannot be meant
(issue 17): nan, inf, zero counts, negative times, integers past int64 -- a
usage error naming the option, never a traceback or a silently used default."""
from __future__ import annotations

import pytest

from conftest import EXAMPLES
from shimlab import cli
from shimlab.bench import harness
from shimlab.errors import ShimlabError

HELLO = str(EXAMPLES / "bf" / "hello.bf")

BAD = [
    ("run", HELLO, "--timeout", "nan"),
    ("run", HELLO, "--timeout", "inf"),
    ("run", HELLO, "--timeout", "-1"),
    ("run", HELLO, "--timeout", "0"),
    ("run", HELLO, "--jit-threshold", "99999999999999999999"),
    ("run", HELLO, "--jit-threshold", "0"),
    ("run", HELLO, "--max-output", "0"),
    ("run", HELLO, "--max-output", "1e3"),
    ("run", HELLO, "--tape-size", "0"),
    ("run", HELLO, "--tape-size", "9" * 5000),        # past int()'s digit limit, too
    ("bench", "dispatch", "--timeout", "nan"),
    ("bench", "dispatch", "--timeout", "inf"),
    ("bench", "dispatch", "--processes", "0"),
    ("bench", "dispatch", "--samples", "0"),
    ("bench", "dispatch", "--warmup", "-1"),
    ("bench", "dispatch", "--target-ci", "-5"),
    ("bench", "dispatch", "--target-ci", "nan"),
    ("bench", "dispatch", "--max-processes", "0"),
    ("bench", "dispatch", "--code-layouts", "0"),
    ("bench", "dispatch", "--cpu", "-1"),
    ("bench", "dispatch", "--cpu", "100000"),        # not a CPU of this machine
    ("bench", "dispatch", "--tape-size", "-3"),
    ("bench", "transitions", "--processes", "0"),
    ("bench", "transitions", "--samples", "-2"),
    ("bench", "programs", "--samples", "0"),
    ("bench", "programs", "--tape-size", "0"),
    ("stencils", "test", "--trials", "-1"),
    ("stencils", "test", "--trials", "0"),
    ("stencils", "compare", "--rounds", "0"),
]


@pytest.mark.parametrize("argv", BAD, ids=[" ".join(a[:1] + a[-2:]) for a in BAD])
def test_a_bad_number_is_refused_naming_the_option(argv, capsys):
    """`run` reports its options' bad values as one line with exit status 1
    (as it always did for --timeout 0); the other commands as usage errors."""
    if argv[0] == "run":
        assert cli.main(list(argv)) == 1
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1
        assert err.startswith(f"shimlab: {argv[-2]} ")
    else:
        with pytest.raises(SystemExit) as e:
            cli.main(list(argv))
        assert e.value.code not in (0, None)
        err = capsys.readouterr().err
        assert f"argument {argv[-2]}" in err.strip().splitlines()[-1]
    assert "Traceback" not in err


def test_good_numbers_pass(tmp_path):
    from shimlab.cli import run
    args = cli.parser().parse_args(["run", HELLO, "--timeout", "2.5", "--jit-threshold", "1",
                                    "--max-output", "10", "--tape-size", "65536"])
    run.check_numbers(args)
    assert (args.timeout, args.jit_threshold, args.max_output, args.tape_size) == \
        (2.5, 1, 10, 65536)
    args = cli.parser().parse_args(["bench", "dispatch", "--warmup", "0", "--target-ci", "0.5"])
    assert (args.warmup, args.target_ci, args.tape_size) == (0, 0.5, 30000)


@pytest.mark.parametrize("field,value", [("processes", 0), ("samples", 0), ("warmup", -1),
                                         ("timeout", float("nan")), ("timeout", float("inf")),
                                         ("target_ci", -5.0), ("tape_len", 0)])
def test_harness_options_refuse_them_from_python_too(field, value):
    with pytest.raises(ShimlabError, match=f"{field}="):
        harness.Options(**{field: value})
