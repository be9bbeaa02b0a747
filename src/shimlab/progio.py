"""A program's input and output as a run streams them, in every mode.

The C VM (driver.c) and the Python oracle read input a chunk at a time as
the program asks for it and write output whenever their buffer fills, so
neither holds more than a chunk; this module has the oracle's side, the
stream settings both share and the one-line errors a stream can stop with.
"""
from __future__ import annotations

import errno
import os
import select

from .errors import RunError
from .record import Frozen

CHUNK = 1 << 16          # bytes per read and per write (SL_IO_CHUNK in vm.h)


class OutputLimit(RunError):
    """The program's output reached --max-output."""

    def __init__(self, limit: int):
        super().__init__(f"the program's output reached the --max-output limit of {limit} "
                         f"bytes; stopped it")
        self.limit = limit

    def __reduce__(self):
        return type(self), (self.limit,)


class StreamError(RunError):
    """Reading the input or writing the output failed (errno `code`)."""

    def __init__(self, what: str, code: int):
        super().__init__(f"cannot {what}: {os.strerror(code)}")
        self.what, self.code = what, code

    def __reduce__(self):
        return type(self), (self.what, self.code)


def write_error(code: int) -> Exception:
    """The exception for a failed write of the output: a closed pipe is the
    BrokenPipeError the CLI ends quietly on, anything else one line."""
    if code == errno.EPIPE:
        return BrokenPipeError(code, os.strerror(code))
    return StreamError("write the program's output", code)


def read_error(code: int) -> StreamError:
    return StreamError("read the program's input", code)


class Streams(Frozen):
    """Where a run reads its input and writes its output as it goes.

    in_fd: read a chunk at a time when the program reads past what it has
    (None: only the bytes given to the run); out_fd: written whenever the
    buffer fills and when the run stops (None: the output is kept, whole, in
    Result.output); max_output: the most bytes a run may output (None: no
    limit)."""
    in_fd: int | None = None
    out_fd: int | None = None
    max_output: int | None = None


def write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        except BlockingIOError:     # a non-blocking fd: wait, as driver.c does
            select.select([], [fd], [])
            continue
        except OSError as e:
            raise write_error(e.errno) from None
        view = view[n:]


class Reader:
    """The oracle's input stream: the next chunk of fd, b"" from its end on."""

    def __init__(self, fd: int):
        self.fd, self.eof = fd, False

    def read(self) -> bytes:
        if self.eof:
            return b""
        while True:
            try:
                data = os.read(self.fd, CHUNK)
                break
            except InterruptedError:
                continue
            except BlockingIOError:
                select.select([self.fd], [], [])
                continue
            except OSError as e:
                raise read_error(e.errno) from None
        self.eof = not data
        return data


class Writer:
    """The oracle's output buffer: written to fd whenever it holds a chunk
    (fd None: kept whole) and stopped at max_output, as driver.c does."""

    def __init__(self, fd: int | None = None, max_output: int | None = None):
        self.fd, self.max = fd, max_output
        self.buf = bytearray()
        self.written = 0
        self.cap = self._cap()

    def _cap(self) -> int:
        cap = CHUNK if self.fd is not None else 1 << 62
        if self.max is not None:
            cap = min(cap, self.max - self.written)
        return cap

    def room(self, n: int) -> None:
        """Called when n more bytes do not fit under cap: write out, or stop."""
        self.flush()
        if self.max is not None and self.written + len(self.buf) + n > self.max:
            raise OutputLimit(self.max)
        self.cap = max(self._cap(), len(self.buf) + n)

    def flush(self) -> None:
        if self.fd is not None and self.buf:
            data = bytes(self.buf)
            self.buf.clear()           # in place: State.out is this buffer
            self.written += len(data)
            write_all(self.fd, data)
