"""A saml KeycloakClient's content: its typed settings (models/saml_client.py) as the attributes and fields
Keycloak's client representation holds them.

Keycloak adds attributes of its own to a SAML client (saml.artifact.binding.identifier, saml.allow.ecp.flow,
a generated signing key pair, ...): only the attributes written here are compared (drift.py), so those are
never drift. An absent URL is written as "" (Keycloak then keeps none) and compared as such; an absent
certificate is left out, so not managed.
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.models.client import KeycloakClientSpec
from keycloak_operator.models.saml_client import CANONICALIZATION_URIS, SamlClientSettings, certificate_body

PROTOCOL = "saml"


def _flag(value: bool) -> str:
    return "true" if value else "false"


def saml_attributes(saml: SamlClientSettings) -> dict[str, str]:
    """The settings under the attribute names Keycloak 26.7.3 reads them from (its SAML client defaults,
    read back from the real server, and the admin console's keys)."""
    attributes = {
        "saml_assertion_consumer_url_post": saml.assertion_consumer_url_post or "",
        "saml_assertion_consumer_url_redirect": saml.assertion_consumer_url_redirect or "",
        "saml_single_logout_service_url_post": saml.single_logout_service_url_post or "",
        "saml_single_logout_service_url_redirect": saml.single_logout_service_url_redirect or "",
        "saml_name_id_format": saml.name_id_format,
        "saml_force_name_id_format": _flag(saml.force_name_id_format),
        "saml.server.signature": _flag(saml.sign_documents),
        "saml.assertion.signature": _flag(saml.sign_assertions),
        "saml.client.signature": _flag(saml.client_signature_required),
        "saml.signature.algorithm": saml.signature_algorithm,
        "saml_signature_canonicalization_method": CANONICALIZATION_URIS[saml.canonicalization],
        "saml.encrypt": _flag(saml.encrypt_assertions),
        "saml.force.post.binding": _flag(saml.force_post_binding),
        "saml.authnstatement": _flag(saml.include_authn_statement),
    }
    if saml.signing_certificate is not None:
        attributes["saml.signing.certificate"] = certificate_body(saml.signing_certificate)
    if saml.encryption_certificate is not None:
        attributes["saml.encryption.certificate"] = certificate_body(saml.encryption_certificate)
    return attributes


def saml_content(spec: KeycloakClientSpec) -> dict[str, Any]:
    """The protocol's own part of a saml client's content; an absent `saml` block is every default."""
    saml = spec.saml or SamlClientSettings()
    return {
        "protocol": PROTOCOL,
        "redirectUris": sorted(set(spec.redirect_uris)),
        "frontchannelLogout": saml.front_channel_logout,
        "attributes": saml_attributes(saml),
    }
