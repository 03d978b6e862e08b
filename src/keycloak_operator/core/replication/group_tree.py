"""The group kind's tree (core/replication/group.py plans the rest): each declared group's path, found once
per round, and what each group in Keycloak holds below it, which decides whether it may be deleted.

Paths: each group's chain of parents is walked once, iteratively, its result kept for every group on the
way (a group below a resolved one stops there), so a round resolves a tree of n groups in O(n) lookups
whatever its shape. A cycle is found by a set; a tree deeper than MAX_DEPTH is an Error naming spec.parent.

Deletes: Keycloak deletes a group with everything below it, so a group may only be deleted when nothing
below it in Keycloak is still wanted: not a group made by hand, not another namespace's, and not one of its
own namespace that is still declared (elsewhere, say, after a reparent or a hand move) or that waits itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Final

from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.marker import read_marker
from keycloak_operator.core.replication.sync import Resource, Verdict
from keycloak_operator.kernel import names

KIND: Final = names.GROUP_KIND
PARENT: Final = "parent"
# A group's role mappings in its content (group.py): what its members, and its subgroups' members, hold.
REALM_ROLES: Final = "realmRoles"
CLIENT_ROLES: Final = "clientRoles"
MAX_DEPTH: Final = 32  # levels of a declared tree; deeper is an Error on the groups below the limit
MAX_PER_NAMESPACE: Final = 1_000  # a namespace's KeycloakGroups in one realm; the later ones are an Error

Obj = Mapping[str, Any]


def parent_key(r: Resource) -> ObjectKey | None:
    name = r.content.get(PARENT)
    return ObjectKey(KIND, r.key.namespace, name) if name else None


def tree_paths(groups: Mapping[ObjectKey, Resource]) -> dict[ObjectKey, str | Verdict]:
    """Each valid group's path, or why it has none: a parent missing or invalid, a cycle, or a tree deeper
    than MAX_DEPTH. A group below one without a path has none either, for the same reason."""
    out: dict[ObjectKey, str | Verdict] = {}
    depth: dict[ObjectKey, int] = {}
    for start in groups:
        if start in out or "name" not in groups[start].content:
            continue
        chain: list[ObjectKey] = []
        on_chain: set[ObjectKey] = set()
        at: ObjectKey | None = start
        base: str | Verdict = ""
        base_depth = 0
        while at is not None:
            if at in out:  # resolved by an earlier walk
                base, base_depth = out[at], depth.get(at, 0)
                break
            if at in on_chain:
                cycle = [*chain[chain.index(at) :], at]
                text = " -> ".join(k.name for k in cycle)
                base = Verdict(
                    "Error", "InvalidParent", f"spec.parent: a cycle ({text}); nothing was written"
                )
                break
            g = groups.get(at)
            if g is None or "name" not in g.content:
                why = "not found in this realm" if g is None else "not valid"
                msg = f"spec.parent: KeycloakGroup {at.namespace}/{at.name} {why}; nothing was written"
                base = Verdict("Pending", "ParentNotFound" if g is None else "ParentNotReady", msg)
                break
            chain.append(at)
            on_chain.add(at)
            at = parent_key(g)
        for key in reversed(chain):
            if isinstance(base, str):
                base_depth += 1
                if base_depth > MAX_DEPTH:
                    msg = f"spec.parent: the tree is deeper than {MAX_DEPTH} levels here; nothing was written"
                    base = Verdict("Error", "InvalidParent", msg)
                else:
                    base = f"{base}/{groups[key].content['name']}"
            out[key], depth[key] = base, base_depth
    return out


def over_the_cap(groups: Sequence[Resource]) -> dict[ObjectKey, Verdict]:
    """Groups a namespace declares in the realm beyond MAX_PER_NAMESPACE (the latest made): each an Error."""
    count: dict[str, int] = {}
    out = {}
    for g in sorted(groups, key=lambda g: (g.created, g.key)):
        if g.deleting:
            continue
        count[g.key.namespace] = count.get(g.key.namespace, 0) + 1
        if count[g.key.namespace] > MAX_PER_NAMESPACE:
            msg = (
                f"namespace {g.key.namespace} declares more than {MAX_PER_NAMESPACE} KeycloakGroups in this "
                "realm; the latest made are not written"
            )
            out[g.key] = Verdict("Error", "TooManyGroups", msg)
    return out


@dataclass
class Below:
    """What a group in Keycloak holds anywhere below it that is not its to delete."""

    hand: list[str] = field(default_factory=list)  # paths of groups made by hand (unmarked)
    others: int = 0  # other namespaces' groups (moved there by hand)
    wanted: list[str] = field(default_factory=list)  # its namespace's groups still wanted, by resource name

    def keeps(self) -> bool:
        return bool(self.hand or self.others or self.wanted)

    def why(self) -> str:
        parts = []
        if self.wanted:
            parts.append(
                f"holds subgroups still wanted, left until they move out: {', '.join(sorted(self.wanted))}"
            )
        if self.hand:
            parts.append(f"holds subgroups made by hand, left alone: {', '.join(sorted(self.hand))}")
        if self.others:
            parts.append(f"holds {self.others} subgroup(s) of other namespaces, left alone")
        return "; ".join(parts)


def below(observed: Sequence[Obj], wanted: AbstractSet[ObjectKey]) -> dict[str, Below]:
    """Remote id -> what is below it (`Below`), for every group in Keycloak holding something it may not
    take along. A same-namespace group whose resource is `wanted` counts as much as a hand-made one."""
    by_id = {str(o.get("id")): o for o in observed}
    owner: dict[str, ObjectKey | None] = {}
    for i, o in by_id.items():
        m = read_marker(o.get("attributes"))
        owner[i] = m.key if m is not None and m.key.kind == KIND else None
    out: dict[str, Below] = {}
    for i, o in by_id.items():
        mine = owner[i]
        up_id, seen = o.get("parentId"), set()
        while isinstance(up_id, str) and up_id in by_id and up_id not in seen:  # a bounded walk up
            seen.add(up_id)
            theirs = owner[up_id]
            if mine is None:
                out.setdefault(up_id, Below()).hand.append(str(o.get("path")))
            elif theirs is None or mine.namespace != theirs.namespace:
                out.setdefault(up_id, Below()).others += 1
            elif mine in wanted and mine != theirs:
                out.setdefault(up_id, Below()).wanted.append(mine.name)
            up_id = by_id[up_id].get("parentId")
    return out


def blocked_deletes(
    groups: Sequence[Resource], observed: Sequence[Obj]
) -> tuple[dict[ObjectKey, str], set[str]]:
    """Deleting groups with an object in Keycloak that must wait, with why: subgroups are still declared
    under them, or their object holds something below it that is not theirs to take (`below`); and the
    remote ids that may not be deleted at all (an orphan's, a revoked group's) for the same reason.
    A blocked group is still wanted, so whatever holds it waits too: two passes reach every ancestor."""
    children: dict[ObjectKey, list[str]] = {}
    for g in groups:
        up = parent_key(g)
        if up is not None and not g.deleting:
            children.setdefault(up, []).append(g.key.name)
    found = {m.key: str(o.get("id")) for o in observed if (m := read_marker(o.get("attributes")))}
    wanted = {g.key for g in groups if not g.deleting}
    out: dict[ObjectKey, str] = {}
    held: dict[str, Below] = {}
    for _ in range(2):
        held = below(observed, wanted | out.keys())
        for g in groups:
            if not g.deleting or g.key not in found:  # nothing in Keycloak: nothing to take along, it may go
                continue
            if g.key in children:
                out[g.key] = f"subgroups still declared under it: {', '.join(sorted(children[g.key]))}"
            elif (b := held.get(found[g.key])) is not None and b.keeps():
                out[g.key] = b.why()
    return out, {i for i, b in held.items() if b.keeps()}
