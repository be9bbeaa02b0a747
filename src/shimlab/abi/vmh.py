"""The VM's C interface as Python sees it, read from csrc/ rather than copied.

cffi's declarations come from vm.h (between cdef-begin and cdef-end) plus the
driver's entry points below; numeric constants (`#define NAME 123`) are read
from vm.h and jit_interp.h, so the Python view cannot drift from the C one.
"""
from __future__ import annotations

import os
import re
import types
from functools import lru_cache

from ..digest import sha256
from ..paths import CSRC_DIR, build_dir

# The driver's and the JIT support's functions (csrc/driver.c, shim.c, jitmem.c).
FUNCTIONS = """
int sl_prepare(sl_vm *vm);
void sl_release(sl_vm *vm);
int sl_reset(sl_vm *vm);
int sl_check_code(const sl_vm *vm);
int sl_run(sl_vm *vm);
int sl_resume(sl_vm *vm);
int sl_interpret(sl_vm *vm);
int sl_relayout(sl_vm *vm, uint32_t seed);
int sl_bench(sl_vm *vm, int32_t warmup, int32_t samples, uint64_t *cycles, int64_t *ns);
uint64_t sl_tsc_now(void);
int64_t sl_clock_ns(void);
extern const void *sl_handler_addrs[];
int sl_jit_map(size_t size, void *hint, int dual, void **rw, void **rx, int *fd);
int sl_jit_seal(void *rw, void *rx, size_t size);
int sl_jit_unmap(void *p, size_t size, int fd);
int sl_jit_patch(void *rx, size_t size, int fd, void *at, const void *src, size_t n);
const sl_instr *sl_jit_run_trace(sl_vm *vm, void *trace);
uint64_t sl_time_code(void *fn, uint64_t n);
extern const void *sl_jit_enter_handler;
extern const void *sl_jit_rec_table;
extern const void *const sl_jit_enter_copies[];
"""

_DEFINE = re.compile(r"^#define\s+(SL_\w+)\s+(\d+)\s*(?:/\*.*)?$", re.M)


@lru_cache(maxsize=None)
def ffi():
    """The declarations as a cffi FFI.  Parsing them (pycparser) is most of a
    short run's start-up, so the parsed form is kept in the build directory as
    cffi's out-of-line module and loaded from there while the text is unchanged."""
    text = _read("vm.h")
    m = re.search(r"/\* cdef-begin.*?\*/(.*)/\* cdef-end \*/", text, re.S)
    decls = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S) + FUNCTIONS
    import _cffi_backend        # cffi's C half: the parsed form is tied to its version
    key = sha256(f"{_cffi_backend.__version__}\0{decls}".encode()).hexdigest()[:16]
    return _ffi_from(decls, os.path.join(build_dir(), "cffi", f"vmh_{key}.py"), f"_shimlab_vmh_{key}")


def _read(name: str) -> str:
    """csrc/'s file `name`."""
    with open(os.path.join(CSRC_DIR, name)) as f:
        return f.read()


def _ffi_from(decls: str, path: str, name: str):
    """The FFI of `decls`, from cffi's out-of-line module at `path` (written
    there first when missing or damaged)."""
    path = os.fspath(path)
    for _ in range(2):
        if not os.path.isfile(path) and _emit(decls, path) is None:
            break
        try:
            return _load(path, name)
        except Exception:           # a damaged file: written again, then loaded once more
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError:
                break
    import cffi                     # the cache cannot be written: parse every time
    f = cffi.FFI()
    f.cdef(decls)
    return f


def _load(path: str, name: str):
    """The FFI of cffi's out-of-line module at `path`, loaded as Python loads
    a module, through its bytecode cache beside it (compiling the module's
    source was ~1.9 ms of every run)."""
    from importlib.machinery import SourceFileLoader
    loader = SourceFileLoader(name, path)
    module = types.ModuleType(name)
    module.__file__ = path
    loader.exec_module(module)
    return module.ffi


def _emit(decls: str, path: str) -> str | None:
    """Parses `decls` and writes cffi's out-of-line module for them to `path`
    (atomically: concurrent first runs each write a whole file)."""
    path = os.fspath(path)
    import contextlib
    import io
    import tempfile

    import cffi
    f = cffi.FFI()
    f.cdef(decls)
    f.set_source("_shimlab_vmh", None)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".vmh-", suffix=".py", dir=os.path.dirname(path))
        os.close(fd)
        # cffi prints "generating ..." on stdout, which is the program's output
        with contextlib.redirect_stdout(io.StringIO()):
            f.emit_python_code(tmp)
        os.replace(tmp, path)
        with open(path) as f:
            return f.read()
    except OSError:
        return None


@lru_cache(maxsize=None)
def constants() -> dict[str, int]:
    """Every `#define SL_NAME <integer>` of vm.h, jit_interp.h and crossing.h."""
    out: dict[str, int] = {}
    for name in ("vm.h", "jit_interp.h", "crossing.h"):
        out.update((k, int(v)) for k, v in _DEFINE.findall(_read(name)))
    return out


def constant(name: str) -> int:
    return constants()[name]


def vm_offset(field_name: str) -> int:
    """Byte offset of a field of sl_vm."""
    return ffi().offsetof("sl_vm", field_name)
