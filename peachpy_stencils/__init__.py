"""PeachPy stencils for shimlab's copy-and-patch JIT.

One small module per instruction family (peachpy_stencils.build.FAMILIES) registers
its stencils with peachpy_stencils.asm.stencil; peachpy_stencils.build assembles them all,
finds their holes and writes the artifact src/shimlab/jit/stencil_store.py loads.
Any other module here, or in a folder $SHIMLAB_STENCILS names, is a
prototype: built on its own, as a module of this package (so `from .asm
import stencil` works wherever its file is).
"""
