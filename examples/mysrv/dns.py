"""The external resource MySrv manages: DNS records in a zone outside the cluster.

Operators often own things Kubernetes cannot garbage-collect: a cloud load balancer, a
database, a DNS record. Whatever creates them must also delete them, and a finalizer
makes sure it gets the chance: the API server keeps a deleted MySrv until the operator
has removed the record and then its finalizer.

`DNSProvider` is the seam, the few calls an operator makes to a provider's API
(Route 53, Cloud DNS...). `DNSZone` is the simulated provider: its records live in
memory or, given a path, in a JSON file, so that they outlive the operator like real
ones, and another process (or a person) can read them.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Protocol

__all__ = ["ZONE_FILE_VARIABLE", "DNSProvider", "DNSZone", "zone_from_environment"]

ZONE_FILE_VARIABLE = "MYSRV_DNS_FILE"
"""Environment variable naming the JSON file `zone_from_environment` keeps records in."""


class DNSProvider(Protocol):
    """The calls the operator makes to a DNS provider; each is idempotent."""

    async def upsert(self, fqdn: str, target: str) -> bool:
        """Point ``fqdn`` at ``target`` (a CNAME); return True if anything changed."""
        ...

    async def delete(self, fqdn: str) -> bool:
        """Remove the record of ``fqdn``; return True if there was one."""
        ...


class DNSZone:
    """A simulated DNS zone: records in memory, or in a JSON file when ``path`` is given.

    Args:
        path: A JSON file holding the records (``{"fqdn": "target"}``); created on the
            first write. Without it the records live as long as the object.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._records: dict[str, str] = {}
        self._lock = asyncio.Lock()

    async def records(self) -> dict[str, str]:
        """A copy of every record, by fully qualified name."""
        async with self._lock:
            return dict(await self._load())

    async def upsert(self, fqdn: str, target: str) -> bool:
        """Point ``fqdn`` at ``target``; return True if the record was missing or different."""
        _check_name(fqdn)
        async with self._lock:
            records = await self._load()
            if records.get(fqdn) == target:
                return False
            records[fqdn] = target
            await self._save(records)
            return True

    async def delete(self, fqdn: str) -> bool:
        """Remove the record of ``fqdn``; return True if there was one."""
        async with self._lock:
            records = await self._load()
            if records.pop(fqdn, None) is None:
                return False
            await self._save(records)
            return True

    async def _load(self) -> dict[str, str]:
        if self.path is None:
            return self._records
        return await asyncio.to_thread(_read, self.path)

    async def _save(self, records: dict[str, str]) -> None:
        if self.path is not None:
            await asyncio.to_thread(_write, self.path, records)


def _check_name(fqdn: str) -> None:
    labels = fqdn.split(".")
    if len(fqdn) > 253 or not all(0 < len(label) <= 63 for label in labels):
        raise ValueError(f"{fqdn!r} is not a valid DNS name")


def _read(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise RuntimeError(f"cannot read DNS records from {path}: {exc}") from exc
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise RuntimeError(f"{path} does not hold a JSON object of name -> target strings")
    return data


def _write(path: Path, records: dict[str, str]) -> None:
    # Write then rename, so that a reader never sees half a file.
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(json.dumps(records, indent=2, sort_keys=True) + "\n")
    scratch.replace(path)


def zone_from_environment() -> DNSZone:
    """The zone the operator process uses: the file named by ``MYSRV_DNS_FILE``, or memory."""
    return DNSZone(os.environ.get(ZONE_FILE_VARIABLE) or None)
