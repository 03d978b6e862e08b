"""The identity provider kind's pure planner (core/replication/identity_provider.py): create, update, drift
repair, delete order, conflicts, forbidden namespaces, what is left alone, the client secret's way in (and
never out), mappers, and a property: applying a plan to what Keycloak holds converges, so a second plan over
the result is empty."""

from __future__ import annotations

import base64
import copy
import itertools
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core.replication import (
    ObjectKey,
    content_hash,
    idp_mappers,
    idp_secret,
    marked,
    read_marker,
)
from keycloak_operator.core.replication import identity_provider as idp
from keycloak_operator.core.replication.plan import Create, Delete, Update
from keycloak_operator.core.replication.resources import RealmTarget
from keycloak_operator.core.replication.sync import Disable, Release, Resource, Revocation, ScopePlan
from keycloak_operator.kernel import names
from keycloak_operator.models.identity_provider import KeycloakIdentityProviderSpec

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REALM = ObjectKey(names.REALM_KIND, "team-a", "main")
SECRET_REF = {"name": "upstream", "key": "client-secret"}
OIDC = {
    "authorizationUrl": "https://up.example.com/auth",
    "tokenUrl": "https://up.example.com/token",
    "clientId": "kc",
    "clientSecret": SECRET_REF,
}
MAPPER = {
    "name": "email",
    "identityProviderMapper": "oidc-user-attribute-idp-mapper",
    "config": {"claim": "email", "user.attribute": "email"},
}
VALUE = "s3cret-Value"
Obj = dict[str, Any]


def k8s(ns: str, resource_name: str, created: int = 0, **spec: Any) -> Obj:
    """A KeycloakIdentityProvider `ns/name` in realm team-a/main; its alias is `name` unless given."""
    body = {
        "realm": {"name": "main", "namespace": "team-a"},
        "alias": resource_name,
        "providerId": "oidc",
        "oidc": {**OIDC, **spec.pop("oidc", {})},
        **spec,
    }
    stamp = (T0 + timedelta(seconds=created)).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = {"namespace": ns, "name": resource_name, "creationTimestamp": stamp}
    return {"kind": idp.KIND, "metadata": meta, "spec": body}


def targets(
    provider_namespaces: frozenset[str] = frozenset(), client_namespaces: frozenset[str] = frozenset()
) -> dict[ObjectKey, RealmTarget]:
    """Realm team-a/main, allowing identity providers (and clients) from the namespaces given."""
    realm = Resource(REALM, "main", {}, T0)
    return {REALM: RealmTarget(realm, None, None, client_namespaces, provider_namespaces=provider_namespaces)}


def secret(value: str = VALUE, version: str = "1") -> Obj:
    data = {"client-secret": base64.b64encode(value.encode()).decode()}
    return {"metadata": {"uid": "u1", "resourceVersion": version}, "data": data}


def resource(ns: str = "team-a", name: str = "upstream", created: int = 0, **spec: Any) -> Resource:
    """The provider with its Secret read (version 1), as the writer plans it."""
    obj = k8s(ns, name, created, **spec)
    r = idp.idp_resource(obj, targets(frozenset({"team-b"})))
    ref = idp_secret.client_secret_ref(obj)
    return r if ref is None or r.problem else idp_secret.with_client_secret(r, ref, secret())[0]


def stored(r: Resource, **edits: Any) -> Obj:
    """The provider as Keycloak returns it after the operator wrote `r` (secret masked), `edits` by hand."""
    body = idp.upsert_body(Create(r.key, r.content, content_hash(r.content)), VALUE)
    if "clientSecret" in body["config"]:
        body["config"]["clientSecret"] = idp.MASKED
    config = {**body["config"], **edits.pop("config", {})}
    return {**body, "internalId": f"i-{r.natural_key}", "config": config, **edits}


def by_hand(alias: str) -> Obj:
    return {"alias": alias, "providerId": "oidc", "enabled": True, "internalId": f"h-{alias}", "config": {}}


def plan(rs: list[Resource], observed: list[Obj], **kw: Any) -> ScopePlan:
    return idp.plan_identity_providers(rs, observed, **kw)


# --- the model ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        {"alias": "has space"},
        {"alias": "a/b"},
        {"alias": "x" * 129},
        {"providerId": "saml"},
        {"oidc": {**OIDC, "tokenUrl": "http://up.example.com/token"}},  # http off loopback
        {"oidc": {**OIDC, "tokenUrl": "https://user:pw@up.example.com/token"}},
        {"oidc": {**OIDC, "tokenUrl": "https://up.example.com/token?x=1"}},
        {"oidc": {**OIDC, "clientSecret": None}},  # a secret is required...
        {"oidc": {**OIDC, "clientAuthMethod": "private_key_jwt"}},  # ...and refused with private_key_jwt
        {"oidc": {**OIDC, "syncMode": "SOMETIMES"}},
        {"oidc": {**OIDC, "defaultScopes": ["two words"]}},
        {"oidc": {**OIDC, "clientSecret": {"name": "../x", "key": "k"}}},
        {"displayName": "line\nbreak"},
        {"guiOrder": -1},
        {"mappers": [MAPPER, MAPPER]},
        {"mappers": [{**MAPPER, "identityProviderMapper": "script-mapper"}]},
        {"mappers": [{**MAPPER, "config": {"a/b": "x"}}]},
    ],
)
def test_hostile_or_inconsistent_specs_are_refused(spec: Obj) -> None:
    base = {"realm": {"name": "main"}, "alias": "ok", "providerId": "oidc", "oidc": OIDC}
    with pytest.raises(ValidationError):
        KeycloakIdentityProviderSpec.model_validate({**base, **spec})


def test_http_is_accepted_only_on_loopback() -> None:
    for url in ("http://localhost:8080/t", "http://127.0.0.1/t", "http://[::1]:9/t", "https://a.b/t"):
        oidc = {**OIDC, "tokenUrl": url}
        KeycloakIdentityProviderSpec.model_validate(
            {"realm": {"name": "main"}, "alias": "ok", "providerId": "oidc", "oidc": oidc}
        )


def test_the_content_sends_every_config_key_and_the_marker_goes_in_config() -> None:
    r = resource(guiOrder=3, oidc={"defaultScopes": ["openid", "email"], "pkceEnabled": True})
    config = r.content[idp.CONFIG]
    assert config["defaultScope"] == "openid email" and config["guiOrder"] == "3"
    assert (config["pkceEnabled"], config["pkceMethod"], config["useJwksUrl"]) == ("true", "S256", "false")
    assert config["clientSecret"] == idp.MASKED and config["issuer"] == ""  # absent: cleared
    assert idp.MAPPERS not in r.content  # absent: not managed
    body = idp.upsert_body(Create(r.key, r.content, content_hash(r.content)), VALUE)
    assert idp.CONFIG not in body and idp.SECRET_SOURCE not in body
    marker = read_marker(body["config"])
    assert marker is not None and marker.key == ObjectKey(idp.KIND, "team-a", "upstream")
    assert body["config"]["clientSecret"] == VALUE  # in the body only


# --- the client secret ------------------------------------------------------------------------------------


def test_a_missing_secret_or_key_leaves_the_provider_pending_naming_the_field_and_nothing_is_planned() -> (
    None
):
    obj = k8s("team-a", "upstream")
    r = idp.idp_resource(obj, targets())
    ref = idp_secret.client_secret_ref(obj)
    assert ref == ("upstream", "client-secret")
    for found, reason in ((None, "SecretNotFound"), ({"data": {}}, "SecretKeyNotFound")):
        waiting, value = idp_secret.with_client_secret(r, ref, found)
        assert value is None and waiting.problem is not None
        assert (waiting.problem.phase, waiting.problem.reason) == ("Pending", reason)
        assert "spec.oidc.clientSecret: Secret team-a/upstream" in waiting.problem.message
        scope = plan([waiting], [])
        assert scope.plan.is_empty() and scope.verdicts[r.key] == waiting.problem
    garbled, _ = idp_secret.with_client_secret(r, ref, {"data": {"client-secret": "%%%"}})
    assert garbled.problem is not None and garbled.problem.reason == "SecretInvalid"


def test_the_secret_value_is_never_in_the_content_the_hash_or_the_plan_and_a_changed_secret_updates() -> None:
    r = resource()
    assert VALUE not in json.dumps(r.content) and r.content[idp.SECRET_SOURCE] == "u1/1"
    scope = plan([r], [])
    assert VALUE not in repr(scope) and VALUE not in content_hash(r.content)
    # A new version of the Secret changes the hash: the provider is updated, the new value sent.
    ref = ("upstream", "client-secret")
    bare = idp.idp_resource(k8s("team-a", "upstream"), targets())
    changed, value = idp_secret.with_client_secret(bare, ref, secret("n3w", version="2"))
    update = plan([changed], [stored(r)])
    assert [u.remote_id for u in update.plan.updates] == ["upstream"] and update.drift == {}
    body = idp.upsert_body(update.plan.updates[0], value, stored(r))
    assert body["config"]["clientSecret"] == "n3w" and body["internalId"] == "i-upstream"
    assert VALUE not in repr(update) and "n3w" not in repr(update)
    with pytest.raises(ValueError, match="client secret"):
        idp.upsert_body(Create(r.key, r.content, content_hash(r.content)), None)


def test_the_masked_secret_is_no_drift_and_a_secret_removed_by_hand_is() -> None:
    r = resource()
    assert plan([r], [stored(r)]).plan.is_empty()
    removed = stored(r, config={"clientSecret": ""})
    scope = plan([r], [removed])
    assert scope.drift[r.key] == ["attributes.clientSecret"]


# --- create, update, drift ----------------------------------------------------------------------------------


def test_a_new_provider_is_created_and_an_edited_spec_updates_the_same_object() -> None:
    r = resource()
    first = plan([r], [by_hand("other")])
    assert [c.key for c in first.plan.creates] == [r.key] and not first.plan.deletes
    changed = resource(displayName="Upstream SSO")
    second = plan([changed], [stored(r)])
    assert [(u.key, u.remote_id) for u in second.plan.updates] == [(r.key, "upstream")]
    assert second.drift == {}  # a spec change, not a hand edit


def test_a_quiet_plan_is_empty_whatever_keycloak_adds_and_a_hand_edit_is_repaired_naming_the_fields() -> None:
    r = resource(trustEmail=True)
    # Keycloak adds config keys and top-level fields of its own, and may leave out false flags.
    noisy = stored(r, config={"hideOnLoginPage": "", "acceptsPromptNoneForwardFromClient": "false"})
    noisy.update(linkOnly=False, addReadTokenRoleOnCreate=False, updateProfileFirstLoginMode="on")
    del noisy["storeToken"]
    assert plan([r], [noisy]).plan.is_empty()
    edited = stored(r, displayName="hijacked", trustEmail=False, config={"clientId": "other"})
    scope = plan([r], [edited])
    assert [u.remote_id for u in scope.plan.updates] == ["upstream"]
    assert scope.drift[r.key] == ["attributes.clientId", "displayName", "trustEmail"]


def test_a_changed_alias_renames_the_object() -> None:
    r = resource()
    renamed = resource(alias="upstream-2")
    scope = plan([renamed], [stored(r)])
    [update] = scope.plan.updates
    assert update.remote_id == "upstream" and idp.upsert_body(update, VALUE)["alias"] == "upstream-2"


def test_mappers_are_planned_by_name_and_a_hand_made_one_is_a_conflict() -> None:
    r = resource(mappers=[MAPPER])
    created = idp_mappers.plan_mappers(r.content, [])
    assert [(w.operation, w.name) for w in created.writes] == [("create", "email")]
    body = created.writes[0].body
    assert body is not None and body["identityProviderAlias"] == "upstream"
    seen = [{**body, "id": "m1", "config": {**body["config"], "syncMode": "INHERIT"}}]
    assert idp_mappers.plan_mappers(r.content, seen).writes == []  # keys Keycloak adds are no drift
    seen[0]["config"]["claim"] = "hijacked"
    again = idp_mappers.plan_mappers(r.content, seen)
    assert [(w.operation, w.name, w.remote_id) for w in again.ordered()] == [("update", "email", "m1")]
    assert again.changed() == ["mappers/email"]
    hand = [{"id": "h", "name": "email", "identityProviderMapper": "hardcoded-attribute-idp-mapper"}]
    held = idp_mappers.plan_mappers(r.content, hand)
    assert held.writes == [] and held.conflicts == ["mapper email"]
    gone = idp_mappers.plan_mappers(resource(mappers=[]).content, seen)
    assert [(w.operation, w.name) for w in gone.writes] == [("delete", "email")]
    assert idp_mappers.plan_mappers(resource().content, seen).writes == []  # absent: not managed


# --- delete order, ownership, forbidden ---------------------------------------------------------------------


def test_removals_go_before_upserts() -> None:
    old, new = resource("team-a", "old"), resource("team-a", "new")
    deleting = Resource(old.key, old.natural_key, old.content, T0, deleting=True, parent=REALM)
    scope = plan([new, deleting], [stored(old)])
    removals, upserts = scope.phases()
    assert removals == [Delete(old.key, "old")]
    assert [(type(op), op.key) for op in upserts] == [(Create, new.key)]


def test_the_same_alias_from_two_namespaces_goes_to_the_older_and_the_later_is_a_conflict() -> None:
    a, b = resource("team-a", "upstream", created=0), resource("team-b", "upstream", created=5)
    scope = plan([b, a], [])
    assert [c.key for c in scope.plan.creates] == [a.key]
    message = scope.verdicts[b.key].message
    assert scope.verdicts[b.key].phase == "Conflict" and "of another namespace" in message
    assert "team-a" not in message  # another namespace's object is named by kind only (issue 26, finding 6)
    held = plan([a, resource("team-b", "upstream", created=-5)], [stored(a)])
    assert held.plan.is_empty()
    # Deleting the later claim touches nothing of the holder's.
    b_going = Resource(b.key, "upstream", b.content, T0, deleting=True, parent=REALM)
    assert plan([a, b_going], [stored(a)]).plan.is_empty()


def test_a_hand_made_provider_is_never_touched_and_its_alias_is_a_conflict() -> None:
    r = resource(name="corp")
    scope = plan([r], [by_hand("corp"), by_hand("other")])
    assert scope.plan.is_empty() and "did not create" in scope.verdicts[r.key].message
    assert plan([], [by_hand("corp")]).plan.is_empty()


def test_a_hand_made_provider_is_adopted_only_when_asked_from_the_realms_namespace() -> None:
    adopt = {"annotations": {names.ANNOTATION_ADOPT: "true"}}
    obj = k8s("team-a", "corp")
    obj["metadata"].update(adopt)
    r = idp_secret.with_client_secret(
        idp.idp_resource(obj, targets()), ("upstream", "client-secret"), secret()
    )[0]
    scope = plan([r], [by_hand("corp")])
    [update] = scope.plan.updates
    assert scope.adopted == {r.key: "corp"} and update.remote_id == "corp"
    body = idp.upsert_body(update, VALUE, by_hand("corp"))  # laid over the provider as listed
    assert read_marker(body["config"]) is not None and body["internalId"] == "h-corp"
    adopted = {**stored(r), "internalId": "h-corp"}
    assert plan([r], [adopted]).plan.is_empty()  # then quiet, as any provider of ours
    other = k8s("team-b", "corp")
    other["metadata"].update(adopt)
    refused = plan([idp.idp_resource(other, targets(frozenset({"team-b"})))], [by_hand("corp")])
    [verdict] = refused.verdicts.values()
    assert verdict.phase == "Conflict" and "only resources in namespace team-a" in verdict.message
    assert refused.plan.is_empty()


def test_a_marker_of_another_kind_or_of_an_unwatched_namespace_is_left_alone() -> None:
    scope_marked = {
        **by_hand("x"),
        "config": marked({}, ObjectKey(names.CLIENT_SCOPE_KIND, "t", "x"))["attributes"],
    }
    other_ns = stored(resource("team-z", "z"))
    assert plan([], [scope_marked]).plan.is_empty()
    assert plan([], [other_ns], namespaces=frozenset({"team-a"})).plan.is_empty()
    assert [d.remote_id for d in plan([], [other_ns]).plan.deletes] == ["z"]  # watched: an orphan


def test_clients_allowed_are_not_identity_providers_allowed() -> None:
    """A provider is a way into every client of the realm: clientNamespaces does not let one in."""
    clients_only = targets(client_namespaces=frozenset({"team-b"}))
    refused = idp.idp_resource(k8s("team-b", "upstream"), clients_only)
    assert refused.problem is not None and refused.problem.phase == "Forbidden"
    assert "spec.identityProviderNamespaces" in refused.problem.message
    assert idp.idp_resource(k8s("team-a", "upstream"), clients_only).problem is None  # the realm's own


def test_a_namespace_the_realm_does_not_allow_is_forbidden_then_disabled_then_deleted() -> None:
    intruder = idp.idp_resource(k8s("team-c", "upstream"), targets(frozenset({"team-b"})))
    assert intruder.problem is not None and intruder.problem.phase == "Forbidden"
    assert "identity providers from namespace team-c" in intruder.problem.message
    assert plan([intruder], []).plan.is_empty()
    r = resource()
    now = T0 + timedelta(hours=3)
    grace = Revocation(now, timedelta(hours=1))

    def since(ago: timedelta) -> Resource:
        return Resource(r.key, "upstream", r.content, T0, problem=intruder.problem, forbidden_since=now - ago)

    disabled = plan([since(timedelta(minutes=90))], [stored(r)], revocation=grace)
    [disable] = disabled.disables
    body = idp.disable_body(disable.current)
    assert body["enabled"] is False and body["config"]["clientSecret"] == idp.MASKED  # Keycloak keeps it
    assert read_marker(body["config"]) is not None and idp.CONFIG not in body
    off = stored(r, enabled=False)
    assert plan([since(timedelta(minutes=90))], [off], revocation=grace).disables == []
    gone = plan([since(timedelta(hours=2))], [off], revocation=grace)
    assert gone.plan.deletes == [Delete(r.key, "upstream")]
    assert "disabled at" in grace.message(now, idp.KIND)  # it has a switch


def test_preserve_on_delete_releases_the_provider_and_removes_only_its_marker() -> None:
    r = resource()
    going = Resource(r.key, "upstream", r.content, T0, deleting=True, preserve=True, parent=REALM)
    scope = plan([going], [stored(r)])
    assert scope.releases == [Release(r.key, "upstream")] and scope.plan.is_empty()
    body = idp.release_body(idp.observed_view(stored(r)))
    assert read_marker(body["config"]) is None and not any(k.startswith("kcop.dev.") for k in body["config"])
    assert body["config"]["clientId"] == "kc" and body["config"]["clientSecret"] == idp.MASKED


# --- the property: a plan applied converges -----------------------------------------------------------------


_ids = itertools.count()


def apply(scope: ScopePlan, observed: list[Obj]) -> list[Obj]:
    """What Keycloak holds after the plan's writes, as the writer makes them (identity_providers.py): the
    secret stored and shown masked, a masked one sent back keeping it."""
    by_alias = {o["alias"]: copy.deepcopy(o) for o in observed}

    def put(alias: str, body: Obj) -> None:
        before = by_alias.pop(alias)
        config = dict(body["config"])
        if config.get("clientSecret") not in (None, "", idp.MASKED):
            config["clientSecret"] = idp.MASKED
        by_alias[body["alias"]] = {**body, "config": config, "internalId": before["internalId"]}

    for phase in scope.phases():
        for op in phase:
            if isinstance(op, Delete):
                del by_alias[op.remote_id]
            elif isinstance(op, Release):
                put(op.remote_id, idp.release_body(idp.observed_view(by_alias[op.remote_id])))
            elif isinstance(op, Disable):
                put(op.remote_id, idp.disable_body(op.current))
            elif isinstance(op, Create):
                body = idp.upsert_body(op, VALUE)
                by_alias[body["alias"]] = {"internalId": f"new-{next(_ids)}"}
                put(body["alias"], body)
            else:
                assert isinstance(op, Update)
                put(op.remote_id, idp.upsert_body(op, VALUE, by_alias[op.remote_id]))
    return list(by_alias.values())


aliases = st.sampled_from(["google", "azure", "corp", "extra"])
declared = st.lists(
    st.tuples(st.sampled_from(["team-a", "team-b"]), aliases, st.sampled_from(["", "x", "y"]), st.booleans()),
    max_size=6,
    unique_by=lambda t: (t[0], t[1]),
)
found = st.lists(
    st.tuples(st.sampled_from(["ours", "hand", "stale"]), st.sampled_from(["team-a", "team-b"]), aliases),
    max_size=5,
    unique_by=lambda t: t[2],  # Keycloak keeps aliases unique in a realm
)


@settings(max_examples=200, deadline=None)
@given(declared, found)
def test_applying_a_plan_converges_and_a_second_plan_is_empty(
    wanted: list[tuple[str, str, str, bool]], existing: list[tuple[str, str, str]]
) -> None:
    rs = [
        resource(ns, alias, created=i, displayName=text, trustEmail=flag)
        for i, (ns, alias, text, flag) in enumerate(wanted)
    ]
    observed: list[Obj] = []
    for how, ns, alias in existing:
        if how == "hand":
            observed.append(by_hand(alias))
        else:
            obj = stored(resource(ns, alias))
            if how == "stale":
                obj["displayName"] = "edited by hand"
            observed.append(obj)
    # An alias its holder is about to give up is taken a round later (ownership.py): two plans at most.
    after, plans = observed, []
    for _ in range(3):
        plans.append(plan(rs, after))
        if plans[-1].plan.is_empty():
            break
        after = apply(plans[-1], after)
    last = plans[-1]
    assert len(plans) <= 3 and last.plan.is_empty() and last.releases == [] and last.drift == {}
    # Unmarked providers are never touched; each alias ends held by exactly one of its live claims (none
    # when made by hand), and every other claim is a Conflict with nothing in Keycloak.
    hand = [o for o in observed if read_marker(o.get("config")) is None]
    assert all(o in after for o in hand)
    held_by_hand = {o["alias"] for o in hand}
    for alias in {r.natural_key for r in rs}:
        phases = sorted(last.verdicts[r.key].phase for r in rs if r.natural_key == alias)
        ready = 0 if alias in held_by_hand else 1
        assert phases == ["Conflict"] * (len(phases) - ready) + ["Ready"] * ready
    for r in rs:
        ours = [o for o in after if (m := read_marker(o.get("config"))) is not None and m.key == r.key]
        assert len(ours) == (1 if last.verdicts[r.key].phase == "Ready" else 0)
        assert all(VALUE not in json.dumps(o) for o in after)  # stored, never shown
