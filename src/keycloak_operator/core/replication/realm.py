"""The realm kind: a KeycloakRealm's representation in Keycloak, its scope (every realm of one server), what
holds its deletion back, and the bodies of its writes.

A realm is identified in Keycloak by its name, which is both its id in the admin API and its natural key.
Its realm roles are part of its content (a change to them is a change to the realm) but are written through
their own endpoints (roles.py): a realm PUT ignores them.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any, Final

from pydantic import ValidationError

from keycloak_operator.core.replication import realm_defaults, realm_settings
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.marker import (
    MARKER_ATTRIBUTES,
    is_marker_attribute,
    marked,
    string_attributes,
)
from keycloak_operator.core.replication.plan import Create, Update
from keycloak_operator.core.replication.roles import role_owner
from keycloak_operator.core.replication.sync import (
    NAMESPACE_NOT_ALLOWED,
    NO_REVOCATION,
    Resource,
    Revocation,
    ScopePlan,
    Verdict,
    plan_scope,
    waits_on_unreadable,
)
from keycloak_operator.kernel import names
from keycloak_operator.models.realm import KeycloakRealmSpec, RealmRole

KIND: Final = names.REALM_KIND
# Fields of a realm's content that are not in its PUT nor compared with what Keycloak returns: the roles and
# what every user gets (realm_defaults.py; written by calls of their own), and which SMTP password Secret
# was read (realm_settings.py).
SUBRESOURCES: Final = ("roles", *realm_defaults.PARTS, realm_settings.SMTP_PASSWORD_SOURCE)


def realm_name(spec: KeycloakRealmSpec, resource_name: str) -> str:
    return spec.realm_name or resource_name


def realm_content(spec: KeycloakRealmSpec, resource_name: str) -> dict[str, Any]:
    """The realm as the resource declares it; `roles` is applied through the roles endpoints."""
    return {
        "realm": realm_name(spec, resource_name),
        "enabled": spec.enabled,
        "displayName": spec.display_name,
        "registrationAllowed": spec.login.registration_allowed,
        "resetPasswordAllowed": spec.login.reset_password_allowed,
        "rememberMe": spec.login.remember_me,
        "loginWithEmailAllowed": spec.login.login_with_email_allowed,
        "verifyEmail": spec.login.verify_email,
        "accessTokenLifespan": spec.tokens.access_token_lifespan_seconds,
        "ssoSessionIdleTimeout": spec.tokens.sso_session_idle_timeout_seconds,
        "ssoSessionMaxLifespan": spec.tokens.sso_session_max_lifespan_seconds,
        "roles": {"realm": [{"name": r.name, "description": r.description} for r in _sorted(spec.roles)]},
        **realm_settings.settings_content(spec),
        **realm_defaults.defaults_content(spec),
    }


def _sorted(roles: list[RealmRole]) -> list[RealmRole]:
    return sorted(roles, key=lambda r: r.name)


def realm_write(content: Mapping[str, Any]) -> dict[str, Any]:
    """The body of a realm PUT: roles travel separately (Keycloak ignores them on update)."""
    return {k: v for k, v in content.items() if k not in SUBRESOURCES}


def owner_text(key: ObjectKey) -> str:
    """The realm resource as its roles' owner attribute names it: `namespace/name`."""
    return f"{key.namespace}/{key.name}"


def create_body(op: Create, smtp_password: str | None = None) -> dict[str, Any]:
    """A new realm, marked, with its declared roles (each marked as this resource's) in the same request.
    `smtp_password`: read from its Secret this round (realm_settings.py), put in only here."""
    body = realm_settings.with_password(marked(op.content, op.key), smtp_password)
    # Keycloak's realm representation has fields of these names (defaultGroups as paths): never sent here.
    for part in realm_defaults.PARTS:
        body.pop(part, None)
    owner = owner_text(op.key)
    body["roles"] = {"realm": [{**r, "attributes": role_owner(owner)} for r in op.content["roles"]["realm"]]}
    return body


def others_attributes(listed: Mapping[str, Any] | None) -> dict[str, str]:
    """The attributes of a realm as listed that are not ours (no kcop.dev.* key): the Frontend URL, the ACR
    map, session, CIBA, PAR and device settings, anything set by hand. Keycloak 26.7.3's realm PUT with
    `attributes` removes every attribute not sent (read in its bytecode, DefaultExportImportManager
    .updateRealm; seen on the real server), so every write of ours that sends attributes sends these back."""
    attributes = string_attributes(listed.get("attributes") if listed is not None else None)
    return {k: v for k, v in attributes.items() if not is_marker_attribute(k)}


def update_body(
    op: Update, smtp_password: str | None = None, listed: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """`listed`: the realm as this round listed it; its attributes that are not ours are kept, and its
    unmanaged WebAuthn fields."""
    body = realm_write(marked(op.content, op.key))
    body["attributes"] = {**others_attributes(listed), **body["attributes"]}
    body = realm_settings.with_password(body, smtp_password)
    return realm_settings.keep_unmanaged_webauthn(body, listed)


def smtp_password_ref(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """(Secret, key) of a realm resource's SMTP password; None without one (or with an invalid spec)."""
    try:
        spec = KeycloakRealmSpec.model_validate(obj.get("spec") or {})
    except ValidationError:
        return None
    return realm_settings.password_ref(spec)


def with_smtp_secret(
    realm: Resource, ref: tuple[str, str], secret: Mapping[str, Any] | None
) -> tuple[Resource, str | None]:
    """The realm with what its SMTP password Secret (`secret`, read from the realm's own namespace, None if
    missing) gives it: the Secret's version in its content and the password for the writer; or, when the
    Secret or its key is missing, that as its problem (nothing written for it; other realms go on). A realm
    that already has a problem or is being deleted needs no password: its Secret is not read (a namespace
    being deleted takes its Secrets first, and must not keep the realm's finalizer)."""
    if realm.problem is not None or realm.deleting:
        return realm, None
    found = realm_settings.read_password(realm.key.namespace, ref, secret)
    if isinstance(found, Verdict):
        return replace(realm, problem=found), None
    assert secret is not None
    content = {**realm.content, realm_settings.SMTP_PASSWORD_SOURCE: realm_settings.password_source(secret)}
    return replace(realm, content=content), found


def release_body(listed: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Preserve on delete: the realm stays and is no longer ours. Its attributes as listed are sent back
    without ours (the PUT removes those not sent, see others_attributes); with no listing to go by, the
    marker's attributes emptied."""
    if listed is None:
        return {"attributes": dict.fromkeys(MARKER_ATTRIBUTES, "")}
    return {"attributes": others_attributes(listed)}


def keeping_attributes(body: Mapping[str, Any], listed: Mapping[str, Any] | None) -> dict[str, Any]:
    """A realm PUT of fields that are not attributes (flow bindings, `enabled`), sent with the realm's
    attributes as `listed` (ours among them). Keycloak 26.7.3 resets the CIBA and PAR settings to their
    defaults on every realm PUT whose attributes do not name them, even a PUT with no attributes at all
    (updateCibaSettings and updateParSettings read the attributes sent; seen on the real server: a binding
    write turned a hand-set CIBA delivery mode `ping` back into `poll`)."""
    attributes = listed.get("attributes") if listed is not None else None
    if not isinstance(attributes, Mapping):  # nothing to go by: an empty map would remove them all, ours too
        return dict(body)
    return {**body, "attributes": string_attributes(attributes)}


def disable_body(listed: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Revocation's first step: the realm switched off, otherwise kept whole (its attributes as `listed`
    sent back, see keeping_attributes)."""
    return keeping_attributes({"enabled": False}, listed)


def remote_id(op: Create | Update) -> str:
    """The realm's id in Keycloak once written: its name (so a rename moves it)."""
    return str(op.content["realm"])


def blocked_realm_deletes(realms: Sequence[Resource], clients: Sequence[Resource]) -> dict[ObjectKey, str]:
    """A realm resource being deleted while clients (or client scopes, groups, ...) are still declared in
    it waits, whole: deleting the realm in Keycloak would take them with it behind their owners' backs."""
    declared: dict[ObjectKey, list[str]] = {}
    for c in clients:
        # Only what the realm allows counts: a namespace it does not allow cannot keep it from going, whatever
        # that namespace declared (in_realm.declared judges the namespace before the spec). Judged by the
        # namespace's verdict, not by Forbidden as such: a refusal of part of an allowed resource (a role not
        # granted) leaves an object of an allowed namespace in the realm, which still holds it.
        allowed = c.problem is None or c.problem.reason != NAMESPACE_NOT_ALLOWED
        if not c.deleting and c.parent is not None and allowed:
            what = "" if c.key.kind == names.CLIENT_KIND else f"{c.key.kind} "
            declared.setdefault(c.parent, []).append(f"{what}{c.key.namespace}/{c.key.name}")
    out = {}
    for r in realms:
        if r.deleting and r.key in declared:
            listed = sorted(declared[r.key])
            shown = ", ".join(listed[:5]) + (f" and {len(listed) - 5} more" if len(listed) > 5 else "")
            out[r.key] = f"clients are still declared in this realm: {shown}; delete them first"
    return out


def plan_realms(
    realms: Sequence[Resource],
    clients: Sequence[Resource],
    observed: Iterable[Mapping[str, Any]],
    namespaces: Container[str] | None = None,
    *,
    declared_elsewhere: AbstractSet[ObjectKey] = frozenset(),
    revocation: Revocation = NO_REVOCATION,
    waiting: Mapping[ObjectKey, str] | None = None,
) -> ScopePlan:
    """`waiting`: more realm deletions that must wait, with why (`watched.deletions_waiting`)."""
    return plan_scope(
        KIND,
        realms,
        observed,
        remote_id_of="realm",
        natural_key_of="realm",
        subresources=SUBRESOURCES,
        blocked={**(waiting or {}), **blocked_realm_deletes(realms, clients)},
        namespaces=namespaces,
        declared_elsewhere=declared_elsewhere,
        revocation=revocation,
        never_adopt=frozenset({"master"}),  # the administrators' realm: never anyone's to declare
    )


def releasable_without_server(realm: Resource) -> bool:
    """A realm resource being deleted that names no server the operator can reach (its Keycloak resource is
    gone, taking the server with it; or it was never allowed or valid, so nothing was written): nothing is
    left for the operator to delete, and its finalizer goes. Otherwise a namespace holding both a Keycloak
    and realms on it could never finish deleting. Not one whose Keycloak is in a namespace that could not be
    read this round: that Keycloak was not found, which does not mean it is gone."""
    return realm.deleting and realm.problem is not None and not waits_on_unreadable(realm.problem)


def with_login_problem(realm: Resource, status: int, message: str) -> Resource:
    """A realm whose admin login failed (`status`, `message`: the error) has that as its problem, unless it
    already has one: nothing is written for it this round, and a deleting one keeps its finalizer."""
    if realm.problem is not None:
        return realm
    if realm.deleting and status == 404:
        message += (
            f"; the realm stays in Keycloak and this resource keeps the finalizer"
            f" {names.REPLICATION_FINALIZER} until the Secret is back (or the finalizer is removed)"
        )
    return replace(realm, problem=Verdict("Error", "AdminLoginFailed", message))
