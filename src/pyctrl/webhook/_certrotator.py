"""Webhook certificates the operator manages itself: no cert-manager needed.

What knative's certificate reconciler (borrowed by Karpenter) and open-policy-agent's
cert-controller (Gatekeeper) do for Go operators, with `pyctrl.certs`, the webhook
server's `CertWatcher` and the API server only:

- One Secret (``<name>-webhook-server-cert`` in the operator's namespace) holds a CA
  (``ca.crt``: the CA bundle, the signing CA first; ``ca.key``) and a serving
  certificate for the webhook Service's DNS names (``tls.crt``, ``tls.key``).
- Every replica serves from it (`SecretCertificates`, the webhook server's
  ``cert_provider``): it reads the Secret, creating it if no replica has yet (one
  create wins, the others read the winner's), writes the pair into the server's
  certificate directory, and keeps it current; the `CertWatcher` reloads it.
- The leader (`CertRotator`, a leader-election runnable) keeps ``caBundle`` current in
  the operator's webhook configurations and in the ``spec.conversion`` of its CRDs, and
  rotates before expiry: the serving certificate 30 days before it expires (same CA: the
  bundle does not change), the CA 90 days before it expires in three steps that never
  leave a replica serving a certificate the API server does not trust:

  1. a new CA is added to the bundle, signing CA first (the old one stays in it);
  2. the bundle with both CAs is published to every configuration and CRD;
  3. a check interval later (10 minutes), a serving certificate signed by the new CA is
     written to the Secret, and the replicas serve it.

  The old CA leaves the bundle once it has expired.

Times are read from a `pyctrl.clock.Clock`: a `FakeClock` advanced by 300 days makes
the rotator see certificates 300 days older (their validity is computed from that time,
while they stay valid for clients checking against the real time).
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pyctrl.certs import (
    CertificateAuthority,
    generate_ca,
    issue_serving_cert,
    write_cert_pems,
)
from pyctrl.clock import Clock, RealClock
from pyctrl.errors import AlreadyExistsError, APIError, ConflictError, NotFoundError
from pyctrl.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from pyctrl.client import RESTClient

__all__ = ["CertRotator", "RotationOptions", "SecretCertificates"]

_log = get_logger("pyctrl.webhook.certs")
_DAY = datetime.timedelta(days=1)
_JSON = "application/json"
_ADMISSION = "/apis/admissionregistration.k8s.io/v1"
_CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@dataclass(frozen=True)
class RotationOptions:
    """Lifetimes and rotation points of self-managed webhook certificates.

    Attributes:
        ca_validity: How long a CA is valid (365 days).
        ca_rotate_before: A new CA is made this long before the current one expires (90 days).
        cert_validity: How long a serving certificate is valid (90 days).
        cert_rotate_before: A new one is issued this long before it expires (30 days).
        check_interval: Seconds between the leader's checks (caBundle drift, rotation).
        sync_interval: Seconds between each replica's reads of the Secret.
    """

    ca_validity: datetime.timedelta = 365 * _DAY
    ca_rotate_before: datetime.timedelta = 90 * _DAY
    cert_validity: datetime.timedelta = 90 * _DAY
    cert_rotate_before: datetime.timedelta = 30 * _DAY
    check_interval: float = 600.0
    sync_interval: float = 30.0

    def __post_init__(self) -> None:
        if not self.ca_rotate_before < self.ca_validity:
            raise ValueError("ca_rotate_before must be shorter than ca_validity")
        if not self.cert_rotate_before < self.cert_validity:
            raise ValueError("cert_rotate_before must be shorter than cert_validity")
        if self.cert_validity > self.ca_validity - self.ca_rotate_before:
            raise ValueError(
                "cert_validity must fit in a CA's life before its rotation "
                "(ca_validity - ca_rotate_before)"
            )


class _WallClock:
    """Wall time that moves with a `Clock`: the real time plus what the clock has advanced."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._wall = datetime.datetime.now(datetime.UTC)
        self._mono = clock.now()

    def now(self) -> datetime.datetime:
        return self._wall + datetime.timedelta(seconds=self.clock.now() - self._mono)


@dataclass
class _Material:
    """What the Secret holds, parsed."""

    cas: list[x509.Certificate]
    ca_key: ec.EllipticCurvePrivateKey
    leaf: x509.Certificate
    data: dict[str, bytes]

    @property
    def signing_ca(self) -> CertificateAuthority:
        return CertificateAuthority(cert=self.cas[0], key=self.ca_key)

    @property
    def bundle(self) -> bytes:
        return self.data["ca.crt"]


def _pem(certs: Sequence[x509.Certificate]) -> bytes:
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)


def _parse(data: dict[str, bytes]) -> _Material | None:
    try:
        cas = x509.load_pem_x509_certificates(data["ca.crt"])
        key = serialization.load_pem_private_key(data["ca.key"], password=None)
        leaf = x509.load_pem_x509_certificate(data["tls.crt"])
        serialization.load_pem_private_key(data["tls.key"], password=None)
    except (KeyError, ValueError):
        return None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or not cas:
        return None
    return _Material(cas=list(cas), ca_key=key, leaf=leaf, data=dict(data))


def _signed_by(leaf: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        leaf.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _hosts(leaf: x509.Certificate) -> set[str]:
    try:
        san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return {str(n.value) for n in san}


class _SecretStore:
    """Reads, creates and replaces the certificate Secret."""

    def __init__(
        self,
        rest: RESTClient,
        namespace: str,
        name: str,
        *,
        hosts: Sequence[str],
        options: RotationOptions,
        wall: _WallClock,
    ) -> None:
        self.rest, self.namespace, self.name = rest, namespace, name
        self.hosts, self.options, self.wall = list(hosts), options, wall
        self.path = f"/api/v1/namespaces/{namespace}/secrets/{name}"

    def ca_name(self, now: datetime.datetime) -> str:
        """A CA's common name: the Secret's and when it was made, so two CAs differ."""
        return f"{self.name}-ca@{int(now.timestamp())}"

    def fresh(self) -> dict[str, bytes]:
        now = self.wall.now()
        ca = generate_ca(self.ca_name(now), validity=self.options.ca_validity, now=now)
        leaf = issue_serving_cert(ca, self.hosts, validity=self.options.cert_validity, now=now)
        return {
            "ca.crt": ca.cert_pem,
            "ca.key": ca.key_pem,
            "tls.crt": leaf.cert_pem,
            "tls.key": leaf.key_pem,
        }

    def issue(self, material: _Material) -> dict[str, bytes]:
        leaf = issue_serving_cert(
            material.signing_ca,
            self.hosts,
            validity=self.options.cert_validity,
            now=self.wall.now(),
        )
        return {**material.data, "tls.crt": leaf.cert_pem, "tls.key": leaf.key_pem}

    def _object(self, data: dict[str, bytes], resource_version: str | None) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if resource_version is not None:
            metadata["resourceVersion"] = resource_version
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/tls",
            "metadata": metadata,
            "data": {k: base64.b64encode(v).decode() for k, v in sorted(data.items())},
        }

    async def read(self) -> tuple[dict[str, bytes], str] | None:
        """The Secret's data and resourceVersion, or None if it does not exist."""
        try:
            obj = (await self.rest.request("GET", self.path)).json()
        except NotFoundError:
            return None
        data = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
        return data, str(obj["metadata"]["resourceVersion"])

    async def get_or_create(self) -> tuple[dict[str, bytes], str]:
        """The Secret, created with a fresh CA and certificate if missing (one create wins)."""
        while True:
            found = await self.read()
            if found is not None:
                return found
            body = json.dumps(self._object(self.fresh(), None)).encode()
            try:
                await self.rest.request(
                    "POST",
                    f"/api/v1/namespaces/{self.namespace}/secrets",
                    body=body,
                    content_type=_JSON,
                )
            except AlreadyExistsError:
                continue  # another replica created it first: read theirs
            _log.info("created the webhook certificate Secret", secret=self.path)

    async def replace(self, data: dict[str, bytes], resource_version: str) -> None:
        """Write ``data``; `ConflictError` if the Secret changed since it was read."""
        body = json.dumps(self._object(data, resource_version)).encode()
        await self.rest.request("PUT", self.path, body=body, content_type=_JSON)


class SecretCertificates:
    """Every replica's certificate source: the Secret, written to the webhook server's files.

    The webhook `pyctrl.webhook.Server`'s ``cert_provider``: `provide` runs for the
    server's life; the server loads the files once `provide` has written them, and its
    `CertWatcher` picks up every later change.

    Args:
        rest: A client of the cluster (the Manager's ``rest``).
        namespace: The Secret's namespace (the operator's).
        name: The Secret's name.
        hosts: The serving certificate's DNS names (the webhook Service's).
        options: Lifetimes and intervals.
        clock: Where time is read and waited for.
    """

    def __init__(
        self,
        rest: RESTClient,
        namespace: str,
        name: str,
        hosts: Sequence[str],
        *,
        options: RotationOptions | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.options = options or RotationOptions()
        self.clock: Clock = clock or RealClock()
        self.store = _SecretStore(
            rest, namespace, name, hosts=hosts, options=self.options, wall=_WallClock(self.clock)
        )
        self.written = 0
        """How many times a new pair was written to the directory."""

    async def provide(self, cert_dir: Path, ready: asyncio.Event) -> None:
        """Write the Secret's pair into ``cert_dir``, set ``ready``, keep it current."""
        last: dict[str, bytes] | None = None
        while True:
            started = self.clock.now()
            try:
                data, _ = await self.store.get_or_create()
            except APIError as exc:
                _log.warning("cannot read the webhook certificate Secret", error=str(exc))
            else:
                if data != last and _parse(data) is not None:
                    write_cert_pems(
                        cert_dir,
                        cert_pem=data["tls.crt"],
                        key_pem=data["tls.key"],
                        ca_pem=data["ca.crt"],
                    )
                    last = data
                    self.written += 1
                    ready.set()
            await self.clock.sleep_until(started + self.options.sync_interval)


class CertRotator:
    """The leader's part: rotation, and ``caBundle`` in the configurations and CRDs.

    A `pyctrl.manager.Runnable` that needs leader election. `reconcile` does one pass;
    `start` repeats it every ``check_interval`` seconds.

    Args:
        rest: A client of the cluster (the Manager's ``rest``).
        namespace: The Secret's namespace (the operator's).
        name: The Secret's name.
        hosts: The serving certificate's DNS names (the webhook Service's).
        mutating: Names of the MutatingWebhookConfigurations whose webhooks it serves.
        validating: Names of the ValidatingWebhookConfigurations.
        crds: Names of the CRDs whose conversion webhook it serves.
        options: Lifetimes and intervals.
        clock: Where time is read and waited for.
    """

    need_leader_election = True

    def __init__(
        self,
        rest: RESTClient,
        namespace: str,
        name: str,
        hosts: Sequence[str],
        *,
        mutating: Sequence[str] = (),
        validating: Sequence[str] = (),
        crds: Sequence[str] = (),
        options: RotationOptions | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.name = "webhook-cert-rotator"
        self.rest = rest
        self.options = options or RotationOptions()
        self.clock: Clock = clock or RealClock()
        self.wall = _WallClock(self.clock)
        self.store = _SecretStore(
            rest, namespace, name, hosts=hosts, options=self.options, wall=self.wall
        )
        self.targets = [
            *(f"{_ADMISSION}/mutatingwebhookconfigurations/{n}" for n in mutating),
            *(f"{_ADMISSION}/validatingwebhookconfigurations/{n}" for n in validating),
            *(f"{_CRDS}/{n}" for n in crds),
        ]
        self.rotations: list[str] = []
        """What it rotated, in order (``ca``, ``certificate``, ``replaced``)."""
        self.checked = asyncio.Event()
        """Set after each pass (tests clear it and wait)."""

    async def start(self) -> None:
        """Reconcile now and every ``check_interval`` seconds until cancelled."""
        while True:
            # Deadlines from each pass's start: time advanced during a pass is not lost.
            started = self.clock.now()
            try:
                await self.reconcile()
            except APIError as exc:
                _log.warning("webhook certificate check failed", error=str(exc))
            await self.clock.sleep_until(started + self.options.check_interval)

    async def reconcile(self) -> None:
        """One pass: rotate what is due, publish the bundle, then swap the serving pair."""
        while True:
            try:
                await self._reconcile_once()
            except ConflictError:
                continue  # the Secret changed under us (another replica): start over
            self.checked.set()
            return

    async def _reconcile_once(self) -> None:
        data, version = await self.store.get_or_create()
        material = _parse(data)
        now = self.wall.now()
        if material is None or material.cas[0].not_valid_after_utc <= now:
            _log.warning("the webhook certificate Secret is unusable: replacing it")
            await self.store.replace(self.store.fresh(), version)
            self.rotations.append("replaced")
            data, version = await self.store.get_or_create()
            material = _parse(data)
            assert material is not None  # just written
        bundle = self._rotated_bundle(material, now)
        if bundle is not None:
            material.data = {**material.data, **bundle}
            await self.store.replace(material.data, version)
            if "ca.key" in bundle:
                self.rotations.append("ca")
                _log.info("rotated the webhook CA: the new one joined the bundle first")
            await self._publish(material.bundle)
            # The serving pair follows at the next pass: by then every API server has
            # had a whole check interval to see the bundle with the new CA.
            return
        await self._publish(material.bundle)
        if self._leaf_due(material, now):
            await self.store.replace(self.store.issue(material), version)
            self.rotations.append("certificate")
            _log.info("rotated the webhook serving certificate")

    def _rotated_bundle(
        self, material: _Material, now: datetime.datetime
    ) -> dict[str, bytes] | None:
        """The new ``ca.crt``/``ca.key`` if the CA is due or the bundle has expired CAs."""
        current = material.cas[0]
        keep = [c for c in material.cas[1:] if c.not_valid_after_utc > now]
        if current.not_valid_after_utc - now <= self.options.ca_rotate_before:
            ca = generate_ca(self.store.ca_name(now), validity=self.options.ca_validity, now=now)
            return {"ca.crt": _pem([ca.cert, current, *keep]), "ca.key": ca.key_pem}
        if len(keep) != len(material.cas) - 1:
            return {"ca.crt": _pem([current, *keep])}
        return None

    def _leaf_due(self, material: _Material, now: datetime.datetime) -> bool:
        leaf, ca = material.leaf, material.cas[0]
        if not _signed_by(leaf, ca):
            # Signed by the previous CA: move to the new one once the bundle with it has
            # been published for a check interval (by any replica's rotator).
            born = ca.not_valid_after_utc - self.options.ca_validity
            return now - born >= datetime.timedelta(seconds=self.options.check_interval)
        return leaf.not_valid_after_utc - now <= self.options.cert_rotate_before or _hosts(
            leaf
        ) != set(self.store.hosts)

    async def _publish(self, bundle: bytes) -> None:
        encoded = base64.b64encode(bundle).decode()
        for path in self.targets:
            while True:
                try:
                    obj = (await self.rest.request("GET", path)).json()
                except NotFoundError:
                    break  # not applied yet: the next pass publishes it
                if not _inject(obj, encoded):
                    break
                try:
                    await self.rest.request(
                        "PUT", path, body=json.dumps(obj).encode(), content_type=_JSON
                    )
                except ConflictError:
                    continue
                _log.info("published the webhook CA bundle", object=path.rsplit("/", 2)[-2:])
                break


def _inject(obj: dict[str, Any], encoded: str) -> bool:
    """Set ``caBundle`` in a webhook configuration or a CRD's conversion; True if changed."""
    configs: list[dict[str, Any]] = []
    if obj.get("kind") == "CustomResourceDefinition":
        conversion = (obj.get("spec") or {}).get("conversion") or {}
        if conversion.get("strategy") == "Webhook":
            configs.append(conversion.setdefault("webhook", {}).setdefault("clientConfig", {}))
    else:
        configs.extend(w.setdefault("clientConfig", {}) for w in obj.get("webhooks") or [])
    changed = False
    for config in configs:
        if config.get("caBundle") != encoded:
            config["caBundle"] = encoded
            changed = True
    return changed
