"""A project scaffolded by ``pyctrl init`` works as generated: its tests and mypy --strict pass."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
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
        "PROJECT",
        "README.md",
        "config/crd/guestbooks.webapp.example.com.yaml",
        "config/crd/kustomization.yaml",
        "config/default/kustomization.yaml",
        "config/manager/kustomization.yaml",
        "config/manager/manager.yaml",
        "config/manager/metrics_service.yaml",
        "config/prometheus/kustomization.yaml",
        "config/prometheus/monitor.yaml",
        "config/rbac/kustomization.yaml",
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


def test_scaffolded_project_passes_mypy_strict(project: Path, mypy_cache: Path) -> None:
    """The generated package and tests type-check under the project's mypy --strict config."""
    done = _run(project, "mypy", "--cache-dir", str(mypy_cache), PACKAGE, "tests")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success: no issues found in 6 source files")


# What the docs tell a newcomer to add (docs/cli.md, docs/controllerutil.md): a Deployment
# made with create_or_update and set_controller_reference, `.owns(V1Deployment)` in setup,
# and the Deployment's status mirrored into the GuestBook's condition.
WORKLOAD = """\
    \"\"\"The Deployment a GuestBook runs, built as the docs show.\"\"\"

    from __future__ import annotations

    from kubernetes_asyncio.client import (
        V1Container,
        V1ContainerPort,
        V1Deployment,
        V1DeploymentSpec,
        V1LabelSelector,
        V1ObjectMeta,
        V1PodSpec,
        V1PodTemplateSpec,
    )

    from pyctrl.client import Client
    from pyctrl.controllerutil import create_or_update, set_controller_reference

    from guest_book.api import GuestBook


    async def ensure_deployment(client: Client, owner: GuestBook) -> V1Deployment:
        \"\"\"Create or update the GuestBook's Deployment; return it as the server has it.\"\"\"
        meta = V1ObjectMeta(name=owner.metadata.name, namespace=owner.metadata.namespace)
        labels = {"app": f"guestbook-{owner.metadata.name}"}

        def mutate(deployment: V1Deployment) -> None:
            container = V1Container(name="web", image="nginx:1.27")
            container.ports = [V1ContainerPort(name="http", container_port=8080)]
            deployment.spec = V1DeploymentSpec(
                selector=V1LabelSelector(match_labels=labels),
                template=V1PodTemplateSpec(
                    metadata=V1ObjectMeta(labels=labels),
                    spec=V1PodSpec(containers=[container]),
                ),
            )
            set_controller_reference(owner, deployment)

        _, deployment = await create_or_update(client, V1Deployment(metadata=meta), mutate)
        return deployment


    def ready_replicas(deployment: V1Deployment) -> int:
        \"\"\"The Deployment's ready replicas (none before its first status).\"\"\"
        status = deployment.status
        return (status.ready_replicas or 0) if status is not None else 0
"""

OWNED_TEST = """\
    \"\"\"The owned Deployment's status changes reach the GuestBook reconciler.\"\"\"

    from __future__ import annotations

    import asyncio
    from typing import TYPE_CHECKING

    import pytest
    from kubernetes_asyncio.client import V1Deployment, V1DeploymentStatus

    from pyctrl.crd import crd_for
    from pyctrl.errors import NotFoundError
    from pyctrl.meta import ObjectMeta

    from guest_book.__main__ import operator
    from guest_book.api import GuestBook

    if TYPE_CHECKING:
        from pyctrl.envtest import Environment

    pytestmark = pytest.mark.envtest(crds=[crd_for(GuestBook)])


    async def test_the_deployments_status_reaches_the_reconciler(envtest: Environment) -> None:
        \"\"\"A status-only change of the owned Deployment is mirrored into the GuestBook.\"\"\"
        manager = await operator.create_manager(envtest.config)
        async with asyncio.TaskGroup() as tasks:
            task = tasks.create_task(manager.start())
            async with asyncio.timeout(45):
                await manager.wait_started()
                await manager.client.create(
                    GuestBook(metadata=ObjectMeta(name="sample", namespace="default"))
                )
                while True:
                    try:
                        deployment = await manager.api_reader.get(
                            V1Deployment, "sample", "default"
                        )
                        break
                    except NotFoundError:
                        await asyncio.sleep(0.05)
                deployment.status = V1DeploymentStatus(
                    replicas=1, ready_replicas=1, available_replicas=1
                )
                await manager.client.status().update(deployment)
                while True:
                    live = await manager.api_reader.get(GuestBook, "sample", "default")
                    messages = [c.message for c in live.status.conditions]
                    if messages == ["1 ready replicas"]:
                        break
                    await asyncio.sleep(0.05)
            task.cancel()
"""


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} not once in {path}"
    path.write_text(text.replace(old, new))


def test_owned_deployment_status_reaches_the_scaffolded_reconciler(
    project: Path, tmp_path: Path, mypy_cache: Path
) -> None:
    """With `.owns(V1Deployment)` added as the docs say, the Deployment's status is seen.

    The scaffold's GenerationChanged filter is on for_() only: a controller-wide filter
    would drop the owned Deployment's status-only updates. The docs' idioms (whole-spec
    create_or_update, `container.ports = [...]`) pass the project's mypy --strict.
    """
    copy = tmp_path / "guest-book"
    shutil.copytree(project, copy, ignore=shutil.ignore_patterns("__pycache__", ".*_cache"))
    (copy / PACKAGE / "workload.py").write_text(textwrap.dedent(WORKLOAD))
    (copy / "tests" / "test_owned.py").write_text(textwrap.dedent(OWNED_TEST))
    controller = copy / PACKAGE / "controller.py"
    _edit(controller, "from guest_book.api import GuestBook\n",
          "from kubernetes_asyncio.client import V1Deployment\n\n"
          "from guest_book.api import GuestBook\n"
          "from guest_book.workload import ensure_deployment, ready_replicas\n")  # fmt: skip
    _edit(controller, "        generation = obj.metadata.generation or 0\n",
          "        deployment = await ensure_deployment(self.client, obj)\n"
          "        generation = obj.metadata.generation or 0\n")  # fmt: skip
    _edit(controller, "message=f\"spec.message is {obj.spec.message!r}\",",
          "message=f\"{ready_replicas(deployment)} ready replicas\",")  # fmt: skip
    _edit(controller, "        .complete(", "        .owns(V1Deployment)\n        .complete(")
    done = _run(copy, "pytest", "-p", "no:cacheprovider", "-q", "tests/test_owned.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    done = _run(copy, "mypy", "--cache-dir", str(mypy_cache), PACKAGE, "tests")
    assert done.returncode == 0, done.stdout + done.stderr
