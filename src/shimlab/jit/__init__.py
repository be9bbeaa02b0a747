"""shimlab's copy-and-patch JIT: stencils.py loads the PeachPy stencils,
trace.py turns a recording into a trace, compile.py copies and patches,
memory.py maps the code W^X, runtime.py ties it to a running VM."""
