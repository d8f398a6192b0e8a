"""The embedded server's authentication and authorization: tokens, RBAC, the review APIs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import pytest
from kubernetes_asyncio.client import Configuration

from pyctrl.client import RESTClient
from pyctrl.envtest import Environment, EnvtestError
from pyctrl.errors import ForbiddenError, InvalidError, UnauthorizedError
from tests.kubectl import Kubectl

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

# TokenReview, SubjectAccessReview and RBAC are kube-apiserver's own APIs: the CRD-only
# server has none.
pytestmark = pytest.mark.needs_builtin_kinds

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SARS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
SELF_SARS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


@pytest.fixture
async def env() -> AsyncIterator[Environment]:
    async with Environment() as environment:
        yield environment


def _as(env: Environment, token: str) -> RESTClient:
    config = Configuration(host=env.config.host)
    config.ssl_ca_cert = env.config.ssl_ca_cert
    config.api_key = {"BearerToken": f"Bearer {token}"}
    return RESTClient(config)


async def _post(rest: RESTClient, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    response = await rest.request("POST", path, body=orjson.dumps(body))
    return response.status, response.json()


async def _apply(rest: RESTClient, path: str, obj: dict[str, Any]) -> None:
    await rest.request("POST", path, body=orjson.dumps(obj))


def _metrics_reader(subject: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            {
                "metadata": {"name": "metrics-reader"},
                "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
            },
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            {
                "metadata": {"name": "read-metrics"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "metrics-reader",
                },
                "subjects": [subject],
            },
        ),
    ]


async def test_a_token_review_names_the_user_of_a_token(env: Environment) -> None:
    """TokenReview answers 201 with the user and groups of a known token."""
    token = env.add_user("alice", ["devs"])
    async with RESTClient(env.config) as rest:
        status, review = await _post(
            rest,
            TOKEN_REVIEWS,
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "spec": {"token": token},
            },
        )
    assert status == 201
    assert review["kind"] == "TokenReview"
    assert review["status"]["authenticated"] is True
    assert review["status"]["user"] == {
        "username": "alice",
        "groups": ["devs", "system:authenticated"],
    }
    assert review["status"]["audiences"] == ["https://kubernetes.default.svc.cluster.local"]


async def test_an_unknown_token_is_not_authenticated(env: Environment) -> None:
    """An unknown token gets a review without authenticated and with an empty user."""
    async with RESTClient(env.config) as rest:
        _, review = await _post(rest, TOKEN_REVIEWS, {"spec": {"token": "nope"}})
        assert review["status"] == {"user": {}}
        with pytest.raises(Exception, match="token is required for TokenReview"):
            await _post(rest, TOKEN_REVIEWS, {"spec": {}})


async def test_rbac_decides_a_subject_access_review(env: Environment) -> None:
    """A SubjectAccessReview is allowed only through a binding, and says which one."""
    question = {
        "spec": {"user": "scraper", "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}
    }
    async with RESTClient(env.config) as rest:
        _, before = await _post(rest, SARS, question)
        assert before["status"] == {"allowed": False}
        for path, obj in _metrics_reader(
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "scraper"}
        ):
            await _apply(rest, path, obj)
        status, after = await _post(rest, SARS, question)
        _, other_path = await _post(
            rest,
            SARS,
            {
                "spec": {
                    "user": "scraper",
                    "nonResourceAttributes": {"path": "/debug", "verb": "get"},
                }
            },
        )
    assert status == 201
    assert after["status"] == {
        "allowed": True,
        "reason": 'RBAC: allowed by ClusterRoleBinding "read-metrics" of ClusterRole '
        '"metrics-reader" to User "scraper"',
    }
    assert other_path["status"]["allowed"] is False


async def test_role_bindings_grant_only_in_their_namespace(env: Environment) -> None:
    """A RoleBinding's rules apply in its namespace; resource names and sub-resources count."""
    async with RESTClient(env.config) as rest:
        await _apply(
            rest,
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
            {
                "metadata": {"name": "pod-status"},
                "rules": [{"apiGroups": [""], "resources": ["pods/status"], "verbs": ["get"]}],
            },
        )
        await _apply(
            rest,
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
            {
                "metadata": {"name": "bob-pods"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": "pod-status",
                },
                "subjects": [{"kind": "User", "name": "bob"}],
            },
        )

        async def allowed(namespace: str, subresource: str) -> bool:
            attrs = {
                "namespace": namespace,
                "verb": "get",
                "resource": "pods",
                "subresource": subresource,
            }
            _, answer = await _post(
                rest, SARS, {"spec": {"user": "bob", "resourceAttributes": attrs}}
            )
            return bool(answer["status"]["allowed"])

        assert await allowed("default", "status")
        assert not await allowed("default", "")
        assert not await allowed("kube-system", "status")


async def test_a_malformed_subject_access_review_is_invalid(env: Environment) -> None:
    """No user nor group, and both or neither attribute kinds, are refused with 422."""
    async with RESTClient(env.config) as rest:
        with pytest.raises(InvalidError) as caught:
            await _post(rest, SARS, {"spec": {}})
    message = str(caught.value)
    assert "exactly one of nonResourceAttributes or resourceAttributes must be specified" in message
    assert (
        'spec.user: Invalid value: "": at least one of user or group must be specified' in message
    )


async def test_a_user_token_is_authorized_by_rbac(env: Environment) -> None:
    """A user token reads discovery, is refused the rest with kube's message, then allowed."""
    token = env.add_user("carol")
    async with _as(env, token) as carol, RESTClient(env.config) as admin:
        assert (await carol.request("GET", "/apis")).status == 200
        with pytest.raises(ForbiddenError) as caught:
            await carol.request("GET", "/api/v1/namespaces/default/configmaps")
        assert (
            'configmaps is forbidden: User "carol" cannot list resource "configmaps" in API '
            'group "" in the namespace "default"'
        ) in str(caught.value)
        _, mine = await _post(
            carol,
            SELF_SARS,
            {
                "spec": {
                    "resourceAttributes": {
                        "verb": "list",
                        "resource": "configmaps",
                        "namespace": "default",
                    }
                }
            },
        )
        assert mine["status"]["allowed"] is False
        await _apply(
            admin,
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            {
                "metadata": {"name": "cm-reader"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}],
            },
        )
        await _apply(
            admin,
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            {
                "metadata": {"name": "carol-cm"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "cm-reader",
                },
                "subjects": [{"kind": "User", "name": "carol"}],
            },
        )
        assert (await carol.request("GET", "/api/v1/namespaces/default/configmaps")).status == 200
    async with _as(env, "wrong") as stranger:
        with pytest.raises(UnauthorizedError):
            await stranger.request("GET", "/apis")


async def test_service_account_tokens_from_kubectl_create_token(
    env: Environment, tmp_path: Path
) -> None:
    """`kubectl create token` gives a token that is the ServiceAccount until it is deleted."""
    kubectl = Kubectl(env.kubeconfig_path, tmp_path / "cache", "default")
    await kubectl("create", "serviceaccount", "prometheus")
    token = (await kubectl("create", "token", "prometheus")).out.strip()
    async with RESTClient(env.config) as rest:
        _, review = await _post(rest, TOKEN_REVIEWS, {"spec": {"token": token}})
        assert review["status"]["user"]["username"] == "system:serviceaccount:default:prometheus"
        assert "system:serviceaccounts:default" in review["status"]["user"]["groups"]
        await kubectl("delete", "serviceaccount", "prometheus")
        _, gone = await _post(rest, TOKEN_REVIEWS, {"spec": {"token": token}})
    assert gone["status"] == {"user": {}}


async def test_kubectl_auth_can_i_answers_from_rbac(env: Environment, tmp_path: Path) -> None:
    """kubectl auth can-i with a user's token gets RBAC's answer, before and after a binding."""
    kubectl = Kubectl(env.kubeconfig_path, tmp_path / "cache", "default")
    token = env.add_user("dave")
    before = await kubectl(f"--token={token}", "auth", "can-i", "get", "/metrics", check=False)
    assert (before.code, before.out.strip()) == (1, "no")
    async with RESTClient(env.config) as rest:
        for path, obj in _metrics_reader({"kind": "User", "name": "dave"}):
            await _apply(rest, path, obj)
    after = await kubectl(f"--token={token}", "auth", "can-i", "get", "/metrics")
    assert after.out.strip() == "yes"
    refused = await kubectl(f"--token={token}", "get", "pods", check=False)
    assert 'User "dave" cannot list resource "pods" in API group "" in the namespace' in refused.err


def test_add_user_needs_a_started_embedded_server() -> None:
    """add_user before start is refused with the reason."""
    with pytest.raises(EnvtestError, match="needs the started embedded API server"):
        Environment().add_user("x")
