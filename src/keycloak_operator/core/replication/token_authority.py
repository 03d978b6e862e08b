"""What a team may make appear in a token or a session of a shared realm: the one authority every kind asks
(docs/adr/0012-tenant-isolation.md). Pure: the shell reads the realm (its roles, who owns which client and
group) and the realm resource's grants, and passes them in.

Every field that can reach a token goes through here: a client's service-account roles and its roles'
composites (service_account.py, role_composites.py), the protocol mappers of clients and client scopes
(client_parts.py, client_scope.py), identity providers' mappers (idp_mapper_rule.py), groups' realm and
client role mappings (group.py) and the realm's default roles (realm_defaults.py, asked of the realm's own
namespace: may_give_every_user). A kind added later asks the same questions; nothing here knows which
kind asks.

For a namespace N declaring in a realm whose resource grants G (its spec.serviceAccountGrants), the realm's
own namespace included (it grants itself as it grants others):
- a realm role: a plain one freely (the realm's roles are the realm owner's choice of what to hand out); a
  composite one, or one not known to be plain (fail-closed), only with a grant naming no clientId; the
  realm's default role always (every user holds it);
- a client role: of a client whose Keycloak object carries N's KeycloakClient marker, freely; of any other
  (`realm-management`, `broker`, a hand-made client, another team's) only with a grant naming N, the
  clientId and the role. The owner is told by the marker in Keycloak, never by what N declares;
- an audience (a clientId in `aud`): N's own client's, or one a grant to N names (any role of it: Keycloak's
  own audience resolution already adds the audience of every client whose role is in a token);
- a claim whose top-level name is reserved (identity, roles, audience, session: RESERVED_CLAIMS): only with
  a grant naming N and the claim (`claims`);
- a group: only one whose Keycloak object carries N's KeycloakGroup marker; no grant opens another's (a
  group hands out all its roles and its subgroups' memberships at once).

Role names are read as Keycloak reads them, and every reading is judged: `a.b.c` may be the realm role
`a.b.c`, client `a`'s role `b.c` or client `a.b`'s role `c` (Keycloak's parsers differ between the mappers
and versions), so each reading that names an existing client must be allowed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from keycloak_operator.core import names
from keycloak_operator.core.replication.marker import is_marker_attribute, read_marker
from keycloak_operator.core.replication.sync import Verdict

# Keycloak's description of a realm's default role (RealmManager), besides its name: either tells it.
DEFAULT_ROLE_DESCRIPTION: Final = "${role_default-roles}"

# Top-level claims that tell who the bearer is, what it may do, for whom the token is, or how the session
# stands: a mapper writing one (forged or from a user-editable attribute) changes what every reader of the
# token believes. A mapper writing a nested path (`resource_access.payments.roles`) writes its top level.
RESERVED_CLAIMS: Final = frozenset(
    {
        # who: OIDC's identity claims that resource servers key users on
        "sub", "preferred_username", "email", "email_verified", "name", "given_name", "family_name",
        "upn", "phone_number", "phone_number_verified",
        # what it may do, and for whom
        "realm_access", "resource_access", "groups", "roles", "scope", "aud", "azp", "client_id",
        "authorization", "allowed-origins",
        # the token and its session
        "iss", "exp", "nbf", "iat", "jti", "typ", "auth_time", "nonce", "acr", "amr", "sid",
        "session_state", "at_hash", "c_hash", "s_hash", "cnf", "act", "may_act",
    }
)  # fmt: skip

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

# Keycloak's own clients with a say in what every user holds: its administration client, whose roles are
# never given to every user (grant or not), and its account console's client, whose view-profile and
# manage-account it makes default in every new realm (they act on the user's own account only).
REALM_MANAGEMENT: Final = "realm-management"
ACCOUNT_CLIENT: Final = "account"

NOT_GRANTED: Final = "TokenContentNotGranted"
NOT_FOUND: Final = "RoleNotFound"
GROUP_NOT_OWNED: Final = "GroupNotOwned"
MAPPER_REVOKED: Final = "MapperRevoked"  # the event when a mapper the operator wrote is refused now


@dataclass(frozen=True)
class Grant:
    """One entry of a realm resource's spec.serviceAccountGrants."""

    namespace: str
    client_id: str | None  # None: realm roles (composite ones need a grant)
    roles: frozenset[str]
    claims: frozenset[str] = frozenset()


@dataclass(frozen=True)
class RealmView:
    """What the realm holds, read this round. `clients`: clientId -> (id, the namespace in its client
    marker, None when unmarked); `client_roles`: clientId -> role name -> id, for the clients a caller
    needs; `realm_roles`: name -> representation (id, description, composite)."""

    name: str
    realm_roles: Mapping[str, Mapping[str, Any]]
    clients: Mapping[str, tuple[str, str | None]]
    client_roles: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # clientIds whose object carries no marker attribute at all (unmarked_clients): Keycloak's own as it
    # comes, never one whose marker was emptied or half written (it may be someone's).
    pristine: frozenset[str] = frozenset()

    def is_default(self, role: str) -> bool:
        if role == f"default-roles-{self.name.lower()}":
            return True
        return (self.realm_roles.get(role) or {}).get("description") == DEFAULT_ROLE_DESCRIPTION

    def realm_needs_grant(self, role: str) -> bool:
        """A realm role hands out what it includes: one not known to be plain (`composite: false`) needs a
        grant, the default role (every user holds it) excepted."""
        return not self.is_default(role) and (self.realm_roles.get(role) or {}).get("composite") is not False


def client_owners(observed: Iterable[Any]) -> dict[str, tuple[str, str | None]]:
    """clientId -> (id, namespace of the KeycloakClient its marker names, or None) from a client listing;
    an entry that is not an object, or lacks either, is skipped (a server's answer is not trusted)."""
    out: dict[str, tuple[str, str | None]] = {}
    for c in observed:
        if not isinstance(c, Mapping):
            continue
        cid, uuid = c.get("clientId"), c.get("id")
        if not isinstance(cid, str) or not isinstance(uuid, str):
            continue
        found = read_marker(c.get("attributes"))
        owner = found.key.namespace if found is not None and found.key.kind == names.CLIENT_KIND else None
        out[cid] = (uuid, owner)
    return out


def unmarked_clients(observed: Iterable[Any]) -> frozenset[str]:
    """The clientIds of a client listing whose object carries no attribute of the marker's."""
    return frozenset(
        c["clientId"]
        for c in observed
        if isinstance(c, Mapping)
        and isinstance(c.get("clientId"), str)
        and not _marked_in_part(c.get("attributes"))
    )


def _marked_in_part(attributes: Any) -> bool:
    return isinstance(attributes, Mapping) and any(
        isinstance(k, str) and is_marker_attribute(k) for k in attributes
    )


def group_owners(observed: Iterable[Any]) -> dict[str, str | None]:
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


def role_readings(text: str) -> list[tuple[str | None, str]]:
    """Every way Keycloak may read a role's text: (None, text) as a realm role, and (clientId, role) for each
    '.' in it."""
    return [(None, text)] + [(text[:i], text[i + 1 :]) for i, ch in enumerate(text) if ch == "."]


def top_claim(path: str) -> str:
    """The top-level claim a mapper's `claim.name` writes, as Keycloak splits claim paths (JsonUtils): a
    component is one or more characters, each a backslash and the character it escapes, or anything but a
    backslash or a '.', ended by a '.'; escapes are removed. A path starting with '.' has no such component
    and names one claim, the whole path unescaped."""
    out: list[str] = []
    i = 0
    while i < len(path):
        ch = path[i]
        if ch == "\\" and i + 1 < len(path):
            out.append(path[i + 1])
            i += 2
        elif ch == "." and out:
            return "".join(out)
        elif ch == "." or ch == "\\":  # a leading '.', or a trailing lone backslash: no component ends here
            return _unescaped(path)
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _unescaped(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            i += 1
        out.append(text[i])
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class Authority:
    """The answers for one namespace in one realm. `granted_by`: the realm resource, `namespace/name`;
    `groups`: group path -> owning namespace (only callers judging groups need it)."""

    namespace: str
    grants: tuple[Grant, ...]
    granted_by: str
    view: RealmView
    groups: Mapping[str, str | None] = field(default_factory=dict)

    # The rule, one question each.

    def owns_client(self, client_id: str) -> bool:
        found = self.view.clients.get(client_id)
        return found is not None and found[1] == self.namespace

    def granted(self, client_id: str | None, role: str) -> bool:
        return any(
            g.namespace == self.namespace and g.client_id == client_id and role in g.roles
            for g in self.grants
        )

    def may_give_realm_role(self, role: str) -> bool:
        return not self.view.realm_needs_grant(role) or self.granted(None, role)

    def may_give_client_role(self, client_id: str, role: str) -> bool:
        return self.owns_client(client_id) or self.granted(client_id, role)

    def may_name_audience(self, client_id: str) -> bool:
        """Its own client, or one a grant of some of its roles names (a grant of claims alone opens none)."""
        return self.owns_client(client_id) or any(
            g.namespace == self.namespace and g.client_id == client_id and g.roles for g in self.grants
        )

    def may_write_claim(self, claim_path: str) -> bool:
        top = top_claim(claim_path)
        return top not in RESERVED_CLAIMS or any(
            g.namespace == self.namespace and top in g.claims for g in self.grants
        )

    def may_give_group(self, path: str) -> bool:
        return self.groups.get(path) == self.namespace

    def may_give_every_user(self, client_id: str | None, role: str) -> bool:
        """What the realm's default role may include, asked of the realm's own namespace (every user of the
        realm holds that role, which anyone may give: what it includes is decided here). What the namespace
        may give anyone, except the default role itself and `realm-management`'s roles (they administer
        the realm: never every user's, granted or not); and, without a grant, the `account` client's roles
        while it is Keycloak's as it comes (in `view.pristine`)."""
        if client_id is None:
            return not self.view.is_default(role) and self.may_give_realm_role(role)
        if client_id == REALM_MANAGEMENT:
            return False
        if client_id == ACCOUNT_CLIENT and client_id in self.view.pristine:
            return True
        return self.may_give_client_role(client_id, role)

    # Judgements: a verdict naming the field, or None when allowed.

    def judge_role_text(
        self, text: str, where: str, *, forged: bool = False, realm_only: bool = False
    ) -> Verdict | None:
        """A role named by its text (`realm-role` or `clientId.role`). Every reading naming an existing
        client must be allowed; with none, the realm role must exist (Pending if not). `forged`: the text is
        a name written into the token (a role-name mapper's target), not a role Keycloak looks up, so a
        reading must name something that exists and is allowed, and a name nothing holds is refused.
        `realm_only`: the text is a realm role's name (a group's realmRoles), read no other way."""
        readings = [(None, text)] if realm_only else role_readings(text)
        as_client = [(c, r) for c, r in readings if c is not None and c in self.view.clients]
        for cid, role in as_client:
            assert cid is not None
            refused = self.judge_client_role(cid, role, where)
            if refused is not None:
                return refused
        if forged and "." in text:
            # Keycloak writes the name as it parses it (KeycloakModelUtils.parseRole: at the last '.'),
            # whether or not that client exists: it must be one in the realm (allowed, checked above).
            prefix = text.rsplit(".", 1)[0]
            if prefix not in self.view.clients:
                needs = f"a client {prefix!r} in the realm, of namespace {self.namespace} or granted to it"
                return self._refuse(where, f"role name {text!r} (no client {prefix!r} in the realm)", needs)
            return None
        if as_client:
            return None
        if text not in self.view.realm_roles:
            message = f"{where}: no realm role {text!r} (nor a client of its prefix); nothing was written"
            return Verdict("Pending", NOT_FOUND, message)
        if not self.may_give_realm_role(text):
            needs = f"{{namespace: {self.namespace}, roles: [{text}]}}"
            return self._refuse(where, f"composite realm role {text!r}", needs)
        return None

    def judge_client_role(self, client_id: str, role: str, where: str) -> Verdict | None:
        """A client role named by clientId and name (a group's clientRoles, a reading of a role's text)."""
        if self.may_give_client_role(client_id, role):
            return None
        needs = f"{{namespace: {self.namespace}, clientId: {client_id}, roles: [{role}]}}"
        return self._refuse(where, f"role {role!r} of client {client_id!r}", needs)

    def judge_every_user(self, client_id: str | None, role: str, where: str) -> Verdict | None:
        """A role the realm's default role is to include (may_give_every_user), named by its field."""
        if self.may_give_every_user(client_id, role):
            return None
        if client_id is None and self.view.is_default(role):
            message = f"{where}: {role!r} is the realm's default role itself; nothing was written"
            return Verdict("Forbidden", NOT_GRANTED, message, revocable=False)
        if client_id == REALM_MANAGEMENT:
            message = (
                f"{where}: role {role!r} of client {REALM_MANAGEMENT!r} administers the realm and is never "
                "given to every user; nothing was written"
            )
            return Verdict("Forbidden", NOT_GRANTED, message, revocable=False)
        if client_id is None:
            needs = f"{{namespace: {self.namespace}, roles: [{role}]}}"
            return self._refuse(where, f"composite realm role {role!r}", needs)
        return self.judge_client_role(client_id, role, where)

    def judge_audience(self, client_id: str, where: str, *, custom: bool = False) -> Verdict | None:
        """`custom`: free text (`included.custom.audience`), refused only when it is the clientId of a client
        of the realm out of reach; else a clientId that must exist."""
        if client_id not in self.view.clients:
            if custom:
                return None
            return Verdict(
                "Pending", NOT_FOUND, f"{where}: no client {client_id!r} in the realm; nothing was written"
            )
        if self.may_name_audience(client_id):
            return None
        needs = f"{{namespace: {self.namespace}, clientId: {client_id}, roles: [...]}}"
        return self._refuse(where, f"audience {client_id!r}", needs)

    def judge_claim(self, claim_path: str, where: str) -> Verdict | None:
        if self.may_write_claim(claim_path):
            return None
        top = top_claim(claim_path)
        needs = f"{{namespace: {self.namespace}, claims: [{top}]}}"
        return self._refuse(where, f"reserved claim {top!r}", needs)

    def _judge_claim_of(self, kind: str, claim: str, config: Mapping[str, Any], where: str) -> Verdict | None:
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
        return self.judge_claim(claim, where)

    def judge_group(self, path: str, where: str) -> Verdict | None:
        if self.may_give_group(path):
            return None
        message = (
            f"{where}: group {path!r} is not a KeycloakGroup of namespace {self.namespace}; only a "
            "namespace's own groups may be handed out; nothing was written"
        )
        return Verdict("Forbidden", GROUP_NOT_OWNED, message, revocable=False)

    def judge_oidc_mapper(self, mapper: Mapping[str, Any], where: str) -> Verdict | None:
        """One OIDC protocol mapper of a client or a client scope ({name, protocolMapper, config}); `where`
        names it (`spec.protocolMappers[name]`)."""
        kind = mapper.get("protocolMapper")
        config = mapper.get("config")
        config = config if isinstance(config, Mapping) else {}
        at = f"{where}.config"
        claim = config.get(CLAIM_NAME) or DEFAULT_CLAIMS.get(str(kind))
        found = self._judge_claim_of(str(kind), str(claim), config, f"{at}.{CLAIM_NAME}") if claim else None
        if found is None and kind == HARDCODED_ROLE:
            # Written into the token as named, parsed at the last '.' (KeycloakModelUtils.parseRole).
            found = self.judge_role_text(str(config.get(ROLE) or ""), f"{at}.{ROLE}", forged=True)
        if found is None and kind == ROLE_NAME:  # the role renamed: one the user holds, looked up
            found = self.judge_role_text(str(config.get(ROLE) or ""), f"{at}.{ROLE}")
        if found is None and kind == ROLE_NAME and config.get(NEW_ROLE_NAME):
            found = self.judge_role_text(str(config[NEW_ROLE_NAME]), f"{at}.{NEW_ROLE_NAME}", forged=True)
        if found is None and kind == AUDIENCE and config.get(CLIENT_AUDIENCE):
            found = self.judge_audience(str(config[CLIENT_AUDIENCE]), f"{at}.{CLIENT_AUDIENCE}")
        if found is None and kind == AUDIENCE and config.get(CUSTOM_AUDIENCE):
            text = str(config[CUSTOM_AUDIENCE])
            found = self.judge_audience(text, f"{at}.{CUSTOM_AUDIENCE}", custom=True)
        return found

    def _refuse(self, where: str, what: str, needs: str) -> Verdict:
        # Not revocable: the namespace stays allowed in the realm; only this field is refused.
        return Verdict(
            "Forbidden",
            NOT_GRANTED,
            f"{where}: {what} not granted to namespace {self.namespace} by KeycloakRealm {self.granted_by}; "
            f"its spec.serviceAccountGrants needs {needs}; nothing was written",
            revocable=False,
        )


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
        found = authority.judge_oidc_mapper(m, f"{field_}[{name}]")
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
        if authority.judge_oidc_mapper(m, "held") is not None:
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
