"""tests/realserver.py's exit codes: CI says NOT RUN only when a source cannot be fetched.

The real CRD-only server's build fetches Debian's package lists; here the mirror is an
address where nothing listens, so the fetch fails as it does when the network is down.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

from tests import realserver

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def _unreachable_mirror(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setattr(realserver, "SUITE", f"http://127.0.0.1:{port}/debian sid main")
    # Nothing will ever listen there: retrying (with apt's pauses) only slows the test.
    monkeypatch.setattr(realserver, "FETCH_RETRIES", 0)


def test_a_mirror_that_cannot_be_reached_exits_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No build and no mirror: exit 4 (NOT RUN in CI), nothing printed as a directory."""
    _unreachable_mirror(monkeypatch)
    assert realserver.main(["--cache", str(tmp_path)]) == realserver.UNAVAILABLE
    out, err = capsys.readouterr()
    assert out == ""
    assert "could not be fetched" in err


def test_a_mirror_that_cannot_be_reached_uses_the_last_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a build cached, an unreachable mirror only means its versions are not checked."""
    _unreachable_mirror(monkeypatch)
    built = tmp_path / "some-build" / "bin"
    built.mkdir(parents=True)
    for name in realserver.BINARIES:
        (built / name).write_text("")
    (tmp_path / "current").symlink_to(built, target_is_directory=True)
    assert realserver.main(["--cache", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(built.resolve())


def test_cached_without_a_build_exits_not_cached(tmp_path: Path) -> None:
    """``--cached`` with nothing built: exit 3, which the nox session turns into a failure."""
    assert realserver.main(["--cache", str(tmp_path), "--cached"]) == realserver.NOT_CACHED
