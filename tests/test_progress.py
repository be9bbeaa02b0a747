"""shimlab.bench.progress with a fake clock and fake streams."""
import io

from shimlab.bench.progress import Progress, format_duration


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


class TTY(io.StringIO):
    def isatty(self):
        return True


def test_log_output_every_ten_percent():
    out, clock = io.StringIO(), Clock()
    p = Progress(100, "bench", stream=out, clock=clock)
    for _ in range(100):
        clock.t += 0.01
        p.step()
    p.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 10
    assert lines[0].startswith("bench  10/100  10%")
    assert lines[-1].startswith("bench  100/100 100%")
    assert "\r" not in out.getvalue()


def test_log_output_every_interval_and_eta():
    out, clock = io.StringIO(), Clock()
    p = Progress(1000, "sweep", stream=out, clock=clock)
    clock.t += 2.0
    p.step(note="cfg a")      # under 10% and under 5 s: nothing yet
    assert out.getvalue() == ""
    clock.t += 4.0
    p.step(note="cfg b")      # 6 s since the start
    assert out.getvalue() == "sweep  2/1000   0%  elapsed 0:06  eta 49:54  cfg b\n"
    p.close()                 # nothing new to report
    assert out.getvalue().count("\n") == 1


def test_tty_redraws_in_place():
    out, clock = TTY(), Clock()
    with Progress(3, "x", stream=out, clock=clock) as p:
        for _ in range(3):
            clock.t += 1.0
            p.step()
    text = out.getvalue()
    assert text.startswith("\rx  1/3  33%  elapsed 0:01  eta 0:02")
    assert text.count("\r") >= 3 and text.endswith("\n") and text.count("\n") == 1


def test_unknown_total_and_durations():
    out, clock = io.StringIO(), Clock()
    p = Progress(None, stream=out, clock=clock)
    p.step(5)
    p.close()
    assert out.getvalue() == "5  elapsed 0:00\n"
    assert format_duration(3725) == "1:02:05"
