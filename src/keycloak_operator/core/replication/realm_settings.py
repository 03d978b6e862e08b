"""A realm's optional settings blocks as Keycloak's realm representation holds them, and the SMTP password's
way in: from a Secret of the realm's own namespace to the realm PUT, and nowhere else.

Only declared blocks are in the content (models/realm_settings.py: an absent block is not managed), so a
realm resource that declares none has the content, and the hash, it had before these fields existed.

The SMTP password is never part of the content. The content holds `"password": "**********"` inside
`smtpServer`, which is what Keycloak returns for a set password (so the drift check compares like with
like), and, under SMTP_PASSWORD_SOURCE, the Secret's uid and resourceVersion. A changed Secret changes that,
so the hash, so the realm is updated and the new password sent; a steady Secret changes nothing. The
resourceVersion rather than a digest of the value: a hash of the password, even salted with something public
(the status and the marker in Keycloak show the content hash), lets whoever reads it test guesses offline;
the resourceVersion says nothing about the value. The cost: an edit of the Secret that keeps the password
(a label, a re-create) sends it once more. The password itself is put in the body only by `with_password`,
in the writer, right before the request.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Final

from keycloak_operator.core.replication.drift import as_set
from keycloak_operator.core.replication.sync import Verdict
from keycloak_operator.models.realm import KeycloakRealmSpec
from keycloak_operator.models.realm_settings import PasswordPolicy, SmtpSettings

# What Keycloak returns in place of a set SMTP password (ComponentRepresentation.SECRET_VALUE); sent back
# unchanged, it keeps the stored password, so a body without the real one can never clear it.
MASKED: Final = "**********"
# Content only (left out of the PUT and of the drift check): which version of the password Secret was read.
SMTP_PASSWORD_SOURCE: Final = "smtpPasswordSource"
PASSWORD_FIELD: Final = "spec.smtp.auth.passwordSecret"


def render_password_policy(policies: list[PasswordPolicy]) -> str:
    """Keycloak's policy string, in the declared order (Keycloak keeps it verbatim and applies each):
    `length(12) and digits(1) and notUsername`; "" for none (Keycloak then has no policy)."""
    return " and ".join(p.name if p.value is None else f"{p.name}({p.value})" for p in policies)


def smtp_server(smtp: SmtpSettings) -> dict[str, str]:
    """Keycloak's `smtpServer` map (every value a string, only the keys set: Keycloak returns exactly the
    keys it was given), the password masked."""
    out = {
        "host": smtp.host,
        "from": smtp.from_,
        "ssl": _flag(smtp.ssl),
        "starttls": _flag(smtp.starttls),
        "auth": _flag(smtp.auth is not None),
    }
    optional = {
        "port": None if smtp.port is None else str(smtp.port),
        "fromDisplayName": smtp.from_display_name,
        "replyTo": smtp.reply_to,
        "replyToDisplayName": smtp.reply_to_display_name,
        "envelopeFrom": smtp.envelope_from,
    }
    out.update({k: v for k, v in optional.items() if v is not None})
    if smtp.auth is not None:
        out["user"] = smtp.auth.user
        out["password"] = MASKED
    return out


def _flag(value: bool) -> str:
    return "true" if value else "false"


def settings_content(spec: KeycloakRealmSpec) -> dict[str, Any]:
    """The Keycloak realm fields of the declared blocks; lists Keycloak keeps as sets are sorted."""
    out: dict[str, Any] = {}
    if spec.smtp is not None:
        out["smtpServer"] = smtp_server(spec.smtp)
    if spec.themes is not None:
        themes = {
            "loginTheme": spec.themes.login,
            "accountTheme": spec.themes.account,
            "adminTheme": spec.themes.admin,
            "emailTheme": spec.themes.email,
        }
        out.update({k: v for k, v in themes.items() if v is not None})
    if spec.internationalization is not None:
        i18n = spec.internationalization
        out["internationalizationEnabled"] = i18n.enabled
        out["supportedLocales"] = as_set(i18n.supported_locales)
        if i18n.default_locale is not None:
            out["defaultLocale"] = i18n.default_locale
    if spec.password_policy is not None:
        out["passwordPolicy"] = render_password_policy(spec.password_policy)
    if spec.brute_force_protection is not None:
        bf = spec.brute_force_protection
        out.update(
            {
                "bruteForceProtected": bf.enabled,
                "permanentLockout": bf.permanent_lockout,
                "maxTemporaryLockouts": bf.max_temporary_lockouts,
                "bruteForceStrategy": bf.strategy,
                "failureFactor": bf.failure_factor,
                "waitIncrementSeconds": bf.wait_increment_seconds,
                "maxFailureWaitSeconds": bf.max_failure_wait_seconds,
                "maxDeltaTimeSeconds": bf.max_delta_time_seconds,
                "quickLoginCheckMilliSeconds": bf.quick_login_check_milliseconds,
                "minimumQuickLoginWaitSeconds": bf.minimum_quick_login_wait_seconds,
            }
        )
    if spec.events is not None:
        ev = spec.events
        out.update(
            {
                "eventsEnabled": ev.enabled,
                # 0 is how Keycloak is told "never expire" (it then omits the field, which drift reads as 0).
                "eventsExpiration": ev.expiration_seconds or 0,
                "enabledEventTypes": as_set(ev.enabled_types),
                "eventsListeners": as_set(ev.listeners),
            }
        )
    if spec.admin_events is not None:
        out["adminEventsEnabled"] = spec.admin_events.enabled
        out["adminEventsDetailsEnabled"] = spec.admin_events.details_enabled
    if spec.otp_policy is not None:
        otp = spec.otp_policy
        out.update(
            {
                "otpPolicyType": otp.type,
                "otpPolicyAlgorithm": otp.algorithm,
                "otpPolicyDigits": otp.digits,
                "otpPolicyPeriod": otp.period,
                "otpPolicyLookAheadWindow": otp.look_ahead_window,
                "otpPolicyInitialCounter": otp.initial_counter,
                "otpPolicyCodeReusable": otp.code_reusable,
            }
        )
    if spec.web_authn_policy is not None:
        wa = spec.web_authn_policy
        out.update(
            {
                "webAuthnPolicyRpEntityName": wa.rp_entity_name,
                "webAuthnPolicySignatureAlgorithms": as_set(list(wa.signature_algorithms)),
                "webAuthnPolicyRpId": wa.rp_id,
                "webAuthnPolicyAttestationConveyancePreference": wa.attestation_conveyance_preference,
                "webAuthnPolicyAuthenticatorAttachment": wa.authenticator_attachment,
                "webAuthnPolicyRequireResidentKey": wa.require_resident_key,
                "webAuthnPolicyUserVerificationRequirement": wa.user_verification_requirement,
                "webAuthnPolicyCreateTimeout": wa.timeout_seconds,
                "webAuthnPolicyAvoidSameAuthenticatorRegister": wa.avoid_same_authenticator_register,
            }
        )
    return out


# Keycloak 26's updateRealm rebuilds the WebAuthn (two-factor) policy from scratch whenever the PUT has a
# non-empty webAuthnPolicyRpEntityName: every webAuthnPolicy* field missing from the body is reset to its
# default (read from RepresentationToModel/DefaultExportImportManager source, not exercised field by field).
# The passwordless policy is a separate set of fields (webAuthnPolicyPasswordless*), rebuilt only by its own.
WEBAUTHN_PREFIX: Final = "webAuthnPolicy"
WEBAUTHN_PASSWORDLESS_PREFIX: Final = "webAuthnPolicyPasswordless"


def keep_unmanaged_webauthn(body: Mapping[str, Any], listed: Mapping[str, Any] | None) -> dict[str, Any]:
    """A realm PUT body that declares the WebAuthn policy, with every webAuthnPolicy* field the operator
    does not manage copied from the realm as listed, so Keycloak's rebuild keeps them (extra origins,
    acceptable AAGUIDs, ...). A body without the policy, or no listing, is returned as it is."""
    out = dict(body)
    if not out.get("webAuthnPolicyRpEntityName") or listed is None:
        return out
    for name, value in listed.items():
        if (
            name.startswith(WEBAUTHN_PREFIX)
            and not name.startswith(WEBAUTHN_PASSWORDLESS_PREFIX)
            and name not in out
        ):
            out[name] = value
    return out


def with_password(body: Mapping[str, Any], password: str | None) -> dict[str, Any]:
    """A realm write body with the SMTP password in it (`password`: read from the Secret this round; None
    leaves the mask, which Keycloak reads as "keep the stored one")."""
    out = {k: v for k, v in body.items() if k != SMTP_PASSWORD_SOURCE}
    smtp = out.get("smtpServer")
    if password is not None and isinstance(smtp, Mapping) and "password" in smtp:
        out["smtpServer"] = {**smtp, "password": password}
    return out


def password_ref(spec: KeycloakRealmSpec) -> tuple[str, str] | None:
    """(Secret name, key) of the SMTP password, if the realm declares one. The Secret is always read from
    the realm resource's own namespace: the reference has no namespace to name another (ADR 0012)."""
    if spec.smtp is None or spec.smtp.auth is None:
        return None
    ref = spec.smtp.auth.password_secret
    return ref.name, ref.key


def read_password(namespace: str, ref: tuple[str, str], secret: Mapping[str, Any] | None) -> str | Verdict:
    """The password from the Secret as found, or why the realm waits (the message names the field and the
    Secret, never a value)."""
    name, key = ref
    where = f"{PASSWORD_FIELD}: Secret {namespace}/{name}"
    if secret is None:
        return Verdict("Pending", "SecretNotFound", f"{where} not found; nothing was written for this realm")
    raw = (secret.get("data") or {}).get(key)
    if not isinstance(raw, str):
        return Verdict("Pending", "SecretKeyNotFound", f"{where} has no key {key!r}; nothing was written")
    try:
        return base64.b64decode(raw, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return Verdict(
            "Error", "SecretInvalid", f"{where} key {key!r} is not UTF-8 text; nothing was written"
        )


def password_source(secret: Mapping[str, Any]) -> str:
    """What the content records of the Secret read: its uid and resourceVersion, never its value."""
    meta = secret.get("metadata") or {}
    return f"{meta.get('uid', '')}/{meta.get('resourceVersion', '')}"
