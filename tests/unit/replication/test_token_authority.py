"""The token authority (token_authority.py): what a team may make appear in a token, asked by every kind.

The examples pin each rule and its message; the properties hold every kind's entry point (client and
client-scope mappers, identity-provider mappers, groups' realm and client roles, service-account roles,
the realm's default roles and groups) to one model of what Keycloak puts into a token, written here
independently of the authority: whatever a team without a grant declares, what the operator would write
gives its tokens no role, audience, reserved claim or group beyond its own."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keycloak_operator.core.replication import default_groups as dg
from keycloak_operator.core.replication import group as gr
from keycloak_operator.core.replication import idp_mapper_rule as idp_rule
from keycloak_operator.core.replication import realm_defaults as rd
from keycloak_operator.core.replication import service_account as sa
from keycloak_operator.core.replication import token_authority as ta
from keycloak_operator.core.replication import token_mappers as tm
from keycloak_operator.core.replication import token_reading as tr
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.sync import Resource, Verdict
from keycloak_operator.kernel import names

NS, OTHER = "team-a", "team-b"
GRANTED_BY = "shop/main"
REALM_ROLES: dict[str, Mapping[str, Any]] = {
    "plain": {"id": "r1", "composite": False},
    "boss": {"id": "r2", "composite": True},
    "vague": {"id": "r3"},  # composite not said: counts as composite (fail-closed)
    "default-roles-main": {"id": "r4", "composite": True},
    "a.b": {"id": "r5", "composite": False},  # a realm role whose name reads as a client role too
}
CLIENTS = {
    "realm-management": ("c1", None),
    "app-a": ("c2", NS),
    "app-b": ("c3", OTHER),
    "app-a.sub": ("c4", OTHER),  # another team's client whose clientId starts with ours
    "by-hand": ("c5", None),
    "a": ("c6", OTHER),
}
VIEW = ta.RealmView("main", REALM_ROLES, CLIENTS)
GROUPS = {"/a-team": NS, "/b-team": OTHER, "/by-hand": None}


def authority(*grants: ta.Grant, ns: str = NS) -> ta.Authority:
    return ta.Authority(ns, grants, GRANTED_BY, VIEW, GROUPS)


def mapper(kind: str, name: str = "m", **config: str) -> dict[str, Any]:
    return {
        "name": name,
        "protocolMapper": kind,
        "config": {k.replace("_", "."): v for k, v in config.items()},
    }


def judge(m: Mapping[str, Any], *grants: ta.Grant) -> Any:
    return tm.judge_oidc_mapper(authority(*grants), m, "spec.protocolMappers[m]")


# --- examples -----------------------------------------------------------------------------------------------


def test_finding_one_realm_admin_another_teams_role_and_audience_are_refused_naming_field_and_grant() -> None:
    admin = judge(mapper(tm.HARDCODED_ROLE, role="realm-management.realm-admin"))
    assert admin.phase == "Forbidden" and admin.reason == ta.NOT_GRANTED and not admin.revocable
    assert admin.message.startswith(
        "spec.protocolMappers[m].config.role: role 'realm-admin' of client 'realm-management' not granted "
        f"to namespace {NS} by KeycloakRealm {GRANTED_BY}"
    )
    assert "{namespace: team-a, clientId: realm-management, roles: [realm-admin]}" in admin.message
    write = judge(mapper(tm.HARDCODED_ROLE, role="app-b.write"))
    assert write.phase == "Forbidden" and "client 'app-b'" in write.message
    aud = judge(mapper(tm.AUDIENCE, included_client_audience="app-b"))
    assert aud.phase == "Forbidden" and "config.included.client.audience: audience 'app-b'" in aud.message


def test_with_the_realm_owners_grant_the_same_mappers_are_allowed() -> None:
    grant = ta.Grant(NS, "app-b", frozenset({"write"}))
    assert judge(mapper(tm.HARDCODED_ROLE, role="app-b.write"), grant) is None
    assert judge(mapper(tm.AUDIENCE, included_client_audience="app-b"), grant) is None  # any role of it
    rm = ta.Grant(NS, "realm-management", frozenset({"view-users"}))
    assert judge(mapper(tm.HARDCODED_ROLE, role="realm-management.view-users"), rm) is None
    assert judge(mapper(tm.HARDCODED_ROLE, role="realm-management.realm-admin"), rm) is not None
    # A grant to someone else, or of another role, opens nothing.
    assert judge(
        mapper(tm.HARDCODED_ROLE, role="app-b.write"), ta.Grant(OTHER, "app-b", frozenset({"write"}))
    )
    assert judge(mapper(tm.HARDCODED_ROLE, role="app-b.write"), ta.Grant(NS, "app-b", frozenset({"read"})))


def test_own_clients_roles_and_audiences_and_plain_realm_roles_need_no_grant() -> None:
    assert judge(mapper(tm.HARDCODED_ROLE, role="app-a.write")) is None
    assert judge(mapper(tm.HARDCODED_ROLE, role="plain")) is None
    assert judge(mapper(tm.HARDCODED_ROLE, role="default-roles-main")) is None
    assert judge(mapper(tm.AUDIENCE, included_client_audience="app-a")) is None
    assert judge(mapper(tm.AUDIENCE, included_custom_audience="https://api.team-a.example")) is None
    assert judge(mapper("oidc-hardcoded-claim-mapper", claim_name="team", claim_value="a")) is None


@pytest.mark.parametrize("role", ["boss", "vague"])
def test_a_composite_realm_role_needs_a_grant_naming_no_client(role: str) -> None:
    found = judge(mapper(tm.HARDCODED_ROLE, role=role))
    assert found.phase == "Forbidden" and f"composite realm role {role!r}" in found.message
    assert judge(mapper(tm.HARDCODED_ROLE, role=role), ta.Grant(NS, None, frozenset({role}))) is None


def test_every_reading_of_a_dotted_role_is_judged() -> None:
    # `app-a.sub.x` is our client's role `sub.x`, or app-a.sub's (another team's) role `x`: refused.
    found = judge(mapper(tm.HARDCODED_ROLE, role="app-a.sub.x"))
    assert found.phase == "Forbidden" and "client 'app-a.sub'" in found.message
    # `a.b` is a plain realm role and client `a`'s role `b` (another team's): refused.
    assert judge(mapper(tm.HARDCODED_ROLE, role="a.b")).phase == "Forbidden"


def test_a_role_nobody_has_waits_and_a_forged_role_name_is_refused() -> None:
    missing = judge(mapper(tm.HARDCODED_ROLE, role="ghost"))
    assert missing.phase == "Pending" and missing.reason == ta.NOT_FOUND
    forged = judge(mapper(tm.ROLE_NAME, role="app-a.write", new_role_name="ghost.write"))
    assert forged.phase == "Forbidden" and "config.new.role.name" in forged.message
    renamed = judge(mapper(tm.ROLE_NAME, role="app-a.write", new_role_name="app-b.write"))
    assert renamed.phase == "Forbidden" and "client 'app-b'" in renamed.message
    assert judge(mapper(tm.ROLE_NAME, role="app-a.write", new_role_name="app-a.admin")) is None


def test_a_custom_audience_naming_another_teams_client_is_that_clients_audience() -> None:
    assert judge(mapper(tm.AUDIENCE, included_custom_audience="app-b")).phase == "Forbidden"
    missing = judge(mapper(tm.AUDIENCE, included_client_audience="nobody"))
    assert missing.phase == "Pending"


@pytest.mark.parametrize(
    "claim",
    [
        "sub",
        "email",
        "preferred_username",
        "azp",
        "realm_access",
        "resource_access.app-b.roles",
        "groups",
        "aud",
    ],
)
def test_a_reserved_claim_needs_a_claims_grant_whichever_mapper_writes_it(claim: str) -> None:
    top = claim.split(".")[0]
    for kind in (
        "oidc-hardcoded-claim-mapper",
        "oidc-usermodel-attribute-mapper",
        "oidc-group-membership-mapper",
    ):
        found = judge(mapper(kind, claim_name=claim, claim_value="x"))
        assert found.phase == "Forbidden" and f"reserved claim {top!r}" in found.message
        assert "config.claim.name" in found.message and f"claims: [{top}]" in found.message
        assert (
            judge(mapper(kind, claim_name=claim), ta.Grant(NS, None, frozenset(), frozenset({top}))) is None
        )


def test_role_mappers_without_a_claim_name_write_where_keycloaks_roles_scope_does() -> None:
    assert judge(mapper("oidc-usermodel-realm-role-mapper")).phase == "Forbidden"
    assert judge(mapper("oidc-usermodel-client-role-mapper")).phase == "Forbidden"
    assert judge(mapper("oidc-usermodel-client-role-mapper", claim_name="my_roles")) is None


def test_a_client_id_placeholder_is_judged_as_the_client_id_keycloak_puts_there() -> None:
    """Review finding: a client of the team named `resource_access` makes `${client_id}.payments.roles`
    Keycloak's own `resource_access.payments.roles`."""
    role_mapper = "oidc-usermodel-client-role-mapper"
    forged = mapper(
        role_mapper,
        claim_name="${client_id}.app-b.roles",
        usermodel_clientRoleMapping_clientId="resource_access",
    )
    found = judge(forged)
    assert found.phase == "Forbidden" and "reserved claim 'resource_access'" in found.message
    unnamed = judge(mapper(role_mapper, claim_name="${client_id}.roles"))
    assert unnamed.phase == "Forbidden" and "names none" in unnamed.message
    # A dotted clientId is one component (Keycloak escapes its dots); a placeholder below the top is fine.
    assert (
        judge(
            mapper(role_mapper, claim_name="${client_id}.roles", usermodel_clientRoleMapping_clientId="sub.x")
        )
        is None
    )
    assert judge(mapper(role_mapper, claim_name="mine.${client_id}.roles")) is None


def test_a_hardcoded_role_is_written_as_keycloak_parses_it_at_the_last_dot() -> None:
    """Review finding: `app-a.x.admin` is written as client `app-a.x`'s role, and a realm role named
    `payments.admin` as client `payments`' role, whether or not that client exists."""
    found = judge(mapper(tm.HARDCODED_ROLE, role="app-a.x.admin"))
    assert found.phase == "Forbidden" and "no client 'app-a.x' in the realm" in found.message
    realm_role = ta.Authority(
        NS, (), GRANTED_BY, ta.RealmView("main", {"payments.admin": {"composite": False}}, {})
    )
    assert (
        tm.judge_oidc_mapper(realm_role, mapper(tm.HARDCODED_ROLE, role="payments.admin"), "w").phase
        == "Forbidden"
    )
    assert judge(mapper(tm.HARDCODED_ROLE, role="app-a.admin")) is None


def test_a_grant_of_claims_alone_opens_no_audience() -> None:
    claims_only = ta.Grant(NS, "app-b", frozenset(), frozenset({"email"}))
    assert judge(mapper(tm.AUDIENCE, included_client_audience="app-b"), claims_only).phase == "Forbidden"


@pytest.mark.parametrize(
    ("path", "top"),
    [
        ("sub", "sub"),
        ("realm_access.roles", "realm_access"),
        (r"realm\.access", "realm.access"),
        (r"a\\b.c", "a\\b"),
        (r"s\ub", "sub"),  # any character may be escaped
        (".sub", ".sub"),  # no component before a leading '.'
        ("trailing\\", "trailing\\"),
        ("", ""),
    ],
)
def test_the_top_claim_is_read_as_keycloak_nests_claim_paths(path: str, top: str) -> None:
    assert tr.top_claim(path) == top


# Keycloak's own splitting (JsonUtils.splitClaimPath), restated with its regular expressions.
_COMPONENT = re.compile(r"^((\\.|[^\\.])+?)\.")
_ESCAPED = re.compile(r"\\(.)")


def keycloak_top_claim(path: str) -> str:
    m = _COMPONENT.match(path)
    return _ESCAPED.sub(r"\1", m.group(1) if m else path)


@given(st.text(alphabet="su.\\b", max_size=12))
def test_the_top_claim_agrees_with_keycloaks_splitting(path: str) -> None:
    assert tr.top_claim(path) == keycloak_top_claim(path)


def test_groups_only_the_namespaces_own() -> None:
    assert authority().judge_group("/a-team", "w") is None
    for path in ("/b-team", "/by-hand", "/nowhere"):
        found = authority().judge_group(path, "w")
        assert found.phase == "Forbidden" and found.reason == ta.GROUP_NOT_OWNED


def test_allowed_mappers_leaves_refused_ones_out_and_says_so_once() -> None:
    content = {
        "protocol": "openid-connect",
        tm.MAPPERS_KEY: [
            mapper(tm.HARDCODED_ROLE, "bad", role="app-b.write"),
            mapper("oidc-hardcoded-claim-mapper", "ok", claim_name="team"),
            mapper(tm.HARDCODED_ROLE, "worse", role="realm-management.realm-admin"),
        ],
    }
    kept, refused = tm.allowed_mappers(content, authority())
    assert [m["name"] for m in kept[tm.MAPPERS_KEY]] == ["ok"] and list(refused) == ["bad", "worse"]
    one = tm.one_verdict(refused, "client")
    assert one is not None and one.message.startswith("spec.protocolMappers[bad]")
    assert one.message.endswith("(and 1 more mapper); the rest of the client was written")
    saml = {**content, "protocol": "saml"}  # a SAML assertion reaches the client's own service provider only
    assert tm.allowed_mappers(saml, authority()) == (saml, {})


def test_held_mappers_the_operator_wrote_and_the_authority_refuses_are_found() -> None:
    held = [
        {"id": "1", **mapper(tm.HARDCODED_ROLE, "mine", role="app-b.write", kcop="h")},
        {"id": "2", **mapper(tm.HARDCODED_ROLE, "by-hand", role="app-b.write")},  # no hash: not ours
        {"id": "3", **mapper(tm.HARDCODED_ROLE, "fine", role="app-a.write", kcop="h")},
        "junk",
    ]
    assert [m["id"] for m in tm.held_refusals(authority(), held, "kcop")] == ["1"]
    assert tm.holds_judged(held, "kcop") and not tm.holds_judged(held[1:2], "kcop")


# --- one model of what reaches a token, and every kind held to it ----------------------------------------


def _effects_of_role(text: str, *, forged: bool = False) -> set[tuple[str, ...]]:
    """A role a user is given (every reading Keycloak's lookups may take, of existing clients); `forged`: a
    name written into the token as KeycloakModelUtils.parseRole reads it, at the last '.', whether or not
    that client exists."""
    if forged:
        prefix, dot, role = text.rpartition(".")
        return {("client-role", prefix, role)} if dot else {("realm-role", text)}
    out: set[tuple[str, ...]] = set()
    if text in REALM_ROLES:
        out.add(("realm-role", text))
    for i, ch in enumerate(text):
        if ch == "." and text[:i] in CLIENTS:
            out.add(("client-role", text[:i], text[i + 1 :]))
    return out


def oidc_effects(m: Mapping[str, Any]) -> set[tuple[str, ...]]:
    kind, config = m["protocolMapper"], m["config"]
    out: set[tuple[str, ...]] = set()
    claim = config.get("claim.name") or {
        "oidc-usermodel-realm-role-mapper": "realm_access",
        "oidc-usermodel-client-role-mapper": "resource_access",
    }.get(kind)
    if claim and kind == "oidc-usermodel-client-role-mapper" and "${client_id}" in claim:
        # Keycloak puts each mapped client's id there, dots escaped: the one named, else any of the realm's
        named = config.get("usermodel.clientRoleMapping.clientId")
        for cid in [named] if named else [*CLIENTS, "resource_access", "sub"]:
            out.add(("claim", keycloak_top_claim(claim.replace("${client_id}", cid.replace(".", "\\.")))))
    elif claim:
        out.add(("claim", keycloak_top_claim(claim)))
    if kind == "oidc-hardcoded-role-mapper":
        out |= _effects_of_role(config.get("role", ""), forged=True)
    if kind == "oidc-role-name-mapper" and config.get("new.role.name"):
        out |= _effects_of_role(config["new.role.name"], forged=True)
    if kind == "oidc-audience-mapper":
        for key in ("included.client.audience", "included.custom.audience"):
            if config.get(key):
                out.add(("aud", config[key]))
    return out


def beyond_own(effects: Iterable[tuple[str, ...]], ns: str = NS) -> list[tuple[str, ...]]:
    """What a team without any grant must never reach."""
    bad = []
    for e in effects:
        if e[0] == "client-role" and CLIENTS.get(e[1], ("", None))[1] != ns:  # no such client: nobody's
            bad.append(e)
        elif e[0] == "realm-role" and e[1] in REALM_ROLES and REALM_ROLES[e[1]].get("composite") is not False:
            if e[1] != "default-roles-main":
                bad.append(e)
        elif (
            (e[0] == "aud" and e[1] in CLIENTS and CLIENTS[e[1]][1] != ns)
            or (e[0] == "claim" and e[1] in tr.RESERVED_CLAIMS)
            or (e[0] == "group" and GROUPS.get(e[1]) != ns)
        ):
            bad.append(e)
    return bad


ROLE_TEXTS = st.one_of(
    st.sampled_from(
        [
            *REALM_ROLES,
            "app-a.write",
            "app-b.write",
            "realm-management.realm-admin",
            "app-a.sub.x",
            "by-hand.x",
            "a.b",
            "ghost",
            "ghost.x",
        ]
    ),
    st.builds(
        lambda c, r: f"{c}.{r}",
        st.sampled_from([*CLIENTS, "ghost"]),
        st.sampled_from(["x", "sub.x", "write"]),
    ),
)
CLAIMS = st.one_of(
    st.sampled_from(sorted(tr.RESERVED_CLAIMS)),
    st.sampled_from(["team", "tier", "resource_access.app-b.roles", r"realm\.access", "sub.x", r"s\ub"]),
    st.sampled_from(
        ["${client_id}.roles", "${client_id}.app-b.roles", "x.${client_id}.roles", "${client_id}"]
    ),
)
AUDIENCES = st.sampled_from([*CLIENTS, "ghost", "https://api.example"])
OIDC_MAPPER = st.one_of(
    st.builds(lambda r: mapper(tm.HARDCODED_ROLE, role=r), ROLE_TEXTS),
    st.builds(lambda r, t: mapper(tm.ROLE_NAME, role=r, new_role_name=t), ROLE_TEXTS, ROLE_TEXTS),
    st.builds(lambda a: mapper(tm.AUDIENCE, included_client_audience=a), AUDIENCES),
    st.builds(lambda a: mapper(tm.AUDIENCE, included_custom_audience=a), AUDIENCES),
    st.builds(
        lambda k, c: mapper(k, claim_name=c, claim_value="x"),
        st.sampled_from(
            [
                "oidc-hardcoded-claim-mapper",
                "oidc-usermodel-attribute-mapper",
                "oidc-usermodel-realm-role-mapper",
                "oidc-usermodel-client-role-mapper",
                "oidc-group-membership-mapper",
            ]
        ),
        CLAIMS,
    ),
    st.sampled_from(
        [mapper("oidc-usermodel-realm-role-mapper"), mapper("oidc-usermodel-client-role-mapper")]
    ),
    st.builds(
        lambda c, cid: mapper(
            "oidc-usermodel-client-role-mapper", claim_name=c, usermodel_clientRoleMapping_clientId=cid
        ),
        CLAIMS,
        st.sampled_from([*CLIENTS, "resource_access", "a.b"]),
    ),
)


@settings(max_examples=400)
@given(st.lists(OIDC_MAPPER, max_size=6))
def test_client_and_scope_mappers_a_team_writes_without_a_grant_stay_within_its_own(
    mappers: list[Any],
) -> None:
    declared = [{**m, "name": f"m{i}"} for i, m in enumerate(mappers)]
    content = {"protocol": "openid-connect", tm.MAPPERS_KEY: declared}
    kept, refused = tm.allowed_mappers(content, authority())
    written = set().union(*(oidc_effects(m) for m in kept[tm.MAPPERS_KEY]))
    assert beyond_own(written) == []
    assert {m["name"] for m in kept[tm.MAPPERS_KEY]} | set(refused) == {m["name"] for m in declared}


IDP_MAPPER = st.one_of(
    st.builds(
        lambda r: {"identityProviderMapper": "oidc-hardcoded-role-idp-mapper", "config": {"role": r}},
        ROLE_TEXTS,
    ),
    st.builds(
        lambda r: {"identityProviderMapper": "oidc-role-idp-mapper", "config": {"role": r, "claim": "x"}},
        ROLE_TEXTS,
    ),
    st.builds(
        lambda g: {"identityProviderMapper": "oidc-hardcoded-group-idp-mapper", "config": {"group": g}},
        st.sampled_from([*GROUPS, "/nowhere"]),
    ),
)


def idp_effects(m: Mapping[str, Any]) -> set[tuple[str, ...]]:
    if "group" in m["config"]:
        return {("group", m["config"]["group"])}
    return _effects_of_role(m["config"]["role"])


@settings(max_examples=300)
@given(st.lists(IDP_MAPPER, max_size=5), st.sampled_from([NS, OTHER]))
def test_identity_provider_mappers_without_a_grant_stay_within_the_providers_namespace(
    mappers: list[Any], ns: str
) -> None:
    declared = [{**m, "name": f"m{i}"} for i, m in enumerate(mappers)]
    refused = idp_rule.refusals({"mappers": declared}, ns, (), GRANTED_BY, VIEW, GROUPS)
    written = set().union(*(idp_effects(m) for m in declared if m["name"] not in refused))
    assert beyond_own(written, ns) == []


def _group(realm_roles: list[str], client_roles: Mapping[str, list[str]] | None = None) -> Resource:
    key = ObjectKey(names.GROUP_KIND, NS, "g")
    content = {
        "name": "g",
        "attributes": {},
        gr.REALM_ROLES: realm_roles,
        gr.CLIENT_ROLES: client_roles or {},
    }
    created = datetime(2026, 1, 1, tzinfo=UTC)
    return Resource(key, "g", content, created, parent=ObjectKey(names.REALM_KIND, "shop", "main"))


CLIENT_ROLE_SETS = st.dictionaries(
    st.sampled_from(sorted([*CLIENTS, "ghost"])),
    st.lists(st.sampled_from(["x", "write"]), min_size=1, max_size=2, unique=True),
    max_size=3,
)


@settings(max_examples=300)
@given(st.lists(st.sampled_from(sorted(REALM_ROLES)), max_size=4, unique=True), CLIENT_ROLE_SETS)
def test_a_groups_roles_without_a_grant_stay_within_its_own(
    roles: list[str], clients: dict[str, list[str]]
) -> None:
    everything = {cid: frozenset({"x", "write"}) for cid in CLIENTS}
    declared = {NS: frozenset({"app-a", "ghost"})}  # a client of its own not in Keycloak yet: it waits
    available = gr.Available(frozenset(REALM_ROLES), everything, declared, lambda ns: authority(ns=ns))
    [planned] = gr.resolve_tree([_group(roles, clients)], available)
    if planned.problem is None:  # written as declared
        effects = {("realm-role", r) for r in roles}
        effects |= {("client-role", c, r) for c, rs in clients.items() for r in rs}
        assert beyond_own(effects) == []
    else:
        assert planned.problem.phase in ("Forbidden", "Pending")
        assert "spec.realmRoles" in planned.problem.message or "spec.clientRoles." in planned.problem.message
    # What such a group holds already (written by hand, or before a grant was withdrawn) is cut back too.
    held = {gr.REALM_ROLES: roles, gr.CLIENT_ROLES: clients}
    gone = {(w.client, r) for w in gr.refused_held(held, authority()) for r in w.roles}
    kept = {("realm-role", r) for r in roles if (None, r) not in gone}
    kept |= {("client-role", c, r) for c, rs in clients.items() for r in rs if (c, r) not in gone}
    assert beyond_own(kept) == []


@settings(max_examples=300)
@given(
    st.lists(st.sampled_from(sorted(REALM_ROLES)), max_size=3, unique=True),
    CLIENT_ROLE_SETS,
    st.lists(
        st.tuples(st.sampled_from([None, *sorted(CLIENTS)]), st.sampled_from(["x", "write", *REALM_ROLES])),
        max_size=3,
    ),
)
def test_default_roles_the_realm_owner_declares_without_a_grant_stay_within_its_own(
    realm: list[str], clients: dict[str, list[str]], includes: list[tuple[str | None, str]]
) -> None:
    """The realm's own namespace (NS here) gives every user what its default role includes, and what
    those roles include in turn: app-a's `x` is composite and includes `includes`."""
    roles = {cid: {r: f"{cid}-{r}" for r in ("x", "write")} for cid in CLIENTS}
    inner = [
        {"id": f"i{i}", "name": r, "composite": False, "clientRole": c is not None}
        | ({"containerId": CLIENTS[c][0]} if c is not None else {})
        for i, (c, r) in enumerate(includes)
    ]
    view = rd.RoleView(authority(), roles, frozenset({"app-a-x"}))
    plan = rd.plan_default_roles({"realm": realm, "clients": clients}, [], view, {"app-a-x": inner})
    added: set[tuple[str, ...]] = set()
    by_id = {i: (cid, n) for cid, rs in roles.items() for n, i in rs.items()}
    for change in plan.changes:
        assert change.operation == "add"
        for r in change.roles:
            if r["id"] in by_id:
                added.add(("client-role", *by_id[r["id"]]))
            else:
                added.add(("realm-role", r["name"]))
            if r["id"] == "app-a-x":
                added |= {("realm-role", r) if c is None else ("client-role", c, r) for c, r in includes}
    assert beyond_own(added) == [] and ("realm-role", "default-roles-main") not in added


@settings(max_examples=200)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(sorted(REALM_ROLES)), max_size=2, unique=True),
            CLIENT_ROLE_SETS,
            st.sampled_from(["", "g0", "g1", "g2"]),
        ),
        min_size=1,
        max_size=3,
    ),
    st.lists(st.sampled_from(["g0", "g1", "g2"]), max_size=3, unique=True),
)
def test_default_groups_the_realm_owner_declares_without_a_grant_stay_within_its_own(
    groups: list[tuple[list[str], dict[str, list[str]], str]], declared: list[str]
) -> None:
    """Every user joins the default groups, and holds what they and the groups above them map."""
    children = []
    for i, (realm, clients, parent) in enumerate(groups):
        key = ObjectKey(names.GROUP_KIND, NS, f"g{i}")
        content = {"name": f"g{i}", "parent": parent, gr.REALM_ROLES: realm, gr.CLIENT_ROLES: clients}
        children.append(Resource(key, f"g{i}", content, datetime(2026, 1, 1, tzinfo=UTC)))
    ready = {c.key: Verdict("Ready", "Synced", "") for c in children}
    ids = {c.key: f"id-{c.key.name}" for c in children}
    found = dg.namespace_groups(authority(), children, ready, ids, declared)
    plan = dg.plan_default_groups(declared, found, [])
    by_id = {f"id-{c.key.name}": c for c in children}
    held: set[tuple[str, ...]] = set()
    for gid in plan.add:
        current = by_id[gid].key.name
        for _ in range(len(children) + 1):  # up the tree, as Keycloak's members inherit
            g = next((c for c in children if c.key.name == current), None)
            if g is None:
                break
            held |= {("realm-role", r) for r in g.content[gr.REALM_ROLES]}
            held |= {("client-role", c, r) for c, rs in g.content[gr.CLIENT_ROLES].items() for r in rs}
            current = g.content["parent"]
    assert beyond_own(held) == [] and ("realm-role", "default-roles-main") not in held


def test_a_group_holding_a_composite_role_without_a_grant_loses_it_whatever_its_verdict() -> None:
    held = {gr.REALM_ROLES: ["plain", "boss", "vague"]}
    [write] = gr.refused_held(held, authority())
    assert write.operation == "remove" and write.roles == ("boss", "vague")
    assert gr.refused_held(held, authority(ta.Grant(NS, None, frozenset({"boss", "vague"})))) == []


@settings(max_examples=300)
@given(
    st.lists(st.sampled_from(sorted(REALM_ROLES)), max_size=3, unique=True),
    st.dictionaries(
        st.sampled_from(sorted(CLIENTS)),
        st.lists(st.sampled_from(["x", "write"]), max_size=2, unique=True),
        max_size=3,
    ),
)
def test_service_account_roles_without_a_grant_stay_within_its_own(
    realm: list[str], clients: dict[str, list[str]]
) -> None:
    roles = {cid: {r: f"{cid}-{r}" for r in ("x", "write")} for cid in CLIENTS}
    view = ta.RealmView("main", REALM_ROLES, CLIENTS, roles)
    plan = sa.plan_role_set(
        {"realm": realm, "clients": clients},
        where="spec.serviceAccountRoles",
        namespace=NS,
        grants=(),
        granted_by=GRANTED_BY,
        view=view,
        held=sa.Held(),
    )
    added = {
        ("realm-role", n) if w.client_id is None else ("client-role", w.client_id, n)
        for w in plan.writes
        if w.operation == "add"
        for _, n in w.roles
    }
    assert beyond_own(added) == []


def test_the_realm_is_read_only_when_a_declared_or_operator_written_mapper_names_a_role_or_audience() -> None:
    claim = {tm.MAPPERS_KEY: [mapper("oidc-hardcoded-claim-mapper", claim_name="team")]}
    role = {tm.MAPPERS_KEY: [mapper(tm.HARDCODED_ROLE, role="app-a.x")]}
    ours = {tm.MAPPERS_KEY: [mapper(tm.AUDIENCE, included_client_audience="app-b", kcop="h")]}
    by_hand = {tm.MAPPERS_KEY: [mapper(tm.AUDIENCE, included_client_audience="app-b")]}
    assert not tm.must_read_realm([claim], [claim, by_hand, "junk"], "kcop")
    assert tm.must_read_realm([claim, role], [], "kcop")
    assert tm.must_read_realm([], [ours], "kcop")
    assert not tm.must_read_realm([{**role, "protocol": "saml"}], [], "kcop")
