"""Kubeconfig files for test API servers.

A kubeconfig is how kubectl and every Kubernetes client find a cluster: a server
URL, the CA that signed its certificate, and credentials. The test environment
writes one per start so that kubectl, a controller under test run as a
subprocess, or a developer's shell can reach the embedded server exactly as they
would reach a real cluster.
"""

from __future__ import annotations

import base64
import os
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["kubeconfig_dict", "write_kubeconfig"]


def kubeconfig_dict(
    server: str,
    *,
    ca_pem: bytes,
    token: str | None = None,
    client_cert_pem: bytes | None = None,
    client_key_pem: bytes | None = None,
    name: str = "envtest",
    user: str = "envtest-admin",
) -> dict[str, Any]:
    """Build a kubeconfig with one cluster, one user and one current context.

    The user authenticates by bearer token, by client certificate, or both.

    Args:
        server: The API server URL, e.g. ``https://127.0.0.1:41234``.
        ca_pem: The PEM CA certificate that signed the server's certificate.
        token: The bearer token.
        client_cert_pem: A PEM client certificate.
        client_key_pem: Its PEM private key.
        name: Name of the cluster and of the context.
        user: Name of the user entry.

    Returns:
        The kubeconfig as a dict (``apiVersion: v1, kind: Config``).
    """
    credentials: dict[str, str] = {}
    if token is not None:
        credentials["token"] = token
    if client_cert_pem is not None and client_key_pem is not None:
        credentials["client-certificate-data"] = base64.b64encode(client_cert_pem).decode()
        credentials["client-key-data"] = base64.b64encode(client_key_pem).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [
            {
                "name": name,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode("ascii"),
                },
            }
        ],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": user}}],
        "current-context": name,
    }


def write_kubeconfig(path: Path, config: dict[str, Any]) -> None:
    """Write a kubeconfig readable by its owner only (it holds a credential).

    Args:
        path: The file to (over)write.
        config: The kubeconfig, e.g. from `kubeconfig_dict`.
    """
    data = yaml.safe_dump(config, sort_keys=False).encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
