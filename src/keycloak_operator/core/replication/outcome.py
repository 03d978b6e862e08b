"""What a round did, per key, when some writes failed: the shell reports each on its own resource.

The shell performs `Plan.operations()` in order and carries on past a failure; these pure helpers turn the
set of keys whose write failed into per-key outcomes, and into the state the round left (which the next
round's diff repairs). A failed key counts as wholly not applied, the conservative reading.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Literal

from keycloak_operator.core.replication.identity import ObjectKey, identity
from keycloak_operator.core.replication.plan import Create, Plan, Update

Action = Literal["delete", "remove-duplicate", "create", "update"]


@dataclass(frozen=True, slots=True)
class Outcome:
    key: ObjectKey
    actions: tuple[Action, ...]  # in execution order
    ok: bool


def outcomes(plan: Plan, failed: AbstractSet[ObjectKey]) -> list[Outcome]:
    """One outcome per key the plan writes, sorted by key; keys outside the plan are not reported."""
    actions: dict[ObjectKey, list[Action]] = {}
    for d in plan.deletes:
        actions.setdefault(d.key, []).append("delete")
    for d in plan.duplicates:
        actions.setdefault(d.key, []).append("remove-duplicate")
    for c in plan.creates:
        actions.setdefault(c.key, []).append("create")
    for u in plan.updates:
        actions.setdefault(u.key, []).append("update")
    return [
        Outcome(key, tuple(acts), key not in failed)
        for key, acts in sorted(actions.items(), key=lambda item: identity(item[0]))
    ]


def apply_plan(
    state: Mapping[ObjectKey, str], plan: Plan, failed: AbstractSet[ObjectKey] = frozenset()
) -> dict[ObjectKey, str]:
    """The key -> content hash state after the plan ran, skipping failed keys (a model for tests).

    Removing a duplicate does not change this state: the surviving copy still carries the key.
    """
    new = dict(state)
    for d in plan.deletes:
        if d.key not in failed:
            new.pop(d.key, None)
    upserts: list[Create | Update] = [*plan.creates, *plan.updates]
    for upsert in upserts:
        if upsert.key not in failed:
            new[upsert.key] = upsert.content_hash
    return new
