"""A source file's bytes to text: UTF-8, or for minipy what a PEP 263
declaration says, read as CPython reads it (the same regular expression, on
line 1, or on line 2 when line 1 is blank or a comment; a UTF-8 byte-order
mark).  Errors are one line naming the file and, where there is one, the
declaration; "binary data" is kept for files that are not text at all.
"""
from __future__ import annotations

import codecs
import re

from ..errors import FrontendError
from ..lazy_pattern import LazyPattern

# CPython's (Lib/tokenize.py, Parser/tokenizer.c): a comment line with
# "coding:" or "coding=" and a name
# (matched at a line's start with pos and endpos, so no ^ and no copy of the line)
_DECLARATION = LazyPattern(rb"[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)
_BLANK_OR_COMMENT = LazyPattern(rb"[ \t\f]*(?:[#\r\n]|$)", re.ASCII)
_BOM = codecs.BOM_UTF8
# bytes no text file holds (tab, newlines and form feed aside)
_CONTROL = LazyPattern(rb"[\x01-\x08\x0e-\x1f\x7f]")
_TEXT_SAMPLE = 1 << 16


def declaration(data: bytes, start: int = 0) -> tuple[int, str, str] | None:
    """(line, encoding name, the line) of a PEP 263 declaration in the
    lines from offset start, or None."""
    for number in (1, 2):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end + 1
        m = _DECLARATION.match(data, start, end)
        if m:
            line = data[start:end].decode("latin-1").rstrip("\r\n")
            return number, m.group(1).decode("ascii"), line
        if not _BLANK_OR_COMMENT.match(data, start, end) or end == len(data):
            return None           # line 2 counts only after a blank or comment line
        start = end
    return None


def decode(data: bytes, path: str, pep263: bool) -> str:
    """The text of a source file.  pep263: honour an encoding declaration
    (minipy, as CPython does); otherwise the file must be UTF-8."""
    nul = data.find(0)
    if nul >= 0:
        raise FrontendError(f"{path}: binary data, not a program (NUL byte at offset {nul})")
    skip = len(_BOM) if data.startswith(_BOM) else 0
    body = memoryview(data)[skip:]          # no copy of a big source
    declared = declaration(data, skip) if pep263 else None
    if declared is None:
        try:
            return str(body, "utf-8")
        except UnicodeDecodeError as e:
            raise FrontendError(_not_utf8(data, e.start + skip, path, pep263)) from None
    line, name, text = declared
    where = f"{path}:{line}: the encoding declaration {text.strip()!r}"
    try:
        info = codecs.lookup(name)
    except LookupError:
        raise FrontendError(f"{where} names an unknown encoding {name!r}") from None
    if skip and info.name not in ("utf-8", "utf-8-sig"):
        raise FrontendError(f"{where} says {name!r}, but the file starts with a UTF-8 "
                            f"byte-order mark")
    try:
        return str(body, name)
    except LookupError:             # e.g. rot13: a codec, but not of bytes to text
        raise FrontendError(f"{where} names {name!r}, which is not a text encoding") from None
    except UnicodeDecodeError as e:
        at = e.start + skip
        raise FrontendError(f"{where}, but byte 0x{data[at]:02x} at offset {at} (line "
                            f"{_line_of(data, at)}) is not {name}: {e.reason}") from None


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _not_utf8(data: bytes, at: int, path: str, pep263: bool) -> str:
    sample = data[:_TEXT_SAMPLE]
    if _CONTROL.search(sample) or sample.startswith((codecs.BOM_UTF16_LE,
                                                     codecs.BOM_UTF16_BE)):
        return f"{path}: binary data, not a program (invalid UTF-8 at offset {at})"
    line = _line_of(data, at)
    hint = (" and no encoding declared (as CPython, a file in another encoding needs "
            "'# -*- coding: NAME -*-' on line 1 or 2)") if pep263 else ""
    return f"{path}:{line}: byte 0x{data[at]:02x} at offset {at} is not UTF-8{hint}"
