"""The mutating and validating webhook dispatch, the server's webhook `AdmissionHook`.

As ``k8s.io/apiserver/pkg/admission/plugin/webhook/{mutating,validating}/dispatcher.go``;
the behaviour is described in `pyctrl._apiserver.admission.plugin.webhook`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import jsonpatch
import jsonpointer
import orjson

from pyctrl._apimachinery.gofmt import go_quote as _quote
from pyctrl._apiserver.admission.plugin.cel import (
    Activation,
    evaluate_match_conditions,
    no_authorizer,
)
from pyctrl._apiserver.admission.plugin.webhook.client import (
    CallFailedError,
    CallingWebhookError,
    Client,
    denial,
    warning_header,
)
from pyctrl._apiserver.admission.plugin.webhook.config import (
    MUTATING,
    VALIDATING,
    Answer,
    Attributes,
    Hook,
    Invocation,
    is_exempt,
    is_namespace_resource,
    namespace_selector_matches,
    object_selector_matches,
    parse_configuration,
    rule_matches,
    verify_admission_response,
)
from pyctrl._apiserver.apimachinery.errors import (
    StatusError,
    bad_request,
    forbidden,
    internal,
)
from pyctrl._ids import secure_uuid4

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyctrl._apiextensions.cel.authz import AuthorizeFunc
    from pyctrl._apiserver.admission.interfaces import AdmissionRequest, PluginHost
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.store import StorageKey

__all__ = ["WebhookDispatcher"]

logger = logging.getLogger("pyctrl.envtest.webhooks")


class WebhookDispatcher:
    """Calls the admission webhooks stored in a server (an `AdmissionHook`).

    Args:
        server: The server whose MutatingWebhookConfigurations and
            ValidatingWebhookConfigurations are read on each request.
        services: ``"<namespace>/<name>"`` of a Service -> base URL that reaches it
            (the embedded server has no cluster DNS); see the module docstring.
        authorize: Answers the ``authorizer`` of ``matchConditions``; None allows all.
    """

    def __init__(
        self,
        server: PluginHost,
        *,
        services: Mapping[str, str] | None = None,
        authorize: AuthorizeFunc | None = None,
    ) -> None:
        self.server = server
        self.client = Client(services)
        self.authorize: AuthorizeFunc = authorize or no_authorizer
        """Answers ``authorizer`` questions of ``matchConditions`` (the server's RBAC)."""
        self._parsed: dict[StorageKey, dict[str, tuple[str, list[Hook]]]] = {
            MUTATING: {},
            VALIDATING: {},
        }

    @property
    def services(self) -> dict[str, str]:
        """The Service -> base URL map (mutable: later additions take effect)."""
        return self.client.services

    # --- configuration -------------------------------------------------------------------

    def _hooks(self, key: StorageKey) -> list[Hook]:
        """The webhooks of one kind, configurations in name order, parsed once per version."""
        cache = self._parsed[key]
        hooks: list[Hook] = []
        seen: set[str] = set()
        for config in self.server.store.items(key, None):
            meta = config.get("metadata") or {}
            name = str(meta.get("name") or "")
            rv = str(meta.get("resourceVersion") or "")
            cached = cache.get(name)
            if cached is None or cached[0] != rv:
                cached = (rv, parse_configuration(config))
                cache[name] = cached
            seen.add(name)
            hooks.extend(cached[1])
        for gone in set(cache) - seen:
            del cache[gone]
        return hooks

    def handles(self, rt: ResourceType, *, mutating: bool) -> bool:
        """Whether a webhook configuration of the kind is stored and ``rt`` is not exempt."""
        return not is_exempt(rt) and self.server.store.has_any(MUTATING if mutating else VALIDATING)

    def _attributes(self, request: AdmissionRequest) -> Attributes:
        namespace = request.namespace
        if is_namespace_resource(request.resource) and request.operation != "CREATE":
            namespace = request.name
        return Attributes(
            request=request,
            namespace=namespace,
            obj=request.obj,
            warnings=request.warnings,
        )

    # --- matching ------------------------------------------------------------------------

    def _namespace_matches(self, hook: Hook, attrs: Attributes) -> tuple[bool, StatusError | None]:
        """``namespace.Matcher.MatchNamespaceSelector``."""
        request = attrs.request
        if not attrs.namespace and not is_namespace_resource(request.resource):
            return True, None
        if hook.namespace_selector_error:
            return False, internal(hook.namespace_selector_error)
        return namespace_selector_matches(
            self.server, request, attrs.namespace, hook.namespace_selector
        )

    @staticmethod
    def _object_matches(hook: Hook, attrs: Attributes) -> tuple[bool, StatusError | None]:
        """``object.Matcher.MatchObjectSelector``: the new or the old object's labels."""
        if hook.object_selector_error:
            return False, internal(hook.object_selector_error)
        return object_selector_matches(hook.object_selector, attrs.obj, attrs.request.old), None

    def _invocation(self, hook: Hook, attrs: Attributes) -> Invocation | None:
        """``Webhook.ShouldCallHook``: the invocation, None to skip, StatusError to fail."""
        ns_matches, ns_error = self._namespace_matches(hook, attrs)
        if not ns_matches and ns_error is None:
            return None
        obj_matches, obj_error = self._object_matches(hook, attrs)
        if not obj_matches and obj_error is None:
            return None
        request = attrs.request
        rt, sub, op = request.resource, request.subresource, request.operation
        target: ResourceType | None = None
        for rule in hook.rules:
            if rule_matches(rule, rt, sub, op, attrs.namespace):
                target = rt
                break
        if target is None and hook.equivalent:
            equivalents = [
                t
                for t in self.server.registry.for_storage(rt.storage_key)
                if t.served
                and (t.group, t.version, t.plural) != (rt.group, rt.version, rt.plural)
                and (not sub or sub in t.subresources)
            ]
            target = next(
                (
                    t
                    for rule in hook.rules
                    for t in equivalents
                    if rule_matches(rule, t, sub, op, attrs.namespace)
                ),
                None,
            )
        if target is None:
            return None
        if ns_error is not None:
            raise ns_error
        if obj_error is not None:
            raise obj_error
        if hook.match_conditions and not self._conditions_match(hook, attrs, target):
            return None
        return Invocation(hook, target)

    def _conditions_match(self, hook: Hook, attrs: Attributes, target: ResourceType) -> bool:
        """``matchconditions.Matcher.Match``: False skips the webhook; an error may fail."""
        request = attrs.request
        obj, rt = attrs.obj, request.resource
        if obj is not None and (target.group, target.version) != (rt.group, rt.version):
            # The conditions see the object at the matched version (versionedAttr).
            converter = self.server.converter
            obj = converter.to_external(target, converter.to_storage(rt, obj))
        activation = Activation.build(self.server, request, target, self.authorize, obj)
        matches, error = evaluate_match_conditions(
            list(hook.match_conditions), activation.env(None)
        )
        if error and matches:
            if hook.ignore_failures:
                return False
            logger.warning(
                "Failed evaluating match conditions, failing closed %s: %s", hook.name, error
            )
            raise forbidden(request.resource.group, request.resource.plural, request.name, error)
        return matches

    # --- calls ---------------------------------------------------------------------------

    async def _convert(
        self, obj: dict[str, Any] | None, source: ResourceType, dest: ResourceType
    ) -> dict[str, Any] | None:
        """An object of ``source``'s version at ``dest``'s version (equivalent matches)."""
        if obj is None or (source.group, source.version) == (dest.group, dest.version):
            return obj
        hook = self.server.conversion
        try:
            if source.crd_name and hook is not None and hook.handles(source.crd_name):
                return (await hook.convert(source.crd_name, [obj], dest.api_version))[0]
        except StatusError as exc:
            raise internal(exc.message) from None
        converter = self.server.converter
        return converter.to_external(dest, converter.to_storage(source, obj))

    def _review(
        self,
        invocation: Invocation,
        attrs: Attributes,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        version: str,
    ) -> tuple[str, dict[str, Any]]:
        """``CreateV1AdmissionReview``: the review for one webhook."""
        request = attrs.request
        target, asked = invocation.rt, request.resource
        sub = request.subresource

        def kind_of(rt: ResourceType) -> dict[str, str]:
            if sub == "scale":
                return {"group": "autoscaling", "version": "v1", "kind": "Scale"}
            if sub == "eviction":
                return {"group": "policy", "version": "v1", "kind": "Eviction"}
            return {"group": rt.group, "version": rt.version, "kind": rt.kind}

        uid = secure_uuid4()
        body: dict[str, Any] = {
            "uid": uid,
            "kind": kind_of(target),
            "resource": {
                "group": target.group,
                "version": target.version,
                "resource": target.plural,
            },
        }
        if sub:
            body["subResource"] = sub
        body["requestKind"] = kind_of(asked)
        body["requestResource"] = {
            "group": asked.group,
            "version": asked.version,
            "resource": asked.plural,
        }
        if sub:
            body["requestSubResource"] = sub
        if request.name:
            body["name"] = request.name
        if attrs.namespace:
            body["namespace"] = attrs.namespace
        body["operation"] = request.operation
        body["userInfo"] = request.user.to_dict()
        body["object"] = obj
        body["oldObject"] = old
        body["dryRun"] = request.dry_run
        body["options"] = request.options or None
        return uid, {
            "kind": "AdmissionReview",
            "apiVersion": f"admission.k8s.io/{version}",
            "request": body,
        }

    async def _call(
        self,
        invocation: Invocation,
        attrs: Attributes,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        *,
        mutating: bool,
    ) -> Answer:
        """Send one review; raises `CallingWebhookError` or `StatusError`."""
        hook = invocation.hook
        if attrs.request.dry_run:
            if hook.side_effects is None:
                raise CallingWebhookError(hook.name, "Webhook SideEffects is nil")
            if hook.side_effects not in ("None", "NoneOnDryRun"):
                raise bad_request(f"admission webhook {_quote(hook.name)} does not support dry run")
        version = next((v for v in hook.review_versions if v in ("v1", "v1beta1")), None)
        if version is None:
            raise CallingWebhookError(
                hook.name,
                "could not create admission objects: webhook does not accept known "
                "AdmissionReview versions (v1, v1beta1)",
            )
        try:
            target = self.client.target(hook.client_config, hook.timeout)
        except ValueError as exc:
            raise CallingWebhookError(hook.name, f"could not get REST client: {exc}") from None
        uid, review = self._review(invocation, attrs, obj, old, version)
        try:
            answer = await self.client.post(target, review, hook.timeout)
        except CallFailedError as exc:
            raise CallingWebhookError(hook.name, f"failed to call webhook: {exc}") from None
        try:
            return verify_admission_response(uid, mutating, version, answer)
        except ValueError as exc:
            raise CallingWebhookError(
                hook.name, f"received invalid webhook response: {exc}"
            ) from None

    @staticmethod
    def _add_warnings(attrs: Attributes, warnings: list[str]) -> None:
        for warning in warnings:
            if warning not in attrs.warnings:
                attrs.warnings.append(warning)

    @staticmethod
    def _with_warnings(err: StatusError, attrs: Attributes) -> StatusError:
        if attrs.warnings:
            err.headers["Warning"] = warning_header(attrs.warnings)
        return err

    # --- mutating ------------------------------------------------------------------------

    async def mutate(self, request: AdmissionRequest) -> dict[str, Any] | None:  # noqa: PLR0912 - the mutating dispatcher: matching, reinvocation, patch and audit per webhook
        """Run the matching mutating webhooks; return the patched object (None: unchanged)."""
        if request.obj is None or not self.handles(request.resource, mutating=True):
            return None
        hooks = self._hooks(MUTATING)
        if not hooks:
            return None
        attrs = self._attributes(request)
        reinvoke: set[str] = set()
        invoked_reinvocable: set[str] = set()
        mutated = False
        try:
            for round_ in (0, 1):
                if round_ == 1 and not reinvoke:
                    break
                for hook in hooks:
                    invocation = self._invocation(hook, attrs)
                    if invocation is None:
                        continue
                    if round_ == 1 and hook.uid not in reinvoke:
                        continue
                    changed = False
                    failure: CallingWebhookError | None = None
                    try:
                        changed = await self._mutate_once(invocation, attrs)
                    except CallingWebhookError as exc:
                        failure = exc
                    if changed:
                        mutated = True
                        # Every earlier IfNeeded webhook must see what this one changed.
                        reinvoke |= invoked_reinvocable
                        invoked_reinvocable = set()
                    if hook.reinvoke_if_needed:
                        invoked_reinvocable.add(hook.uid)
                    if failure is not None:
                        if hook.ignore_failures:
                            logger.warning(
                                "Failed calling webhook, failing open %s: %s", hook.name, failure
                            )
                            continue
                        raise internal(str(failure))
        except StatusError as err:
            raise self._with_warnings(err, attrs) from None
        return attrs.obj if mutated else None

    async def _mutate_once(self, invocation: Invocation, attrs: Attributes) -> bool:
        """Call one mutating webhook and apply its patch to ``attrs.obj``; True if changed."""
        hook = invocation.hook
        asked = attrs.request.resource
        obj = await self._convert(attrs.obj, asked, invocation.rt)
        old = await self._convert(attrs.request.old, asked, invocation.rt)
        answer = await self._call(invocation, attrs, obj, old, mutating=True)
        self._add_warnings(attrs, answer.warnings)
        if not answer.allowed:
            raise denial(hook.name, answer.status)
        if not answer.patch:
            return False
        try:
            operations = orjson.loads(answer.patch)
            if not isinstance(operations, list) or not all(isinstance(o, dict) for o in operations):
                raise ValueError("a JSON patch must be an array of operation objects")
        except (orjson.JSONDecodeError, ValueError) as exc:
            raise CallingWebhookError(
                hook.name, f"received undecodable patch in webhook response: {exc}"
            ) from None
        if not operations:
            return False
        if answer.patch_type != "JSONPatch":
            raise CallingWebhookError(
                hook.name, f"unsupported patch type {_quote(answer.patch_type)}"
            )
        if obj is None:
            raise internal(
                f"admission webhook {_quote(hook.name)} attempted to modify the object, which "
                "is not supported for this operation"
            )
        try:
            patched = jsonpatch.JsonPatch(operations).apply(obj)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            raise internal(str(exc)) from None
        if not isinstance(patched, dict):
            raise internal(
                f"admission webhook {_quote(hook.name)} patched the object into a non-object"
            )
        if patched == obj:
            return False
        attrs.obj = await self._convert(patched, invocation.rt, asked)
        return True

    # --- validating ----------------------------------------------------------------------

    async def validate(self, request: AdmissionRequest) -> None:
        """Run the matching validating webhooks concurrently; raise the first denial."""
        if not self.handles(request.resource, mutating=False):
            return
        hooks = self._hooks(VALIDATING)
        if not hooks:
            return
        attrs = self._attributes(request)
        try:
            await self._validate(attrs, hooks)
        except StatusError as err:
            raise self._with_warnings(err, attrs) from None

    async def _validate(self, attrs: Attributes, hooks: list[Hook]) -> None:
        invocations = [inv for hook in hooks if (inv := self._invocation(hook, attrs)) is not None]
        if not invocations:
            return
        asked = attrs.request.resource
        versioned: dict[tuple[str, str], tuple[dict[str, Any] | None, dict[str, Any] | None]] = {}
        for invocation in invocations:
            key = (invocation.rt.group, invocation.rt.version)
            if key not in versioned:
                versioned[key] = (
                    await self._convert(attrs.obj, asked, invocation.rt),
                    await self._convert(attrs.request.old, asked, invocation.rt),
                )
        errors: list[StatusError] = []

        async def run(invocation: Invocation) -> None:
            hook = invocation.hook
            obj, old = versioned[(invocation.rt.group, invocation.rt.version)]
            try:
                answer = await self._call(invocation, attrs, obj, old, mutating=False)
            except CallingWebhookError as exc:
                if hook.ignore_failures:
                    logger.warning("Failed calling webhook, failing open %s: %s", hook.name, exc)
                else:
                    errors.append(internal(str(exc)))
                return
            except StatusError as exc:
                errors.append(exc)
                return
            self._add_warnings(attrs, answer.warnings)
            if not answer.allowed:
                errors.append(denial(hook.name, answer.status))

        async with asyncio.TaskGroup() as group:
            for invocation in invocations:
                group.create_task(run(invocation), name=f"webhook {invocation.hook.name}")
        if errors:
            raise errors[0]
