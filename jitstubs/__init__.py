"""PeachPy stencils for shimlab's copy-and-patch JIT.

One small module per instruction family registers its stencils with
jitstubs.asm.stencil; jitstubs.build assembles them all, finds their holes
and writes the artifact src/shimlab/jit/stencils.py loads.
"""
