"""A KeycloakIdentityProvider of providerId `saml`: the upstream SAML IdP users sign in with, as typed fields
mapped onto the config keys of Keycloak 26.7.3's SAMLIdentityProviderConfig (its constants, read from the
26.7.3 jar; core/replication/saml_identity_provider.py writes them).

A SAML provider has no secret: its signing certificates are public and given inline as PEM. URLs are https,
as an OIDC provider's (models/identity_provider.py says why; the same loopback-http switch applies).
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, model_validator

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel
from keycloak_operator.models.idp_urls import IdpUrl
from keycloak_operator.models.saml_client import CertificatePem

TEXT_MAX = 255
SIGNING_CERTIFICATES_MAX = 4

# The name ID policy formats teams ask an IdP for, as the URNs Keycloak sends (nameIDPolicyFormat).
NAME_ID_POLICY_URNS: Final = {
    "persistent": "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent",
    "transient": "urn:oasis:names:tc:SAML:2.0:nameid-format:transient",
    "email": "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
    "unspecified": "urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified",
}

PRINCIPAL_RULE = {
    "rule": "(has(self.principalType) && self.principalType != 'SUBJECT') == has(self.principalAttribute)",
    "message": "saml.principalAttribute is required with principalType ATTRIBUTE or FRIENDLY_ATTRIBUTE, and "
    "only then",
}


class SamlIdpSettings(CrdModel):
    """The upstream SAML identity provider, and this realm as its service provider (Keycloak's `saml`)."""

    idp_entity_id: str = Field(
        min_length=1,
        max_length=TEXT_MAX,
        pattern=pt.NO_SPACE,
        description="The IdP's entity id, checked against the Issuer of its responses (idpEntityId).",
    )
    entity_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=TEXT_MAX,
        pattern=pt.NO_SPACE,
        description="This realm's entity id as a service provider there (entityId); absent: the realm's URL.",
    )
    single_sign_on_service_url: IdpUrl = Field(description="The IdP's Single Sign-On Service URL.")
    single_logout_service_url: IdpUrl | None = Field(
        default=None, description="The IdP's Single Logout Service URL; absent: none."
    )
    name_id_policy_format: Literal["persistent", "transient", "email", "unspecified"] = Field(
        default="persistent", description="Name ID format asked for (sent as its URN)."
    )
    principal_type: Literal["SUBJECT", "ATTRIBUTE", "FRIENDLY_ATTRIBUTE"] = Field(
        default="SUBJECT", description="Where the user's identity is read from."
    )
    principal_attribute: str | None = Field(
        default=None,
        min_length=1,
        max_length=TEXT_MAX,
        pattern=pt.NO_CONTROL,
        description="The attribute's name, with principalType ATTRIBUTE or FRIENDLY_ATTRIBUTE.",
    )
    want_authn_requests_signed: bool = Field(default=False, description="Sign the authentication requests.")
    want_assertions_signed: bool = Field(default=False, description="Require signed assertions.")
    want_assertions_encrypted: bool = Field(default=False, description="Require encrypted assertions.")
    # Always true: with validateSignature false Keycloak's SAMLEndpoint checks no signature at all, so anyone
    # could post a forged response to /realms/<realm>/broker/<alias>/endpoint and sign in as any user linked
    # to the provider (read from the 26.7.3 source, not exercised). Kept as a field only to refuse false.
    validate_signature: Literal[True] = Field(
        default=True,
        description="Always true: the IdP's signatures are checked against signingCertificates; no false.",
    )
    signing_certificates: list[CertificatePem] = Field(
        min_length=1,
        max_length=SIGNING_CERTIFICATES_MAX,
        description="The IdP's signing certificates (PEM, public), several during a key rollover.",
    )
    post_binding_response: bool = Field(default=False, description="Answer the IdP with the POST binding.")
    post_binding_authn_request: bool = Field(
        default=False, description="Send authentication requests with the POST binding."
    )
    post_binding_logout: bool = Field(default=False, description="Send logout requests with POST.")
    force_authn: bool = Field(default=False, description="Ask the IdP to authenticate the user again.")
    sync_mode: Literal["IMPORT", "LEGACY", "FORCE"] = Field(
        default="LEGACY",
        description="When user data is taken from the provider: IMPORT on first login, FORCE on every login, "
        "LEGACY as each mapper says.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> SamlIdpSettings:
        if (self.principal_type != "SUBJECT") != (self.principal_attribute is not None):
            raise ValueError(PRINCIPAL_RULE["message"])
        return self
