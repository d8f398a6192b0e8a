"""pyctrl.resource: typed custom resources and unstructured objects."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import Field, ValidationError

from pyctrl.meta import Condition, GroupVersionKind, KubeModel, ObjectMeta
from pyctrl.resource import (
    CustomResource,
    PrinterColumn,
    ScaleSubresource,
    Unstructured,
    pluralize,
)


class MySrvSpec(KubeModel):
    name: str
    port: Annotated[int, Field(ge=1, le=65535)] = 80


class MySrvStatus(KubeModel):
    conditions: list[Condition] = Field(default_factory=list)
    available_replicas: int = 0


class MySrv(
    CustomResource,
    group="myapp.example.com",
    version="v1alpha1",
    short_names=("ms",),
    printer_columns=(PrinterColumn("Port", ".spec.port", "integer"),),
):
    spec: MySrvSpec
    status: MySrvStatus = Field(default_factory=MySrvStatus)


class Policy(CustomResource, group="example.com", version="v1", scope="Cluster"):
    spec: dict[str, str] = Field(default_factory=dict)


def test_class_keywords_declare_the_identity() -> None:
    """Kind, plural, singular, list kind and status subresource default like kubebuilder's."""
    info = MySrv.resource_info()
    assert info.gvk == GroupVersionKind("myapp.example.com", "v1alpha1", "MySrv")
    assert (info.plural, info.singular, info.list_kind) == ("mysrvs", "mysrv", "MySrvList")
    assert info.short_names == ("ms",)
    assert info.status_subresource
    assert info.crd_name == "mysrvs.myapp.example.com"
    assert not Policy.resource_info().status_subresource
    assert not Policy.resource_info().namespaced


def test_type_fields_are_filled_and_serialised_in_camel_case() -> None:
    """The type fields are filled in and every field goes out camelCase."""
    obj = MySrv(metadata=ObjectMeta(name="a", namespace="ns"), spec=MySrvSpec(name="web"))
    assert obj.to_dict() == {
        "apiVersion": "myapp.example.com/v1alpha1",
        "kind": "MySrv",
        "metadata": {"name": "a", "namespace": "ns"},
        "spec": {"name": "web", "port": 80},
        "status": {"conditions": [], "availableReplicas": 0},
    }


def test_unknown_fields_survive_a_round_trip() -> None:
    """Fields the Python type does not declare are kept, so writing back loses nothing."""
    wire = {
        "apiVersion": "myapp.example.com/v1alpha1",
        "kind": "MySrv",
        "metadata": {"name": "a"},
        "spec": {"name": "web", "port": 81, "addedInV2": [1, 2]},
        "status": {"conditions": [], "availableReplicas": 1},
    }
    assert MySrv.from_dict(wire).to_dict() == wire


def test_mismatched_kind_is_refused_with_both_names() -> None:
    """Decoding another kind into the class fails with a message naming both types."""
    with pytest.raises(ValidationError, match=r"object is v1, Kind=ConfigMap but MySrv is"):
        MySrv.from_dict({"apiVersion": "v1", "kind": "ConfigMap", "spec": {"name": "x"}})


def test_field_constraints_are_enforced_in_python() -> None:
    """Constraints declared on fields reject bad values before they reach the server."""
    with pytest.raises(ValidationError, match="less than or equal to 65535"):
        MySrvSpec(name="x", port=70000)


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"group": "example.com"}, "both group= and version= are required"),
        ({"group": "nodot", "version": "v1"}, "must be a domain name"),
        ({"group": "example.com", "version": "1.0"}, "must look like v1"),
        ({"group": "example.com", "version": "v1", "plural": "Bad_Name"}, "lowercase DNS label"),
    ],
)
def test_bad_declarations_are_refused(keywords: dict[str, str], message: str) -> None:
    """Declaring a type with bad keywords fails at class creation with a clear message."""
    with pytest.raises(TypeError, match=message):
        type("Bad", (CustomResource,), {"__annotations__": {}}, **keywords)


def test_abstract_base_has_no_identity() -> None:
    """An intermediate base class without keywords refuses to report an identity."""

    class Base(CustomResource):
        pass

    with pytest.raises(TypeError, match="declares no group and version"):
        Base.resource_info()


def test_scale_subresource_is_recorded() -> None:
    """A scale subresource declaration is kept in the resource info."""

    class Scalable(CustomResource, group="example.com", version="v1", scale=ScaleSubresource()):
        spec: dict[str, int] = Field(default_factory=dict)

    assert Scalable.resource_info().scale == ScaleSubresource(".spec.replicas", ".status.replicas")


@pytest.mark.parametrize(
    ("kind", "plural"),
    [
        ("MySrv", "mysrvs"),
        ("Policy", "policies"),
        ("Gateway", "gateways"),
        ("Ingress", "ingresses"),
        ("Box", "boxes"),
        ("Status", "status"),
    ],
)
def test_pluralize(kind: str, plural: str) -> None:
    """Plurals follow English rules as kubebuilder applies them."""
    assert pluralize(kind) == plural


def test_unstructured_accessors_and_nested_paths() -> None:
    """Unstructured reads and writes common fields and nested paths in place."""
    obj = Unstructured.new(GroupVersionKind("apps", "v1", "Deployment"), "web", "ns")
    obj.labels["app"] = "web"
    obj.set_nested(3, "spec", "replicas")
    assert obj.get_nested("spec", "replicas") == 3
    assert obj.get_nested("spec", "missing", default="d") == "d"
    obj.remove_nested("spec", "replicas")
    assert obj.get_nested("spec") == {}
    assert (obj.name, obj.namespace, obj.kind) == ("web", "ns", "Deployment")
    assert obj.gvk == GroupVersionKind("apps", "v1", "Deployment")
    assert obj.to_dict()["metadata"]["labels"] == {"app": "web"}
    assert obj.generation == 0
    assert obj.deletion_timestamp is None


def test_unstructured_copies_on_the_way_in_and_out() -> None:
    """from_dict and to_dict copy, so the wrapped object shares nothing with callers."""
    source = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {}}
    obj = Unstructured.from_dict(source)
    obj.object["data"]["k"] = "v"
    assert source["data"] == {}
    out = obj.to_dict()
    out["data"]["k"] = "changed"
    assert obj.object["data"]["k"] == "v"


def _forms() -> list[object]:
    from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta

    wire = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "generation": 2},
    }
    return [
        wire,
        Unstructured.from_dict(wire),
        V1ConfigMap(metadata=V1ObjectMeta(name="a", namespace="ns", uid="u1", generation=2)),
        MySrv(
            metadata=ObjectMeta(name="a", namespace="ns", uid="u1", generation=2),
            spec=MySrvSpec(name="x"),
        ),
    ]


@pytest.mark.parametrize("obj", _forms(), ids=["dict", "unstructured", "model", "custom"])
def test_accessor_reads_and_writes_every_object_form(obj: object) -> None:
    """accessor() gives the same view of metadata for dicts, models and custom resources."""
    from pyctrl.resource import OwnerRef, accessor

    meta = accessor(obj)
    assert (meta.name, meta.namespace, meta.uid, meta.generation) == ("a", "ns", "u1", 2)
    assert meta.finalizers == []
    meta.finalizers = ["x/f"]
    meta.labels = {"app": "a"}
    meta.annotations = {"note": "n"}
    owner = OwnerRef("apps/v1", "Deployment", "d", "u2", controller=True)
    meta.owner_references = [owner]
    again = accessor(obj)
    assert again.finalizers == ["x/f"]
    assert again.labels == {"app": "a"}
    assert again.annotations == {"note": "n"}
    assert again.owner_references == [owner]
    assert again.owner_references[0].group == "apps"
    again.finalizers = []
    assert accessor(obj).finalizers == []


def test_accessor_copies_lists_on_read() -> None:
    """Mutating a list read through the accessor does not change the object."""
    from pyctrl.resource import accessor

    obj = {"metadata": {"finalizers": ["a"]}}
    accessor(obj).finalizers.append("b")
    assert obj["metadata"]["finalizers"] == ["a"]


def test_accessor_refuses_non_objects() -> None:
    """An object without metadata is refused with its type named."""
    from pyctrl.resource import accessor

    with pytest.raises(TypeError, match="int is not a Kubernetes object"):
        accessor(3)
