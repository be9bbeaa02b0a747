"""Front ends: source files to verified bytecode, chosen by file suffix."""
from __future__ import annotations

import importlib
import os

from ..bytecode import Program
from ..errors import FrontendError
from . import bf, encoding, program_cache
from .verify import verify

LANGUAGES = {".b": "bf", ".bf": "bf", ".py": "minipy", ".slbc": "bytecode"}
# language -> the module that compiles it, imported when a program in it comes
# (a BF run never loads the minipy compiler: `shimlab run` starts fast)
COMPILERS = {"bf": "bf", "minipy": "minipy", "bytecode": "slbc"}


def compile_text(source: str, filename: str, language: str, bf_opt: int = 0) -> Program:
    """bf_opt: the BF front end's level (frontend/bf.py); other languages ignore it."""
    if not source or source.isspace():     # not strip(): no copy of a big source
        raise FrontendError(f"{filename}: empty program")
    if language not in COMPILERS:
        raise FrontendError(f"{filename}: unknown language {language!r}")
    if language == "bf":
        return verify(bf.compile_source(source, filename, bf_opt))
    module = importlib.import_module(f".{COMPILERS[language]}", __name__)
    return verify(module.compile_source(source, filename))


def load_program(path: str | os.PathLike, bf_opt: int = 0) -> Program:
    """Read, compile and verify a program; every failure is a FrontendError."""
    path = os.fspath(path)
    suffix = os.path.splitext(path)[1]
    suffix = "" if suffix == "." else suffix        # (as pathlib has it: "x." has none)
    language = LANGUAGES.get(suffix.lower())
    if language is None:
        raise FrontendError(f"{path}: unknown file type {suffix or '(no suffix)'!r} "
                            f"(expected .b or .bf for BF, .py for minipy, .slbc for "
                            f"bytecode as JSON)")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise FrontendError(f"{path}: cannot read: {e.strerror}") from None
    if not data:
        raise FrontendError(f"{path}: empty file")
    # a program compiled before from these very bytes, by this front end (program_cache.py)
    kept = program_cache.Entry(path, language, bf_opt if language == "bf" else 0, data) \
        if program_cache.enabled() else None
    program = kept.get() if kept else None
    if program is not None:
        return program
    # minipy reads a PEP 263 encoding declaration as CPython does; the rest are UTF-8
    text = encoding.decode(data, path, pep263=language == "minipy")
    del data        # a big source is held once, as text, while it compiles
    program = compile_text(text, path, language, bf_opt)
    if kept:
        kept.put(program)
    return program
