"""The operator's settings, from the command line and the environment, parsed once when it starts and shared
by both controllers (shell/runtime.py)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from keycloak_operator.core import ingress_policy
from keycloak_operator.core.ingress_policy import IngressPolicy
from keycloak_operator.core.replication.namespace_cap import CAP_SETTING, DEFAULT_CAP
from keycloak_operator.core.replication.servers import DEFAULT_POLICY, ServerPolicy
from keycloak_operator.shell.replication.fan_out import DEFAULT_CONCURRENCY, MAX_CONCURRENCY
from keycloak_operator.shell.replication.round import DEFAULT_ROUND_BUDGET_S

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
