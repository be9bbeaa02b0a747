"""`shimlab doctor`: what this machine's toolchain can do."""
from __future__ import annotations

from .. import doctor


def add_parser(sub, help_text: str) -> None:
    sub.add_parser("doctor", help=help_text).set_defaults(fn=lambda args: doctor.run())
