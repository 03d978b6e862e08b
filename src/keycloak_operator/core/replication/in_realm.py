"""What every kind declared inside a realm (a client, a client scope, a group, an identity provider, an
authentication flow) shares when it is read: its key and flags, the realm resource it names, whether the
realm allows its namespace (judged first, whatever its spec), its spec validated, and why it may not be
written (its namespace not allowed, its realm unknown or unreadable)."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from keycloak_operator.core.replication import adoption
from keycloak_operator.core.replication.called_urls import client_urls, url_problem
from keycloak_operator.core.replication.client import client_content
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.objects import (
    Obj,
    invalid_spec,
    key_of,
    resource_flags,
    unreadable_namespace,
)
from keycloak_operator.core.replication.resources import RealmTarget
from keycloak_operator.core.replication.sync import NAMESPACE_NOT_ALLOWED, Resource, Verdict
from keycloak_operator.kernel import names
from keycloak_operator.models.client import KeycloakClientSpec

Spec = TypeVar("Spec", bound=BaseModel)

# A realm's allow-lists, by spec field: clientNamespaces for clients, client scopes and groups;
# identityProviderNamespaces for identity providers (a way into every client of the realm); flowNamespaces for
# authentication flows (only the realm's own namespace's flows can be bound, but a flow is the realm's).
AllowList = Literal["clientNamespaces", "identityProviderNamespaces", "flowNamespaces"]


def namespace_refusal(
    key: ObjectKey,
    parent: ObjectKey,
    realms: Mapping[ObjectKey, RealmTarget],
    what: str,
    allow_list: AllowList = "clientNamespaces",
) -> Verdict | None:
    """Forbidden when the realm resource `parent` is known and does not allow the namespace of `key` in
    `allow_list`; None when it does, or when the realm is not known (nothing to judge by). Decided by the two
    namespaces and the realm's allow-list alone, never by the rest of the resource's spec."""
    realm = realms.get(parent)
    if realm is None or key.namespace == parent.namespace:
        return None
    allowed = realm.allow_lists()[allow_list]  # by the field's name: an unknown one fails, never opens
    if key.namespace in allowed:
        return None
    return Verdict(
        "Forbidden",
        NAMESPACE_NOT_ALLOWED,
        f"KeycloakRealm {parent.namespace}/{parent.name} does not allow {what} from namespace "
        f"{key.namespace} (spec.{allow_list}); nothing was written",
    )


def in_realm_problem(
    key: ObjectKey,
    parent: ObjectKey,
    realms: Mapping[ObjectKey, RealmTarget],
    unreadable: AbstractSet[str],
    what: str,
    allow_list: AllowList = "clientNamespaces",
) -> Verdict | None:
    """Why a resource declared in the realm resource `parent` (a client, a client scope: `what`, plural)
    may not be written: its realm unknown, unreadable, or not allowing the resource's namespace in
    `allow_list` (`clientNamespaces` for clients, client scopes and groups; identity providers and
    authentication flows have their own, `identityProviderNamespaces` and `flowNamespaces`)."""
    if parent not in realms and parent.namespace in unreadable:
        return unreadable_namespace(f"KeycloakRealm {parent.namespace}/{parent.name}", parent.namespace)
    if parent not in realms:
        return Verdict(
            "Pending", "RealmNotFound", f"KeycloakRealm {parent.namespace}/{parent.name} not found"
        )
    return namespace_refusal(key, parent, realms, what, allow_list)


# Kubernetes' bounds on the names a realm reference holds: what a stored object's can hold, whatever the
# model's patterns are or become.
_NAME_MAX, _NAMESPACE_MAX = 253, 63


def raw_parent(obj: Obj, key: ObjectKey) -> ObjectKey | None:
    """The realm resource an object names in spec.realm, read from the object as stored, whatever the rest
    of its spec: what its namespace is judged by before its spec is. The object is anyone's input: a name
    or a namespace that is not a string within Kubernetes' bounds, or a spec or reference that is not a
    mapping, names no realm (None). Read no stricter than that: a reference a later model refuses still
    names its realm, so that an upgrade tightening the model never makes a live object an orphan."""
    spec = obj.get("spec")
    realm = spec.get("realm") if isinstance(spec, Mapping) else None
    if not isinstance(realm, Mapping):
        return None
    name, namespace = realm.get("name"), realm.get("namespace")
    if not isinstance(name, str) or not 0 < len(name) <= _NAME_MAX:
        return None
    if namespace is None or namespace == "":  # absent: the object's own, as a valid spec reads it
        namespace = key.namespace
    if not isinstance(namespace, str) or len(namespace) > _NAMESPACE_MAX:
        return None
    return ObjectKey(names.REALM_KIND, namespace, name)


@dataclass(frozen=True)
class Declared(Generic[Spec]):
    key: ObjectKey
    flags: dict[str, Any]
    spec: Spec
    parent: ObjectKey  # the KeycloakRealm resource it is declared in
    problem: Verdict | None


def declared(
    obj: Obj,
    model: type[Spec],
    realms: Mapping[ObjectKey, RealmTarget],
    unreadable: AbstractSet[str],
    what: str,
    allow_list: AllowList = "clientNamespaces",
) -> Declared[Spec] | Resource:
    """The resource read, or, when its spec does not validate, the Resource to hold: still in its realm's
    scope, its object kept, so that an operator upgrade tightening a model never makes a live object look
    like an orphan. `what`: the kind's plural for messages; `allow_list`: the realm field that lets other
    namespaces declare it.

    Whether its namespace may declare anything in the realm it names is decided first, for every kind, from
    that name alone (raw_parent): a namespace the realm does not allow is Forbidden whatever the rest of its
    spec says. An invalid spec from such a namespace would otherwise be an Error, which a deleting realm
    waits on: any namespace could pin another's realm by declaring garbage in it."""
    key, flags = key_of(obj), resource_flags(obj)
    parent = raw_parent(obj, key)
    refused = namespace_refusal(key, parent, realms, what, allow_list) if parent is not None else None
    try:
        spec = model.model_validate(obj.get("spec") or {})
    except ValidationError as e:
        return Resource(key, key.name, {}, problem=refused or invalid_spec(e), parent=parent, **flags)
    read: Any = spec  # every such kind has spec.realm: {name, namespace?}, in a RealmRef of its own
    ref = read.realm
    parent = ObjectKey(names.REALM_KIND, ref.namespace or key.namespace, ref.name)  # the same as read raw
    problem = refused or in_realm_problem(key, parent, realms, unreadable, what, allow_list)
    return Declared(key, flags, spec, parent, problem)


def client_resource(
    obj: Obj,
    realms: Mapping[ObjectKey, RealmTarget],
    unreadable: AbstractSet[str] = frozenset(),
    *,
    loopback_http: bool = False,
) -> Resource:
    """A client, with a problem when its realm is unknown or does not allow the client's namespace, or when
    a URL Keycloak calls names a host it must not be sent to (called_urls.py; `loopback_http`: the
    operator's KCOP_IDP_ALLOW_LOOPBACK_HTTP, off by default). `unreadable`: namespaces whose realms could
    not be listed this round (watched.py)."""
    d = declared(obj, KeycloakClientSpec, realms, unreadable, "clients")
    if isinstance(d, Resource):
        return d
    problem = d.problem or url_problem(client_urls(d.spec), loopback_http)
    flags = d.flags | adoption.flags(obj, adoption.within_realm(d.key, d.parent))
    return Resource(
        d.key, d.spec.client_id, client_content(d.spec), problem=problem, parent=d.parent, **flags
    )
