"""The operator's Prometheus metrics: every name and label is defined here, and nowhere else.

Label values are bounded sets (resource kinds, results, upgrade states and milestones, write operations);
no label carries a resource's name or namespace. `serve(port)` exposes them with prometheus_client's own
HTTP server, which runs in a thread and never blocks the event loop.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram, start_http_server

from keycloak_operator.core.bluegreen.milestones import Transition

RECONCILES = Counter(
    "kcop_reconciles_total",
    "Reconciles by resource kind and result (ok or error).",
    ["kind", "result"],
)
RECONCILE_SECONDS = Histogram(
    "kcop_reconcile_duration_seconds",
    "Duration of one reconcile pass (Keycloak) or one replication round (KeycloakRealm: a whole server).",
    ["kind"],
)
UPGRADES = Counter(
    "kcop_upgrades_total",
    "Blue-green upgrade milestones: started, completed, failed, rolled_back, cancelled.",
    ["event"],
)
UPGRADE_STATE_SECONDS = Histogram(
    "kcop_upgrade_state_duration_seconds",
    "Time a blue-green upgrade spent in a state, observed when it leaves the state.",
    ["state"],
    buckets=(0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600),
)
REPLICATION_WRITES = Counter(
    "kcop_replication_writes_total",
    "Writes to the Keycloak admin API by object kind and operation (create, update, delete, release).",
    ["kind", "operation"],
)
REPLICATION_CONFLICTS = Counter(
    "kcop_replication_conflicts_total",
    "Resources that entered the Conflict phase (their object is held by another resource or made by hand).",
    ["kind"],
)

UNLISTED_NAMESPACES = Gauge(
    "kcop_replication_unlisted_namespaces",
    "Namespaces the last replication round left out: gone (deleted or being deleted), unreadable (exists, "
    "and refused or failed the LIST) or over_cap (holds more resources of one kind than "
    "KCOP_NAMESPACE_MAX_RESOURCES).",
    ["standing"],
)


def serve(port: int) -> None:
    start_http_server(port)


def reconciled(kind: str, seconds: float, ok: bool) -> None:
    RECONCILES.labels(kind=kind, result="ok" if ok else "error").inc()
    RECONCILE_SECONDS.labels(kind=kind).observe(seconds)


def replication_round(seconds: float) -> None:
    RECONCILE_SECONDS.labels(kind="KeycloakRealm").observe(seconds)


def resource_result(kind: str, ok: bool) -> None:
    """A realm or client settled by a replication round (the round's duration is counted once, apart)."""
    RECONCILES.labels(kind=kind, result="ok" if ok else "error").inc()


def upgrade_transition(t: Transition) -> None:
    for milestone in t.milestones:
        UPGRADES.labels(event=milestone).inc()
    if t.left is not None and t.seconds_in_left is not None:
        UPGRADE_STATE_SECONDS.labels(state=t.left).observe(t.seconds_in_left)


def replication_write(kind: str, operation: str) -> None:
    REPLICATION_WRITES.labels(kind=kind, operation=operation).inc()


def replication_conflict(kind: str) -> None:
    REPLICATION_CONFLICTS.labels(kind=kind).inc()


def unlisted_namespaces(counts: dict[str, int]) -> None:
    for standing, count in counts.items():
        UNLISTED_NAMESPACES.labels(standing=standing).set(count)
