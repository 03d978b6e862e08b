"""Stored-format migrations (core/replication/migrations.py): planned once per owned realm, recorded with the
last write, never run again; the property: applying the plan converges and a second plan is empty."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core.replication import migrations
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.marker import marker_attributes
from keycloak_operator.core.replication.migrations import ATTR_FORMAT, Migration, RealmWrite
from keycloak_operator.kernel import names

HASH = "a" * 64


def key(name: str, kind: str = names.REALM_KIND) -> ObjectKey:
    return ObjectKey(kind, "team-a", name)


def realm(
    name: str, *, kind: str = names.REALM_KIND, fmt: str | None = None, marked: bool = True
) -> dict[str, Any]:
    attributes: dict[str, Any] = {"foreign": "kept"}
    if marked:
        attributes |= marker_attributes(key(name, kind), HASH)
    if fmt is not None:
        attributes[ATTR_FORMAT] = fmt
    return {"realm": name, "id": name, "attributes": attributes}


def apply(observed: list[dict[str, Any]], writes: list[RealmWrite]) -> list[dict[str, Any]]:
    """As Keycloak 26.7.3 applies a partial realm PUT: the attributes sent replace the realm's."""
    out = {r["realm"]: {**r, "attributes": dict(r["attributes"])} for r in observed}
    for w in writes:
        if "attributes" in w.body:
            out[w.realm]["attributes"] = dict(w.body["attributes"])
    return list(out.values())


def test_an_owned_realm_without_record_gets_format_2_recorded_in_one_write_keeping_its_attributes() -> None:
    r1 = realm("r1")
    writes = migrations.plan_migrations([r1], {key("r1")}, 2)
    assert writes == [RealmWrite("r1", {"attributes": {**r1["attributes"], ATTR_FORMAT: "2"}}, 2)]


def test_a_finished_migration_is_never_run_again() -> None:
    assert migrations.plan_migrations([realm("r1", fmt="2")], {key("r1")}, 2) == []


def test_nothing_migrates_while_the_old_format_is_in_effect() -> None:
    assert migrations.plan_migrations([realm("r1")], {key("r1")}, 1) == []


def test_realms_not_ours_are_never_migrated() -> None:
    observed = [
        realm("hand-made", marked=False),
        realm("other-kind", kind="KeycloakWidget"),  # a marker of a kind this replica does not know
        realm("not-this-round"),  # ours, but not among the resources this login writes for
    ]
    owned = {key("hand-made"), key("other-kind")}
    assert migrations.plan_migrations(observed, owned, 2) == []


def test_a_newer_record_is_left_alone_and_an_unreadable_one_too() -> None:
    observed = [realm("r1", fmt="3"), realm("r2", fmt="two"), realm("r3", fmt="")]
    writes = migrations.plan_migrations(observed, {key("r1"), key("r2"), key("r3")}, 2)
    assert [w.realm for w in writes] == ["r3"]  # an emptied record (a release) reads as format 1


def test_a_record_listed_as_a_list_of_one_is_read() -> None:
    assert migrations.recorded_format({"attributes": {ATTR_FORMAT: ["2"]}}) == 2
    assert migrations.recorded_format({"attributes": {ATTR_FORMAT: ["2", "3"]}}) is None
    assert migrations.recorded_format({}) == 1


def test_steps_run_in_order_each_recorded_after_its_own_writes_which_the_record_keeps() -> None:
    # Each step plans from the realm as the writes before it leave it, and its record sends that realm's
    # attributes: a record built from the listing would remove what the step itself just wrote.
    def touch(step: int) -> migrations.Planner:
        return lambda r: [
            RealmWrite(str(r["realm"]), {"attributes": {**r["attributes"], f"step{step}": "done"}}, step)
        ]

    chain = (Migration(1, 2, "a", touch(2)), Migration(2, 3, "b", touch(3)))
    writes = migrations.plan_migrations([realm("r1")], {key("r1")}, 3, chain)
    assert [
        (
            w.target,
            w.body["attributes"].get("step2"),
            w.body["attributes"].get("step3"),
            w.body["attributes"].get(ATTR_FORMAT),
        )
        for w in writes
    ] == [
        (2, "done", None, None),
        (2, "done", None, "2"),
        (3, "done", "done", "2"),
        (3, "done", "done", "3"),
    ]
    assert apply([realm("r1")], writes)[0]["attributes"]["foreign"] == "kept"
    # A crash after the first record: only the second step is planned again.
    assert [w.target for w in migrations.plan_migrations([realm("r1", fmt="2")], {key("r1")}, 3, chain)] == [
        3,
        3,
    ]


def test_the_registry_must_chain_from_format_1_to_the_newest() -> None:
    migrations.check_registry(migrations.MIGRATIONS, 2)
    nothing = migrations.MIGRATIONS[0].plan
    with pytest.raises(ValueError, match="out of order"):
        migrations.check_registry((Migration(2, 3, "x", nothing),), 3)
    with pytest.raises(ValueError, match="end at format 2"):
        migrations.check_registry(migrations.MIGRATIONS, 3)


def test_a_new_realm_is_stamped_only_once_format_2_is_in_effect() -> None:
    body: Mapping[str, Any] = {"realm": "r1", "attributes": {"a": "b"}}
    assert migrations.stamped(body, 1) == body
    assert migrations.stamped(body, 2) == {"realm": "r1", "attributes": {"a": "b", ATTR_FORMAT: "2"}}
    assert migrations.stamped({"realm": "r1"}, 2)["attributes"] == {ATTR_FORMAT: "2"}


@pytest.mark.parametrize(
    ("listed", "written"),
    [
        ("3", "3"),  # a newer replica's record, after a rollback: not downgraded
        ("x", "x"),  # unreadable (hand-edited): left as it is, not guessed
        ("2", "2"),
        (["2"], "2"),  # the one-element list read_marker accepts
        ("1", "1"),  # not moved forward: the step 1 -> 2 is the migration's to run, then record
        ("", None),
        (None, None),  # none yet: the migration writes it after its step
    ],
)
def test_an_update_sends_back_the_record_already_on_the_realm_as_it_is(
    listed: str | list[str] | None, written: str | None
) -> None:
    on_realm = {"realm": "r1", "attributes": {} if listed is None else {ATTR_FORMAT: listed}}
    body = migrations.record_kept({"realm": "r1", "attributes": {"a": "b"}}, on_realm)
    assert body["attributes"].get(ATTR_FORMAT) == written and body["attributes"]["a"] == "b"


def test_a_record_write_keeps_the_marker_listed_as_one_element_lists() -> None:
    marker = marker_attributes(ObjectKey("KeycloakRealm", "team-a", "main"), "0" * 64)
    listed = {"realm": "r1", "attributes": {k: [v] for k, v in marker.items()}}
    written = migrations.record(listed, 2)["attributes"]
    assert written == {**marker, ATTR_FORMAT: "2"}


REALMS = st.lists(
    st.tuples(
        st.sampled_from(["r1", "r2", "r3", "r4"]),
        st.sampled_from([None, "", "1", "2", "9", "x"]),
        st.sampled_from([names.REALM_KIND, "KeycloakWidget", None]),
        st.booleans(),
    ),
    unique_by=lambda t: t[0],
)


@given(REALMS, st.sampled_from([1, 2]))
def test_applying_the_plan_converges_and_a_second_plan_is_empty(
    specs: list[tuple[str, str | None, str | None, bool]], in_effect: int
) -> None:
    observed = [realm(n, fmt=f, kind=k or names.REALM_KIND, marked=k is not None) for n, f, k, _ in specs]
    owned = {key(n) for n, _, _, mine in specs if mine}
    writes = migrations.plan_migrations(observed, owned, in_effect)
    after = apply(observed, writes)
    assert migrations.plan_migrations(after, owned, in_effect) == []
    for before, now in zip(observed, after, strict=True):
        changed = before != now
        assert changed == any(w.realm == before["realm"] for w in writes)
        assert now["attributes"]["foreign"] == "kept"  # nothing but the record is changed
        assert {k: v for k, v in now["attributes"].items() if k != ATTR_FORMAT} == {
            k: v for k, v in before["attributes"].items() if k != ATTR_FORMAT
        }
        if changed:
            assert now["attributes"][ATTR_FORMAT] == str(in_effect)
