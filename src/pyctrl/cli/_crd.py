"""``pyctrl crd check`` and ``pyctrl crd migrate``: upgrading CRDs without losing data.

``check`` compares the CRDs a project generates now (from MODULE[:ATTRIBUTE], or from
CRD files) with the ones installed (``--against cluster``) or committed (``--against
DIR``) and fails, naming the field, on the changes `pyctrl.crd.breaking_changes` finds;
``--allow RULE`` or ``--allow RULE@FIELD`` accepts one. ``migrate`` rewrites every
object of a CRD at its storage version and prunes ``status.storedVersions``
(`pyctrl.crd.migrate_storage_version`), after which the old version may be dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import yaml

from pyctrl.cli._common import CliError, describe, reports_errors
from pyctrl.cli._compat import incompatibilities
from pyctrl.cli._deploy import cluster_config, cluster_options, with_cluster

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyctrl.client import Client

__all__ = ["crd", "load_crd_files"]


def load_crd_files(path: Path) -> dict[str, dict[str, Any]]:
    """The CRDs in a YAML file, or in the ``*.yaml`` files under a directory, by name."""
    files = sorted(path.rglob("*.yaml")) if path.is_dir() else [path]
    found: dict[str, dict[str, Any]] = {}
    for file in files:
        try:
            docs = list(yaml.safe_load_all(file.read_text()))
        except (OSError, yaml.YAMLError) as exc:
            raise CliError(f"cannot read {file}: {describe(exc)}") from exc
        for doc in docs:
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                found[doc["metadata"]["name"]] = doc
    return found


def _new_crds(target: str) -> dict[str, dict[str, Any]]:
    path = Path(target)
    if path.exists():
        return load_crd_files(path)
    from pyctrl.cli._generate import render_files
    from pyctrl.cli._load import Target

    rendered = render_files("crd", Target.parse(target))
    docs = [yaml.safe_load(text) for name, text in rendered.items() if name.startswith("crd/")]
    # crd/ also holds its kustomization.yaml.
    crds = [doc for doc in docs if doc.get("kind") == "CustomResourceDefinition"]
    return {crd["metadata"]["name"]: crd for crd in crds}


def _installed(names: Sequence[str], kubeconfig: str | None, context: str | None) -> dict[str, Any]:
    found: dict[str, dict[str, Any]] = {}

    async def work(client: Client) -> None:
        from pyctrl.errors import NotFoundError
        from pyctrl.meta import GroupVersionKind
        from pyctrl.resource import Unstructured

        gvk = GroupVersionKind("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
        for name in names:
            try:
                found[name] = (await client.get(Unstructured, name, gvk=gvk)).to_dict()
            except NotFoundError:
                continue  # not installed yet: nothing stored to break

    with_cluster(cluster_config(kubeconfig, context), work)
    return found


@click.group("crd", help="Check CRD upgrades and migrate stored objects.")
def crd() -> None:
    """The ``pyctrl crd`` commands."""


@crd.command("check")
@click.argument("target", metavar="MODULE[:ATTRIBUTE]|PATH")
@click.option(
    "--against",
    required=True,
    metavar="DIR|cluster",
    help="The CRDs to compare with: a directory (or file) of committed CRDs, or `cluster`.",
)
@click.option(
    "--allow",
    multiple=True,
    metavar="RULE[@FIELD]",
    help="Accept a breaking change: a rule, or a rule at one field (removed-field@.spec.x).",
)
@cluster_options
@reports_errors
def check(
    target: str, against: str, allow: tuple[str, ...], kubeconfig: str | None, context: str | None
) -> None:
    """Fail if the CRDs of TARGET would break objects stored under the old ones.

    TARGET is the module whose CustomResource classes (or Operator) generate the CRDs,
    or a CRD file or directory. Rules: removed-stored-version, removed-served-version,
    scope-changed, removed-field, type-changed, new-required, tightened.
    """
    new = _new_crds(target)
    if not new:
        raise CliError(f"{target} has no CustomResourceDefinitions")
    if against == "cluster":
        old = _installed(sorted(new), kubeconfig, context)
    else:
        path = Path(against)
        if not path.exists():
            raise CliError(f"--against {against}: no such directory or file (or `cluster`)")
        old = load_crd_files(path)
    changes = incompatibilities(old, new, allow)
    for change in changes:
        click.echo(f"breaking: {change}")
    if changes:
        raise CliError(
            f"{len(changes)} breaking change{'' if len(changes) == 1 else 's'}; fix them or "
            "accept each with --allow RULE@FIELD"
        )
    compared = sorted(set(new) & set(old))
    click.echo(f"no breaking changes in {len(compared)} CRD{'' if len(compared) == 1 else 's'}")


@crd.command("migrate")
@click.argument("names", nargs=-1, required=True, metavar="CRD_NAME...")
@click.option("--page-size", default=500, show_default=True, help="Objects per list page.")
@click.option(
    "--qps", type=float, default=50.0, show_default=True, help="Writes per second at most."
)
@cluster_options
@reports_errors
def migrate(
    names: tuple[str, ...],
    page_size: int,
    qps: float,
    kubeconfig: str | None,
    context: str | None,
) -> None:
    """Rewrite every object of each CRD at its storage version, then prune storedVersions.

    After it, `status.storedVersions` holds only the storage version and older versions
    may be removed from the CRD. An interrupted run resumes where it stopped.
    """

    async def work(client: Client) -> None:
        from pyctrl.crd import migrate_storage_version
        from pyctrl.errors import APIError

        for name in names:
            try:
                result = await migrate_storage_version(client, name, page_size=page_size, qps=qps)
            except (APIError, ValueError, RuntimeError) as exc:
                raise CliError(f"cannot migrate {name}: {describe(exc)}") from exc
            click.echo(
                f"{name}: {result.migrated} objects rewritten at {result.storage_version} "
                f"({result.skipped} written by others meanwhile); storedVersions: "
                f"{', '.join(result.stored_versions)}"
            )

    with_cluster(cluster_config(kubeconfig, context), work)
