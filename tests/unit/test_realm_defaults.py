"""What a realm gives every user (required actions, default roles, default groups) and its OTP and WebAuthn
policies: the content they add (nothing when absent), the planners' convergence against what Keycloak
holds, the reach rules, and hostile input refused by the model."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core import names
from keycloak_operator.core.replication import ObjectKey, marked
from keycloak_operator.core.replication import realm as realm_kind
from keycloak_operator.core.replication import realm_defaults as rd
from keycloak_operator.core.replication.marker import content_hash
from keycloak_operator.core.replication.plan import Update
from keycloak_operator.core.replication.sync import Resource
from keycloak_operator.models.realm import KeycloakRealmSpec

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
VIEW = rd.RoleView(
    {"member": "r-member", "offline_access": "r-offline", "uma_authorization": "r-uma"},
    {
        "app": (APP, {"reader": "c-reader", "writer": "c-writer"}),
        "account": (ACCOUNT, {"view-profile": "a-vp", "manage-account": "a-ma"}),
    },
)


def held(ids: set[str]) -> list[dict[str, Any]]:
    """Composites as Keycloak returns them: realm roles' containerId is the realm's id."""
    realm = {v: k for k, v in VIEW.realm_roles.items()}
    out = []
    for i in sorted(ids):
        if i in realm:
            out.append({"id": i, "name": realm[i], "clientRole": False, "containerId": REALM_ID})
            continue
        for uuid, roles in VIEW.clients.values():
            names_ = {v: k for k, v in roles.items()}
            if i in names_:
                out.append({"id": i, "name": names_[i], "clientRole": True, "containerId": uuid})
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


@pytest.mark.parametrize(
    ("declared", "field"),
    [
        ({"realm": ["admin"], "clients": {}}, "spec.defaultRoles.realm"),
        (
            {"realm": [], "clients": {"realm-management": ["realm-admin"]}},
            "spec.defaultRoles.clients.realm-management",
        ),
        ({"realm": [], "clients": {"other-team": ["x"]}}, "spec.defaultRoles.clients.other-team"),
        ({"realm": [], "clients": {"app": ["nope"]}}, "spec.defaultRoles.clients.app"),
    ],
)
def test_a_role_out_of_reach_or_missing_writes_nothing_and_names_the_field(
    declared: dict[str, Any], field: str
) -> None:
    plan = rd.plan_default_roles(declared, held(KEYCLOAK_DEFAULT), VIEW)
    assert plan.changes == [] and plan.problem is not None and field in plan.problem.message


def test_only_the_realms_own_and_the_built_in_realm_roles_are_allowed() -> None:
    assert rd.allowed_realm_roles(["member"]) == {"member", "offline_access", "uma_authorization"}


every_role = sorted({*VIEW.realm_roles.values(), *(i for _, r in VIEW.clients.values() for i in r.values())})


@given(
    st.lists(st.sampled_from(sorted(VIEW.realm_roles)), unique=True),
    st.dictionaries(
        st.sampled_from(sorted(VIEW.clients)),
        st.lists(
            st.sampled_from(["reader", "writer", "view-profile", "manage-account"]), unique=True, min_size=1
        ),
    ),
    st.sets(st.sampled_from(every_role)),
)
def test_default_roles_converge_from_any_held_set(
    realm: list[str], clients: dict[str, list[str]], start: set[str]
) -> None:
    clients = {c: [r for r in roles if r in VIEW.clients[c][1]] for c, roles in clients.items()}
    s = spec(roles=[{"name": "member"}], defaultRoles={"realm": realm, "clients": clients})
    declared = rd.defaults_content(s)["defaultRoles"]
    plan = rd.plan_default_roles(declared, held(start), VIEW)
    assert plan.problem is None
    after = apply_roles(start, plan)
    second = rd.plan_default_roles(declared, held(after), VIEW)
    assert second.changes == []


# --- default groups ----------------------------------------------------------------------------------------


def test_default_groups_are_the_declared_ready_groups_by_id_and_a_hand_added_one_goes() -> None:
    plan = rd.plan_default_groups(["staff"], {"staff": "g-1"}, [{"id": "g-9", "name": "x", "path": "/x"}])
    assert (plan.add, plan.remove, plan.labels) == (["g-1"], ["g-9"], ["+staff", "-/x"])
    assert (
        rd.plan_default_groups(["staff"], {"staff": "g-1"}, [{"id": "g-1", "path": "/staff"}])
        == rd.GroupPlan()
    )


def test_a_group_not_ready_holds_the_default_groups_and_the_realm_waits_naming_it() -> None:
    plan = rd.plan_default_groups(["staff", "late"], {"staff": "g-1"}, [{"id": "g-9"}])
    assert plan.add == plan.remove == []
    assert plan.problem is not None and plan.problem.phase == "Pending"
    assert "spec.defaultGroups" in plan.problem.message and "late" in plan.problem.message


@given(
    st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True),
    st.sets(st.sampled_from(["g-a", "g-b", "g-c", "g-d", "g-x"])),
)
def test_default_groups_converge(declared: list[str], start: set[str]) -> None:
    ready = {n: f"g-{n}" for n in "abcd"}
    observed = [{"id": i, "path": f"/{i}"} for i in sorted(start)]
    plan = rd.plan_default_groups(declared, ready, observed)
    after = (start - set(plan.remove)) | set(plan.add)
    assert after == {ready[n] for n in declared}
    assert rd.plan_default_groups(declared, ready, [{"id": i} for i in after]) == rd.GroupPlan()


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
