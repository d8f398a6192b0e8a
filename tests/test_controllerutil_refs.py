"""get_controller_of and get_reference: owner references as kubebuilder's CronJob needs them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta

from pyctrl.controllerutil import get_controller_of, get_reference, set_owner_reference
from pyctrl.errors import SchemeError
from pyctrl.meta import ObjectReference, OwnerReference
from pyctrl.resource import Unstructured

DOCS = Path(__file__).parents[1] / "docs"


def _owner(name: str) -> V1ConfigMap:
    return V1ConfigMap(metadata=V1ObjectMeta(name=name, namespace="ns", uid=f"uid-{name}"))


def test_get_controller_of_finds_the_controller_among_owners() -> None:
    """Plain owners are passed over; the one marked controller is returned, typed."""
    child = Unstructured(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "child",
                "namespace": "ns",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "ua"},
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                     "uid": "uw", "controller": True, "blockOwnerDeletion": True},
                ],
            },
        }
    )  # fmt: skip
    assert get_controller_of(child) == OwnerReference(
        api_version="apps/v1",
        kind="Deployment",
        name="web",
        uid="uw",
        controller=True,
        block_owner_deletion=True,
    )


def test_get_controller_of_is_none_without_a_controller() -> None:
    """No owners, or owners none of which is the controller: None."""
    child = V1ConfigMap(metadata=V1ObjectMeta(name="child", namespace="ns"))
    assert get_controller_of(child) is None
    set_owner_reference(_owner("a"), child)
    assert get_controller_of(child) is None


def test_get_reference_names_the_object_at_its_version() -> None:
    """Kind from the type, every metadata field set, empty ones left out of the wire form."""
    cm = V1ConfigMap(
        metadata=V1ObjectMeta(name="c", namespace="ns", uid="u1", resource_version="42")
    )
    assert get_reference(cm) == ObjectReference(
        api_version="v1", kind="ConfigMap", namespace="ns", name="c", uid="u1",
        resource_version="42",
    )  # fmt: skip
    cluster_scoped = Unstructured(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}
    )
    assert get_reference(cluster_scoped).to_dict() == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "name": "x",
    }


def test_get_reference_of_an_unknown_type_is_a_scheme_error() -> None:
    """A type the scheme cannot name has no reference."""

    class Stranger:
        metadata: dict[str, Any] = {"name": "s"}  # noqa: RUF012

    with pytest.raises(SchemeError):
        get_reference(Stranger())


def test_the_controllerutil_page_snippet_runs() -> None:
    """docs/controllerutil.md's CronJob snippet, executed as written."""
    page = (DOCS / "controllerutil.md").read_text()
    section = page[page.index("### Who controls this object") :]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    exec(
        compile(code[1], "docs/controllerutil.md", "exec", dont_inherit=True),
        {"__name__": "snippet"},
    )
