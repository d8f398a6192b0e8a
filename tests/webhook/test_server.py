"""The webhook HTTPS server: protocol errors, limits, TLS and certificate rotation."""

from __future__ import annotations

import asyncio
import ssl
from typing import TYPE_CHECKING

import orjson
import pytest

from pyctrl import metrics
from pyctrl.certs import CertificateAuthority, issue_serving_cert, write_cert_dir
from pyctrl.webhook import Server, mutate_path, validate_path

from .conftest import MySrv, Served, mysrv, review

if TYPE_CHECKING:
    from pathlib import Path

MUTATE = mutate_path(MySrv)
VALIDATE = validate_path(MySrv)


def test_paths_follow_controller_runtime_convention() -> None:
    """Paths are /mutate-<group dashed>-<version>-<kind> and /validate-..."""
    assert MUTATE == "/mutate-myapp-example-com-v1alpha1-mysrv"
    assert VALIDATE == "/validate-myapp-example-com-v1alpha1-mysrv"


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


async def test_bodies_over_seven_mebibytes_are_refused(served: Served) -> None:
    """A body over 7 MiB gets 413, and the server keeps serving."""
    status, _ = await served.post(VALIDATE, b" " * (7 * 1024 * 1024 + 1))
    assert status == 413
    status, _ = await served.post(VALIDATE, orjson.dumps(review("CREATE", mysrv(name="a"))))
    assert status == 200


async def test_user_code_exception_becomes_an_error_response(served: Served) -> None:
    """An exception in a validator denies with code 500 and is counted per webhook."""
    counter = metrics.webhook_requests_total.labels(VALIDATE, "200")
    before = counter._value.get()
    status, body = await served.post(
        VALIDATE, orjson.dumps(review("DELETE", None, old=mysrv("crash", name="a")))
    )
    assert status == 200
    response = orjson.loads(body)["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 500
    assert "validator bug" in response["status"]["message"]
    assert counter._value.get() == before + 1


async def test_tls_1_2_is_the_minimum(served: Served) -> None:
    """The server's TLS context refuses anything below TLS 1.2; a TLS 1.2 client connects."""
    assert served.server.certs.context.minimum_version == ssl.TLSVersion.TLSv1_2
    context = ssl.create_default_context(cadata=served.ca.cert_pem.decode())
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    _, writer = await asyncio.open_connection("127.0.0.1", served.server.port, ssl=context)
    assert writer.get_extra_info("ssl_object").version() == "TLSv1.2"
    writer.close()
    await writer.wait_closed()


async def _serial(served: Served) -> int:
    _, writer = await asyncio.open_connection("127.0.0.1", served.server.port, ssl=served.ssl)
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
        await writer.wait_closed()
    from cryptography import x509

    return x509.load_der_x509_certificate(der).serial_number


async def test_rotated_certificate_is_picked_up_without_dropping_requests(served: Served) -> None:
    """Files replaced on disk are served to new connections while requests keep succeeding."""
    old_serial = await _serial(served)
    replacement = issue_serving_cert(served.ca)
    failures: list[int] = []
    stop = asyncio.Event()

    async def hammer() -> int:
        count = 0
        while not stop.is_set():
            status, _ = await served.post(VALIDATE, orjson.dumps(review("CREATE", mysrv(name="a"))))
            if status != 200:
                failures.append(status)
            count += 1
        return count

    seen = served.server.certs.reloads
    async with asyncio.TaskGroup() as tg:
        load = tg.create_task(hammer())
        write_cert_dir(served.cert_dir, replacement)
        async with asyncio.timeout(10):
            await served.server.certs.wait_for_change(seen)
        stop.set()
    assert await _serial(served) == replacement.cert.serial_number
    assert old_serial != replacement.cert.serial_number
    assert failures == []
    assert load.result() > 0


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
        task.cancel()
