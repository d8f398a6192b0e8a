"""``pyctrl generate models``: typed models for CRDs you did not write (like kopium).

Reads CustomResourceDefinitions from files (``--crd``) or from the cluster of the
current kubeconfig (``--crd-name``) and writes one module per CRD with
`pyctrl.crd.models_for`: ``<plural>_<group>.py`` under ``--out`` (the module on
standard output without it). ``--check`` writes nothing and fails if a module is
missing or differs, as ``pyctrl generate --check`` does for manifests.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import click
import yaml

from pyctrl.cli._common import CliError, describe

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from pyctrl.client import Client

__all__ = ["crds_from_cluster", "crds_from_files", "generate_models", "module_name"]


def crds_from_files(paths: Sequence[Path]) -> list[tuple[dict[str, Any], str]]:
    """The CRDs in YAML or JSON files, each with the file it came from."""
    found: list[tuple[dict[str, Any], str]] = []
    for path in paths:
        try:
            docs = list(yaml.safe_load_all(path.read_text()))
        except (OSError, yaml.YAMLError) as exc:
            raise CliError(f"cannot read CRDs from {path}: {describe(exc)}") from exc
        crds = [
            d for d in docs if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"
        ]
        if not crds:
            raise CliError(f"{path} holds no CustomResourceDefinition")
        found.extend((crd, str(path)) for crd in crds)
    return found


def crds_from_cluster(
    names: Sequence[str], kubeconfig: str | None, context: str | None
) -> list[tuple[dict[str, Any], str]]:
    """The named CRDs as the cluster of the kubeconfig serves them."""
    from pyctrl.cli._deploy import cluster_config, with_cluster

    config = cluster_config(kubeconfig, context)
    found: list[tuple[dict[str, Any], str]] = []

    async def work(client: Client) -> None:
        from pyctrl.errors import NotFoundError
        from pyctrl.meta import GroupVersionKind
        from pyctrl.resource import Unstructured

        gvk = GroupVersionKind("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
        for name in names:
            try:
                crd = await client.get(Unstructured, name, gvk=gvk)
            except NotFoundError as exc:
                raise CliError(f"the cluster has no CustomResourceDefinition {name!r}") from exc
            found.append((crd.to_dict(), f"the cluster at {config.host}"))

    with_cluster(config, work)
    return found


def module_name(crd: dict[str, Any]) -> str:
    """``<plural>_<group>.py`` with dots and dashes as underscores."""
    spec = crd["spec"]
    return re.sub(r"\W", "_", f"{spec['names']['plural']}_{spec['group']}") + ".py"


def generate_models(
    crds: Sequence[tuple[dict[str, Any], str]], out: Path | None, check: bool
) -> None:
    """Write (or with ``check`` compare) one models module per CRD."""
    from pyctrl.crd import models_for

    rendered: dict[str, str] = {}
    for crd, source in crds:
        try:
            rendered[module_name(crd)] = models_for(crd, source=source)
        except Exception as exc:
            name = crd.get("metadata", {}).get("name", "?")
            raise CliError(f"cannot generate models of {name} ({source}): {describe(exc)}") from exc
    if out is None:
        for text in rendered.values():
            click.echo(text, nl=False)
        return
    stale = []
    for name, text in rendered.items():
        path = out / name
        current = path.read_text() if path.is_file() else None
        if current == text:
            click.echo(f"{path} up to date")
            continue
        if check:
            stale.append(f"{path} ({'missing' if current is None else 'differs'})")
            continue
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        click.echo(f"{'created' if current is None else 'updated'} {path}")
    if stale:
        for line in stale:
            click.echo(f"stale: {line}")
        raise CliError(f"{len(stale)} models module(s) under {out} are stale; regenerate them")
