/* The shimlab VM: its state, the shape macros the instruction bodies in
 * isa.py are written with, and the register contract of the tail-call
 * interpreter.  Every generated interpreter includes this file. */
#ifndef SHIMLAB_VM_H
#define SHIMLAB_VM_H

#include <stdint.h>
#include <stddef.h>
#include "generated/opcodes.h"

/* cdef-begin: abi/vmh.py hands the lines up to cdef-end to cffi */
typedef struct { int32_t op; int32_t arg; } sl_instr;
typedef struct { int32_t entry, nargs, nlocals, max_stack; } sl_func;
typedef struct { const sl_instr *ret_ip; int64_t *fp; } sl_frame;

typedef struct sl_vm {
    /* the program (owned by the caller) */
    const sl_instr *code; int32_t ncode;
    const int64_t *consts; int32_t nconsts;
    const sl_func *funcs; int32_t nfuncs;
    const uint8_t *in; int64_t in_len;
    /* sizes asked for; sl_prepare allocates */
    int64_t stack_size, tape_len; int32_t max_depth;
    /* where in its page each region starts: 0 a fixed staggered layout,
     * otherwise a seed for a random one (a benchmark samples many) */
    uint32_t layout_seed; void *alloc_base[4];
    /* run state, saved when the interpreter leaves */
    int64_t *stack, *stack_end; sl_frame *frames; int32_t depth;
    uint8_t *tape; int64_t in_pos;
    uint8_t *out; int64_t out_len, out_cap;
    /* streaming I/O (all zero: the input is in[0..in_len) alone and the
     * output stays in out, as benchmarks and tests use them).
     * in_stream: when in runs out, sl_refill_input reads the next chunk of
     * in_fd into in_buf (in then points there); in_eof: no more input.
     * out_stream: out[0..out_len) is written to out_fd whenever it fills and
     * whenever sl_run or sl_resume returns (also on SIGINT, SIGTERM, SIGHUP
     * during a run), so memory stays bounded.  out_max (0: none) bounds the
     * bytes a run outputs; out_cap, what the fast path fills to, is kept
     * within it (out_size is the allocation, out_total what was written).
     * A run stopped by I/O returns SL_ERR_OUT_OF_MEMORY with io_error set
     * (SL_IO_*) and io_errno the errno of a failed read or write. */
    int32_t in_fd, in_stream, in_eof, out_fd, out_stream, io_error, io_errno;
    uint8_t *in_buf; int64_t out_size, out_total, out_max;
    const sl_instr *ip; int64_t *sp, *fp; uint8_t *head;
    /* result of the last run */
    int32_t status; int32_t err_pc; int64_t err_value;
    uint64_t *counts;                /* per opcode, builds with SL_COUNT_OPS */
    uint64_t cycles; int64_t ns;     /* TSC cycles and ns of the last sl_run */
    /* the JIT (builds with SL_JIT; see jit_interp.h): per-pc trace entry
     * points and hot counters (loop headers, function entries, return points),
     * and the recorder's buffer (sl_run and
     * sl_resume return SL_JIT_RECORDED when a recording is ready) */
    void **jit_entry; int64_t *jit_counters; const uint8_t *jit_traceable;
    const int32_t *jit_orig;         /* per pc: the opcode an ENTER_JIT replaced */
    void **jit_table;                /* jit-table: the dispatch table, a slot per trace */
    int32_t *rec_buf; int32_t rec_len, rec_cap; const sl_instr *rec_start;
    int32_t pin_code;                /* keep the code where it is (traces point into it) */
} sl_vm;
/* cdef-end */

/* ---- the register contract -------------------------------------------
 * clang's preserve_none passes its first arguments in r12, r13, r14, r15,
 * rdi, rsi (x86-64).  The tail-call handlers take the VM state in that
 * order, so between handlers (and in JIT stencils) the state lives in:
 *     ip -> r12   sp -> r13   fp -> r14   head -> r15   vm -> rdi
 *     dispatch table -> rsi
 * src/shimlab/abi/contract.py mirrors this list; tests/test_contract.py checks
 * both against the disassembly of a compiled handler. */
#define SL_CONTRACT_ARGS(ip, sp, fp, head, vm, table) \
    const sl_instr *ip, int64_t *sp, int64_t *fp, uint8_t *head, sl_vm *vm, const void *table

/* ---- helpers with Python's semantics on int64 -------------------------- */
static inline int64_t sl_floordiv(int64_t a, int64_t b) {
    if (b == -1) return (int64_t)(0 - (uint64_t)a);   /* INT64_MIN // -1 wraps */
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    return q;
}
static inline int64_t sl_mod(int64_t a, int64_t b) {
    if (b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
static inline int64_t sl_lshift(int64_t a, int64_t b) {
    return b >= 64 ? 0 : (int64_t)((uint64_t)a << b);
}
static inline int64_t sl_rshift(int64_t a, int64_t b) {
    return a >> (b >= 63 ? 63 : b);
}

/* why a run stopped for I/O (vm->io_error) */
#define SL_IO_READ 1          /* reading the input failed (io_errno) */
#define SL_IO_WRITE 2         /* writing the output failed (io_errno) */
#define SL_IO_LIMIT 3         /* the output reached out_max */
#define SL_IO_CHUNK 65536     /* bytes per read of the input, per write of the output */

int sl_output_room(sl_vm *vm, int64_t n);
int sl_refill_input(sl_vm *vm);
int sl_print_int(sl_vm *vm, int64_t v, int32_t sep);

/* ---- shape macros ------------------------------------------------------
 * Bodies see: ip (current instruction), sp (next free stack slot), fp
 * (locals of the current frame), head (tape head), vm, oparg.  A variant
 * defines DISPATCH() and SL_LEAVE(status); the rest is shared. */
#define ARG oparg
#define PUSH(v) (*sp++ = (v))
#define POP() (*--sp)
#define TOP() (sp[-1])
#define SET_TOP(v) (sp[-1] = (v))
#define CONST(i) (vm->consts[(i)])
#define LOCAL(i) (fp[(i)])
#define HEAD head

#define SL_SAVE_STATE() \
    (vm->ip = ip, vm->sp = sp, vm->fp = fp, vm->head = head)
#define FAIL_WITH(status_, value_) do { \
    vm->err_pc = (int32_t)(ip - vm->code); vm->err_value = (value_); \
    SL_LEAVE(status_); } while (0)
#define FAIL(status_) FAIL_WITH(status_, 0)
#define HALT() SL_LEAVE(SL_OK)

#define JUMPBY(n) do { ip += (n); DISPATCH(); } while (0)
/* a loop back-edge: JIT builds count it (jit_interp.h) */
/* a function's entry and a call's return point: JIT builds count them too */
#ifndef SL_JIT
#define BACKEDGE(n) JUMPBY(n)
#define JIT_ANCHOR() ((void)0)
#endif

/* sl_interpret left because the recorder has a trace for the JIT to compile */
#define SL_JIT_RECORDED 100

#define MOVE_HEAD(n) do { \
    int64_t pos_ = (int64_t)(head - vm->tape) + (n); \
    if ((uint64_t)pos_ >= (uint64_t)vm->tape_len) FAIL_WITH(SL_ERR_TAPE_BOUNDS, pos_); \
    head += (n); } while (0)
/* the cell at head + off, bounds-checked like a move there (BF --bf-opt 1) */
#define TAPE_AT(p, off) \
    int64_t p##pos = (int64_t)(head - vm->tape) + (off); \
    if ((uint64_t)p##pos >= (uint64_t)vm->tape_len) FAIL_WITH(SL_ERR_TAPE_BOUNDS, p##pos); \
    uint8_t *p = vm->tape + p##pos
/* a full buffer is written out (streaming) or grown; past out_max, or when
 * the write fails, the run stops (driver.c sl_output_room) */
#define OUTPUT(b) do { \
    if (vm->out_len >= vm->out_cap && sl_output_room(vm, 1)) FAIL(SL_ERR_OUT_OF_MEMORY); \
    vm->out[vm->out_len++] = (uint8_t)(b); } while (0)
#define PRINT_INT(v, sep) do { \
    if (sl_print_int(vm, (v), (sep))) FAIL(SL_ERR_OUT_OF_MEMORY); } while (0)
/* the input is read as the program reads it, a chunk at a time; at its end
 * the cell stays unchanged */
#define INPUT_TO(p) do { \
    if (vm->in_pos >= vm->in_len && !vm->in_eof && sl_refill_input(vm)) \
        FAIL(SL_ERR_OUT_OF_MEMORY); \
    if (vm->in_pos < vm->in_len) *(p) = vm->in[vm->in_pos++]; } while (0)

#define CALL_FUNCTION(f) do { \
    const sl_func *fn_ = &vm->funcs[(f)]; \
    int64_t *nfp_ = sp - fn_->nargs; \
    if (vm->depth >= vm->max_depth || \
        nfp_ + fn_->nlocals + fn_->max_stack > vm->stack_end) \
        FAIL_WITH(SL_ERR_STACK_OVERFLOW, vm->depth); \
    for (int32_t i_ = fn_->nargs; i_ < fn_->nlocals; i_++) nfp_[i_] = 0; \
    vm->frames[vm->depth].ret_ip = ip + 1; \
    vm->frames[vm->depth].fp = fp; \
    vm->depth++; \
    fp = nfp_; sp = nfp_ + fn_->nlocals; ip = vm->code + fn_->entry; \
    JIT_ANCHOR(); DISPATCH(); } while (0)
#define RETURN_VALUE() do { \
    int64_t rv_ = POP(); \
    vm->depth--; sp = fp; fp = vm->frames[vm->depth].fp; \
    ip = vm->frames[vm->depth].ret_ip; PUSH(rv_); \
    JIT_ANCHOR(); DISPATCH(); } while (0)

#ifdef SL_COUNT_OPS
#define SL_COUNT(op) (vm->counts[(op)]++)
#else
#define SL_COUNT(op) ((void)0)
#endif

/* the entry point each generated interpreter defines */
int sl_interpret(sl_vm *vm);

#endif
