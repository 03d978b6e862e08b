"""The realm planner's settings blocks (SMTP, themes, internationalisation, password policy, brute force,
events, admin events): create, update, drift repair, a steady state, the SMTP password's way in and out,
and hostile input refused by the model."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core.replication import ObjectKey, marked
from keycloak_operator.core.replication import realm as realm_kind
from keycloak_operator.core.replication import realm_settings as rs
from keycloak_operator.core.replication.marker import content_hash
from keycloak_operator.core.replication.plan import Create, Update
from keycloak_operator.core.replication.sync import Resource
from keycloak_operator.kernel import names
from keycloak_operator.models.realm import KeycloakRealmSpec
from keycloak_operator.models.realm_settings import PasswordPolicy

KEY = ObjectKey(names.REALM_KIND, "team", "main")
SERVER = {"keycloak": {"name": "kc"}}
PASSWORD = "hunter2-very-secret"
SMTP = {
    "host": "smtp.example.com",
    "port": 587,
    "from": "sso@example.com",
    "fromDisplayName": "Team SSO",
    "starttls": True,
    "auth": {"user": "mailer", "passwordSecret": {"name": "smtp", "key": "password"}},
}
EVERYTHING: dict[str, Any] = {
    "smtp": SMTP,
    "themes": {"login": "keycloak.v2", "email": "keycloak"},
    "internationalization": {"enabled": True, "supportedLocales": ["en", "de"], "defaultLocale": "de"},
    "passwordPolicy": [{"name": "length", "value": "12"}, {"name": "digits", "value": "1"}],
    "bruteForceProtection": {"enabled": True, "failureFactor": 5},
    "events": {"enabled": True, "enabledTypes": ["LOGIN_ERROR", "LOGIN"]},
    "adminEvents": {"enabled": True, "detailsEnabled": True},
}


def spec(**fields: Any) -> KeycloakRealmSpec:
    return KeycloakRealmSpec.model_validate({"server": SERVER, **fields})


def secret(password: str = PASSWORD, version: str = "7") -> dict[str, Any]:
    return {
        "metadata": {"name": "smtp", "namespace": "team", "uid": "u-1", "resourceVersion": version},
        "data": {"password": base64.b64encode(password.encode()).decode()},
    }


def resource(
    fields: dict[str, Any], found: dict[str, Any] | None = None, **flags: Any
) -> tuple[Resource, str | None]:
    s = spec(**fields)
    r = Resource(KEY, "main", realm_kind.realm_content(s, "main"), datetime(2026, 1, 1, tzinfo=UTC), **flags)
    ref = rs.password_ref(s)
    if ref is None:
        return r, None
    return realm_kind.with_smtp_secret(r, ref, found)


def as_keycloak_returns(content: dict[str, Any], h: str) -> dict[str, Any]:
    """The realm as Keycloak 26.7.3 returns it after a write of `content` (seen on the real server): the
    SMTP password masked, empty values and eventsExpiration 0 left out, sets in its own order."""
    body = realm_kind.update_body(Update(KEY, "main", content, h, ""), PASSWORD)
    out = {**body, "attributes": marked(content, KEY)["attributes"] | {"kcop.dev.content-hash": h}}
    if "smtpServer" in out and "password" in out["smtpServer"]:
        out["smtpServer"] = {**out["smtpServer"], "password": rs.MASKED}
    for field in ("passwordPolicy", "supportedLocales", "eventsExpiration"):
        if out.get(field) in ("", [], 0):
            del out[field]
    for field in ("supportedLocales", "enabledEventTypes"):
        if field in out:
            out[field] = list(reversed(out[field]))
    return out


def plan(r: Resource, observed: list[dict[str, Any]]) -> Any:
    return realm_kind.plan_realms([r], [], observed)


# --- create, update, drift, steady state -------------------------------------------------------------------


def test_a_new_realm_carries_every_declared_setting_and_the_password_only_in_its_body() -> None:
    r, password = resource(EVERYTHING, secret())
    scope = plan(r, [])
    [create] = scope.plan.creates
    body = realm_kind.create_body(create, password)
    assert body["smtpServer"] == {
        "host": "smtp.example.com",
        "port": "587",
        "from": "sso@example.com",
        "fromDisplayName": "Team SSO",
        "ssl": "false",
        "starttls": "true",
        "auth": "true",
        "user": "mailer",
        "password": PASSWORD,
    }
    assert body["loginTheme"] == "keycloak.v2" and body["emailTheme"] == "keycloak"
    assert "accountTheme" not in body and "adminTheme" not in body  # not declared: not managed
    assert body["supportedLocales"] == ["de", "en"] and body["defaultLocale"] == "de"
    assert body["passwordPolicy"] == "length(12) and digits(1)"
    assert body["bruteForceProtected"] is True and body["failureFactor"] == 5
    assert body["waitIncrementSeconds"] == 60 and body["bruteForceStrategy"] == "MULTIPLE"  # Keycloak's
    assert body["eventsEnabled"] is True and body["eventsExpiration"] == 0
    assert body["enabledEventTypes"] == ["LOGIN", "LOGIN_ERROR"] and body["eventsListeners"] == [
        "jboss-logging"
    ]
    assert body["adminEventsEnabled"] is True and body["adminEventsDetailsEnabled"] is True
    assert rs.SMTP_PASSWORD_SOURCE not in body
    assert body["roles"] == {"realm": []}


def test_a_steady_realm_plans_nothing_though_keycloak_masks_omits_and_reorders() -> None:
    r, _ = resource(EVERYTHING, secret())
    observed = as_keycloak_returns(dict(r.content), content_hash(r.content))
    scope = plan(r, [observed])
    assert scope.plan.is_empty() and scope.drift == {}
    # Empty values Keycloak leaves out are in step too.
    bare = {**EVERYTHING, "passwordPolicy": [], "internationalization": {"enabled": False}}
    r, _ = resource(bare, secret())
    observed = as_keycloak_returns(dict(r.content), content_hash(r.content))
    assert "passwordPolicy" not in observed and "supportedLocales" not in observed
    assert plan(r, [observed]).plan.is_empty()


def test_a_changed_setting_is_an_update_with_the_password_in_its_body() -> None:
    old, _ = resource(EVERYTHING, secret())
    observed = as_keycloak_returns(dict(old.content), content_hash(old.content))
    r, password = resource({**EVERYTHING, "bruteForceProtection": {"enabled": False}}, secret())
    [update] = plan(r, [observed]).plan.updates
    body = realm_kind.update_body(update, password)
    assert body["bruteForceProtected"] is False and body["smtpServer"]["password"] == PASSWORD
    assert "roles" not in body and rs.SMTP_PASSWORD_SOURCE not in body


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        ({"failureFactor": 99}, "failureFactor"),
        ({"passwordPolicy": "length(4)"}, "passwordPolicy"),
        ({"passwordPolicy": None}, "passwordPolicy"),
        ({"loginTheme": "base"}, "loginTheme"),
        ({"supportedLocales": ["en"]}, "supportedLocales"),
        ({"eventsExpiration": 60}, "eventsExpiration"),
        ({"eventsListeners": ["jboss-logging", "email"]}, "eventsListeners"),
        ({"adminEventsDetailsEnabled": False}, "adminEventsDetailsEnabled"),
        ({"smtpServer": {"host": "evil.example.com"}}, "smtpServer"),
    ],
)
def test_a_hand_edit_of_any_new_field_is_drift_and_repaired(edit: dict[str, Any], field: str) -> None:
    r, password = resource(EVERYTHING, secret())
    observed = as_keycloak_returns(dict(r.content), content_hash(r.content))
    observed.update(edit)
    scope = plan(r, [observed])
    assert scope.drift == {KEY: [field]}
    [update] = scope.plan.updates
    assert realm_kind.update_body(update, password)["smtpServer"]["password"] == PASSWORD


def test_a_removed_smtp_password_is_drift_and_a_hand_set_one_cannot_be_seen() -> None:
    r, _ = resource(EVERYTHING, secret())
    observed = as_keycloak_returns(dict(r.content), content_hash(r.content))
    without = {**observed, "smtpServer": {k: v for k, v in observed["smtpServer"].items() if k != "password"}}
    assert plan(r, [without]).drift == {KEY: ["smtpServer"]}


def test_a_realm_declaring_no_new_block_keeps_the_content_and_hash_it_had() -> None:
    """Upgrading the operator rewrites no realm: an absent block is not managed, so not in the content."""
    r, _ = resource({"displayName": "Team", "roles": [{"name": "a"}]})
    assert set(r.content) == {
        "realm", "enabled", "displayName", "registrationAllowed", "resetPasswordAllowed", "rememberMe",
        "loginWithEmailAllowed", "verifyEmail", "accessTokenLifespan", "ssoSessionIdleTimeout",
        "ssoSessionMaxLifespan", "roles",
    }  # fmt: skip
    observed = {**r.content, "smtpServer": {"host": "by-hand"}, "passwordPolicy": "length(3)"}
    observed["attributes"] = marked(r.content, KEY)["attributes"]
    assert plan(r, [observed]).plan.is_empty()  # settings made by hand are left alone


# --- the SMTP password: in from the realm's Secret, never out ----------------------------------------------


def test_the_password_is_in_no_content_hash_or_status_only_the_secrets_version() -> None:
    r, password = resource(EVERYTHING, secret())
    assert password == PASSWORD
    text = json.dumps(r.content)
    assert PASSWORD not in text and base64.b64encode(PASSWORD.encode()).decode() not in text
    assert r.content[rs.SMTP_PASSWORD_SOURCE] == "u-1/7"
    assert r.content["smtpServer"]["password"] == rs.MASKED


def test_a_changed_secret_changes_the_hash_and_a_steady_one_does_not() -> None:
    one, _ = resource(EVERYTHING, secret("a", "7"))
    same, _ = resource(EVERYTHING, secret("a", "7"))
    two, _ = resource(EVERYTHING, secret("b", "8"))
    assert content_hash(one.content) == content_hash(same.content) != content_hash(two.content)
    observed = as_keycloak_returns(dict(one.content), content_hash(one.content))
    [update] = plan(two, [observed]).plan.updates
    assert realm_kind.update_body(update, "b")["smtpServer"]["password"] == "b"


def test_the_hash_says_nothing_of_the_value() -> None:
    """Two passwords in Secrets of the same version hash alike: the value is not an input."""
    a, _ = resource(EVERYTHING, secret("a", "7"))
    b, _ = resource(EVERYTHING, secret("b", "7"))
    assert content_hash(a.content) == content_hash(b.content)


@pytest.mark.parametrize(
    ("found", "reason"),
    [
        (None, "SecretNotFound"),
        ({"metadata": {}, "data": {"other": "eA=="}}, "SecretKeyNotFound"),
        ({"metadata": {}, "data": {"password": "!!notbase64"}}, "SecretInvalid"),
    ],
)
def test_a_missing_secret_or_key_holds_the_realm_with_a_condition_naming_the_field(
    found: dict[str, Any] | None, reason: str
) -> None:
    r, password = resource(EVERYTHING, found)
    assert password is None and r.problem is not None and r.problem.reason == reason
    assert "spec.smtp.auth.passwordSecret: Secret team/smtp" in r.problem.message
    scope = plan(r, [])
    assert scope.plan.is_empty() and scope.verdicts[KEY] == r.problem


def test_a_deleting_realm_needs_no_password_and_keeps_no_finalizer_for_one() -> None:
    r, password = resource(EVERYTHING, None, deleting=True)
    assert r.problem is None and password is None
    assert plan(r, []).finalizable == [KEY]


def test_without_a_password_the_body_keeps_the_mask_which_keycloak_reads_as_keep() -> None:
    r, _ = resource(EVERYTHING, secret())
    body = realm_kind.update_body(Update(KEY, "main", r.content, "h", ""), None)
    assert body["smtpServer"]["password"] == rs.MASKED


def test_the_secret_reference_has_no_namespace_to_name() -> None:
    """A `namespace` written into the reference is dropped (the models ignore unknown fields, and the CRD
    prunes them): the Secret is read from the realm's namespace whatever the spec says."""
    ref = {"name": "x", "key": "k", "namespace": "team-b"}
    s = spec(smtp={**SMTP, "auth": {"user": "u", "passwordSecret": ref}})
    assert s.smtp is not None and s.smtp.auth is not None
    assert s.smtp.auth.password_secret.wire() == {"name": "x", "key": "k"}


# --- password policy rendering -----------------------------------------------------------------------------

policy_names = st.sampled_from(PasswordPolicy.model_fields["name"].annotation.__args__)  # type: ignore[union-attr]
policy_values = st.one_of(st.none(), st.from_regex(r"[\x21-\x7e]{1,20}", fullmatch=True))
policy_lists = st.lists(st.tuples(policy_names, policy_values), max_size=18, unique_by=lambda t: t[0])


@given(policy_lists)
def test_rendering_a_valid_policy_list_is_total_deterministic_and_keycloak_parses_it_back(
    items: list[tuple[str, str | None]],
) -> None:
    s = spec(passwordPolicy=[{"name": n, **({"value": v} if v else {})} for n, v in items])
    assert s.password_policy is not None
    text = rs.render_password_policy(s.password_policy)
    assert text == rs.render_password_policy(list(s.password_policy))
    assert "\n" not in text
    # Keycloak's parser: split on " and ", the name before the first "(", the value up to the last char.
    parsed = []
    for part in text.split(" and ") if text else []:
        i = part.find("(")
        parsed.append((part, None) if i < 0 else (part[:i], part[i + 1 : -1]))
    assert parsed == items


def test_the_policy_string_is_keycloaks_form() -> None:
    s = spec(
        passwordPolicy=[
            {"name": "length", "value": "12"},
            {"name": "digits", "value": "1"},
            {"name": "notUsername"},
        ]
    )
    assert s.password_policy is not None
    assert rs.render_password_policy(s.password_policy) == "length(12) and digits(1) and notUsername"
    assert rs.render_password_policy([]) == ""


# --- hostile input -----------------------------------------------------------------------------------------

HOSTILE = [
    {"smtp": {**SMTP, "host": "smtp.example.com\r\nRCPT TO:<x@evil>"}},
    {"smtp": {**SMTP, "host": "a b"}},
    {"smtp": {**SMTP, "host": "x" * 300}},
    {"smtp": {**SMTP, "port": 0}},
    {"smtp": {**SMTP, "port": 70000}},
    {"smtp": {**SMTP, "from": "a@b>\r\nBcc: victim@example.com"}},
    {"smtp": {**SMTP, "from": "no-at-sign"}},
    {"smtp": {**SMTP, "replyTo": "a b@example.com"}},
    {"smtp": {**SMTP, "fromDisplayName": "Team\r\nBcc: victim@example.com"}},
    {"smtp": {**SMTP, "auth": {"user": "u\n", "passwordSecret": {"name": "s", "key": "k"}}}},
    {
        "smtp": {
            **SMTP,
            "auth": {"user": "u", "passwordSecret": {"name": "../../team-b/secrets/x", "key": "k"}},
        }
    },
    {"smtp": {**SMTP, "auth": {"user": "u", "passwordSecret": {"name": "s", "key": "a/b"}}}},
    {"themes": {"login": "../../etc"}},
    {"themes": {"login": "a b"}},
    {"themes": {"admin": "x" * 300}},
    {"internationalization": {"supportedLocales": ["en\n"]}},
    {"internationalization": {"supportedLocales": ["en"], "defaultLocale": "fr"}},
    {"internationalization": {"supportedLocales": ["en"] * 65}},
    {"passwordPolicy": [{"name": "bogus"}]},
    {"passwordPolicy": [{"name": "length", "value": "8) and digits(0"}]},
    {"passwordPolicy": [{"name": "length", "value": "8\n"}]},
    {"passwordPolicy": [{"name": "length", "value": ""}]},
    {"passwordPolicy": [{"name": "length", "value": "8"}, {"name": "length", "value": "9"}]},
    {"passwordPolicy": [{"name": "digits"}] * 33},
    {"bruteForceProtection": {"failureFactor": 0}},
    {"bruteForceProtection": {"waitIncrementSeconds": -1}},
    {"bruteForceProtection": {"maxFailureWaitSeconds": 2**31}},
    {"bruteForceProtection": {"strategy": "RANDOM"}},
    {"events": {"enabledTypes": ["NOPE"]}},
    {"events": {"enabledTypes": ["login"]}},
    {"events": {"listeners": ["a/b"]}},
    {"events": {"listeners": ["x"] * 33}},
    {"events": {"expirationSeconds": 0}},
]


@pytest.mark.parametrize("fields", HOSTILE, ids=[json.dumps(h)[:60] for h in HOSTILE])
def test_hostile_settings_are_refused_by_the_model(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        spec(**fields)


def test_the_full_example_is_valid() -> None:
    assert spec(**EVERYTHING).smtp is not None
    assert realm_kind.create_body(Create(KEY, resource(EVERYTHING, secret())[0].content, "h"), None)
