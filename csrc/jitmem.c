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
 * will run (the same address unless dual).  Returns 0 or an errno. */
int sl_jit_map(size_t size, void *hint, int dual, void **rw, void **rx) {
    if (!dual) {
        void *p = mmap(hint, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return errno;
        *rw = *rx = p;
        return 0;
    }
    int fd = memfd_create("shimlab-jit", MFD_CLOEXEC);
    if (fd < 0) return errno;
    int err = 0;
    void *w = MAP_FAILED, *x = MAP_FAILED;
    if (ftruncate(fd, (off_t)size)) err = errno;
    if (!err && (w = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
        err = errno;
    if (!err && (x = mmap(hint, size, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0)) == MAP_FAILED)
        err = errno;
    close(fd);
    if (err) {
        if (w != MAP_FAILED) munmap(w, size);
        return err;
    }
    *rw = w; *rx = x;
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

int sl_jit_unmap(void *p, size_t size) {
    return munmap(p, size) ? errno : 0;
}
