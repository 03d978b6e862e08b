"""A replica never acts on a kind it does not understand (ADR 0022): each kind's planner diffs only
objects whose marker names its own kind, so an object marked by another kind, by a kind this version has not
heard of (a newer replica's), or by one it no longer has, is never an orphan: no delete, no update, no
release, whatever the namespaces watched."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from keycloak_operator.core.replication import client, client_scope, group, identity_provider, realm
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.marker import marker_attributes
from keycloak_operator.core.replication.sync import ScopePlan
from keycloak_operator.kernel import names

HASH = "0" * 64
KNOWN = (
    names.REALM_KIND,
    names.CLIENT_KIND,
    names.CLIENT_SCOPE_KIND,
    names.GROUP_KIND,
    names.IDENTITY_PROVIDER_KIND,
)
# A kind a newer replica may write (it does not exist in this version), and a kind this version has that an
# older replica did not (it came after the previous release), seen from the other side.
FOREIGN = ("KeycloakWidget", "KeycloakAuthenticationFlow")


def marker(kind: str, listed: bool = False) -> dict[str, Any]:
    attributes = marker_attributes(ObjectKey(kind, "team-a", "x"), HASH)
    return {k: [v] for k, v in attributes.items()} if listed else attributes


def realms(kind: str) -> ScopePlan:
    return realm.plan_realms([], [], [{"realm": "r1", "id": "r1", "attributes": marker(kind)}])


def clients(kind: str) -> ScopePlan:
    return client.plan_clients([], [{"id": "c1", "clientId": "app", "attributes": marker(kind)}])


def scopes(kind: str) -> ScopePlan:
    return client_scope.plan_client_scopes([], [{"id": "s1", "name": "s", "attributes": marker(kind)}])


def groups(kind: str) -> ScopePlan:
    observed = [{"id": "g1", "name": "g", "path": "/g", "attributes": marker(kind, listed=True)}]
    plan, _ = group.plan_groups([], observed, group.Available())
    return plan


def providers(kind: str) -> ScopePlan:
    # An identity provider's marker is in its config (Keycloak keeps no attributes on a provider).
    observed = [{"alias": "idp", "internalId": "i1", "providerId": "oidc", "config": marker(kind)}]
    return identity_provider.plan_identity_providers([], observed)


PLANNERS: dict[str, Callable[[str], ScopePlan]] = {
    names.REALM_KIND: realms,
    names.CLIENT_KIND: clients,
    names.CLIENT_SCOPE_KIND: scopes,
    names.GROUP_KIND: groups,
    names.IDENTITY_PROVIDER_KIND: providers,
}


def writes(scope: ScopePlan) -> list[Any]:
    return [op for phase in scope.phases() for op in phase]


@pytest.mark.parametrize("own", KNOWN)
def test_an_undeclared_object_of_the_planners_own_kind_is_an_orphan(own: str) -> None:
    # The control: the same object with the planner's own kind is deleted, so the cases below are not
    # vacuous.
    assert writes(PLANNERS[own](own)), own


@pytest.mark.parametrize(
    ("own", "other"), [(own, other) for own in KNOWN for other in (*KNOWN, *FOREIGN) if other != own]
)
def test_an_object_marked_with_another_or_an_unknown_kind_is_left_alone(own: str, other: str) -> None:
    scope = PLANNERS[own](other)
    assert writes(scope) == []
    assert scope.verdicts == {}
