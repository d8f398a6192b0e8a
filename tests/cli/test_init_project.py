"""A project scaffolded by ``pyctrl init`` works as generated: its tests and mypy --strict pass."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
import yaml
from click.testing import CliRunner

from pyctrl.cli import app

from .conftest import read_tree, subprocess_env

if TYPE_CHECKING:
    from pathlib import Path

PACKAGE = "guest_book"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project scaffolded with defaults from its directory name (guest-book)."""
    root = tmp_path_factory.mktemp("scaffold") / "guest-book"
    result = CliRunner().invoke(app, ["init", str(root), "--group", "webapp"])
    assert result.exit_code == 0, result.output
    return root


def _run(project: Path, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *command],
        cwd=project,
        env=subprocess_env(project),
        capture_output=True,
        text=True,
        timeout=55,
        check=False,
    )


def test_init_writes_the_project_layout(project: Path) -> None:
    """The scaffold has the package, tests, manifests, Dockerfile, README and ignores."""
    assert sorted(read_tree(project)) == [
        ".dockerignore",
        ".gitignore",
        "Dockerfile",
        "README.md",
        "config/crd/guestbooks.webapp.example.com.yaml",
        "config/manager/manager.yaml",
        "config/manager/metrics_service.yaml",
        "config/prometheus/monitor.yaml",
        "config/rbac/leader_election_role.yaml",
        "config/rbac/metrics_auth_role.yaml",
        "config/rbac/metrics_reader_role.yaml",
        "config/rbac/role.yaml",
        "config/rbac/role_binding.yaml",
        "config/rbac/service_account.yaml",
        "config/samples/webapp_v1alpha1_guestbook.yaml",
        f"{PACKAGE}/__init__.py",
        f"{PACKAGE}/__main__.py",
        f"{PACKAGE}/api.py",
        f"{PACKAGE}/controller.py",
        f"{PACKAGE}/py.typed",
        "pyproject.toml",
        "tests/test_controller.py",
        "tests/test_manifests.py",
    ]


def test_init_derives_names_from_the_directory(project: Path) -> None:
    """Name, Kind, package and deployment names follow from `guest-book` and --group."""
    crd = yaml.safe_load((project / "config/crd/guestbooks.webapp.example.com.yaml").read_text())
    assert crd["spec"]["group"] == "webapp.example.com"
    assert crd["spec"]["names"]["kind"] == "GuestBook"
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1alpha1"]
    namespace, deployment = yaml.safe_load_all(
        (project / "config/manager/manager.yaml").read_text()
    )
    assert namespace["metadata"]["name"] == "guest-book-system"
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == (
        "guest-book-operator:latest"
    )
    pyproject = (project / "pyproject.toml").read_text()
    assert 'name = "guest-book"' in pyproject
    assert 'guest-book-operator = "guest_book.__main__:main"' in pyproject
    assert 'ENTRYPOINT ["python", "-m", "guest_book"]' in (project / "Dockerfile").read_text()
    sample = yaml.safe_load((project / "config/samples/webapp_v1alpha1_guestbook.yaml").read_text())
    assert sample["apiVersion"] == "webapp.example.com/v1alpha1"
    assert sample["kind"] == "GuestBook"


def test_scaffolded_project_passes_its_own_tests(project: Path) -> None:
    """The generated envtest tests see the Ready condition follow the spec; config/ is current."""
    done = _run(project, "pytest", "-p", "no:cacheprovider", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


def test_scaffolded_project_passes_mypy_strict(project: Path, tmp_path: Path) -> None:
    """The generated package and tests type-check under the project's mypy --strict config."""
    done = _run(project, "mypy", "--cache-dir", str(tmp_path / "mypy"), PACKAGE, "tests")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success: no issues found in 6 source files")
