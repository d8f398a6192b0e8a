"""Built-in validation as kube-apiserver answers it: 422 Invalid with every cause, in its order.

Each expectation follows kube-apiserver's code (pkg/apis/core/validation: ValidateService,
ValidateServiceStatusUpdate, ValidateConfigMap, events.go; apimachinery's objectmeta.go;
rest.BeforeCreate and BeforeUpdate): the type's strategy validates first and reports every
invalid field at once; an update runs the common metadata checks and then the strategy's,
which repeat them; a status write checks the status only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.envtest.conformance.test_server_delete import wait_for, wait_gone
from tests.envtest.conftest import own, unique

if TYPE_CHECKING:
    from tests.envtest.conftest import Kube

# Built-in kinds: the CRD-only server has none.
pytestmark = pytest.mark.needs_builtin_kinds

_LABEL_KEY = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_CONFIG_KEY = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)
_NOT_STANDARD = "name is neither a standard finalizer name nor is it fully qualified"


def _causes(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["reason"], c.get("field", ""), c["message"]) for c in body["details"]["causes"]]


async def _invalid(kube: Kube, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    status, answer, _ = await kube.request(method, path, body=body)
    assert status == 422, answer
    assert answer["reason"] == "Invalid"
    assert isinstance(answer, dict)
    return answer


def _service(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


# --- metadata: every error at once ----------------------------------------------------------


async def test_object_without_name_reports_every_metadata_error(kube: Kube, ns: str) -> None:
    """A nameless ConfigMap with bad labels, owner references, finalizer and key: all reported."""
    body = {
        "metadata": {
            "labels": {"bad key!": "v"},
            "finalizers": ["my-finalizer"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "", "name": "", "uid": ""}],
        },
        "data": {"bad key": "x"},
    }
    answer = await _invalid(kube, "POST", f"/api/v1/namespaces/{ns}/configmaps", body)
    empty = 'Invalid value: "": must not be empty'
    assert _causes(answer) == [
        ("FieldValueRequired", "metadata.name", "Required value: name or generateName is required"),
        ("FieldValueInvalid", "metadata.labels", f'Invalid value: "bad key!": {_LABEL_KEY}'),
        ("FieldValueInvalid", "metadata.ownerReferences.kind", empty),
        ("FieldValueInvalid", "metadata.ownerReferences.name", empty),
        ("FieldValueInvalid", "metadata.ownerReferences.uid", empty),
        (
            "FieldValueInvalid",
            "metadata.finalizers[0]",
            f'Invalid value: "my-finalizer": {_NOT_STANDARD}',
        ),
        ("FieldValueInvalid", "data[bad key]", f'Invalid value: "bad key": {_CONFIG_KEY}'),
    ]
    assert answer["message"].startswith(
        'ConfigMap "" is invalid: [metadata.name: Required value: name or generateName is '
        "required, "
    )
    assert "name" not in answer["details"]


async def test_generated_name_is_checked_with_its_prefix(kube: Kube, ns: str) -> None:
    """An invalid generateName is reported, and so is the name generated from it."""
    body = {"metadata": {"generateName": "Bad_"}}
    answer = await _invalid(kube, "POST", f"/api/v1/namespaces/{ns}/configmaps", body)
    fields = [field for _, field, _ in _causes(answer)]
    assert fields == ["metadata.generateName", "metadata.name"]
    assert answer["details"]["name"].startswith("Bad_")


async def test_second_controller_reference_names_both(kube: Kube, ns: str) -> None:
    """Two controller owner references: one cause naming the first and the second by Kind/name."""
    refs = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": n, "uid": f"u-{n}", "controller": True}
        for n in ("a", "b")
    ]
    body = {"metadata": {"name": "owned", "ownerReferences": refs}}
    answer = await _invalid(kube, "POST", f"/api/v1/namespaces/{ns}/configmaps", body)
    ((reason, field, message),) = _causes(answer)
    assert (reason, field) == ("FieldValueInvalid", "metadata.ownerReferences")
    assert message.endswith(
        'Only one reference can have Controller set to true. Found "true" in references for '
        "ConfigMap/a and ConfigMap/b"
    )


async def test_update_while_deleting_reports_every_error_as_kube_repeats_them(
    kube: Kube, ns: str
) -> None:
    """Adding a finalizer while deleting plus a bad label: each check that sees them reports."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, {"metadata": {"name": "c", "finalizers": ["example.com/hold"]}})
    status, deleting, _ = await kube.delete(f"{path}/c")
    assert status == 200, deleting
    deleting["metadata"]["finalizers"] = ["example.com/hold", "example.com/other"]
    deleting["metadata"]["labels"] = {"bad key!": "v"}
    answer = await _invalid(kube, "PUT", f"{path}/c", deleting)
    label = ("FieldValueInvalid", "metadata.labels", f'Invalid value: "bad key!": {_LABEL_KEY}')
    finalizer = (
        "FieldValueForbidden",
        "metadata.finalizers",
        "Forbidden: no new finalizers can be added if the object is being deleted, found new "
        'finalizers []string{"example.com/other"}',
    )
    # rest.BeforeUpdate's create-time and update checks, then ValidateConfigMapUpdate's
    # ValidateObjectMetaUpdate and ValidateConfigMap.
    assert _causes(answer) == [label, finalizer, label, finalizer, label, label]
    assert answer["message"] == (
        f'ConfigMap "c" is invalid: [metadata.labels: {label[2]}, metadata.finalizers: '
        f"{finalizer[2]}]"
    )
    await kube.patch(f"{path}/c", {"metadata": {"finalizers": None}})


# --- Service --------------------------------------------------------------------------------


async def test_service_reports_every_invalid_port_field_at_once(kube: Kube, ns: str) -> None:
    """Names, numbers, protocols, target ports, node ports and duplicates: all in one answer."""
    body = _service(
        "s",
        sessionAffinity="Sticky",
        ports=[
            {"name": "http", "port": 80, "targetPort": 8080},
            {"port": 70000, "protocol": "HTTP", "targetPort": "Bad_Name"},
            {"name": "http", "port": 80, "nodePort": 30080},
        ],
    )
    answer = await _invalid(kube, "POST", f"/api/v1/namespaces/{ns}/services", body)
    assert _causes(answer) == [
        ("FieldValueRequired", "spec.ports[1].name", "Required value"),
        (
            "FieldValueInvalid",
            "spec.ports[1].port",
            "Invalid value: 70000: must be between 1 and 65535, inclusive",
        ),
        (
            "FieldValueNotSupported",
            "spec.ports[1].protocol",
            'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
        ),
        (
            "FieldValueInvalid",
            "spec.ports[1].targetPort",
            'Invalid value: "Bad_Name": must contain only alpha-numeric characters (a-z, 0-9), '
            "and hyphens (-)",
        ),
        ("FieldValueDuplicate", "spec.ports[2].name", 'Duplicate value: "http"'),
        (
            "FieldValueNotSupported",
            "spec.sessionAffinity",
            'Unsupported value: "Sticky": supported values: "ClientIP", "None"',
        ),
        (
            "FieldValueForbidden",
            "spec.ports[2].nodePort",
            "Forbidden: may not be used when `type` is 'ClusterIP'",
        ),
        (
            "FieldValueDuplicate",
            "spec.ports[2]",
            'Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,'
            '"TargetPort":0,"NodePort":0}',
        ),
    ]
    assert answer["message"].startswith(
        'Service "s" is invalid: [spec.ports[1].name: Required value, spec.ports[1].port: '
    )


async def test_service_type_and_external_name_rules(kube: Kube, ns: str) -> None:
    """An unknown type, and an ExternalName Service without a valid externalName, are refused."""
    path = f"/api/v1/namespaces/{ns}/services"
    answer = await _invalid(
        kube, "POST", path, _service("weird", type="Weird", ports=[{"port": 80}])
    )
    assert _causes(answer) == [
        (
            "FieldValueNotSupported",
            "spec.type",
            'Unsupported value: "Weird": supported values: "ClusterIP", "ExternalName", '
            '"LoadBalancer", "NodePort"',
        )
    ]
    answer = await _invalid(kube, "POST", path, _service("ext", type="ExternalName"))
    assert _causes(answer) == [("FieldValueRequired", "spec.externalName", "Required value")]
    body = _service("ext", type="ExternalName", externalName="Bad_Host.example.com.")
    answer = await _invalid(kube, "POST", path, body)
    ((reason, field, message),) = _causes(answer)
    assert (reason, field) == ("FieldValueInvalid", "spec.externalName")
    assert message.startswith(
        'Invalid value: "Bad_Host.example.com": a lowercase RFC 1123 subdomain'
    )
    created = await kube.create_ok(
        path, _service("ok", type="ExternalName", externalName="db.example.com.")
    )
    assert "clusterIP" not in created["spec"]


async def test_service_affinity_traffic_policies_and_source_ranges(kube: Kube, ns: str) -> None:
    """Session affinity timeout, traffic policies and source ranges are checked together."""
    body = _service(
        "s",
        ports=[{"port": 80}],
        sessionAffinity="ClientIP",
        sessionAffinityConfig={"clientIP": {"timeoutSeconds": 0}},
        externalTrafficPolicy="Local",
        internalTrafficPolicy="Nowhere",
        loadBalancerSourceRanges=["10.0.0.1/8"],
        selector={"app": "bad value!"},
    )
    answer = await _invalid(kube, "POST", f"/api/v1/namespaces/{ns}/services", body)
    causes = _causes(answer)
    assert [(r, f) for r, f, _ in causes] == [
        ("FieldValueInvalid", "spec.selector"),
        ("FieldValueInvalid", "spec.sessionAffinityConfig.clientIP.timeoutSeconds"),
        ("FieldValueForbidden", "spec.LoadBalancerSourceRanges"),
        ("FieldValueInvalid", "spec.LoadBalancerSourceRanges[0]"),
        ("FieldValueInvalid", "spec.externalTrafficPolicy"),
        ("FieldValueNotSupported", "spec.internalTrafficPolicy"),
    ]
    assert [m for _, _, m in causes[1:]] == [
        "Invalid value: 0: must be greater than 0 and less than 86400",
        "Forbidden: may only be used when `type` is 'LoadBalancer'",
        'Invalid value: "10.0.0.1/8": must not have bits set beyond the prefix length',
        'Invalid value: "Local": may only be set for externally-accessible services',
        'Unsupported value: "Nowhere": supported values: "Cluster", "Local"',
    ]


async def test_service_defaults_drop_the_affinity_config_of_none(kube: Kube, ns: str) -> None:
    """A sessionAffinityConfig with affinity None is dropped by defaulting, not refused."""
    body = _service(
        "s", ports=[{"port": 80}], sessionAffinityConfig={"clientIP": {"timeoutSeconds": 60}}
    )
    created = await kube.create_ok(f"/api/v1/namespaces/{ns}/services", body)
    assert created["spec"]["sessionAffinity"] == "None"
    assert "sessionAffinityConfig" not in created["spec"]


async def test_node_port_outside_the_range_is_refused_by_the_allocator(kube: Kube, ns: str) -> None:
    """An unallocatable node port or cluster IP is the only error, before the rest's."""
    body = _service(
        "np",
        type="NodePort",
        sessionAffinity="Sticky",
        ports=[{"name": "a", "port": 80}, {"name": "b", "port": 81, "nodePort": 80}],
    )
    path = f"/api/v1/namespaces/{ns}/services"
    answer = await _invalid(kube, "POST", path, body)
    assert _causes(answer) == [
        (
            "FieldValueInvalid",
            "spec.ports[1].nodePort",
            "Invalid value: 80: provided port is not in the valid range. The range of valid "
            "ports is 30000-32767",
        )
    ]
    body = _service("far", clusterIP="192.168.0.10", sessionAffinity="Sticky", ports=[{"port": 80}])
    answer = await _invalid(kube, "POST", path, body)
    assert answer["message"] == (
        'Service "far" is invalid: spec.clusterIPs: Invalid value: ["192.168.0.10"]: failed to '
        "allocate IP 192.168.0.10: the provided IP (192.168.0.10) is not in the valid range. The "
        "range of valid IPs is 10.0.0.0/16"
    )


async def test_local_load_balancer_gets_a_health_check_node_port(kube: Kube, ns: str) -> None:
    """A LoadBalancer with externalTrafficPolicy Local is given a health-check node port."""
    body = _service("lb", type="LoadBalancer", externalTrafficPolicy="Local", ports=[{"port": 80}])
    created = await kube.create_ok(f"/api/v1/namespaces/{ns}/services", body)
    health = created["spec"]["healthCheckNodePort"]
    assert 30000 <= health <= 32767
    assert health != created["spec"]["ports"][0]["nodePort"]


async def test_load_balancer_without_node_port_allocation_gets_none(kube: Kube, ns: str) -> None:
    """allocateLoadBalancerNodePorts false: only the node ports asked for are allocated."""
    body = _service(
        "lb",
        type="LoadBalancer",
        allocateLoadBalancerNodePorts=False,
        ports=[{"name": "a", "port": 80}, {"name": "b", "port": 81, "nodePort": 30581}],
    )
    created = await kube.create_ok(f"/api/v1/namespaces/{ns}/services", body)
    assert [p.get("nodePort") for p in created["spec"]["ports"]] == [None, 30581]


async def test_invalid_cluster_ip_is_answered_by_the_allocator_alone(kube: Kube, ns: str) -> None:
    """kube-apiserver pre-validates cluster IPs while allocating, before the rest: one cause."""
    body = _service("s", clusterIP="10.0.0.300", ports=[{"port": 70000}])
    answer = await _invalid(kube, "POST", f"/api/v1/namespaces/{ns}/services", body)
    assert answer["message"] == (
        'Service "s" is invalid: spec.clusterIPs[0]: Invalid value: "10.0.0.300": must be a '
        "valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
    )
    body = _service("s", clusterIP="10.0.0.30", clusterIPs=["10.0.0.31"], ports=[{"port": 80}])
    answer = await _invalid(kube, "POST", f"/api/v1/namespaces/{ns}/services", body)
    assert _causes(answer) == [
        (
            "FieldValueInvalid",
            "spec.clusterIPs",
            'Invalid value: ["10.0.0.31"]: first value must match `clusterIP`',
        )
    ]


async def test_service_cluster_ip_may_not_change(kube: Kube, ns: str) -> None:
    """Changing the allocated clusterIP is refused, naming the new clusterIPs."""
    path = f"/api/v1/namespaces/{ns}/services"
    created = await kube.create_ok(path, _service("s", ports=[{"port": 80}]))
    ip = created["spec"]["clusterIP"]
    other = ip.rsplit(".", 1)[0] + (".9" if not ip.endswith(".9") else ".8")
    created["spec"]["clusterIP"] = other
    answer = await _invalid(kube, "PUT", f"{path}/s", created)
    assert _causes(answer) == [
        (
            "FieldValueInvalid",
            "spec.clusterIPs[0]",
            f'Invalid value: ["{other}"]: may not change once set',
        )
    ]


async def test_changing_the_type_drops_what_the_new_type_does_not_use(kube: Kube, ns: str) -> None:
    """A full PUT changing the type wipes the unchanged node ports, cluster IPs and families."""
    path = f"/api/v1/namespaces/{ns}/services"
    created = await kube.create_ok(path, _service("s", type="NodePort", ports=[{"port": 80}]))
    assert created["spec"]["ports"][0]["nodePort"]
    created["spec"]["type"] = "ClusterIP"
    status, cluster, _ = await kube.put(f"{path}/s", created)
    assert status == 200, cluster
    assert "nodePort" not in cluster["spec"]["ports"][0]
    assert "externalTrafficPolicy" not in cluster["spec"]
    cluster["spec"].update(type="ExternalName", externalName="db.example.com")
    status, external, _ = await kube.put(f"{path}/s", cluster)
    assert status == 200, external
    for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        assert key not in external["spec"], key


async def test_status_refuses_load_balancer_ingress_of_a_cluster_ip_service(
    kube: Kube, ns: str
) -> None:
    """/status with a load-balancer ingress on a ClusterIP Service is Forbidden."""
    path = f"/api/v1/namespaces/{ns}/services"
    created = await kube.create_ok(path, _service("s", ports=[{"port": 80}]))
    created["status"] = {"loadBalancer": {"ingress": [{"ip": "203.0.113.10"}]}}
    answer = await _invalid(kube, "PUT", f"{path}/s/status", created)
    assert answer["message"] == (
        'Service "s" is invalid: status.loadBalancer.ingress: Forbidden: may only be used when '
        "`spec.type` is 'LoadBalancer'"
    )
    assert _causes(answer) == [
        (
            "FieldValueForbidden",
            "status.loadBalancer.ingress",
            "Forbidden: may only be used when `spec.type` is 'LoadBalancer'",
        )
    ]


async def test_status_checks_load_balancer_ingress_addresses(kube: Kube, ns: str) -> None:
    """Ingress IPs must be IPs, hostnames DNS names, ipMode VIP or Proxy (defaulted to VIP)."""
    path = f"/api/v1/namespaces/{ns}/services"
    created = await kube.create_ok(path, _service("lb", type="LoadBalancer", ports=[{"port": 80}]))
    created["status"] = {
        "loadBalancer": {
            "ingress": [
                {"ip": "1.2.3"},
                {"hostname": "1.2.3.4"},
                {"ip": "203.0.113.10", "ipMode": "Magic"},
            ]
        }
    }
    answer = await _invalid(kube, "PUT", f"{path}/lb/status", created)
    assert _causes(answer) == [
        (
            "FieldValueInvalid",
            "status.loadBalancer.ingress[0].ip",
            'Invalid value: "1.2.3": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
        ),
        (
            "FieldValueInvalid",
            "status.loadBalancer.ingress[1].hostname",
            'Invalid value: "1.2.3.4": must be a DNS name, not an IP address',
        ),
        (
            "FieldValueNotSupported",
            "status.loadBalancer.ingress[2].ipMode",
            'Unsupported value: "Magic": supported values: "Proxy", "VIP"',
        ),
    ]
    created["status"] = {"loadBalancer": {"ingress": [{"ip": "203.0.113.10"}]}}
    status, updated, _ = await kube.put(f"{path}/lb/status", created)
    assert status == 200, updated
    assert updated["status"]["loadBalancer"]["ingress"] == [{"ip": "203.0.113.10", "ipMode": "VIP"}]


# --- Events ---------------------------------------------------------------------------------


def _core_event(name: str, ns: str, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name},
        "involvedObject": {"kind": "ConfigMap", "name": "cm", "namespace": ns},
        **fields,
    }


def _events_v1(name: str, ns: str, **fields: Any) -> dict[str, Any]:
    body = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name},
        "eventTime": "2026-01-02T03:04:05.678901Z",
        "reportingController": "example.com/ctl",
        "reportingInstance": "ctl-1",
        "action": "Reconcile",
        "reason": "Synced",
        "regarding": {"kind": "ConfigMap", "name": "cm", "namespace": ns},
        "note": "synced",
        "type": "Normal",
    }
    body.update(fields)
    return body


async def test_core_event_namespace_must_match_its_involved_object(kube: Kube, ns: str) -> None:
    """A core Event about an object of another namespace is refused."""
    body = _core_event("e", ns, reason="Test")
    body["involvedObject"]["namespace"] = "other"
    answer = await _invalid(kube, "POST", f"/api/v1/namespaces/{ns}/events", body)
    assert answer["message"] == (
        'Event "e" is invalid: involvedObject.namespace: Invalid value: "other": does not match '
        "event.namespace"
    )


async def test_new_style_core_event_needs_its_reporting_fields(kube: Kube, ns: str) -> None:
    """A core Event with eventTime needs reportingController, reportingInstance, action, reason."""
    body = _core_event("e", ns, eventTime="2026-01-02T03:04:05.000000Z")
    answer = await _invalid(kube, "POST", f"/api/v1/namespaces/{ns}/events", body)
    assert [(r, f) for r, f, _ in _causes(answer)] == [
        ("FieldValueRequired", "reportingController"),
        ("FieldValueInvalid", "reportingController"),
        ("FieldValueInvalid", "reportingController"),
        ("FieldValueRequired", "reportingInstance"),
        ("FieldValueRequired", "action"),
        ("FieldValueRequired", "reason"),
    ]
    assert _causes(answer)[1][2] == 'Invalid value: "": name part must be non-empty'


async def test_events_k8s_io_event_is_validated_strictly(kube: Kube, ns: str) -> None:
    """Through events.k8s.io/v1: eventTime required, a known type, deprecated fields unset."""
    body = _events_v1("e", ns, type="Info", deprecatedCount=3)
    del body["eventTime"]
    answer = await _invalid(kube, "POST", f"/apis/events.k8s.io/v1/namespaces/{ns}/events", body)
    assert answer["message"].startswith('Event "e" is invalid: [eventTime: Required value, ')
    assert _causes(answer) == [
        ("FieldValueRequired", "eventTime", "Required value"),
        ("FieldValueInvalid", "type", 'Invalid value: "": has invalid value: Info'),
        ("FieldValueInvalid", "count", 'Invalid value: "": needs to be unset'),
    ]


async def test_events_k8s_io_update_keeps_the_event_immutable(kube: Kube, ns: str) -> None:
    """An events.k8s.io/v1 update may extend the series but not change the note."""
    path = f"/apis/events.k8s.io/v1/namespaces/{ns}/events"
    created = await kube.create_ok(path, _events_v1("e", ns))
    created["note"] = "changed"
    created["series"] = {"count": 1, "lastObservedTime": "2026-01-02T03:05:00.000000Z"}
    answer = await _invalid(kube, "PUT", f"{path}/e", created)
    assert _causes(answer) == [
        ("FieldValueInvalid", "series.count", 'Invalid value: "": should be at least 2'),
        ("FieldValueInvalid", "message", 'Invalid value: "changed": field is immutable'),
    ]
    created["note"] = "synced"
    created["series"]["count"] = 2
    status, updated, _ = await kube.put(f"{path}/e", created)
    assert status == 200, updated
    assert updated["series"] == {"count": 2, "lastObservedTime": "2026-01-02T03:05:00.000000Z"}


async def test_core_event_read_through_events_k8s_io_carries_every_field(
    kube: Kube, ns: str
) -> None:
    """Every core Event field appears, renamed, in the events.k8s.io/v1 view (Go's encoding)."""
    body = _core_event(
        "e",
        ns,
        reason="Pulled",
        message="pulled the image",
        source={"component": "kubelet", "host": "node-1"},
        firstTimestamp="2026-01-02T03:04:05Z",
        lastTimestamp="2026-01-02T03:09:05Z",
        count=4,
        type="Normal",
        action="Pull",
        related={"kind": "Pod", "name": "p", "namespace": ns},
        reportingComponent="kubelet",
        reportingInstance="node-1",
    )
    await kube.create_ok(f"/api/v1/namespaces/{ns}/events", body)
    view = await kube.get_ok(f"/apis/events.k8s.io/v1/namespaces/{ns}/events/e")
    view.pop("metadata")
    assert view == {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "eventTime": None,
        "reportingController": "kubelet",
        "reportingInstance": "node-1",
        "action": "Pull",
        "reason": "Pulled",
        "regarding": {"kind": "ConfigMap", "name": "cm", "namespace": ns},
        "related": {"kind": "Pod", "name": "p", "namespace": ns},
        "note": "pulled the image",
        "type": "Normal",
        "deprecatedSource": {"component": "kubelet", "host": "node-1"},
        "deprecatedFirstTimestamp": "2026-01-02T03:04:05Z",
        "deprecatedLastTimestamp": "2026-01-02T03:09:05Z",
        "deprecatedCount": 4,
    }
    assert list(view) == [
        "kind",
        "apiVersion",
        "eventTime",
        "reportingController",
        "reportingInstance",
        "action",
        "reason",
        "regarding",
        "related",
        "note",
        "type",
        "deprecatedSource",
        "deprecatedFirstTimestamp",
        "deprecatedLastTimestamp",
        "deprecatedCount",
    ]


async def test_events_k8s_io_event_read_through_core_carries_every_field(
    kube: Kube, ns: str
) -> None:
    """An events.k8s.io/v1 Event reads back in core/v1 and events.k8s.io/v1 as Go encodes them."""
    series = {"count": 2, "lastObservedTime": "2026-01-02T03:05:00.000000Z"}
    body = _events_v1("e", ns, series=series)
    created = await kube.create_ok(f"/apis/events.k8s.io/v1/namespaces/{ns}/events", body)
    created.pop("metadata")
    assert created == {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "eventTime": "2026-01-02T03:04:05.678901Z",
        "series": series,
        "reportingController": "example.com/ctl",
        "reportingInstance": "ctl-1",
        "action": "Reconcile",
        "reason": "Synced",
        "regarding": {"kind": "ConfigMap", "name": "cm", "namespace": ns},
        "note": "synced",
        "type": "Normal",
        "deprecatedSource": {},
        "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None,
    }
    core = await kube.get_ok(f"/api/v1/namespaces/{ns}/events/e")
    core.pop("metadata")
    assert core == {
        "kind": "Event",
        "apiVersion": "v1",
        "involvedObject": {"kind": "ConfigMap", "name": "cm", "namespace": ns},
        "reason": "Synced",
        "message": "synced",
        "source": {},
        "firstTimestamp": None,
        "lastTimestamp": None,
        "type": "Normal",
        "eventTime": "2026-01-02T03:04:05.678901Z",
        "series": series,
        "action": "Reconcile",
        "reportingComponent": "example.com/ctl",
        "reportingInstance": "ctl-1",
    }


# --- Namespaces -----------------------------------------------------------------------------


async def test_namespace_always_gets_the_kubernetes_finalizer(kube: Kube) -> None:
    """With no spec.finalizers, or others only, the strategy adds ``kubernetes``."""
    names = [unique("ns-a-"), unique("ns-b-")]
    try:
        bare = await kube.create_ok("/api/v1/namespaces", {"metadata": {"name": names[0]}})
        assert bare["spec"] == {"finalizers": ["kubernetes"]}
        assert bare["status"] == {"phase": "Active"}
        other = await kube.create_ok(
            "/api/v1/namespaces",
            {"metadata": {"name": names[1]}, "spec": {"finalizers": ["example.com/x"]}},
        )
        assert other["spec"] == {"finalizers": ["example.com/x", "kubernetes"]}
    finally:
        for name in names:
            await kube.delete(f"/api/v1/namespaces/{name}")
            status, namespace, _ = await kube.get(f"/api/v1/namespaces/{name}")
            if status == 200 and "example.com/x" in namespace["spec"].get("finalizers", []):
                namespace["spec"]["finalizers"] = []
                await kube.put(f"/api/v1/namespaces/{name}/finalize", namespace)


def _conditions(obj: dict[str, Any] | None) -> dict[str, str]:
    assert obj is not None, "deleted"
    return {c["type"]: c["status"] for c in obj.get("status", {}).get("conditions") or ()}


@pytest.mark.needs_controllers
async def test_terminating_namespace_keeps_its_objects_readable_and_deletable(
    kube: Kube, ns: str
) -> None:
    """A namespace whose content a finalizer holds stays Terminating; its objects stay usable.

    It refuses creates; its objects stay readable and deletable; once the finalizer goes, so
    does the namespace.
    """
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, {"metadata": {"name": "held", "finalizers": ["example.com/x"]}})
    await kube.create_ok(path, {"metadata": {"name": "plain"}})
    status, deleting, _ = await kube.delete(f"/api/v1/namespaces/{ns}")
    assert status == 200, deleting
    assert deleting["metadata"]["deletionTimestamp"]
    assert deleting["spec"] == {"finalizers": ["kubernetes"]}
    assert deleting["status"]["phase"] == "Terminating"
    await wait_for(
        kube,
        f"/api/v1/namespaces/{ns}",
        lambda obj: _conditions(obj).get("NamespaceFinalizersRemaining") == "True",
    )
    namespace = await kube.get_ok(f"/api/v1/namespaces/{ns}")
    assert namespace["status"]["phase"] == "Terminating"
    assert _conditions(namespace) == {
        "NamespaceDeletionDiscoveryFailure": "False",
        "NamespaceDeletionGroupVersionParsingFailure": "False",
        "NamespaceDeletionContentFailure": "False",
        "NamespaceContentRemaining": "True",
        "NamespaceFinalizersRemaining": "True",
    }
    await wait_gone(kube, f"{path}/plain")
    held = await kube.get_ok(f"{path}/held")
    assert held["metadata"]["deletionTimestamp"]
    listed = await kube.get_ok(path)
    assert own(item["metadata"]["name"] for item in listed["items"]) == ["held"]
    status, refused, _ = await kube.post(path, {"metadata": {"name": "new"}})
    assert status == 403, refused
    assert refused["reason"] == "Forbidden"
    assert refused["details"]["causes"] == [
        {
            "reason": "NamespaceTerminating",
            "message": f"namespace {ns} is being terminated",
            "field": "metadata.namespace",
        }
    ]
    status, again, _ = await kube.delete(f"{path}/held")
    assert status == 200, again
    status, patched, _ = await kube.patch(f"{path}/held", {"metadata": {"finalizers": None}})
    assert status == 200, patched
    await wait_gone(kube, f"/api/v1/namespaces/{ns}")
