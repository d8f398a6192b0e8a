"""The webhook HTTPS server: protocol errors, limits, metrics, TLS and defaults."""

from __future__ import annotations

import asyncio
import ssl
import tempfile
import warnings
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from pyctrl import metrics
from pyctrl.certs import CertificateAuthority, issue_serving_cert, server_ssl_context
from pyctrl.webhook import ConversionReview, Server, mutate_path, validate_path

from .conftest import MySrv, Served, metric, mysrv, review

if TYPE_CHECKING:
    from pathlib import Path

MUTATE = mutate_path(MySrv)
VALIDATE = validate_path(MySrv)
REQUESTS = "controller_runtime_webhook_requests_total"


def _metric(name: str, **labels: str) -> float:
    return metric(metrics.exposition().decode(), name, **labels)


def _conversion(objects: list[Any], desired: str = "climate.example.com/v1") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "conv-1", "desiredAPIVersion": desired, "objects": objects},
    }


def _thermostat(version: str = "v1alpha1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"climate.example.com/{version}",
        "kind": "Thermostat",
        "metadata": {"name": "t", "namespace": "default"},
        "spec": spec,
    }


def _gadget() -> dict[str, Any]:
    return {
        "apiVersion": "tools.example.com/v1alpha1",
        "kind": "Gadget",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"size": 1},
    }


def test_paths_follow_controller_runtime_convention() -> None:
    """Paths are /mutate-<group dashed>-<version>-<kind> and /validate-..."""
    assert MUTATE == "/mutate-myapp-example-com-v1alpha1-mysrv"
    assert VALIDATE == "/validate-myapp-example-com-v1alpha1-mysrv"


def test_defaults_are_controller_runtimes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Port 9443 and $TMPDIR/k8s-webhook-server/serving-certs/tls.{crt,key} by default."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    server = Server()
    assert server.port == 9443
    assert server.cert_dir == tmp_path / "k8s-webhook-server" / "serving-certs"
    assert server.certs.cert_file == server.cert_dir / "tls.crt"
    assert server.certs.key_file == server.cert_dir / "tls.key"
    assert server.certs.interval == 1.0


async def test_default_cert_dir_is_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cert_dir: tuple[Path, CertificateAuthority]
) -> None:
    """A server without cert_dir loads the certificate from the default directory."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    source, ca = cert_dir
    default = tmp_path / "tmp" / "k8s-webhook-server" / "serving-certs"
    default.mkdir(parents=True)
    for name in ("tls.crt", "tls.key"):
        (default / name).write_bytes((source / name).read_bytes())
    server = Server(host="127.0.0.1", port=0)
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(server.start())
        async with asyncio.timeout(10):
            await server.wait_started()
        context = ssl.create_default_context(cadata=ca.cert_pem.decode())
        _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=context)
        writer.close()
        await writer.wait_closed()
        task.cancel()


async def test_admission_round_trip_over_https(served: Served) -> None:
    """A valid AdmissionReview gets a 200 AdmissionReview response with the same uid."""
    status, body = await served.post(VALIDATE, orjson.dumps(review("CREATE", mysrv(name="a"))))
    assert status == 200
    answer = orjson.loads(body)
    assert answer["kind"] == "AdmissionReview"
    assert answer["response"] == {"uid": "uid-1", "allowed": True}


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        (b"{not json", "application/json", "not valid JSON"),
        (b"", "application/json", "body is empty"),
        (b"[1, 2]", "application/json", "not a JSON object"),
        (
            b'{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"}',
            "application/json",
            "expected apiVersion admission.k8s.io/v1",
        ),
        (
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}',
            "application/json",
            "has no request",
        ),
        (
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",'
            b' "request": {"uid": 5}}',
            "application/json",
            "malformed AdmissionReview",
        ),
        (b"{}", "text/plain", "expected application/json"),
    ],
)
async def test_broken_reviews_get_a_clear_400(
    served: Served, body: bytes, content_type: str, message: str
) -> None:
    """Malformed, mistyped or incomplete bodies are answered 400 with the reason."""
    status, text = await served.post(VALIDATE, body, content_type)
    assert status == 400
    assert message in text.decode()


_CONVERT_WANTED = "expected apiVersion apiextensions.k8s.io/v1, kind ConversionReview"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({**_conversion([]), "kind": "AdmissionReview"}, _CONVERT_WANTED),
        ({**_conversion([]), "apiVersion": "apiextensions.k8s.io/v1beta1"}, _CONVERT_WANTED),
        ({**_conversion([]), "request": None}, "ConversionReview has no request"),
        (
            {**_conversion([]), "request": {"uid": "u", "objects": []}},
            "needs uid, desiredAPIVersion and objects",
        ),
        ([_conversion([])], "not a JSON object"),
        (_conversion([_thermostat(), _gadget()]), "mixes kinds"),
        (
            _conversion([{**_thermostat(), "apiVersion": "heat.example.com/v1"}]),
            "no conversion registered",
        ),
    ],
)
async def test_broken_conversion_reviews_get_a_clear_400(
    served: Served, body: Any, message: str
) -> None:
    """/convert answers 400 with the reason for a wrong kind or version, or no request."""
    status, text = await served.post("/convert", orjson.dumps(body))
    assert status == 400
    assert message in text.decode()


async def test_bodies_over_seven_mebibytes_are_refused(served: Served) -> None:
    """A body over 7 MiB gets 413, and the server keeps serving."""
    status, _ = await served.post(VALIDATE, b" " * (7 * 1024 * 1024 + 1))
    assert status == 413
    status, _ = await served.post(VALIDATE, orjson.dumps(review("CREATE", mysrv(name="a"))))
    assert status == 200


async def test_every_request_is_counted_with_its_code(served: Served) -> None:
    """Refused requests (400, 413) are counted per webhook and code like answered ones."""
    before = {code: _metric(REQUESTS, webhook=VALIDATE, code=code) for code in ("400", "413")}
    await served.post(VALIDATE, b"{not json")
    await served.post(VALIDATE, b" " * (7 * 1024 * 1024 + 1))
    assert _metric(REQUESTS, webhook=VALIDATE, code="400") == before["400"] + 1
    assert _metric(REQUESTS, webhook=VALIDATE, code="413") == before["413"] + 1


async def test_user_code_exception_becomes_an_error_response(served: Served) -> None:
    """An exception in a validator denies with code 500, counted as a request and a panic."""
    requests = _metric(REQUESTS, webhook=VALIDATE, code="200")
    panics = _metric("controller_runtime_webhook_panics_total")
    response = await served.admit(VALIDATE, review("DELETE", None, old=mysrv("crash", name="a")))
    assert response.allowed is False
    assert response.status is not None
    assert response.status["code"] == 500
    assert "validator bug" in response.status["message"]
    assert _metric(REQUESTS, webhook=VALIDATE, code="200") == requests + 1
    assert _metric("controller_runtime_webhook_panics_total") == panics + 1


async def test_conversion_exception_becomes_a_failure_result(served: Served) -> None:
    """A RuntimeError in to_hub answers a Failure ConversionReview, counted, not a bare 500."""
    requests = _metric(REQUESTS, webhook="/convert", code="200")
    panics = _metric("controller_runtime_conversion_webhook_panics_total")
    status, body = await served.post(
        "/convert", orjson.dumps(_conversion([_gadget()], "tools.example.com/v1"))
    )
    assert status == 200
    answer = ConversionReview.model_validate_json(body).response
    assert answer is not None
    assert answer.uid == "conv-1"
    assert answer.converted_objects == []
    assert answer.result == {
        "status": "Failure",
        "message": "conversion failed: RuntimeError: converter bug",
    }
    assert _metric(REQUESTS, webhook="/convert", code="200") == requests + 1
    assert _metric("controller_runtime_conversion_webhook_panics_total") == panics + 1
    status, body = await served.post(
        "/convert", orjson.dumps(_conversion([_thermostat(targetFahrenheit=68.0)]))
    )
    good = ConversionReview.model_validate_json(body).response
    assert good is not None
    assert good.result == {"status": "Success"}
    assert good.converted_objects[0]["spec"]["targetCelsius"] == 20.0


async def test_tls_1_2_is_the_minimum(served: Served) -> None:
    """The server's TLS context refuses anything below TLS 1.2; a TLS 1.2 client connects."""
    assert served.server.certs.context.minimum_version == ssl.TLSVersion.TLSv1_2
    context = ssl.create_default_context(cadata=served.ca.cert_pem.decode())
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    _, writer = await asyncio.open_connection("127.0.0.1", served.server.port, ssl=context)
    assert writer.get_extra_info("ssl_object").version() == "TLSv1.2"
    writer.close()
    await writer.wait_closed()


def _tls_1_1_only(context: ssl.SSLContext) -> ssl.SSLContext:
    with warnings.catch_warnings():
        # TLS 1.1 is deprecated, which is the point; OpenSSL needs security level 0 for it.
        warnings.simplefilter("ignore", DeprecationWarning)
        context.set_ciphers("DEFAULT:@SECLEVEL=0")
        context.minimum_version = ssl.TLSVersion.TLSv1_1
        context.maximum_version = ssl.TLSVersion.TLSv1_1
    return context


async def test_tls_1_1_client_is_refused(served: Served) -> None:
    """A TLS 1.1 client, which a TLS 1.1 server accepts, is refused; the server keeps serving."""
    client = _tls_1_1_only(ssl.create_default_context(cadata=served.ca.cert_pem.decode()))
    # The same client against a server allowing TLS 1.1 proves this OpenSSL can speak it.
    control = _tls_1_1_only(server_ssl_context(issue_serving_cert(served.ca)))
    control.maximum_version = ssl.TLSVersion.MAXIMUM_SUPPORTED
    listener = await asyncio.start_server(lambda _r, w: w.close(), "127.0.0.1", 0, ssl=control)
    async with listener:
        port = listener.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client)
        assert writer.get_extra_info("ssl_object").version() == "TLSv1.1"
        writer.close()
    with pytest.raises(OSError):  # noqa: PT011 - the handshake fails as reset or SSLError
        await asyncio.open_connection("127.0.0.1", served.server.port, ssl=client)
    status, _ = await served.post(VALIDATE, orjson.dumps(review("CREATE", mysrv(name="a"))))
    assert status == 200


async def test_readiness_check_completes_a_tls_handshake(served: Served, tmp_path: Path) -> None:
    """check_started fails before start, passes while serving, fails when TLS is broken."""
    with pytest.raises(RuntimeError, match="has not been started yet"):
        await Server(port=0).check_started()
    await served.server.check_started()
    # A certificate without its key makes every handshake fail while the port listens.
    cert, other = issue_serving_cert(served.ca), issue_serving_cert(served.ca)
    (tmp_path / "c.pem").write_bytes(cert.cert_pem)
    (tmp_path / "k.pem").write_bytes(other.key_pem)
    with pytest.raises(ssl.SSLError):
        served.server.certs.context.load_cert_chain(tmp_path / "c.pem", tmp_path / "k.pem")
    with pytest.raises(RuntimeError, match=r"not reachable over TLS at 127\.0\.0\.1"):
        await served.server.check_started()


async def test_missing_certificate_is_a_clear_error(tmp_path: object) -> None:
    """Starting without certificate files fails naming the missing file."""
    server = Server(port=0, cert_dir=str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"tls\.crt does not exist"):
        await server.start()


def test_duplicate_registration_is_refused() -> None:
    """A path can be registered once."""
    from pyctrl.webhook import register_validator

    from .conftest import Checks

    server = Server()
    register_validator(server, MySrv, Checks())
    with pytest.raises(ValueError, match="already registered"):
        register_validator(server, MySrv, Checks())


async def test_all_interfaces_with_a_free_port_reports_the_bound_port(
    cert_dir: tuple[Path, CertificateAuthority],
) -> None:
    """With host "" and port 0 the reported port is the one clients can reach."""
    directory, ca = cert_dir
    server = Server(port=0, cert_dir=str(directory))
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(server.start())
        async with asyncio.timeout(10):
            await server.wait_started()
        context = ssl.create_default_context(cadata=ca.cert_pem.decode())
        _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=context)
        writer.close()
        await writer.wait_closed()
        await server.check_started()
        task.cancel()
