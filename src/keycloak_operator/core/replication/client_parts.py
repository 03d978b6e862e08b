"""A client's optional settings (models/client_settings.py): how they sit in the client's content, and the
writes that bring its sub-objects (client roles, protocol mappers, default and optional client scopes) to
what is declared.

Attributes (PKCE, logout, token lifespan, post-logout URIs) and `frontchannelLogout` travel in the client's
own PUT and are compared by the client's drift check. The sub-objects do not: a client PUT leaves them alone
(checked against Keycloak 26.7.3: it ignores `defaultClientScopes`, and keeps mappers it is not sent), so
they are in the content (a change to them changes the client's hash) but written through their own
endpoints, compared each round with what Keycloak holds, by name:

- A client role or a mapper the operator created carries its owner (a role attribute, as realm roles do:
  roles.py) or its content hash (a mapper config key; Keycloak keeps unknown keys). Only those are updated
  or deleted; a declared name held by one made by hand is a conflict, left alone and reported.
- Client scopes are links, not objects: a declared list is the exact set attached.

Writes go deletes first (a scope moved from default to optional is detached before it is attached again),
then creates, then updates. An absent field plans nothing, whatever Keycloak holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from keycloak_operator.core.replication.drift import as_set
from keycloak_operator.core.replication.marker import content_hash
from keycloak_operator.core.replication.roles import owner_of, role_owner
from keycloak_operator.core.replication.service_account import SA_ROLES, refs_content, roles_content
from keycloak_operator.core.replication.sync import Verdict
from keycloak_operator.models.client_settings import URI_SEPARATOR, ClientRole, ClientSettings

ROLES: Final = "clientRoles"
MAPPERS: Final = "protocolMappers"
COMPOSITES: Final = "composites"  # inside a declared role: role_composites.py
DEFAULT_SCOPES: Final = "defaultClientScopes"
OPTIONAL_SCOPES: Final = "optionalClientScopes"
# Content written by calls of their own: left out of the client's PUT and of its drift check.
# Service-account role mappings: core/replication/service_account.py.
SUBRESOURCES: Final = (ROLES, MAPPERS, DEFAULT_SCOPES, OPTIONAL_SCOPES, SA_ROLES)
# A mapper's config key holding the hash of what the operator wrote: marks the mapper as the operator's and
# says when a declared key was removed (Keycloak adds keys of its own, so the keys alone cannot tell).
MAPPER_HASH: Final = "kcop.dev.content-hash"
PROTOCOL: Final = "openid-connect"  # a client's content without `protocol` predates saml clients
SCOPE_FIELDS: Final = {
    DEFAULT_SCOPES: "spec.defaultClientScopes",
    OPTIONAL_SCOPES: "spec.optionalClientScopes",
}

Part = Literal["role", "mapper", "default-scope", "optional-scope"]
Operation = Literal["delete", "create", "update"]


def settings_content(spec: ClientSettings) -> dict[str, Any]:
    """The declared settings as Keycloak's client representation holds them; absent ones left out."""
    out: dict[str, Any] = {}
    attributes: dict[str, str] = {}
    if spec.pkce_method is not None:
        attributes["pkce.code.challenge.method"] = spec.pkce_method
    if spec.logout is not None:
        out["frontchannelLogout"] = spec.logout.front_channel
        attributes["backchannel.logout.url"] = spec.logout.back_channel_url or ""
        attributes["backchannel.logout.session.required"] = _flag(spec.logout.back_channel_session_required)
    if spec.access_token_lifespan_seconds is not None:
        attributes["access.token.lifespan"] = str(spec.access_token_lifespan_seconds)
    if spec.post_logout_redirect_uris is not None:
        attributes["post.logout.redirect.uris"] = URI_SEPARATOR.join(as_set(spec.post_logout_redirect_uris))
    if attributes:
        out["attributes"] = attributes
    if spec.roles is not None:
        out[ROLES] = [_role(r) for r in sorted(spec.roles, key=_name)]
    if spec.protocol_mappers is not None:
        out[MAPPERS] = [
            {"name": m.name, "protocolMapper": m.protocol_mapper, "config": dict(sorted(m.config.items()))}
            for m in sorted(spec.protocol_mappers, key=_name)
        ]
    if spec.default_client_scopes is not None:
        out[DEFAULT_SCOPES] = as_set(spec.default_client_scopes)
    if spec.optional_client_scopes is not None:
        out[OPTIONAL_SCOPES] = as_set(spec.optional_client_scopes)
    return {**out, **roles_content(spec.service_account_roles)}


def _role(role: ClientRole) -> dict[str, Any]:
    """A role's composites only when declared: a role without them keeps the content it had before."""
    out: dict[str, Any] = {"name": role.name, "description": role.description}
    return out if role.composites is None else {**out, COMPOSITES: refs_content(role.composites)}


def _name(item: Any) -> str:
    return str(item.name)


def _flag(value: bool) -> str:
    return "true" if value else "false"


def client_write(body: Mapping[str, Any], *, create: bool = False) -> dict[str, Any]:
    """A client's POST or PUT body: its sub-objects travel separately. A create keeps the declared scope
    lists: Keycloak then attaches exactly those (they were checked to exist: missing_scopes) instead of the
    realm's defaults, which would be detached again one write at a time."""
    kept = (DEFAULT_SCOPES, OPTIONAL_SCOPES) if create else ()
    return {k: v for k, v in body.items() if k not in SUBRESOURCES or k in kept}


@dataclass(frozen=True)
class PartWrite:
    part: Part
    operation: Operation  # for a scope: create attaches it, delete detaches it
    name: str
    remote_id: str | None = None  # a mapper's or a scope's id; None for roles (named in the path)
    body: Mapping[str, Any] | None = None


@dataclass
class PartsPlan:
    writes: list[PartWrite] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # `role x`, `mapper y`: made by hand, left alone

    def ordered(self) -> list[PartWrite]:
        rank = {"delete": 0, "create": 1, "update": 2}
        return sorted(self.writes, key=lambda w: rank[w.operation])  # stable: the planned order within

    def changed(self) -> list[str]:
        """What the writes touch, for an event: `protocolMappers/audience`, `defaultClientScopes/email`."""
        label = {"role": ROLES, "mapper": MAPPERS, "default-scope": DEFAULT_SCOPES}
        return sorted({f"{label.get(w.part, OPTIONAL_SCOPES)}/{w.name}" for w in self.writes})


def usable_scopes(
    realm_scopes: Mapping[str, tuple[str, str | None, str]], namespace: str, protocol: str = PROTOCOL
) -> dict[str, str]:
    """Name -> id of the realm's client scopes a client of `namespace` and `protocol` may attach: those no
    resource declares (Keycloak's own, or made by the realm's admin) and those `namespace` declares, of the
    client's protocol. Another namespace's KeycloakClientScope never shapes this namespace's tokens (seed
    003). Keycloak 26.7.3 answers 204 to attaching a scope of the other protocol and attaches nothing
    (checked against the real server), so such a scope is "missing" rather than written every round.
    `realm_scopes`: name -> (id, the namespace in its marker or None when unmarked, its protocol)."""
    return {
        name: sid
        for name, (sid, owner, of) in realm_scopes.items()
        if (owner is None or owner == namespace) and of == protocol
    }


def missing_scopes(content: Mapping[str, Any], realm_scopes: Iterable[str]) -> Verdict | None:
    """A declared client scope the realm does not have (or not one this namespace may use): nothing is
    written for the client (Keycloak would take the client and drop the scope without a word), and the field
    and the scope are named."""
    known = set(realm_scopes)
    for key, where in SCOPE_FIELDS.items():
        absent = [s for s in content.get(key, []) if s not in known]
        if absent:
            return Verdict(
                "Pending",
                "ClientScopeNotFound",
                f"{where}: no client scope {', '.join(map(repr, absent))} in the realm that this namespace "
                "may use (its own or an undeclared one, of the client's protocol); nothing was written",
            )
    return None


def declares_scopes(content: Mapping[str, Any]) -> bool:
    return DEFAULT_SCOPES in content or OPTIONAL_SCOPES in content


def mapper_body(
    declared: Mapping[str, Any], remote_id: str | None = None, protocol: str = PROTOCOL
) -> dict[str, Any]:
    """A mapper's body, of its client's protocol (the model checked the mapper type against it)."""
    body = {
        "name": declared["name"],
        "protocol": protocol,
        "protocolMapper": declared["protocolMapper"],
        "config": {**declared["config"], MAPPER_HASH: content_hash(declared)},
    }
    return body if remote_id is None else {**body, "id": remote_id}


def _mapper_in_step(declared: Mapping[str, Any], seen: Mapping[str, Any]) -> bool:
    config = seen.get("config") or {}
    return (
        seen.get("protocolMapper") == declared["protocolMapper"]
        and config.get(MAPPER_HASH) == content_hash(declared)
        and all(config.get(k) == v for k, v in declared["config"].items())
    )


def plan_mappers(content: Mapping[str, Any], observed: Iterable[Mapping[str, Any]] | None) -> PartsPlan:
    plan = PartsPlan()
    if MAPPERS not in content:
        return plan
    existing = {str(m.get("name")): m for m in observed or [] if isinstance(m, Mapping)}
    ours = {n for n, m in existing.items() if MAPPER_HASH in (m.get("config") or {})}
    declared = {m["name"]: m for m in content[MAPPERS]}
    protocol = str(content.get("protocol") or PROTOCOL)
    for name in sorted(ours - declared.keys()):
        plan.writes.append(PartWrite("mapper", "delete", name, str(existing[name].get("id"))))
    for name, want in sorted(declared.items()):
        seen = existing.get(name)
        if seen is None:
            plan.writes.append(PartWrite("mapper", "create", name, None, mapper_body(want, None, protocol)))
        elif name not in ours:
            plan.conflicts.append(f"mapper {name}")
        elif not _mapper_in_step(want, seen):
            remote = str(seen.get("id"))
            body = mapper_body(want, remote, protocol)
            plan.writes.append(PartWrite("mapper", "update", name, remote, body))
    return plan


def plan_client_roles(
    content: Mapping[str, Any], observed: Iterable[Mapping[str, Any]] | None, owner: str
) -> PartsPlan:
    """As realm roles (roles.py): only roles carrying this client resource's owner attribute are touched."""
    plan = PartsPlan()
    if ROLES not in content:
        return plan
    existing = {str(r.get("name")): r for r in observed or [] if isinstance(r, Mapping)}
    declared = {r["name"]: r.get("description", "") for r in content[ROLES]}
    mine = {n for n, r in existing.items() if owner_of(r) == owner}
    for name in sorted(mine - declared.keys()):
        plan.writes.append(PartWrite("role", "delete", name))
    for name, description in sorted(declared.items()):
        body = {"name": name, "description": description, "attributes": role_owner(owner)}
        seen = existing.get(name)
        if seen is None:
            plan.writes.append(PartWrite("role", "create", name, None, body))
        elif name not in mine:
            plan.conflicts.append(f"role {name}")
        elif (seen.get("description") or "") != description:
            plan.writes.append(PartWrite("role", "update", name, None, body))
    return plan


def plan_scopes(
    content: Mapping[str, Any], observed_client: Mapping[str, Any], realm_scopes: Mapping[str, str]
) -> PartsPlan:
    """`realm_scopes`: name -> id of the realm's client scopes (missing_scopes ran first)."""
    plan = PartsPlan()
    for key, part in ((DEFAULT_SCOPES, "default-scope"), (OPTIONAL_SCOPES, "optional-scope")):
        if key not in content:
            continue
        want = set(content[key])
        have = {s for s in observed_client.get(key) or [] if isinstance(s, str)}
        for name in sorted(have - want):
            if name in realm_scopes:
                plan.writes.append(PartWrite(part, "delete", name, realm_scopes[name]))  # type: ignore[arg-type]
        for name in sorted(want - have):
            plan.writes.append(PartWrite(part, "create", name, realm_scopes.get(name)))  # type: ignore[arg-type]
    return plan


def plan_parts(
    content: Mapping[str, Any],
    observed_client: Mapping[str, Any],
    observed_roles: Iterable[Mapping[str, Any]] | None,
    realm_scopes: Mapping[str, str],
    owner: str,
) -> PartsPlan:
    """Every sub-object of one client; `observed_roles`: its roles as read (None when it declares none)."""
    plans = (
        plan_client_roles(content, observed_roles, owner),
        plan_mappers(content, observed_client.get(MAPPERS)),
        plan_scopes(content, observed_client, realm_scopes),
    )
    return PartsPlan([w for p in plans for w in p.writes], [c for p in plans for c in p.conflicts])
