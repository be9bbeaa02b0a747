/* What a JIT build (-DSL_JIT=SL_JIT_SHIM, SL_JIT_SHIM_ARGS or SL_JIT_DIRECT) adds to the
 * tail-call interpreter before its handlers: hot counters (back-edges, calls, returns), the
 * recorder's dispatch table, and the ENTER_JIT opcode.  The crossings
 * themselves are in crossing.h. */
#ifndef SHIMLAB_JIT_INTERP_H
#define SHIMLAB_JIT_INTERP_H

#define SL_JIT_SHIM 1
#define SL_JIT_DIRECT 2
#define SL_JIT_SHIM_ARGS 3
#define SL_OP_ENTER_JIT SL_NUM_OPCODES       /* not a program opcode: only the JIT writes it */
#define SL_JIT_OPS 1
/* jit-table mode: opcodes past ENTER_JIT name one trace each, and the VM's
 * own dispatch table (vm->jit_table) holds the trace's address there, so
 * the interpreter dispatches straight into the trace. */
#define SL_JIT_TABLE_SLOTS 4096
#define SL_NUM_DISPATCH (SL_NUM_OPCODES + 1 + SL_JIT_TABLE_SLOTS)

#ifdef SL_COUNT_OPS
#define SL_UNCOUNT(op) (vm->counts[(op)]--)
#else
#define SL_UNCOUNT(op) ((void)0)
#endif

/* SL_CACHE_PARAMS: the cached values of a --cache K interpreter (empty at K = 0) */
SL_PRESERVE_NONE int sl_op_ENTER_JIT(SL_CONTRACT_ARGS(ip, sp, fp, head, vm, table) SL_CACHE_PARAMS);
static SL_PRESERVE_NONE int sl_rec(SL_CONTRACT_ARGS(ip, sp, fp, head, vm, table) SL_CACHE_PARAMS);

/* Recording swaps the dispatch table: every instruction then passes through
 * sl_rec, which logs its pc and runs the real handler, at no cost to the
 * interpreter when nothing is being recorded. */
static sl_handler *const sl_rec_table[SL_NUM_DISPATCH] = {
    [0 ... SL_NUM_DISPATCH - 1] = sl_rec,
};

/* Arriving at ip by a back-edge, a call (ip: the function's entry) or a
 * return (ip: the call's return point) counts down ip's counter; at zero,
 * recording starts there (unless a recording is already running).  The JIT
 * sets the counter of a pc that cannot start a trace to a countdown that
 * never runs out (jit/policy.py). */
#define JIT_ANCHOR() do { \
    if (--vm->jit_counters[ip - vm->code] <= 0 && table != (const void *)sl_rec_table) { \
        vm->rec_start = ip; vm->rec_len = 0; table = sl_rec_table; \
    } } while (0)
#define BACKEDGE(n) do { \
    ip += (n); \
    JIT_ANCHOR(); \
    DISPATCH(); } while (0)

#endif
