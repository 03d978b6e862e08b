"""Status conditions following Kubernetes conventions.

lastTransitionTime changes only when a condition's status flips, so recomputing the same conditions gives
an identical status and an idle reconcile writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from keycloak_operator.models.keycloak import Condition

READY = "Ready"
PROGRESSING = "Progressing"
DEGRADED = "Degraded"
CACHE_ISOLATED = "CacheIsolated"
HOSTNAME_FIXED = "HostnameFixed"
MONITORED = "Monitored"

Status = Literal["True", "False", "Unknown"]


@dataclass(frozen=True)
class Wanted:
    """A condition as the decision wants it, before transition times are carried over."""

    type: str
    status: Status
    reason: str
    message: str = ""


def merge(previous: list[Condition], wanted: list[Wanted], *, now: str, generation: int) -> list[Condition]:
    """One entry per type, in the order wanted; a type no longer wanted is dropped."""
    before = {c.type: c for c in previous}
    merged = []
    for w in wanted:
        old = before.get(w.type)
        since = old.last_transition_time if old is not None and old.status == w.status else now
        merged.append(
            Condition(
                type=w.type,
                status=w.status,
                reason=w.reason,
                message=w.message,
                last_transition_time=since,
                observed_generation=generation,
            )
        )
    return merged


def find(conditions: list[Condition], type_: str) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)
