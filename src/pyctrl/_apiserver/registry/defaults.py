"""Defaults kube-apiserver fills into built-in objects on write.

kube-apiserver decodes every built-in object into its Go type and runs the generated
``SetDefaults_*`` functions (k8s.io/kubernetes/pkg/apis/*/v1/defaults.go), so a Deployment
created with only a selector and a template comes back with ``replicas: 1``, a RollingUpdate
strategy of 25%/25%, ``revisionHistoryLimit: 10``, ``progressDeadlineSeconds: 600``, and pod
templates whose containers have ``imagePullPolicy``, ``terminationMessagePath`` and friends.
Operators observe these values (and diff against them), so the embedded server applies
them: each kind's ``SetDefaults_<Kind>`` is ``set_defaults`` in its strategy's module
(``registry/<group>/<kind>``); this module holds what several kinds share (a pod spec and a
workload's pod template, webhook configurations, RBAC subjects). All functions work in
place on plain dicts.
"""

from __future__ import annotations

from typing import Any


def _image_pull_policy(image: str) -> str:
    ref = image.split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    if "@" in image:
        return "IfNotPresent"
    if ":" not in last or last.endswith(":latest"):
        return "Always"
    return "IfNotPresent"


def _container(c: dict[str, Any]) -> None:
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    if "image" in c:
        c.setdefault("imagePullPolicy", _image_pull_policy(str(c.get("image") or "")))
    c.setdefault("resources", {})
    for port in c.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for env in c.get("env") or []:
        field_ref = (env.get("valueFrom") or {}).get("fieldRef") if isinstance(env, dict) else None
        if isinstance(field_ref, dict):
            field_ref.setdefault("apiVersion", "v1")
    for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = c.get(probe_name)
        if isinstance(probe, dict):
            probe.setdefault("timeoutSeconds", 1)
            probe.setdefault("periodSeconds", 10)
            probe.setdefault("successThreshold", 1)
            probe.setdefault("failureThreshold", 3)
            http_get = probe.get("httpGet")
            if isinstance(http_get, dict):
                http_get.setdefault("path", "/")
                http_get.setdefault("scheme", "HTTP")


def _volume(v: dict[str, Any]) -> None:
    for source, mode_key in (
        ("secret", "defaultMode"),
        ("configMap", "defaultMode"),
        ("projected", "defaultMode"),
        ("downwardAPI", "defaultMode"),
    ):
        src = v.get(source)
        if isinstance(src, dict):
            src.setdefault(mode_key, 420)
    if set(v) <= {"name"}:
        v["emptyDir"] = {}


def pod_spec(spec: dict[str, Any]) -> None:
    """``SetDefaults_PodSpec`` and the container/volume defaults inside it."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                _container(c)
    for v in spec.get("volumes") or []:
        if isinstance(v, dict):
            _volume(v)


def template(obj: dict[str, Any]) -> None:
    """Defaults of ``spec.template.spec`` (a workload's pod template)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    template = spec.get("template")
    if isinstance(template, dict):
        tspec = template.get("spec")
        if isinstance(tspec, dict):
            pod_spec(tspec)


def webhook_config(obj: dict[str, Any], mutating: bool) -> None:
    """``SetDefaults_*WebhookConfiguration``: each webhook's policies and timeout."""
    for hook in obj.get("webhooks") or []:
        if not isinstance(hook, dict):
            continue
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        hook.setdefault("timeoutSeconds", 10)
        if mutating:
            hook.setdefault("reinvocationPolicy", "Never")
        svc = (hook.get("clientConfig") or {}).get("service")
        if isinstance(svc, dict):
            svc.setdefault("port", 443)
        for rule in hook.get("rules") or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")


def subjects(obj: dict[str, Any]) -> None:
    """``SetDefaults_RoleBinding``/``ClusterRoleBinding`` and ``SetDefaults_Subject``."""
    role_ref = obj.get("roleRef")
    if isinstance(role_ref, dict) and not role_ref.get("apiGroup"):
        role_ref["apiGroup"] = "rbac.authorization.k8s.io"
    for subject in obj.get("subjects") or []:
        if isinstance(subject, dict) and subject.get("kind") in ("User", "Group"):
            subject.setdefault("apiGroup", "rbac.authorization.k8s.io")
