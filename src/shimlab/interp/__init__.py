"""The interpreters: C generated from isa.py, the PeachPy asm interpreter,
their builds (plain and profile-guided), loading one into the process, and
the baseline check of how each dispatches."""
