"""What a round does inside a settled realm, in order: one step per kind declared inside a realm (how a listed
object becomes a `Resource`, and its writer) and the realm's own parts in between (ADR 0030).

A kind's place here is its place in the round: what a later step names must already be written by an earlier
one. Deletes are not reordered here: each writer's plan deletes before it upserts (core/replication/sync.py),
and a parent's deletion waits for what is declared in it (core/replication/round.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass
from typing import Any, Final, Protocol

from keycloak_operator.core.replication.authentication_flow import flow_resource
from keycloak_operator.core.replication.client_scope import scope_resource
from keycloak_operator.core.replication.group import group_resource
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.identity_provider import idp_resource
from keycloak_operator.core.replication.in_realm import client_resource
from keycloak_operator.core.replication.resources import RealmTarget
from keycloak_operator.core.replication.round import Round
from keycloak_operator.core.replication.servers import ServerPolicy
from keycloak_operator.core.replication.sync import Resource
from keycloak_operator.models import authentication_flow, client, client_scope, group, identity_provider
from keycloak_operator.models.replicated import ReplicatedKind
from keycloak_operator.shell.kube import Kube
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.authentication_flows import AuthenticationFlowWriter
from keycloak_operator.shell.replication.client_scopes import ClientScopeWriter
from keycloak_operator.shell.replication.clients import ClientWriter
from keycloak_operator.shell.replication.context import InRealm
from keycloak_operator.shell.replication.groups import GroupWriter
from keycloak_operator.shell.replication.identity_providers import IdentityProviderWriter
from keycloak_operator.shell.replication.realm_defaults import RealmDefaultsWriter
from keycloak_operator.shell.replication.roles import RoleWriter

Obj = dict[str, Any]
Targets = Mapping[ObjectKey, RealmTarget]


class InsideRealm(Protocol):
    """A writer of what lives inside a realm, run once the realm is settled."""

    async def sync(self, rnd: Round, at: InRealm) -> None: ...


@dataclass(frozen=True)
class Tools:
    """What writers are made with, once per operator process."""

    kube: Kube
    limiter: WriteLimiter
    concurrency: int


# How one listed object of a kind becomes the round's Resource: its realm found among the targets, its spec
# read (a bad one reported on itself), its namespace checked against the realm's allow-list.
ToResource = Callable[[Obj, Targets, Set[str], ServerPolicy], Resource]


@dataclass(frozen=True)
class Reads:
    """A kind's resources, as a step reads them from the round's listing."""

    kind: ReplicatedKind
    resource: ToResource


@dataclass(frozen=True)
class Step:
    writer: Callable[[Tools], InsideRealm]
    reads: Reads | None = None  # None: a part of the realm itself, no resource of its own


def _plain(build: Callable[[Obj, Targets, Set[str]], Resource]) -> ToResource:
    return lambda obj, targets, blind, _policy: build(obj, targets, blind)


def _calling(build: Callable[..., Resource]) -> ToResource:
    """A kind with URLs Keycloak calls: the policy says whether loopback http is allowed (called_urls.py)."""
    return lambda obj, targets, blind, policy: build(
        obj, targets, blind, loopback_http=policy.idp_loopback_http
    )


# Roles first, then client scopes, clients (which may attach those scopes), groups (which may map those
# clients' roles), what the realm gives every user (which may name those roles and groups), identity
# providers (whose mappers may name roles), then authentication flows.
STEPS: Final[tuple[Step, ...]] = (
    Step(lambda t: RoleWriter(t.limiter)),
    Step(lambda t: ClientScopeWriter(t.limiter), Reads(client_scope.DECLARED, _plain(scope_resource))),
    Step(
        lambda t: ClientWriter(t.kube, t.limiter, t.concurrency),
        Reads(client.DECLARED, _calling(client_resource)),
    ),
    Step(lambda t: GroupWriter(t.limiter), Reads(group.DECLARED, _plain(group_resource))),
    Step(lambda t: RealmDefaultsWriter(t.limiter)),
    Step(
        lambda t: IdentityProviderWriter(t.kube, t.limiter),
        Reads(identity_provider.DECLARED, _calling(idp_resource)),
    ),
    Step(
        lambda t: AuthenticationFlowWriter(t.limiter),
        Reads(authentication_flow.DECLARED, _plain(flow_resource)),
    ),
)
