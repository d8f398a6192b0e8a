"""Client wrappers: the interceptor client and the namespaced client, on the embedded server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from kubernetes_asyncio.client import V1ConfigMap, V1Namespace, V1ObjectMeta

from pyctrl.client import Client, InterceptorClient, InterceptorFuncs, MergeFrom, NamespacedClient
from pyctrl.errors import ConflictError, NotFoundError

from .conftest import Widget

if TYPE_CHECKING:
    from pyctrl.meta import GroupVersionKind


def cm(name: str, namespace: str | None = None, **data: str) -> V1ConfigMap:
    return V1ConfigMap(metadata=V1ObjectMeta(name=name, namespace=namespace), data=data or None)


async def test_an_interceptor_fails_one_call_and_passes_the_others_on(client: Client) -> None:
    """An update function that raises fails updates only; other calls reach the server."""

    async def conflict(_client: Client, obj: Any, **_: Any) -> Any:
        raise ConflictError(
            code=409, reason="Conflict", message=f"injected for {obj.metadata.name}"
        )

    wrapped = InterceptorClient(client, InterceptorFuncs(update=conflict))
    created = await wrapped.create(cm("target", "default", v="1"))
    created.data = {"v": "2"}
    with pytest.raises(ConflictError, match="injected for target"):
        await wrapped.update(created)
    stored = await wrapped.get(V1ConfigMap, "target", "default")
    assert stored.data == {"v": "1"}


async def test_an_interceptor_may_pass_the_call_on_and_change_its_result(client: Client) -> None:
    """An interceptor receives the wrapped client and the call's arguments, in order."""
    calls: list[tuple[str, str | None]] = []

    async def get(
        inner: Client,
        type_: type[Any],
        name: str,
        namespace: str | None,
        *,
        gvk: GroupVersionKind | None,
    ) -> Any:
        calls.append((name, namespace))
        obj = await inner.get(type_, name, namespace, gvk=gvk)
        obj.data = {"seen": "by interceptor"}
        return obj

    wrapped = InterceptorClient(client, InterceptorFuncs(get=get))
    await client.create(cm("one", "default"))
    got = await wrapped.get(V1ConfigMap, "one", "default")
    assert calls == [("one", "default")]
    assert got.data == {"seen": "by interceptor"}
    assert (await client.get(V1ConfigMap, "one", "default")).data is None


async def test_apply_goes_through_the_patch_interceptor_unless_apply_has_one(
    client: Client,
) -> None:
    """apply is a patch for the interceptor client, unless an apply function is given."""
    seen: list[str] = []

    async def patch(inner: Client, obj: Any, patch: Any, **options: Any) -> Any:
        seen.append(type(patch).__name__)
        return await inner.patch(obj, patch, **options)

    async def apply(inner: Client, obj: Any, **options: Any) -> Any:
        seen.append("apply")
        return await inner.apply(obj, **options)

    via_patch = InterceptorClient(client, InterceptorFuncs(patch=patch))
    await via_patch.apply(cm("applied", "default", k="v"), field_manager="test", force=True)
    via_apply = InterceptorClient(client, InterceptorFuncs(patch=patch, apply=apply))
    await via_apply.apply(cm("applied", "default", k="w"), field_manager="test", force=True)
    assert seen == ["Apply", "apply"]
    assert (await client.get(V1ConfigMap, "applied", "default")).data == {"k": "w"}


async def test_subresource_calls_go_through_subresource_functions(client: Client) -> None:
    """status().update and status().patch call the subresource functions with the name."""
    names: list[str] = []

    async def update(inner: Client, name: str, obj: Any, **options: Any) -> Any:
        names.append(name)
        return await inner.subresource(name).update(obj, **options)

    wrapped = InterceptorClient(client, InterceptorFuncs(subresource_update=update))
    widget = await client.create(Widget(metadata={"name": "w", "namespace": "default"}))
    widget.status.phase = "Ready"
    updated = await wrapped.status().update(widget)
    assert names == ["status"]
    assert updated.status.phase == "Ready"
    before = updated.model_copy(deep=True)
    updated.status.ready = 3
    patched = await wrapped.status().patch(updated, MergeFrom(before))
    assert patched.status.ready == 3
    assert names == ["status"]


def test_interceptor_funcs_must_be_callable(client: Client) -> None:
    """A non-callable function is refused, naming the field."""
    with pytest.raises(TypeError, match=r"InterceptorFuncs\.get"):
        InterceptorFuncs(get="nope")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="InterceptorFuncs"):
        InterceptorClient(client, {})  # type: ignore[arg-type]


async def test_a_namespaced_client_scopes_reads_and_writes(client: Client) -> None:
    """Objects without a namespace are written in the client's; reads and lists stay in it."""
    await client.create(V1Namespace(metadata=V1ObjectMeta(name="scoped")))
    await client.create(cm("elsewhere", "default"))
    scoped = NamespacedClient(client, "scoped")
    mine = cm("mine", v="1")
    created = await scoped.create(mine)
    assert created.metadata.namespace == "scoped"
    assert not mine.metadata.namespace  # the caller's object is left alone
    assert (await scoped.get(V1ConfigMap, "mine")).data == {"v": "1"}
    names = {c.metadata.name for c in await scoped.list(V1ConfigMap)}
    assert "mine" in names
    assert "elsewhere" not in names
    with pytest.raises(NotFoundError):
        await scoped.get(V1ConfigMap, "elsewhere")
    created.data = {"v": "2"}
    assert (await scoped.update(created)).data == {"v": "2"}
    await scoped.delete(cm("mine"))
    with pytest.raises(NotFoundError):
        await client.get(V1ConfigMap, "mine", "scoped")


async def test_a_namespaced_client_refuses_other_namespaces(client: Client) -> None:
    """A call naming another namespace raises ValueError instead of going there."""
    scoped = NamespacedClient(client, "scoped")
    with pytest.raises(ValueError, match="does not match the namespace 'scoped'"):
        await scoped.get(V1ConfigMap, "x", "default")
    with pytest.raises(ValueError, match="does not match"):
        await scoped.create(cm("x", "default"))
    with pytest.raises(ValueError, match="does not match"):
        await scoped.list(V1ConfigMap, namespace="default")
    with pytest.raises(ValueError, match="needs a namespace name"):
        NamespacedClient(client, "")


async def test_a_namespaced_client_passes_cluster_scoped_kinds_through(client: Client) -> None:
    """Cluster-scoped kinds are read and written as by the wrapped client."""
    scoped = NamespacedClient(client, "scoped")
    made = await scoped.create(V1Namespace(metadata=V1ObjectMeta(name="cluster-wide")))
    assert not made.metadata.namespace
    assert (await scoped.get(V1Namespace, "cluster-wide")).metadata.name == "cluster-wide"
