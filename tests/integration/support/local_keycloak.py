"""The real Keycloak replication tests write into: a server process on this machine (no pod), one per module,
which the operator reaches through each realm's `server.external.url`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from keycloak_operator.kernel import names
from localcluster.keycloak import KeycloakProcess
from tests.integration.support.kubectl import Kubectl, wait_for

REALMS = f"{names.REALM_PLURAL}.{names.GROUP}"


def serving(kubectl: Kubectl) -> Iterator[KeycloakProcess]:
    """For a module-scoped fixture: the server, started; at the end, stopped once no realm points at it."""
    kc = KeycloakProcess(args=["--metrics-enabled=true"])
    kc.start()
    yield kc

    # The last tests' namespaces are being deleted: let the operator finish deleting their realms from this
    # server first, or they would wait for it forever (their finalizer) on a reused dev cluster.
    def realms_left() -> list[Any]:
        return [
            r
            for r in kubectl.list(REALMS, None)
            if ((r["spec"].get("server") or {}).get("external") or {}).get("url") == kc.url
        ]

    try:
        wait_for("realms on this server deleted", lambda: not realms_left(), timeout=120)
    finally:
        kc.stop()
        kc.cleanup()
