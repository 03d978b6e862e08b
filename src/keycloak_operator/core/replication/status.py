"""The status a replicated resource shows: phase, Keycloak id, content hash and one Ready condition.

Recomputing the same verdict gives the same status (transition times carried over), so a quiet round
patches nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from keycloak_operator.core.common import conditions
from keycloak_operator.core.replication.sync import Verdict
from keycloak_operator.models.keycloak import Condition
from keycloak_operator.models.replicated import ReplicatedStatus


def render(
    previous: Mapping[str, Any] | None,
    verdict: Verdict,
    *,
    generation: int,
    keycloak_id: str,
    content_hash: str,
    now: str,
    revocation: bool = True,
) -> dict[str, Any]:
    """`revocation`: whether forbidden resources are revoked at all; when not, no clock is kept (turning it
    on later starts the clock then, rather than revoking at once by an old one)."""
    before = ReplicatedStatus.model_validate(previous or {})
    ready = verdict.phase == "Ready"
    wanted = conditions.Wanted(
        conditions.READY, "True" if ready else "False", verdict.reason, verdict.message
    )
    merged: list[Condition] = conditions.merge(before.conditions, [wanted], now=now, generation=generation)
    forbidden = verdict.phase == "Forbidden" and revocation
    still_forbidden = forbidden and before.phase == "Forbidden" and before.forbidden_since
    after = ReplicatedStatus(
        observed_generation=generation,
        phase=verdict.phase,
        keycloak_id=keycloak_id or before.keycloak_id,
        content_hash=content_hash if ready else before.content_hash,
        # The revocation clock starts when the resource first turns Forbidden and survives restarts here.
        forbidden_since=(before.forbidden_since if still_forbidden else now) if forbidden else None,
        conditions=merged,
    )
    return after.wire()
