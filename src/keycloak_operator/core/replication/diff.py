"""The differential comparison: desired (resources) vs actual (marked objects in Keycloak) -> a Plan.

Both sides are indexed by the full ObjectKey in dicts, so two objects can only ever be matched when kind,
namespace and name all agree; there is no positional walk that a wrong sort could derail. An update is
planned only when hashes differ, so a steady state plans nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Set as AbstractSet

from keycloak_operator.core.replication.identity import ObjectKey, identity
from keycloak_operator.core.replication.plan import Actual, Create, Delete, Desired, Plan, Update


def diff(
    desired: Iterable[Desired],
    actual: Iterable[Actual],
    known_kinds: AbstractSet[str],
    held: AbstractSet[ObjectKey] = frozenset(),
) -> Plan:
    """Plan the writes that make Keycloak match `desired`.

    `known_kinds`: actual objects of any other kind (another operator version's markers) are left alone.
    `held`: keys left alone on both sides this round (an ownership conflict, a forbidden resource).
    Raises ValueError for a desired key declared twice or a remote id listed twice (caller bugs; an object
    listed twice would look like its own duplicate and be deleted), and for a desired kind not in
    `known_kinds` (its object would never be recognised as ours, so it would be created again every round).
    """
    wanted: dict[ObjectKey, Desired] = {}
    seen: set[ObjectKey] = set()
    for entry in desired:
        if entry.key.kind not in known_kinds:
            raise ValueError(f"desired object of a kind the replicator does not know: {entry.key}")
        if entry.key in seen:
            raise ValueError(f"desired object declared twice: {entry.key}")
        seen.add(entry.key)
        if entry.key not in held:
            wanted[entry.key] = entry

    found: dict[ObjectKey, list[Actual]] = {}
    remote_ids: set[str] = set()
    for obj in actual:
        if obj.remote_id in remote_ids:
            raise ValueError(f"remote object listed twice: {obj.remote_id}")
        remote_ids.add(obj.remote_id)
        if obj.key.kind in known_kinds and obj.key not in held:
            found.setdefault(obj.key, []).append(obj)

    plan = Plan()
    for key, copies in found.items():
        want = wanted.get(key)
        if want is None:
            plan.deletes.extend(Delete(key, c.remote_id) for c in copies)
            continue
        keep = survivor(copies, want.content_hash)
        plan.duplicates.extend(Delete(key, c.remote_id) for c in copies if c is not keep)
        if keep.content_hash != want.content_hash:
            update = Update(key, keep.remote_id, want.content, want.content_hash, keep.content_hash)
            plan.updates.append(update)
    for key, want in wanted.items():
        if key not in found:
            plan.creates.append(Create(key, want.content, want.content_hash))

    plan.deletes.sort(key=lambda d: (identity(d.key), d.remote_id))
    plan.duplicates.sort(key=lambda d: (identity(d.key), d.remote_id))
    plan.creates.sort(key=lambda c: identity(c.key))
    plan.updates.sort(key=lambda u: identity(u.key))
    return plan


def survivor(copies: list[Actual], wanted_hash: str) -> Actual:
    """Which of several objects carrying the same marker to keep: one already up to date (no write, and its
    natural key, e.g. the clientId, is already the declared one), then the smallest remote id. The choice
    depends only on the set of copies, so every round picks the same one."""
    return min(copies, key=lambda c: (c.content_hash != wanted_hash, c.remote_id))
