"""pyctrl._ids: cheap request and reconcile identifiers, and object UIDs."""

from __future__ import annotations

import os
import uuid

from pyctrl._ids import fast_uuid4, secure_uuid4


def test_fast_uuid4_makes_version_4_uuids() -> None:
    """Request IDs are distinct RFC 4122 version-4 UUIDs in their canonical text form."""
    ids = {fast_uuid4() for _ in range(1000)}
    assert len(ids) == 1000
    for text in ids:
        parsed = uuid.UUID(text)
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
        assert str(parsed) == text


def test_secure_uuid4_makes_distinct_version_4_uuids_across_batches() -> None:
    """Object UIDs: distinct version-4 UUIDs in canonical form, over many pooled reads."""
    ids = [secure_uuid4() for _ in range(2000)]
    assert len(set(ids)) == 2000
    for text in ids:
        parsed = uuid.UUID(text)
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
        assert str(parsed) == text


def test_a_forked_child_does_not_reuse_the_parents_pooled_uids() -> None:
    """A child process reads its own random bytes: its UIDs are not the parent's next ones."""
    secure_uuid4()  # a pool of unused UIDs now exists in this process
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(write, secure_uuid4().encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        child = pipe.read().decode()
    os.waitpid(pid, 0)
    assert uuid.UUID(child).version == 4
    assert child != secure_uuid4()
