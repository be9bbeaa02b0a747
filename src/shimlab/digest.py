"""SHA-1 and SHA-256, for the keys shimlab files its builds and caches under.

Python's own implementations when it has them (CPython 3.11's _sha1 and
_sha256): importing hashlib loads OpenSSL first, which was ~3.5 ms of every
`shimlab run`'s start (issue 24), to hash a few kilobytes.  The digests are
the same, so keys made either way agree."""
from __future__ import annotations

try:
    from _sha1 import sha1
    from _sha256 import sha256
except ImportError:             # another Python (3.12 has _sha2): OpenSSL's
    from hashlib import sha1, sha256

__all__ = ["sha1", "sha256"]
