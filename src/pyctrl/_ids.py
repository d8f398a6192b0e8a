"""Cheap random identifiers for requests, reconciles and audit records.

Log lines and requests need identifiers that are unique, not unguessable: `fast_uuid4`
draws them from a non-cryptographic generator. Object UIDs still come from
``uuid.uuid4()``.
"""

from __future__ import annotations

import random
from typing import Final

__all__ = ["fast_uuid4"]

_random_bits = random.Random().getrandbits
_UUID_CLEAR: Final = ~((0xF000 << 64) | (0xC000 << 48))
_UUID_SET: Final = (4 << 76) | (0x8000 << 48)


def fast_uuid4() -> str:
    """A random version-4 UUID string, as ``str(uuid.uuid4())`` but several times cheaper."""
    text = f"{(_random_bits(128) & _UUID_CLEAR) | _UUID_SET:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
