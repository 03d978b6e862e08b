"""A KeycloakIdentityProvider of providerId saml: its config, drift, mappers, what is refused, and a property:
applying a plan to what Keycloak holds converges, so a second plan over the result is empty."""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core.replication import (
    ObjectKey,
    content_hash,
    idp_mapper_rule,
    idp_mappers,
    idp_secret,
    read_marker,
)
from keycloak_operator.core.replication import identity_provider as idp
from keycloak_operator.core.replication.plan import Create
from keycloak_operator.core.replication.resources import RealmTarget
from keycloak_operator.core.replication.sync import Resource
from keycloak_operator.kernel import names
from keycloak_operator.models.identity_provider import MAPPERS_BY_PROVIDER, KeycloakIdentityProviderSpec
from tests.unit import builders
from tests.unit.replication.test_identity_provider import apply
from tests.unit.replication.test_saml_client import CERT, CERT_BODY, OTHER_CERT, OTHER_CERT_BODY

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REALM = ObjectKey(names.REALM_KIND, "team-a", "main")
SAML = {
    "idpEntityId": "https://idp.example.com",
    "singleSignOnServiceUrl": "https://idp.example.com/sso",
    "signingCertificates": [CERT],
}
USERNAME = {
    "name": "username",
    "identityProviderMapper": "saml-username-idp-mapper",
    "config": {"template": "${ALIAS}.${NAMEID}"},
}
Obj = dict[str, Any]


def k8s(**spec: Any) -> Obj:
    body = {
        "realm": {"name": "main", "namespace": "team-a"},
        "alias": "corp",
        "providerId": "saml",
        "saml": {**SAML, **spec.pop("saml", {})},
        **spec,
    }
    meta = {"namespace": "team-a", "name": "corp", "creationTimestamp": "2026-01-01T00:00:00Z"}
    return {"kind": idp.KIND, "metadata": meta, "spec": body}


def resource(loopback_http: bool = False, **spec: Any) -> Resource:
    realm = Resource(REALM, "main", {}, T0)
    targets = {REALM: RealmTarget(realm, None, None, frozenset(), provider_namespaces=frozenset())}
    return idp.idp_resource(k8s(**spec), targets, loopback_http=loopback_http)


def stored(r: Resource, **config: str) -> Obj:
    """The provider as Keycloak returns it after the operator wrote `r` (it adds no config keys to a SAML
    provider: read back from 26.7.3), config keys edited by hand."""
    body = idp.upsert_body(Create(r.key, r.content, content_hash(r.content)), None)
    return {**body, "internalId": "i-corp", "config": {**body["config"], **config}}


def spec(**fields: Any) -> KeycloakIdentityProviderSpec:
    return KeycloakIdentityProviderSpec.model_validate(k8s(**fields)["spec"])


# --- the content --------------------------------------------------------------------------------------------


def test_the_saml_config_sends_every_key_of_keycloaks_saml_provider() -> None:
    r = resource(
        saml={
            "entityId": "https://kc.example.com/realms/main",
            "singleLogoutServiceUrl": "https://idp.example.com/slo",
            "nameIdPolicyFormat": "email",
            "principalType": "ATTRIBUTE",
            "principalAttribute": "uid",
            "wantAssertionsSigned": True,
            "validateSignature": True,
            "signingCertificates": [CERT, OTHER_CERT],
            "postBindingResponse": True,
            "forceAuthn": True,
            "syncMode": "FORCE",
        }
    )
    assert r.problem is None and r.content["providerId"] == "saml"
    config = r.content[idp.CONFIG]
    assert config["idpEntityId"] == "https://idp.example.com"
    assert config["entityId"] == "https://kc.example.com/realms/main"
    assert config["singleSignOnServiceUrl"] == "https://idp.example.com/sso"
    assert config["singleLogoutServiceUrl"] == "https://idp.example.com/slo"
    assert config["nameIDPolicyFormat"] == "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"
    assert (config["principalType"], config["principalAttribute"]) == ("ATTRIBUTE", "uid")
    assert config["wantAssertionsSigned"] == config["validateSignature"] == "true"
    assert config["wantAssertionsEncrypted"] == config["postBindingAuthnRequest"] == "false"
    # Keycloak splits signingCertificate on ','; each is the base64 body, as it keeps certificates.
    assert config["signingCertificate"] == f"{CERT_BODY},{OTHER_CERT_BODY}"
    assert (config["forceAuthn"], config["syncMode"]) == ("true", "FORCE")
    assert "clientSecret" not in config and idp_secret.client_secret_ref(k8s()) is None


def test_absent_optional_settings_are_sent_empty_so_removing_one_clears_it() -> None:
    config = resource().content[idp.CONFIG]
    assert config["entityId"] == config["singleLogoutServiceUrl"] == config["principalAttribute"] == ""
    assert config["principalType"] == "SUBJECT"
    assert config["nameIDPolicyFormat"] == "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent"


def test_signatures_are_always_validated_with_at_least_one_certificate() -> None:
    # Without validateSignature Keycloak's SAMLEndpoint checks no signature: anyone could post a forged
    # response to the broker endpoint and sign in as any linked user. So it is always sent "true", false is
    # refused, and a provider without a signing certificate is refused.
    assert resource().content[idp.CONFIG]["validateSignature"] == "true"
    assert resource(saml={"wantAssertionsSigned": False}).content[idp.CONFIG]["validateSignature"] == "true"
    with pytest.raises(ValidationError, match="validateSignature"):
        spec(saml={"validateSignature": False})
    without = k8s()["spec"]
    del without["saml"]["signingCertificates"]
    with pytest.raises(ValidationError, match="signingCertificates"):
        KeycloakIdentityProviderSpec.model_validate(without)
    with pytest.raises(ValidationError, match="signingCertificates"):
        spec(saml={"signingCertificates": []})
    top = builders.crd_schema(names.IDENTITY_PROVIDER_KIND)
    saml = top["spec"]["properties"]["saml"]
    assert "signingCertificates" in saml["required"]
    assert saml["properties"]["signingCertificates"]["minItems"] == 1
    assert saml["properties"]["validateSignature"]["enum"] == [True]


def test_http_is_refused_by_the_planner_unless_loopback_is_allowed_naming_the_field() -> None:
    local = {"saml": {"singleSignOnServiceUrl": "http://127.0.0.1:8080/sso"}}
    refused = resource(**local)
    assert refused.problem is not None and refused.problem.reason == "InsecureUrl"
    assert "spec.saml.singleSignOnServiceUrl" in refused.problem.message
    assert resource(loopback_http=True, **local).problem is None


def test_a_quiet_plan_is_empty_and_a_hand_edit_is_repaired_naming_the_key() -> None:
    r = resource(mappers=[USERNAME])
    assert idp.plan_identity_providers([r], [stored(r)]).plan.is_empty()
    scope = idp.plan_identity_providers([r], [stored(r, validateSignature="false", idpEntityId="evil")])
    assert scope.drift[r.key] == ["attributes.idpEntityId", "attributes.validateSignature"]
    assert [u.remote_id for u in scope.plan.updates] == ["corp"]


def test_a_new_saml_provider_is_created_without_a_secret_deleted_when_gone_and_released_when_preserved() -> (
    None
):
    r = resource()
    [create] = idp.plan_identity_providers([r], []).plan.creates
    body = idp.upsert_body(create, None)  # a saml provider has no client secret: none is needed
    assert body["providerId"] == "saml" and idp.CLIENT_SECRET not in body["config"]
    assert read_marker(body["config"]) is not None and idp.CONFIG not in body
    gone = replace(r, deleting=True)
    scope = idp.plan_identity_providers([gone], [stored(r)])
    assert [(d.key, d.remote_id) for d in scope.plan.deletes] == [(r.key, "corp")]
    kept = idp.plan_identity_providers([replace(gone, preserve=True)], [stored(r)])
    assert kept.plan.is_empty() and [(x.key, x.remote_id) for x in kept.releases] == [(r.key, "corp")]
    released = idp.release_body(idp.observed_view(stored(r)))
    assert read_marker(released["config"]) is None
    assert released["config"]["idpEntityId"] == stored(r)["config"]["idpEntityId"]  # the rest as it was


def test_saml_mappers_are_planned_and_the_hardcoded_role_one_follows_the_grant_rule() -> None:
    role = {"name": "r", "identityProviderMapper": "oidc-hardcoded-role-idp-mapper", "config": {"role": "x"}}
    r = resource(mappers=[USERNAME, role])
    plan = idp_mappers.plan_mappers(r.content, [])
    assert [(w.operation, w.name) for w in plan.ordered()] == [("create", "r"), ("create", "username")]
    assert idp_mapper_rule.hands_out(r.content)  # the role mapper: checked against the realm's grants


# --- convergence --------------------------------------------------------------------------------------------

bools = st.booleans()
saml_st = st.fixed_dictionaries(
    {},
    optional={
        "entityId": st.sampled_from(["https://kc/realms/main", "sp"]),
        "singleLogoutServiceUrl": st.sampled_from(["https://idp.example.com/slo"]),
        "nameIdPolicyFormat": st.sampled_from(["persistent", "transient", "email", "unspecified"]),
        "wantAssertionsSigned": bools,
        "wantAssertionsEncrypted": bools,
        "postBindingResponse": bools,
        "forceAuthn": bools,
        "syncMode": st.sampled_from(["IMPORT", "LEGACY", "FORCE"]),
        "signingCertificates": st.lists(st.sampled_from([CERT]), min_size=1, max_size=2),
    },
)
edits_st = st.dictionaries(
    st.sampled_from(["idpEntityId", "validateSignature", "signingCertificate", "entityId", "principalType",
                     "allowCreate"]),
    st.sampled_from(["", "true", "evil", "SUBJECT"]),
    max_size=3,
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(before=saml_st, declared=saml_st, edits=edits_st, hide=bools)
def test_applying_a_plan_converges_and_a_second_plan_is_empty(
    before: Obj, declared: Obj, edits: dict[str, str], hide: bool
) -> None:
    observed = stored(resource(saml=before), **edits)
    r = resource(saml=declared, hideOnLogin=hide)
    first = idp.plan_identity_providers([r], [copy.deepcopy(observed)])
    after = apply(first, [observed])
    second = idp.plan_identity_providers([r], after)
    assert second.plan.is_empty() and second.drift == {}
    # A key the operator has no field for (allowCreate) is kept as it was.
    if "allowCreate" in edits:
        assert after[0]["config"]["allowCreate"] == edits["allowCreate"]


# --- hostile input ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"oidc": {"authorizationUrl": "https://a/", "tokenUrl": "https://a/t", "clientId": "c",
                   "clientAuthMethod": "private_key_jwt"}}, "spec.oidc is required with providerId oidc"),
        ({"saml": {"singleSignOnServiceUrl": "http://idp.example.com/sso"}}, "singleSignOnServiceUrl"),
        ({"saml": {"singleSignOnServiceUrl": "https://u:p@idp.example.com/sso"}}, "singleSignOnServiceUrl"),
        ({"saml": {"idpEntityId": "two words"}}, "idpEntityId"),
        ({"saml": {"validateSignature": False}}, "validateSignature"),
        ({"saml": {"signingCertificates": []}}, "signingCertificates"),
        ({"saml": {"signingCertificates": ["not a pem"]}}, "signingCertificates"),
        ({"saml": {"signingCertificates": [CERT] * 5}}, "signingCertificates"),
        ({"saml": {"principalType": "ATTRIBUTE"}}, "principalAttribute"),
        ({"saml": {"principalAttribute": "uid"}}, "principalAttribute"),
        ({"saml": {"nameIdPolicyFormat": "kerberos"}}, "nameIdPolicyFormat"),
        ({"saml": {"syncMode": "SOMETIMES"}}, "syncMode"),
        ({"mappers": [{**USERNAME, "identityProviderMapper": "oidc-username-idp-mapper"}]},
         "not a mapper of a saml provider"),
        ({"mappers": [{**USERNAME, "identityProviderMapper": "saml-xpath-attribute-idp-mapper"}]},
         "identityProviderMapper"),
    ],
)  # fmt: skip
def test_hostile_or_inconsistent_saml_specs_are_refused_naming_the_field(fields: Obj, says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        spec(**fields)


def test_an_oidc_provider_takes_no_saml_block_or_mapper() -> None:
    oidc = {
        "authorizationUrl": "https://a/",
        "tokenUrl": "https://a/t",
        "clientId": "c",
        "clientAuthMethod": "private_key_jwt",
    }
    base = {"realm": {"name": "main"}, "alias": "a", "providerId": "oidc", "oidc": oidc}
    KeycloakIdentityProviderSpec.model_validate(base)
    with pytest.raises(ValidationError, match=r"spec\.saml with providerId saml"):
        KeycloakIdentityProviderSpec.model_validate({**base, "saml": SAML})
    with pytest.raises(ValidationError, match="not a mapper of a oidc provider"):
        KeycloakIdentityProviderSpec.model_validate({**base, "mappers": [USERNAME]})
    assert "saml-username-idp-mapper" in MAPPERS_BY_PROVIDER["saml"] - MAPPERS_BY_PROVIDER["oidc"]


def test_the_crd_carries_the_same_rules() -> None:
    schema = builders.crd_schema(names.IDENTITY_PROVIDER_KIND)
    rules = " ".join(r["rule"] for r in schema["spec"]["x-kubernetes-validations"])
    assert "oldSelf.providerId" in rules and "has(self.saml)" in rules and "startsWith('saml-')" in rules
    props = schema["spec"]["properties"]
    assert props["providerId"]["enum"] == ["oidc", "saml"] and "oidc" not in schema["spec"].get(
        "required", []
    )
    saml = props["saml"]
    assert saml["properties"]["signingCertificates"]["maxItems"] == 4
    assert saml["properties"]["singleSignOnServiceUrl"]["pattern"].startswith("^(https://")
    assert len(saml["x-kubernetes-validations"]) == 1
