"""shimlab's copy-and-patch JIT: stencil_store.py loads the stencils,
trace.py turns a recording into a trace, optimize.py lowers it to pieces,
compile.py copies and patches them, memory.py maps the code W^X,
install.py places a trace and links its exits, runtime.py ties it all to a
running VM (hooks, recording policy) and report.py says what it did."""
