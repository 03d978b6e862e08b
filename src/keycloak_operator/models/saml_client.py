"""A KeycloakClient of protocol `saml`: its typed SAML settings, the SAML protocol mappers offered, and the
OIDC fields such a client refuses.

The SP's entity id is the client's clientId. Every setting is a typed field mapped onto the attribute
Keycloak keeps it in (core/replication/saml_client.py), never a free attribute map: Keycloak stores any
attribute it is sent, so a mistyped key would look applied and do nothing. Each field defaults to what
Keycloak 26.7.3 gives a SAML client made through the admin API (read back from the real server:
saml_name_id_format username, saml.server.signature, saml.client.signature, saml.force.post.binding and
saml.authnstatement true, saml.signature.algorithm RSA_SHA256, exclusive canonicalization, frontchannelLogout
true), so a SAML client manages all of them.

Certificates are public values and may be given inline, as PEM; a private key never is. Left out, the
client's signing certificate is not managed: Keycloak makes a key pair itself when it requires client
signatures.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Annotated, Final, Literal

from pydantic import AfterValidator, Field, model_validator

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel

Protocol = Literal["openid-connect", "saml"]

# The SAML mapper providers teams use, by their ids in Keycloak 26.7.3 (GET /admin/serverinfo,
# `protocolMapperTypes.saml`). The server has more (script, session notes, organization, name id, ...);
# those need a newer operator.
SAML_MAPPER_TYPES: Final = (
    "saml-user-attribute-mapper",
    "saml-user-property-mapper",
    "saml-role-list-mapper",
    "saml-hardcode-attribute-mapper",
)

# The fields of KeycloakClientSpec (by their names in the resource) that only an OIDC client has: on a
# saml client each is refused by name rather than ignored.
OIDC_ONLY_FIELDS: Final = (
    "publicClient",
    "webOrigins",
    "standardFlowEnabled",
    "directAccessGrantsEnabled",
    "serviceAccountsEnabled",
    "secretName",
    "pkceMethod",
    "logout",
    "accessTokenLifespanSeconds",
    "postLogoutRedirectUris",
    "serviceAccountRoles",
)

# The CRD carries no defaults (models/crd.py): an omitted protocol is absent, and is openid-connect.
_IS_SAML = "has(self.protocol) && self.protocol == 'saml'"
PROTOCOL_IMMUTABLE_RULE = {
    # Checked on Keycloak 26.7.3: a PUT does change a client's protocol, but keeps the other protocol's
    # attributes and swaps its default client scopes; no conversion a team could rely on.
    "rule": "(has(self.protocol) ? self.protocol : 'openid-connect') == "
    "(has(oldSelf.protocol) ? oldSelf.protocol : 'openid-connect')",
    "message": "spec.protocol cannot change: Keycloak does not convert a client; delete the resource and "
    "declare a new one",
}
OIDC_ONLY_RULE = {
    "rule": f"!({_IS_SAML}) || !({' || '.join(f'has(self.{f})' for f in OIDC_ONLY_FIELDS)})",
    "message": f"a saml client takes none of the OIDC fields ({', '.join(OIDC_ONLY_FIELDS)})",
}
MAPPER_PROTOCOL_RULE = {
    "rule": f"!has(self.protocolMappers) || self.protocolMappers.all(m, "
    f"m.protocolMapper.startsWith('saml-') == ({_IS_SAML}))",
    "message": "spec.protocolMappers: a saml client takes saml-* mappers, an OIDC client oidc-* ones",
}
SAML_BLOCK_RULE = {
    "rule": f"!has(self.saml) || ({_IS_SAML})",
    "message": "spec.saml needs spec.protocol: saml",
}

# Keycloak keeps the canonicalization as its URI (saml_signature_canonicalization_method).
CANONICALIZATION_URIS: Final = {
    "EXCLUSIVE": "http://www.w3.org/2001/10/xml-exc-c14n#",
    "EXCLUSIVE_WITH_COMMENTS": "http://www.w3.org/2001/10/xml-exc-c14n#WithComments",
    "INCLUSIVE": "http://www.w3.org/TR/2001/REC-xml-c14n-20010315",
    "INCLUSIVE_WITH_COMMENTS": "http://www.w3.org/TR/2001/REC-xml-c14n-20010315#WithComments",
}

# A certificate of a 4096-bit RSA key is ~2 KB of base64; a chain or a bloated one is refused.
PEM_MAX = 8192
# Whitespace spelled as ASCII \xHH, not \s: Go's regexp and Python's disagree on it (kernel/patterns.py).
_WS = r"[\x09\x0a\x0d\x20]"
PEM = rf"^-----BEGIN CERTIFICATE-----[A-Za-z0-9+/={_WS[1:-1]}]+-----END CERTIFICATE-----{_WS}*$"
# The smallest real certificate (an EC key, a one-letter name) is well over 100 bytes of DER.
DER_MIN = 100
_PEM_RE = re.compile(PEM)
# The name in /realms/<realm>/protocol/saml/clients/<name>: one path segment.


def certificate_body(pem: str) -> str:
    """The base64 body of one PEM certificate, as Keycloak keeps it (its own generated ones are stored
    so: read back from 26.7.3)."""
    inner = pem.strip().removeprefix("-----BEGIN CERTIFICATE-----").removesuffix("-----END CERTIFICATE-----")
    return "".join(inner.split())


def _is_der_certificate(der: bytes) -> bool:
    """The shape of an X.509 certificate's DER: one SEQUENCE spanning exactly these bytes, whose first
    element is a SEQUENCE (the tbsCertificate). Not a full parse: `cryptography` reaches the operator only
    through python-keycloak, and no dependency is added for this; Keycloak parses it fully when it is used."""
    if len(der) < DER_MIN or der[0] != 0x30:
        return False
    if der[1] < 0x80:
        header, length = 2, der[1]
    else:
        octets = der[1] & 0x7F
        if not 1 <= octets <= 4:
            return False
        header, length = 2 + octets, int.from_bytes(der[2 : 2 + octets], "big")
    return header + length == len(der) and der[header] == 0x30


def _certificate(value: str) -> str:
    if not _PEM_RE.match(value) or value.count("-----BEGIN") != 1:
        raise ValueError("one PEM certificate (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)")
    try:
        der = base64.b64decode(certificate_body(value), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the certificate's body is not base64") from None
    if not _is_der_certificate(der):
        raise ValueError("the certificate's body is not a DER-encoded X.509 certificate")
    return value


CertificatePem = Annotated[str, Field(max_length=PEM_MAX, pattern=PEM), AfterValidator(_certificate)]
SamlUrl = Annotated[str, Field(max_length=pt.URL_MAX, pattern=pt.HTTP_URL)]


class SamlClientSettings(CrdModel):
    """A SAML service provider's settings; the SP's entity id is spec.clientId."""

    assertion_consumer_url_post: SamlUrl | None = Field(
        default=None,
        description="Assertion Consumer Service URL for the POST binding; absent: none (the request's).",
    )
    assertion_consumer_url_redirect: SamlUrl | None = Field(
        default=None, description="Assertion Consumer Service URL for the Redirect binding; absent: none."
    )
    single_logout_service_url_post: SamlUrl | None = Field(
        default=None, description="Single Logout Service URL for the POST binding; absent: none."
    )
    single_logout_service_url_redirect: SamlUrl | None = Field(
        default=None, description="Single Logout Service URL for the Redirect binding; absent: none."
    )
    name_id_format: Literal["username", "email", "transient", "persistent"] = Field(
        default="username", description="Name ID format of the subject."
    )
    force_name_id_format: bool = Field(
        default=False, description="Use nameIdFormat whatever the SP's request asks for."
    )
    sign_documents: bool = Field(
        default=True, description="The realm signs its SAML documents (saml.server.signature)."
    )
    sign_assertions: bool = Field(
        default=False, description="The realm signs the assertions too (saml.assertion.signature)."
    )
    client_signature_required: bool = Field(
        default=True,
        description="The SP signs its requests, checked with signingCertificate (saml.client.signature).",
    )
    signature_algorithm: Literal[
        "RSA_SHA256", "RSA_SHA1", "RSA_SHA256_MGF1", "RSA_SHA512", "RSA_SHA512_MGF1", "DSA_SHA1"
    ] = Field(default="RSA_SHA256", description="Signature algorithm.")
    canonicalization: Literal[
        "EXCLUSIVE", "EXCLUSIVE_WITH_COMMENTS", "INCLUSIVE", "INCLUSIVE_WITH_COMMENTS"
    ] = Field(default="EXCLUSIVE", description="XML canonicalization method of signatures.")
    signing_certificate: CertificatePem | None = Field(
        default=None,
        description="The SP's signing certificate (PEM), public; absent: not managed (Keycloak makes a key "
        "pair for a client that must sign).",
    )
    encrypt_assertions: bool = Field(
        default=False, description="Encrypt assertions with encryptionCertificate (saml.encrypt)."
    )
    encryption_certificate: CertificatePem | None = Field(
        default=None, description="The SP's encryption certificate (PEM), public; absent: not managed."
    )
    force_post_binding: bool = Field(default=True, description="Answer with the POST binding.")
    include_authn_statement: bool = Field(default=True, description="Include an AuthnStatement.")
    front_channel_logout: bool = Field(default=True, description="Front-channel logout.")

    @model_validator(mode="after")
    def _encryption_needs_certificate(self) -> SamlClientSettings:
        if self.encrypt_assertions and self.encryption_certificate is None:
            raise ValueError("saml.encryptAssertions needs saml.encryptionCertificate")
        return self


ENCRYPTION_RULE = {
    "rule": "!has(self.encryptAssertions) || !self.encryptAssertions || has(self.encryptionCertificate)",
    "message": "saml.encryptAssertions needs saml.encryptionCertificate",
}
