"""The operator's command line: controller-runtime's usual flags, and the Options they give.

`parser` builds the flags ``main.go`` takes in a kubebuilder project; `manager_options`
turns parsed flags into the Manager's `pyctrl.manager.Options`.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pyctrl.cache import CacheOptions
from pyctrl.filters import with_authentication_and_authorization
from pyctrl.manager import Options
from pyctrl.metricsserver import Options as MetricsServerOptions
from pyctrl.shardelection import ShardingOptions
from pyctrl.webhook import Server

if TYPE_CHECKING:
    from pyctrl.app._spec import OperatorSpec

__all__ = ["manager_options", "parser"]


def parser(op: OperatorSpec) -> argparse.ArgumentParser:
    """The command-line flags (controller-runtime's usual ones)."""
    parser = argparse.ArgumentParser(prog=op.command_name, description=f"The {op.name} operator.")
    parser.add_argument(
        "--kubeconfig", help="kubeconfig file (default: KUBECONFIG, in-cluster, ~/.kube/config)"
    )
    parser.add_argument("--context", help="kubeconfig context to use")
    parser.add_argument(
        "--metrics-bind-address", default=":8080", help='metrics address; "0" disables'
    )
    parser.add_argument("--health-probe-bind-address", default=":8081", help="probe address")
    parser.add_argument("--leader-elect", action="store_true", help="enable leader election")
    parser.add_argument(
        "--leader-election-namespace",
        default="",
        help="namespace of the leader-election Lease (default: the pod's own namespace)",
    )
    parser.add_argument(
        "--shard-ring",
        default="",
        help="run sharded: this replica takes its share of the ring's slots (its Leases "
        "live in the leader-election namespace)",
    )
    parser.add_argument("--shard-slots", type=int, default=64, help="slots of the ring")
    parser.add_argument(
        "--namespace", default="", help="watch only this namespace (several: comma-separated)"
    )
    parser.add_argument(
        "--log-format",
        choices=("json", "console"),
        default="json",
        help="log lines as JSON objects, or colored for people (default: json)",
    )
    parser.add_argument(
        "--log-level",
        default="info",
        help="lowest level logged: debug, info, warning, error (default: info)",
    )
    parser.add_argument(
        "--webhook-port",
        type=int,
        default=9443,
        help="port of the webhook server, if setup registers webhooks (default: 9443)",
    )
    parser.add_argument(
        "--webhook-cert-dir",
        default=None,
        help="directory holding the webhook server's tls.crt and tls.key "
        "(default: $TMPDIR/k8s-webhook-server/serving-certs)",
    )
    parser.add_argument(
        "--webhook-cert-secret",
        default="",
        help="manage the webhook certificates in this Secret (NAMESPACE/NAME) without "
        "cert-manager: every replica serves from it, the leader rotates it and keeps the "
        "caBundle of the webhook configurations and CRDs current",
    )
    parser.add_argument(
        "--metrics-secure",
        action="store_true",
        help="serve metrics over HTTPS, authenticated and authorized by the API server",
    )
    parser.add_argument(
        "--metrics-cert-dir",
        default=None,
        help="metrics tls.crt/tls.key (default: self-signed)",
    )
    parser.add_argument(
        "--debug-bind-address",
        default="",
        help="address of the /debug endpoints (off); without --metrics-secure, loopback only",
    )
    parser.add_argument(
        "--debug-allow-unauthenticated",
        action="store_true",
        help="serve /debug without --metrics-secure on any address (task stacks for anyone)",
    )
    return parser


def manager_options(op: OperatorSpec, args: argparse.Namespace) -> Options:
    """The Manager's options for ``op`` from parsed flags."""
    return Options(
        metrics_bind_address=args.metrics_bind_address,
        health_probe_bind_address=args.health_probe_bind_address,
        leader_election=args.leader_elect,
        leader_election_id=op.leader_election_id,
        leader_election_namespace=args.leader_election_namespace,
        cache=(
            CacheOptions(namespaces=[n for n in args.namespace.split(",") if n])
            if args.namespace
            else None
        ),
        webhook_server=Server(port=args.webhook_port, cert_dir=args.webhook_cert_dir),
        field_owner=op.command_name,
        metrics=MetricsServerOptions(
            secure_serving=args.metrics_secure,
            filter_provider=with_authentication_and_authorization if args.metrics_secure else None,
            cert_dir=args.metrics_cert_dir,
        ),
        debug_bind_address=args.debug_bind_address,
        debug_allow_unauthenticated=args.debug_allow_unauthenticated,
        sharding=(
            ShardingOptions(
                name=args.shard_ring,
                namespace=args.leader_election_namespace,
                slots=args.shard_slots,
            )
            if args.shard_ring
            else None
        ),
    )
