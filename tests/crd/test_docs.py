"""docs/crd.md: its Python examples run and produce CRDs the API server accepts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pyctrl._apiextensions.crd_validation import validate_crd
from pyctrl.crd import crd_for, schema_for, structural_errors

DOC = Path(__file__).resolve().parents[2] / "docs" / "crd.md"

# Names the page's snippets take from earlier prose rather than import themselves.
PRELUDE = """
import copy
from typing import Any, Annotated
from pydantic import Field
from pyctrl.crd import *
from pyctrl.meta import KubeModel
from pyctrl.resource import CustomResource

class MySrvAlphaSpec(KubeModel):
    name: str
"""


def run_examples() -> dict[str, Any]:
    """Execute the page's Python blocks in order, as one module; return its namespace."""
    namespace: dict[str, Any] = {}
    # Compiled apart from this module's __future__ imports, as a reader would run them.
    exec(compile(PRELUDE, str(DOC), "exec", dont_inherit=True), namespace)
    for block in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL):
        if "print(" in block or "write_text(" in block:
            continue  # output-only snippets
        exec(compile(block, str(DOC), "exec", dont_inherit=True), namespace)
    return namespace


def test_examples_produce_valid_crds() -> None:
    """The page's resource, multi-version and conversion examples give valid CRDs."""
    namespace = run_examples()
    assert validate_crd(crd_for(namespace["MySrv"])) == []
    assert validate_crd(namespace["crd"]) == []
    assert [v["name"] for v in namespace["crd"]["spec"]["versions"]] == ["v1", "v1alpha1"]


def test_marker_examples_are_structural() -> None:
    """The page's marker examples give structural schemas."""
    namespace = run_examples()
    for name in ("Template", "Autoscaling"):
        assert structural_errors(schema_for(namespace[name])) == [], name


def test_builtin_type_models_upgrade_and_migration_examples_run() -> None:
    """The CronJob, models, breaking-change and migration examples run and hold."""
    namespace = run_examples()
    schema = schema_for(namespace["CronJob"])
    assert structural_errors(schema) == []
    job = schema["properties"]["spec"]["properties"]["jobTemplate"]
    assert "template" in job["properties"]["spec"]["properties"]
    assert callable(namespace["retire_v1alpha1"])
    assert namespace["change"].rule == "tightened"
