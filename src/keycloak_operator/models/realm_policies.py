"""A KeycloakRealm's OTP and WebAuthn (two-factor) policies: plain fields of Keycloak's realm
representation, each block optional and, absent, not managed (as the blocks of realm_settings.py). Inside a
declared block every field defaults to Keycloak 26.7.3's value for a new realm (read from a fresh realm), so
declaring a block manages all of it.

Keycloak 26.7.3 applies a realm PUT's OTP fields only when `otpPolicyType` is in it (a PUT of
`otpPolicyDigits` alone is ignored), and a PUT of `otpPolicyType` with only some of the others left its
realm list (GET /admin/realms) answering 500 from then on (both seen on the real server): the block always
sends them all.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel
from keycloak_operator.models.realm_settings import DISPLAY_MAX, INT_MAX, PROVIDER_ID_MAX

# WebAuthn's COSE algorithms by the names Keycloak's admin console offers; RS1 (SHA-1) is left out on
# purpose: a policy declared here never asks for it.
SignatureAlgorithm = Literal["ES256", "ES384", "ES512", "RS256", "RS384", "RS512"]
NOT_SPECIFIED: Final = "not specified"


def _keycloak_default_algorithms() -> list[SignatureAlgorithm]:
    return ["ES256", "RS256"]


class OtpPolicy(CrdModel):
    type: Literal["totp", "hotp"] = Field(default="totp", description="Time-based or counter-based.")
    algorithm: Literal["HmacSHA1", "HmacSHA256", "HmacSHA512"] = Field(
        default="HmacSHA1", description="HMAC hash (authenticator apps mostly support only HmacSHA1)."
    )
    digits: Literal[6, 8] = Field(default=6, description="Code length.")
    period: int = Field(default=30, ge=1, le=3600, description="totp: seconds a code is valid.")
    look_ahead_window: int = Field(
        default=1, ge=0, le=100, description="Codes before and after the expected one also accepted."
    )
    initial_counter: int = Field(default=0, ge=0, le=INT_MAX, description="hotp: the counter's start.")
    code_reusable: bool = Field(default=False, description="A code may be used more than once.")


class WebAuthnPolicy(CrdModel):
    rp_entity_name: str = Field(
        default="keycloak",
        min_length=1,
        max_length=DISPLAY_MAX,
        pattern=pt.NO_CONTROL,
        description="Relying party name shown by the authenticator.",
    )
    signature_algorithms: list[SignatureAlgorithm] = Field(
        default_factory=_keycloak_default_algorithms,
        min_length=1,
        max_length=6,
        description="Accepted signature algorithms.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    rp_id: str = Field(
        default="",
        max_length=PROVIDER_ID_MAX,
        pattern=r"^([A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*)?$",
        description="Relying party id, a host name (empty: the server's host).",
    )
    attestation_conveyance_preference: Literal["not specified", "none", "indirect", "direct"] = Field(
        default=NOT_SPECIFIED, description="Attestation asked of the authenticator."
    )
    authenticator_attachment: Literal["not specified", "platform", "cross-platform"] = Field(
        default=NOT_SPECIFIED, description="Built-in (platform) or roaming (cross-platform) authenticators."
    )
    require_resident_key: Literal["not specified", "Yes", "No"] = Field(
        default=NOT_SPECIFIED, description="Discoverable (resident) credential required."
    )
    user_verification_requirement: Literal["not specified", "required", "preferred", "discouraged"] = Field(
        default=NOT_SPECIFIED, description="User verification (PIN, biometrics) asked for."
    )
    timeout_seconds: int = Field(
        default=0, ge=0, le=31_536_000, description="Registration timeout (0: the browser's default)."
    )
    avoid_same_authenticator_register: bool = Field(
        default=False, description="Refuse registering an authenticator the user already has."
    )
