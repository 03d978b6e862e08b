"""A KeycloakClient of protocol saml: its content, its drift, its mappers and scopes, and what is refused."""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core.replication import ObjectKey
from keycloak_operator.core.replication import client as client_kind
from keycloak_operator.core.replication import client_parts as parts
from keycloak_operator.core.replication.client_secret import client_secret_name
from keycloak_operator.core.replication.marker import Marker, content_hash, read_marker
from keycloak_operator.core.replication.plan import Create
from keycloak_operator.core.replication.sync import Resource
from keycloak_operator.kernel import names
from keycloak_operator.models.client import KeycloakClientSpec
from keycloak_operator.models.saml_client import OIDC_ONLY_FIELDS
from tests.unit import builders

KEY = ObjectKey(names.CLIENT_KIND, "team", "sp")
ENTITY = "https://sp.example.com/saml"
# Attributes Keycloak 26.7.3 adds to a SAML client of its own (read back from the real server).
KEYCLOAK_ADDS = {
    "saml.artifact.binding.identifier": "RIhZfRaKEXvr1YZ34SoQMmpAQjk=",
    "saml.allow.ecp.flow": "false",
    "realm_client": "false",
    "client.secret.creation.time": "1795542418",
    "saml.signing.certificate": "MIIB",
    "saml.signing.private.key": "MIIJ",
}
# Two real self-signed certificates (P-256, made with openssl for these tests): the model checks the DER.
CERT_BODY = (
    "MIIBcDCCARWgAwIBAgIUED496n4KuZoNGTBH8fOifUd8kXYwCgYIKoZIzj0EAwIwDTELMAkGA1UEAwwCc3AwHhcNMjYxMTI0MTg1"
    "OTMwWhcNMzYxMTIxMTg1OTMwWjANMQswCQYDVQQDDAJzcDBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABD345vgfwpEWvN8COelD"
    "yU3kCJcvftvOeWdk7ZaTjzW1xOYWY1AQsbffCvIldOwChwN2T8GS37gfhcfSuZlQsiWjUzBRMB0GA1UdDgQWBBQ0KN7IBeYIRnc8"
    "kYrtHpBxtT80FjAfBgNVHSMEGDAWgBQ0KN7IBeYIRnc8kYrtHpBxtT80FjAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0kA"
    "MEYCIQD9BEl7VnVjCixZuH34ahfpOVJUbE5fnvZL1hvnhIkSdQIhAOgGpWexND2q6MWUo2dcOA2xmHocDBhD1CPAcP2u8VhZ"
)
CERT = f"-----BEGIN CERTIFICATE-----\n{CERT_BODY[:40]}\n{CERT_BODY[40:]}\n-----END CERTIFICATE-----\n"
OTHER_CERT_BODY = (
    "MIIBcjCCARegAwIBAgIUVgW7QL6lNVKdYiyiHQFIQKpDROgwCgYIKoZIzj0EAwIwDjEMMAoGA1UEAwwDc3AyMB4XDTI2MTEyNDE4"
    "NTkzMFoXDTM2MTEyMTE4NTkzMFowDjEMMAoGA1UEAwwDc3AyMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEuXzonz9prIUegCxI"
    "Pal1xFc4cL1oHDPuWqsFfoQJj5ZX8X53r6uGaJtcamvPAnpo31n5E7FojhEv6dWjw6fSY6NTMFEwHQYDVR0OBBYEFMKEKNIGBjKP"
    "Xa6Vl+DKiSB74NQqMB8GA1UdIwQYMBaAFMKEKNIGBjKPXa6Vl+DKiSB74NQqMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwID"
    "SQAwRgIhAKqtvWcMUCJYhPRDwwQn6NrHFOCl/WNAsaTpWbMyInnqAiEAvUbmoJUm9npoT+QR5lUoMxi84UBHw45XCp3kX3PcpTw="
)
OTHER_CERT = f"-----BEGIN CERTIFICATE-----\n{OTHER_CERT_BODY}\n-----END CERTIFICATE-----\n"
ROLE_LIST = {
    "name": "roles",
    "protocolMapper": "saml-role-list-mapper",
    "config": {"attribute.name": "Role", "single": "true"},
}


def spec(**fields: Any) -> KeycloakClientSpec:
    return KeycloakClientSpec.model_validate(
        {"realm": {"name": "main"}, "clientId": ENTITY, "protocol": "saml", **fields}
    )


def content(**fields: Any) -> dict[str, Any]:
    return client_kind.client_content(spec(**fields))


def resource(**fields: Any) -> Resource:
    return Resource(KEY, ENTITY, content(**fields), datetime(2026, 1, 1, tzinfo=UTC))


def as_keycloak_holds(body: dict[str, Any], remote_id: str = "u-1") -> dict[str, Any]:
    """A client as Keycloak returns it after a write: the OIDC flags and attributes of its own added, an
    attribute written as "" gone."""
    attributes = {k: v for k, v in (body.get("attributes") or {}).items() if v != ""}
    return {
        "publicClient": False,
        "standardFlowEnabled": True,
        "webOrigins": [],
        **{k: v for k, v in body.items() if k not in parts.SUBRESOURCES},
        "id": remote_id,
        "attributes": {**KEYCLOAK_ADDS, **attributes},
    }


def put(current: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """Keycloak's client PUT: fields replaced, attributes set one by one ("" removes one)."""
    attributes = dict(current.get("attributes") or {})
    for k, v in (body.get("attributes") or {}).items():
        if v == "":
            attributes.pop(k, None)
        else:
            attributes[k] = v
    return {**current, **{k: v for k, v in body.items() if k != "attributes"}, "attributes": attributes}


# --- the content --------------------------------------------------------------------------------------------


def test_a_bare_saml_client_manages_keycloaks_own_defaults() -> None:
    c = content()
    assert c["protocol"] == "saml" and c["frontchannelLogout"] is True
    # The OIDC flags are not the content of a saml client: Keycloak keeps them, SAML never reads them.
    assert not {"publicClient", "webOrigins", "standardFlowEnabled", "serviceAccountsEnabled"} & set(c)
    # What Keycloak 26.7.3 gives a SAML client made through the admin API (read back from the server).
    assert {
        "saml_name_id_format": "username",
        "saml_force_name_id_format": "false",
        "saml.server.signature": "true",
        "saml.client.signature": "true",
        "saml.signature.algorithm": "RSA_SHA256",
        "saml_signature_canonicalization_method": "http://www.w3.org/2001/10/xml-exc-c14n#",
        "saml.force.post.binding": "true",
        "saml.authnstatement": "true",
    }.items() <= c["attributes"].items()
    assert "saml.signing.certificate" not in c["attributes"]  # absent: Keycloak's key pair, not managed


def test_typed_saml_fields_become_keycloak_attributes() -> None:
    c = content(
        redirectUris=["https://sp.example.com/*"],
        saml={
            "assertionConsumerUrlPost": "https://sp.example.com/acs",
            "singleLogoutServiceUrlRedirect": "https://sp.example.com/slo",
            "nameIdFormat": "email",
            "forceNameIdFormat": True,
            "signAssertions": True,
            "clientSignatureRequired": False,
            "canonicalization": "INCLUSIVE",
            "signingCertificate": CERT,
            "encryptAssertions": True,
            "encryptionCertificate": CERT,
            "frontChannelLogout": False,
        },
    )
    a = c["attributes"]
    assert a["saml_assertion_consumer_url_post"] == "https://sp.example.com/acs"
    assert a["saml_assertion_consumer_url_redirect"] == ""
    assert a["saml_single_logout_service_url_redirect"] == "https://sp.example.com/slo"
    assert a["saml_name_id_format"] == "email" and a["saml_force_name_id_format"] == "true"
    assert a["saml.assertion.signature"] == "true" and a["saml.client.signature"] == "false"
    assert a["saml_signature_canonicalization_method"] == "http://www.w3.org/TR/2001/REC-xml-c14n-20010315"
    # Kept as Keycloak keeps its own: the base64 body, no PEM armour or line breaks.
    assert a["saml.signing.certificate"] == a["saml.encryption.certificate"] == CERT_BODY
    assert a["saml.encrypt"] == "true"
    assert c["frontchannelLogout"] is False and c["redirectUris"] == ["https://sp.example.com/*"]


def test_an_oidc_client_keeps_the_content_it_had_before_saml_existed() -> None:
    oidc = KeycloakClientSpec.model_validate({"realm": {"name": "main"}, "clientId": "web"})
    explicit = KeycloakClientSpec.model_validate(
        {"realm": {"name": "main"}, "clientId": "web", "protocol": "openid-connect"}
    )
    assert client_kind.client_content(oidc) == client_kind.client_content(explicit)
    assert "saml" not in str(client_kind.client_content(oidc))


def test_a_saml_client_has_no_secret_to_publish() -> None:
    meta = {"name": "sp", "namespace": "team", "uid": "u"}
    assert client_secret_name({"metadata": meta, "spec": spec().model_dump(by_alias=True)}) is None
    oidc = {"realm": {"name": "main"}, "clientId": "web"}
    assert client_secret_name({"metadata": meta, "spec": oidc}) == names.client_secret("sp")


# --- drift --------------------------------------------------------------------------------------------------


def test_a_new_saml_client_is_created_marked_with_its_protocol_and_no_oidc_flag() -> None:
    r = resource(saml={"assertionConsumerUrlPost": "https://sp.example.com/acs"})
    scope = client_kind.plan_clients([r], [])
    [create] = scope.plan.creates
    body = client_kind.upsert_body(create)
    assert body["protocol"] == "saml" and body["clientId"] == ENTITY
    assert read_marker(body["attributes"]) == Marker(KEY, content_hash(r.content))
    assert body["attributes"]["saml_assertion_consumer_url_post"] == "https://sp.example.com/acs"
    assert not {"publicClient", "serviceAccountsEnabled", "directAccessGrantsEnabled"} & body.keys()
    # Its resource deleted, the client goes; preserved, it is released (its marker emptied, the rest kept).
    observed = as_keycloak_holds(body)
    gone = client_kind.plan_clients([replace(r, deleting=True)], [observed])
    assert [(d.key, d.remote_id) for d in gone.plan.deletes] == [(KEY, "u-1")]
    kept = client_kind.plan_clients([replace(r, deleting=True, preserve=True)], [observed])
    assert kept.plan.is_empty() and [x.remote_id for x in kept.releases] == ["u-1"]
    released = client_kind.release_body(observed)
    assert read_marker(released["attributes"]) is None and released["protocol"] == "saml"


def test_keycloaks_own_attributes_are_no_drift_and_a_steady_client_plans_nothing() -> None:
    r = resource(saml={"assertionConsumerUrlPost": "https://sp.example.com/acs"})
    created = client_kind.upsert_body(Create(KEY, r.content, content_hash(r.content)))
    observed = as_keycloak_holds(created)
    steady = client_kind.plan_clients([r], [observed])
    assert steady.plan.operations() == [] and steady.drift == {}


def test_a_hand_edited_saml_attribute_is_drift_repaired_by_an_update() -> None:
    r = resource()
    observed = as_keycloak_holds(client_kind.upsert_body(Create(KEY, r.content, content_hash(r.content))))
    edited = copy.deepcopy(observed)
    edited["attributes"]["saml.server.signature"] = "false"
    edited["frontchannelLogout"] = False
    scope = client_kind.plan_clients([r], [edited])
    assert scope.drift[KEY] == [
        "attributes.saml.server.signature",
        "frontchannelLogout",
    ]
    (update,) = scope.plan.updates
    repaired = put(edited, client_kind.upsert_body(update))
    assert client_kind.plan_clients([r], [repaired]).plan.operations() == []


bools = st.booleans()
url = st.one_of(st.none(), st.sampled_from(["https://sp.example.com/acs", "http://127.0.0.1:8080/saml"]))
saml_st = st.fixed_dictionaries(
    {},
    optional={
        "assertionConsumerUrlPost": url,
        "assertionConsumerUrlRedirect": url,
        "singleLogoutServiceUrlPost": url,
        "nameIdFormat": st.sampled_from(["username", "email", "transient", "persistent"]),
        "forceNameIdFormat": bools,
        "signDocuments": bools,
        "signAssertions": bools,
        "clientSignatureRequired": bools,
        "signatureAlgorithm": st.sampled_from(["RSA_SHA256", "RSA_SHA512", "RSA_SHA1"]),
        "canonicalization": st.sampled_from(["EXCLUSIVE", "INCLUSIVE_WITH_COMMENTS"]),
        "signingCertificate": st.sampled_from([CERT]),
        "frontChannelLogout": bools,
    },
).map(lambda d: {k: v for k, v in d.items() if v is not None})
edit_st = st.dictionaries(
    st.sampled_from(["saml.server.signature", "saml_name_id_format", "saml.encrypt", "saml.client.signature",
                     "saml_assertion_consumer_url_post", "saml.signing.certificate", "unrelated"]),
    st.sampled_from(["", "true", "false", "email", "https://evil.example.com/"]),
    max_size=4,
)  # fmt: skip


@given(before=saml_st, declared=saml_st, edits=edit_st, front=st.booleans())
def test_applying_the_client_plan_converges(
    before: dict[str, Any], declared: dict[str, Any], edits: dict[str, str], front: bool
) -> None:
    """From a client written for other settings and then edited by hand, one round's writes bring it to what
    is declared, and the next round writes nothing."""
    old = resource(saml=before)
    observed = as_keycloak_holds(client_kind.upsert_body(Create(KEY, old.content, content_hash(old.content))))
    observed = put(observed, {"attributes": edits, "frontchannelLogout": front})
    r = resource(saml=declared, protocolMappers=[ROLE_LIST])
    first = client_kind.plan_clients([r], [observed])
    for update in first.plan.updates:
        observed = put(observed, client_kind.upsert_body(update))
    second = client_kind.plan_clients([r], [observed])
    assert second.plan.operations() == [] and second.drift == {}
    mappers = parts.plan_mappers(r.content, [])
    held = [{**dict(w.body or {}), "id": w.name} for w in mappers.writes]
    assert parts.plan_mappers(r.content, held).writes == []


# --- mappers and scopes -------------------------------------------------------------------------------------


def test_saml_mappers_are_written_with_the_saml_protocol() -> None:
    plan = parts.plan_mappers(content(protocolMappers=[ROLE_LIST]), [])
    ((write),) = plan.writes
    assert write.body is not None and write.body["protocol"] == "saml"
    assert write.body["protocolMapper"] == "saml-role-list-mapper"


def test_a_saml_client_may_attach_saml_scopes_only() -> None:
    realm = {"role_list": ("id-rl", None, "saml"), "email": ("id-email", None, "openid-connect")}
    usable = parts.usable_scopes(realm, "team", "saml")
    assert usable == {"role_list": "id-rl"}
    missing = parts.missing_scopes(content(defaultClientScopes=["role_list", "email"]), usable)
    assert (
        missing is not None and "spec.defaultClientScopes" in missing.message and "'email'" in missing.message
    )
    assert parts.usable_scopes(realm, "team") == {"email": "id-email"}  # an OIDC client's


# --- hostile input ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", OIDC_ONLY_FIELDS)
def test_every_oidc_only_field_is_refused_on_a_saml_client_by_name(field: str) -> None:
    value: Any = {
        "webOrigins": [],
        "secretName": "s",
        "pkceMethod": "S256",
        "logout": {},
        "accessTokenLifespanSeconds": 60,
        "postLogoutRedirectUris": [],
        "serviceAccountRoles": {},
    }.get(field, False)
    with pytest.raises(ValidationError, match=f"spec.{field}"):
        spec(**{field: value})


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"protocol": "openid-connect", "saml": {}}, "spec.saml needs spec.protocol: saml"),
        ({"protocolMappers": [{**ROLE_LIST, "protocolMapper": "oidc-audience-mapper"}]}, "not a mapper"),
        ({"protocol": "openid-connect", "protocolMappers": [ROLE_LIST]}, "not a mapper of protocol"),
        ({"protocol": "cas"}, "protocol"),
        ({"saml": {"encryptAssertions": True}}, "encryptionCertificate"),
        ({"saml": {"signingCertificate": "MIIB"}}, "signingCertificate"),
        ({"saml": {"signingCertificate": CERT + CERT}}, "signingCertificate"),
        ({"saml": {"signingCertificate": CERT.replace(CERT_BODY[:40], "@@@@")}}, "signingCertificate"),
        ({"saml": {"signingCertificate": CERT.replace("\n", "\n" + "A" * 9000, 1)}}, "signingCertificate"),
        ({"saml": {"signingCertificate": "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----"}},
         "signingCertificate"),
        # Whitespace in the body is ASCII only, as the API server's regexp reads \s (model/CRD parity).
        ({"saml": {"signingCertificate": CERT.replace("\n", "\u00a0", 1)}}, "signingCertificate"),
        ({"saml": {"signingCertificate": CERT.replace("\n", "\u2003", 1)}}, "signingCertificate"),
        # Base64 that is no certificate: empty, too short, not DER, DER cut short or with bytes after it.
        ({"saml": {"signingCertificate": "-----BEGIN CERTIFICATE-----\n\n-----END CERTIFICATE-----"}},
         "signingCertificate"),
        ({"saml": {"signingCertificate": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"}},
         "signingCertificate"),
        ({"saml": {"signingCertificate": CERT.replace(CERT_BODY[:4], "AAAA")}}, "signingCertificate"),
        ({"saml": {"signingCertificate": CERT.replace(CERT_BODY[:4], "MIIC")}}, "signingCertificate"),
        ({"saml": {"signingCertificate": CERT.replace(CERT_BODY[-8:], "")}}, "signingCertificate"),
        ({"saml": {"signingCertificate": CERT.replace(CERT_BODY[-4:], CERT_BODY[-4:] + "AAAA")}},
         "signingCertificate"),
        ({"saml": {"assertionConsumerUrlPost": "javascript:alert(1)"}}, "assertionConsumerUrlPost"),
        ({"saml": {"nameIdFormat": "unspecified"}}, "nameIdFormat"),
        ({"saml": {"signatureAlgorithm": "HMAC_SHA1"}}, "signatureAlgorithm"),
    ],
)  # fmt: skip
def test_hostile_saml_settings_are_refused_naming_the_field(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError, match=says.replace(".", r"\.")):
        spec(**fields)


def test_the_crd_carries_the_same_rules() -> None:
    schema = builders.crd_schema(names.CLIENT_KIND)["spec"]
    rules = " ".join(r["rule"] for r in schema["x-kubernetes-validations"])
    assert "oldSelf.protocol" in rules and "has(self.publicClient)" in rules and "has(self.saml)" in rules
    assert "startsWith('saml-')" in rules
    props = schema["properties"]
    assert props["protocol"]["enum"] == ["openid-connect", "saml"]
    assert props["saml"]["properties"]["signingCertificate"]["maxLength"] == 8192
    # No \s: Go's regexp and Python's disagree on it (kernel/patterns.py).
    assert "\\s" not in props["saml"]["properties"]["signingCertificate"]["pattern"]
    assert "encryptionCertificate" in props["saml"]["x-kubernetes-validations"][0]["rule"]
    assert (
        "saml-role-list-mapper" in props["protocolMappers"]["items"]["properties"]["protocolMapper"]["enum"]
    )
