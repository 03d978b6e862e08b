"""The operator's Prometheus metrics: every name and label is defined here, and nowhere else.

Label values are bounded sets (resource kinds, results, upgrade states and milestones, write operations);
no label carries a resource's name or namespace. `serve(port)` exposes them with prometheus_client's own
HTTP server, which runs in a thread and never blocks the event loop.

The fleet gauges (what is not Ready, what is in progress) are counted when Prometheus scrapes, from the
status each resource last showed this replica (core/fleet.py, core/replication/standing.py decide), and only
over what this replica leads: a standby, or a replica that led before, reports zeros, so the replicas of one
installation never add up to more than the truth (ADR 0027).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from prometheus_client import REGISTRY, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from keycloak_operator.core import fleet
from keycloak_operator.core.bluegreen.milestones import Transition
from keycloak_operator.core.replication import standing as replicated_standing
from keycloak_operator.shell.leadership import leadership

# A replication round of a whole server takes from a fraction of a second to minutes (its budget is
# KCOP_ROUND_BUDGET_SECONDS); a Keycloak pass, from milliseconds to seconds. One set of buckets fits both.
PASS_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)

RECONCILES = Counter(
    "kcop_reconciles_total",
    "Reconciles by resource kind and result (ok or error).",
    ["kind", "result"],
)
RECONCILE_SECONDS = Histogram(
    "kcop_reconcile_duration_seconds",
    "Duration of one reconcile pass (Keycloak) or one replication round (KeycloakRealm: a whole server).",
    ["kind"],
    buckets=PASS_BUCKETS,
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


Key = tuple[str, str]  # (namespace, name)


class Fleet:
    """The status each resource last showed this replica, kept only until it is deleted."""

    def __init__(self) -> None:
        self.keycloaks: dict[Key, fleet.Standing] = {}
        self.replicated: dict[tuple[str, str, str], str] = {}  # (kind, namespace, name) -> phase
        self.replicated_server: dict[tuple[str, str, str], str] = {}  # -> the server whose round saw it

    def keycloak_seen(self, key: Key, status: Mapping[str, Any] | None) -> None:
        self.keycloaks[key] = fleet.standing(status)

    def keycloak_gone(self, key: Key) -> None:
        self.keycloaks.pop(key, None)

    def replicated_seen(self, kind: str, namespace: str, name: str, phase: str, server: str = "") -> None:
        self.replicated[(kind, namespace, name)] = phase
        self.replicated_server[(kind, namespace, name)] = server

    def replicated_gone(self, kind: str, namespace: str, name: str) -> None:
        self.replicated.pop((kind, namespace, name), None)
        self.replicated_server.pop((kind, namespace, name), None)

    def replicated_round(self, server: str, seen: set[tuple[str, str, str]]) -> None:
        """A round of `server` saw exactly `seen`: what it held for that server and did not see was deleted
        while this replica did not watch (a standby's paused watch sends no DELETED), and goes."""
        for key in [k for k, s in self.replicated_server.items() if s == server and k not in seen]:
            self.replicated_gone(*key)

    def collect(self) -> Iterator[Metric]:
        """Called by prometheus_client on every scrape, in its HTTP server's thread: it reads the dicts
        (copied first: the event loop may change them meanwhile) and writes nothing."""
        leading = leadership.all_active()
        keycloaks = [s for (ns, _), s in list(self.keycloaks.items()) if leadership.active(ns)]
        t = fleet.tally(keycloaks, datetime.now(UTC))
        replicated = (
            [(kind, phase) for (kind, _, _), phase in list(self.replicated.items())] if leading else []
        )
        yield _gauge(
            "kcop_leading", "1 while this replica leads (acts for every namespace it watches).", leading
        )
        yield _gauge("kcop_keycloaks_not_ready", "Keycloaks whose Ready condition is not True.", t.not_ready)
        yield _labelled("kcop_keycloaks", "Keycloaks by status phase.", "phase", t.phases)
        yield _labelled(
            "kcop_upgrades_in_progress",
            "Keycloaks whose blue-green upgrade is in this state.",
            "state",
            t.upgrades,
        )
        yield _labelled(
            "kcop_upgrade_longest_in_state_seconds",
            "The longest any Keycloak's upgrade has been in this state so far (0: none is in it).",
            "state",
            t.longest_in_state,
        )
        yield _gauge(
            "kcop_upgrades_failed",
            "Keycloaks whose last blue-green upgrade Failed and still asks for the image it failed to reach.",
            t.failed_upgrades,
        )
        yield _labelled(
            "kcop_upgrade_plans",
            "Keycloaks by the path planned for their last image change.",
            "path",
            t.plans,
        )
        counts = replicated_standing.tally(replicated)
        family = GaugeMetricFamily(
            "kcop_replicated_resources",
            "Replicated resources by kind and the phase their last replication round left them in.",
            labels=["kind", "phase"],
        )
        for (kind, phase), count in counts.items():
            family.add_metric([kind, phase], count)
        yield family


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=float(value))


def _labelled(name: str, documentation: str, label: str, values: Mapping[str, float]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=[label])
    for key, value in values.items():
        family.add_metric([key], float(value))
    return family


class _FleetCollector(Collector):
    def __init__(self, of: Fleet) -> None:
        self.of = of

    def collect(self) -> Iterator[Metric]:
        return self.of.collect()


FLEET = Fleet()
REGISTRY.register(_FleetCollector(FLEET))


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
