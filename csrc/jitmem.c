/* Executable memory for JIT traces, W^X: never writable and executable at
 * once.  The usual way maps the memory read-write, lets the JIT fill it and
 * then makes it read-execute.  Where the kernel refuses to make memory
 * executable (prctl PR_SET_MDWE), the fallback maps one memfd twice: a
 * read-write view to fill (unmapped once sealed) and a read-execute view. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

/* Maps `size` bytes near `hint`; *rw is where to write, *rx where the code
 * will run (the same address unless dual; then *fd is the memfd, kept open
 * so that sl_jit_patch can map a writable view again).  0 or an errno. */
int sl_jit_map(size_t size, void *hint, int dual, void **rw, void **rx, int *fd) {
    *fd = -1;
    if (!dual) {
        void *p = mmap(hint, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return errno;
        *rw = *rx = p;
        return 0;
    }
    int f = memfd_create("shimlab-jit", MFD_CLOEXEC);
    if (f < 0) return errno;
    int err = 0;
    void *w = MAP_FAILED, *x = MAP_FAILED;
    if (ftruncate(f, (off_t)size)) err = errno;
    if (!err && (w = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0)) == MAP_FAILED)
        err = errno;
    if (!err && (x = mmap(hint, size, PROT_READ | PROT_EXEC, MAP_SHARED, f, 0)) == MAP_FAILED)
        err = errno;
    if (err) {
        if (w != MAP_FAILED) munmap(w, size);
        close(f);
        return err;
    }
    *rw = w; *rx = x; *fd = f;
    return 0;
}

/* Filled: make it executable (or drop the writable view).  0 or an errno. */
int sl_jit_seal(void *rw, void *rx, size_t size) {
    if (rw == rx) {
        if (mprotect(rx, size, PROT_READ | PROT_EXEC)) return errno;
    } else if (munmap(rw, size)) {
        return errno;
    }
    __builtin___clear_cache((char *)rx, (char *)rx + size);
    return 0;
}

/* Rewrites n bytes of sealed code at `at` (inside the mapping at rx of
 * `size` bytes): linking a trace's exit to another trace.  W^X holds
 * throughout: the pages are writable and not executable while written, or
 * (dual, fd >= 0) a writable view of the memfd is mapped for the write and
 * unmapped again.  0 or an errno. */
int sl_jit_patch(void *rx, size_t size, int fd, void *at, const void *src, size_t n) {
    size_t off = (size_t)((char *)at - (char *)rx);
    if (fd < 0) {
        if (mprotect(rx, size, PROT_READ | PROT_WRITE)) return errno;
        __builtin_memcpy(at, src, n);
        if (mprotect(rx, size, PROT_READ | PROT_EXEC)) return errno;
    } else {
        char *w = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (w == MAP_FAILED) return errno;
        __builtin_memcpy(w + off, src, n);
        if (munmap(w, size)) return errno;
    }
    __builtin___clear_cache((char *)at, (char *)at + n);
    return 0;
}

int sl_jit_unmap(void *p, size_t size, int fd) {
    if (fd >= 0) close(fd);
    return munmap(p, size) ? errno : 0;
}
