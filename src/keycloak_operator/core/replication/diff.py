"""The differential comparison: desired (resources) vs actual (marked objects in Keycloak) -> a Plan.

Both sides are indexed in dicts by the full identity (kind, namespace, name), so two objects can only ever
be matched when all three agree; there is no positional walk that a wrong sort could derail. An update is
planned only when hashes differ, so a steady state plans nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet

from keycloak_operator.core.replication.identity import Identity, ObjectKey, identity
from keycloak_operator.core.replication.plan import Actual, Create, Delete, Desired, Plan, Update


def diff(
    desired: Iterable[Desired],
    actual: Iterable[Actual],
    known_kinds: AbstractSet[str],
    held: AbstractSet[ObjectKey] = frozenset(),
    preferred: Mapping[ObjectKey, str] | None = None,
) -> Plan:
    """Plan the writes that make Keycloak match `desired`.

    `preferred`: for a key marked on several objects, the remote id to keep among equally good copies (the
    one the resource's status names, or the first listed: sync.plan_scope), so that the copy kept is the
    copy reported and drift-checked, whatever order the server lists them in.
    `known_kinds`: actual objects of any other kind (another operator version's markers) are left alone.
    `held`: keys left alone on both sides this round (an ownership conflict, a forbidden resource).
    Raises ValueError for a desired key declared twice or a remote id listed twice (caller bugs; an object
    listed twice would look like its own duplicate and be deleted), and for a desired kind not in
    `known_kinds` (its object would never be recognised as ours, so it would be created again every round).
    """
    # Indexed by identity(key): the same triple ObjectKey's equality uses, hashed and compared in C (the
    # dataclass's Python-level __hash__, called eight times per entry, made the diff twice as slow).
    held_ids = {identity(k) for k in held}
    wanted: dict[Identity, Desired] = {}
    for entry in desired:
        ident = identity(entry.key)
        if ident[0] not in known_kinds:
            raise ValueError(f"desired object of a kind the replicator does not know: {entry.key}")
        if ident in wanted:
            raise ValueError(f"desired object declared twice: {entry.key}")
        wanted[ident] = entry

    # The first object seen per key, and any further ones (duplicate markers, rare) apart: no list per key.
    found: dict[Identity, Actual] = {}
    extra: dict[Identity, list[Actual]] = {}
    remote_ids: set[str] = set()
    for obj in actual:
        if obj.remote_id in remote_ids:
            raise ValueError(f"remote object listed twice: {obj.remote_id}")
        remote_ids.add(obj.remote_id)
        ident = identity(obj.key)
        if ident[0] in known_kinds and found.setdefault(ident, obj) is not obj:
            extra.setdefault(ident, []).append(obj)
    for ident in held_ids:
        wanted.pop(ident, None)
        found.pop(ident, None)
        extra.pop(ident, None)

    plan = Plan()
    for ident, first in found.items():
        copies = [first, *extra[ident]] if extra and ident in extra else [first]
        want = wanted.pop(ident, None)  # what stays in `wanted` afterwards is to be created
        if want is None:
            plan.deletes.extend(Delete(c.key, c.remote_id) for c in copies)
            continue
        keep = (
            first
            if len(copies) == 1
            else survivor(copies, want.content_hash, (preferred or {}).get(want.key))
        )
        if len(copies) > 1:
            plan.duplicates.extend(Delete(c.key, c.remote_id) for c in copies if c is not keep)
        if keep.content_hash != want.content_hash:
            update = Update(want.key, keep.remote_id, want.content, want.content_hash, keep.content_hash)
            plan.updates.append(update)
    plan.creates.extend(Create(w.key, w.content, w.content_hash) for w in wanted.values())

    plan.deletes.sort(key=lambda d: (identity(d.key), d.remote_id))
    plan.duplicates.sort(key=lambda d: (identity(d.key), d.remote_id))
    plan.creates.sort(key=lambda c: identity(c.key))
    plan.updates.sort(key=lambda u: identity(u.key))
    return plan


def survivor(copies: list[Actual], wanted_hash: str, preferred: str | None = None) -> Actual:
    """Which of several objects carrying the same marker to keep: one already up to date (no write, and its
    natural key, e.g. the clientId, is already the declared one), then the `preferred` remote id, then the
    smallest remote id. The choice depends only on the set of copies and `preferred`, so every round picks
    the same one."""
    return min(copies, key=lambda c: (c.content_hash != wanted_hash, c.remote_id != preferred, c.remote_id))
