/* The conversion shim of the jit-shim mode: an ordinary C function (so the
 * ENTER_JIT handler reaches it with a plain call) that calls a trace with
 * the preserve_none contract.  Because the trace preserves nothing, the
 * compiler saves and restores rbx and r12-r15 around that call here: that
 * save/restore, the call and the return are the shim's cost.  It lives in
 * its own file so it is never inlined into the handler. */
#include "vm.h"

typedef __attribute__((preserve_none)) const sl_instr *sl_trace_fn(
    SL_CONTRACT_ARGS(ip, sp, fp, head, vm, table));

__attribute__((visibility("hidden")))
const sl_instr *sl_jit_shim(sl_trace_fn *trace, SL_CONTRACT_ARGS(ip, sp, fp, head, vm, table)) {
    return trace(ip, sp, fp, head, vm, table);
}

/* For `shimlab stencils test`: run one trace from the state saved in vm, as
 * the jit-shim ENTER_JIT handler would, and save where it left. */
const sl_instr *sl_jit_run_trace(sl_vm *vm, void *trace) {
    vm->ip = sl_jit_shim((sl_trace_fn *)trace, vm->ip, vm->sp, vm->fp, vm->head, vm, NULL);
    return vm->ip;
}
