"""``pyctrl install``, ``deploy``, ``docker-build``...: kubebuilder's make targets.

Run in a project made by ``pyctrl init`` (its ``PROJECT`` names the package). The
manifests are rendered from the project's `pyctrl.app.Operator` at the moment, as
``make install`` and ``make deploy`` regenerate them first, and written to the cluster
of ``KUBECONFIG`` (or ``--kubeconfig``) with pyctrl's own client by server-side apply
(field manager ``pyctrl``), as ``kubectl apply --server-side`` does; no kubectl needed.

- ``install`` applies the CustomResourceDefinitions; ``uninstall`` deletes them.
- ``deploy`` applies everything ``config/`` holds (CRDs, RBAC, the Namespace and the
  manager's Deployment with ``--image``, and, if the operator has webhooks, their
  configurations, Service and, with ``cert_mode="cert-manager"``, cert-manager's Issuer
  and Certificate; with ``cert_mode="self-managed"`` no cert-manager is needed; not the
  ServiceMonitor of ``prometheus/``, which needs prometheus-operator); ``undeploy`` deletes
  it all and waits until it is gone. Before writing anything, ``deploy`` checks that the
  cluster serves every kind (cert-manager's, for webhooks), so a refusal changes nothing.
- ``docker-build`` runs ``docker build -t IMAGE .`` (``--dry-run`` prints it instead).

A cluster that cannot be found (``KUBECONFIG`` naming a missing file, no configuration
at all) or reached is refused with one ``error:`` line.
"""

from __future__ import annotations

import asyncio
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import click

from pyctrl.cli import _project
from pyctrl.cli._common import CliError, describe, reports_errors
from pyctrl.cli._load import Target, load_operator

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from pyctrl.app import Operator
    from pyctrl.client import Client
    from pyctrl.config import Config

FIELD_MANAGER = "pyctrl"
_WAIT_SECONDS = 120.0


def _operator() -> Operator:
    project = _project.load(Path.cwd())
    return load_operator(Target(f"{project.package}.__main__", "operator"))


def _objects(operator: Operator, *, crds_only: bool, image: str | None) -> list[dict[str, Any]]:
    """The operator's manifests, in apply order: install.yaml's (Namespaces, CRDs first)."""
    try:
        files = asyncio.run(operator.manifests())
    except Exception as exc:
        raise CliError(f"cannot render the manifests of {operator.name}: {describe(exc)}") from exc
    # The ServiceMonitor needs prometheus-operator's CRDs: as kubebuilder's default
    # kustomization leaves ../prometheus out, apply config/prometheus where it runs.
    objects = [
        obj for name, items in files.items() if not name.startswith("prometheus/") for obj in items
    ]
    if crds_only:
        return [obj for obj in objects if obj["kind"] == "CustomResourceDefinition"]
    if image:
        for obj in objects:
            if obj["kind"] == "Deployment":
                for container in obj["spec"]["template"]["spec"]["containers"]:
                    if container["name"] == "manager":
                        container["image"] = image
    # The installer's order (kustomize's): the Namespace and CRDs first, the webhook
    # configurations last, once what serves them is in place.
    from pyctrl.app import installer_objects

    return installer_objects({"all/objects": objects})


def _describe(obj: dict[str, Any]) -> str:
    """kubectl's ``<kind>.<group>/<name>``."""
    group = obj["apiVersion"].rpartition("/")[0]
    kind = obj["kind"].lower()
    return (
        f"{kind}.{group}/{obj['metadata']['name']}"
        if group
        else f"{kind}/{obj['metadata']['name']}"
    )


def cluster_config(kubeconfig: str | None, context: str | None) -> Config:
    """The cluster's configuration; none found (or a broken one) is one error line."""
    from pyctrl.config import get_config
    from pyctrl.errors import ConfigError

    try:
        return asyncio.run(get_config(kubeconfig=kubeconfig, context=context))
    except ConfigError as exc:
        raise CliError(f"no cluster to talk to: {exc}") from exc


def with_cluster(config: Config, work: Callable[[Client], Awaitable[None]]) -> None:
    """Run ``work`` with a client of ``config``; a server that does not answer is one line."""

    async def main() -> None:
        from pyctrl.client import Client

        async with Client.from_config(config, field_owner=FIELD_MANAGER) as client:
            try:
                await work(client)
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                raise CliError(
                    f"cannot reach the API server at {config.host}: {describe(exc)}"
                ) from exc

    asyncio.run(main())


async def _check_served(client: Client, objects: list[dict[str, Any]]) -> None:
    from pyctrl.client import NoKindMatchError
    from pyctrl.meta import GroupVersionKind

    missing = []
    for obj in objects:
        gvk = GroupVersionKind.from_api_version(obj["apiVersion"], obj["kind"])
        try:
            await client.mapper.mapping_for(gvk)
        except NoKindMatchError:
            if f"{gvk.api_version} {gvk.kind}" not in missing:
                missing.append(f"{gvk.api_version} {gvk.kind}")
    if missing:
        hint = (
            " (install cert-manager first: the webhooks' certificates come from it; or let "
            "the operator manage them itself: "
            'Operator(cert_mode="self-managed"))'
            if any(kind.startswith("cert-manager.io/") for kind in missing)
            else ""
        )
        raise CliError(
            f"the cluster does not serve {', '.join(missing)}{hint}; nothing was applied"
        )


async def _apply(client: Client, objects: list[dict[str, Any]]) -> None:
    from pyctrl.errors import APIError
    from pyctrl.resource import Unstructured

    for obj in objects:
        try:
            await client.apply(Unstructured(obj), force=True)
        except APIError as exc:
            raise CliError(f"applying {_describe(obj)} failed: {exc}") from exc
        click.echo(f"{_describe(obj)} serverside-applied")


async def _delete(
    client: Client, objects: list[dict[str, Any]], *, ignore_not_found: bool, wait: bool
) -> None:
    from pyctrl.errors import APIError, NotFoundError
    from pyctrl.meta import GroupVersionKind
    from pyctrl.resource import Unstructured

    # Namespaced objects first, then CRDs, then the Namespace (which would take the
    # namespaced objects with it while they are being deleted one by one).
    last = {"CustomResourceDefinition": 1, "Namespace": 2}
    ordered = objects[::-1]
    ordered.sort(key=lambda obj: last.get(obj["kind"], 0))
    deleted, missing = [], []
    for obj in ordered:
        try:
            await client.delete(Unstructured(obj), propagation_policy="Background")
        except NotFoundError:
            missing.append(obj)
            if not ignore_not_found:
                click.echo(f"Error from server (NotFound): {_describe(obj)} not found", err=True)
            continue
        except APIError as exc:
            raise CliError(f"deleting {_describe(obj)} failed: {exc}") from exc
        deleted.append(obj)
        click.echo(f"{_describe(obj)} deleted")
    if wait:
        async with asyncio.timeout(_WAIT_SECONDS):
            for obj in deleted:
                gvk = GroupVersionKind.from_api_version(obj["apiVersion"], obj["kind"])
                meta = obj["metadata"]
                while True:
                    try:
                        await client.api_reader.get(
                            Unstructured, meta["name"], meta.get("namespace"), gvk=gvk
                        )
                    except NotFoundError:
                        break
                    await asyncio.sleep(0.1)
    if missing and not ignore_not_found:
        raise CliError(
            f"{len(missing)} of {len(objects)} objects were not found (pass --ignore-not-found "
            "to accept that)"
        )


def cluster_options(command: Callable[..., Any]) -> Callable[..., Any]:
    command = click.option("--context", help="kubeconfig context to use.")(command)
    return click.option(
        "--kubeconfig",
        type=click.Path(dir_okay=False),
        help="kubeconfig file (default: KUBECONFIG, in-cluster, ~/.kube/config).",
    )(command)


_ignore = click.option(
    "--ignore-not-found", is_flag=True, help="Succeed even if some objects are already gone."
)
_wait = click.option(
    "--wait/--no-wait",
    default=True,
    show_default=True,
    help="Wait until the deleted objects are gone (finalizers done), as kubectl delete does.",
)


@click.command("install")
@cluster_options
@reports_errors
def install(kubeconfig: str | None, context: str | None) -> None:
    """Apply the project's CRDs to the cluster of KUBECONFIG (`make install`)."""
    operator = _operator()
    config = cluster_config(kubeconfig, context)
    objects = _objects(operator, crds_only=True, image=None)

    async def work(client: Client) -> None:
        await _apply(client, objects)

    with_cluster(config, work)


@click.command("uninstall")
@cluster_options
@_ignore
@_wait
@reports_errors
def uninstall(
    kubeconfig: str | None, context: str | None, ignore_not_found: bool, wait: bool
) -> None:
    """Delete the project's CRDs, and so every object of their kinds (`make uninstall`)."""
    operator = _operator()
    config = cluster_config(kubeconfig, context)
    objects = _objects(operator, crds_only=True, image=None)

    async def work(client: Client) -> None:
        await _delete(client, objects, ignore_not_found=ignore_not_found, wait=wait)

    with_cluster(config, work)


@click.command("deploy")
@click.option("--image", help="The manager's image [default: the Operator's image].")
@cluster_options
@reports_errors
def deploy(image: str | None, kubeconfig: str | None, context: str | None) -> None:
    """Apply the CRDs, RBAC, the manager's Deployment and webhooks (`make deploy IMG=...`)."""
    operator = _operator()
    config = cluster_config(kubeconfig, context)
    objects = _objects(operator, crds_only=False, image=image)

    async def work(client: Client) -> None:
        await _check_served(client, objects)
        await _apply(client, objects)

    with_cluster(config, work)


@click.command("undeploy")
@cluster_options
@_ignore
@_wait
@reports_errors
def undeploy(
    kubeconfig: str | None, context: str | None, ignore_not_found: bool, wait: bool
) -> None:
    """Delete everything deploy applied, and wait until it is gone (`make undeploy`)."""
    operator = _operator()
    config = cluster_config(kubeconfig, context)
    objects = _objects(operator, crds_only=False, image=None)

    async def work(client: Client) -> None:
        await _delete(client, objects, ignore_not_found=ignore_not_found, wait=wait)

    with_cluster(config, work)


def build_command(tool: str, image: str, context: str = ".") -> list[str]:
    """The image build command line: ``<tool> build -t <image> <context>``."""
    return [tool, "build", "-t", image, context]


@click.command("docker-build")
@click.option("--image", help="The image to build [default: the Operator's image].")
@click.option(
    "--tool", default="docker", show_default=True, help="The container CLI (docker, podman...)."
)
@click.option("--dry-run", is_flag=True, help="Print the command instead of running it.")
@reports_errors
def docker_build(image: str | None, tool: str, dry_run: bool) -> None:
    """Build the manager's image from the project's Dockerfile (`make docker-build IMG=...`)."""
    image = image or _operator().image
    if not Path("Dockerfile").is_file():
        raise CliError(f"no Dockerfile in {Path.cwd()}: run this in the project's directory")
    command = build_command(tool, image)
    if dry_run:
        click.echo(shlex.join(command))
        return
    found = shutil.which(tool)
    if found is None:
        raise CliError(
            f"{tool} not found on PATH: install it, pass --tool (e.g. podman), or run "
            f"`{shlex.join(command)}` where a container engine is"
        )
    try:
        done = subprocess.run([found, *command[1:]], check=False)
    except OSError as exc:
        raise CliError(f"running {tool} failed: {exc}") from exc
    if done.returncode != 0:
        raise CliError(f"`{shlex.join(command)}` failed with exit status {done.returncode}")
