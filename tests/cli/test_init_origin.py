"""``pyctrl init`` prints, and its README says, install steps that find this pyctrl again."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pyctrl.cli._init import Project, files, next_steps, project
from pyctrl.cli._origin import Origin, from_direct_url, pyctrl_origin

if TYPE_CHECKING:
    from .conftest import Workspace

REPO = Path(__file__).resolve().parents[2]


def _values(directory: Path) -> Project:
    return project(
        "guestbook", domain="example.com", group="webapp", version="v1alpha1", kind=None,
        package=None, directory=directory,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("direct_url", "origin", "command"),
    [
        (None, Origin("index"), "pip install -e '.[dev]'"),
        (
            {"url": "file:///src/my%20pyctrl", "dir_info": {"editable": True}},
            Origin("checkout", "/src/my pyctrl"),
            "pip install -e '.[dev]' -e '/src/my pyctrl'",
        ),
        (
            {"url": "file:///src/pyctrl", "dir_info": {}},
            Origin("directory", "/src/pyctrl"),
            "pip install -e '.[dev]' /src/pyctrl",
        ),
        (
            {
                "url": "https://example.com/pyctrl_runtime-0.1.0-py3-none-any.whl",
                "archive_info": {"hashes": {}},
            },
            Origin("url", "https://example.com/pyctrl_runtime-0.1.0-py3-none-any.whl"),
            "pip install -e '.[dev]' "
            "'pyctrl-runtime @ https://example.com/pyctrl_runtime-0.1.0-py3-none-any.whl'",
        ),
        (
            {
                "url": "https://github.com/pyctrl/pyctrl",
                "vcs_info": {"vcs": "git", "commit_id": "abc123"},
            },
            Origin("url", "git+https://github.com/pyctrl/pyctrl@abc123"),
            "pip install -e '.[dev]' 'pyctrl-runtime @ git+https://github.com/pyctrl/pyctrl@abc123'",
        ),
        (
            {"url": "file:///gone/pyctrl_runtime-0.1.0-py3-none-any.whl", "archive_info": {}},
            Origin("unknown"),
            "pip install -e '.[dev]'",
        ),
    ],
    ids=["index", "editable", "directory", "archive-url", "vcs", "deleted-wheel"],
)
def test_each_origin_gives_its_install_command(
    direct_url: dict[str, object] | None, origin: Origin, command: str
) -> None:
    """PEP 610's record of how pyctrl-runtime was installed decides what pip is told."""
    assert from_direct_url(direct_url) == origin
    assert origin.pip_install() == command


def test_a_wheel_file_that_exists_is_named(tmp_path: Path) -> None:
    """A wheel pip installed from a file that is still there is installed from it again."""
    wheel = tmp_path / "pyctrl_runtime-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    origin = from_direct_url({"url": wheel.as_uri(), "archive_info": {}})
    assert origin == Origin("wheel", str(wheel))
    assert origin.pip_install() == f"pip install -e '.[dev]' {wheel}"


def test_this_pyctrl_comes_from_the_checkout() -> None:
    """The tests run pyctrl from this checkout's src/ (editable or on PYTHONPATH)."""
    assert pyctrl_origin() == Origin("checkout", str(REPO))


@pytest.mark.parametrize(
    "origin",
    [Origin("checkout", "/src/pyctrl"), Origin("wheel", "/dist/x.whl"), Origin("index"),
     Origin("unknown")],
    ids=lambda origin: origin.kind,
)  # fmt: skip
def test_the_readme_says_what_init_prints(tmp_path: Path, origin: Origin) -> None:
    """The generated README's install line is the one init prints, note aside."""
    values = _values(tmp_path / "guestbook")
    readme = files(values, origin)["README.md"]
    steps = next_steps(tmp_path / "guestbook", values, origin)
    install = steps[2].split("  # ")[0]
    assert install == origin.pip_install()
    assert f"\n{install}\n" in readme
    assert origin.note() in " ".join(readme.split())


def test_init_prints_steps_that_name_this_checkout(workspace: Workspace) -> None:
    """`pyctrl init`'s Next: lines are cd, a venv, the install from here, the checks."""
    result = workspace.invoke("init", "my project", "--name", "guestbook")
    assert result.exit_code == 0, result.output
    printed = result.output.split("Next:\n", 1)[1].splitlines()
    assert [line.strip() for line in printed] == [
        "cd 'my project'",
        "python3 -m venv .venv && . .venv/bin/activate",
        f"pip install -e '.[dev]' -e {shlex.quote(str(REPO))}"
        f"  # pyctrl-runtime from the checkout pyctrl init ran from ({REPO})",
        "pytest && mypy guestbook tests",
    ]
    readme = (workspace.root / "my project" / "README.md").read_text()
    assert f"\npip install -e '.[dev]' -e {shlex.quote(str(REPO))}\n" in readme


def test_docs_cli_shows_what_init_prints() -> None:
    """docs/cli.md's example output of `pyctrl init guestbook` is init's, line for line."""
    text = (REPO / "docs" / "cli.md").read_text().split("## `pyctrl init`", 1)[1]
    shown = text.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    values = _values(Path("guestbook"))
    origin = Origin("directory", "/home/you/pyctrl")
    assert shown[1:] == ["Next:"] + [
        f"  {s}" for s in next_steps(Path("guestbook"), values, origin)
    ]
