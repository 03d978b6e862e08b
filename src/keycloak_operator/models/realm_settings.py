"""A KeycloakRealm's optional settings blocks: SMTP, themes, internationalisation, password policy,
brute-force protection, events and admin events.

Each block is optional, and an absent block is not managed: the realm's content (and so its hash) is then
exactly what it was before these fields existed, so upgrading the operator rewrites no realm, and a setting
made by hand in Keycloak is left alone. Inside a declared block every field defaults to Keycloak's own value
for a new realm (read from Keycloak 26.7.3), so declaring a block manages all of it.

Keycloak 26.7 itself accepts any theme, event type, event listener or default locale in a realm PUT and
fails later (a broken login page, a 500 on the next event): every field is bounded and patterned here, so
the API server refuses a hostile or mistyped value before the operator sees it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel

# An e-mail address as it goes into a mail header: RFC 5322 atext and dots, one '@', a host name. No space,
# no CR/LF (header injection), no '<>' or quotes.
EMAIL = rf"^[A-Za-z0-9.!#$%&'*+/=?^_`{{|}}~-]+@{pt.HOST[1:]}"
EMAIL_MAX = 254
# Text shown to people (display names in mail headers): no control characters, so no CR/LF either.
DISPLAY_MAX = 255
# A theme or provider id as Keycloak names them: `keycloak.v2`, `my-company`, `jboss-logging`.
PROVIDER_ID = r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
PROVIDER_ID_MAX = 255
# A BCP 47 language tag as Keycloak's locale selector takes it: `en`, `pt-BR`, `zh-Hant-TW`.
LOCALE = r"^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$"
LOCALE_MAX = 35
LOCALES_MAX = 64
# A Secret key, as the API server allows them.
SECRET_KEY = r"^[-._a-zA-Z0-9]+$"

# Keycloak 26.7.3's password policy providers (GET /admin/serverinfo, `passwordPolicies`).
PasswordPolicyName = Literal[
    "digits",
    "forceExpiredPasswordChange",
    "hashAlgorithm",
    "hashIterations",
    "length",
    "lowerCase",
    "maxAuthAge",
    "maxLength",
    "notContainsUsername",
    "notEmail",
    "notUsername",
    "passwordAge",
    "passwordBlacklist",
    "passwordHistory",
    "recoveryCodesWarningThreshold",
    "regexPattern",
    "specialChars",
    "upperCase",
]
PASSWORD_POLICY_MAX = 32
# A policy's argument. Keycloak splits the policy string on " and " and takes a policy's argument as what is
# between its first "(" and its last character: a value with no space cannot contain " and ", and no
# control character keeps the string one line.
POLICY_VALUE = r"^[\x21-\x7e]+$"
POLICY_VALUE_MAX = 255

# Keycloak 26.7.3's event types (GET /admin/serverinfo, `enums.eventType`). Keycloak stores any string and
# fails on it later; a type a newer Keycloak adds needs a newer operator.
EVENT_TYPES = (
    "AUTHREQID_TO_TOKEN", "CLIENT_DELETE", "CLIENT_INFO", "CLIENT_INITIATED_ACCOUNT_LINKING", "CLIENT_LOGIN",
    "CLIENT_REGISTER", "CLIENT_UPDATE", "CODE_TO_TOKEN", "CUSTOM_REQUIRED_ACTION", "DELETE_ACCOUNT",
    "EXECUTE_ACTIONS", "EXECUTE_ACTION_TOKEN", "FEDERATED_IDENTITY_LINK", "FEDERATED_IDENTITY_OVERRIDE_LINK",
    "GRANT_CONSENT", "IDENTITY_PROVIDER_FIRST_LOGIN", "IDENTITY_PROVIDER_LINK_ACCOUNT",
    "IDENTITY_PROVIDER_LOGIN", "IDENTITY_PROVIDER_POST_LOGIN", "IDENTITY_PROVIDER_RESPONSE",
    "IDENTITY_PROVIDER_RETRIEVE_TOKEN", "IMPERSONATE", "INTROSPECT_TOKEN", "INVALID_SIGNATURE", "INVITE_ORG",
    "JWT_AUTHORIZATION_GRANT", "LOGIN", "LOGOUT", "OAUTH2_DEVICE_AUTH", "OAUTH2_DEVICE_CODE_TO_TOKEN",
    "OAUTH2_DEVICE_VERIFY_USER_CODE", "OAUTH2_EXTENSION_GRANT", "PERMISSION_TOKEN",
    "PUSHED_AUTHORIZATION_REQUEST", "REFRESH_TOKEN", "REGISTER", "REGISTER_NODE", "REMOVE_CREDENTIAL",
    "REMOVE_FEDERATED_IDENTITY", "REMOVE_TOTP", "RESET_PASSWORD", "RESTART_AUTHENTICATION", "REVOKE_GRANT",
    "SEND_IDENTITY_PROVIDER_LINK", "SEND_RESET_PASSWORD", "SEND_VERIFY_EMAIL", "TOKEN_EXCHANGE",
    "UNREGISTER_NODE", "UPDATE_CONSENT", "UPDATE_CREDENTIAL", "UPDATE_EMAIL", "UPDATE_PASSWORD",
    "UPDATE_PROFILE", "UPDATE_TOTP", "USER_DISABLED_BY_PERMANENT_LOCKOUT",
    "USER_DISABLED_BY_TEMPORARY_LOCKOUT", "USER_INFO_REQUEST", "USER_SESSION_DELETED",
    "VALIDATE_ACCESS_TOKEN", "VERIFIABLE_CREDENTIAL_CREATE_OFFER", "VERIFIABLE_CREDENTIAL_NONCE_REQUEST",
    "VERIFIABLE_CREDENTIAL_OFFER_REQUEST", "VERIFIABLE_CREDENTIAL_PRE_AUTHORIZED_GRANT",
    "VERIFIABLE_CREDENTIAL_REQUEST", "VERIFY_EMAIL", "VERIFY_PROFILE",
)  # fmt: skip
EVENT_TYPE_NAMES = tuple(sorted({*EVENT_TYPES, *(f"{t}_ERROR" for t in EVENT_TYPES)}))


def _known_event_type(value: str) -> str:
    if value not in EVENT_TYPE_NAMES:
        raise ValueError(f"unknown event type {value!r}")
    return value


# Checked by the model and, as an enum, by the API server: both admit exactly EVENT_TYPE_NAMES.
EventType = Annotated[
    str, AfterValidator(_known_event_type), Field(json_schema_extra={"enum": list(EVENT_TYPE_NAMES)})
]
ProviderId = Annotated[str, Field(min_length=1, max_length=PROVIDER_ID_MAX, pattern=PROVIDER_ID)]
Locale = Annotated[str, Field(min_length=2, max_length=LOCALE_MAX, pattern=LOCALE)]
Email = Annotated[str, Field(min_length=3, max_length=EMAIL_MAX, pattern=EMAIL)]
DisplayText = Annotated[str, Field(min_length=1, max_length=DISPLAY_MAX, pattern=pt.NO_CONTROL)]
# Seconds that Keycloak keeps in a Java int: anything larger would overflow there.
INT_MAX = 2**31 - 1


class RealmSecretKey(CrdModel):
    """One key of a Secret in the realm's own namespace. There is no namespace field on purpose: the operator
    reads only Secrets of the namespace that declares the realm (ADR 0012)."""

    name: str = pt.object_name("Name of the Secret, in the KeycloakRealm's namespace.")
    key: str = Field(min_length=1, max_length=pt.SUBDOMAIN_MAX, pattern=SECRET_KEY, description="Key in it.")


class SmtpAuth(CrdModel):
    user: str = Field(min_length=1, max_length=DISPLAY_MAX, pattern=pt.NO_CONTROL, description="SMTP user.")
    password_secret: RealmSecretKey = Field(
        description="The SMTP password: a key of a Secret in the realm's namespace. It is sent to Keycloak "
        "and never shown in status, events or logs; a change to the Secret is sent on the next round."
    )


class SmtpSettings(CrdModel):
    """The mail server Keycloak sends e-mail through (verification, password reset, the `email` event
    listener)."""

    host: str = Field(min_length=1, max_length=pt.SUBDOMAIN_MAX, pattern=pt.HOST, description="SMTP host.")
    port: int | None = Field(
        default=None, ge=1, le=65535, description="SMTP port; Keycloak's default (25, or 465 with ssl)."
    )
    from_: Email = Field(alias="from", description="Sender address.")
    from_display_name: DisplayText | None = Field(default=None, description="Sender's display name.")
    reply_to: Email | None = Field(default=None, description="Reply-To address.")
    reply_to_display_name: DisplayText | None = Field(default=None, description="Reply-To display name.")
    envelope_from: Email | None = Field(default=None, description="Envelope sender (bounces go there).")
    ssl: bool = Field(default=False, description="SMTP over TLS (SMTPS).")
    starttls: bool = Field(default=False, description="Upgrade the connection with STARTTLS.")
    auth: SmtpAuth | None = Field(default=None, description="Log in to the SMTP server; absent: no login.")


class ThemeSettings(CrdModel):
    """Theme names; an absent one is not managed (Keycloak's default theme unless set by hand)."""

    login: ProviderId | None = Field(default=None, description="Login theme (e.g. keycloak.v2).")
    account: ProviderId | None = Field(default=None, description="Account console theme (e.g. keycloak.v3).")
    admin: ProviderId | None = Field(default=None, description="Admin console theme (e.g. keycloak.v2).")
    email: ProviderId | None = Field(default=None, description="E-mail theme (e.g. keycloak).")


class Internationalization(CrdModel):
    enabled: bool = Field(default=False, description="Let users pick a locale.")
    supported_locales: list[Locale] = Field(
        default_factory=list, max_length=LOCALES_MAX, description="Locales offered (BCP 47: en, pt-BR)."
    )
    default_locale: Locale | None = Field(
        default=None, description="The default locale; must be one of supportedLocales."
    )

    @model_validator(mode="after")
    def _default_is_supported(self) -> Internationalization:
        if self.default_locale is not None and self.default_locale not in self.supported_locales:
            raise ValueError("defaultLocale must be one of supportedLocales")
        return self


DEFAULT_LOCALE_RULE = {
    "rule": "!has(self.defaultLocale) || "
    "(has(self.supportedLocales) && self.defaultLocale in self.supportedLocales)",
    "message": "defaultLocale must be one of supportedLocales",
}


class PasswordPolicy(CrdModel):
    """One password policy, rendered into Keycloak's policy string as `name(value)`, or `name` without one
    (Keycloak then uses the policy's default)."""

    name: PasswordPolicyName = Field(description="Policy (Keycloak's id).")
    value: str | None = Field(
        default=None,
        min_length=1,
        max_length=POLICY_VALUE_MAX,
        pattern=POLICY_VALUE,
        description="Its argument (printable ASCII, no spaces): `12` for length, `argon2` for "
        "hashAlgorithm; absent: Keycloak's default.",
    )


class BruteForceProtection(CrdModel):
    """Temporary or permanent lockout after failed logins; every field defaults to Keycloak's."""

    enabled: bool = Field(default=False, description="Detect brute-force attacks.")
    permanent_lockout: bool = Field(default=False, description="Lock the user out permanently.")
    max_temporary_lockouts: int = Field(
        default=0, ge=0, le=INT_MAX, description="Temporary lockouts before a permanent one (0: no limit)."
    )
    strategy: Literal["MULTIPLE", "LINEAR"] = Field(
        default="MULTIPLE", description="How the wait grows: MULTIPLE (doubles) or LINEAR."
    )
    failure_factor: int = Field(default=30, ge=1, le=INT_MAX, description="Failures before a lockout.")
    wait_increment_seconds: int = Field(default=60, ge=0, le=INT_MAX, description="Wait added per lockout.")
    max_failure_wait_seconds: int = Field(default=900, ge=0, le=INT_MAX, description="Longest wait.")
    max_delta_time_seconds: int = Field(
        default=43200, ge=0, le=INT_MAX, description="When the failure count resets."
    )
    quick_login_check_milliseconds: int = Field(
        default=1000, ge=0, le=INT_MAX, description="Logins closer than this count as too quick."
    )
    minimum_quick_login_wait_seconds: int = Field(
        default=60, ge=0, le=INT_MAX, description="Wait after a too-quick login failure."
    )


class EventSettings(CrdModel):
    """Login events (saved by Keycloak, and sent to the listeners)."""

    enabled: bool = Field(default=False, description="Save login events.")
    expiration_seconds: int | None = Field(
        default=None, ge=1, le=2**53, description="How long saved events are kept; absent: forever."
    )
    enabled_types: list[EventType] = Field(
        default_factory=list,
        max_length=len(EVENT_TYPE_NAMES),
        description="Event types saved; empty: Keycloak's default set.",
    )
    listeners: list[ProviderId] = Field(
        default_factory=lambda: ["jboss-logging"],
        max_length=32,
        description="Event listener providers (Keycloak's default: jboss-logging).",
    )


class AdminEventSettings(CrdModel):
    enabled: bool = Field(default=False, description="Save admin events.")
    details_enabled: bool = Field(
        default=False, description="Include the representation of what changed (adminEventsDetailsEnabled)."
    )
