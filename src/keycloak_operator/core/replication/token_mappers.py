"""Protocol mappers as the token authority (token_authority.py) judges them: what an OIDC mapper's config
makes appear in a token (a role, an audience, a claim), which mappers of a client's or a client scope's
content are judged, and which mappers held in Keycloak the operator wrote and must now remove. Pure; the
clients' and client scopes' writers ask (client_parts.py, client_scope.py, shell/replication/)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from keycloak_operator.core.replication.sync import Verdict
from keycloak_operator.core.replication.token_authority import NOT_GRANTED, Authority
from keycloak_operator.core.replication.token_reading import top_claim

# Mapper config keys, as Keycloak names them.
CLAIM_NAME: Final = "claim.name"
ROLE: Final = "role"
NEW_ROLE_NAME: Final = "new.role.name"
CLIENT_AUDIENCE: Final = "included.client.audience"
CUSTOM_AUDIENCE: Final = "included.custom.audience"
# The OIDC mappers that write roles the user does not hold, or an audience.
HARDCODED_ROLE: Final = "oidc-hardcoded-role-mapper"
ROLE_NAME: Final = "oidc-role-name-mapper"
AUDIENCE: Final = "oidc-audience-mapper"
CLIENT_ROLE_MAPPER: Final = "oidc-usermodel-client-role-mapper"
CLIENT_ROLE_CLIENT: Final = "usermodel.clientRoleMapping.clientId"
CLIENT_ID_PLACEHOLDER: Final = "${client_id}"
# Mappers that write the user's roles under a claim of their choosing; with no claim name Keycloak writes
# them where its own `roles` scope does.
DEFAULT_CLAIMS: Final = {
    "oidc-usermodel-realm-role-mapper": "realm_access",
    "oidc-usermodel-client-role-mapper": "resource_access",
}
MAPPER_REVOKED: Final = "MapperRevoked"  # the event when a mapper the operator wrote is refused now


def judge_oidc_mapper(authority: Authority, mapper: Mapping[str, Any], where: str) -> Verdict | None:
    """One OIDC protocol mapper of a client or a client scope ({name, protocolMapper, config}); `where`
    names it (`spec.protocolMappers[name]`)."""
    kind = mapper.get("protocolMapper")
    config = mapper.get("config")
    config = config if isinstance(config, Mapping) else {}
    at = f"{where}.config"
    claim = config.get(CLAIM_NAME) or DEFAULT_CLAIMS.get(str(kind))
    found = _judge_claim_of(authority, str(kind), str(claim), config, f"{at}.{CLAIM_NAME}") if claim else None
    if found is None and kind == HARDCODED_ROLE:
        # Written into the token as named, parsed at the last '.' (KeycloakModelUtils.parseRole).
        found = authority.judge_role_text(str(config.get(ROLE) or ""), f"{at}.{ROLE}", forged=True)
    if found is None and kind == ROLE_NAME:  # the role renamed: one the user holds, looked up
        found = authority.judge_role_text(str(config.get(ROLE) or ""), f"{at}.{ROLE}")
    if found is None and kind == ROLE_NAME and config.get(NEW_ROLE_NAME):
        found = authority.judge_role_text(str(config[NEW_ROLE_NAME]), f"{at}.{NEW_ROLE_NAME}", forged=True)
    if found is None and kind == AUDIENCE and config.get(CLIENT_AUDIENCE):
        found = authority.judge_audience(str(config[CLIENT_AUDIENCE]), f"{at}.{CLIENT_AUDIENCE}")
    if found is None and kind == AUDIENCE and config.get(CUSTOM_AUDIENCE):
        text = str(config[CUSTOM_AUDIENCE])
        found = authority.judge_audience(text, f"{at}.{CUSTOM_AUDIENCE}", custom=True)
    return found


def _judge_claim_of(
    authority: Authority, kind: str, claim: str, config: Mapping[str, Any], where: str
) -> Verdict | None:
    """A mapper's claim path as Keycloak writes it: the client-role mapper puts the clientId it maps (its
    dots escaped) where `${client_id}` stands, so the top-level claim may be a clientId of the team's
    choosing (a client named `resource_access`, say)."""
    if kind == CLIENT_ROLE_MAPPER and CLIENT_ID_PLACEHOLDER in claim:
        mapped = config.get(CLIENT_ROLE_CLIENT)
        if not mapped:
            if CLIENT_ID_PLACEHOLDER in top_claim(claim):
                message = (
                    f"{where}: {CLIENT_ID_PLACEHOLDER} at the top of the claim stands for every client's "
                    f"id when {CLIENT_ROLE_CLIENT} names none; name the client or the claim; nothing was "
                    "written"
                )
                return Verdict("Forbidden", NOT_GRANTED, message, revocable=False)
        else:
            claim = claim.replace(CLIENT_ID_PLACEHOLDER, str(mapped).replace(".", "\\."))
    return authority.judge_claim(claim, where)


def needs_view(mapper: Mapping[str, Any]) -> bool:
    """Whether judging an OIDC mapper needs the realm read (roles, clients): it names a role or an audience.
    A claim alone needs only the grants."""
    kind = mapper.get("protocolMapper")
    return kind in (HARDCODED_ROLE, ROLE_NAME, AUDIENCE)


def mapper_refusals(
    authority: Authority, mappers: Iterable[Mapping[str, Any]], field_: str = "spec.protocolMappers"
) -> dict[str, Verdict]:
    """Every OIDC mapper refused, by name, in the order given."""
    out: dict[str, Verdict] = {}
    for m in mappers:
        name = str(m.get("name"))
        found = judge_oidc_mapper(authority, m, f"{field_}[{name}]")
        if found is not None:
            out[name] = found
    return out


OIDC: Final = "openid-connect"


def judged_mappers(content: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The mappers of a client's or a client scope's content that the authority judges: OIDC ones (a SAML
    assertion goes only to the SAML client's own service provider, and names no other team's roles or
    audiences). A content without `protocol` predates SAML: OIDC."""
    if str(content.get("protocol") or OIDC) != OIDC:
        return []
    return [m for m in content.get(MAPPERS_KEY) or () if isinstance(m, Mapping)]


MAPPERS_KEY: Final = "protocolMappers"


def needs_realm_read(content: Mapping[str, Any]) -> bool:
    """Whether judging this content's mappers needs the realm's roles and clients."""
    return any(needs_view(m) for m in judged_mappers(content))


def allowed_mappers(
    content: Mapping[str, Any], authority: Authority
) -> tuple[dict[str, Any], dict[str, Verdict]]:
    """The content with every refused mapper left out (so the operator neither writes it nor keeps one it
    wrote before), and the refusals by mapper name. A content without mappers is returned as it is."""
    if MAPPERS_KEY not in content:
        return dict(content), {}
    refused = mapper_refusals(authority, judged_mappers(content))
    if not refused:
        return dict(content), {}
    kept = [m for m in content[MAPPERS_KEY] if str(m.get("name")) not in refused]
    return {**content, MAPPERS_KEY: kept}, refused


def held_refusals(authority: Authority, held: Iterable[Any], ours: str) -> list[Mapping[str, Any]]:
    """The mappers held in Keycloak (as read, each with its `id`) that the operator wrote (`ours`: the config
    key its writes carry) and the authority now refuses: a grant withdrawn, or a client that is not Ready
    (its declared mappers are not written then, but what it holds still answers to the rule)."""
    out = []
    for m in held:
        if not isinstance(m, Mapping) or m.get("protocol", OIDC) != OIDC:
            continue
        config = m.get("config")
        if not isinstance(config, Mapping) or ours not in config:
            continue
        if judge_oidc_mapper(authority, m, "held") is not None:
            out.append(m)
    return out


def holds_judged(held: Iterable[Any], ours: str) -> bool:
    """Whether mappers held in Keycloak that the operator wrote (`ours`: its config key) name a role or an
    audience: then the realm must be read to judge them, even when nothing declared asks."""
    return any(
        isinstance(m, Mapping)
        and isinstance(m.get("config"), Mapping)
        and ours in m["config"]
        and needs_view(m)
        for m in held
    )


def one_verdict(refusals: Mapping[str, Verdict], what: str) -> Verdict | None:
    """One status for an object's refused mappers (`what`: "client", "scope"): the first Forbidden one
    (else the first), saying how many more and that the rest of the object was written."""
    if not refusals:
        return None
    first = next((v for v in refusals.values() if v.phase == "Forbidden"), next(iter(refusals.values())))
    more = len(refusals) - 1
    others = f" (and {more} more mapper{'s' if more > 1 else ''})" if more else ""
    message = f"{first.message}{others}; the rest of the {what} was written"
    return Verdict(first.phase, first.reason, message, revocable=False)


def must_read_realm(contents: Iterable[Mapping[str, Any]], listed: Iterable[Any], ours: str) -> bool:
    """Whether judging a kind's mappers needs the realm's roles and clients read: a mapper declared in one of
    `contents`, or held by an object as `listed` (clients, client scopes) that the operator wrote (`ours`:
    its config key), names a role or an audience. Else claims are judged on the grants alone, and a quiet
    round reads nothing more."""
    held = [m for o in listed if isinstance(o, Mapping) for m in o.get(MAPPERS_KEY) or ()]
    return any(needs_realm_read(c) for c in contents) or holds_judged(held, ours)
