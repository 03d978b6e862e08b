"""Kubernetes objects (KeycloakRealm, KeycloakClient, Keycloak) -> what a replication round works on.

Authorization is decided here, before anything talks to Keycloak: a realm may target a Keycloak of this
operator only from that Keycloak's namespace or one it lists in `realmNamespaces`; a client may join a realm
only from the realm's namespace or one the realm lists in `clientNamespaces` (an identity provider: in
`identityProviderNamespaces`, its own allow-list; judged by in_realm.py from the RealmTarget built here). A
realm that targets an external server brings its own admin Secret, in its own namespace: holding those
credentials is the right.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace

from pydantic import ValidationError

from keycloak_operator.core.replication import adoption
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.objects import (
    Obj,
    invalid_spec,
    key_of,
    resource_flags,
    unreadable_namespace,
)
from keycloak_operator.core.replication.realm import realm_content, realm_name
from keycloak_operator.core.replication.servers import (
    DEFAULT_POLICY,
    ServerPolicy,
    host_allowed,
    normalize_url,
)
from keycloak_operator.core.replication.service_account import Grant, grants_of
from keycloak_operator.core.replication.sync import (
    NAMESPACE_NOT_ALLOWED,
    Resource,
    ScopePlan,
    Verdict,
)
from keycloak_operator.kernel import names
from keycloak_operator.kernel.names import HTTP_PORT, HTTPS_PORT
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.realm import ExternalServer, KeycloakRealmSpec, KeycloakRef


@dataclass(frozen=True)
class Credentials:
    """Where the admin username and password are: a Secret with keys `username` and `password`.

    `server_owned`: the admin of a Keycloak this operator runs (from that Keycloak's own namespace), which
    acts for every realm on it; otherwise a namespace's own login to an external server, which acts only
    for that namespace's realms (ADR 0008: no namespace borrows another's)."""

    namespace: str
    secret: str
    server_owned: bool = False
    # Where this login goes (empty: the round's URL) and, for TLS, a Secret of the same namespace whose
    # `ca.crt` the server's certificate is checked against (None: the system's CAs).
    endpoint: str = ""
    ca_secret: str | None = None
    # A Keycloak this operator runs: its name and uid, whose `<name>-operator-login` Secret (owned by that
    # uid) holds the operator's own login, tried before the admin Secret (ADR 0023).
    keycloak: str = ""
    keycloak_uid: str = ""

    def may_act_for(self, namespace: str) -> bool:
        return self.server_owned or self.namespace == namespace


@dataclass(frozen=True)
class Server:
    """A Keycloak server the realms live in; every realm resource targeting one URL is diffed together."""

    url: str


@dataclass(frozen=True)
class RealmTarget:
    resource: Resource
    server: Server | None  # None when the target cannot even be named (invalid spec, unknown Keycloak)
    credentials: Credentials | None
    client_namespaces: frozenset[str]
    # Service-account roles the realm's owner lets namespaces map (service_account.py); only the realm's own.
    grants: tuple[Grant, ...] = ()
    # Namespaces that may declare identity providers in it besides its own (spec.identityProviderNamespaces).
    provider_namespaces: frozenset[str] = frozenset()
    # Namespaces that may declare authentication flows in it besides its own (spec.flowNamespaces).
    flow_namespaces: frozenset[str] = frozenset()

    def allow_lists(self) -> Mapping[str, frozenset[str]]:
        """Each allow-list of the realm by its spec field: who may declare something in it besides its own
        namespace (a realm being deleted waits on any of them that cannot be read: deletions_waiting)."""
        return {
            "clientNamespaces": self.client_namespaces,
            "identityProviderNamespaces": self.provider_namespaces,
            "flowNamespaces": self.flow_namespaces,
        }


def server_url(obj: Obj, policy: ServerPolicy) -> str | None:
    """The URL of the server a realm resource targets, from its spec alone (events route rounds by it)."""
    spec = obj.get("spec") or {}
    server = spec.get("server") or {}
    external, keycloak = server.get("external") or {}, server.get("keycloak") or {}
    if external.get("url"):
        return normalize_url(str(external["url"]))
    if keycloak.get("name"):
        namespace = keycloak.get("namespace") or obj["metadata"]["namespace"]
        return names.keycloak_url(str(keycloak["name"]), str(namespace), HTTP_PORT, policy.cluster_domain)
    return None


def realm_target(
    obj: Obj,
    keycloaks: Mapping[tuple[str, str], Obj],
    policy: ServerPolicy = DEFAULT_POLICY,
    unreadable: AbstractSet[str] = frozenset(),
) -> RealmTarget:
    """`keycloaks`: the Keycloak resources by (namespace, name); `unreadable`: namespaces whose Keycloaks
    could not be listed this round (one there is not known to be missing: watched.py). An external server
    outside the policy's allow-list is Forbidden before anything is read: its admin Secret is never
    opened."""
    key, flags = key_of(obj), resource_flags(obj)
    try:
        spec = KeycloakRealmSpec.model_validate(obj.get("spec") or {})
    except ValidationError as e:
        return RealmTarget(
            Resource(key, key.name, {}, problem=invalid_spec(e), **flags), None, None, frozenset()
        )
    content = realm_content(spec, key.name)
    allowed = frozenset(spec.client_namespaces)
    if spec.server.external is not None:
        problem, server, credentials = _external_target(key, spec.server.external, policy)
    elif spec.server.keycloak is not None:
        problem, server, credentials = _keycloak_target(
            key, spec.server.keycloak, keycloaks, policy, unreadable
        )
    else:
        problem, server, credentials = (
            Verdict("Error", "InvalidSpec", "exactly one of spec.server.keycloak or spec.server.external"),
            None,
            None,
        )
    flags |= adoption.flags(obj, _realm_adoption(key, credentials))
    resource = Resource(key, realm_name(spec, key.name), content, problem=problem, **flags)
    return RealmTarget(
        resource,
        server,
        credentials,
        allowed,
        grants_of(spec.service_account_grants),
        frozenset(spec.identity_provider_namespaces),
        frozenset(spec.flow_namespaces),
    )


# What a realm's spec.server names: why it may not be reached, or the server and the login that reaches it.
Target = tuple[Verdict | None, Server | None, Credentials | None]


def _external_target(key: ObjectKey, external: ExternalServer, policy: ServerPolicy) -> Target:
    problem: Verdict | None = None
    server: Server | None = None
    credentials: Credentials | None = None
    url = normalize_url(external.url)
    if url is None:
        problem = Verdict("Error", "InvalidSpec", "spec.server.external.url: not a plain http(s) URL")
    elif names.is_keycloak_url(url, policy.cluster_domain):
        # The form of the Keycloaks this operator runs, whose rounds have workers of their own: a tenant's
        # server under that name would hold them. Those Keycloaks are named by spec.server.keycloak.
        problem = Verdict(
            "Forbidden",
            "ExternalServerNotAllowed",
            "spec.server.external.url has the form of a Keycloak this operator runs; name it with "
            "spec.server.keycloak instead; nothing was read or sent",
        )
    elif not host_allowed(url, policy):
        problem = Verdict(
            "Forbidden",
            "ExternalServerNotAllowed",
            f"this installation allows external servers only on {', '.join(policy.external_hosts)}; "
            "nothing was read or sent",
        )
    else:
        server = Server(url)
        ca = external.ca_secret.name if external.ca_secret else None
        credentials = Credentials(key.namespace, external.admin_secret.name, ca_secret=ca)
    return problem, server, credentials


def _keycloak_target(
    key: ObjectKey,
    ref: KeycloakRef,
    keycloaks: Mapping[tuple[str, str], Obj],
    policy: ServerPolicy,
    unreadable: AbstractSet[str],
) -> Target:
    problem: Verdict | None = None
    server: Server | None = None
    credentials: Credentials | None = None
    kc_namespace = ref.namespace or key.namespace
    keycloak = keycloaks.get((kc_namespace, ref.name))
    if keycloak is None and kc_namespace in unreadable:
        problem = unreadable_namespace(f"Keycloak {kc_namespace}/{ref.name}", kc_namespace)
    elif keycloak is None:
        problem = Verdict("Pending", "KeycloakNotFound", f"Keycloak {kc_namespace}/{ref.name} not found")
    else:
        try:
            kc_spec = KeycloakSpec.model_validate(keycloak.get("spec") or {})
        except ValidationError:
            kc_spec = None
        if kc_spec is None:
            problem = Verdict(
                "Pending", "KeycloakInvalid", f"Keycloak {kc_namespace}/{ref.name} has an invalid spec"
            )
        else:
            if key.namespace != kc_namespace and key.namespace not in kc_spec.realm_namespaces:
                # Still routed to the server's round (with the server's own login): a realm whose
                # namespace lost access has its object revoked there (sync.Revocation).
                problem = Verdict(
                    "Forbidden",
                    NAMESPACE_NOT_ALLOWED,
                    f"Keycloak {kc_namespace}/{ref.name} does not allow realms from namespace "
                    f"{key.namespace} (spec.realmNamespaces); nothing was written",
                )
            url = names.keycloak_url(ref.name, kc_namespace, HTTP_PORT, policy.cluster_domain)
            server = Server(url)
            secret = kc_spec.admin_secret.name if kc_spec.admin_secret else names.admin_secret(ref.name)
            tls = kc_spec.tls
            endpoint = (
                names.keycloak_url(ref.name, kc_namespace, HTTPS_PORT, policy.cluster_domain, "https")
                if tls
                else ""
            )
            credentials = Credentials(
                kc_namespace,
                secret,
                server_owned=True,
                endpoint=endpoint,
                ca_secret=tls.secret if tls else None,
                keycloak=ref.name,
                keycloak_uid=str((keycloak.get("metadata") or {}).get("uid") or ""),
            )
    return problem, server, credentials


def _realm_adoption(key: ObjectKey, credentials: Credentials | None) -> str:
    """Who may adopt a realm: the namespace of the Keycloak it runs on (whose admin the operator acts as),
    or one that brings its own login to an external server (which can already do anything there). A
    namespace the Keycloak merely allows to declare realms may not take one made by someone else."""
    if credentials is None:
        return "its server and login are not known"
    if not credentials.server_owned or credentials.namespace == key.namespace:
        return ""
    return f"only namespace {credentials.namespace}, where its Keycloak is declared, may adopt a realm on it"


def acting_credentials(
    key: ObjectKey, targets: Mapping[ObjectKey, RealmTarget], logged_in: Iterable[Credentials]
) -> Credentials | None:
    """Whose admin login writes for the realm `key`: its own resource's, whether or not that login worked
    (a failed login means no write, never someone else's). An orphan (a marked realm whose resource is gone)
    is deleted with the server's own admin, or with a login of the orphan's own namespace; None when there is
    neither, and the orphan stays."""
    target = targets.get(key)
    if target is not None:
        return target.credentials
    eligible = [c for c in logged_in if c.may_act_for(key.namespace)]
    return min(eligible, key=lambda c: (not c.server_owned, c.namespace, c.secret)) if eligible else None


def keep_orphans_of(
    scope: ScopePlan,
    cred: Credentials,
    targets: Mapping[ObjectKey, RealmTarget],
    logged_in: Iterable[Credentials],
) -> None:
    """Each orphan is deleted by exactly one login: the one `acting_credentials` names (the server's own
    admin, or a login of the orphan's namespace). One no login may delete (an external server's realm of a
    namespace with no login in this round) stays where it is: deleting it with another namespace's login
    would be borrowing. `scope`: the realms `cred` planned; its deletes are narrowed in place."""
    logins = list(logged_in)
    keep = [
        d
        for d in scope.plan.deletes
        if d.key in targets or acting_credentials(d.key, targets, logins) == cred
    ]
    scope.plan = replace(scope.plan, deletes=keep)


def names_keycloaks(realms: Iterable[Obj]) -> bool:
    """Whether any realm targets a Keycloak this operator runs (only then are Keycloaks listed)."""
    return any(((o.get("spec") or {}).get("server") or {}).get("keycloak") for o in realms)
