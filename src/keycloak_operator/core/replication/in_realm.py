"""What every kind declared inside a realm (a client, a client scope, a group, an identity provider, an
authentication flow) shares when it is read: its key and flags, the realm resource it names, whether the
realm allows its namespace (judged first, whatever its spec), its spec validated, and why it may not be
written (its namespace not allowed, its realm unknown or unreadable)."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from keycloak_operator.core.replication import adoption
from keycloak_operator.core.replication.called_urls import client_urls, url_problem
from keycloak_operator.core.replication.client import client_content
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.resources import (
    AllowList,
    Obj,
    RealmTarget,
    in_realm_problem,
    invalid_spec,
    key_of,
    namespace_refusal,
    raw_parent,
    resource_flags,
)
from keycloak_operator.core.replication.sync import Resource, Verdict
from keycloak_operator.kernel import names
from keycloak_operator.models.client import KeycloakClientSpec

Spec = TypeVar("Spec", bound=BaseModel)


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
