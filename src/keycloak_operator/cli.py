"""The `keycloak-operator` command: run the operator, print the CRDs, and operator-side tools."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from keycloak_operator.core.ingress_policy import IngressPolicy


def _run(args: argparse.Namespace) -> int:
    import kopf

    from keycloak_operator.core.common.peering import default_priority
    from keycloak_operator.core.replication.servers import ServerPolicy
    from keycloak_operator.shell import lifecycle, runtime

    lifecycle.register()  # kopf's handlers, both controllers', are registered by importing them
    from keycloak_operator.shell.leadership import leadership
    from keycloak_operator.shell.settings import Settings, idp_loopback_http

    try:
        policy = ServerPolicy(
            args.cluster_domain,
            tuple(h.lower() for h in args.external_server_host or ()),
            idp_loopback_http=idp_loopback_http(),
        )
        allowed_ingress = ingress_policy(args)
    except ValueError as e:
        print(f"keycloak-operator run: {e}", file=sys.stderr)
        return 2
    runtime.configure(Settings.parse(args.namespace, policy, ingress=allowed_ingress))
    priority = args.priority if args.priority is not None else default_priority()
    identity = _identity()
    leadership.configure(args.peering, identity, priority, args.namespace)

    log_format = kopf.LogFormat.JSON if args.log_format == "json" else kopf.LogFormat.FULL
    kopf.configure(verbose=args.verbose, log_format=log_format)
    if args.metrics_port:
        from keycloak_operator.shell import metrics

        metrics.serve(args.metrics_port)
    if not args.verbose:
        # kopf logs every watch-event handler run at INFO: thousands of lines an hour that say nothing.
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)
        # httpx (python-keycloak's transport) logs every admin API request at INFO.
        logging.getLogger("httpx").setLevel(logging.WARNING)
    kopf.run(
        clusterwide=not args.namespace,
        namespaces=args.namespace or [],
        standalone=args.peering is None,
        peering_name=args.peering,
        priority=priority,
        identity=identity,  # type: ignore[arg-type]  # kopf.Identity is a NewType of str, not exported
        liveness_endpoint=args.liveness,
    )
    return 0


def ingress_policy(args: argparse.Namespace) -> IngressPolicy:
    """The installation's allow-lists for spec.ingress; raises ValueError for an entry that is no name."""
    from keycloak_operator.core.ingress_policy import IngressPolicy

    return IngressPolicy(
        classes=tuple(args.ingress_class or ()),
        annotation_keys=tuple(args.ingress_annotation_key or ()),
        host_suffixes=tuple(args.ingress_host or ()),
        gateways=tuple(args.gateway or ()),
    )


def _identity() -> str:
    """The name this replica goes by in the peering object: the pod's name in a cluster, followed by the
    stored formats it supports, which the other replicas read there (core/common/formats.py, ADR 0022)."""
    import secrets
    import socket

    from keycloak_operator.core.common import formats

    name = os.environ.get("POD_ID") or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
    return formats.advertise(name)


def _crds(args: argparse.Namespace) -> int:
    from keycloak_operator.models import crd, generated

    if args.write:
        generated.write(Path(args.write))
        return 0
    sys.stdout.write(crd.render_yaml())
    return 0


def _tool(args: argparse.Namespace, work: Callable[[Any], Awaitable[int]]) -> int:
    """Runs a command-line tool against the cluster --kubeconfig, --context and -n choose; a failure to
    ask (no kubeconfig, a wrong context, no answer, no such Keycloak) ends it with one line and its own
    exit code (shell/cli_target.py, docs/guide/cli.md)."""
    import asyncio

    from keycloak_operator.shell import cli_target

    async def main() -> int:
        target = await cli_target.resolve(args.kubeconfig, args.context, args.namespace)
        return await work(target)

    try:
        return asyncio.run(main())
    except cli_target.CommandError as e:
        print(f"keycloak-operator {args.command}: {e}", file=sys.stderr)
        return int(e.code)


def _rollback(args: argparse.Namespace) -> int:
    from keycloak_operator.core.rollback import RollbackRefused
    from keycloak_operator.shell import rollback

    async def work(target: Any) -> int:
        try:
            print(await rollback.run(target, args.name))
        except RollbackRefused as refused:
            print(f"rollback refused: {refused}", file=sys.stderr)
            return 1
        return 0

    return _tool(args, work)


def _status(args: argparse.Namespace) -> int:
    from keycloak_operator.shell import status_command

    async def work(target: Any) -> int:
        await status_command.run(target, args.name, args.watch)
        return 0

    try:
        return _tool(args, work)
    except KeyboardInterrupt:
        return 0  # the way out of --watch


def _plan(args: argparse.Namespace) -> int:
    from keycloak_operator.core import upgrade_plan
    from keycloak_operator.shell import plan_command

    async def work(target: Any) -> int:
        plan = await plan_command.run(target, args.name, args.image)
        return 1 if plan.path == upgrade_plan.REFUSE else 0

    return _tool(args, work)


def _image_recipe(args: argparse.Namespace) -> int:
    from keycloak_operator.shell import recipe_command

    async def work(target: Any) -> int:
        sys.stdout.write(await recipe_command.run(target, args.name))
        return 0

    return _tool(args, work)


def _cluster_options() -> argparse.ArgumentParser:
    """kubectl's options, for the tools that read a cluster."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--kubeconfig", help="the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)"
    )
    common.add_argument("--context", help="the kubeconfig context to use (default: its current-context)")
    common.add_argument(
        "-n", "--namespace", help="the Keycloak's namespace (default: the context's namespace, else default)"
    )
    return common


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("keycloak-operator")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="keycloak-operator", description=__doc__)
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    cluster = _cluster_options()
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the operator against the current kubeconfig (or in-cluster)")
    run.add_argument("-n", "--namespace", action="append", help="watch only this namespace (repeatable)")
    run.add_argument("-A", "--all-namespaces", action="store_true", help="watch every namespace (default)")
    run.add_argument("--peering", default=None, help="kopf peering name for HA (default: standalone)")
    run.add_argument(
        "--priority",
        type=int,
        default=None,
        help="peering priority; the highest live one acts (default: random, so replicas never tie)",
    )
    run.add_argument("--liveness", default=None, help="liveness endpoint, e.g. http://0.0.0.0:8080/healthz")
    run.add_argument(
        "--metrics-port", type=int, default=0, help="serve Prometheus metrics on this port (default: off)"
    )
    run.add_argument(
        "--log-format", choices=["text", "json"], default="text", help="json: one JSON object per line"
    )
    run.add_argument(
        "--cluster-domain",
        default="cluster.local",
        help="the cluster's DNS domain; the operator logs in to the Keycloaks it runs at "
        "<name>-service.<namespace>.svc.<domain>. (default: cluster.local)",
    )
    run.add_argument(
        "--external-server-host",
        action="append",
        metavar="HOST",
        help="allow KeycloakRealms on external servers only on this host (repeatable; *.example.com for "
        "any host under example.com). Default: any host",
    )
    run.add_argument(
        "--ingress-class",
        action="append",
        metavar="NAME",
        help="allow a Keycloak's spec.ingress.className only to be this IngressClass (repeatable; once set, "
        "an unset className is refused too). Default: any class",
    )
    run.add_argument(
        "--ingress-annotation-key",
        action="append",
        metavar="KEY",
        help="allow this annotation key in a Keycloak's spec.ingress.annotations (repeatable; "
        "nginx.ingress.kubernetes.io/* for every key with that prefix). Default: any key",
    )
    run.add_argument(
        "--ingress-host",
        action="append",
        metavar="HOST",
        help="allow a Keycloak's Ingress and HTTPRoute to route this host (repeatable; .example.com for any "
        "host under example.com). Default: any host",
    )
    run.add_argument(
        "--gateway",
        action="append",
        metavar="NAMESPACE/NAME",
        help="allow a Keycloak's spec.httpRoute to attach to this Gateway (repeatable). Default: any Gateway",
    )
    run.add_argument("-v", "--verbose", action="store_true")
    run.set_defaults(func=_run)
    crds = sub.add_parser("crds", help="print the CustomResourceDefinitions as YAML")
    crds.add_argument(
        "--write", metavar="ROOT", help="write every generated file (CRDs, chart copy, RBAC rules) under ROOT"
    )
    crds.set_defaults(func=_crds)
    rb = sub.add_parser(
        "rollback", parents=[cluster], help="restore the last known good version of a Keycloak"
    )
    rb.add_argument("name")
    rb.set_defaults(func=_rollback)
    st = sub.add_parser(
        "status", parents=[cluster], help="show a Keycloak's versions, upgrade progress, replicas and events"
    )
    st.add_argument("name")
    st.add_argument("-w", "--watch", action="store_true", help="refresh in place until interrupted")
    st.set_defaults(func=_status)
    pl = sub.add_parser(
        "plan",
        parents=[cluster],
        help="print the path an image change would take (roll, blue-green, recreate, refuse) and why; "
        "changes nothing. Exit 1 when the operator would refuse it",
    )
    pl.add_argument("name")
    pl.add_argument("--image", required=True, help="the image to plan for")
    pl.set_defaults(func=_plan)
    ir = sub.add_parser(
        "image-recipe",
        parents=[cluster],
        help="print a Containerfile deriving from the Keycloak's spec.image with exactly the build options "
        "its pods set baked in (kc.sh build); its pods then start --optimized",
    )
    ir.add_argument("name")
    ir.set_defaults(func=_image_recipe)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
