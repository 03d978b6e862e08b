"""Adoption: taking over an existing Keycloak object the operator did not create, when its resource asks.

An object without the operator's marker is someone else's, and a resource claiming its name gets a
Conflict. The resource may instead ask to adopt it (`kcop.dev/adopt: "true"`): the object is then written
as declared, with the marker, and is the resource's from then on (deleting the resource deletes it, unless
`kcop.dev/preserve`). That is the way in for objects made by hand, by an import or by another tool before
the operator.

An unmarked object belongs to no namespace, so adoption needs a right beyond the one to declare it: each
kind's resource builder decides whether the resource may adopt at all (a realm only from the namespace of
the Keycloak it runs on, or with its own login to an external server; an object inside a realm only from
the realm's own namespace), and each kind names what is never adopted (the `master` realm, Keycloak's own
clients). Of several resources asking for one name the oldest adopts and the others stay in Conflict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any, Final

from keycloak_operator.core.replication.identity import ObjectKey, identity
from keycloak_operator.core.replication.marker import is_marker_attribute
from keycloak_operator.core.replication.ownership import Conflict
from keycloak_operator.kernel import names

# The content hash an adopted object is taken to have: never a real one, so the diff plans the update that
# writes the declared content and the marker.
ADOPTING: Final = "adopting"


def marked_in_part(attributes: Any) -> bool:
    """Any attribute of the marker's, even where the marker as a whole does not read (half written, edited,
    or another operator version's format): such an object may be someone's, and is never adopted."""
    return isinstance(attributes, Mapping) and any(
        isinstance(name, str) and is_marker_attribute(name) for name in attributes
    )


def asked(obj: Mapping[str, Any]) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(names.ANNOTATION_ADOPT, "")).lower() == "true"


def flags(obj: Mapping[str, Any], refused: str = "") -> dict[str, Any]:
    """For a Resource: `adopt` when asked and allowed; `adopt_refused`, when asked, why it may not."""
    wanted = asked(obj)
    return {"adopt": wanted and not refused, "adopt_refused": refused if wanted else ""}


def within_realm(key: ObjectKey, realm: ObjectKey) -> str:
    """The rule for objects inside a realm: only a resource of the realm's own namespace adopts."""
    if key.namespace == realm.namespace:
        return ""
    return (
        f"only resources in namespace {realm.namespace}, where KeycloakRealm {realm.name} is declared, may "
        "adopt objects in it"
    )


def adopters(
    conflicts: Iterable[Conflict],
    claimants: Mapping[ObjectKey, Any],
    unmarked: Mapping[str, str],
    never: AbstractSet[str],
    owning: AbstractSet[ObjectKey],
) -> dict[ObjectKey, str]:
    """Of the conflicts over names an unmarked object holds, the claimant that adopts each (the oldest of
    those allowed to), mapped to the object's remote id. `claimants`: Resources by key; `unmarked`: natural
    key -> remote id of the unmarked object holding it; `owning`: resources that already have an object
    (renamed in the spec): they adopt nothing, or one of the two would go as a duplicate."""
    by_name: dict[str, list[Any]] = {}
    for c in conflicts:
        name = c.natural_key[0]
        r = claimants[c.key]
        if c.holder is None and name in unmarked and name not in never and r.adopt and c.key not in owning:
            by_name.setdefault(name, []).append(r)
    return {
        min(rs, key=lambda r: (r.created, identity(r.key))).key: unmarked[name]
        for name, rs in by_name.items()
    }


def remarked(
    conflicts: Iterable[Conflict],
    claimants: Mapping[ObjectKey, Any],
    markless: Mapping[str, str],
    owning: AbstractSet[ObjectKey],
    never: AbstractSet[str] = frozenset(),
) -> dict[ObjectKey, str]:
    """Objects the operator made whose marker was removed or damaged by hand (a console edit clearing a
    group's attributes, say): the object holding a claimed name, with no marker that reads, whose id the
    claimant's own status recorded (`keycloak_id`: the object it created). Each is taken back as its own
    and written as declared, marker included, whatever the claimant's adoption rights: it never was anyone
    else's. Never an object another resource's marker names (its holder is then that resource), never one
    with another id, and never one of the names no resource adopts (`never`: Keycloak's own, whose ids
    may be known: the status that names the id is no proof the operator made it).
    `markless`: natural key -> remote id of the object without a readable marker."""
    out: dict[ObjectKey, str] = {}
    taken: set[str] = set()
    for c in sorted(conflicts, key=lambda c: (claimants[c.key].created, identity(c.key))):
        r = claimants[c.key]
        remote = markless.get(c.natural_key[0])
        if c.holder is not None or remote is None or c.key in owning or remote in taken:
            continue
        if c.natural_key[0] in never:
            continue
        if r.keycloak_id == remote:
            out[c.key] = remote
            taken.add(remote)
    return out


def refusal(r: Any, conflict: Conflict, never: AbstractSet[str], owning: AbstractSet[ObjectKey]) -> str:
    """Why a resource that asked to adopt did not, for its Conflict's message ("" if it did not ask)."""
    if not r.adopt and not r.adopt_refused:
        return ""
    if conflict.holder is not None:
        return "; not adopted: another resource's object is never adopted"
    if conflict.natural_key[0] in never:
        return f"; not adopted: {conflict.natural_key[0]!r} is Keycloak's own"
    if r.adopt_refused:
        return f"; not adopted: {r.adopt_refused}"
    if r.key in owning:
        return "; not adopted: this resource already has an object in Keycloak (its name was changed)"
    return ""
