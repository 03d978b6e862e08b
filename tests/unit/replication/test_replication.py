"""The pure replication core (ADR 0005): identity, marker, diff, ownership conflicts."""

from __future__ import annotations

import dataclasses
import hashlib
import random
import re
from collections import Counter
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core.replication import (
    MARKER_ATTRIBUTES,
    Actual,
    Claim,
    Conflict,
    Create,
    Delete,
    Desired,
    Marker,
    ObjectKey,
    Plan,
    Update,
    content_hash,
    diff,
    identity,
    marked,
    marker_attributes,
    read_marker,
    resolve,
)

KNOWN = frozenset({"A", "B"})
H1, H2, H3 = (hashlib.sha256(s.encode()).hexdigest() for s in ("one", "two", "three"))


def key(kind: str, namespace: str, name: str) -> ObjectKey:
    return ObjectKey(kind, namespace, name)


def want(k: ObjectKey, h: str = H1) -> Desired:
    return Desired(k, {"h": h}, h)


def have(k: ObjectKey, h: str = H1, remote_id: str | None = None) -> Actual:
    return Actual(k, remote_id or f"id:{k}", h)


# --- identity -----------------------------------------------------------------------------------------------


def test_identity_is_exactly_kind_namespace_name_in_that_order() -> None:
    fields = dataclasses.fields(ObjectKey)
    assert [f.name for f in fields] == ["kind", "namespace", "name"]
    assert all(f.compare and f.hash is None for f in fields)  # every field compared and hashed, none else
    params = ObjectKey.__dataclass_params__  # type: ignore[attr-defined]
    assert params.frozen and params.order and params.eq
    assert identity(key("A", "bar", "web")) == ("A", "bar", "web")


def test_keys_differing_only_in_namespace_are_different_objects() -> None:
    bar, foo = key("A", "bar", "web"), key("A", "foo", "web")
    assert bar != foo
    assert len({bar: 1, foo: 2}) == 2
    assert sorted([foo, bar]) == [bar, foo]


def test_key_is_frozen() -> None:
    k = key("A", "bar", "web")
    with pytest.raises(dataclasses.FrozenInstanceError):
        k.namespace = "foo"  # type: ignore[misc]


small_keys = st.builds(
    ObjectKey,
    st.sampled_from(["A", "B", "U"]),
    st.sampled_from(["bar", "foo", "baz"]),
    st.sampled_from(["web", "api"]),
)


@given(small_keys, small_keys)
def test_equality_order_and_hash_all_come_from_identity(a: ObjectKey, b: ObjectKey) -> None:
    assert (a == b) == (identity(a) == identity(b))
    assert (a < b) == (identity(a) < identity(b))
    assert (a <= b) == (identity(a) <= identity(b))
    assert hash(a) == hash(identity(a))  # the dataclass hashes exactly the identity tuple


@given(st.lists(small_keys))
def test_sorting_by_key_and_by_identity_agree(keys: list[ObjectKey]) -> None:
    assert sorted(keys) == sorted(keys, key=identity)


# --- marker -------------------------------------------------------------------------------------------------

dns_label = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True)
valid_keys = st.builds(
    ObjectKey,
    st.from_regex(r"[A-Z][A-Za-z0-9]{0,20}", fullmatch=True),
    dns_label,
    st.lists(dns_label, min_size=1, max_size=3).map(".".join),
)
hex_hashes = st.from_regex(r"[0-9a-f]{64}", fullmatch=True)
MARKED = key("KeycloakClient", "team-a", "web")


@given(valid_keys, hex_hashes)
def test_marker_round_trips(k: ObjectKey, h: str) -> None:
    attributes = marker_attributes(k, h)
    assert read_marker(attributes) == Marker(k, h)
    # Keycloak's list-valued attributes (groups, users) hold the same marker as one-element lists.
    assert read_marker({n: [v] for n, v in attributes.items()}) == Marker(k, h)


def test_marker_attribute_names_are_valid_keycloak_attribute_names() -> None:
    # The strictest rule Keycloak applies to attribute names (the user profile): letters, digits, . _ -
    for name in MARKER_ATTRIBUTES:
        assert re.fullmatch(r"[a-zA-Z0-9._-]+", name) and len(name) <= 255
    assert set(marker_attributes(MARKED, H1)) == set(MARKER_ATTRIBUTES)


def test_longest_kubernetes_name_fits_a_keycloak_attribute_value() -> None:
    long = key("KeycloakClient", "n" * 63, ".".join(["a" * 63] * 3) + "." + "b" * 61)
    assert len(long.name) == 253
    values = marker_attributes(long, H1).values()
    assert max(len(v) for v in values) <= 255  # a conservative varchar size for an attribute value


@pytest.mark.parametrize(
    "change",
    [
        {"kcop.dev.kind": None},
        {"kcop.dev.content-hash": None},
        {"kcop.dev.namespace": ["team-a", "team-b"]},
        {"kcop.dev.namespace": []},
        {"kcop.dev.name": 7},
        {"kcop.dev.name": [7]},
        {"kcop.dev.name": ""},
        {"kcop.dev.namespace": "Team-A"},
        {"kcop.dev.namespace": "a/b"},
        {"kcop.dev.name": "web/x"},
        {"kcop.dev.kind": "Keycloak Client"},
        {"kcop.dev.content-hash": H1.upper()},
        {"kcop.dev.content-hash": H1[:40]},
    ],
)
def test_malformed_marker_is_not_ours(change: dict[str, Any]) -> None:
    attributes: dict[str, Any] = {**marker_attributes(MARKED, H1), **change}
    attributes = {k: v for k, v in attributes.items() if v is not None}
    assert read_marker(attributes) is None


def test_no_attributes_is_not_ours() -> None:
    assert read_marker(None) is None
    assert read_marker({}) is None
    assert read_marker({"foo": "bar"}) is None
    assert read_marker(["kcop.dev.kind"]) is None  # type: ignore[arg-type]


def test_extra_attributes_are_ignored() -> None:
    attributes = {
        **marker_attributes(MARKED, H1),
        "kcop.dev.future": "x",
        "pkce.code.challenge.method": "S256",
    }
    assert read_marker(attributes) == Marker(MARKED, H1)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@given(st.dictionaries(st.sampled_from([*MARKER_ATTRIBUTES, "x"]) | st.text(max_size=12), json_values))
def test_read_marker_never_raises(attributes: dict[str, Any]) -> None:
    read_marker(attributes)


@pytest.mark.parametrize(
    ("k", "h"),
    [
        (key("KeycloakClient", "Team", "web"), H1),
        (key("KeycloakClient", "team", "web/x"), H1),
        (key("", "team", "web"), H1),
        (key("KeycloakClient", "team", "web"), "not-a-hash"),
    ],
)
def test_marker_refuses_what_it_could_not_read_back(k: ObjectKey, h: str) -> None:
    with pytest.raises(ValueError):
        marker_attributes(k, h)


def test_content_hash_is_sha256_of_canonical_json() -> None:
    expected = hashlib.sha256(b'{"a":[1,"\xc3\xa9"],"b":{"c":true}}').hexdigest()
    assert content_hash({"b": {"c": True}, "a": [1, "é"]}) == expected


@given(st.dictionaries(st.text(max_size=5), json_values, max_size=5))
def test_content_hash_ignores_key_order(content: dict[str, Any]) -> None:
    assert content_hash(content) == content_hash(dict(reversed(list(content.items()))))


def test_content_hash_changes_with_content() -> None:
    base = {"clientId": "web", "redirectUris": ["https://a"], "attributes": {"x": "1"}}
    assert content_hash(base) != content_hash({**base, "clientId": "web2"})
    assert content_hash(base) != content_hash({**base, "redirectUris": ["https://b"]})
    assert content_hash(base) != content_hash({**base, "attributes": {"x": "2"}})


def test_content_hash_excludes_the_marker() -> None:
    content = {"clientId": "web", "attributes": {"x": "1"}}
    sent = marked(content, MARKED)
    assert sent["attributes"]["x"] == "1"
    assert read_marker(sent["attributes"]) == Marker(MARKED, content_hash(content))
    assert content_hash(sent) == content_hash(content)
    # A stale marker (another hash) does not change the hash either: the marker is never content.
    stale = {**content, "attributes": {"x": "1", **marker_attributes(MARKED, H2)}}
    assert content_hash(stale) == content_hash(content)


def test_marked_content_without_attributes_hashes_like_the_original() -> None:
    content = {"clientId": "web"}
    assert content_hash(marked(content, MARKED)) == content_hash(content)
    assert content_hash({"clientId": "web", "attributes": {}}) == content_hash(content)


def test_desired_of_computes_the_hash() -> None:
    assert Desired.of(MARKED, {"clientId": "web"}).content_hash == content_hash({"clientId": "web"})


# --- diff: examples -----------------------------------------------------------------------------------------


def test_empty_sides_plan_nothing() -> None:
    assert diff([], [], KNOWN).is_empty()


def test_identical_sides_plan_nothing() -> None:
    keys = [key("A", ns, n) for ns in ("bar", "foo") for n in ("web", "api")]
    plan = diff([want(k) for k in keys], [have(k) for k in keys], KNOWN)
    assert plan == Plan()


def test_only_remote_deletes_everything_in_key_order() -> None:
    keys = [key("B", "foo", "web"), key("A", "foo", "web"), key("A", "bar", "web"), key("A", "bar", "api")]
    plan = diff([], [have(k) for k in keys], KNOWN)
    assert [d.key for d in plan.deletes] == sorted(keys)
    assert [d.remote_id for d in plan.deletes] == [f"id:{k}" for k in sorted(keys)]
    assert not (plan.creates or plan.updates or plan.duplicates)


def test_only_local_creates_everything_in_key_order() -> None:
    keys = [key("B", "foo", "web"), key("A", "foo", "web"), key("A", "bar", "web")]
    plan = diff([want(k) for k in keys], [], KNOWN)
    assert plan.creates == [Create(k, {"h": H1}, H1) for k in sorted(keys)]
    assert not (plan.deletes or plan.updates or plan.duplicates)


def test_seed_case_deletes_only_bar_and_never_touches_foo() -> None:
    bar, foo = key("A", "bar", "web"), key("A", "foo", "web")
    # The secondary, listed as the seed's store iterates it: (kind, name, namespace), so bar before foo.
    actual = [have(bar, remote_id="kc-bar"), have(foo, remote_id="kc-foo")]
    plan = diff([want(foo)], actual, KNOWN)
    assert plan.deletes == [Delete(bar, "kc-bar")]
    assert plan.creates == [] and plan.updates == [] and plan.duplicates == []
    assert all(op.key != foo for op in plan.operations())
    # And the loop is stable: after the delete, nothing more to do.
    assert diff([want(foo)], [have(foo, remote_id="kc-foo")], KNOWN).is_empty()


def test_seed_case_mirrored_deletes_only_foo() -> None:
    bar, foo = key("A", "bar", "web"), key("A", "foo", "web")
    plan = diff([want(bar)], [have(foo), have(bar)], KNOWN)
    assert [d.key for d in plan.deletes] == [foo]
    assert not (plan.creates or plan.updates or plan.duplicates)


def test_same_namespace_and_name_but_another_kind_is_another_object() -> None:
    a, b = key("A", "foo", "web"), key("B", "foo", "web")
    plan = diff([want(b)], [have(a)], KNOWN)
    assert [d.key for d in plan.deletes] == [a] and [c.key for c in plan.creates] == [b]


def test_update_only_when_the_hash_differs() -> None:
    same, changed = key("A", "foo", "same"), key("A", "foo", "changed")
    plan = diff([want(same, H1), want(changed, H2)], [have(same, H1), have(changed, H1)], KNOWN)
    assert plan.updates == [Update(changed, f"id:{changed}", {"h": H2}, H2, H1)]
    assert not (plan.deletes or plan.creates or plan.duplicates)


def test_unknown_kinds_are_left_alone() -> None:
    unknown = key("U", "foo", "web")
    plan = diff([want(key("A", "foo", "web"))], [have(unknown), have(key("A", "foo", "web"))], KNOWN)
    assert plan.is_empty()
    assert diff([], [have(unknown)], KNOWN).is_empty()


def test_desired_of_an_unknown_kind_is_refused() -> None:
    # It would be created every round: its object would never be recognised as ours.
    with pytest.raises(ValueError, match="does not know"):
        diff([want(key("U", "foo", "web"))], [], KNOWN)


def test_desired_key_twice_is_refused() -> None:
    k = key("A", "foo", "web")
    with pytest.raises(ValueError, match="twice"):
        diff([want(k), want(k, H2)], [], KNOWN)


def test_remote_object_listed_twice_is_refused() -> None:
    # Otherwise it would look like its own duplicate, and the "extra" copy is the survivor itself.
    k = key("A", "foo", "web")
    with pytest.raises(ValueError, match="twice"):
        diff([want(k)], [have(k, remote_id="x"), have(k, remote_id="x")], KNOWN)


def test_duplicate_markers_keep_the_up_to_date_copy() -> None:
    k = key("A", "foo", "web")
    plan = diff([want(k, H2)], [have(k, H1, "r1"), have(k, H2, "r2"), have(k, H2, "r3")], KNOWN)
    assert plan.duplicates == [Delete(k, "r1"), Delete(k, "r3")]
    assert not (plan.deletes or plan.creates or plan.updates)


def test_duplicate_markers_all_stale_keep_the_smallest_id_and_update_it() -> None:
    k = key("A", "foo", "web")
    plan = diff([want(k, H3)], [have(k, H2, "r2"), have(k, H1, "r1")], KNOWN)
    assert plan.duplicates == [Delete(k, "r2")]
    assert plan.updates == [Update(k, "r1", {"h": H3}, H3, H1)]


def test_duplicate_markers_of_an_undeclared_key_are_all_deleted() -> None:
    k = key("A", "foo", "web")
    plan = diff([], [have(k, H1, "r2"), have(k, H1, "r1")], KNOWN)
    assert plan.deletes == [Delete(k, "r1"), Delete(k, "r2")]
    assert not plan.duplicates


def test_held_keys_are_left_alone_on_both_sides() -> None:
    stale, fresh, gone = key("A", "foo", "stale"), key("A", "foo", "fresh"), key("A", "foo", "gone")
    held = frozenset({stale, fresh, gone})
    plan = diff([want(stale, H2), want(fresh)], [have(stale, H1), have(gone)], KNOWN, held=held)
    assert plan.is_empty()


def test_operations_remove_before_upserting() -> None:
    d, dup, c, u = key("A", "d", "x"), key("A", "dup", "x"), key("A", "c", "x"), key("A", "u", "x")
    plan = diff(
        [want(c), want(u, H2), want(dup)],
        [have(d), have(u, H1), have(dup, H1, "r1"), have(dup, H1, "r2")],
        KNOWN,
    )
    kinds = [type(op).__name__ for op in plan.operations()]
    assert kinds == ["Delete", "Delete", "Create", "Update"]
    assert [op.key for op in plan.operations()] == [d, dup, c, u]


# --- diff: properties ---------------------------------------------------------------------------------------

# Few kinds, namespaces, names and hashes, so names collide across namespaces and kinds all the time.
hashes = st.sampled_from([H1, H2, H3])
known_keys = small_keys.filter(lambda k: k.kind in KNOWN)
desired_sets = st.dictionaries(known_keys, hashes, max_size=12).map(
    lambda d: [want(k, h) for k, h in d.items()]
)
# Remote objects: id -> (key, hash); keys repeat (duplicate markers) and include an unknown kind.
remote_sets = st.lists(st.tuples(small_keys, hashes), max_size=14).map(
    lambda pairs: {f"r{i}": pair for i, pair in enumerate(pairs)}
)
Remote = dict[str, tuple[ObjectKey, str]]


def listed(remote: Remote) -> list[Actual]:
    return [Actual(k, rid, h) for rid, (k, h) in remote.items()]


def run(remote: Remote, plan: Plan, failed: AbstractSet[ObjectKey] = frozenset()) -> Remote:
    """A Keycloak stand-in at the level of remote objects: performs each operation on its own."""
    new = dict(remote)
    for op in plan.operations():
        if op.key in failed:
            continue
        if isinstance(op, Delete):
            assert new.pop(op.remote_id)[0] == op.key
        elif isinstance(op, Create):
            rid = f"new:{op.key}"
            assert rid not in new
            new[rid] = (op.key, op.content_hash)
        else:
            assert new[op.remote_id][0] == op.key
            new[op.remote_id] = (op.key, op.content_hash)
    return new


def ours(remote: Remote) -> Counter[tuple[ObjectKey, str]]:
    return Counter(v for v in remote.values() if v[0].kind in KNOWN)


def apply_plan(
    state: Mapping[ObjectKey, str], plan: Plan, failed: AbstractSet[ObjectKey] = frozenset()
) -> dict[ObjectKey, str]:
    """The key -> content hash state after the plan ran, skipping failed keys: a model of a round at the level
    of keys. Removing a duplicate does not change this state: the surviving copy still carries the key."""
    new = dict(state)
    for d in plan.deletes:
        if d.key not in failed:
            new.pop(d.key, None)
    upserts: list[Create | Update] = [*plan.creates, *plan.updates]
    for upsert in upserts:
        if upsert.key not in failed:
            new[upsert.key] = upsert.content_hash
    return new


@given(desired_sets, remote_sets)
def test_one_round_converges_and_a_second_round_plans_nothing(desired: list[Desired], remote: Remote) -> None:
    plan = diff(desired, listed(remote), KNOWN)
    after = run(remote, plan)
    assert ours(after) == Counter((d.key, d.content_hash) for d in desired)
    unknown = {rid: v for rid, v in remote.items() if v[0].kind not in KNOWN}
    assert {rid: v for rid, v in after.items() if v[0].kind not in KNOWN} == unknown
    assert diff(desired, listed(after), KNOWN).is_empty()


@given(desired_sets, remote_sets)
def test_an_existing_object_keeps_its_remote_id(desired: list[Desired], remote: Remote) -> None:
    after = run(remote, diff(desired, listed(remote), KNOWN))
    for d in desired:
        before = {rid for rid, (k, _) in remote.items() if k == d.key}
        now = {rid for rid, (k, _) in after.items() if k == d.key}
        assert len(now) == 1
        if before:
            assert now <= before  # the survivor is one of the originals, never a re-creation


@given(desired_sets, remote_sets)
def test_no_key_is_both_deleted_and_upserted(desired: list[Desired], remote: Remote) -> None:
    plan = diff(desired, listed(remote), KNOWN)
    deleted = {d.key for d in plan.deletes}
    upserted = [c.key for c in plan.creates] + [u.key for u in plan.updates]
    assert deleted.isdisjoint(upserted)
    assert len(upserted) == len(set(upserted))
    assert {d.key for d in plan.duplicates} <= {d.key for d in desired}


@given(desired_sets, remote_sets)
def test_removals_come_before_upserts_and_lists_are_sorted(desired: list[Desired], remote: Remote) -> None:
    plan = diff(desired, listed(remote), KNOWN)
    ops = plan.operations()
    first_upsert = next((i for i, op in enumerate(ops) if not isinstance(op, Delete)), len(ops))
    assert all(isinstance(op, Delete) for op in ops[:first_upsert])
    assert not any(isinstance(op, Delete) for op in ops[first_upsert:])
    for entries in (plan.deletes, plan.duplicates, plan.creates, plan.updates):
        keys = [e.key for e in entries]
        assert keys == sorted(keys)


@given(desired_sets, remote_sets, st.randoms(use_true_random=False))
def test_plan_does_not_depend_on_input_order(
    desired: list[Desired], remote: Remote, rnd: random.Random
) -> None:
    actual = listed(remote)
    plan = diff(desired, actual, KNOWN)
    rnd.shuffle(desired)
    rnd.shuffle(actual)
    assert diff(desired, actual, KNOWN) == plan


@given(desired_sets, remote_sets)
def test_applying_the_plan_to_the_key_state_yields_desired(desired: list[Desired], remote: Remote) -> None:
    # The key -> hash model needs one object per key: keep the first of each.
    state: dict[ObjectKey, str] = {}
    for k, h in remote.values():
        if k.kind in KNOWN:
            state.setdefault(k, h)
    actual = [Actual(k, f"id:{k}", h) for k, h in state.items()]
    plan = diff(desired, actual, KNOWN)
    wanted = {d.key: d.content_hash for d in desired}
    assert apply_plan(state, plan) == wanted
    assert (
        apply_plan(wanted, diff(desired, [Actual(k, f"id:{k}", h) for k, h in wanted.items()], KNOWN))
        == wanted
    )


@given(desired_sets, remote_sets, st.data())
def test_a_failed_object_does_not_stop_the_others_and_the_next_round_repairs_it(
    desired: list[Desired], remote: Remote, data: st.DataObject
) -> None:
    plan = diff(desired, listed(remote), KNOWN)
    planned = sorted({op.key for op in plan.operations()})
    failed = frozenset(data.draw(st.lists(st.sampled_from(planned), unique=True)) if planned else [])
    after = run(remote, plan, failed)
    wanted = {d.key: d.content_hash for d in desired}
    for k in set(planned) - failed:
        copies = [h for kk, h in after.values() if kk == k]
        assert copies == ([wanted[k]] if k in wanted else [])
    after_retry = run(after, diff(desired, listed(after), KNOWN))
    assert ours(after_retry) == Counter(wanted.items())


# --- the key-state model -----------------------------------------------------------------------------------


def test_the_key_state_model_skips_failed_keys() -> None:
    d, c, u = key("A", "d", "x"), key("A", "c", "x"), key("A", "u", "x")
    state = {d: H1, u: H1}
    plan = diff([want(c), want(u, H2)], [have(d), have(u, H1)], KNOWN)
    assert apply_plan(state, plan) == {c: H1, u: H2}
    assert apply_plan(state, plan, frozenset({d, u})) == {d: H1, c: H1, u: H1}
    assert apply_plan(state, plan, frozenset({c})) == {u: H2}


# --- ownership of natural keys ------------------------------------------------------------------------------

T0 = datetime(2025, 1, 1, tzinfo=UTC)
CLIENT = ("realm-a", "web")


def claim(namespace: str, natural: tuple[str, ...] = CLIENT, age: int = 0) -> Claim:
    return Claim(key("KeycloakClient", namespace, "web"), natural, T0 - timedelta(seconds=age))


def test_free_name_goes_to_the_oldest_claim() -> None:
    old, new = claim("zeta", age=60), claim("alpha")
    result = resolve([new, old], {})
    assert result.granted == [old]
    assert result.conflicts == [Conflict(new.key, CLIENT, old.key)]
    assert result.held == {new.key}


def test_equal_age_is_broken_by_key() -> None:
    bar, foo = claim("bar"), claim("foo")
    assert resolve([foo, bar], {}).granted == [bar]


def test_current_holder_keeps_the_name_even_when_younger() -> None:
    old, holder = claim("old", age=600), claim("holder")
    result = resolve([old, holder], {CLIENT: holder.key})
    assert result.granted == [holder]
    assert result.conflicts == [Conflict(old.key, CLIENT, holder.key)]


def test_a_name_taken_by_an_unmarked_object_is_never_granted() -> None:
    result = resolve([claim("bar"), claim("foo")], {CLIENT: None})
    assert result.granted == []
    assert [(c.key.namespace, c.holder) for c in result.conflicts] == [("bar", None), ("foo", None)]


def test_a_holder_that_no_longer_claims_the_name_keeps_it_until_it_lets_go() -> None:
    # Its object still has the clientId; a create now could only fail. The next round, once the object is
    # renamed or deleted, grants the name.
    leaving = key("KeycloakClient", "old", "web")
    result = resolve([claim("bar")], {CLIENT: leaving})
    assert result.granted == [] and result.conflicts == [Conflict(claim("bar").key, CLIENT, leaving)]
    assert resolve([claim("bar")], {}).granted == [claim("bar")]


def test_different_names_do_not_interfere() -> None:
    a, b = claim("bar", ("realm-a", "web")), claim("foo", ("realm-b", "web"))
    result = resolve([a, b], {("realm-a", "web"): None})
    assert result.granted == [b] and [c.key for c in result.conflicts] == [a.key]


def test_a_key_claiming_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        resolve([claim("bar"), claim("bar", ("realm-b", "web"))], {})


def test_conflicted_claims_are_held_out_of_the_diff() -> None:
    winner, loser = claim("bar", age=10), claim("foo")
    # The loser already has an object (under its previous clientId): it is neither renamed nor deleted.
    result = resolve([winner, loser], {})
    plan = diff(
        [want(winner.key), want(loser.key, H2)], [have(loser.key, H1)], {"KeycloakClient"}, result.held
    )
    assert [c.key for c in plan.creates] == [winner.key]
    assert not (plan.deletes or plan.updates or plan.duplicates)


claims = st.lists(
    st.builds(
        Claim,
        st.builds(
            ObjectKey, st.just("KeycloakClient"), st.sampled_from(["a", "b", "c", "d"]), st.just("web")
        ),
        st.sampled_from([("r", "web"), ("r", "api"), ("s", "web")]),
        st.integers(0, 3).map(lambda s: T0 + timedelta(seconds=s)),
    ),
    max_size=8,
    unique_by=lambda c: c.key,
)
holder_maps = st.dictionaries(
    st.sampled_from([("r", "web"), ("r", "api"), ("s", "web")]),
    st.none() | st.builds(ObjectKey, st.just("KeycloakClient"), st.sampled_from(["a", "e"]), st.just("web")),
)


@given(claims, holder_maps, st.randoms(use_true_random=False))
def test_resolution_properties(
    cs: list[Claim], holders: Mapping[tuple[str, ...], ObjectKey | None], rnd: random.Random
) -> None:
    result = resolve(cs, holders)
    granted_names = [g.natural_key for g in result.granted]
    assert len(granted_names) == len(set(granted_names))  # at most one winner per name
    assert sorted([g.key for g in result.granted] + [c.key for c in result.conflicts]) == sorted(
        c.key for c in cs
    )  # every claim decided exactly once
    for g in result.granted:
        assert holders.get(g.natural_key, g.key) == g.key  # never taken from a holder
    shuffled = list(cs)
    rnd.shuffle(shuffled)
    assert resolve(shuffled, holders) == result
