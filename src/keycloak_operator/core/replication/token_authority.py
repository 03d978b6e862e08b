"""What a team may make appear in a token or a session of a shared realm: the one authority every kind asks
(docs/adr/0012-tenant-isolation.md). Pure: the shell reads the realm (its roles, who owns which client and
group) and the realm resource's grants, and passes them in.

Every field that can reach a token goes through here: a client's service-account roles and its roles'
composites (service_account.py, role_composites.py), the protocol mappers of clients and client scopes
(client_parts.py, client_scope.py), identity providers' mappers (idp_mapper_rule.py), groups' realm and
client role mappings (group.py) and the realm's default roles and groups (realm_defaults.py,
default_groups.py, asked of the realm's own namespace: may_give_every_user). A kind added later asks the
same questions; nothing here knows which kind asks.

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

How Keycloak reads role texts and claim paths is token_reading.py's; how a protocol mapper's config reaches
a token, token_mappers.py's. Role names are read as Keycloak reads them, and every reading is judged:
`a.b.c` may be the realm role `a.b.c`, client `a`'s role `b.c` or client `a.b`'s role `c` (Keycloak's
parsers differ between the mappers and versions), so each reading that names an existing client must be
allowed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from keycloak_operator.core.replication.marker import is_marker_attribute, read_marker
from keycloak_operator.core.replication.sync import Verdict
from keycloak_operator.core.replication.token_reading import RESERVED_CLAIMS, role_readings, top_claim
from keycloak_operator.kernel import names

# Keycloak's description of a realm's default role (RealmManager), besides its name: either tells it.
DEFAULT_ROLE_DESCRIPTION: Final = "${role_default-roles}"

# Keycloak's own clients with a say in what every user holds: its administration client, whose roles are
# never given to every user (grant or not), and its account console's client, whose view-profile and
# manage-account it makes default in every new realm (they act on the user's own account only).
REALM_MANAGEMENT: Final = "realm-management"
ACCOUNT_CLIENT: Final = "account"

NOT_GRANTED: Final = "TokenContentNotGranted"
NOT_FOUND: Final = "RoleNotFound"
GROUP_NOT_OWNED: Final = "GroupNotOwned"


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

    def judge_group(self, path: str, where: str) -> Verdict | None:
        if self.may_give_group(path):
            return None
        message = (
            f"{where}: group {path!r} is not a KeycloakGroup of namespace {self.namespace}; only a "
            "namespace's own groups may be handed out; nothing was written"
        )
        return Verdict("Forbidden", GROUP_NOT_OWNED, message, revocable=False)

    def _refuse(self, where: str, what: str, needs: str) -> Verdict:
        # Not revocable: the namespace stays allowed in the realm; only this field is refused.
        return Verdict(
            "Forbidden",
            NOT_GRANTED,
            f"{where}: {what} not granted to namespace {self.namespace} by KeycloakRealm {self.granted_by}; "
            f"its spec.serviceAccountGrants needs {needs}; nothing was written",
            revocable=False,
        )
