"""What a writer of something that lives inside a realm (its roles, its clients) is given by the round."""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass

from keycloak_operator.core.replication.service_account import Grant
from keycloak_operator.core.replication.sync import Resource, Revocation
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin
from keycloak_operator.shell.replication.realm_reads import RealmReads


@dataclass(frozen=True)
class InRealm:
    admin: KeycloakAdmin  # the login that acts for the realm
    realm: Resource
    remote: str  # the realm's name in Keycloak
    children: list[Resource]  # every resource declared in the realm, of any kind (each writer takes its own)
    watched: Container[str] | None  # namespaces whose markers may be diffed (watched.Listing.observed)
    revocation: Revocation
    reads: RealmReads  # this round's listings in the realm, shared by its steps (realm_reads.py)
    grants: tuple[Grant, ...] = ()  # the realm resource's spec.serviceAccountGrants (service_account.py)
