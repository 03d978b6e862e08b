"""The planned replication round: scopes, authorization, representations, roles, fairness, status."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core.replication import ObjectKey, content_hash, marked
from keycloak_operator.core.replication.client import client_content, plan_clients
from keycloak_operator.core.replication.drift import drifted_fields
from keycloak_operator.core.replication.fairness import round_robin
from keycloak_operator.core.replication.in_realm import client_resource
from keycloak_operator.core.replication.plan import Create, Delete, Update
from keycloak_operator.core.replication.realm import (
    disable_body,
    plan_realms,
    realm_content,
    realm_write,
    releasable_without_server,
    release_body,
    remote_id,
)
from keycloak_operator.core.replication.resources import realm_target, server_url
from keycloak_operator.core.replication.roles import owner_of, plan_roles, role_writes
from keycloak_operator.core.replication.servers import ServerPolicy
from keycloak_operator.core.replication.status import render
from keycloak_operator.core.replication.sync import DRIFTED, Release, Resource, Revocation, Verdict, settle
from keycloak_operator.kernel import names
from keycloak_operator.models.client import KeycloakClientSpec
from keycloak_operator.models.realm import KeycloakRealmSpec

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CLIENT, REALM = names.CLIENT_KIND, names.REALM_KIND
HOME = ObjectKey(REALM, "home", "main")


def client(ns: str, name: str, client_id: str | None = None, *, age: int = 0, **flags: Any) -> Resource:
    spec = KeycloakClientSpec.model_validate({"realm": {"name": "main"}, "clientId": client_id or name})
    return Resource(
        ObjectKey(CLIENT, ns, name),
        client_id or name,
        client_content(spec),
        T0 + timedelta(seconds=age),
        parent=HOME,
        **flags,
    )


def in_keycloak(r: Resource, remote_id: str, *, content: dict[str, Any] | None = None) -> dict[str, Any]:
    """How Keycloak returns an object the operator wrote for `r` (optionally edited since)."""
    body = marked(r.content, r.key)
    return {**body, **(content or {}), "id": remote_id}


def unmarked(client_id: str, remote_id: str) -> dict[str, Any]:
    return {"id": remote_id, "clientId": client_id, "attributes": {}}


# --- scopes--------------------------------------------------------------------------------------------------


def test_empty_sides_plan_nothing() -> None:
    scope = plan_clients([], [])
    assert scope.plan.is_empty() and not scope.verdicts and not scope.releases


def test_in_sync_plans_nothing_and_is_ready() -> None:
    a = client("team", "web")
    scope = plan_clients([a], [in_keycloak(a, "u1")])
    assert scope.plan.is_empty()
    assert scope.verdicts[a.key] == Verdict("Ready", "InSync")
    assert scope.remote_ids == {a.key: "u1"}


def test_only_local_is_created_only_remote_is_deleted() -> None:
    new, gone = client("team", "new"), client("team", "gone")
    scope = plan_clients([new], [in_keycloak(gone, "u-gone")])
    assert [c.key for c in scope.plan.creates] == [new.key]
    assert [(d.key, d.remote_id) for d in scope.plan.deletes] == [(gone.key, "u-gone")]


def test_a_deleted_clients_removal_goes_before_every_upsert_of_the_round() -> None:
    gone, new = client("team", "gone", deleting=True), client("team", "new")
    edited = client("team", "edited")
    observed = [in_keycloak(gone, "u-gone"), in_keycloak(edited, "u-ed", content={"name": "by hand"})]
    removals, upserts = plan_clients([new, gone, edited], observed).phases()
    assert [(type(op), op.key) for op in removals] == [(Delete, gone.key)]
    assert [(type(op), op.key) for op in upserts] == [(Create, new.key), (Update, edited.key)]


def test_seed_003_same_kind_and_name_in_bar_and_foo_deleting_bar_never_touches_foo() -> None:
    bar, foo = client("bar", "web", "web-bar"), client("foo", "web", "web-foo")
    observed = [in_keycloak(bar, "u-bar"), in_keycloak(foo, "u-foo")]
    scope = plan_clients([foo], observed)  # bar's resource is gone
    assert [(d.key, d.remote_id) for d in scope.plan.deletes] == [(bar.key, "u-bar")]
    assert scope.plan.creates == [] and scope.plan.updates == [] and scope.plan.duplicates == []
    # and the round after (bar's object deleted) does nothing at all
    assert plan_clients([foo], [in_keycloak(foo, "u-foo")]).plan.is_empty()


def test_a_hand_edit_is_planned_as_an_update_naming_the_fields() -> None:
    a = client("team", "web")
    edited = in_keycloak(
        a, "u1", content={"redirectUris": ["https://evil/*"], "directAccessGrantsEnabled": True}
    )
    scope = plan_clients([a], [edited])
    assert [(u.key, u.remote_id, u.previous_hash) for u in scope.plan.updates] == [(a.key, "u1", DRIFTED)]
    assert scope.drift[a.key] == ["directAccessGrantsEnabled", "redirectUris"]


def test_a_changed_resource_is_an_update_of_the_same_object() -> None:
    old = client("team", "web")
    spec = KeycloakClientSpec.model_validate(
        {"realm": {"name": "main"}, "clientId": "web", "webOrigins": ["+"]}
    )
    new = Resource(old.key, "web", client_content(spec), T0, parent=HOME)
    scope = plan_clients([new], [in_keycloak(old, "u1")])
    assert [(u.remote_id, u.content_hash) for u in scope.plan.updates] == [("u1", content_hash(new.content))]
    assert scope.drift == {}  # a change of the spec, reported as Updated, not as a repair


def test_second_claim_on_a_client_id_conflicts_and_nothing_is_written_for_it() -> None:
    first, second = client("a", "web", "shared", age=0), client("b", "web", "shared", age=5)
    scope = plan_clients([first, second], [])
    assert [c.key for c in scope.plan.creates] == [first.key]
    assert scope.verdicts[second.key].phase == "Conflict"
    assert "a KeycloakClient of another namespace" in scope.verdicts[second.key].message
    assert (
        "a/web" not in scope.verdicts[second.key].message
    )  # another namespace's object is named by kind only (issue 26, finding 6)
    # Within one namespace the holder is named in full.
    third = client("a", "app", "shared", age=9)
    assert str(first.key) in plan_clients([first, third], []).verdicts[third.key].message


def test_the_holder_keeps_a_client_id_even_when_younger() -> None:
    holder, older = client("b", "web", "shared", age=5), client("a", "web", "shared", age=0)
    scope = plan_clients([older, holder], [in_keycloak(holder, "u1")])
    assert scope.plan.is_empty()
    assert scope.verdicts[older.key].phase == "Conflict" and scope.verdicts[holder.key].phase == "Ready"


def test_a_client_id_held_by_an_unmarked_object_is_never_taken() -> None:
    a = client("team", "web", "handmade")
    scope = plan_clients([a], [unmarked("handmade", "u-hand")])
    assert scope.plan.is_empty()
    assert "did not create" in scope.verdicts[a.key].message


def test_forbidden_is_held_its_object_is_neither_written_nor_deleted() -> None:
    problem = Verdict("Forbidden", "NamespaceNotAllowed", "no")
    a = client("outsider", "web", problem=problem)
    scope = plan_clients([a], [in_keycloak(client("outsider", "web"), "u1")])
    assert scope.plan.is_empty() and scope.verdicts[a.key] == problem


def test_deleting_deletes_then_frees_the_finalizer() -> None:
    a = client("team", "web", deleting=True)
    scope = plan_clients([a], [in_keycloak(client("team", "web"), "u1")])
    assert [d.remote_id for d in scope.plan.deletes] == ["u1"] and scope.finalizable == []
    assert settle(scope, {}).finalizable == [a.key]


def test_a_failed_delete_keeps_the_finalizer_and_reports_the_error() -> None:
    a = client("team", "web", deleting=True)
    scope = settle(plan_clients([a], [in_keycloak(client("team", "web"), "u1")]), {a.key: "503"})
    assert scope.finalizable == [] and scope.verdicts[a.key].phase == "Error"


def test_deleting_with_nothing_in_keycloak_is_finalizable_at_once() -> None:
    a = client("team", "web", deleting=True)
    assert plan_clients([a], []).finalizable == [a.key]


def test_preserve_releases_instead_of_deleting() -> None:
    a = client("team", "web", deleting=True, preserve=True)
    scope = plan_clients([a], [in_keycloak(client("team", "web"), "u1")])
    assert scope.plan.is_empty() and scope.releases == [Release(a.key, "u1")]
    assert settle(scope, {}).finalizable == [a.key]


def test_markers_of_unwatched_namespaces_are_not_diffed_but_still_hold_their_names() -> None:
    theirs = client("other-team", "web", "shared")
    mine = client("team", "web", "shared")
    scope = plan_clients([mine], [in_keycloak(theirs, "u1")], namespaces={"team"})
    assert scope.plan.is_empty()  # not deleted although no resource we see declares it
    assert scope.verdicts[mine.key].phase == "Conflict"


def test_unknown_kinds_are_left_alone() -> None:
    stranger = Resource(ObjectKey("KeycloakGroup", "team", "g"), "g", {"clientId": "g"}, T0)
    assert plan_clients([], [in_keycloak(stranger, "u1")]).plan.is_empty()


def realm(ns: str, name: str, *, deleting: bool = False) -> Resource:
    spec = KeycloakRealmSpec.model_validate(
        {"server": {"external": {"url": "http://k", "adminSecret": {"name": "s"}}}}
    )
    return Resource(
        ObjectKey(REALM, ns, name), f"{ns}-{name}", realm_content(spec, f"{ns}-{name}"), T0, deleting=deleting
    )


def test_a_realm_with_clients_declared_is_not_deleted_and_says_which() -> None:
    r = realm("home", "main", deleting=True)
    observed = [{**marked(r.content, r.key)}]
    scope = plan_realms([r], [client("team", "web")], observed)
    assert scope.plan.is_empty() and scope.finalizable == []
    assert scope.verdicts[r.key].phase == "Deleting" and "team/web" in scope.verdicts[r.key].message


def test_a_realm_whose_clients_are_all_deleting_goes() -> None:
    r = realm("home", "main", deleting=True)
    scope = plan_realms([r], [client("team", "web", deleting=True)], [marked(r.content, r.key)])
    assert [d.remote_id for d in scope.plan.deletes] == ["home-main"]


def named_realm(ns: str, name: str, realm_name: str, *, age: int = 0, **fields: Any) -> Resource:
    """A realm resource `ns/name` for the Keycloak realm `realm_name` (flags: Resource's; other fields: the
    spec's)."""
    flags = {k: fields.pop(k) for k in list(fields) if k in Resource.__dataclass_fields__}
    spec = KeycloakRealmSpec.model_validate(
        {"server": {"external": {"url": "http://k", "adminSecret": {"name": "s"}}}, "realmName": realm_name}
        | fields
    )
    key = ObjectKey(REALM, ns, name)
    return Resource(key, realm_name, realm_content(spec, name), T0 + timedelta(seconds=age), **flags)


def realm_in_keycloak(r: Resource, **edits: Any) -> dict[str, Any]:
    """How Keycloak lists the realm the operator wrote for `r` (its name is its id), edited by hand."""
    return {**realm_write(marked(r.content, r.key)), "id": r.content["realm"], **edits}


def test_a_realm_name_claimed_from_two_namespaces_goes_to_the_older_the_later_is_a_conflict() -> None:
    older = named_realm("team-a", "sso", "corp", age=0)
    later = named_realm("team-b", "sso", "corp", age=5)
    scope = plan_realms([later, older], [], [])
    assert [c.key for c in scope.plan.creates] == [older.key]
    message = scope.verdicts[later.key].message
    assert scope.verdicts[later.key].phase == "Conflict" and "a KeycloakRealm of another namespace" in message
    assert "team-a" not in message  # another namespace's object is named by kind only (issue 26, finding 6)
    # Once written, the holder keeps the name and the later claim writes nothing, not even an update.
    held = plan_realms([later, older], [], [realm_in_keycloak(older)])
    assert held.plan.is_empty() and held.verdicts[later.key].phase == "Conflict"
    # An unmarked realm of that name (made by hand) is nobody's to take.
    hand = plan_realms([older], [], [{"realm": "corp", "id": "corp", "attributes": {"x": "y"}}])
    assert hand.plan.is_empty() and "did not create" in hand.verdicts[older.key].message


def test_a_forbidden_realm_is_held_then_disabled_then_deleted() -> None:
    grace = timedelta(hours=1)
    now = T0 + timedelta(days=1)
    live = named_realm("team-x", "sso", "corp")
    listed = realm_in_keycloak(live, attributes={**marked(live.content, live.key)["attributes"], "hand": "1"})

    def forbidden(age: timedelta, observed: dict[str, Any]) -> Any:
        r = named_realm(
            "team-x",
            "sso",
            "corp",
            problem=Verdict("Forbidden", "NamespaceNotAllowed", "no"),
            forbidden_since=now - age,
        )
        return plan_realms([r], [], [observed], revocation=Revocation(now, grace))

    early = forbidden(grace / 2, listed)
    assert early.plan.is_empty() and not early.disables and early.verdicts[live.key].phase == "Forbidden"
    due = forbidden(grace, listed)
    assert due.plan.is_empty() and [(d.key, d.remote_id) for d in due.disables] == [(live.key, "corp")]
    # The disable sends the realm's attributes back as listed (a realm PUT drops those it is not sent).
    assert disable_body(due.disables[0].current) == {"enabled": False, "attributes": listed["attributes"]}
    assert not forbidden(grace, {**listed, "enabled": False}).disables  # already off: nothing written
    late = forbidden(2 * grace, listed)
    assert [(d.key, d.remote_id) for d in late.plan.deletes] == [(live.key, "corp")]
    assert not late.disables


def test_preserve_on_delete_releases_the_realm_and_keeps_what_is_not_ours() -> None:
    going = named_realm("home", "main", "corp", deleting=True, preserve=True)
    listed = realm_in_keycloak(going)
    listed["attributes"] = {**listed["attributes"], "frontendUrl": "https://sso"}
    scope = plan_realms([going], [], [listed])
    assert scope.plan.is_empty() and scope.releases == [Release(going.key, "corp")]
    assert settle(scope, {}).finalizable == [going.key]
    assert release_body(listed) == {"attributes": {"frontendUrl": "https://sso"}}
    # Released (unmarked now), the next round finds nothing of its own: finalizable, nothing written.
    after = plan_realms([going], [], [{**listed, "attributes": release_body(listed)["attributes"]}])
    assert after.plan.is_empty() and not after.releases and after.finalizable == [going.key]


realm_specs = st.fixed_dictionaries(
    {"displayName": st.sampled_from(["", "Corp"]), "enabled": st.booleans()},
    optional={"roles": st.lists(st.sampled_from([{"name": "a"}, {"name": "b", "description": "B"}]),
                                unique_by=lambda r: r["name"])},
)  # fmt: skip


@given(
    declared=st.dictionaries(
        st.tuples(st.sampled_from(["team-a", "team-b"]), st.sampled_from(["sso", "web"])),
        st.tuples(realm_specs, st.booleans()),  # (spec, deleting)
        max_size=4,
    ),
    existing=st.dictionaries(
        st.tuples(st.sampled_from(["team-a", "team-b"]), st.sampled_from(["sso", "web"])),
        st.tuples(realm_specs, st.sampled_from([{}, {"displayName": "by hand"}, {"enabled": False}])),
        max_size=4,
    ),
    hand_made=st.sets(st.sampled_from(["team-a-sso", "team-b-web", "other"]), max_size=2),
)
def test_property_realms_converge_and_the_next_plan_is_empty(
    declared: dict[tuple[str, str], tuple[dict[str, Any], bool]],
    existing: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]],
    hand_made: set[str],
) -> None:
    """Whatever realms Keycloak holds (ours as written for an earlier spec, edited by hand, or made by hand):
    applying the plan leaves exactly the declared realms as declared, never touches one made by hand, and
    the next plan is empty."""
    resources = [
        named_realm(ns, n, f"{ns}-{n}", **spec, deleting=deleting)
        for (ns, n), (spec, deleting) in sorted(declared.items())
    ]
    store: dict[str, dict[str, Any]] = {
        f"{ns}-{n}": realm_in_keycloak(named_realm(ns, n, f"{ns}-{n}", **spec), **edit)
        for (ns, n), (spec, edit) in existing.items()
        if f"{ns}-{n}" not in hand_made
    }
    store |= {name: {"realm": name, "id": name, "attributes": {"hand": "made"}} for name in hand_made}
    by_key = {r.key: r for r in resources}
    scope = settle(plan_realms(resources, [], list(store.values())), {})
    for phase in scope.phases():
        for op in phase:
            assert isinstance(op, Create) or op.remote_id not in hand_made  # never touched
            if isinstance(op, Delete):
                del store[op.remote_id]
            else:
                assert isinstance(op, Create | Update)
                store[remote_id(op)] = realm_in_keycloak(by_key[op.key])
    live = [r for r in resources if not r.deleting]
    for r in live:
        if scope.verdicts[r.key].phase == "Ready":
            assert store[r.natural_key] == realm_in_keycloak(r)
    assert all(
        store[name] == {"realm": name, "id": name, "attributes": {"hand": "made"}} for name in hand_made
    )
    assert {r.key for r in resources if r.deleting} <= set(scope.finalizable)
    again = plan_realms(live, [], list(store.values()))
    assert again.plan.is_empty() and not again.releases and not again.disables


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["bar", "foo", "baz"]), st.sampled_from(["web", "api", "db"]), st.booleans()
        ),
        unique_by=lambda t: (t[0], t[1]),
        max_size=9,
    ),
    st.sets(st.tuples(st.sampled_from(["bar", "foo", "baz"]), st.sampled_from(["web", "api", "db"]))),
)
def test_property_a_round_converges_and_the_next_plans_nothing(
    declared: list[tuple[str, str, bool]], existing: set[tuple[str, str]]
) -> None:
    """Same names across namespaces, clientIds unique per (namespace, name): after applying the plan to a
    model of Keycloak, Keycloak holds exactly the declared objects and a second round writes nothing."""
    resources = [client(ns, n, f"{ns}.{n}", deleting=d) for ns, n, d in declared]
    store = {f"id-{ns}-{n}": in_keycloak(client(ns, n, f"{ns}.{n}"), f"id-{ns}-{n}") for ns, n in existing}
    scope = settle(plan_clients(resources, store.values()), {})
    for d in scope.plan.deletes:
        del store[d.remote_id]
    for c in scope.plan.creates:
        store[f"id-{c.key.namespace}-{c.key.name}"] = {
            **marked(c.content, c.key),
            "id": f"id-{c.key.namespace}-{c.key.name}",
        }
    live = {r.key for r in resources if not r.deleting}
    assert {
        (o["attributes"]["kcop.dev.namespace"], o["attributes"]["kcop.dev.name"]) for o in store.values()
    } == {(k.namespace, k.name) for k in live}
    assert {r.key for r in resources if r.deleting} <= set(scope.finalizable)
    assert plan_clients([r for r in resources if not r.deleting], store.values()).plan.is_empty()


# --- authorization and parsing-------------------------------------------------------------------------------


def k8s(kind: str, ns: str, name: str, spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"namespace": ns, "name": name, "uid": "u", **meta}, "spec": spec}


KC = {
    ("kc-ns", "kc"): {
        "spec": {
            "image": "i:1",
            "database": {"external": {"host": "h", "credentialsSecret": {"name": "s"}}},
            "realmNamespaces": ["team"],
        }
    }
}


@pytest.mark.parametrize(("ns", "allowed"), [("kc-ns", True), ("team", True), ("other", False)])
def test_a_realm_on_our_keycloak_needs_its_namespace_allowed(ns: str, allowed: bool) -> None:
    obj = k8s(REALM, ns, "r", {"server": {"keycloak": {"name": "kc", "namespace": "kc-ns"}}})
    target = realm_target(obj, KC)
    url = "http://kc-service.kc-ns.svc.cluster.local.:8080"  # fully qualified: no search-list lookups
    if allowed:
        assert target.resource.problem is None
    else:
        assert target.resource.problem is not None and target.resource.problem.phase == "Forbidden"
    # A forbidden realm still belongs to its server's round (its object there is revoked), acted on with
    # the server's own admin, never with a login of the forbidden namespace.
    assert target.server is not None and target.server.url == url
    assert target.credentials is not None and target.credentials.secret == "kc-initial-admin"
    assert target.credentials.server_owned and target.credentials.namespace == "kc-ns"
    assert server_url(obj, ServerPolicy()) == url


def test_a_realm_on_an_unknown_keycloak_waits() -> None:
    obj = k8s(REALM, "team", "r", {"server": {"keycloak": {"name": "nope"}}})
    assert realm_target(obj, KC).resource.problem == Verdict(
        "Pending", "KeycloakNotFound", "Keycloak team/nope not found"
    )


def test_a_deleted_realm_whose_keycloak_is_gone_or_never_allowed_releases_its_finalizer() -> None:
    deleting = {"deletionTimestamp": "2026-11-22T00:00:00Z"}
    gone = k8s(REALM, "team", "r", {"server": {"keycloak": {"name": "nope"}}}, **deleting)
    forbidden = k8s(
        REALM, "other", "r", {"server": {"keycloak": {"name": "kc", "namespace": "kc-ns"}}}, **deleting
    )
    reachable = k8s(
        REALM, "team", "r", {"server": {"keycloak": {"name": "kc", "namespace": "kc-ns"}}}, **deleting
    )
    assert releasable_without_server(realm_target(gone, KC).resource)
    assert releasable_without_server(realm_target(forbidden, KC).resource)
    assert not releasable_without_server(realm_target(reachable, KC).resource)  # its server must delete it
    alive = k8s(REALM, "team", "r", {"server": {"keycloak": {"name": "nope"}}})
    assert not releasable_without_server(realm_target(alive, KC).resource)


def test_an_external_realm_uses_its_own_secret_and_a_normalised_url() -> None:
    obj = k8s(
        REALM, "team", "r", {"server": {"external": {"url": "https://sso/", "adminSecret": {"name": "adm"}}}}
    )
    target = realm_target(obj, {})
    assert target.server is not None and target.server.url == "https://sso"
    assert target.credentials is not None and (target.credentials.namespace, target.credentials.secret) == (
        "team",
        "adm",
    )


@pytest.mark.parametrize(("ns", "phase"), [("home", None), ("team", None), ("other", "Forbidden")])
def test_a_client_needs_its_namespace_allowed_by_the_realm(ns: str, phase: str | None) -> None:
    realm_obj = k8s(
        REALM,
        "home",
        "main",
        {
            "server": {"external": {"url": "https://sso", "adminSecret": {"name": "a"}}},
            "clientNamespaces": ["team"],
        },
    )
    realms = {HOME: realm_target(realm_obj, {})}
    c = client_resource(
        k8s(CLIENT, ns, "web", {"realm": {"name": "main", "namespace": "home"}, "clientId": "w"}), realms
    )
    assert (c.problem.phase if c.problem else None) == phase and c.parent == HOME


def test_a_client_of_a_missing_realm_waits_and_an_invalid_spec_says_where() -> None:
    c = client_resource(k8s(CLIENT, "team", "web", {"realm": {"name": "nope"}, "clientId": "w"}), {})
    assert c.problem is not None and c.problem.reason == "RealmNotFound"
    bad = client_resource(k8s(CLIENT, "team", "web", {"realm": {"name": "x"}}), {})
    assert (
        bad.problem is not None and bad.problem.reason == "InvalidSpec" and "clientId" in bad.problem.message
    )


def test_preserve_annotation_and_deletion_are_read() -> None:
    obj = k8s(
        CLIENT,
        "t",
        "w",
        {"realm": {"name": "x"}, "clientId": "w"},
        annotations={names.ANNOTATION_PRESERVE: "True"},
        deletionTimestamp="2026-01-01T00:00:00Z",
    )
    c = client_resource(obj, {})
    assert c.preserve and c.deleting


# --- representations-----------------------------------------------------------------------------------------


def test_client_lists_are_sets_so_reordering_is_no_change() -> None:
    a = KeycloakClientSpec.model_validate(
        {"realm": {"name": "r"}, "clientId": "c", "redirectUris": ["b", "a", "a"]}
    )
    b = KeycloakClientSpec.model_validate(
        {"realm": {"name": "r"}, "clientId": "c", "redirectUris": ["a", "b"]}
    )
    assert content_hash(client_content(a)) == content_hash(client_content(b))


def test_public_clients_never_ask_for_a_service_account() -> None:
    spec = KeycloakClientSpec.model_validate(
        {"realm": {"name": "r"}, "clientId": "c", "publicClient": True, "serviceAccountsEnabled": True}
    )
    assert client_content(spec)["serviceAccountsEnabled"] is False


def test_drift_ignores_order_missing_empty_strings_and_the_marker() -> None:
    want = {"clientId": "c", "name": "", "redirectUris": ["a", "b"], "attributes": {"x": "y"}}
    assert drifted_fields(want, {"clientId": "c", "redirectUris": ["b", "a"]}) == []
    assert drifted_fields(want, {"clientId": "d", "redirectUris": ["a"]}) == ["clientId", "redirectUris"]


def test_realm_writes_leave_roles_to_their_own_endpoints() -> None:
    spec = KeycloakRealmSpec.model_validate(
        {"server": {"external": {"url": "http://k", "adminSecret": {"name": "s"}}}, "roles": [{"name": "r"}]}
    )
    content = realm_content(spec, "res")
    assert content["realm"] == "res" and content["roles"] == {"realm": [{"name": "r", "description": ""}]}
    assert "roles" not in realm_write(content)


# --- roles---------------------------------------------------------------------------------------------------

OWNER = "home/main"


def role(name: str, description: str = "", owner: str | None = OWNER) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "attributes": {names.ROLE_OWNER_ATTRIBUTE: [owner]} if owner else {},
    }


def test_roles_are_created_updated_and_only_our_own_deleted() -> None:
    observed = [
        role("keep", "old"),
        role("stale"),
        role("offline_access", owner=None),
        role("theirs", owner="x/y"),
    ]
    plan = plan_roles({"keep": "new", "fresh": "f", "offline_access": ""}, observed, OWNER)
    assert plan.creates == [("fresh", "f")] and plan.updates == [("keep", "new")]
    assert plan.deletes == ["stale"] and plan.conflicts == ["offline_access"]


def test_roles_in_sync_plan_nothing() -> None:
    assert plan_roles({"a": "x"}, [role("a", "x")], OWNER).is_empty()


@given(
    declared=st.dictionaries(st.sampled_from("abcd"), st.sampled_from(["", "x"])),
    held=st.dictionaries(
        st.sampled_from("abcd"), st.tuples(st.sampled_from(["", "x"]), st.sampled_from([OWNER, "x/y", None]))
    ),
)
def test_property_realm_roles_converge_and_only_our_own_are_ever_written(
    declared: dict[str, str], held: dict[str, tuple[str, str | None]]
) -> None:
    store = {n: role(n, d, owner) for n, (d, owner) in held.items()}
    first = plan_roles(declared, store.values(), OWNER)
    for w in role_writes(first, OWNER):
        assert w.name not in store or owner_of(store[w.name]) == OWNER  # another's or Keycloak's: untouched
        if w.operation == "delete":
            del store[w.name]
        else:
            store[w.name] = dict(w.body or {})
    again = plan_roles(declared, store.values(), OWNER)
    assert again.is_empty() and again.conflicts == first.conflicts
    assert {n for n, r in store.items() if owner_of(r) == OWNER} == set(declared) - set(first.conflicts)


# --- fairness and status-------------------------------------------------------------------------------------


def test_round_robin_takes_turns_and_keeps_each_namespace_in_order() -> None:
    items = [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("c", 1), ("c", 2)]
    assert round_robin(items, lambda i: i[0]) == [("a", 1), ("b", 1), ("c", 1), ("a", 2), ("c", 2), ("a", 3)]


@given(st.lists(st.tuples(st.sampled_from("abcd"), st.integers())))
def test_round_robin_is_a_permutation(items: list[tuple[str, int]]) -> None:
    out = round_robin(items, lambda i: i[0])
    assert sorted(out) == sorted(items)
    for ns in "abcd":
        assert [i for i in out if i[0] == ns] == [i for i in items if i[0] == ns]


def test_status_is_stable_when_nothing_changed() -> None:
    first = render(
        None, Verdict("Ready", "InSync"), generation=2, keycloak_id="u1", content_hash="h", now="t1"
    )
    again = render(
        first, Verdict("Ready", "InSync"), generation=2, keycloak_id="u1", content_hash="h", now="t2"
    )
    assert first == again and first["phase"] == "Ready" and first["conditions"][0]["status"] == "True"


def test_a_conflict_keeps_the_last_written_hash_and_flips_the_condition() -> None:
    ready = render(
        None, Verdict("Ready", "InSync"), generation=1, keycloak_id="u1", content_hash="h", now="t1"
    )
    conflict = render(
        ready,
        Verdict("Conflict", "Conflict", "held"),
        generation=2,
        keycloak_id="",
        content_hash="",
        now="t2",
    )
    assert conflict["contentHash"] == "h" and conflict["keycloakId"] == "u1"
    assert (
        conflict["conditions"][0]["status"] == "False"
        and conflict["conditions"][0]["lastTransitionTime"] == "t2"
    )
