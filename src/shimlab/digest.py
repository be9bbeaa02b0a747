"""SHA-1, SHA-256 and BLAKE2b, for the keys shimlab files its builds and caches under.

Python's own implementations when it has them (CPython 3.11's _sha1 and
_sha256, _blake2): importing hashlib loads OpenSSL first, which was ~3.5 ms
of every `shimlab run`'s start (issue 24), to hash a few kilobytes.  The
digests are the same, so keys made either way agree.  Python's SHA-1 and
SHA-256 are 5-7x slower than OpenSSL's (~200 MB/s); BLAKE2b is ~3x faster
than they are: for a key over many kilobytes, take BLAKE2b."""
from __future__ import annotations

try:
    from _blake2 import blake2b
    from _sha1 import sha1
    from _sha256 import sha256
except ImportError:             # another Python (3.12 has _sha2): OpenSSL's
    from hashlib import blake2b, sha1, sha256

__all__ = ["blake2b", "sha1", "sha256", "program_digest"]


def program_digest(code, consts) -> str:
    """A program's bytecode and constants, as the JIT's caches key it (its
    trace plans, its last run's length): the SHA-1 of their text."""
    return sha1(repr((list(code), list(consts))).encode()).hexdigest()
