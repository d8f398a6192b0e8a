"""``pyctrl create api`` and ``create webhook``: what they refuse, ask and record.

The full grown project (its tests and mypy passing) is in test_create_project.py; here
each refusal is one ``error:`` line that leaves every file as it was.
"""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

from pyctrl.cli import app
from pyctrl.cli._project import load

from .conftest import one_line_error, read_tree, subprocess_env

if TYPE_CHECKING:
    from pathlib import Path

    from .conftest import Workspace


@pytest.fixture(scope="module")
def initialized(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh `pyctrl init` project (copied by `project` for each test)."""
    root = tmp_path_factory.mktemp("create") / "shop"
    result = CliRunner().invoke(
        app, ["init", str(root), "--group", "webapp", "--kind", "Guestbook"]
    )
    assert result.exit_code == 0, result.output
    return root


@pytest.fixture
def project(initialized: Path, workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the initialized project, as the current directory."""
    root = workspace.root / "shop"
    shutil.copytree(initialized, root)
    monkeypatch.chdir(root)
    return root


def _api(*extra: str) -> list[str]:
    """``create api`` of cache/v1alpha1 Memcached, with ``extra`` options."""
    return [
        "create",
        "api",
        "--group",
        "cache",
        "--version",
        "v1alpha1",
        "--kind",
        "Memcached",
        *extra,
    ]


def test_init_records_its_kind_in_project(project: Path) -> None:
    """PROJECT after init: the domain, the package, and the init kind with its controller."""
    record = load(project)
    assert (record.domain, record.package, record.project_name) == ("example.com", "shop", "shop")
    [resource] = record.resources
    assert (resource.group, resource.version, resource.kind, resource.plural) == (
        "webapp",
        "v1alpha1",
        "Guestbook",
        "guestbooks",
    )
    assert resource.api is not None
    assert (resource.api.module, resource.api.namespaced) == ("shop.api", True)
    assert (resource.controller, resource.controller_module) == (True, "shop.controller")


def test_create_api_twice_fails_and_changes_nothing(project: Path, workspace: Workspace) -> None:
    """The second `create api` for the same kind is refused in one line; no file changes."""
    assert workspace.invoke(*_api()).exit_code == 0
    before = read_tree(project)
    line = one_line_error(workspace.invoke(*_api()))
    assert line == (
        "error: the API cache.example.com/v1alpha1 Memcached already exists "
        "(shop.apis.v1alpha1.memcached, recorded in PROJECT): nothing was changed"
    )
    assert read_tree(project) == before


def test_a_second_controller_for_a_kind_is_refused(project: Path, workspace: Workspace) -> None:
    """A controller for a kind that has one (init's Guestbook) is refused, nothing written."""
    before = read_tree(project)
    args = ["create", "api", "--group", "webapp", "--version", "v1", "--kind", "Guestbook"]
    line = one_line_error(workspace.invoke(*args, "--controller"))
    assert line == (
        "error: Guestbook already has a controller (shop.controller, for v1alpha1): a kind "
        "has one controller; nothing was changed"
    )
    assert read_tree(project) == before


def test_create_api_without_a_controller_writes_only_the_types(
    project: Path, workspace: Workspace
) -> None:
    """--no-controller adds the types, sample and wiring but no controller or its test."""
    result = workspace.invoke(*_api("--no-controller"))
    assert result.exit_code == 0, result.output
    files = set(read_tree(project))
    assert "shop/apis/v1alpha1/memcached.py" in files
    assert "config/crd/memcacheds.cache.example.com.yaml" in files
    assert not any("controllers" in name or "memcached_controller" in name for name in files)
    main = (project / "shop/__main__.py").read_text()
    assert "from shop.apis.v1alpha1.memcached import Memcached\n" in main
    assert "    Memcached,\n" in main
    resource = load(project).find("cache", "example.com", "v1alpha1", "Memcached")
    assert resource is not None
    assert not resource.controller


def test_a_controller_needs_a_type(project: Path, workspace: Workspace) -> None:
    """--no-resource for a kind that has no type is refused, naming --resource."""
    line = one_line_error(workspace.invoke(*_api("--no-resource")))
    assert "pass --resource to create it too" in line


def test_a_new_version_keeps_the_kinds_scope(project: Path, workspace: Workspace) -> None:
    """A cluster-scoped second version of a namespaced kind is refused."""
    before = read_tree(project)
    args = ["create", "api", "--group", "webapp", "--version", "v1", "--kind", "Guestbook"]
    line = one_line_error(workspace.invoke(*args, "--cluster"))
    assert line == (
        "error: Guestbook is namespaced (v1alpha1): every version of a kind has the same scope"
    )
    assert read_tree(project) == before


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--kind", "memcached", "--kind 'memcached' must be CamelCase"),
        ("--kind", "Manager", "--kind 'Manager' would shadow a name"),
        ("--kind", "Class", "--kind 'Class' would shadow a name"),
        ("--version", "1", "--version '1' must look like v1"),
        ("--group", "Cache", "--group 'Cache' must be a DNS label"),
    ],
)
def test_create_api_rejects_bad_names(
    project: Path, workspace: Workspace, option: str, value: str, message: str
) -> None:
    """Bad names are refused before anything is written, naming the option."""
    args = {"--group": "cache", "--version": "v1", "--kind": "Memcached", option: value}
    before = read_tree(project)
    line = one_line_error(
        workspace.invoke("create", "api", *[part for pair in args.items() for part in pair])
    )
    assert message in line
    assert read_tree(project) == before


def test_a_kind_name_taken_in_another_group_is_refused(project: Path, workspace: Workspace) -> None:
    """Guestbook of another group would share init's Guestbook modules: refused."""
    args = ["create", "api", "--group", "other", "--version", "v1", "--kind", "Guestbook"]
    line = one_line_error(workspace.invoke(*args))
    assert "the project has the kind Guestbook in group webapp.example.com" in line


def test_create_outside_a_project_says_where_it_looked(workspace: Workspace) -> None:
    """Without a PROJECT file the command says to run it in a `pyctrl init` project."""
    line = one_line_error(workspace.invoke(*_api()))
    assert line == (
        f"error: no PROJECT file in {workspace.root.resolve()}: run this command in a project "
        "made by `pyctrl init`"
    )


def test_a_removed_marker_is_reported(project: Path, workspace: Workspace) -> None:
    """A __main__ without the scaffold markers is refused, naming the file; nothing written."""
    main = project / "shop/__main__.py"
    main.write_text(main.read_text().replace("# +pyctrl:scaffold:types", ""))
    before = read_tree(project)
    line = one_line_error(workspace.invoke(*_api()))
    assert line.startswith("error: shop/__main__.py has no `# +pyctrl:scaffold:types` comment")
    assert read_tree(project) == before


def test_create_webhook_for_an_unknown_kind(project: Path, workspace: Workspace) -> None:
    """A webhook for a kind the project lacks says to create the API first."""
    line = one_line_error(
        workspace.invoke("create", "webhook", "--kind", "Memcached", "--defaulting")
    )
    assert "the project has no Memcached API: create it first" in line


def test_create_webhook_needs_something_to_create(project: Path, workspace: Workspace) -> None:
    """Without --defaulting, --programmatic-validation or --conversion nothing is done."""
    line = one_line_error(workspace.invoke("create", "webhook", "--kind", "Guestbook"))
    assert line.startswith("error: nothing to create: pass --defaulting")


def test_conversion_needs_two_versions(project: Path, workspace: Workspace) -> None:
    """--conversion for a kind with one version says how to add another."""
    line = one_line_error(
        workspace.invoke("create", "webhook", "--kind", "Guestbook", "--conversion")
    )
    assert "Guestbook has one version (v1alpha1): add another with `pyctrl create api" in line


def test_a_new_version_serves_conversion_already(project: Path, workspace: Workspace) -> None:
    """A second version of init's kind is a spoke with /convert wired; --conversion then refuses."""
    args = ["create", "api", "--group", "webapp", "--version", "v1", "--kind", "Guestbook"]
    result = workspace.invoke(*args)
    assert result.exit_code == 0, result.output
    record = load(project)
    hub = record.hub_of("webapp", "example.com", "Guestbook")
    assert hub is not None
    assert (hub.version, hub.hub) == ("v1alpha1", True)
    assert hub.webhooks is not None
    assert (hub.webhooks.conversion, hub.webhooks.spokes) == (True, ["v1"])
    spoke = (project / "shop/apis/v1/guestbook.py").read_text()
    assert "class GuestbookV1(" in spoke
    assert "from shop.api import Guestbook" in spoke
    assert "    storage=False," in spoke
    conversion = (project / "shop/webhooks/guestbook_conversion.py").read_text()
    assert "from shop.apis.v1.guestbook import GuestbookV1\n" in conversion
    assert "    GuestbookV1,\n    # +pyctrl:scaffold:spokes" in conversion
    before = read_tree(project)
    line = one_line_error(
        workspace.invoke("create", "webhook", "--kind", "Guestbook", "--conversion")
    )
    assert line == (
        "error: Guestbook conversion is already served (shop.webhooks.guestbook_conversion); "
        "nothing was changed"
    )
    assert read_tree(project) == before


def test_create_webhook_twice_fails_and_changes_nothing(
    project: Path, workspace: Workspace
) -> None:
    """A second `create webhook` for a kind with webhooks is refused; no file changes."""
    args = ("create", "webhook", "--kind", "Guestbook", "--programmatic-validation")
    first = workspace.invoke(*args)
    assert first.exit_code == 0, first.output
    webhook = (project / "shop/webhooks/guestbook.py").read_text()
    assert "class GuestbookValidator:" in webhook
    assert "class GuestbookDefaulter:" not in webhook
    before = read_tree(project)
    line = one_line_error(workspace.invoke(*args))
    assert line == (
        "error: Guestbook v1alpha1 already has validating webhooks in shop.webhooks.guestbook: "
        "extend that module by hand; nothing was changed"
    )
    assert read_tree(project) == before


def test_create_api_asks_on_a_terminal(project: Path) -> None:
    """Without --resource/--controller on a tty it asks both, as kubebuilder does."""
    primary, secondary = pty.openpty()
    try:
        # Answers typed in advance: yes to the resource, no to the controller.
        os.write(primary, b"y\nn\n")
        done = subprocess.run(
            [sys.executable, "-m", "pyctrl.cli", *_api()],
            cwd=project,
            env=subprocess_env(project),
            stdin=secondary,
            capture_output=True,
            text=True,
            timeout=55,
            check=False,
        )
    finally:
        os.close(primary)
        os.close(secondary)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Create Resource [Y/n]:" in done.stdout
    assert "Create Controller [Y/n]:" in done.stdout
    resource = load(project).find("cache", "example.com", "v1alpha1", "Memcached")
    assert resource is not None
    assert resource.api is not None
    assert not resource.controller


def test_create_api_without_a_terminal_takes_the_defaults(project: Path) -> None:
    """With stdin not a tty nothing is asked: a resource and a controller are created."""
    done = subprocess.run(
        [sys.executable, "-m", "pyctrl.cli", *_api()],
        cwd=project,
        env=subprocess_env(project),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=55,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Create" not in done.stdout.split("created", 1)[0]
    resource = load(project).find("cache", "example.com", "v1alpha1", "Memcached")
    assert resource is not None
    assert resource.api is not None
    assert resource.controller
