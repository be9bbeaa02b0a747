/* The part of every interpreter build that is not dispatch: allocation,
 * reset between runs, a defensive check of the code, streaming input and
 * output, and the timed entry points (TSC cycles and clock_gettime ns around
 * sl_interpret). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "vm.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t sl_tsc_begin(void) {
    unsigned aux; _mm_lfence(); uint64_t t = __rdtsc(); _mm_lfence(); (void)aux; return t;
}
static inline uint64_t sl_tsc_end(void) {
    unsigned aux; uint64_t t = __rdtscp(&aux); _mm_lfence(); return t;
}
#else
static inline uint64_t sl_tsc_begin(void) { return 0; }
static inline uint64_t sl_tsc_end(void) { return 0; }
#endif

static int64_t sl_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t sl_tsc_now(void) { return sl_tsc_end(); }
int64_t sl_clock_ns(void) { return sl_now_ns(); }

/* Refuse code the interpreters could crash on, whoever built it: the Python
 * verifier does the full check, this keeps the C side safe on its own. */
int sl_check_code(const sl_vm *vm) {
    for (int32_t pc = 0; pc < vm->ncode; pc++) {
        int32_t op = vm->code[pc].op, arg = vm->code[pc].arg;
        if (op < 0 || op >= SL_NUM_OPCODES) return pc + 1;
        if (sl_op_is_jump[op]) {
            int k = sl_op_is_jump[op];
            int64_t t = (int64_t)pc + (k == 1 ? arg : k == 2 ? (arg & 0xFF) : k == 3 ? -(arg & 0xFF)
                        : k == 4 ? (arg & 0xFFFFFF) : -(arg & 0xFFFFFF));
            if (t < 0 || t >= vm->ncode) return pc + 1;
        }
    }
    return 0;
}

/* Where the code, the stack, the frames and the tape start within their page
 * decides which of their addresses alias in the L1 cache (4K aliasing: a
 * store to the tape and a load of the next instruction 4096 bytes apart look
 * dependent to the CPU), and that alone moves a dispatch benchmark by 10% or
 * more.  So each region starts at a chosen cache-line offset in its page: a
 * fixed, staggered layout by default; with a layout_seed, sl_bench draws a
 * new random layout for every run, so a benchmark averages over layouts
 * instead of measuring one by accident. */
static void *sl_alloc_region(size_t bytes) {
    void *base = NULL;
    if (posix_memalign(&base, 4096, bytes + 4096)) return NULL;
    memset(base, 0, bytes + 4096);
    return base;
}

static uint32_t sl_xorshift(uint32_t x) {
    x ^= x << 13; x ^= x >> 17; x ^= x << 5;
    return x;
}

/* Places code, stack, frames and tape for layout `seed` (0: the fixed one),
 * moving the code there; the old regions are freed. */
static int sl_place(sl_vm *vm, uint32_t seed) {
    static const unsigned fixed_lines[4] = {11, 0, 21, 42};   /* code, stack, frames, tape */
    size_t bytes[4] = {(size_t)vm->ncode * sizeof(sl_instr),
                       (size_t)vm->stack_size * sizeof(int64_t),
                       ((size_t)vm->max_depth + 1) * sizeof(sl_frame),
                       (size_t)vm->tape_len + 1};
    void *base[4];
    char *at[4];
    for (int i = 0; i < 4; i++) {
        unsigned line = fixed_lines[i];
        if (seed) { seed = sl_xorshift(seed); line = seed % 64; }
        if (i == 0 && vm->pin_code && vm->alloc_base[0]) {   /* JIT traces point into it */
            base[0] = vm->alloc_base[0]; at[0] = (char *)vm->code;
            continue;
        }
        base[i] = sl_alloc_region(bytes[i]);
        if (!base[i]) {
            while (i--) if (base[i] != vm->alloc_base[i]) free(base[i]);
            return -1;
        }
        at[i] = (char *)base[i] + line * 64;
    }
    if (at[0] != (char *)vm->code) memcpy(at[0], vm->code, bytes[0]);
    for (int i = 0; i < 4; i++)
        if (vm->alloc_base[i] != base[i]) free(vm->alloc_base[i]);
    memcpy(vm->alloc_base, base, sizeof base);
    vm->code = (const sl_instr *)at[0];     /* the interpreters run this copy */
    vm->stack = (int64_t *)at[1];
    vm->stack_end = vm->stack + vm->stack_size;
    vm->frames = (sl_frame *)at[2];
    vm->tape = (uint8_t *)at[3];
    return 0;
}

int sl_prepare(sl_vm *vm) {
    vm->out_size = vm->out_cap = SL_IO_CHUNK;
    vm->out = malloc((size_t)vm->out_size);
    if (!vm->out) return -1;
    return sl_place(vm, vm->layout_seed);
}

void sl_release(sl_vm *vm) {
    for (int i = 0; i < 4; i++) { free(vm->alloc_base[i]); vm->alloc_base[i] = NULL; }
    free(vm->out);
    free(vm->in_buf);
    vm->stack = NULL; vm->frames = NULL; vm->tape = NULL; vm->out = NULL; vm->in_buf = NULL;
}

/* What the fast path may fill the output buffer to: all of it, or what is
 * left of out_max. */
static void sl_set_out_cap(sl_vm *vm) {
    vm->out_cap = vm->out_size;
    if (vm->out_max && vm->out_max - vm->out_total < vm->out_cap)
        vm->out_cap = vm->out_max - vm->out_total;
}

/* Back to the state before the first instruction: main's locals zeroed. */
int sl_reset(sl_vm *vm) {
    if (vm->nfuncs < 1 || vm->funcs[0].nlocals + vm->funcs[0].max_stack > vm->stack_size)
        return -1;
    memset(vm->stack, 0, sizeof(int64_t) * (size_t)vm->funcs[0].nlocals);
    memset(vm->tape, 0, (size_t)vm->tape_len);
    vm->depth = 0; vm->in_pos = 0; vm->out_len = 0;
    /* a stream is read once: a new run starts from where the last one stopped */
    if (vm->in_stream) vm->in_len = 0;
    vm->in_eof = 0; vm->out_total = 0; vm->io_error = 0; vm->io_errno = 0;
    sl_set_out_cap(vm);
    vm->ip = vm->code + vm->funcs[0].entry;
    vm->fp = vm->stack; vm->sp = vm->stack + vm->funcs[0].nlocals;
    vm->head = vm->tape;
    vm->status = 0; vm->err_pc = -1; vm->err_value = 0;
    return 0;
}

/* ---- streaming I/O ------------------------------------------------------ */

/* An fd someone left non-blocking (a shared terminal or pipe) waits in
 * poll() instead of failing with EAGAIN. */
static int sl_wait_fd(int fd, short events) {
    if (errno != EAGAIN && errno != EWOULDBLOCK) return 0;
    struct pollfd p = {fd, events, 0};
    return poll(&p, 1, -1) >= 0 || errno == EINTR;
}

static int sl_write_all(int fd, const uint8_t *p, int64_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, (size_t)(n < (1 << 30) ? n : (1 << 30)));
        if (w < 0) {
            if (errno == EINTR || sl_wait_fd(fd, POLLOUT)) continue;
            return errno;
        }
        p += w; n -= w;
    }
    return 0;
}

/* These signals end a streaming run after writing out what it has buffered
 * (a timeout is SIGTERM from the parent, Ctrl-C is SIGINT); the handler then
 * dies of the same signal, so the parent still sees how the run ended. */
static const int sl_stream_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define SL_NSTREAM_SIGNALS ((int)(sizeof sl_stream_signals / sizeof sl_stream_signals[0]))
static sl_vm *volatile sl_signal_vm;

static void sl_stream_sigset(sigset_t *set) {
    sigemptyset(set);
    for (int i = 0; i < SL_NSTREAM_SIGNALS; i++) sigaddset(set, sl_stream_signals[i]);
}

static void sl_on_stream_signal(int sig) {
    sl_vm *vm = sl_signal_vm;
    /* a byte being stored while the signal came may be missed: it was not
     * output yet; sl_flush_output blocks these signals, so no byte twice */
    if (vm && vm->out_len > 0) sl_write_all(vm->out_fd, vm->out, vm->out_len);
    signal(sig, SIG_DFL);
    raise(sig);             /* delivered when the handler returns */
}

static void sl_stream_begin(sl_vm *vm, struct sigaction *old) {
    if (!vm->out_stream) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sl_on_stream_signal;
    sl_stream_sigset(&sa.sa_mask);
    sl_signal_vm = vm;
    for (int i = 0; i < SL_NSTREAM_SIGNALS; i++) {
        sigaction(sl_stream_signals[i], NULL, &old[i]);
        /* a signal the process was started ignoring stays ignored (nohup, a
         * background job of a script, a test runner's worker): its Ctrl-C
         * to the group is not meant to end this run */
        if (old[i].sa_handler != SIG_IGN) sigaction(sl_stream_signals[i], &sa, NULL);
    }
}

/* out[0..out_len) to out_fd; the stream signals wait meanwhile (their
 * handler writes the same buffer).  A failed write drops the buffer. */
static int sl_flush_output(sl_vm *vm) {
    if (!vm->out_stream || vm->out_len == 0) return 0;
    sigset_t set, old;
    sl_stream_sigset(&set);
    sigprocmask(SIG_BLOCK, &set, &old);
    int err = sl_write_all(vm->out_fd, vm->out, vm->out_len);
    vm->out_total += vm->out_len;
    vm->out_len = 0;
    sl_set_out_cap(vm);        /* what is left of out_max shrank */
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (err) {
        vm->io_error = SL_IO_WRITE; vm->io_errno = err;
        return -1;
    }
    return 0;
}

/* Whenever the interpreter returns, the buffer is written out: a run stopped
 * by an error, or by the JIT between recordings, holds nothing back. */
static int sl_stream_end(sl_vm *vm, struct sigaction *old, int status) {
    if (!vm->out_stream) return status;
    if (sl_flush_output(vm) && status == SL_OK) status = SL_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < SL_NSTREAM_SIGNALS; i++) sigaction(sl_stream_signals[i], &old[i], NULL);
    sl_signal_vm = NULL;
    return status;
}

/* Room for n more bytes of output, called when out_len + n > out_cap: the
 * buffer is written out (streaming) or grown.  -1 stops the run: out of
 * memory, or io_error set (a failed write, out_max reached). */
int sl_output_room(sl_vm *vm, int64_t n) {
    if (sl_flush_output(vm)) return -1;
    if (vm->out_max && vm->out_total + vm->out_len + n > vm->out_max) {
        vm->io_error = SL_IO_LIMIT;
        return -1;
    }
    int64_t size = vm->out_size;
    while (vm->out_len + n > size) size *= 2;
    if (size != vm->out_size) {
        uint8_t *p = realloc(vm->out, (size_t)size);
        if (!p) return -1;
        vm->out = p; vm->out_size = size;
    }
    sl_set_out_cap(vm);
    return 0;
}

/* The input ran out: read its next chunk (streaming), or mark its end.  The
 * cell stays unchanged at the end; -1 (a failed read) stops the run. */
int sl_refill_input(sl_vm *vm) {
    if (!vm->in_stream) { vm->in_eof = 1; return 0; }
    if (!vm->in_buf && !(vm->in_buf = malloc(SL_IO_CHUNK))) return -1;
    ssize_t r;
    do r = read(vm->in_fd, vm->in_buf, SL_IO_CHUNK);
    while (r < 0 && (errno == EINTR || sl_wait_fd(vm->in_fd, POLLIN)));
    if (r < 0) {
        vm->io_error = SL_IO_READ; vm->io_errno = errno;
        return -1;
    }
    vm->in = vm->in_buf; vm->in_len = r; vm->in_pos = 0;
    vm->in_eof = r == 0;
    return 0;
}

int sl_print_int(sl_vm *vm, int64_t v, int32_t sep) {
    char buf[24]; int n = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do { buf[n++] = (char)('0' + u % 10); u /= 10; } while (u);
    if (v < 0) buf[n++] = '-';
    if (vm->out_len + n + 1 > vm->out_cap && sl_output_room(vm, n + 1)) return -1;
    while (n) vm->out[vm->out_len++] = (uint8_t)buf[--n];
    vm->out[vm->out_len++] = (uint8_t)sep;
    return 0;
}

/* One timed run from a fresh state; the timed region is the interpreter. */
int sl_run(sl_vm *vm) {
    if (sl_reset(vm)) return vm->status = SL_ERR_STACK_OVERFLOW;
    struct sigaction old[SL_NSTREAM_SIGNALS];
    sl_stream_begin(vm, old);
    int64_t n0 = sl_now_ns();
    uint64_t t0 = sl_tsc_begin();
    int status = sl_interpret(vm);
    uint64_t t1 = sl_tsc_end();
    int64_t n1 = sl_now_ns();
    vm->cycles = t1 - t0; vm->ns = n1 - n0;
    return vm->status = sl_stream_end(vm, old, status);
}

/* A JIT build's run stops with SL_JIT_RECORDED when a recording is ready;
 * once the JIT has compiled it (in Python: no callback into Python from
 * here, whose trampolines would need memory both writable and executable),
 * this goes on from where the run stopped, adding to its time. */
int sl_resume(sl_vm *vm) {
    struct sigaction old[SL_NSTREAM_SIGNALS];
    sl_stream_begin(vm, old);
    int64_t n0 = sl_now_ns();
    uint64_t t0 = sl_tsc_begin();
    int status = sl_interpret(vm);
    uint64_t t1 = sl_tsc_end();
    int64_t n1 = sl_now_ns();
    vm->cycles += t1 - t0; vm->ns += n1 - n0;
    return vm->status = sl_stream_end(vm, old, status);
}

/* A new layout `seed` for every region, the code included even when the JIT
 * pinned it: the JIT re-installs its traces for the new code address before
 * the next run (jit/runtime.py relocate; benchmarks with installed traces
 * draw a layout per run this way). */
int sl_relayout(sl_vm *vm, uint32_t seed) {
    int pin = vm->pin_code;
    vm->pin_code = 0;
    int status = sl_place(vm, seed);
    vm->pin_code = pin;
    return status;
}

/* warmup + samples runs back to back in C; per-sample cycles and ns out.
 * SL_JIT_RECORDED stops it (the caller compiles, finishes the run, and
 * starts the bench again). */
int sl_bench(sl_vm *vm, int32_t warmup, int32_t samples, uint64_t *cycles, int64_t *ns) {
    uint32_t seed = vm->layout_seed;
    for (int32_t i = 0; i < warmup + samples; i++) {
        if (seed) {            /* a new layout for every run, placed outside the timing */
            seed = sl_xorshift(seed ^ 0x9e3779b9u);
            if (sl_place(vm, seed)) return SL_ERR_OUT_OF_MEMORY;
        }
        int status = sl_run(vm);
        if (status) return status;
        if (i >= warmup) { cycles[i - warmup] = vm->cycles; ns[i - warmup] = vm->ns; }
    }
    return 0;
}

/* The floors of the transition benchmark: TSC cycles of one call fn(n) of
 * machine code that repeats a primitive n times (bench/floors.py). */
uint64_t sl_time_code(void *fn, uint64_t n) {
    uint64_t t0 = sl_tsc_begin();
    ((void (*)(uint64_t))fn)(n);
    return sl_tsc_end() - t0;
}
