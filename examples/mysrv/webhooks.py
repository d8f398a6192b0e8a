"""MySrv's admission webhooks: defaulting and validation, and a Pod sidecar injector.

The API server calls them on every create and update of a MySrv (and the validating one
on deletes), before the object is stored:

- `MySrvDefaulter` sets ``spec.port`` to 80 when it is missing;
- `MySrvValidator` requires ``spec.name`` (a label value: it labels the pods), keeps
  ``port`` within 1-65535, refuses to change ``name`` once set (it is part of the
  Deployment's selector, which Kubernetes does not let change), and warns about a
  privileged port other than the usual HTTP ones. A denial names each bad field the way
  the API server's own validation does, so ``kubectl`` prints a familiar message.

`SidecarInjector` is a webhook on a built-in kind: it adds a ``log-agent`` container to
every Pod labelled ``myapp.example.com/inject-sidecar: "true"`` (the webhook's
``objectSelector``, so other Pods are never sent to it).

An object being deleted is let through unchecked: the controller must be able to remove
its finalizer even from an object stored before a rule existed.
"""

from __future__ import annotations

import re

from kubernetes_asyncio.client import V1Container, V1Pod, V1VolumeMount

from examples.mysrv.api import DEFAULT_PORT, MySrv, MySrvSpec
from pyctrl.webhook import FieldError, InvalidObjectError, Warnings, WebhookOptions

__all__ = [
    "INJECT_LABEL",
    "SIDECAR_OPTIONS",
    "MySrvDefaulter",
    "MySrvValidator",
    "SidecarInjector",
    "message",
    "spec_errors",
]

INJECT_LABEL = "myapp.example.com/inject-sidecar"
"""Pods with this label set to ``"true"`` get the log-agent sidecar."""
SIDECAR_IMAGE = "busybox:1.36"
SIDECAR_OPTIONS = WebhookOptions(
    object_selector={"matchLabels": {INJECT_LABEL: "true"}},
    failure_policy="Fail",
    timeout_seconds=5,
    reinvocation_policy="IfNeeded",
)
"""How the API server calls `SidecarInjector`: labelled Pods only, 5 s at most."""

# A label value (k8s.io/apimachinery validation.IsValidLabelValue), never empty here.
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_MAX_LABEL_VALUE = 63
_USUAL_HTTP_PORTS = (80, 443)


class MySrvDefaulter:
    """Fills in what a MySrv may leave out: ``spec.port`` defaults to 80."""

    async def default(self, obj: MySrv) -> None:
        """Set the defaults on ``obj`` in place."""
        if obj.spec.port is None:
            obj.spec.port = DEFAULT_PORT


class MySrvValidator:
    """Accepts a MySrv only with a valid name and port, and keeps its name immutable."""

    async def validate_create(self, obj: MySrv) -> Warnings:
        """Check a new MySrv; deny it with every bad field, or return warnings."""
        return _check_spec(obj)

    async def validate_update(self, old: MySrv, new: MySrv) -> Warnings:
        """Check an update: the name must not change, and the result must be valid."""
        if new.metadata.deletion_timestamp is not None:
            return None
        if old.spec.name and new.spec.name != old.spec.name:
            invalid = f'Invalid value: "{new.spec.name}": field is immutable'
            error = FieldError("spec.name", invalid)
            raise InvalidObjectError(message([error]), [error])
        return _check_spec(new)

    async def validate_delete(self, obj: MySrv) -> Warnings:
        """Any MySrv may be deleted (its finalizer cleans up after it)."""
        return None


class SidecarInjector:
    """Adds a ``log-agent`` container to a Pod (once), sharing the Pod's volumes' logs."""

    async def default(self, obj: V1Pod) -> None:
        """Append the sidecar unless the Pod already has it."""
        containers = obj.spec.containers
        if any(c.name == "log-agent" for c in containers):
            return
        mounts = [
            V1VolumeMount(name=m.name, mount_path=m.mount_path, read_only=True)
            for c in containers
            for m in c.volume_mounts or []
        ]
        containers.append(
            V1Container(
                name="log-agent",
                image=SIDECAR_IMAGE,
                args=["sh", "-c", "tail -F /var/log/app/*.log 2>/dev/null || sleep infinity"],
                volume_mounts=mounts or None,
            )
        )


def spec_errors(spec: MySrvSpec) -> list[FieldError]:
    """What is wrong with ``spec`` (empty if it is valid); the controller checks it too."""
    errors: list[FieldError] = []
    name, port = spec.name, spec.port
    if not name:
        errors.append(FieldError("spec.name", "Required value", "FieldValueRequired"))
    elif len(name) > _MAX_LABEL_VALUE or not _LABEL_VALUE.match(name):
        errors.append(
            FieldError(
                "spec.name",
                f'Invalid value: "{name}": must be at most {_MAX_LABEL_VALUE} letters, digits, '
                "'-', '_' or '.', starting and ending with a letter or digit",
            )
        )
    if port is not None and not 1 <= port <= 65535:
        errors.append(
            FieldError(
                "spec.port", f"Invalid value: {port}: must be between 1 and 65535, inclusive"
            )
        )
    return errors


def _check_spec(obj: MySrv) -> Warnings:
    errors = spec_errors(obj.spec)
    if errors:
        raise InvalidObjectError(message(errors), errors)
    port = obj.spec.port
    if port is not None and port < 1024 and port not in _USUAL_HTTP_PORTS:
        return [f"spec.port {port} is a privileged port: the pod needs NET_BIND_SERVICE to bind it"]
    return None


def message(errors: list[FieldError]) -> str:
    """The errors as one line, the way the API server words a validation failure."""
    return "; ".join(f"{error.field}: {error.message}" for error in errors)
