"""CustomResourceDefinitions for the test environment: read, install, wait, uninstall.

The counterpart of controller-runtime's ``pkg/envtest/crd.go``: `load_crds` reads CRDs
from dicts, files and directories (``ReadCRDFiles``), `install_crds` creates or updates
them (``CreateCRDs``), `wait_for_crds` polls until each is Established and its versions
are discoverable (``WaitForCRDs``), and `uninstall_crds` deletes them and waits until they
are gone (``UninstallCRDs``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import structlog
import yaml

from pyctrl.envtest._errors import CRDInstallError
from pyctrl.errors import APIError, NotFoundError

if TYPE_CHECKING:
    import os

    from pyctrl.envtest._rest import Rest

__all__ = ["CRD_API", "install_crds", "load_crds", "uninstall_crds", "wait_for_crds"]

logger = structlog.get_logger("pyctrl.envtest")

CRD_API = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
"""The path of the CustomResourceDefinition collection."""
_CRD_EXTENSIONS = (".yaml", ".yml", ".json")


def _crds_from_file(path: Path) -> list[dict[str, Any]]:
    try:
        documents = list(yaml.safe_load_all(path.read_text()))
    except (OSError, yaml.YAMLError) as exc:
        raise CRDInstallError(f"cannot read CRDs from {str(path)!r}: {exc}") from exc
    found: list[dict[str, Any]] = []
    for document in documents:
        if document is None:
            continue
        if not isinstance(document, dict):
            raise CRDInstallError(f"{str(path)!r} holds a YAML document that is not an object")
        if document.get("kind") == "List":
            found.extend(i for i in document.get("items") or () if isinstance(i, dict))
        else:
            found.append(document)
    return [d for d in found if d.get("kind") == "CustomResourceDefinition"]


def load_crds(
    sources: Sequence[Mapping[str, Any] | str | os.PathLike[str]],
    *,
    error_if_missing: bool = True,
) -> list[dict[str, Any]]:
    """Collect CustomResourceDefinitions from dicts, YAML/JSON files and directories.

    Files may hold several YAML documents (or a ``List``); documents of other kinds
    are skipped. Directories are read one level deep, files ending in ``.yaml``,
    ``.yml`` or ``.json``, in name order.

    Args:
        sources: CRD objects, file paths or directory paths.
        error_if_missing: Raise if a path does not exist (otherwise skip it, as
            controller-runtime does by default).

    Returns:
        The CRDs, in order; a later CRD with the same name replaces an earlier one.

    Raises:
        CRDInstallError: If a path is missing (and ``error_if_missing``), a file cannot
            be parsed, or a CRD is not ``apiextensions.k8s.io/v1``.
    """
    crds: dict[str, dict[str, Any]] = {}

    def add(crd: Mapping[str, Any], origin: str) -> None:
        if crd.get("kind") != "CustomResourceDefinition":
            raise CRDInstallError(
                f"{origin} is a {crd.get('kind')!r}, not a CustomResourceDefinition"
            )
        if crd.get("apiVersion") != "apiextensions.k8s.io/v1":
            raise CRDInstallError(
                f"{origin} has apiVersion {crd.get('apiVersion')!r}; only "
                "apiextensions.k8s.io/v1 CustomResourceDefinitions are served"
            )
        name = (crd.get("metadata") or {}).get("name")
        if not name:
            raise CRDInstallError(f"{origin} has no metadata.name")
        crds[name] = orjson.loads(orjson.dumps(crd))

    for source in sources:
        if isinstance(source, Mapping):
            add(source, "a CRD given as a dict")
            continue
        path = Path(source)
        if not path.exists():
            if error_if_missing:
                raise CRDInstallError(f"CRD path {str(path)!r} does not exist")
            logger.warning("skipping missing CRD path", path=str(path))
            continue
        files = (
            sorted(p for p in path.iterdir() if p.is_file() and p.suffix in _CRD_EXTENSIONS)
            if path.is_dir()
            else [path]
        )
        for file in files:
            for crd in _crds_from_file(file):
                add(crd, f"a document in {str(file)!r}")
    return list(crds.values())


async def install_crds(
    rest: Rest, crds: Sequence[dict[str, Any]], *, created: list[str], max_time: float
) -> list[dict[str, Any]]:
    """Create (or update) ``crds`` and wait until each is Established and served.

    Args:
        rest: The connection to the API server.
        crds: The CRDs, as `load_crds` returns them.
        created: The names of the CRDs this call creates are appended to it (also when
            the wait then fails), so that they can be uninstalled.
        max_time: Seconds to wait for all of them.

    Returns:
        The CRDs as the server returned them once Established.

    Raises:
        CRDInstallError: If a CRD cannot be created or updated, or is not ready in time.
    """
    for crd in crds:
        name = crd["metadata"]["name"]
        try:
            await rest.request("POST", CRD_API, crd)
            created.append(name)
        except APIError as exc:
            if exc.reason != "AlreadyExists":
                raise CRDInstallError(f"cannot create CRD {name!r}: {exc}") from exc
            await _update_crd(rest, crd)
    return await wait_for_crds(rest, [c["metadata"]["name"] for c in crds], max_time=max_time)


async def _update_crd(rest: Rest, crd: dict[str, Any]) -> None:
    name = crd["metadata"]["name"]
    try:
        live = await rest.request("GET", f"{CRD_API}/{name}")
        updated = dict(crd)
        updated["metadata"] = {
            **crd["metadata"],
            "resourceVersion": live["metadata"]["resourceVersion"],
        }
        await rest.request("PUT", f"{CRD_API}/{name}", updated)
    except APIError as exc:
        raise CRDInstallError(f"cannot update existing CRD {name!r}: {exc}") from exc


async def wait_for_crds(
    rest: Rest, names: Sequence[str], *, max_time: float
) -> list[dict[str, Any]]:
    """Wait until the named CRDs are Established and their versions are discoverable.

    Returns:
        The CRDs as last read.

    Raises:
        CRDInstallError: If one is not ready in time (the message names it).
    """
    result: list[dict[str, Any]] = []
    pending = "(none)"
    try:
        async with asyncio.timeout(max_time):
            for name in names:
                pending = name
                result.append(await _wait_for_crd(rest, name))
    except TimeoutError:
        raise CRDInstallError(
            f"CRD {pending!r} was not Established and served within {max_time} s"
        ) from None
    return result


def _established(crd: Mapping[str, Any]) -> bool:
    for condition in (crd.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Established":
            return bool(condition.get("status") == "True")
    return False


async def _wait_for_crd(rest: Rest, name: str) -> dict[str, Any]:
    # Established alone is not enough on a real server: discovery may lag behind,
    # and clients that resolve kinds through discovery would fail. Poll both
    # (controller-runtime does the same).
    while True:
        try:
            crd = await rest.request("GET", f"{CRD_API}/{name}")
        except NotFoundError:
            crd = None
        if crd is not None and _established(crd) and await _served(rest, crd):
            return dict(crd)
        await asyncio.sleep(0.05)


async def _served(rest: Rest, crd: Mapping[str, Any]) -> bool:
    spec = crd.get("spec") or {}
    plural = (spec.get("names") or {}).get("plural")
    group = spec.get("group")
    for version in spec.get("versions") or ():
        if not version.get("served", True):
            continue
        try:
            listing = await rest.request("GET", f"/apis/{group}/{version['name']}")
        except NotFoundError:
            return False
        names = {r.get("name") for r in (listing or {}).get("resources") or ()}
        if plural not in names:
            return False
    return True


async def uninstall_crds(rest: Rest, created: Sequence[str], *, max_time: float) -> None:
    """Delete the ``created`` CRDs (newest first) and wait up to ``max_time`` until gone.

    Best effort: CRDs still terminating after ``max_time`` are logged, not raised.
    """
    names = list(reversed(created))
    for name in names:
        with contextlib.suppress(NotFoundError):
            await rest.request("DELETE", f"{CRD_API}/{name}")
    try:
        async with asyncio.timeout(max_time):
            for name in names:
                while True:
                    try:
                        await rest.request("GET", f"{CRD_API}/{name}")
                    except NotFoundError:
                        break
                    await asyncio.sleep(0.05)
    except TimeoutError:
        logger.warning("CRDs still terminating at stop", crds=names)
