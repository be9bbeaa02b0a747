/* The crossings from the interpreter into JIT code: the ENTER_JIT handler of
 * each JIT mode, and the recorder.  (The way back is the exit stubs in
 * peachpy_stencils/exits.py.)  Included at the end of the tail-call interpreter in
 * JIT builds, so it sees sl_table and the dispatch macros.
 *
 *   SL_JIT_SHIM    an ordinary C call to sl_jit_shim (shim.c), which saves
 *                  the callee-saved registers and calls the trace; the trace
 *                  returns the resume ip, the state comes back through vm.
 *   SL_JIT_SHIM_ARGS  the same with the K cached values passed through the
 *                  shim's C signature (past the sixth argument that is the C
 *                  stack) and on into the trace in their registers; the way
 *                  back is one C return value, so they come back through vm.
 *   SL_JIT_DIRECT  a tail call into the trace with the contract registers
 *                  as they are; the trace leaves by jumping to a handler.
 *
 * With K cached values (--cache K) the direct crossings carry them as they
 * are: the trace is entered with them in the registers the handlers hold them
 * in, keeps them there until it needs the memory stack or their registers
 * (jit/fuse.py), and leaves either with them still there (the exit stubs'
 * :k<K>:keep variants) or spilled (the :k<K> variants reload them).  The
 * jit-shim's C call does not carry them: its ENTER_JIT spills them first
 * (SL_CACHE_SPILL), enters the trace spilled, and reloads them after the shim
 * returns.  jit-shim-args passes them as the shim's C arguments instead. */
typedef SL_PRESERVE_NONE const sl_instr *sl_trace_fn(SL_CONTRACT_ARGS(ip, sp, fp, head, vm, table));

/* After a shim returned the resume ip: the state back from vm, the cached
 * values from the memory stack, and on to the resume instruction's handler. */
#define SL_SHIM_RETURNED() do { \
    sp = vm->sp; fp = vm->fp; head = vm->head;  /* (fp: a trace may call or return) */ \
    SL_CACHE_RELOAD(); \
    int32_t op = ip->op; \
    if (vm->rec_len < 0) { \
        /* a hot side exit asked to record a trace from where it resumes: into \
         * the recorder as any dispatch goes, counting ip->op (sl_rec maps an \
         * ENTER_JIT back to its instruction and moves the count with it) */ \
        vm->rec_len = 0; table = (const void *)sl_rec_table; \
    } else if (op >= SL_OP_ENTER_JIT) { \
        /* an exit that resumes at an instruction the JIT replaced (a deopt at \
         * a loop header) must run that instruction, not enter the trace again */ \
        op = vm->jit_orig[ip - vm->code]; \
    } \
    SL_COUNT(op); \
    SL_MUSTTAIL return ((sl_handler *const *)table)[op](ip, sp, fp, head, vm, table SL_CACHE_ARGS); \
} while (0)

#if SL_JIT == SL_JIT_SHIM
__attribute__((visibility("hidden")))  /* a direct call, not through the PLT */
const sl_instr *sl_jit_shim(sl_trace_fn *trace, SL_CONTRACT_ARGS(ip, sp, fp, head, vm, table));

SL_PRESERVE_NONE int sl_op_ENTER_JIT(SL_CONTRACT_ARGS(ip, sp, fp, head, vm, table) SL_CACHE_PARAMS) {
    sl_trace_fn *trace = (sl_trace_fn *)vm->jit_entry[ip - vm->code];
    SL_CACHE_SPILL();
    ip = sl_jit_shim(trace, ip, sp, fp, head, vm, table);
    SL_SHIM_RETURNED();
}
#elif SL_JIT == SL_JIT_SHIM_ARGS
typedef SL_PRESERVE_NONE const sl_instr *sl_trace_args_fn(
    SL_CONTRACT_ARGS(ip, sp, fp, head, vm, table) SL_CACHE_PARAMS);

/* Here rather than in shim.c because its signature is K's (SL_CACHE_PARAMS).
 * External linkage and noinline keep it an ordinary C call with the C
 * convention: the compiler may neither inline it nor change how it is called. */
__attribute__((visibility("hidden"), noinline))
const sl_instr *sl_jit_shim_args(sl_trace_args_fn *trace,
                                 SL_CONTRACT_ARGS(ip, sp, fp, head, vm, table) SL_CACHE_PARAMS) {
    return trace(ip, sp, fp, head, vm, table SL_CACHE_ARGS);
}

SL_PRESERVE_NONE int sl_op_ENTER_JIT(SL_CONTRACT_ARGS(ip, sp, fp, head, vm, table) SL_CACHE_PARAMS) {
    sl_trace_args_fn *trace = (sl_trace_args_fn *)vm->jit_entry[ip - vm->code];
    ip = sl_jit_shim_args(trace, ip, sp, fp, head, vm, table SL_CACHE_ARGS);
    SL_SHIM_RETURNED();      /* every exit left them on the stack (exit:shim:kK:keep spills) */
}
#elif SL_JIT == SL_JIT_DIRECT
SL_PRESERVE_NONE int sl_op_ENTER_JIT(SL_CONTRACT_ARGS(ip, sp, fp, head, vm, table) SL_CACHE_PARAMS) {
    sl_handler *trace = (sl_handler *)vm->jit_entry[ip - vm->code];
    SL_MUSTTAIL return trace(ip, sp, fp, head, vm, table SL_CACHE_ARGS);
}

/* jit-direct-sites: copies of ENTER_JIT, each its own function and so its own
 * indirect jump into a trace.  A trace's opcode (as in jit-table) dispatches
 * to one copy, so the branch predictor sees one entry site per trace instead
 * of one site with a target per trace.  The asm barrier with the copy's
 * number keeps the compiler from folding identical copies into one. */
#define SL_ENTER_COPY(k) \
    static SL_PRESERVE_NONE int sl_op_ENTER_JIT_##k(SL_CONTRACT_ARGS(ip, sp, fp, head, vm, table) \
                                                     SL_CACHE_PARAMS) { \
        __asm__ volatile("# ENTER_JIT copy " #k); \
        sl_handler *trace = (sl_handler *)vm->jit_entry[ip - vm->code]; \
        SL_MUSTTAIL return trace(ip, sp, fp, head, vm, table SL_CACHE_ARGS); \
    }
#define SL_ENTER_COPIES8(k) SL_ENTER_COPY(k##0) SL_ENTER_COPY(k##1) SL_ENTER_COPY(k##2) \
    SL_ENTER_COPY(k##3) SL_ENTER_COPY(k##4) SL_ENTER_COPY(k##5) SL_ENTER_COPY(k##6) \
    SL_ENTER_COPY(k##7)
SL_ENTER_COPIES8(1) SL_ENTER_COPIES8(2) SL_ENTER_COPIES8(3) SL_ENTER_COPIES8(4)
SL_ENTER_COPIES8(5) SL_ENTER_COPIES8(6) SL_ENTER_COPIES8(7) SL_ENTER_COPIES8(8)
#define SL_ENTER_NAMES8(k) sl_op_ENTER_JIT_##k##0, sl_op_ENTER_JIT_##k##1, sl_op_ENTER_JIT_##k##2, \
    sl_op_ENTER_JIT_##k##3, sl_op_ENTER_JIT_##k##4, sl_op_ENTER_JIT_##k##5, \
    sl_op_ENTER_JIT_##k##6, sl_op_ENTER_JIT_##k##7
#define SL_JIT_ENTER_COPIES 64
const void *const sl_jit_enter_copies[SL_JIT_ENTER_COPIES] = {
    SL_ENTER_NAMES8(1), SL_ENTER_NAMES8(2), SL_ENTER_NAMES8(3), SL_ENTER_NAMES8(4),
    SL_ENTER_NAMES8(5), SL_ENTER_NAMES8(6), SL_ENTER_NAMES8(7), SL_ENTER_NAMES8(8),
};
#else
#error "SL_JIT must be SL_JIT_SHIM, SL_JIT_SHIM_ARGS or SL_JIT_DIRECT"
#endif

/* Logs each instruction's pc and runs it; stops (leaving sl_interpret with
 * SL_JIT_RECORDED, the instruction at ip not yet run) when the path is back
 * at its start, the buffer is full, or the instruction has no stencil.  An
 * inner loop that has a trace of its own is recorded through (its original
 * instruction runs), so an outer loop's trace can hold its inner loops. */
static SL_PRESERVE_NONE int sl_rec(SL_CONTRACT_ARGS(ip, sp, fp, head, vm, table) SL_CACHE_PARAMS) {
    int32_t op = ip->op;
    if (op >= SL_OP_ENTER_JIT) op = vm->jit_orig[ip - vm->code];
    if ((ip == vm->rec_start && vm->rec_len > 0) || vm->rec_len >= vm->rec_cap ||
        !vm->jit_traceable[op]) {
        SL_UNCOUNT(ip->op);              /* counted by the dispatch that got here; runs later */
        SL_CACHE_SPILL();                /* sl_interpret reloads them when the run resumes */
        SL_LEAVE(SL_JIT_RECORDED);
    }
    vm->rec_buf[vm->rec_len++] = (int32_t)(ip - vm->code);
    if (ip->op >= SL_OP_ENTER_JIT) {     /* the count goes to the instruction, as in a trace */
        SL_UNCOUNT(ip->op);
        SL_COUNT(op);
    }
    SL_MUSTTAIL return sl_table[op](ip, sp, fp, head, vm, table SL_CACHE_ARGS);
}

/* for the JIT: where ENTER_JIT's handler is (the jit-table's copy of the table needs it) */
const void *sl_jit_enter_handler = (const void *)sl_op_ENTER_JIT;
/* for the JIT: the recorder's table, which a hot side exit dispatches through
 * to record a trace from where it resumes (peachpy_stencils/opt.py, opt:hot-exit) */
const void *sl_jit_rec_table = (const void *)sl_rec_table;
