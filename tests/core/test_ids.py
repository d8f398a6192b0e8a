"""pyctrl._ids: cheap request and reconcile identifiers."""

from __future__ import annotations

import uuid

from pyctrl._ids import fast_uuid4


def test_fast_uuid4_makes_version_4_uuids() -> None:
    """Request IDs are distinct RFC 4122 version-4 UUIDs in their canonical text form."""
    ids = {fast_uuid4() for _ in range(1000)}
    assert len(ids) == 1000
    for text in ids:
        parsed = uuid.UUID(text)
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
        assert str(parsed) == text
