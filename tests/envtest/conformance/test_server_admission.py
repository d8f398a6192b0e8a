"""The admission seam: mutating then validating hooks on the write path."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from pyctrl._apiserver.apimachinery.errors import forbidden

if TYPE_CHECKING:
    from pyctrl._apiserver.admission.interfaces import AdmissionRequest
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl.envtest import Environment
    from tests.envtest.conftest import Kube

# The seam is the embedded server's own; a cluster has webhooks (test_webhooks.py) instead.
pytestmark = pytest.mark.embedded_only


class Recorder:
    """A hook that labels objects on mutation and refuses a forbidden name on validation."""

    def __init__(self, *, handles: bool = True) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self.users: list[tuple[str, tuple[str, ...]]] = []
        self.handled = handles

    def handles(self, rt: ResourceType, *, mutating: bool) -> bool:
        del mutating
        return self.handled and rt.plural == "configmaps"

    async def mutate(self, request: AdmissionRequest) -> dict[str, Any] | None:
        self.calls.append(("mutate", request.operation, request.name))
        self.users.append((request.user.name, request.user.groups))
        assert request.obj is not None
        obj = dict(request.obj)
        obj["metadata"] = dict(obj["metadata"], labels={"mutated": "yes"})
        return obj

    async def validate(self, request: AdmissionRequest) -> None:
        self.calls.append(("validate", request.operation, request.name))
        self.users.append((request.user.name, request.user.groups))
        if request.name == "denied":
            raise forbidden("", "configmaps", request.name, "denied by test hook")


async def test_hooks_run_mutate_then_validate(env: Environment, kube: Kube, ns: str) -> None:
    """Mutations are stored; validation sees the final object; both run once per create."""
    hook = Recorder()
    assert env.server is not None
    env.server.admission.append(hook)
    obj = await kube.create_ok(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "a"}})
    assert obj["metadata"]["labels"] == {"mutated": "yes"}
    assert hook.calls == [("mutate", "CREATE", "a"), ("validate", "CREATE", "a")]


async def test_a_hook_is_called_only_for_what_it_handles(
    env: Environment, kube: Kube, ns: str
) -> None:
    """A hook that handles no write of a kind is not called for it; nothing else changes."""
    assert env.server is not None
    idle, configmaps_only = Recorder(handles=False), Recorder()
    env.server.admission.extend([idle, configmaps_only])
    obj = await kube.create_ok(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "i"}})
    assert obj["metadata"]["labels"] == {"mutated": "yes"}
    await kube.create_ok(f"/api/v1/namespaces/{ns}/secrets", {"metadata": {"name": "s"}})
    assert idle.calls == []
    assert configmaps_only.calls == [("mutate", "CREATE", "i"), ("validate", "CREATE", "i")]


async def test_admission_sees_the_user_who_sent_the_request(
    env: Environment, kube: Kube, ns: str
) -> None:
    """Each request's hooks see its own authenticated user, on writes and deletes."""
    assert env.server is not None
    hook = Recorder()
    env.server.admission.append(hook)
    token = env.add_user("alice", ["system:masters"])
    as_alice = {"Authorization": f"Bearer {token}"}
    path = f"/api/v1/namespaces/{ns}/configmaps"
    status, _, _ = await kube.post(path, {"metadata": {"name": "u"}}, headers=as_alice)
    assert status == 201
    await kube.create_ok(path, {"metadata": {"name": "v"}})
    status, _, _ = await kube.delete(f"{path}/u", headers=as_alice)
    assert status == 200
    alice = ("alice", ("system:masters", "system:authenticated"))
    admin = ("admin", ("system:masters", "system:authenticated"))
    assert hook.users == [alice, alice, admin, admin, alice]


async def test_validating_hook_can_deny(env: Environment, kube: Kube, ns: str) -> None:
    """A StatusError raised by a validating hook is the response; nothing is stored."""
    assert env.server is not None
    env.server.admission.append(Recorder())
    path = f"/api/v1/namespaces/{ns}/configmaps"
    status, body, _ = await kube.post(path, {"metadata": {"name": "denied"}})
    assert status == 403
    assert body["message"] == 'configmaps "denied" is forbidden: denied by test hook'
    status, _, _ = await kube.get(f"{path}/denied")
    assert status == 404


async def test_delete_goes_through_validation(env: Environment, kube: Kube, ns: str) -> None:
    """DELETE requests reach validating admission with the stored object as old."""
    hook = Recorder()
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, {"metadata": {"name": "d"}})
    assert env.server is not None
    env.server.admission.append(hook)
    status, _, _ = await kube.delete(f"{path}/d")
    assert status == 200
    assert hook.calls == [("validate", "DELETE", "d")]
