# rmw.py, in the folder $SHIMLAB_STENCILS names
from peachpy.x86_64 import ADD, MOV, MOVZX, al, byte, eax
from peachpy_stencils.asm import stencil

@stencil("CELL_ADD:rmw", "CELL_ADD as load, add, store")
def cell_add_rmw(a, r):      # a: the assembler; r: the contract registers (r.ip, r.sp, r.fp, r.head, r.vm, r.table)
    a(MOVZX(eax, byte[r.head]), ADD(eax, a.hole("oparg")), MOV(byte[r.head], al))
