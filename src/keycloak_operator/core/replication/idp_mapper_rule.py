"""Who may make an identity provider's mappers hand out which roles and groups: the provider's side of the
token authority (token_authority.py), which decides. Pure: the shell (shell/replication/identity_providers.py)
reads the realm's roles, clients and groups and passes them in.

A provider's role and group mappers give every user who signs in through it what they name, so each named
role and group is judged as any other path into a token is, for every namespace, the realm's own included:
a plain realm role freely, a composite one or another team's client role only with the realm owner's grant
(spec.serviceAccountGrants), a group only of the provider's own namespace. The advanced mappers, whose
config holds JSON lists of claims to roles or groups, are not offered (models/identity_provider.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from keycloak_operator.core.replication import token_authority as ta
from keycloak_operator.core.replication.sync import Verdict
from keycloak_operator.core.replication.token_authority import Authority, Grant, RealmView

ROLE_MAPPERS: Final = frozenset({"oidc-hardcoded-role-idp-mapper", "oidc-role-idp-mapper"})
GROUP_MAPPERS: Final = frozenset({"oidc-hardcoded-group-idp-mapper"})
NOT_GRANTED: Final = ta.NOT_GRANTED
NOT_OWNED: Final = ta.GROUP_NOT_OWNED


def held_refusals(
    held: Iterable[Any],
    is_ours: Callable[[Mapping[str, Any]], bool],
    namespace: str,
    grants: Iterable[Grant],
    granted_by: str,
    view: RealmView,
    groups: Mapping[str, str | None],
) -> list[Mapping[str, Any]]:
    """The role and group mappers the operator wrote for a provider (`is_ours`), as Keycloak holds them, that
    hand out what the provider's namespace may not give now: judged from what they are, not from what the spec
    says, so a grant withdrawn is not kept by leaving `spec.mappers` out. Only a Forbidden one (a role that
    merely does not exist yet is not taken away)."""
    grants = tuple(grants)
    out: list[Mapping[str, Any]] = []
    for m in held_handing_out(held, is_ours):
        found = _refusal(m, namespace, grants, granted_by, view, groups)
        if found is not None and found.phase == "Forbidden":
            out.append(m)
    return out


def held_handing_out(
    held: Iterable[Any], is_ours: Callable[[Mapping[str, Any]], bool]
) -> list[Mapping[str, Any]]:
    """The operator's own mappers among those Keycloak holds that give a role or a group."""
    return [
        m
        for m in held
        if isinstance(m, Mapping)
        and isinstance(m.get("id"), str)
        and m.get("identityProviderMapper") in ROLE_MAPPERS | GROUP_MAPPERS
        and is_ours(m)
    ]


def hands_out(content: Mapping[str, Any]) -> bool:
    """Whether the provider declares a mapper that gives a role or a group (the realm must be read)."""
    return any(
        m.get("identityProviderMapper") in ROLE_MAPPERS | GROUP_MAPPERS for m in content.get("mappers") or ()
    )


def group_owners(observed: Sequence[Any]) -> dict[str, str | None]:
    """Group path -> namespace of the KeycloakGroup its marker names (None: unmarked, another kind)."""
    return ta.group_owners(observed)


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
    authority = Authority(namespace, grants, granted_by, view, groups)
    if kind in ROLE_MAPPERS:
        return authority.judge_role_text(str(config.get("role") or ""), f"{where}.role")
    if kind in GROUP_MAPPERS:
        return authority.judge_group(str(config.get("group") or ""), f"{where}.group")
    return None
