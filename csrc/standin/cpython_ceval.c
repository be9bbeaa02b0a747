/* A stand-in for CPython's eval loop, for testing `shimlab census` and the
 * "build your CPython variants" path where CPython's source cannot be had.
 * It has CPython's names and shapes, in the three styles CPython builds:
 *   -DSTANDIN_SWITCH     one switch in _PyEval_EvalFrameDefault (--without-computed-gotos)
 *   -DSTANDIN_GOTO       computed goto through opcode_targets (the default build)
 *   -DSTANDIN_TAILCALL   one preserve_none function _TAIL_CALL_<NAME> per instruction,
 *                        musttail-dispatched through INSTRUCTION_TABLE (--with-tail-call-interp)
 * It is a real program: main() runs a loop of bytecode and prints its result. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* a table's default for unused opcodes, then the used ones, as CPython's tables have */
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wunknown-pragmas"
#pragma GCC diagnostic ignored "-Woverride-init"
#pragma clang diagnostic ignored "-Winitializer-overrides"

typedef int64_t PyObject;       /* a value, not an object: enough for dispatch */
typedef struct { uint8_t op, arg; } _Py_CODEUNIT;
typedef struct { const _Py_CODEUNIT *code; PyObject locals[8]; PyObject consts[8]; } _PyInterpreterFrame;

/* every instruction that goes on to the next; RETURN_VALUE leaves */
#define ONWARD(X) \
    X(NOP) X(LOAD_CONST) X(LOAD_FAST) X(STORE_FAST) X(POP_TOP) X(COPY) X(SWAP) \
    X(BINARY_OP_ADD_INT) X(BINARY_OP_SUBTRACT_INT) X(BINARY_OP_MULTIPLY_INT) \
    X(BINARY_OP_AND) X(BINARY_OP_OR) X(BINARY_OP_XOR) X(BINARY_OP_LSHIFT) \
    X(BINARY_OP_RSHIFT) X(BINARY_OP_MODULO) X(UNARY_NEGATIVE) X(UNARY_INVERT) \
    X(COMPARE_OP_LT) X(COMPARE_OP_EQ) X(POP_JUMP_IF_FALSE) X(POP_JUMP_IF_TRUE) \
    X(JUMP_FORWARD) X(JUMP_BACKWARD) X(LOAD_SMALL_INT) X(INCREMENT_FAST) \
    X(BINARY_OP_MAX) X(BINARY_OP_MIN)
#define OPCODES(X) ONWARD(X) X(RETURN_VALUE)
#define ENUM(name) name,
enum { OPCODES(ENUM) NUM_OPCODES };

/* Each instruction's body: `stack` and `sp` are the value stack, `next` the
 * next code unit, `f` the frame; GO_TO(target) changes `next`. */
#define BODY_NOP
#define BODY_LOAD_CONST         *sp++ = f->consts[oparg];
#define BODY_LOAD_FAST          *sp++ = f->locals[oparg];
#define BODY_STORE_FAST         f->locals[oparg] = *--sp;
#define BODY_POP_TOP            --sp;
#define BODY_COPY               sp[0] = sp[-1 - oparg]; sp++;
#define BODY_SWAP               { PyObject t = sp[-1]; sp[-1] = sp[-1 - oparg]; sp[-1 - oparg] = t; }
#define BINOP(expr)             { PyObject b = *--sp, a = sp[-1]; sp[-1] = (expr); }
#define BODY_BINARY_OP_ADD_INT       BINOP(a + b)
#define BODY_BINARY_OP_SUBTRACT_INT  BINOP(a - b)
#define BODY_BINARY_OP_MULTIPLY_INT  BINOP(a * b)
#define BODY_BINARY_OP_AND           BINOP(a & b)
#define BODY_BINARY_OP_OR            BINOP(a | b)
#define BODY_BINARY_OP_XOR           BINOP(a ^ b)
#define BODY_BINARY_OP_LSHIFT        BINOP(a << (b & 63))
#define BODY_BINARY_OP_RSHIFT        BINOP(a >> (b & 63))
#define BODY_BINARY_OP_MODULO        BINOP(b ? a % b : 0)
#define BODY_UNARY_NEGATIVE     sp[-1] = -sp[-1];
#define BODY_UNARY_INVERT       sp[-1] = ~sp[-1];
#define BODY_COMPARE_OP_LT      BINOP(a < b)
#define BODY_COMPARE_OP_EQ      BINOP(a == b)
#define BODY_POP_JUMP_IF_FALSE  if (!*--sp) next = f->code + oparg;
#define BODY_POP_JUMP_IF_TRUE   if (*--sp) next = f->code + oparg;
#define BODY_JUMP_FORWARD       next += oparg;
#define BODY_JUMP_BACKWARD      next -= oparg;
#define BODY_LOAD_SMALL_INT     *sp++ = oparg;
#define BODY_INCREMENT_FAST     f->locals[oparg] += 1;
#define BODY_BINARY_OP_MAX      BINOP(a > b ? a : b)
#define BODY_BINARY_OP_MIN      BINOP(a < b ? a : b)

#if defined(STANDIN_TAILCALL)

#define TAIL_CALL_PARAMS _PyInterpreterFrame *f, PyObject *sp, const _Py_CODEUNIT *next
#define TAIL_CALL_ARGS f, sp, next
#define PRESERVE_NONE __attribute__((preserve_none, noinline))
typedef __attribute__((preserve_none)) PyObject (*py_tail_call_funcptr)(TAIL_CALL_PARAMS);

#define DECLARE(name) PRESERVE_NONE static PyObject _TAIL_CALL_##name(TAIL_CALL_PARAMS);
OPCODES(DECLARE)
DECLARE(UNKNOWN_OPCODE)
/* as CPython's: initialized data, every unused opcode to _TAIL_CALL_UNKNOWN_OPCODE */
#define ENTRY(name) [name] = _TAIL_CALL_##name,
static py_tail_call_funcptr const INSTRUCTION_TABLE[256] = {
    [0 ... 255] = _TAIL_CALL_UNKNOWN_OPCODE, OPCODES(ENTRY)
};

#define HANDLER(name) \
    PRESERVE_NONE static PyObject _TAIL_CALL_##name(TAIL_CALL_PARAMS) { \
        int oparg = next->arg; (void)oparg; next++; \
        BODY_##name \
        __attribute__((musttail)) return INSTRUCTION_TABLE[next->op](TAIL_CALL_ARGS); \
    }
ONWARD(HANDLER)

PRESERVE_NONE static PyObject _TAIL_CALL_RETURN_VALUE(TAIL_CALL_PARAMS) {
    (void)f; (void)next; return sp[-1];
}

PRESERVE_NONE static PyObject _TAIL_CALL_UNKNOWN_OPCODE(TAIL_CALL_PARAMS) {
    (void)f; (void)sp; (void)next; abort();
}

PyObject _PyEval_EvalFrameDefault(_PyInterpreterFrame *f) {
    PyObject stack[64];
    return INSTRUCTION_TABLE[f->code->op](f, stack, f->code);
}

#else

#define DECODE  op = next->op; oparg = next->arg; next++;

PyObject _PyEval_EvalFrameDefault(_PyInterpreterFrame *f) {
    PyObject stack[64], *sp = stack;
    const _Py_CODEUNIT *next = f->code;
    int op, oparg;
#if defined(STANDIN_GOTO)
#define TARGET_ADDR(name) [name] = &&TARGET_##name,
    /* as CPython's: every unused opcode to _unknown_opcode */
    static void *opcode_targets[256] = { [0 ... 255] = &&_unknown_opcode,
                                         OPCODES(TARGET_ADDR) };
#define DISPATCH() do { DECODE; goto *opcode_targets[op]; } while (0)
#define TARGET(name) TARGET_##name: { BODY_##name } DISPATCH();
    DISPATCH();
    ONWARD(TARGET)
TARGET_RETURN_VALUE:
    return sp[-1];
_unknown_opcode:
    abort();
#elif defined(STANDIN_SWITCH)
#define BODY_RETURN_VALUE return sp[-1];
#define CASE(name) case name: { BODY_##name } break;
    for (;;) {
        DECODE
        switch (op) {
        OPCODES(CASE)
        default:
            abort();
        }
    }
#else
#error "define STANDIN_SWITCH, STANDIN_GOTO or STANDIN_TAILCALL"
#endif
}
#endif

/* sum of (i * 3) ^ (i >> 2) for i < n: a loop of a dozen instructions */
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    static const _Py_CODEUNIT code[] = {
        {LOAD_SMALL_INT, 0}, {STORE_FAST, 0},         /* i = 0 */
        {LOAD_SMALL_INT, 0}, {STORE_FAST, 1},         /* s = 0 */
        {LOAD_FAST, 0}, {LOAD_CONST, 0}, {COMPARE_OP_LT, 0},   /* 4: while i < n */
        {POP_JUMP_IF_FALSE, 22},
        {LOAD_FAST, 1}, {LOAD_FAST, 0}, {LOAD_SMALL_INT, 3}, {BINARY_OP_MULTIPLY_INT, 0},
        {LOAD_FAST, 0}, {LOAD_SMALL_INT, 2}, {BINARY_OP_RSHIFT, 0}, {BINARY_OP_XOR, 0},
        {BINARY_OP_ADD_INT, 0}, {STORE_FAST, 1},
        {INCREMENT_FAST, 0}, {NOP, 0}, {JUMP_BACKWARD, 17}, {NOP, 0},
        {LOAD_FAST, 1}, {RETURN_VALUE, 0},            /* 22: return s */
    };
    _PyInterpreterFrame f = { code, {0}, {n} };
    printf("%lld\n", (long long)_PyEval_EvalFrameDefault(&f));
    return 0;
}
