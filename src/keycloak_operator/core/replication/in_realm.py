"""What every kind declared inside a realm (a client, a client scope, a group, an identity provider, an
authentication flow) shares when it is read: its key and flags, its spec validated, the realm resource it
names, and why it may not be written (its realm unknown, unreadable, or not allowing its namespace)."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from keycloak_operator.core import names
from keycloak_operator.core.replication import adoption
from keycloak_operator.core.replication.client import client_content
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.resources import (
    AllowList,
    Obj,
    RealmTarget,
    in_realm_problem,
    invalid_spec,
    key_of,
    raw_parent,
    resource_flags,
)
from keycloak_operator.core.replication.sync import Resource, Verdict
from keycloak_operator.models.realm import KeycloakClientSpec

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
    namespaces declare it."""
    key, flags = key_of(obj), resource_flags(obj)
    try:
        spec = model.model_validate(obj.get("spec") or {})
    except ValidationError as e:
        return Resource(key, key.name, {}, problem=invalid_spec(e), parent=raw_parent(obj, key), **flags)
    read: Any = spec  # every such kind has spec.realm: {name, namespace?}, in a RealmRef of its own
    ref = read.realm
    parent = ObjectKey(names.REALM_KIND, ref.namespace or key.namespace, ref.name)
    problem = in_realm_problem(key, parent, realms, unreadable, what, allow_list)
    return Declared(key, flags, spec, parent, problem)


def client_resource(
    obj: Obj, realms: Mapping[ObjectKey, RealmTarget], unreadable: AbstractSet[str] = frozenset()
) -> Resource:
    """A client, with a problem when its realm is unknown or does not allow the client's namespace.
    `unreadable`: namespaces whose realms could not be listed this round (watched.py)."""
    d = declared(obj, KeycloakClientSpec, realms, unreadable, "clients")
    if isinstance(d, Resource):
        return d
    flags = d.flags | adoption.flags(obj, adoption.within_realm(d.key, d.parent))
    return Resource(
        d.key, d.spec.client_id, client_content(d.spec), problem=d.problem, parent=d.parent, **flags
    )
