"""The binary interface between Python, the C interpreters and the stencils.

vmh: the VM's C declarations and constants, read from csrc/vm.h (never
copied by hand); contract: which register holds which piece of VM state.
"""
