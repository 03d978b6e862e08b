"""A saml KeycloakIdentityProvider's config: its typed settings (models/saml_identity_provider.py) under the
keys of Keycloak 26.7.3's SAMLIdentityProviderConfig (its constants, read from the 26.7.3 jar).

Keycloak adds no config keys of its own to a SAML provider made through the admin API (read back from the
real server), and only declared keys are compared anyway (identity_provider.py). Every key is always sent,
an absent optional one as "", so a field removed from the spec is cleared: an empty entityId is the realm's
URL to Keycloak (SAMLIdentityProvider.getEntityId, read from the 26.7.3 bytecode, not exercised).
"""

from __future__ import annotations

from keycloak_operator.models.saml_client import certificate_body
from keycloak_operator.models.saml_identity_provider import NAME_ID_POLICY_URNS, SamlIdpSettings

# Keycloak splits signingCertificate on ',' (SAMLIdentityProviderConfig.getSigningCertificates, 26.7.3 jar).
CERTIFICATE_SEPARATOR = ","
URL_FIELDS = ("single_sign_on_service_url", "single_logout_service_url")


def _flag(value: bool) -> str:
    return "true" if value else "false"


def saml_config(saml: SamlIdpSettings) -> dict[str, str]:
    return {
        "idpEntityId": saml.idp_entity_id,
        "entityId": saml.entity_id or "",
        "singleSignOnServiceUrl": saml.single_sign_on_service_url,
        "singleLogoutServiceUrl": saml.single_logout_service_url or "",
        "nameIDPolicyFormat": NAME_ID_POLICY_URNS[saml.name_id_policy_format],
        "principalType": saml.principal_type,
        "principalAttribute": saml.principal_attribute or "",
        "wantAuthnRequestsSigned": _flag(saml.want_authn_requests_signed),
        "wantAssertionsSigned": _flag(saml.want_assertions_signed),
        "wantAssertionsEncrypted": _flag(saml.want_assertions_encrypted),
        "validateSignature": "true",  # always: see SamlIdpSettings.validate_signature
        "signingCertificate": CERTIFICATE_SEPARATOR.join(
            certificate_body(c) for c in saml.signing_certificates
        ),
        "postBindingResponse": _flag(saml.post_binding_response),
        "postBindingAuthnRequest": _flag(saml.post_binding_authn_request),
        "postBindingLogout": _flag(saml.post_binding_logout),
        "forceAuthn": _flag(saml.force_authn),
        "syncMode": saml.sync_mode,
    }
