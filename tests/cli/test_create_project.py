"""The kubebuilder workflow end to end: init, create api/webhook, a new version, generate, deploy.

One project is grown in a temporary directory as the seeds' walkthrough grows theirs:
``init``, ``create api`` for a namespaced and a cluster-scoped kind, ``create webhook``
for one, a second version of it (hub and spoke, converted by the operator), then
``generate``. Its own tests then pass against the embedded API server, and so does
``mypy --strict``; ``install``, ``deploy`` and ``undeploy`` change the embedded server
as the real kubectl shows.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from click.testing import CliRunner

from pyctrl.cli import app
from pyctrl.cli._project import load
from pyctrl.envtest import Environment

from ..kubectl import Kubectl
from .conftest import read_tree, subprocess_env

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

PACKAGE = "shop"
NAMESPACE = "shop-system"
OUR_CRDS = [
    "guestbooks.webapp.example.com",
    "memcacheds.cache.example.com",
    "tenants.infra.example.com",
]


def _invoke(project: Path, *args: str, monkeypatch: pytest.MonkeyPatch) -> str:
    with monkeypatch.context() as patch:
        patch.chdir(project)
        result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project grown as the walkthrough grows one: two kinds, a webhook, a second version."""
    root = tmp_path_factory.mktemp("workflow") / "shop"
    with pytest.MonkeyPatch.context() as monkeypatch:
        steps = [
            ["init", str(root), "--group", "webapp", "--kind", "Guestbook"],
            ["create", "api", "--group", "cache", "--version", "v1alpha1", "--kind", "Memcached"],
            [
                "create",
                "api",
                "--group",
                "infra",
                "--version",
                "v1",
                "--kind",
                "Tenant",
                "--cluster",
            ],
            [
                "create",
                "webhook",
                "--kind",
                "Memcached",
                "--defaulting",
                "--programmatic-validation",
            ],
            ["create", "api", "--group", "cache", "--version", "v1", "--kind", "Memcached"],
        ]
        for step in steps:
            _invoke(root.parent if step[0] == "init" else root, *step, monkeypatch=monkeypatch)
    # In a child process: importing the project here would leave it in sys.modules.
    done = _run(root, "pyctrl.cli", "generate", f"{PACKAGE}.__main__:operator")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "config: 19 manifest files up to date\n"
    return root


def test_the_code_docs_cli_shows_is_what_the_project_holds(project: Path) -> None:
    """Each line of docs/cli.md's blocks of generated code is a line of the project's code."""
    from tests.docs.snippets import REPO, page_snippets

    generated = [s for s in page_snippets(REPO / "docs/cli.md") if s.marker == "generated"]
    code = {
        line.strip() for path in project.rglob("*.py") for line in path.read_text().splitlines()
    }
    assert len(generated) >= 3
    for snippet in generated:
        # The docs' project is the package guestbook; this one's is shop.
        lines = {
            line.strip().replace("guestbook.", f"{PACKAGE}.") for line in snippet.code.splitlines()
        }
        assert lines - {""} - code == set(), snippet.id


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


def test_the_project_records_what_was_scaffolded(project: Path) -> None:
    """PROJECT holds the domain, the package and each kind with its parts, hub and spokes."""
    record = load(project)
    assert (record.domain, record.project_name, record.package) == ("example.com", "shop", "shop")
    parts = {
        (r.group, r.version, r.kind): (
            r.api.namespaced if r.api else None,
            r.controller,
            r.hub,
            r.webhooks.model_dump() if r.webhooks else None,
        )
        for r in record.resources
    }
    assert parts == {
        ("webapp", "v1alpha1", "Guestbook"): (True, True, False, None),
        ("cache", "v1alpha1", "Memcached"): (
            True,
            True,
            True,
            {
                "defaulting": True,
                "validation": True,
                "module": "shop.webhooks.memcached",
                "conversion": True,
                "conversion_module": "shop.webhooks.memcached_conversion",
                "spokes": ["v1"],
            },
        ),
        ("infra", "v1", "Tenant"): (False, True, False, None),
        ("cache", "v1", "Memcached"): (True, False, False, None),
    }


def test_the_project_gets_modules_samples_and_tests_per_kind(project: Path) -> None:
    """Each create added its types, controller, webhooks, conversion, sample and tests."""
    files = set(read_tree(project))
    assert {
        "shop/apis/v1alpha1/memcached.py",
        "shop/apis/v1/memcached.py",
        "shop/apis/v1/tenant.py",
        "shop/controllers/memcached.py",
        "shop/controllers/tenant.py",
        "shop/webhooks/memcached.py",
        "shop/webhooks/memcached_conversion.py",
        "tests/test_memcached_controller.py",
        "tests/test_tenant_controller.py",
        "tests/test_memcached_webhooks.py",
        "tests/test_memcached_v1_conversion.py",
        "config/samples/cache_v1alpha1_memcached.yaml",
        "config/samples/cache_v1_memcached.yaml",
        "config/samples/infra_v1_tenant.yaml",
        "config/webhook/manifests.yaml",
    } <= files


def test_the_manifests_carry_scope_versions_and_conversion(project: Path) -> None:
    """Tenant is cluster-scoped; Memcached serves v1alpha1 (stored, the hub) and v1 via /convert."""
    crd_dir = project / "config" / "crd"
    tenant = yaml.safe_load((crd_dir / "tenants.infra.example.com.yaml").read_text())
    assert tenant["spec"]["scope"] == "Cluster"
    memcached = yaml.safe_load((crd_dir / "memcacheds.cache.example.com.yaml").read_text())
    versions = {v["name"]: v["storage"] for v in memcached["spec"]["versions"]}
    assert versions == {"v1alpha1": True, "v1": False}
    assert memcached["spec"]["conversion"]["strategy"] == "Webhook"
    hooks = list(yaml.safe_load_all((project / "config/webhook/manifests.yaml").read_text()))
    paths = sorted(
        hook["clientConfig"]["service"]["path"]
        for config in hooks
        if config["kind"].endswith("WebhookConfiguration")
        for hook in config["webhooks"]
    )
    assert paths == [
        "/mutate-cache-example-com-v1alpha1-memcached",
        "/validate-cache-example-com-v1alpha1-memcached",
    ]


def test_the_grown_project_passes_its_own_tests(project: Path) -> None:
    """Its envtest tests pass: controllers, webhooks through the API server, conversion."""
    done = _run(project, "pytest", "-p", "no:cacheprovider", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    # Guestbook 2, Memcached 2, Tenant 2, webhooks 2, conversion 1, manifests 1.
    assert "10 passed" in done.stdout


def test_the_grown_project_passes_mypy_strict(project: Path, mypy_cache: Path) -> None:
    """Every scaffolded module and test type-checks under the project's mypy --strict."""
    done = _run(project, "mypy", "--cache-dir", str(mypy_cache), PACKAGE, "tests")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success: no issues found")


# -- install, deploy and undeploy against the embedded API server ----------------------

# cert-manager's kinds, as a cluster with cert-manager serves them (the webhooks'
# certificates come from it); the embedded server has no cert-manager controller.
CERT_MANAGER = [
    {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.cert-manager.io"},
        "spec": {
            "group": "cert-manager.io",
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    for kind, plural in (("Issuer", "issuers"), ("Certificate", "certificates"))
]


@pytest.fixture
async def cluster() -> AsyncIterator[Environment]:
    """An embedded API server that serves cert-manager's kinds."""
    async with Environment(crds=CERT_MANAGER) as env:
        yield env


async def pyctrl(project: Path, env: Environment, *args: str) -> tuple[int, str, str]:
    """Run ``pyctrl <args>`` in the project with KUBECONFIG=env's, without blocking the loop."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pyctrl.cli",
        *args,
        cwd=project,
        env={**subprocess_env(project), "KUBECONFIG": str(env.kubeconfig_path)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(50):
        out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def _names(kubectl: Kubectl, *what: str) -> list[str]:
    listed: dict[str, Any] = await kubectl.json(*what)
    return sorted(item["metadata"]["name"] for item in listed["items"])


async def test_install_and_uninstall_the_crds(
    project: Path, cluster: Environment, tmp_path: Path
) -> None:
    """install applies the three CRDs (kubectl lists them); uninstall removes them, once."""
    kubectl = Kubectl(cluster.kubeconfig_path, tmp_path / "cache", "default")
    code, out, err = await pyctrl(project, cluster, "install")
    assert code == 0, err
    assert "customresourcedefinition.apiextensions.k8s.io/tenants.infra.example.com" in out
    crds = await _names(kubectl, "crd")
    assert [name for name in crds if "cert-manager" not in name] == OUR_CRDS
    code, out, err = await pyctrl(project, cluster, "uninstall")
    assert code == 0, err
    assert [name for name in await _names(kubectl, "crd") if "cert-manager" not in name] == []
    # Gone already: an error, as for kubectl delete, unless --ignore-not-found.
    code, out, err = await pyctrl(project, cluster, "uninstall")
    assert code == 1
    assert err.splitlines()[-1] == (
        "error: 3 of 3 objects were not found (pass --ignore-not-found to accept that)"
    )
    code, out, err = await pyctrl(project, cluster, "uninstall", "--ignore-not-found")
    assert (code, out, err) == (0, "", "")


async def test_deploy_and_undeploy_the_operator(
    project: Path, cluster: Environment, tmp_path: Path
) -> None:
    """deploy applies CRDs, RBAC, the Deployment with the image, webhooks; undeploy removes all."""
    kubectl = Kubectl(cluster.kubeconfig_path, tmp_path / "cache", NAMESPACE)
    code, _out, err = await pyctrl(project, cluster, "deploy", "--image", "registry.test/shop:v1")
    assert code == 0, err
    deployment = await kubectl.json("deployment", "shop-controller-manager")
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("manager", "registry.test/shop:v1")]
    assert [n for n in await _names(kubectl, "crd") if "cert-manager" not in n] == OUR_CRDS
    assert "shop-manager-role" in await _names(kubectl, "clusterrole")
    assert await _names(kubectl, "mutatingwebhookconfiguration") == [
        "shop-mutating-webhook-configuration"
    ]
    assert await _names(kubectl, "certificate") == ["shop-serving-cert"]
    assert "shop-controller-manager" in await _names(kubectl, "serviceaccount")

    code, _out, err = await pyctrl(project, cluster, "undeploy")
    assert code == 0, err
    gone = await kubectl("get", "namespace", NAMESPACE, check=False)
    assert gone.code != 0
    assert "NotFound" in gone.err
    assert [n for n in await _names(kubectl, "crd") if "cert-manager" not in n] == []
    assert "shop-manager-role" not in await _names(kubectl, "clusterrole")
    assert await _names(kubectl, "mutatingwebhookconfiguration") == []
    assert await _names(kubectl, "validatingwebhookconfiguration") == []
