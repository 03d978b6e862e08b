"""Stored-format migrations: ordered steps from format N to N+1, planned over what a round read (ADR 0022).

The record is a realm attribute, `kcop.dev.format`, on each realm the operator owns: a realm is the unit the
operator writes everything else inside of, its attributes come back in the realm listing every round reads
anyway (so checking the record costs no request), and a realm created by another operator or by hand never
carries our marker, so it is never migrated. A realm without the attribute is at format 1 (everything written
before formats existed). Each step's writes come first and the record of that step's target last (or in the
same write), so a crash half-way leaves the old record and the step re-runs: every step must be idempotent.
A realm whose record is newer than this replica knows was migrated by a newer one: it is left alone.

Format 2 changes nothing but the record itself: nothing stored by format 1 needed a new shape yet, and the
record is what makes the next migration checkable (it is written on every owned realm, then on every realm
created while format 2 is in effect).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from keycloak_operator.core.common.formats import FIRST_FORMAT, FORMAT_VERSION
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.marker import PREFIX, read_marker, string_attributes

ATTR_FORMAT: Final = PREFIX + "format"  # a marker attribute: never part of any content hash


@dataclass(frozen=True, slots=True)
class RealmWrite:
    """A partial realm representation PUT on the realm. Fields left out are left as they are, but
    `attributes`, when sent, replaces the realm's attributes: Keycloak 26.7.3 removes every one not sent
    (read in its bytecode, DefaultExportImportManager.updateRealm; seen on the real server, where a PUT of
    the record alone took the marker with it). So a write that touches attributes sends all of them."""

    realm: str
    body: Mapping[str, Any]
    target: int  # the format this write belongs to


Planner = Callable[[Mapping[str, Any]], list[RealmWrite]]


@dataclass(frozen=True, slots=True)
class Migration:
    source: int
    target: int
    why: str
    plan: Planner  # the step's own writes for one realm, before its record; pure and idempotent


def _nothing_but_the_record(realm: Mapping[str, Any]) -> list[RealmWrite]:
    return []


MIGRATIONS: Final[tuple[Migration, ...]] = (
    Migration(1, 2, "record the stored format on every owned realm", _nothing_but_the_record),
)


def check_registry(migrations: Sequence[Migration], newest: int) -> None:
    """The steps chain from format 1 to `newest`, one format at a time; anything else is a bug at import."""
    expected = FIRST_FORMAT
    for m in migrations:
        if (m.source, m.target) != (expected, expected + 1):
            raise ValueError(
                f"migration {m.source}->{m.target} out of order: expected {expected}->{expected + 1}"
            )
        expected = m.target
    if expected != newest:
        raise ValueError(f"migrations end at format {expected}, the operator writes {newest}")


check_registry(MIGRATIONS, FORMAT_VERSION)


def recorded_format(realm: Mapping[str, Any]) -> int | None:
    """The format recorded on a realm as Keycloak lists it: 1 when there is no record (or an emptied one, as a
    released realm's marker is emptied); None when the record cannot be read (hand-edited), which is left
    alone rather than guessed."""
    attributes = realm.get("attributes")
    value = attributes.get(ATTR_FORMAT) if isinstance(attributes, Mapping) else None
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if value is None or value == "":
        return FIRST_FORMAT
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 4:
        return int(value)
    return None


def record(realm: Mapping[str, Any], target: int) -> dict[str, Any]:
    """The record's write: the realm's attributes as listed (the marker among them), with the record."""
    return {"attributes": {**string_attributes(realm.get("attributes")), ATTR_FORMAT: str(target)}}


def stamped(body: Mapping[str, Any], fmt: int) -> dict[str, Any]:
    """A new realm's create body as written in format `fmt`: from format 2 on it carries the record, so a new
    realm never needs migrating."""
    if fmt <= FIRST_FORMAT:
        return dict(body)
    attributes = body.get("attributes")
    merged = dict(attributes) if isinstance(attributes, Mapping) else {}
    return {**body, "attributes": {**merged, ATTR_FORMAT: str(fmt)}}


def record_kept(body: Mapping[str, Any], listed: Mapping[str, Any] | None) -> dict[str, Any]:
    """An update body (`listed`: the realm as the round listed it) with the record the realm already has,
    as it is. An update whose attributes replace the realm's must not drop the record (the migration would
    run again), nor move it forward (the steps in between would never run for that realm: only a migration
    advances a record), nor downgrade a newer or unreadable one (a newer replica's, after a rollback)."""
    current = string_attributes(listed.get("attributes") if listed is not None else None).get(ATTR_FORMAT)
    if not current:
        return dict(body)
    attributes = body.get("attributes")
    merged = dict(attributes) if isinstance(attributes, Mapping) else {}
    return {**body, "attributes": {**merged, ATTR_FORMAT: current}}


def _applied(realm: Mapping[str, Any], write: RealmWrite) -> dict[str, Any]:
    """The realm as Keycloak leaves it after `write`: fields sent replace, `attributes` as a whole."""
    return {**realm, **write.body}


def plan_migrations(
    observed: Sequence[Mapping[str, Any]],
    owned: Collection[ObjectKey],
    in_effect: int,
    migrations: Sequence[Migration] = MIGRATIONS,
) -> list[RealmWrite]:
    """The writes that bring every realm of `owned` (the resources this round may write for, found by their
    marker among the `observed` realm listing) up to `in_effect`, in realm-name order, each realm's steps in
    order, each step's record after its own writes. A realm already at `in_effect` or newer plans nothing:
    a finished migration is never run again."""
    by_source = {m.source: m for m in migrations}
    writes: list[RealmWrite] = []
    for realm in sorted(observed, key=lambda r: str(r.get("realm", ""))):
        marker = read_marker(realm.get("attributes"))
        name = realm.get("realm")
        if marker is None or marker.key not in owned or not isinstance(name, str):
            continue
        fmt = recorded_format(realm)
        # Each step plans, and each record is built, from the realm as the writes before leave it: a record
        # built from the listing would put back the attributes the step's own writes just changed.
        current: Mapping[str, Any] = realm
        while fmt is not None and fmt < in_effect and fmt in by_source:
            step = by_source[fmt]
            for w in step.plan(current):
                writes.append(w)
                current = _applied(current, w)
            recorded = RealmWrite(name, record(current, step.target), step.target)
            writes.append(recorded)
            current = _applied(current, recorded)
            fmt = step.target
    return writes
