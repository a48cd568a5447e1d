"""BLAKE2b for the digests every command takes (checked profiles, the registry's version).

``hashlib`` starts OpenSSL when imported (2-3 ms, a tenth of a bare interpreter's start); CPython's
own ``_blake2`` module is the same ``blake2b`` hashlib hands out, without that.
"""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # an interpreter built without its own BLAKE2
    from hashlib import blake2b

__all__ = ["blake2b"]
