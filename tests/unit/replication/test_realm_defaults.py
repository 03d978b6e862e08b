"""What a realm gives every user (required actions, default roles, default groups) and its OTP and WebAuthn
policies: the content they add (nothing when absent), the planners' convergence against what Keycloak
holds, the reach rules, and hostile input refused by the model."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core.replication import ObjectKey, marked
from keycloak_operator.core.replication import default_groups as dg
from keycloak_operator.core.replication import realm as realm_kind
from keycloak_operator.core.replication import realm_defaults as rd
from keycloak_operator.core.replication import token_authority as ta
from keycloak_operator.core.replication import user_profile as up
from keycloak_operator.core.replication.marker import content_hash
from keycloak_operator.core.replication.plan import Update
from keycloak_operator.core.replication.sync import Resource, Verdict
from keycloak_operator.kernel import names
from keycloak_operator.models.realm import KeycloakRealmSpec
from tests.unit import builders

KEY = ObjectKey(names.REALM_KIND, "team", "main")
SERVER = {"keycloak": {"name": "kc"}}
# Keycloak 26.7.3's registered required actions in a new realm, with their priorities (read from one).
REGISTERED = {
    "TERMS_AND_CONDITIONS": 20, "UPDATE_PROFILE": 40, "VERIFY_EMAIL": 50, "CONFIGURE_TOTP": 54,
    "UPDATE_PASSWORD": 57, "delete_account": 60, "UPDATE_EMAIL": 70, "webauthn-register": 80,
    "webauthn-register-passwordless": 90, "VERIFY_PROFILE": 100, "delete_credential": 110, "idp_link": 120,
    "CONFIGURE_RECOVERY_AUTHN_CODES": 130, "update_user_locale": 1000,
}  # fmt: skip
DEFAULTS: dict[str, Any] = {
    "roles": [{"name": "member"}],
    "requiredActions": [
        {"alias": "TERMS_AND_CONDITIONS", "defaultAction": True, "priority": 5},
        {"alias": "CONFIGURE_TOTP", "enabled": False},
    ],
    "defaultRoles": {"realm": ["member", "offline_access"], "clients": {"app": ["reader"]}},
    "defaultGroups": ["staff"],
    "otpPolicy": {"digits": 8, "algorithm": "HmacSHA256"},
    "webAuthnPolicy": {"rpEntityName": "Team", "signatureAlgorithms": ["RS256", "ES256"]},
}


def spec(**fields: Any) -> KeycloakRealmSpec:
    return KeycloakRealmSpec.model_validate({"server": SERVER, **fields})


def resource(fields: dict[str, Any]) -> Resource:
    s = spec(**fields)
    return Resource(KEY, "main", realm_kind.realm_content(s, "main"), datetime(2026, 1, 1, tzinfo=UTC))


def keycloak_actions(**changes: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for alias, priority in REGISTERED.items():
        enabled = alias not in ("TERMS_AND_CONDITIONS", "delete_account", "UPDATE_EMAIL")
        action = {"alias": alias, "name": alias.title(), "providerId": alias, "enabled": enabled}
        out.append(
            {**action, "defaultAction": False, "priority": priority, "config": {}, **changes.get(alias, {})}
        )
    return out


# --- content: absent parts are not managed ------------------------------------------------------------------


def test_absent_parts_add_nothing_to_the_content_so_no_realm_is_rewritten() -> None:
    r = resource({"roles": [{"name": "member"}]})
    assert not set(rd.PARTS) & set(r.content)
    assert not {k for k in r.content if k.startswith(("otpPolicy", "webAuthnPolicy"))}


def test_declared_parts_are_content_in_one_order_but_never_in_a_realm_write() -> None:
    r = resource(DEFAULTS)
    reordered = resource(
        {
            **DEFAULTS,
            "requiredActions": list(reversed(DEFAULTS["requiredActions"])),
            "defaultRoles": {"realm": ["offline_access", "member"], "clients": {"app": ["reader"]}},
        }
    )
    assert content_hash(r.content) == content_hash(reordered.content)
    assert r.content["requiredActions"][0] == {
        "alias": "CONFIGURE_TOTP",
        "enabled": False,
        "defaultAction": False,
    }
    [create] = realm_kind.plan_realms([r], [], []).plan.creates
    body = realm_kind.create_body(create)
    update = realm_kind.update_body(Update(KEY, "main", r.content, "h", "main"))
    for written in (body, update):
        # The realm representation has fields of these names (defaultGroups as paths): never sent.
        assert not set(rd.PARTS) & set(written)
    assert body["otpPolicyDigits"] == 8 and body["otpPolicyType"] == "totp"  # every OTP field, type included
    assert body["webAuthnPolicySignatureAlgorithms"] == ["ES256", "RS256"]
    assert body["webAuthnPolicyUserVerificationRequirement"] == "not specified"  # Keycloak's default


def test_the_policies_are_realm_fields_a_hand_edit_of_which_is_drift() -> None:
    r = resource(DEFAULTS)
    observed = {
        **realm_kind.realm_write(marked(r.content, KEY)),
        "requiredActions": [],
        "defaultGroups": ["/x"],
    }
    assert realm_kind.plan_realms([r], [], [observed]).plan.is_empty()  # parts: not compared here
    for field, value in (("otpPolicyDigits", 6), ("webAuthnPolicyRpEntityName", "keycloak")):
        scope = realm_kind.plan_realms([r], [], [{**observed, field: value}])
        assert scope.drift == {KEY: [field]}


def test_a_declared_webauthn_policy_keeps_the_unmanaged_webauthn_fields_keycloak_would_reset() -> None:
    r = resource(DEFAULTS)
    listed = {
        "realm": "main",
        "webAuthnPolicyRpEntityName": "old",
        "webAuthnPolicyExtraOrigins": ["https://app.example"],
        "webAuthnPolicyAcceptableAaguids": ["aaguid-1"],
        "webAuthnPolicyPasswordlessExtraOrigins": ["https://other"],
        "attributes": {"x": "y"},
    }
    body = realm_kind.update_body(Update(KEY, "main", r.content, "h", "main"), None, listed)
    assert body["webAuthnPolicyExtraOrigins"] == ["https://app.example"]
    assert body["webAuthnPolicyAcceptableAaguids"] == ["aaguid-1"]
    assert body["webAuthnPolicyRpEntityName"] == "Team"  # a managed field is the declared one
    # The passwordless policy is rebuilt only by its own fields. The realm's attributes that are not ours go
    # back as listed (a realm PUT with `attributes` removes those not sent: ADR 0022), not for WebAuthn.
    assert "webAuthnPolicyPasswordlessExtraOrigins" not in body and body["attributes"]["x"] == "y"
    undeclared = resource({"roles": [{"name": "member"}]})
    plain = realm_kind.update_body(Update(KEY, "main", undeclared.content, "h", "main"), None, listed)
    assert not {k for k in plain if k.startswith("webAuthnPolicy")}  # no rebuild without the policy


def test_held_back_writes_are_updated_and_only_a_hand_edit_is_drift_repaired() -> None:
    written = ["defaultGroups[+staff]"]
    assert rd.written_event(written, [], was_pending=True).reason == "Updated"  # the first deferred write
    assert rd.written_event(written, ["Updated"], was_pending=False).reason == "Updated"
    assert rd.written_event(written, [], was_pending=False).reason == "DriftRepaired"
    assert "defaultGroups[+staff]" in rd.written_event(written, [], was_pending=False).message


def test_a_pending_status_is_read_as_held_back() -> None:
    from keycloak_operator.core.replication.objects import resource_flags

    meta = {"metadata": {"name": "main", "namespace": "team", "creationTimestamp": "2026-01-01T00:00:00Z"}}
    assert resource_flags({**meta, "status": {"phase": "Pending"}})["was_pending"] is True
    assert resource_flags({**meta, "status": {"phase": "Ready"}})["was_pending"] is False
    assert resource_flags(meta)["was_pending"] is False


# --- required actions ---------------------------------------------------------------------------------------


def apply_actions(observed: list[dict[str, Any]], puts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_alias = {p["alias"]: p for p in puts}
    return [by_alias.get(a["alias"], a) for a in observed]


def test_declared_actions_are_put_whole_the_others_untouched_and_a_second_plan_is_empty() -> None:
    declared = resource(DEFAULTS).content["requiredActions"]
    observed = keycloak_actions()
    plan = rd.plan_required_actions(declared, observed)
    assert plan.problem is None
    assert {p["alias"] for p in plan.puts} == {"TERMS_AND_CONDITIONS", "CONFIGURE_TOTP"}
    terms = next(p for p in plan.puts if p["alias"] == "TERMS_AND_CONDITIONS")
    # Keycloak replaces the action whole: the name and config read are sent back.
    assert terms == {**observed[0], "enabled": True, "defaultAction": True, "priority": 5}
    totp = next(p for p in plan.puts if p["alias"] == "CONFIGURE_TOTP")
    assert totp["priority"] == 54  # not declared: Keycloak's kept
    assert rd.plan_required_actions(declared, apply_actions(observed, plan.puts)).puts == []


def test_an_alias_the_server_has_not_registered_is_an_error_naming_it_and_the_others_are_written() -> None:
    observed = [a for a in keycloak_actions() if a["alias"] != "idp_link"]
    declared = [
        {"alias": "idp_link", "enabled": False, "defaultAction": False},
        *resource(DEFAULTS).content["requiredActions"],
    ]
    plan = rd.plan_required_actions(declared, observed)
    assert plan.problem is not None and plan.problem.phase == "Error"
    assert "spec.requiredActions" in plan.problem.message and "idp_link" in plan.problem.message
    assert len(plan.puts) == 2


actions = st.lists(
    st.fixed_dictionaries(
        {"alias": st.sampled_from(sorted(REGISTERED)), "enabled": st.booleans()},
        optional={"priority": st.integers(0, 2000)},
    ),
    unique_by=lambda a: a["alias"],
    max_size=6,
)


@given(
    actions,
    st.dictionaries(
        st.sampled_from(sorted(REGISTERED)),
        st.fixed_dictionaries(
            {"enabled": st.booleans(), "priority": st.integers(0, 2000), "defaultAction": st.booleans()}
        ),
    ),
)
def test_required_actions_converge_and_leave_undeclared_ones_alone(
    wanted: list[dict[str, Any]], edits: dict[str, dict[str, Any]]
) -> None:
    s = spec(requiredActions=[{**a, "defaultAction": a["enabled"]} for a in wanted])
    declared = rd.defaults_content(s)["requiredActions"]
    observed = keycloak_actions(**edits)
    plan = rd.plan_required_actions(declared, observed)
    after = apply_actions(observed, plan.puts)
    assert rd.plan_required_actions(declared, after).puts == []
    touched = {a["alias"] for a in declared}
    assert [a for a in after if a["alias"] not in touched] == [
        a for a in observed if a["alias"] not in touched
    ]


# --- default roles -----------------------------------------------------------------------------------------

REALM_ID, APP, ACCOUNT = "realm-uuid", "app-uuid", "account-uuid"
REALM_ROLES: dict[str, dict[str, Any]] = {
    "member": {"id": "r-member", "composite": False},
    "offline_access": {"id": "r-offline", "composite": False},
    "uma_authorization": {"id": "r-uma", "composite": False},
    "admin": {"id": "r-admin", "composite": True},
    "default-roles-main": {"id": "r-default", "composite": True},
}
# clientId -> (id, the namespace its marker names); the realm is in namespace `team`.
CLIENTS = {
    "app": (APP, "team"),
    "tools": ("tools-uuid", "team"),
    "account": (ACCOUNT, None),
    "realm-management": ("realm-management-uuid", None),
    "other-team": ("other-team-uuid", "other"),
}
CLIENT_ROLES = {
    "app": {"reader": "c-reader", "writer": "c-writer"},
    "account": {"view-profile": "a-vp", "manage-account": "a-ma"},
}


def view(*grants: ta.Grant, client_roles: Any = None, composite: frozenset[str] = frozenset()) -> rd.RoleView:
    realm_view = ta.RealmView(
        "main", REALM_ROLES, CLIENTS, pristine=frozenset({"account", "realm-management"})
    )
    authority = ta.Authority("team", grants, "team/main", realm_view)
    return rd.RoleView(authority, CLIENT_ROLES if client_roles is None else client_roles, composite)


VIEW = view()


def held(ids: set[str]) -> list[dict[str, Any]]:
    """Composites as Keycloak returns them: realm roles' containerId is the realm's id."""
    realm = {str(r["id"]): k for k, r in REALM_ROLES.items()}
    out = []
    for i in sorted(ids):
        if i in realm:
            out.append({"id": i, "name": realm[i], "clientRole": False, "containerId": REALM_ID})
            continue
        for cid, roles in CLIENT_ROLES.items():
            names_ = {v: k for k, v in roles.items()}
            if i in names_:
                out.append({"id": i, "name": names_[i], "clientRole": True, "containerId": CLIENTS[cid][0]})
    return out


def apply_roles(ids: set[str], plan: rd.RolePlan) -> set[str]:
    for change in plan.changes:
        changed = {r["id"] for r in change.roles}
        ids = ids | changed if change.operation == "add" else ids - changed
    return ids


KEYCLOAK_DEFAULT = {"r-offline", "r-uma", "a-vp", "a-ma"}


def test_default_roles_are_made_exactly_the_declared_set_removes_first() -> None:
    declared = resource(DEFAULTS).content["defaultRoles"]
    plan = rd.plan_default_roles(declared, held(KEYCLOAK_DEFAULT), VIEW)
    assert plan.problem is None
    assert [c.operation for c in plan.changes] == ["remove", "add"]
    assert plan.changes[0].labels == (
        "account/manage-account",
        "account/view-profile",
        "realm/uma_authorization",
    )
    assert plan.changes[1].labels == ("app/reader", "realm/member")
    assert apply_roles(KEYCLOAK_DEFAULT, plan) == {"r-member", "r-offline", "c-reader"}


def test_a_client_not_in_the_realm_yet_waits_rather_than_being_refused() -> None:
    plan = rd.plan_default_roles({"realm": [], "clients": {"later": ["x"]}}, [], VIEW)
    assert plan.problem is not None and plan.problem.reason == "RoleNotFound"
    assert plan.problem.message.startswith("spec.defaultRoles.clients.later: no client 'later' in the realm")


@pytest.mark.parametrize(
    ("declared", "field"),
    [
        ({"realm": ["admin"], "clients": {}}, "spec.defaultRoles.realm[admin]"),  # composite
        ({"realm": ["ghost"], "clients": {}}, "spec.defaultRoles.realm"),
        ({"realm": ["default-roles-main"], "clients": {}}, "spec.defaultRoles.realm[default-roles-main]"),
        ({"realm": [], "clients": {"ghost": ["x"]}}, "spec.defaultRoles.clients.ghost"),
        (
            {"realm": [], "clients": {"realm-management": ["realm-admin"]}},
            "spec.defaultRoles.clients.realm-management",
        ),
        ({"realm": [], "clients": {"other-team": ["x"]}}, "spec.defaultRoles.clients.other-team"),
        ({"realm": [], "clients": {"app": ["nope"]}}, "spec.defaultRoles.clients.app"),
    ],
)
def test_a_role_out_of_reach_or_missing_adds_nothing_and_names_the_field(
    declared: dict[str, Any], field: str
) -> None:
    plan = rd.plan_default_roles(declared, held(KEYCLOAK_DEFAULT), VIEW)
    assert plan.problem is not None and field in plan.problem.message
    assert [c.operation for c in plan.changes] == ["remove"]  # what nobody declared still goes


def test_while_a_role_waits_the_removals_are_made_and_the_declared_roles_in_reach_kept() -> None:
    declared = {"realm": ["member", "late"], "clients": {"app": ["reader"]}}
    start = {"r-member", "c-writer", "a-vp"}
    plan = rd.plan_default_roles(declared, held(start), VIEW)
    assert plan.problem is not None and plan.problem.phase == "Pending"
    assert apply_roles(start, plan) == {"r-member"}  # nothing added (c-reader waits), the rest removed
    stranger = [{"id": "x-1", "name": "secret", "clientRole": True, "containerId": "other-uuid"}]
    out_of_reach = rd.plan_default_roles(declared, stranger, VIEW)
    assert [(c.operation, c.labels) for c in out_of_reach.changes] == [("remove", ("other-uuid/secret",))]


COMPOSITE_VIEW = view(
    client_roles={**CLIENT_ROLES, "app": {"reader": "c-reader", "writer": "c-writer", "bundle": "c-bundle"}},
    composite=frozenset({"c-bundle"}),
)
BUNDLE = {"realm": [], "clients": {"app": ["bundle"]}}


def role(i: str, name: str, container: str | None = None, composite: bool = False) -> dict[str, Any]:
    client = {"clientRole": True, "containerId": container} if container else {"clientRole": False}
    return {"id": i, "name": name, "composite": composite, **client}


def test_a_default_composite_holding_only_the_owners_roles_is_written() -> None:
    includes = {
        "c-bundle": [role("c-reader", "reader", APP), role("t-1", "use", "tools-uuid", composite=True)],
        "t-1": [role("r-member", "member")],
    }
    plan = rd.plan_default_roles(BUNDLE, [], COMPOSITE_VIEW, includes)
    assert plan.problem is None and plan.changes[0].labels == ("app/bundle",)


@pytest.mark.parametrize(
    ("includes", "named"),
    [
        # a role another namespace granted this namespace's client (serviceAccountGrants), held directly
        ({"c-bundle": [role("x-1", "view-users", "realm-management-uuid")]}, "view-users"),
        ({"c-bundle": [role("x-2", "secret", "other-team-uuid")]}, "secret"),
        ({"c-bundle": [role("r-admin", "admin")]}, "admin"),  # a composite realm role, not granted
        ({"c-bundle": [role("r-x", "unknown")]}, "unknown"),  # a realm role not in the view
        # held two levels down, through a composite in reach
        (
            {
                "c-bundle": [role("t-1", "use", "tools-uuid", composite=True)],
                "t-1": [role("x-1", "view-users", "realm-management-uuid")],
            },
            "view-users",
        ),
    ],
)
def test_a_default_composite_holding_a_role_out_of_reach_is_refused_naming_it(
    includes: dict[str, list[dict[str, Any]]], named: str
) -> None:
    plan = rd.plan_default_roles(BUNDLE, held({"a-vp"}), COMPOSITE_VIEW, includes)
    assert plan.problem is not None and plan.problem.reason == "CompositeOutOfReach"
    assert "spec.defaultRoles.clients.app" in plan.problem.message and named in plan.problem.message
    assert all(c.operation == "remove" for c in plan.changes)  # nothing added
    # Held already (declared before the composite changed): it goes too, as a refused role does.
    again = rd.plan_default_roles(BUNDLE, [role("c-bundle", "bundle", APP)], COMPOSITE_VIEW, includes)
    assert [(c.operation, c.labels) for c in again.changes] == [("remove", ("app/bundle",))]


def test_a_composite_tree_beyond_the_read_bound_is_refused() -> None:
    plan = rd.plan_default_roles(BUNDLE, [], COMPOSITE_VIEW, {}, truncated=True)
    assert plan.problem is not None and plan.problem.reason == "CompositeOutOfReach"
    assert not plan.changes


def test_the_realm_owner_gives_every_user_what_the_token_authority_lets_it_give_anyone() -> None:
    """ADR 0012: the default role's composites are asked of the realm's own namespace."""
    ok, grant = rd.plan_default_roles, ta.Grant
    for declared in (
        {"realm": ["member", "offline_access"], "clients": {"account": ["view-profile"]}},
        {"realm": [], "clients": {"app": ["reader"]}},
    ):
        assert ok(declared, [], VIEW).problem is None
    refused = {"realm": ["admin"], "clients": {}}
    problem = ok(refused, [], VIEW).problem
    assert problem is not None and problem.reason == ta.NOT_GRANTED and problem.phase == "Pending"
    assert "spec.serviceAccountGrants needs {namespace: team, roles: [admin]}" in problem.message
    assert ok(refused, [], view(grant("team", None, frozenset({"admin"})))).problem is None
    theirs = {"realm": [], "clients": {"other-team": ["x"]}}
    granted = view(grant("team", "other-team", frozenset({"x"})), client_roles={"other-team": {"x": "o-x"}})
    assert ok(theirs, [], granted).problem is None
    assert "clientId: other-team, roles: [x]" in str(ok(theirs, [], VIEW).problem)
    # realm-management's roles administer the realm: never every user's, even granted.
    admin = {"realm": [], "clients": {"realm-management": ["realm-admin"]}}
    rm = view(grant("team", "realm-management", frozenset({"realm-admin"})))
    assert "administers the realm" in str(ok(admin, [], rm).problem)


def attrs(kind: str, namespace: str) -> dict[str, str]:
    return dict(marked({}, ObjectKey(kind, namespace, "x"))["attributes"])


@pytest.mark.parametrize(
    ("client_id", "attributes", "in_reach"),
    [
        ("app", attrs(names.CLIENT_KIND, "team"), True),
        ("account", None, True),
        ("account", {}, True),
        ("app", attrs(names.CLIENT_KIND, "other"), False),  # another namespace's client
        ("realm-management", None, False),
        ("app", None, False),  # made by hand
        ("app", attrs(names.GROUP_KIND, "team"), False),
        # an `account` client whose marker was emptied (released, or half written): may be someone's
        ("account", {"kcop.dev.kind": ""}, False),
        ("account", {"kcop.dev.namespace": "", "kcop.dev.kind": ""}, False),
    ],
)
def test_only_the_namespaces_clients_and_an_unmarked_account_may_give_default_roles(
    client_id: str, attributes: Any, in_reach: bool
) -> None:
    listing = [{"clientId": client_id, "id": "c-1", "attributes": attributes}]
    realm_view = ta.RealmView("main", {}, ta.client_owners(listing), pristine=ta.unmarked_clients(listing))
    authority = ta.Authority("team", (), "team/main", realm_view)
    assert authority.may_give_every_user(client_id, "view-profile") is in_reach


PLAIN_ROLES = sorted(n for n, r in REALM_ROLES.items() if r["composite"] is False)
every_role = sorted(
    {*(str(r["id"]) for r in REALM_ROLES.values()), *(i for r in CLIENT_ROLES.values() for i in r.values())}
)


@given(
    st.lists(st.sampled_from(PLAIN_ROLES), unique=True),
    st.dictionaries(
        st.sampled_from(sorted(CLIENT_ROLES)),
        st.lists(
            st.sampled_from(["reader", "writer", "view-profile", "manage-account"]), unique=True, min_size=1
        ),
    ),
    st.sets(st.sampled_from(every_role)),
)
def test_default_roles_converge_from_any_held_set(
    realm: list[str], clients: dict[str, list[str]], start: set[str]
) -> None:
    clients = {c: [r for r in roles if r in CLIENT_ROLES[c]] for c, roles in clients.items()}
    s = spec(roles=[{"name": "member"}], defaultRoles={"realm": realm, "clients": clients})
    declared = rd.defaults_content(s)["defaultRoles"]
    plan = rd.plan_default_roles(declared, held(start), VIEW)
    assert plan.problem is None
    after = apply_roles(start, plan)
    second = rd.plan_default_roles(declared, held(after), VIEW)
    assert second.changes == []


# --- default groups ----------------------------------------------------------------------------------------


def test_default_groups_are_the_declared_ready_groups_by_id_and_a_hand_added_one_goes() -> None:
    plan = dg.plan_default_groups(["staff"], {"staff": "g-1"}, [{"id": "g-9", "name": "x", "path": "/x"}])
    assert (plan.add, plan.remove, plan.labels) == (["g-1"], ["g-9"], ["+staff", "-/x"])
    assert (
        dg.plan_default_groups(["staff"], {"staff": "g-1"}, [{"id": "g-1", "path": "/staff"}])
        == dg.GroupPlan()
    )


def test_a_group_not_ready_holds_the_adds_but_not_the_removals_and_the_realm_waits_naming_it() -> None:
    plan = dg.plan_default_groups(["staff", "late"], {"staff": "g-1"}, [{"id": "g-9"}])
    assert plan.add == [] and plan.remove == ["g-9"]
    assert plan.problem is not None and plan.problem.phase == "Pending"
    assert "spec.defaultGroups" in plan.problem.message and "late" in plan.problem.message


def test_a_declared_group_not_ready_this_round_is_not_taken_away() -> None:
    groups = dg.NamespaceGroups(ready={"staff": "g-1"}, known={"staff": "g-1", "late": "g-2"})
    plan = dg.plan_default_groups(["staff", "late"], groups, [{"id": "g-2"}, {"id": "g-9"}])
    assert (plan.add, plan.remove) == ([], ["g-9"])


def group(namespace: str, name: str, deleting: bool = False) -> Resource:
    key = ObjectKey(names.GROUP_KIND, namespace, name)
    return Resource(key, name, {}, datetime(2026, 1, 1, tzinfo=UTC), deleting=deleting)


def test_only_the_realm_namespaces_groups_count_by_the_id_their_marker_was_found_under() -> None:
    ours, theirs = group("team", "staff"), group("other", "staff")
    waiting, gone = group("team", "late"), group("team", "old", deleting=True)
    client = Resource(
        ObjectKey(names.CLIENT_KIND, "team", "staff"), "staff", {}, datetime(2026, 1, 1, tzinfo=UTC)
    )
    ready = Verdict("Ready", "Synced", "")
    children = [ours, theirs, waiting, gone, client]
    verdicts = {c.key: ready for c in children} | {waiting.key: Verdict("Pending", "X", "")}
    remote_ids = {ours.key: "g-ours", theirs.key: "g-theirs", waiting.key: "g-late", gone.key: "g-old"}
    remote_ids[client.key] = "c-1"
    groups = dg.namespace_groups(VIEW.authority, children, verdicts, remote_ids)
    assert groups == dg.NamespaceGroups(
        ready={"staff": "g-ours"}, known={"staff": "g-ours", "late": "g-late"}
    )


def mapping(name: str, parent: str = "", realm: Any = (), clients: Any = None) -> Resource:
    key = ObjectKey(names.GROUP_KIND, "team", name)
    content = {"name": name, "parent": parent, "realmRoles": list(realm), "clientRoles": clients or {}}
    return Resource(key, name, content, datetime(2026, 1, 1, tzinfo=UTC))


def test_a_default_group_hands_every_user_its_roles_and_its_parents_so_the_authority_judges_them() -> None:
    """ADR 0012: a default group's members hold what it and every group above it map; they must be what
    the realm's own namespace may give every user (realm-management's never, even granted)."""
    rm = ta.Grant("team", "realm-management", frozenset({"view-users"}))
    authority = view(rm, ta.Grant("team", None, frozenset({"admin"}))).authority
    children = [
        mapping("top", clients={"realm-management": ["view-users"]}),
        mapping("staff", parent="top", realm=["member"], clients={"app": ["reader"]}),
        mapping("plain", realm=["member", "admin"]),
    ]
    ready = Verdict("Ready", "Synced", "")
    verdicts = {c.key: ready for c in children}
    remote_ids = {c.key: f"g-{c.key.name}" for c in children}
    groups = dg.namespace_groups(authority, children, verdicts, remote_ids, ["staff", "plain"])
    assert set(groups.refused) == {"staff"}
    message = groups.refused["staff"].message
    assert message.startswith("spec.defaultGroups[staff]: role 'view-users' of client 'realm-management'")
    plan = dg.plan_default_groups(["staff", "plain"], groups, [{"id": "g-staff", "path": "/top/staff"}])
    assert (plan.add, plan.remove) == ([], ["g-staff"])  # refused: nothing added, the held one removed
    assert plan.problem is not None and plan.problem.phase == "Pending"
    # Without the grant of `admin` (composite) `plain` is refused as well, naming the grant it needs.
    groups = dg.namespace_groups(VIEW.authority, children, verdicts, remote_ids, ["plain"])
    assert "needs {namespace: team, roles: [admin]}" in groups.refused["plain"].message
    assert not dg.maps_roles(["lonely"], dg.own_groups(VIEW.authority, [mapping("lonely")]))


def test_a_parent_being_deleted_still_hands_its_roles_down_so_they_are_judged() -> None:
    """Its deletion waits on the child, so Keycloak still holds its roles, and the child's members inherit
    them: skipping it would give every new user realm-management's role through the child."""
    rm = ta.Grant("team", "realm-management", frozenset({"view-users"}))
    authority = view(rm).authority
    top = dataclasses.replace(mapping("top", clients={"realm-management": ["view-users"]}), deleting=True)
    children = [top, mapping("staff", parent="top")]
    ready = Verdict("Ready", "Synced", "")
    verdicts = {c.key: ready for c in children}
    remote_ids = {c.key: f"g-{c.key.name}" for c in children}
    groups = dg.namespace_groups(authority, children, verdicts, remote_ids, ["staff"])
    assert set(groups.refused) == {"staff"} and "realm-management" in groups.refused["staff"].message
    assert dg.maps_roles(["staff"], dg.own_groups(authority, children, deleting=True))


@given(
    st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True),
    st.sets(st.sampled_from(["g-a", "g-b", "g-c", "g-d", "g-x"])),
)
def test_default_groups_converge(declared: list[str], start: set[str]) -> None:
    ready = {n: f"g-{n}" for n in "abcd"}
    observed = [{"id": i, "path": f"/{i}"} for i in sorted(start)]
    plan = dg.plan_default_groups(declared, ready, observed)
    after = (start - set(plan.remove)) | set(plan.add)
    assert after == {ready[n] for n in declared}
    assert dg.plan_default_groups(declared, ready, [{"id": i} for i in after]) == dg.GroupPlan()


# --- hostile input -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"requiredActions": [{"alias": "my-custom-action"}]},
        {"requiredActions": [{"alias": "VERIFY_EMAIL"}, {"alias": "VERIFY_EMAIL"}]},
        {"requiredActions": [{"alias": "VERIFY_EMAIL", "enabled": False, "defaultAction": True}]},
        {"requiredActions": [{"alias": "VERIFY_EMAIL", "priority": -1}]},
        {"defaultRoles": {"realm": ["a", "a"]}},
        {"defaultRoles": {"clients": {"has space": ["x"]}}},
        {"defaultRoles": {"clients": {"realm-management": ["realm-admin"]}}},
        {"defaultRoles": {"realm": ["bad\nname"]}},
        {"defaultGroups": ["Not_A_Name"]},
        {"defaultGroups": ["a", "a"]},
        {"defaultGroups": [f"g{i}" for i in range(33)]},
        {"otpPolicy": {"digits": 7}},
        {"otpPolicy": {"type": "sms"}},
        {"otpPolicy": {"period": 0}},
        {"webAuthnPolicy": {"signatureAlgorithms": ["RS1"]}},
        {"webAuthnPolicy": {"signatureAlgorithms": []}},
        {"webAuthnPolicy": {"rpId": "https://evil/"}},
        {"webAuthnPolicy": {"rpEntityName": "a\r\nb"}},
    ],
)
def test_hostile_fields_are_refused_by_the_model(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        spec(**fields)


# --- user profile ------------------------------------------------------------------------------------------

# Keycloak 26.7.3's profile of a new realm (read from one), shortened to what the merge must keep.
BUILT_IN_PROFILE: dict[str, Any] = {
    "attributes": [
        {"name": "username", "displayName": "${username}", "validations": {"length": {"min": 3, "max": 255}},
         "permissions": {"view": ["admin", "user"], "edit": ["admin", "user"]}, "multivalued": False},
        {"name": "email", "displayName": "${email}", "validations": {"email": {}, "length": {"max": 255}},
         "required": {"roles": ["user"]}, "multivalued": False,
         "permissions": {"view": ["admin", "user"], "edit": ["admin", "user"]}},
    ],
    "groups": [{"name": "user-metadata", "displayHeader": "User metadata"}],
}  # fmt: skip
PROFILE = {
    "unmanagedAttributePolicy": "ADMIN_VIEW",
    "attributes": [
        {
            "name": "department",
            "displayName": "Department",
            "validations": {
                "length": {"min": 1, "max": 64},
                "pattern": {"pattern": "^[a-z]+$", "errorMessage": "lower"},
            },
            "requiredFor": ["user"],
            "permissions": {"view": ["user", "admin"], "edit": ["admin"]},
            "group": "user-metadata",
        },
        {"name": "badge", "validations": {"email": True}, "multivalued": True},
    ],
}


def profile(fields: dict[str, Any]) -> dict[str, Any]:
    return dict(rd.defaults_content(spec(userProfile=fields))[up.USER_PROFILE])


def test_the_profile_renders_as_keycloak_reads_it_back() -> None:
    declared = profile(PROFILE)
    [badge, dept] = declared["attributes"]
    assert dept == {
        "name": "department",
        "displayName": "Department",
        "validations": {
            "length": {"min": 1, "max": 64},
            "pattern": {"pattern": "^[a-z]+$", "error-message": "lower"},
        },
        "required": {"roles": ["user"]},
        "permissions": {"view": ["admin", "user"], "edit": ["admin"]},
        "multivalued": False,
        "group": "user-metadata",
    }
    assert badge == {
        "name": "badge",
        "validations": {"email": {}},
        "permissions": {"view": ["admin", "user"], "edit": ["admin"]},
        "multivalued": True,
    }


def test_the_merge_keeps_built_ins_groups_and_undeclared_attributes_exactly_and_sets_the_policy() -> None:
    declared = profile(PROFILE)
    by_hand = {"name": "nickname", "permissions": {"view": ["user"], "edit": ["user"]}}
    observed = {**BUILT_IN_PROFILE, "attributes": [*BUILT_IN_PROFILE["attributes"], by_hand]}
    assert up.drift(declared, observed) == [
        "userProfile.unmanagedAttributePolicy",
        "userProfile.attributes[badge]",
        "userProfile.attributes[department]",
    ]
    merged = up.merged(declared, observed)
    assert merged["attributes"][:3] == observed["attributes"]
    assert (
        merged["groups"] == BUILT_IN_PROFILE["groups"] and merged["unmanagedAttributePolicy"] == "ADMIN_VIEW"
    )
    assert up.drift(declared, merged) == []
    # Keycloak's own order of role lists is not drift; DISABLED is the policy's absence.
    flipped = [
        {**a, "permissions": {**a["permissions"], "view": list(reversed(a["permissions"]["view"]))}}
        for a in merged["attributes"][3:]
    ]
    reordered = {**merged, "attributes": [*merged["attributes"][:3], *flipped]}
    assert up.drift(declared, reordered) == []
    disabled = profile({"attributes": []})
    assert "unmanagedAttributePolicy" not in up.merged(disabled, merged)
    assert up.drift(disabled, up.merged(disabled, merged)) == []


attribute_specs = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["a", "b", "c", "nickname"])},
        optional={
            "displayName": st.text(
                st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=8
            ),
            "multivalued": st.booleans(),
            "requiredFor": st.lists(st.sampled_from(["admin", "user"]), unique=True, min_size=1, max_size=2),
            "validations": st.fixed_dictionaries(
                {},
                optional={
                    "email": st.booleans(),
                    "length": st.fixed_dictionaries({"max": st.integers(1, 99)}),
                },
            ),
        },
    ),
    unique_by=lambda a: a["name"],
    max_size=4,
)
junk_attributes = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"name": st.sampled_from(["a", "b", "x", "y"]), "displayName": st.text(max_size=4)}
        ),
        st.just({"name": ["not", "a", "name"]}),
        st.just("not an attribute"),
    ),
    max_size=4,
)


@given(
    attribute_specs,
    st.sampled_from(["DISABLED", "ENABLED", "ADMIN_VIEW", "ADMIN_EDIT"]),
    junk_attributes,
    st.sampled_from([None, "ENABLED", "ADMIN_EDIT"]),
)
def test_the_profile_converges_and_keeps_everything_not_declared(
    attributes: list[dict[str, Any]], policy: str, others: list[Any], held_policy: str | None
) -> None:
    declared = profile({"unmanagedAttributePolicy": policy, "attributes": attributes})
    observed: dict[str, Any] = {**BUILT_IN_PROFILE, "attributes": [*BUILT_IN_PROFILE["attributes"], *others]}
    if held_policy is not None:
        observed["unmanagedAttributePolicy"] = held_policy
    merged = up.merged(declared, observed)
    assert up.drift(declared, merged) == []
    ours = {a["name"] for a in attributes}

    def declared_here(a: Any) -> bool:
        return isinstance(a, dict) and isinstance(a.get("name"), str) and a["name"] in ours

    assert [a for a in merged["attributes"] if not declared_here(a)] == [
        a for a in observed["attributes"] if not declared_here(a)
    ]
    assert sorted(a["name"] for a in merged["attributes"] if declared_here(a)) == sorted(ours)  # once each
    assert merged["attributes"][:2] == BUILT_IN_PROFILE["attributes"]
    assert {k: v for k, v in merged.items() if k not in ("attributes", "unmanagedAttributePolicy")} == {
        "groups": BUILT_IN_PROFILE["groups"]
    }


@pytest.mark.parametrize(
    "fields",
    [
        {"attributes": [{"name": "email"}]},
        {"attributes": [{"name": "username", "multivalued": True}]},
        {"attributes": [{"name": "a"}, {"name": "a"}]},
        {"attributes": [{"name": "has space"}]},
        {"attributes": [{"name": "a", "validations": {"pattern": {"pattern": "x\n"}}}]},
        {"attributes": [{"name": "a", "validations": {"length": {"min": -1}}}]},
        {"attributes": [{"name": "a", "permissions": {"view": ["everyone"]}}]},
        {"attributes": [{"name": "a", "requiredFor": ["root"]}]},
        # Keycloak reads a `required` with no roles and no scopes as required for everyone.
        {"attributes": [{"name": "a", "requiredFor": []}]},
        {"attributes": [{"name": "kcop.dev.kind"}]},
        {"attributes": [{"name": "a", "validations": {"length": {"min": 5, "max": 4}}}]},
        {"unmanagedAttributePolicy": "YES"},
        {"attributes": [{"name": f"a{i}"} for i in range(65)]},
    ],
)
def test_a_hostile_profile_is_refused_by_the_model(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        spec(userProfile=fields)


def test_the_profile_refusals_are_in_the_crd_too() -> None:
    from keycloak_operator.core.replication.marker import PREFIX
    from keycloak_operator.models import user_profile as profile_model

    assert profile_model.MARKER_PREFIX == PREFIX
    schema = builders.crd_schema(names.REALM_KIND)["spec"]
    items = schema["properties"]["userProfile"]["properties"]["attributes"]["items"]
    assert profile_model.NOT_MARKER_RULE in items["x-kubernetes-validations"]
    assert items["properties"]["requiredFor"]["minItems"] == 1
    length = items["properties"]["validations"]["properties"]["length"]
    assert length["x-kubernetes-validations"] == [profile_model.LENGTH_ORDER_RULE]
    clients = schema["properties"]["defaultRoles"]["properties"]["clients"]
    assert "realm-management" in clients["x-kubernetes-validations"][0]["rule"]


def test_only_the_typed_validators_are_ever_sent() -> None:
    """Keycloak fails the whole profile's PUT on a validator it does not know: anything else is dropped (the
    API server prunes it before the operator sees it)."""
    declared = profile(
        {"attributes": [{"name": "a", "validations": {"script": {"code": "x"}, "email": True}}]}
    )
    assert declared["attributes"][0]["validations"] == {"email": {}}
