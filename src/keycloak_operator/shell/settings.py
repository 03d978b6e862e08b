"""The operator's settings, from the command line and the environment, parsed once when it starts and shared
by both controllers (shell/runtime.py).

Every KCOP_* variable is read here and nowhere else. Most are parsed into `Settings` when `run` starts; the
bounds on Keycloak's answers, the failpoint and the operator's namespace are read by the modules that use them
through the functions below, so that one place lists every variable the operator understands.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Final

from keycloak_operator.core import bounded_json, ingress_policy
from keycloak_operator.core.ingress_policy import IngressPolicy
from keycloak_operator.core.replication.namespace_cap import CAP_SETTING, DEFAULT_CAP
from keycloak_operator.core.replication.servers import DEFAULT_POLICY, ServerPolicy

DEFAULT_CONCURRENCY: Final = 8  # KCOP_REPLICATION_CONCURRENCY: per-object steps in flight per realm
# Its upper bound: each step holds at most one admin request at a time, and httpx pools 100 connections per
# client (its default, shell/admin/connection.py); more steps would only queue for a connection.
MAX_CONCURRENCY: Final = 64

# KCOP_ROUND_BUDGET_SECONDS: the most one round may spend talking to one server, its login included. A
# server's requests each have a deadline (shell/admin/connection.py), but one that answers every request
# just inside it could hold a worker for the work queue's whole 300 s; any namespace can make such a server,
# a `Keycloak` included (ADR 0012). A round cut short has written what it wrote, so a legitimate large first
# sync (1,000 clients took about 300 s: bench/results/replication_sync_reads.txt) finishes over a few rounds.
DEFAULT_ROUND_BUDGET_S = 120.0
# A round's budget must end before the work queue's own limit on one key (300 s, shell/workqueue.py), with
# room left to write the statuses that say the budget ran out.
MAX_ROUND_BUDGET_S = 240.0


@dataclass(frozen=True)
class Settings:
    """The operator's settings, from the command line and the environment, parsed once at start."""

    namespaces: list[str] | None = None  # watched namespaces; None: all
    policy: ServerPolicy = DEFAULT_POLICY  # where admin logins may go
    resync_seconds: float = 60.0  # KCOP_RESYNC_SECONDS: both controllers' resync tick
    workers: int = 8  # KCOP_WORKERS: Keycloak reconciles in flight
    # KCOP_PEERING_LIFETIME: how long a silent replica counts as alive in the peering object (a standby takes
    # over this long after the leader died; kopf's default is 60 s).
    peering_lifetime: int = 60
    # KCOP_REPLICATION_WRITES_PER_SECOND, KCOP_REPLICATION_NAMESPACE_WRITES_PER_SECOND: Keycloak admin writes
    # per second, all namespaces together and any one namespace.
    writes_per_second: float = 50.0
    namespace_writes_per_second: float = 10.0
    # KCOP_REVOCATION_GRACE_SECONDS: a namespace removed from an allow-list (realmNamespaces,
    # clientNamespaces, identityProviderNamespaces, flowNamespaces) has its objects disabled after this long
    # (those that have no switch, as flows, are kept), and deleted after twice this long (0: never; they
    # stay, held).
    revocation_grace: timedelta = field(default=timedelta(seconds=3600))
    # KCOP_REPLICATION_CONCURRENCY: per-client steps of a round (a client's roles and mappers, its service
    # account, its Secret) in flight at once in a realm; each write still within the limits above.
    replication_concurrency: int = DEFAULT_CONCURRENCY
    # KCOP_ROUND_BUDGET_SECONDS: the most one replication round may spend on one Keycloak server, whoever
    # runs it (shell/replication/round.py); a round that runs out reports it on the server's realms and the
    # server backs off.
    round_budget: float = DEFAULT_ROUND_BUDGET_S
    ingress: IngressPolicy = ingress_policy.DEFAULT_POLICY  # what spec.ingress may ask for (flags)
    # KCOP_NAMESPACE_MAX_RESOURCES: the most resources of one kind a replication round reads from one
    # namespace; one holding more is left out of every round, held (core/replication/namespace_cap.py).
    namespace_cap: int = DEFAULT_CAP

    @classmethod
    def parse(
        cls,
        namespaces: list[str] | None,
        policy: ServerPolicy = DEFAULT_POLICY,
        env: Mapping[str, str] = os.environ,
        ingress: IngressPolicy = ingress_policy.DEFAULT_POLICY,
    ) -> Settings:
        """Raises ValueError for a variable that is not a number."""
        return cls(
            namespaces=namespaces,
            policy=policy,
            ingress=ingress,
            resync_seconds=float(env.get("KCOP_RESYNC_SECONDS", "60")),
            workers=int(env.get("KCOP_WORKERS", "8")),
            peering_lifetime=int(env.get("KCOP_PEERING_LIFETIME", "60")),
            writes_per_second=float(env.get("KCOP_REPLICATION_WRITES_PER_SECOND", "50")),
            namespace_writes_per_second=float(env.get("KCOP_REPLICATION_NAMESPACE_WRITES_PER_SECOND", "10")),
            revocation_grace=timedelta(seconds=float(env.get("KCOP_REVOCATION_GRACE_SECONDS", "3600"))),
            replication_concurrency=_in_flight(
                "KCOP_REPLICATION_CONCURRENCY",
                env.get("KCOP_REPLICATION_CONCURRENCY", str(DEFAULT_CONCURRENCY)),
            ),
            round_budget=_round_budget(env.get("KCOP_ROUND_BUDGET_SECONDS", str(DEFAULT_ROUND_BUDGET_S))),
            namespace_cap=_namespace_cap(env.get(CAP_SETTING, str(DEFAULT_CAP))),
        )


def _in_flight(name: str, value: str) -> int:
    """A count of things in flight, parsed as the other counts are (int()): 0 would run nothing and a
    round would never end; above MAX_CONCURRENCY, steps would only wait for an admin client's connection."""
    n = int(value)
    if not 1 <= n <= MAX_CONCURRENCY:
        raise ValueError(f"{name} must be between 1 and {MAX_CONCURRENCY}, got {n}")
    return n


def _round_budget(value: str) -> float:
    """Seconds, above 0 (a round with no time would never write) and at most MAX_ROUND_BUDGET_S."""
    budget = float(value)
    if not 0 < budget <= MAX_ROUND_BUDGET_S:
        raise ValueError(
            f"KCOP_ROUND_BUDGET_SECONDS must be above 0 and at most {MAX_ROUND_BUDGET_S:g}, got {value}"
        )
    return budget


def _namespace_cap(value: str) -> int:
    """At least 1: a cap of 0 would leave every namespace with anything in it out of every round."""
    cap = int(value)
    if cap < 1:
        raise ValueError(f"{CAP_SETTING} must be at least 1, got {value}")
    return cap


@dataclass(frozen=True)
class AdminLimits:
    """What the operator accepts from a Keycloak admin API (shell/admin/connection.py says why each)."""

    request_deadline_s: float = 20.0  # KCOP_KEYCLOAK_REQUEST_DEADLINE_SECONDS
    max_response_bytes: int = 2 * 1024 * 1024  # KCOP_KEYCLOAK_MAX_RESPONSE_BYTES
    max_own_response_bytes: int = 8 * 1024 * 1024  # KCOP_OWN_KEYCLOAK_MAX_RESPONSE_BYTES
    # KCOP_KEYCLOAK_MAX_LIST_ENTRIES, KCOP_KEYCLOAK_MAX_JSON_VALUES
    json: bounded_json.JsonLimits = field(default_factory=bounded_json.JsonLimits)

    @classmethod
    def parse(cls, env: Mapping[str, str] = os.environ) -> AdminLimits:
        """Raises ValueError for a variable that is not a number."""
        default = cls()
        return cls(
            request_deadline_s=float(
                env.get("KCOP_KEYCLOAK_REQUEST_DEADLINE_SECONDS", str(default.request_deadline_s))
            ),
            max_response_bytes=int(
                env.get("KCOP_KEYCLOAK_MAX_RESPONSE_BYTES", str(default.max_response_bytes))
            ),
            max_own_response_bytes=int(
                env.get("KCOP_OWN_KEYCLOAK_MAX_RESPONSE_BYTES", str(default.max_own_response_bytes))
            ),
            json=bounded_json.JsonLimits(
                max_entries=int(env.get("KCOP_KEYCLOAK_MAX_LIST_ENTRIES", str(default.json.max_entries))),
                max_values=int(env.get("KCOP_KEYCLOAK_MAX_JSON_VALUES", str(default.json.max_values))),
            ),
        )


# URLs Keycloak calls (providers', back-channel logout) on loopback: a test hook (shell/hooks_for_tests.py).
LOOPBACK_ENV = "KCOP_IDP_ALLOW_LOOPBACK_HTTP"


def idp_loopback_http(env: Mapping[str, str] = os.environ) -> bool:
    return env.get(LOOPBACK_ENV, "").strip().lower() in ("1", "true", "yes")


def failpoint(env: Mapping[str, str] = os.environ) -> str:
    """KCOP_FAILPOINT: where a test has the operator kill itself (shell/hooks_for_tests.py); empty: none."""
    return env.get("KCOP_FAILPOINT", "")


OPERATOR_NAMESPACE_ENV = "KCOP_OPERATOR_NAMESPACE"


def operator_namespace(env: Mapping[str, str] = os.environ) -> str:
    """The operator's namespace as written (the chart sets it from the downward API); empty when unset."""
    return env.get(OPERATOR_NAMESPACE_ENV, "").strip()
