"""Who may hold a Keycloak-side natural key (a realm name, a clientId in a realm) that several claim.

Keycloak keeps such names unique, and the operator never overwrites an object it does not own. Rule: the
object that holds the natural key now (found by its marker) keeps it while it exists, whether or not its
resource still claims that name; a name held by an unmarked object belongs to someone else. A free name goes
to the oldest claim (creation timestamp, then key). Every other claimant gets a Conflict and is held out of
the diff, so its existing object, if any, is not touched either. Letting a claimant take a name its holder
is about to release could only produce a write Keycloak rejects; waiting a round costs nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from keycloak_operator.core.replication.identity import ObjectKey, identity

NaturalKey = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Claim:
    key: ObjectKey
    natural_key: NaturalKey
    created: datetime


@dataclass(frozen=True, slots=True)
class Conflict:
    key: ObjectKey
    natural_key: NaturalKey
    holder: ObjectKey | None  # None: an object in Keycloak the operator did not create


@dataclass(frozen=True)
class Resolution:
    granted: list[Claim] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)

    @property
    def held(self) -> frozenset[ObjectKey]:
        """Keys to pass to `diff(held=...)`: nothing is written for them this round."""
        return frozenset(c.key for c in self.conflicts)


def resolve(claims: Iterable[Claim], holders: Mapping[NaturalKey, ObjectKey | None]) -> Resolution:
    """`holders`: every natural key that exists in Keycloak, mapped to its marker's key (None if unmarked)."""
    by_name: dict[NaturalKey, list[Claim]] = {}
    seen: set[ObjectKey] = set()
    for claim in claims:
        if claim.key in seen:
            raise ValueError(f"object claims twice: {claim.key}")
        seen.add(claim.key)
        by_name.setdefault(claim.natural_key, []).append(claim)

    result = Resolution()
    for name, contenders in by_name.items():
        if name in holders:
            holder = holders[name]
            winner = next((c for c in contenders if c.key == holder), None)
        else:
            winner = min(contenders, key=lambda c: (c.created, identity(c.key)))
            holder = winner.key
        if winner is not None:
            result.granted.append(winner)
        result.conflicts.extend(Conflict(c.key, name, holder) for c in contenders if c is not winner)

    result.granted.sort(key=lambda c: identity(c.key))
    result.conflicts.sort(key=lambda c: identity(c.key))
    return result
