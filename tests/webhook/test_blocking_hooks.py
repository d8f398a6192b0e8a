"""Plain def defaulters and validators run in threads, off the event loop."""

from __future__ import annotations

import base64
import threading
from typing import TYPE_CHECKING, Any

import orjson

from pyctrl.webhook import Server, register_defaulter, register_validator

from .conftest import MySrv, mysrv, review

if TYPE_CHECKING:
    from pyctrl.webhook import Warnings


class BlockingDefaults:
    """A defaulter that would block (a database lookup): a plain def."""

    def __init__(self) -> None:
        self.threads: list[str] = []

    def default(self, obj: MySrv) -> None:
        self.threads.append(threading.current_thread().name)
        obj.spec.image = "looked-up:1"


class BlockingChecks:
    def __init__(self) -> None:
        self.threads: list[str] = []

    def validate_create(self, obj: MySrv) -> Warnings:
        self.threads.append(threading.current_thread().name)
        return ["checked in a thread"]

    def validate_update(self, old: MySrv, new: MySrv) -> Warnings:
        return None

    def validate_delete(self, obj: MySrv) -> Warnings:
        return None


async def test_plain_def_webhooks_run_in_threads(cert_dir: Any) -> None:
    """A plain def defaulter and validator answer from a worker thread."""
    directory, _ = cert_dir
    server = Server(port=0, cert_dir=directory)
    defaults, checks = BlockingDefaults(), BlockingChecks()
    mutate = server.handler_at(register_defaulter(server, MySrv, defaults))
    validate = server.handler_at(register_validator(server, MySrv, checks))
    assert mutate is not None
    assert validate is not None
    answer = await mutate.review(review("CREATE", mysrv(name="web")))
    response = orjson.loads(answer.body)["response"]  # type: ignore[arg-type]
    ops = orjson.loads(base64.b64decode(response["patch"]))
    assert {"op": "add", "path": "/spec/image", "value": "looked-up:1"} in ops
    answer = await validate.review(review("CREATE", mysrv(name="web")))
    response = orjson.loads(answer.body)["response"]  # type: ignore[arg-type]
    assert response["warnings"] == ["checked in a thread"]
    main = threading.main_thread().name
    assert defaults.threads
    assert checks.threads
    assert all(name != main for name in defaults.threads + checks.threads)
