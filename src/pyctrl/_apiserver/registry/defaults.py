"""Defaults kube-apiserver fills into built-in objects on write.

kube-apiserver decodes every built-in object into its Go type and runs the generated
``SetDefaults_*`` functions (k8s.io/kubernetes/pkg/apis/*/v1/defaults.go), so a Deployment
created with only a selector and a template comes back with ``replicas: 1``, a RollingUpdate
strategy of 25%/25%, ``revisionHistoryLimit: 10``, ``progressDeadlineSeconds: 600``, and pod
templates whose containers have ``imagePullPolicy``, ``terminationMessagePath`` and friends.
Operators observe these values (and diff against them), so the embedded server applies the
ones this module lists, each called by its kind's strategy (``registry/<group>/<kind>``).
All functions work in place on plain dicts.
"""

from __future__ import annotations

import base64
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


def _template(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    template = spec.get("template")
    if isinstance(template, dict):
        tspec = template.get("spec")
        if isinstance(tspec, dict):
            pod_spec(tspec)


def _pod_qos(spec: dict[str, Any]) -> str:
    requests_seen = limits_seen = False
    guaranteed = True
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            requests_seen = requests_seen or bool(req)
            limits_seen = limits_seen or bool(lim)
        for r in ("cpu", "memory"):
            if r not in lim or (r in req and req[r] != lim[r]):
                guaranteed = False
    if not requests_seen and not limits_seen:
        return "BestEffort"
    return "Guaranteed" if guaranteed and limits_seen else "Burstable"


def pod(obj: dict[str, Any]) -> None:
    """``SetDefaults_Pod``."""
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict):
        pod_spec(spec)
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        spec.setdefault("priority", 0)
        spec.setdefault(
            "tolerations",
            [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
        )
        for c in spec.get("containers") or []:
            res = c.get("resources")
            if isinstance(res, dict) and res.get("limits") and not res.get("requests"):
                res["requests"] = dict(res["limits"])


def pod_initial_status(obj: dict[str, Any]) -> dict[str, Any]:
    """The status a new pod gets (``Pending`` with its QoS class)."""
    return {"phase": "Pending", "qosClass": _pod_qos(obj.get("spec") or {})}


def deployment(obj: dict[str, Any]) -> None:
    """``SetDefaults_Deployment`` (apps/v1)."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        ru = strategy.setdefault("rollingUpdate", {})
        ru.setdefault("maxUnavailable", "25%")
        ru.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    _template(obj)


def replicaset(obj: dict[str, Any]) -> None:
    """``SetDefaults_ReplicaSet``."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    _template(obj)


def replicationcontroller(obj: dict[str, Any]) -> None:
    """``SetDefaults_ReplicationController``: selector and labels from the template."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    labels = (spec.get("template") or {}).get("metadata", {}).get("labels") or {}
    if labels:
        spec.setdefault("selector", dict(labels))
        obj.setdefault("metadata", {}).setdefault("labels", dict(labels))
    _template(obj)


def statefulset(obj: dict[str, Any]) -> None:
    """``SetDefaults_StatefulSet``."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = spec.setdefault("updateStrategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        strategy.setdefault("rollingUpdate", {}).setdefault("partition", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault(
        "persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"}
    )
    for claim in spec.get("volumeClaimTemplates") or []:
        if isinstance(claim, dict):
            claim.setdefault("apiVersion", "v1")
            claim.setdefault("kind", "PersistentVolumeClaim")
            claim.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")
            claim.setdefault("status", {"phase": "Pending"})
    _template(obj)


def daemonset(obj: dict[str, Any]) -> None:
    """``SetDefaults_DaemonSet``."""
    spec = obj.setdefault("spec", {})
    strategy = spec.setdefault("updateStrategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        ru = strategy.setdefault("rollingUpdate", {})
        ru.setdefault("maxUnavailable", 1)
        ru.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    _template(obj)


def job(obj: dict[str, Any]) -> None:
    """``SetDefaults_Job`` (the generated selector is added by the job strategy)."""
    spec = obj.setdefault("spec", {})
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimitPerIndex") is not None:
        spec.setdefault("backoffLimit", 2147483647)
    spec.setdefault("backoffLimit", 6)
    _labels_from_template(obj)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    policy = spec.get("podFailurePolicy")
    if isinstance(policy, dict):
        for rule in policy.get("rules") or []:
            for pattern in (rule or {}).get("onPodConditions") or []:
                if isinstance(pattern, dict):
                    pattern.setdefault("status", "True")
    spec.setdefault(
        "podReplacementPolicy", "Failed" if policy is not None else "TerminatingOrFailed"
    )
    if spec.get("manualSelector") is None:
        spec["manualSelector"] = False
    _template(obj)


def _labels_from_template(obj: dict[str, Any]) -> None:
    """A Job without labels takes its pod template's labels."""
    template = (obj.get("spec") or {}).get("template")
    template_meta = template.get("metadata") if isinstance(template, dict) else None
    labels = template_meta.get("labels") if isinstance(template_meta, dict) else None
    meta = obj.setdefault("metadata", {})
    if isinstance(labels, dict) and not meta.get("labels"):
        meta["labels"] = dict(labels)


def job_selector(obj: dict[str, Any], uid: str) -> None:
    """The job strategy's generated selector and template labels (unless manualSelector)."""
    spec = obj.setdefault("spec", {})
    if spec.get("manualSelector"):
        return
    meta = obj.setdefault("metadata", {})
    name = meta.get("name", "")
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    template = spec.setdefault("template", {})
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    # Labels the Job took from its template are the same Go map in kube-apiserver, so they
    # get the generated labels too; a Job read back without labels takes them all as well.
    shared = not meta.get("labels") or meta.get("labels") == labels
    labels.setdefault("batch.kubernetes.io/controller-uid", uid)
    labels.setdefault("batch.kubernetes.io/job-name", name)
    labels.setdefault("controller-uid", uid)
    labels.setdefault("job-name", name)
    if shared:
        meta["labels"] = dict(labels)


def cronjob(obj: dict[str, Any]) -> None:
    """``SetDefaults_CronJob``."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    tmpl = (spec.get("jobTemplate") or {}).get("spec")
    if isinstance(tmpl, dict):
        template = tmpl.get("template")
        if isinstance(template, dict) and isinstance(template.get("spec"), dict):
            pod_spec(template["spec"])


def secret(obj: dict[str, Any]) -> None:
    """Secret type ``Opaque`` by default; ``stringData`` merged into ``data`` (base64)."""
    obj.setdefault("type", "Opaque")
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj.get("data")
        if not isinstance(data, dict):
            data = {}
        for k, v in string_data.items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        obj["data"] = data


def namespace(obj: dict[str, Any]) -> None:
    """Namespaces get the ``kubernetes`` finalizer and their ``metadata.name`` label."""
    spec = obj.setdefault("spec", {})
    finalizers = spec.get("finalizers") if isinstance(spec.get("finalizers"), list) else []
    if "kubernetes" not in finalizers:
        # The strategy's PrepareForCreate: the kubernetes finalizer is always there at first.
        spec["finalizers"] = [*finalizers, "kubernetes"]
    meta = obj.setdefault("metadata", {})
    name = meta.get("name")
    if name:
        labels = meta.get("labels")
        if not isinstance(labels, dict):
            labels = {}
            meta["labels"] = labels
        labels["kubernetes.io/metadata.name"] = name


def crd(obj: dict[str, Any]) -> None:
    """``SetDefaults_CustomResourceDefinition``."""
    spec = obj.setdefault("spec", {})
    names = spec.setdefault("names", {})
    kind = names.get("kind")
    if kind:
        names.setdefault("singular", str(kind).lower())
        names.setdefault("listKind", f"{kind}List")
    conversion = spec.setdefault("conversion", {})
    conversion.setdefault("strategy", "None")
    webhook = conversion.get("webhook")
    if isinstance(webhook, dict):
        svc = (webhook.get("clientConfig") or {}).get("service")
        if isinstance(svc, dict):
            svc.setdefault("port", 443)


def _webhook_config(obj: dict[str, Any], mutating: bool) -> None:
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


def mutating_webhooks(obj: dict[str, Any]) -> None:
    """``SetDefaults_MutatingWebhook``."""
    _webhook_config(obj, True)


def validating_webhooks(obj: dict[str, Any]) -> None:
    """``SetDefaults_ValidatingWebhook``."""
    _webhook_config(obj, False)


def subjects(obj: dict[str, Any]) -> None:
    """``SetDefaults_RoleBinding``/``ClusterRoleBinding`` and ``SetDefaults_Subject``."""
    role_ref = obj.get("roleRef")
    if isinstance(role_ref, dict) and not role_ref.get("apiGroup"):
        role_ref["apiGroup"] = "rbac.authorization.k8s.io"
    for subject in obj.get("subjects") or []:
        if isinstance(subject, dict) and subject.get("kind") in ("User", "Group"):
            subject.setdefault("apiGroup", "rbac.authorization.k8s.io")


def network_policy(obj: dict[str, Any]) -> None:
    """``SetDefaults_NetworkPolicy``: policyTypes and port protocols."""
    spec = obj.setdefault("spec", {})
    if not spec.get("policyTypes"):
        types = ["Ingress"]
        if spec.get("egress"):
            types.append("Egress")
        spec["policyTypes"] = types
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            for port in (rule or {}).get("ports") or []:
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")


def pod_template(obj: dict[str, Any]) -> None:
    """Defaults of a PodTemplate's pod spec."""
    template = obj.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        pod_spec(template["spec"])


def pvc(obj: dict[str, Any]) -> None:
    """``SetDefaults_PersistentVolumeClaim``."""
    obj.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")
