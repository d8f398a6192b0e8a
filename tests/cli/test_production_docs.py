"""docs/production.md's walk from `pyctrl init` to an installed operator, run as written.

Every ``$ command`` of the section's console blocks runs (``pyctrl`` as ``python -m
pyctrl.cli``, ``cd`` changes directory), against the embedded API server for
``deploy``, and prints exactly the lines the page shows (``...`` stands for any lines).
The page's python line is put into the project as the reader would.
"""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import yaml

from pyctrl.envtest import Environment

from .conftest import subprocess_env

DOC = Path(__file__).resolve().parents[2] / "docs" / "production.md"
SECTION = "## From `pyctrl init` to an installed operator, without cert-manager"


def _section() -> str:
    text = DOC.read_text().split(SECTION, 1)[1]
    return text.split("\n## ", 1)[0]


def _commands(section: str) -> list[tuple[str, list[str]]]:
    """Each ``$ command`` of the console blocks with the lines shown after it."""
    steps: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", section, re.DOTALL):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
    return steps


def _matches(expected: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` is ``expected`` with each ``...`` standing for any lines."""
    pattern = "".join(
        r"(?:.*\n)*?" if line == "..." else re.escape(line) + r"\n" for line in expected
    )
    return re.fullmatch(pattern, "".join(line + "\n" for line in actual)) is not None


async def _run(command: str, cwd: Path, env: dict[str, str]) -> list[str]:
    argv = command.split()
    assert argv[0] == "pyctrl", command
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pyctrl.cli", *argv[1:],
        cwd=cwd, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(50):
        out, err = await proc.communicate()
    assert proc.returncode == 0, f"{command}: {err.decode()}"
    return out.decode().splitlines()


async def test_the_walk_from_init_to_an_installed_operator(tmp_path: Path) -> None:
    """Each command prints what the page shows; the installed Deployment serves from its Secret."""
    section = _section()
    [edit] = re.findall(r"```python\n(.*?)\n```", section, re.DOTALL)
    cwd = tmp_path
    async with Environment() as env:
        for command, expected in _commands(section):
            if command.startswith("cd "):
                cwd = cwd / command[3:]
                continue
            main = cwd / "shop/__main__.py"
            if command.startswith("pyctrl generate shop") and edit not in main.read_text():
                source = re.sub(r"^operator = Operator\(.*\)$", edit, main.read_text(), flags=re.M)
                main.write_text(source)
            run_env = {**subprocess_env(cwd), "KUBECONFIG": str(env.kubeconfig_path)}
            run_env.pop("ENABLE_WEBHOOKS", None)  # as in a reader's shell: webhooks on
            actual = await _run(command, cwd, run_env)
            assert _matches(expected, actual), f"$ {command}\n" + "\n".join(actual)
        installer = list(yaml.safe_load_all((cwd / "dist/install.yaml").read_text()))
    assert not [o for o in installer if o and o["apiVersion"].startswith("cert-manager.io")]
    [deployment] = [o for o in installer if o and o["kind"] == "Deployment"]
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--webhook-cert-secret=shop-system/shop-webhook-server-cert" in args
