"""Errors shimlab reports to the user as one clear line (never a traceback)."""


class ShimlabError(Exception):
    """An error the CLI reports as one line, exit status 1."""


class FrontendError(ShimlabError):
    """A source program that cannot be compiled to bytecode."""


class VerifyError(ShimlabError):
    """Bytecode that fails verification."""


class ToolchainError(ShimlabError):
    """A compiler or tool that is missing or lacks a feature."""


class BuildError(ShimlabError):
    """A C build that failed."""


class RunError(ShimlabError):
    """A program that failed at run time, or an interpreter that crashed."""


class JitError(ShimlabError):
    """The JIT refused an option, or failed to make or place a trace."""
