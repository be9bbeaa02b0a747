"""Front ends: source files to verified bytecode, chosen by file suffix."""
from __future__ import annotations

from pathlib import Path

from ..bytecode import Program
from ..errors import FrontendError
from . import bf, minipy, slbc
from .verify import verify

LANGUAGES = {".b": "bf", ".bf": "bf", ".py": "minipy", ".slbc": "bytecode"}
COMPILERS = {"bf": bf.compile_source, "minipy": minipy.compile_source,
             "bytecode": slbc.compile_source}


def compile_text(source: str, filename: str, language: str) -> Program:
    if not source.strip():
        raise FrontendError(f"{filename}: empty program")
    if language not in COMPILERS:
        raise FrontendError(f"{filename}: unknown language {language!r}")
    return verify(COMPILERS[language](source, filename))


def load_program(path: str | Path) -> Program:
    """Read, compile and verify a program; every failure is a FrontendError."""
    path = Path(path)
    language = LANGUAGES.get(path.suffix.lower())
    if language is None:
        raise FrontendError(f"{path}: unknown file type {path.suffix or '(no suffix)'!r} "
                            f"(expected .b or .bf for BF, .py for minipy, .slbc for "
                            f"bytecode as JSON)")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise FrontendError(f"{path}: cannot read: {e.strerror}") from None
    if not data:
        raise FrontendError(f"{path}: empty file")
    nul = data.find(0)
    if nul >= 0:
        raise FrontendError(f"{path}: binary data, not a program (NUL byte at offset {nul})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FrontendError(f"{path}: binary data, not a program (invalid UTF-8 at offset "
                            f"{e.start})") from None
    return compile_text(text, str(path), language)
