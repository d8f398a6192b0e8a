"""Authorization: RBAC, and the SubjectAccessReview API (``authorization.k8s.io/v1``).

kube-apiserver authorizes every authenticated request: members of ``system:masters`` may
do anything; everyone else needs an RBAC rule (plugin/pkg/auth/authorizer/rbac). A rule
comes from a ClusterRole bound by a ClusterRoleBinding (anywhere), or from a Role or
ClusterRole bound by a RoleBinding (in that namespace only). Resource rules match on
verbs, API groups, resources (``pods``, ``pods/status``, ``*/status``, ``*``) and
resource names; non-resource rules match on verbs and URL paths (``/metrics``, a
trailing ``*`` as a prefix). Aggregated ClusterRoles (``aggregationRule``) are not
computed here: only their stored ``rules`` count.

``POST /apis/authorization.k8s.io/v1/subjectaccessreviews`` asks the same question for
any user (``SelfSubjectAccessReview`` for the caller): the answer is the review with
``status.allowed`` and, when allowed, RBAC's ``reason``
(pkg/registry/authorization/subjectaccessreview). A request the authorizer refuses gets
403 with kube-apiserver's message (``User "bob" cannot list resource "pods" in API group
"" in the namespace "default"``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyctrl._apiextensions.cel.authz import Decision, PathCheck, ResourceCheck
from pyctrl._apimachinery.field import field_invalid
from pyctrl._apiserver.apimachinery.errors import StatusError, invalid
from pyctrl._apiserver.user import AUTHENTICATED, User

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl._apiserver.storage.store import Store

__all__ = [
    "BOOTSTRAP_POLICY",
    "Attributes",
    "Authorizer",
    "cel_authorize",
    "forbidden_error",
    "request_attributes",
    "subject_access_review",
]

_RBAC = "rbac.authorization.k8s.io"
_BOOTSTRAP_META = {
    "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
    "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
}


def _bootstrap_role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"metadata": {"name": name, **_BOOTSTRAP_META}, "rules": rules}


def _bootstrap_binding(name: str, group: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, **_BOOTSTRAP_META},
        "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": _RBAC, "kind": "Group", "name": group}],
    }


BOOTSTRAP_POLICY: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "clusterroles",
        _bootstrap_role(
            "cluster-admin",
            [
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]},
            ],
        ),
    ),
    (
        "clusterroles",
        _bootstrap_role(
            "system:discovery",
            [
                {
                    "nonResourceURLs": [
                        "/api",
                        "/api/*",
                        "/apis",
                        "/apis/*",
                        "/healthz",
                        "/livez",
                        "/openapi",
                        "/openapi/*",
                        "/readyz",
                        "/version",
                        "/version/",
                    ],
                    "verbs": ["get"],
                }
            ],
        ),
    ),
    (
        "clusterroles",
        _bootstrap_role(
            "system:basic-user",
            [
                {
                    "apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    "verbs": ["create"],
                },
                {
                    "apiGroups": ["authentication.k8s.io"],
                    "resources": ["selfsubjectreviews"],
                    "verbs": ["create"],
                },
            ],
        ),
    ),
    ("clusterrolebindings", _bootstrap_binding("system:discovery", "system:authenticated")),
    ("clusterrolebindings", _bootstrap_binding("system:basic-user", "system:authenticated")),
)
"""kube-apiserver's bootstrap RBAC policy, as far as the embedded server needs it."""
_CLUSTER_ROLES = (_RBAC, "clusterroles")
_CLUSTER_ROLE_BINDINGS = (_RBAC, "clusterrolebindings")
_ROLES = (_RBAC, "roles")
_ROLE_BINDINGS = (_RBAC, "rolebindings")


@dataclass(frozen=True)
class Attributes:
    """``authorizer.Attributes``: who asks to do what to which resource or path."""

    user: User
    verb: str
    resource_request: bool
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""


def _has(values: Any, wanted: str) -> bool:
    return isinstance(values, list) and ("*" in values or wanted in values)


def _resource_matches(rule: dict[str, Any], attrs: Attributes) -> bool:
    """``rbac.ResourceMatches``: ``*``, the combined resource, or ``*/<subresource>``."""
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    for entry in rule.get("resources") or []:
        if entry in ("*", combined):
            return True
        if attrs.subresource and entry == f"*/{attrs.subresource}":
            return True
    return False


def _rule_allows(rule: dict[str, Any], attrs: Attributes) -> bool:
    """``rbac.RuleAllows``."""
    if not _has(rule.get("verbs"), attrs.verb):
        return False
    if not attrs.resource_request:
        urls = rule.get("nonResourceURLs")
        if not isinstance(urls, list):
            return False
        return any(
            u in ("*", attrs.path) or (u.endswith("*") and attrs.path.startswith(u[:-1]))
            for u in urls
            if isinstance(u, str)
        )
    if not _has(rule.get("apiGroups"), attrs.group) or not _resource_matches(rule, attrs):
        return False
    names = rule.get("resourceNames")
    return not names or (isinstance(names, list) and attrs.name in names)


def _subject_matches(subject: Any, user: User, binding_namespace: str) -> bool:
    """``appliesToUser``."""
    if not isinstance(subject, dict):
        return False
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return bool(name == user.name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return user.name == f"system:serviceaccount:{namespace}:{name}"
    return False


class Authorizer:
    """RBAC over the objects in a `Store`, plus ``system:masters``.

    Args:
        store: Where Roles, ClusterRoles and their bindings are read on each call.
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    def _role_rules(self, ref: Any, namespace: str) -> list[dict[str, Any]]:
        if not isinstance(ref, dict):
            return []
        name = str(ref.get("name") or "")
        if ref.get("kind") == "ClusterRole":
            role = self.store.get(_CLUSTER_ROLES, "", name)
        elif ref.get("kind") == "Role" and namespace:
            role = self.store.get(_ROLES, namespace, name)
        else:
            return []
        rules = (role or {}).get("rules")
        return [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else []

    def authorize(self, attrs: Attributes) -> tuple[bool, str]:
        """Whether ``attrs`` are allowed, and RBAC's reason when they are."""
        user = attrs.user
        if user.privileged:
            return True, ""
        for binding in self.store.items(_CLUSTER_ROLE_BINDINGS, None):
            if not any(_subject_matches(s, user, "") for s in binding.get("subjects") or []):
                continue
            ref = binding.get("roleRef") or {}
            if any(_rule_allows(r, attrs) for r in self._role_rules(ref, "")):
                return True, _reason("ClusterRoleBinding", binding, "", ref, user)
        if attrs.resource_request and attrs.namespace:
            for binding in self.store.items(_ROLE_BINDINGS, attrs.namespace):
                namespace = attrs.namespace
                if not any(
                    _subject_matches(s, user, namespace) for s in binding.get("subjects") or []
                ):
                    continue
                ref = binding.get("roleRef") or {}
                if any(_rule_allows(r, attrs) for r in self._role_rules(ref, namespace)):
                    return True, _reason("RoleBinding", binding, namespace, ref, user)
        return False, ""


def _reason(kind: str, binding: dict[str, Any], namespace: str, ref: Any, user: User) -> str:
    """RBAC's ``allowed by ...`` reason (``ruleAccumulator`` with the binding's description)."""
    name = (binding.get("metadata") or {}).get("name", "")
    where = f'{kind} "{name}"' + (f' of {ref.get("kind")} "{ref.get("name")}"' if ref else "")
    if namespace:
        where = f'{kind} "{name}/{namespace}"' + (
            f' of {ref.get("kind")} "{ref.get("name")}"' if ref else ""
        )
    return f"RBAC: allowed by {where} to {_describe_subject(user)}"


def _describe_subject(user: User) -> str:
    prefix = "system:serviceaccount:"
    if user.name.startswith(prefix):
        namespace, _, name = user.name[len(prefix) :].partition(":")
        return f'ServiceAccount "{name}/{namespace}"'
    return f'User "{user.name}"'


def forbidden_error(attrs: Attributes) -> StatusError:
    """kube-apiserver's 403 for a refused request (``responsewriters.Forbidden``)."""
    user = attrs.user.name
    if not attrs.resource_request:
        message = f'forbidden: User "{user}" cannot {attrs.verb} path "{attrs.path}"'
        return StatusError(403, "Forbidden", message)
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    scope = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    detail = (
        f'User "{user}" cannot {attrs.verb} resource "{combined}" in API group '
        f'"{attrs.group}" {scope}'
    )
    target = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
    head = f'{target} "{attrs.name}"' if attrs.name else target
    return StatusError(
        403,
        "Forbidden",
        f"{head} is forbidden: {detail}",
        name=attrs.name,
        group=attrs.group,
        kind=attrs.resource,
    )


def _review_attributes(spec: dict[str, Any], user: User) -> Attributes:
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        return Attributes(
            user=user,
            verb=str(resource.get("verb") or ""),
            resource_request=True,
            group=str(resource.get("group") or ""),
            version=str(resource.get("version") or ""),
            resource=str(resource.get("resource") or ""),
            subresource=str(resource.get("subresource") or ""),
            namespace=str(resource.get("namespace") or ""),
            name=str(resource.get("name") or ""),
        )
    nonresource = spec.get("nonResourceAttributes") or {}
    return Attributes(
        user=user,
        verb=str(nonresource.get("verb") or ""),
        resource_request=False,
        path=str(nonresource.get("path") or ""),
    )


def subject_access_review(
    authorizer: Authorizer, body: dict[str, Any], caller: User | None = None
) -> dict[str, Any]:
    """Answer a SubjectAccessReview (or, with ``caller``, a SelfSubjectAccessReview).

    Raises:
        StatusError: 422 when the spec does not say exactly one of resource and
            non-resource attributes, or (SubjectAccessReview) names no user nor group.
    """
    kind = "SelfSubjectAccessReview" if caller is not None else "SubjectAccessReview"
    spec = body.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    causes = []
    has_resource = isinstance(spec.get("resourceAttributes"), dict)
    has_nonresource = isinstance(spec.get("nonResourceAttributes"), dict)
    if has_resource == has_nonresource:
        where = "spec.resourceAttributes" if not has_resource else "spec.nonResourceAttributes"
        causes.append(
            field_invalid(
                where,
                None,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    if caller is None:
        groups = spec.get("groups") if isinstance(spec.get("groups"), list) else []
        user_name = spec.get("user") if isinstance(spec.get("user"), str) else ""
        if not user_name and not groups:
            causes.append(
                field_invalid("spec.user", "", "at least one of user or group must be specified")
            )
        extra = spec.get("extra") if isinstance(spec.get("extra"), dict) else {}
        subject = User(
            str(user_name),
            tuple(str(g) for g in groups or []),
            uid=str(spec.get("uid") or ""),
            extra={
                str(k): [str(x) for x in v] for k, v in (extra or {}).items() if isinstance(v, list)
            },
        )
    else:
        subject = caller
    if causes:
        raise invalid("authorization.k8s.io", kind, "", causes)
    allowed, reason = authorizer.authorize(_review_attributes(spec, subject))
    status: dict[str, Any] = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    if caller is not None:
        spec = {
            k: v for k, v in spec.items() if k in ("resourceAttributes", "nonResourceAttributes")
        }
    metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    return {
        "kind": kind,
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {**(metadata or {}), "creationTimestamp": None},
        "spec": spec,
        "status": status,
    }


_NON_RESOURCE_VERBS = {
    "GET": "get",
    "HEAD": "head",
    "POST": "post",
    "PUT": "put",
    "PATCH": "patch",
    "DELETE": "delete",
}
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


def request_attributes(method: str, path: str, watch: bool, user: User) -> Attributes:
    """``RequestInfoFactory.NewRequestInfo``: the attributes of an HTTP request."""
    parts = [p for p in path.split("/") if p]
    non_resource = Attributes(
        user=user,
        verb=_NON_RESOURCE_VERBS.get(method, method.lower()),
        resource_request=False,
        path=path,
    )
    if not parts or parts[0] not in ("api", "apis"):
        return non_resource
    if parts[0] == "api":
        if len(parts) < 3:
            return non_resource
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) < 4:
            return non_resource
        group, version, rest = parts[1], parts[2], parts[3:]
    if rest[0] == "watch":
        watch, rest = True, rest[1:]
    namespace = ""
    if rest and rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if resource == "namespaces" and name:
        namespace = name
    verb = {
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete" if name else "deletecollection",
    }.get(method, "get" if name else "list")
    if watch and verb in ("get", "list"):
        verb = "watch"
    return Attributes(
        user=user,
        verb=verb,
        resource_request=True,
        group=group,
        version=version,
        resource=resource,
        subresource=subresource,
        namespace=namespace,
        name=name,
    )


def cel_authorize(authz: Authorizer) -> Callable[[Any, str, ResourceCheck | PathCheck], Decision]:
    """The CEL ``authorizer`` library's answers, from ``authz`` (admission policies).

    The user is the request's `User` or a service account's name
    (``authorizer.serviceAccount(ns, name)``).
    """

    def authorize(user: Any, verb: str, check: ResourceCheck | PathCheck) -> Decision:
        if isinstance(user, User):
            who = user
        else:
            who = User(str(user), ("system:serviceaccounts", AUTHENTICATED))
        if isinstance(check, PathCheck):
            attrs = Attributes(who, verb, resource_request=False, path=check.path)
        else:
            attrs = Attributes(
                who,
                verb,
                resource_request=True,
                group=check.group,
                resource=check.resource,
                subresource=check.subresource,
                namespace=check.namespace,
                name=check.name,
            )
        allowed, reason = authz.authorize(attrs)
        return Decision(allowed, reason)

    return authorize
