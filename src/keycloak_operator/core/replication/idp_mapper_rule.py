"""Who may make an identity provider's mappers hand out which roles and groups. Pure: the shell
(shell/replication/identity_providers.py) reads the realm's roles, clients and groups and passes them in.

A provider's role and group mappers give every user who signs in through it what they name, so they follow
the rule of a service account's roles (service_account.py), with the same grant list (the realm resource's
spec.serviceAccountGrants) and the same code, for every namespace, the realm's own included:
- a realm role: allowed, unless it is composite (or not known to be plain), which needs a grant naming no
  clientId;
- a client role: allowed for a client whose Keycloak object carries the provider's namespace's marker;
  any other (`realm-management`, `broker`, a hand-made client, another team's): only with a grant naming
  the namespace, the clientId and the role;
- a group: only one whose Keycloak object carries a KeycloakGroup marker of the provider's namespace (no
  grant opens another's: a group hands out all its roles and its subgroups' memberships at once).

A role is named in mapper config as Keycloak reads it (KeycloakModelUtils.getRoleFromString): the first
split at a '.' whose left part is a clientId names that client's role; else the whole text is a realm role.
The advanced mappers, whose config holds JSON lists of claims to roles or groups, are not offered
(models/identity_provider.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from keycloak_operator.core import names
from keycloak_operator.core.replication.marker import read_marker
from keycloak_operator.core.replication.service_account import Grant, RealmView, granted, needs_grant
from keycloak_operator.core.replication.sync import Verdict

ROLE_MAPPERS: Final = frozenset({"oidc-hardcoded-role-idp-mapper", "oidc-role-idp-mapper"})
GROUP_MAPPERS: Final = frozenset({"oidc-hardcoded-group-idp-mapper"})
NOT_GRANTED: Final = "MapperRoleNotGranted"
NOT_OWNED: Final = "MapperGroupNotOwned"


def hands_out(content: Mapping[str, Any]) -> bool:
    """Whether the provider declares a mapper that gives a role or a group (the realm must be read)."""
    return any(
        m.get("identityProviderMapper") in ROLE_MAPPERS | GROUP_MAPPERS for m in content.get("mappers") or ()
    )


def split_role(text: str, client_ids: Iterable[str]) -> tuple[str | None, str]:
    """(clientId, role), clientId None for a realm role, as Keycloak reads a mapper's `role`."""
    known = set(client_ids)
    at = text.find(".")
    while at >= 0:
        if text[:at] in known:
            return text[:at], text[at + 1 :]
        at = text.find(".", at + 1)
    return None, text


def group_owners(observed: Sequence[Any]) -> dict[str, str | None]:
    """Group path -> namespace of the KeycloakGroup its marker names (None: unmarked, another kind)."""
    out: dict[str, str | None] = {}
    for g in observed:
        if not isinstance(g, Mapping) or not isinstance(g.get("path"), str):
            continue
        found = read_marker(g.get("attributes"))
        out[g["path"]] = (
            found.key.namespace if found is not None and found.key.kind == names.GROUP_KIND else None
        )
    return out


def mapper_problem(
    content: Mapping[str, Any],
    namespace: str,
    grants: Iterable[Grant],
    granted_by: str,
    view: RealmView,
    groups: Mapping[str, str | None],
) -> Verdict | None:
    """The first mapper of the provider that hands out what its namespace may not give, as a Forbidden
    verdict naming its field (not revocable: the provider's namespace stays allowed; nothing is written for
    it); Pending for a realm role the realm lacks."""
    found = refusals(content, namespace, grants, granted_by, view, groups)
    return next(iter(found.values()), None)


def refusals(
    content: Mapping[str, Any],
    namespace: str,
    grants: Iterable[Grant],
    granted_by: str,
    view: RealmView,
    groups: Mapping[str, str | None],
) -> dict[str, Verdict]:
    """Every declared mapper refused, by name, in declared order (the Forbidden ones are also removed from
    Keycloak if the operator made them: a grant withdrawn does not leave what it gave)."""
    grants = tuple(grants)
    out: dict[str, Verdict] = {}
    for m in content.get("mappers") or ():
        found = _refusal(m, namespace, grants, granted_by, view, groups)
        if found is not None:
            out[str(m.get("name"))] = found
    return out


def _refusal(
    m: Mapping[str, Any],
    namespace: str,
    grants: tuple[Grant, ...],
    granted_by: str,
    view: RealmView,
    groups: Mapping[str, str | None],
) -> Verdict | None:
    kind, config = m.get("identityProviderMapper"), m.get("config") or {}
    where = f"spec.mappers[{m.get('name')}].config"
    if kind in ROLE_MAPPERS:
        text = str(config.get("role") or "")
        cid, role = split_role(text, view.clients)
        if cid is None and role not in view.realm_roles:
            message = (
                f"{where}.role: no realm role {role!r} (nor a client of its prefix); nothing was written"
            )
            return Verdict("Pending", "MapperRoleNotFound", message)
        if cid is None and view.realm_needs_grant(role) and not granted(grants, namespace, None, role):
            needs = f"{{namespace: {namespace}, roles: [{role}]}}"
            return _refuse(f"{where}.role", f"composite realm role {role!r}", namespace, granted_by, needs)
        owned = cid is None or not needs_grant(view, cid, namespace)
        if not owned and not granted(grants, namespace, cid, role):
            needs = f"{{namespace: {namespace}, clientId: {cid}, roles: [{role}]}}"
            what = f"role {role!r} of client {cid!r}"
            return _refuse(f"{where}.role", what, namespace, granted_by, needs)
    elif kind in GROUP_MAPPERS:
        path = str(config.get("group") or "")
        if groups.get(path) != namespace:
            message = (
                f"{where}.group: group {path!r} is not a KeycloakGroup of namespace {namespace}; a "
                "provider's mappers may put users only in its own namespace's groups; nothing was written"
            )
            return Verdict("Forbidden", NOT_OWNED, message, revocable=False)
    return None


def _refuse(where: str, what: str, namespace: str, granted_by: str, needs: str) -> Verdict:
    return Verdict(
        "Forbidden",
        NOT_GRANTED,
        f"{where}: {what} not granted to namespace {namespace} by KeycloakRealm {granted_by}; its "
        f"spec.serviceAccountGrants needs {needs}; nothing was written",
        revocable=False,
    )
