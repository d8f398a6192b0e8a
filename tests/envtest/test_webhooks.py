"""Admission webhooks through the embedded API server, as kube-apiserver calls them."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest
from aiohttp import web

from pyctrl._apiserver.admission.interfaces import AdmissionRequest
from pyctrl._apiserver.admission.plugin.webhook.dispatcher import WebhookDispatcher
from pyctrl._apiserver.options import install
from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.resource import CustomResource
from pyctrl.webhook import (
    ClientConfig,
    Server,
    register_defaulter,
    register_validator,
    webhook_configurations,
)

from .test_webhooks_support import (
    GROUP,
    Certs,
    Gadget,
    GadgetChecks,
    GadgetDefaults,
    Rest,
    allow,
    configuration,
    dead_url,
    gadget,
    gadgets,
    hook,
    json_patch,
    make_certs,
    rule,
    running,
    scripted_webhook,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

VALIDATING = "ValidatingWebhookConfiguration"
MUTATING = "MutatingWebhookConfiguration"
DENIED = 'admission webhook "vgadget-v1.hooks.pyctrl.dev" denied the request'


class ToolV1(CustomResource, group=GROUP, version="v1", kind="Tool"):
    pass


class ToolV1beta1(CustomResource, group=GROUP, version="v1beta1", kind="Tool", storage=False):
    pass


@pytest.fixture
async def env() -> AsyncIterator[Environment]:
    async with Environment(crds=[crd_for(Gadget), crd_for(ToolV1, ToolV1beta1)]) as environment:
        assert environment.server is not None
        install(environment.server)
        yield environment


@pytest.fixture
async def rest(env: Environment) -> AsyncIterator[Rest]:
    async with aiohttp.ClientSession() as session:
        yield Rest(env, session)


@pytest.fixture
def certs(tmp_path: Path) -> Certs:
    return make_certs(tmp_path / "certs")


@pytest.fixture
async def checks(certs: Certs, rest: Rest) -> AsyncIterator[GadgetChecks]:
    """pyctrl's webhook server defaulting and validating gadgets, configured in the server."""
    server = Server(host="127.0.0.1", port=0, cert_dir=certs.directory)
    validator = GadgetChecks()
    register_defaulter(server, Gadget, GadgetDefaults())
    register_validator(server, Gadget, validator)
    async with running(server) as url:
        client = ClientConfig(url=url, ca_bundle=certs.ca.cert_pem)
        await rest.install(*webhook_configurations(server, client))
        yield validator


async def _namespace(rest: Rest, name: str, labels: dict[str, str] | None = None) -> None:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    await rest.ok("POST", "/api/v1/namespaces", {"metadata": meta})


# --- defaulting ---------------------------------------------------------------------------------


@pytest.mark.usefixtures("checks")
async def test_create_is_defaulted_by_the_mutating_webhook(rest: Rest) -> None:
    """A created object comes back (and is stored) with the webhook's default."""
    created = await rest.ok("POST", gadgets(), gadget("a"))
    assert created["spec"] == {"size": 1, "color": "blue"}
    stored = await rest.ok("GET", gadgets(name="a"))
    assert stored["spec"]["color"] == "blue"


@pytest.mark.usefixtures("checks")
async def test_update_is_defaulted_by_the_mutating_webhook(rest: Rest) -> None:
    """A PUT that drops a defaulted field gets the default again."""
    created = await rest.ok("POST", gadgets(), gadget("a", color="red"))
    created["spec"] = {"size": 2}
    updated = await rest.ok("PUT", gadgets(name="a"), created)
    assert updated["spec"] == {"size": 2, "color": "blue"}


@pytest.mark.usefixtures("checks")
async def test_merge_patch_is_defaulted_by_the_mutating_webhook(rest: Rest) -> None:
    """A merge patch removing a defaulted field is defaulted again."""
    await rest.ok("POST", gadgets(), gadget("a", color="red"))
    patched = await rest.ok(
        "PATCH",
        gadgets(name="a"),
        {"spec": {"color": None}},
        content_type="application/merge-patch+json",
    )
    assert patched["spec"]["color"] == "blue"


@pytest.mark.usefixtures("checks")
async def test_server_side_apply_is_defaulted_by_the_mutating_webhook(rest: Rest) -> None:
    """A server-side apply that creates the object goes through the mutating webhook."""
    applied = await rest.ok(
        "PATCH",
        gadgets(name="a"),
        gadget("a", 3),
        content_type="application/apply-patch+yaml",
        params={"fieldManager": "tester"},
    )
    assert applied["spec"] == {"size": 3, "color": "blue"}


# --- validation ---------------------------------------------------------------------------------


@pytest.mark.usefixtures("checks")
async def test_denial_is_the_webhook_status_with_field_causes(rest: Rest) -> None:
    """A denial answers with the webhook's code, reason and causes, its message prefixed."""
    response = await rest.create(gadgets(), gadget("bad", -1))
    assert response.status == 422
    assert response.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"{DENIED}: spec.size must not be negative",
        "reason": "Invalid",
        "details": {
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": "Invalid value: -1: must be >= 0",
                    "field": "spec.size",
                }
            ]
        },
        "code": 422,
    }
    assert (await rest.request("GET", gadgets(name="bad"))).status == 404


@pytest.mark.usefixtures("checks")
async def test_delete_is_denied_by_the_validating_webhook(rest: Rest) -> None:
    """DELETE goes to the validating webhook, which sees the object as oldObject."""
    await rest.ok("POST", gadgets(), gadget("keep"))
    response = await rest.request("DELETE", gadgets(name="keep"))
    assert response.status == 422
    assert response.body["message"] == f"{DENIED}: gadget keep is protected"
    assert (await rest.request("GET", gadgets(name="keep"))).status == 200


async def test_denial_without_code_or_message_is_400_without_explanation(
    rest: Rest, certs: Certs
) -> None:
    """A bare ``allowed: false`` becomes 400 'denied the request without explanation'."""

    async def deny(body: dict[str, Any]) -> Any:
        return allow(body, allowed=False)

    async with scripted_webhook(certs, deny) as script:
        await rest.install(configuration(VALIDATING, "deny", hook("deny.test", script.url, certs)))
        response = await rest.create(gadgets(), gadget("a"))
    assert response.status == 400
    assert (
        response.body["message"]
        == 'admission webhook "deny.test" denied the request without explanation'
    )


async def test_validating_webhooks_all_run_and_one_denial_is_enough(
    rest: Rest, certs: Certs
) -> None:
    """Every matching validating webhook is called; one denial rejects the request."""

    async def answer(body: dict[str, Any]) -> Any:
        return allow(body, allowed=body["request"]["name"] != "deny-me")

    async with scripted_webhook(certs, answer) as script:
        await rest.install(
            configuration(
                VALIDATING,
                "pair",
                hook("one.test", script.url + "/one", certs),
                hook("two.test", script.url + "/two", certs),
            )
        )
        assert (await rest.create(gadgets(), gadget("fine"))).status == 201
        denied = await rest.create(gadgets(), gadget("deny-me"))
    assert denied.status == 400
    assert sorted(r["path"] for r in script.received) == ["/one", "/one", "/two", "/two"]


# --- warnings -----------------------------------------------------------------------------------


@pytest.mark.usefixtures("checks")
async def test_warnings_are_added_to_the_admission_request(env: Environment) -> None:
    """Warnings of an allowed request land in ``request.warnings`` for the write path."""
    assert env.server is not None
    dispatcher = next(h for h in env.server.admission if isinstance(h, WebhookDispatcher))
    rt = env.server.registry.lookup(GROUP, "v1", "gadgets")
    assert rt is not None
    obj = gadget("big", 101)
    obj["metadata"]["namespace"] = "default"
    request = AdmissionRequest(
        uid="u",
        operation="CREATE",
        resource=rt,
        subresource="",
        namespace="default",
        name="big",
        obj=obj,
        old=None,
        dry_run=False,
        options={"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
    )
    await dispatcher.validate(request)
    assert request.warnings == ["size above 100 is slow"]


async def test_denial_sends_the_warnings_as_warning_headers(rest: Rest, certs: Certs) -> None:
    """Warnings of a denying webhook reach the client as ``Warning: 299`` headers."""

    async def deny(body: dict[str, Any]) -> Any:
        status = {"code": 403, "reason": "Forbidden", "message": "no"}
        return allow(body, allowed=False, status=status, warnings=["first", 'say "hi"'])

    async with scripted_webhook(certs, deny) as script:
        await rest.install(configuration(VALIDATING, "deny", hook("deny.test", script.url, certs)))
        response = await rest.create(gadgets(), gadget("a"))
    assert response.status == 403
    assert response.body["message"] == 'admission webhook "deny.test" denied the request: no'
    assert response.headers["Warning"] == '299 - "first", 299 - "say \\"hi\\""'


# --- failures -----------------------------------------------------------------------------------


async def test_failure_policy_fail_rejects_when_the_webhook_is_down(rest: Rest) -> None:
    """With failurePolicy Fail an unreachable webhook fails the request with 500."""
    url = dead_url()
    port = url.rsplit(":", 1)[1]
    await rest.install(
        configuration(VALIDATING, "dead", hook("dead.test", url + "/v", None, failurePolicy="Fail"))
    )
    response = await rest.create(gadgets(), gadget("a"))
    assert response.status == 500
    assert response.body["reason"] == "InternalError"
    assert response.body["message"] == (
        'Internal error occurred: failed calling webhook "dead.test": failed to call webhook: '
        f'Post "{url}/v?timeout=10s": dial tcp 127.0.0.1:{port}: connect: connection refused'
    )


async def test_failure_policy_ignore_admits_when_the_webhook_is_down(rest: Rest) -> None:
    """With failurePolicy Ignore an unreachable webhook is skipped."""
    url = dead_url()
    await rest.install(
        configuration(MUTATING, "dead", hook("dead.test", url, None, failurePolicy="Ignore")),
        configuration(VALIDATING, "dead", hook("dead.test", url, None, failurePolicy="Ignore")),
    )
    assert (await rest.create(gadgets(), gadget("a"))).status == 201


async def test_a_slow_webhook_times_out_after_timeout_seconds(rest: Rest, certs: Certs) -> None:
    """A webhook that does not answer within timeoutSeconds fails the request."""
    never = asyncio.Event()

    async def hang(body: dict[str, Any]) -> Any:
        await never.wait()
        return allow(body)

    async with scripted_webhook(certs, hang) as script:
        await rest.install(
            configuration(
                VALIDATING, "slow", hook("slow.test", script.url + "/v", certs, timeoutSeconds=1)
            )
        )
        started = time.monotonic()
        response = await rest.create(gadgets(), gadget("a"))
        elapsed = time.monotonic() - started
    assert response.status == 500
    assert response.body["message"].endswith(
        f'failed to call webhook: Post "{script.url}/v?timeout=1s": context deadline exceeded'
    )
    assert script.received[0]["query"] == {"timeout": "1s"}
    assert 1.0 <= elapsed < 5.0


async def test_an_untrusted_certificate_fails_the_call(
    rest: Rest, certs: Certs, tmp_path: Path
) -> None:
    """The server certificate is verified against the configuration's caBundle."""
    other = make_certs(tmp_path / "other")

    async def answer(body: dict[str, Any]) -> Any:
        return allow(body)

    async with scripted_webhook(certs, answer) as script:
        await rest.install(configuration(VALIDATING, "tls", hook("tls.test", script.url, other)))
        response = await rest.create(gadgets(), gadget("a"))
    assert response.status == 500
    assert response.body["message"].endswith(
        "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    )
    assert script.received == []


async def test_a_response_for_another_request_is_invalid(rest: Rest, certs: Certs) -> None:
    """An answer whose uid is not the request's is a failed call."""

    async def wrong(body: dict[str, Any]) -> Any:
        answer = allow(body)
        answer["response"]["uid"] = "someone-else"
        return answer

    async with scripted_webhook(certs, wrong) as script:
        await rest.install(configuration(VALIDATING, "uid", hook("uid.test", script.url, certs)))
        response = await rest.create(gadgets(), gadget("a"))
    uid = script.received[0]["request"]["uid"]
    assert response.status == 500
    assert response.body["message"] == (
        'Internal error occurred: failed calling webhook "uid.test": received invalid webhook '
        f'response: expected response.uid="{uid}", got "someone-else"'
    )


async def test_a_non_2xx_answer_is_a_failed_call(rest: Rest, certs: Certs) -> None:
    """An HTTP error from the webhook fails the call with client-go's wording."""

    async def broken(body: dict[str, Any]) -> Any:
        del body
        return web.Response(status=500, text="boom")

    async with scripted_webhook(certs, broken) as script:
        await rest.install(configuration(VALIDATING, "err", hook("err.test", script.url, certs)))
        response = await rest.create(gadgets(), gadget("a"))
    assert response.body["message"] == (
        'Internal error occurred: failed calling webhook "err.test": failed to call webhook: '
        'an error on the server ("boom") has prevented the request from succeeding'
    )


# --- matching -----------------------------------------------------------------------------------


async def test_namespace_selector_matches_the_namespace_labels(rest: Rest, certs: Certs) -> None:
    """Only requests in namespaces whose labels match the namespaceSelector are sent."""

    async def deny(body: dict[str, Any]) -> Any:
        return allow(body, allowed=False)

    await _namespace(rest, "watched", {"team": "a"})
    await _namespace(rest, "unwatched", {"team": "b"})
    selector = {"matchLabels": {"team": "a"}}
    async with scripted_webhook(certs, deny) as script:
        await rest.install(
            configuration(
                VALIDATING, "ns", hook("ns.test", script.url, certs, namespaceSelector=selector)
            )
        )
        assert (await rest.create(gadgets("watched"), gadget("a"))).status == 400
        assert (await rest.create(gadgets("unwatched"), gadget("a"))).status == 201
    assert [r["request"]["namespace"] for r in script.received] == ["watched"]


async def test_namespace_selector_sees_a_namespace_s_own_labels(rest: Rest, certs: Certs) -> None:
    """For a Namespace object the namespaceSelector matches the object's own labels."""

    async def deny(body: dict[str, Any]) -> Any:
        return allow(body, allowed=False)

    selector = {"matchLabels": {"locked": "yes"}}
    namespaces = rule(["namespaces"], ["CREATE"], groups=[""])
    async with scripted_webhook(certs, deny) as script:
        await rest.install(
            configuration(
                VALIDATING,
                "ns",
                hook("ns.test", script.url, certs, [namespaces], namespaceSelector=selector),
            )
        )
        locked = {"metadata": {"name": "locked", "labels": {"locked": "yes"}}}
        assert (await rest.create("/api/v1/namespaces", locked)).status == 400
        assert (
            await rest.create("/api/v1/namespaces", {"metadata": {"name": "open"}})
        ).status == 201
    assert len(script.received) == 1


async def test_object_selector_matches_new_or_old_labels(rest: Rest, certs: Certs) -> None:
    """objectSelector sends requests whose new or old object carries the labels."""

    async def answer(body: dict[str, Any]) -> Any:
        return allow(body)

    selector = {"matchExpressions": [{"key": "audit", "operator": "Exists"}]}
    async with scripted_webhook(certs, answer) as script:
        await rest.install(
            configuration(
                VALIDATING, "obj", hook("obj.test", script.url, certs, objectSelector=selector)
            )
        )
        labelled = gadget("labelled")
        labelled["metadata"]["labels"] = {"audit": "1"}
        created = await rest.ok("POST", gadgets(), labelled)
        await rest.ok("POST", gadgets(), gadget("plain"))
        del created["metadata"]["labels"]
        await rest.ok("PUT", gadgets(name="labelled"), created)
    assert [(r["request"]["name"], r["request"]["operation"]) for r in script.received] == [
        ("labelled", "CREATE"),
        ("labelled", "UPDATE"),
    ]


async def test_rules_select_operations_and_subresources(rest: Rest, certs: Certs) -> None:
    """A rule for CREATE skips updates; ``gadgets/status`` matches status writes only."""

    async def answer(body: dict[str, Any]) -> Any:
        return allow(body)

    async with scripted_webhook(certs, answer) as script:
        await rest.install(
            configuration(
                VALIDATING,
                "rules",
                hook("create.test", script.url + "/create", certs, [rule(operations=["CREATE"])]),
                hook("status.test", script.url + "/status", certs, [rule(["gadgets/status"])]),
            )
        )
        created = await rest.ok("POST", gadgets(), gadget("a"))
        created["spec"]["size"] = 5
        updated = await rest.ok("PUT", gadgets(name="a"), created)
        updated["status"] = {"ok": True}
        await rest.ok("PUT", gadgets(name="a") + "/status", updated)
    seen = [
        (r["path"], r["request"]["operation"], r["request"].get("subResource"))
        for r in script.received
    ]
    assert seen == [("/create", "CREATE", None), ("/status", "UPDATE", "status")]


async def test_webhook_configurations_are_never_sent_to_webhooks(rest: Rest) -> None:
    """A failing catch-all webhook cannot block changes to webhook configurations."""
    everything = rule(["*"], ["*"], groups=["*"], versions=["*"])
    await rest.install(
        configuration(VALIDATING, "all", hook("all.test", dead_url(), None, [everything]))
    )
    assert (await rest.create(gadgets(), gadget("a"))).status == 500
    path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/all"
    assert (await rest.request("DELETE", path)).status == 200
    assert (await rest.create(gadgets(), gadget("a"))).status == 201


async def test_equivalent_match_converts_to_the_webhook_s_version(rest: Rest, certs: Certs) -> None:
    """A rule for v1 also gets v1beta1 requests, with the object at v1 (matchPolicy Equivalent)."""

    async def answer(body: dict[str, Any]) -> Any:
        return allow(body)

    tools_v1 = rule(["tools"], ["CREATE"], versions=["v1"])
    async with scripted_webhook(certs, answer) as script:
        await rest.install(
            configuration(VALIDATING, "eq", hook("eq.test", script.url + "/eq", certs, [tools_v1])),
            configuration(
                VALIDATING,
                "exact",
                hook("exact.test", script.url + "/exact", certs, [tools_v1], matchPolicy="Exact"),
            ),
        )
        tool = {"apiVersion": f"{GROUP}/v1beta1", "kind": "Tool", "metadata": {"name": "t"}}
        await rest.ok("POST", f"/apis/{GROUP}/v1beta1/namespaces/default/tools", tool)
    assert [r["path"] for r in script.received] == ["/eq"]
    request = script.received[0]["request"]
    assert request["kind"] == {"group": GROUP, "version": "v1", "kind": "Tool"}
    assert request["requestKind"] == {"group": GROUP, "version": "v1beta1", "kind": "Tool"}
    assert request["resource"]["version"] == "v1"
    assert request["requestResource"]["version"] == "v1beta1"
    assert request["object"]["apiVersion"] == f"{GROUP}/v1"


# --- the review ---------------------------------------------------------------------------------


async def test_the_admission_review_carries_the_request(rest: Rest, certs: Certs) -> None:
    """The AdmissionReview has kind, resource, names, operation, user, objects and options."""

    async def answer(body: dict[str, Any]) -> Any:
        return allow(body)

    async with scripted_webhook(certs, answer) as script:
        await rest.install(
            configuration(
                VALIDATING, "see", hook("see.test", script.url, certs, [rule(["gadgets"], ["*"])])
            )
        )
        created = await rest.ok("POST", gadgets(), gadget("a"), params={"fieldManager": "me"})
        created["spec"]["size"] = 2
        await rest.ok("PUT", gadgets(name="a"), created)
    create, update = (r for r in script.received)
    assert create["apiVersion"] == "admission.k8s.io/v1"
    assert create["kind"] == "AdmissionReview"
    request = create["request"]
    assert request["kind"] == {"group": GROUP, "version": "v1", "kind": "Gadget"}
    assert request["resource"] == {"group": GROUP, "version": "v1", "resource": "gadgets"}
    assert request["requestKind"] == request["kind"]
    assert request["requestResource"] == request["resource"]
    assert (request["name"], request["namespace"], request["operation"]) == (
        "a",
        "default",
        "CREATE",
    )
    assert request["userInfo"]["username"] == "admin"
    assert request["object"]["spec"] == {"size": 1}
    assert request["oldObject"] is None
    assert request["dryRun"] is False
    assert request["options"] == {
        "kind": "CreateOptions",
        "apiVersion": "meta.k8s.io/v1",
        "fieldManager": "me",
    }
    assert update["request"]["operation"] == "UPDATE"
    assert update["request"]["oldObject"]["spec"] == {"size": 1}
    assert update["request"]["object"]["spec"] == {"size": 2}
    assert update["request"]["uid"] != request["uid"]


# --- dry run ------------------------------------------------------------------------------------


async def test_dry_run_reaches_webhooks_without_side_effects(
    rest: Rest, checks: GadgetChecks
) -> None:
    """A dry-run create is sent with dryRun true to webhooks declaring sideEffects None."""
    response = await rest.create(gadgets(), gadget("a"), params={"dryRun": "All"})
    assert response.status == 201
    assert response.body["spec"]["color"] == "blue"
    assert checks.dry_runs == [True]
    assert (await rest.request("GET", gadgets(name="a"))).status == 404


async def test_dry_run_is_refused_by_a_webhook_with_side_effects(rest: Rest) -> None:
    """A dry run matching a webhook with sideEffects Some fails with 400."""
    await rest.install(
        configuration(VALIDATING, "fx", hook("fx.test", dead_url(), None, sideEffects="Some"))
    )
    response = await rest.create(gadgets(), gadget("a"), params={"dryRun": "All"})
    assert response.status == 400
    assert response.body["reason"] == "BadRequest"
    assert response.body["message"] == 'admission webhook "fx.test" does not support dry run'


# --- mutating order -----------------------------------------------------------------------------


async def test_if_needed_webhooks_are_reinvoked_after_later_changes(
    rest: Rest, certs: Certs
) -> None:
    """An IfNeeded webhook runs again when a later webhook changed the object."""

    async def label(body: dict[str, Any]) -> Any:
        path = script.received[-1]["path"]
        labels = dict(body["request"]["object"]["metadata"].get("labels") or {})
        if path == "/first":
            labels["first"] = str(sum(1 for r in script.received if r["path"] == "/first"))
        else:
            labels["second"] = "yes"
        patch = [{"op": "add", "path": "/metadata/labels", "value": labels}]
        return allow(body, patch=json_patch(patch), patchType="JSONPatch")

    async with scripted_webhook(certs, label) as script:
        await rest.install(
            configuration(
                MUTATING,
                "a-first",
                hook("first.test", script.url + "/first", certs, reinvocationPolicy="IfNeeded"),
            ),
            configuration(MUTATING, "b-second", hook("second.test", script.url + "/second", certs)),
        )
        created = await rest.ok("POST", gadgets(), gadget("a"))
    assert [r["path"] for r in script.received] == ["/first", "/second", "/first"]
    assert created["metadata"]["labels"] == {"first": "2", "second": "yes"}


async def test_a_patch_from_a_mutating_webhook_is_applied(rest: Rest, certs: Certs) -> None:
    """A base64 JSONPatch answer changes the stored object."""

    async def mutate(body: dict[str, Any]) -> Any:
        patch = [{"op": "replace", "path": "/spec/size", "value": 7}]
        return allow(body, patch=json_patch(patch), patchType="JSONPatch")

    async with scripted_webhook(certs, mutate) as script:
        await rest.install(configuration(MUTATING, "m", hook("m.test", script.url, certs)))
        created = await rest.ok("POST", gadgets(), gadget("a"))
    assert created["spec"]["size"] == 7


# --- services -----------------------------------------------------------------------------------


async def test_an_unmapped_service_fails_with_a_hint(rest: Rest) -> None:
    """A Service clientConfig cannot be resolved without a mapping; the error says how."""
    service = {"namespace": "hooks", "name": "webhook", "path": "/v", "port": 443}
    config = hook("svc.test", "", None)
    config["clientConfig"] = {"service": service}
    await rest.install(configuration(VALIDATING, "svc", config))
    response = await rest.create(gadgets(), gadget("a"))
    assert response.status == 500
    message = response.body["message"]
    assert 'Post "https://webhook.hooks.svc:443/v?timeout=10s"' in message
    assert "no such host" in message
    assert 'services={"hooks/webhook": ' in message


async def test_a_mapped_service_is_called_with_its_dns_name_verified(
    env: Environment, rest: Rest, tmp_path: Path
) -> None:
    """With a Service mapped to a local URL, the call verifies the Service's DNS name."""
    assert env.server is not None
    svc_certs = make_certs(tmp_path / "svc", ["webhook.hooks.svc"])

    async def deny(body: dict[str, Any]) -> Any:
        return allow(body, allowed=False, status={"code": 403, "message": "via service"})

    async with scripted_webhook(svc_certs, deny) as script:
        install(env.server, services={"hooks/webhook": script.url})
        config = hook("svc.test", "", svc_certs)
        config["clientConfig"] = {
            "service": {"namespace": "hooks", "name": "webhook", "path": "/v", "port": 443},
            "caBundle": svc_certs.bundle,
        }
        await rest.install(configuration(VALIDATING, "svc", config))
        response = await rest.create(gadgets(), gadget("a"))
    assert response.status == 403
    assert (
        response.body["message"] == 'admission webhook "svc.test" denied the request: via service'
    )


async def test_a_false_match_condition_skips_the_webhook(rest: Rest, certs: Certs) -> None:
    """A webhook whose matchCondition is false is not called (its dead URL never fails)."""
    conditions = [{"name": "not-skipped", "expression": "object.metadata.name != 'skip-me'"}]
    await rest.install(
        configuration(
            VALIDATING, "mc", hook("mc.test", dead_url(), certs, matchConditions=conditions)
        )
    )
    skipped = await rest.create(gadgets(), gadget("skip-me"))
    assert skipped.status == 201
    called = await rest.create(gadgets(), gadget("other"))
    assert called.status == 500
    assert 'failed calling webhook "mc.test"' in called.body["message"]


async def test_a_failing_match_condition_follows_the_failure_policy(
    rest: Rest, certs: Certs
) -> None:
    """A condition that errors fails the request with 403 under failurePolicy Fail."""
    conditions = [{"name": "broken", "expression": "object.spec.missing == 'x'"}]
    await rest.install(
        configuration(
            VALIDATING, "mc", hook("mc.test", dead_url(), certs, matchConditions=conditions)
        )
    )
    failed = await rest.create(gadgets(), gadget("a"))
    assert failed.status == 403
    assert failed.body["message"] == (
        f"gadgets.{GROUP} \"a\" is forbidden: expression 'object.spec.missing == 'x'' "
        "resulted in error: no such key: missing"
    )


async def test_a_failing_match_condition_is_ignored_under_ignore(rest: Rest, certs: Certs) -> None:
    """Under failurePolicy Ignore a condition that errors skips the webhook."""
    conditions = [{"name": "broken", "expression": "object.spec.missing == 'x'"}]
    config = hook("mc.test", dead_url(), certs, matchConditions=conditions, failurePolicy="Ignore")
    await rest.install(configuration(VALIDATING, "mc", config))
    assert (await rest.create(gadgets(), gadget("a"))).status == 201


def test_install_refuses_to_replace_another_conversion_hook() -> None:
    """install() does not silently replace a conversion hook someone else set."""
    from pyctrl._apiserver.endpoints.server import APIServer

    class Other:
        def handles(self, crd_name: str) -> bool:
            del crd_name
            return False

        async def convert(
            self, crd_name: str, objects: list[dict[str, Any]], desired_api_version: str
        ) -> list[dict[str, Any]]:
            del crd_name, desired_api_version
            return objects

    server = APIServer(tokens=["t"], ssl_context=None)
    server.conversion = Other()
    with pytest.raises(ValueError, match=r"server\.conversion is already set"):
        install(server)
