"""What a round reads from Kubernetes: realms, clients, client scopes, groups, identity providers and (if a
realm names one) Keycloaks, LISTed fresh.

Not taken from a cache: a resource missing from a stale cache would look deleted, and its object would go.
With a namespace list, each namespace is read on its own; one that does not answer is left out of the round
whole, never read as empty, and the others go on (core/replication/watched.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from keycloak_operator.core.replication.resources import names_keycloaks
from keycloak_operator.core.replication.watched import Listing, Standing, Unlisted, standing
from keycloak_operator.shell import metrics
from keycloak_operator.shell.kube import (
    AUTHENTICATION_FLOWS,
    CLIENT_SCOPES,
    CLIENTS,
    IDENTITY_PROVIDERS,
    KEYCLOAK_GROUPS,
    KEYCLOAKS,
    NAMESPACES,
    REALMS,
    ApiError,
    Kube,
    Resource,
)

log = logging.getLogger(__name__)

Obj = dict[str, Any]


@dataclass(frozen=True)
class Read:
    realms: list[Obj]
    clients: list[Obj]
    keycloaks: list[Obj]
    client_scopes: list[Obj]
    listing: Listing
    groups: list[Obj] = field(default_factory=list)
    identity_providers: list[Obj] = field(default_factory=list)
    flows: list[Obj] = field(default_factory=list)


class Reader:
    def __init__(self, kube: Kube, namespaces: Sequence[str] | None) -> None:
        self.kube = kube
        self.namespaces = list(namespaces) if namespaces else None
        self._unlisted: dict[str, Standing] = {}  # watched namespaces the last round could not list
        self._unserved: set[str] = set()  # kinds warned once that their CRD is missing

    async def read(self) -> Read:
        if self.namespaces is None:
            realms, clients = await self.kube.list(REALMS, None), await self.kube.list(CLIENTS, None)
            scopes = await self._optional(CLIENT_SCOPES, None)
            groups = await self._optional(KEYCLOAK_GROUPS, None)
            idps = await self._optional(IDENTITY_PROVIDERS, None)
            flows = await self._optional(AUTHENTICATION_FLOWS, None)
            keycloaks = await self.kube.list(KEYCLOAKS, None) if names_keycloaks(realms) else []
            return Read(realms, clients, keycloaks, scopes, Listing(None), groups, idps, flows)
        read: dict[str, list[list[Obj]]] = {}
        errors: dict[str, ApiError] = {}
        for ns in self.namespaces:
            try:
                read[ns] = [
                    await self.kube.list(REALMS, ns),
                    await self.kube.list(CLIENTS, ns),
                    await self._optional(CLIENT_SCOPES, ns),
                    await self._optional(KEYCLOAK_GROUPS, ns),
                    await self._optional(IDENTITY_PROVIDERS, ns),
                    await self._optional(AUTHENTICATION_FLOWS, ns),
                ]
            except ApiError as e:
                errors[ns] = e
        if names_keycloaks(o for found in read.values() for o in found[0]):
            for ns in list(read):
                try:
                    read[ns].append(await self.kube.list(KEYCLOAKS, ns))
                except ApiError as e:
                    errors[ns] = e
                    del read[ns]
        unlisted = {ns: Unlisted(ns, await self._standing(ns), str(e)) for ns, e in errors.items()}
        self._note_unlisted(unlisted)
        per_ns = list(read.values())
        return Read(
            [o for found in per_ns for o in found[0]],
            [o for found in per_ns for o in found[1]],
            [o for found in per_ns if len(found) > 6 for o in found[6]],
            [o for found in per_ns for o in found[2]],
            Listing(frozenset(self.namespaces), unlisted),
            [o for found in per_ns for o in found[3]],
            [o for found in per_ns for o in found[4]],
            [o for found in per_ns for o in found[5]],
        )

    async def _optional(self, resource: Resource, namespace: str | None) -> list[Obj]:
        """KeycloakClientScopes, KeycloakGroups, KeycloakIdentityProviders or KeycloakAuthenticationFlows;
        none when the API server does not serve the kind (404: its CRD is not installed yet, as after a
        `helm upgrade`, which never adds CRDs). Without the CRD no such resource can exist, so this is the
        truth, and realms and clients go on replicating; any other refusal is an unreadable listing, as for
        the other kinds."""
        try:
            return await self.kube.list(resource, namespace)
        except ApiError as e:
            if e.status != 404:
                raise
            if resource.plural not in self._unserved:
                log.warning("%s is not served (its CRD is not installed): none of them", resource.plural)
                self._unserved.add(resource.plural)
            return []

    async def _standing(self, namespace: str) -> Standing:
        """Whether a namespace that could not be listed is gone: read by a LIST with a field selector (the
        namespace-restricted install may list and watch namespaces, as kopf does; not get them)."""
        try:
            found = await self.kube.list(NAMESPACES, None, field_selector=f"metadata.name={namespace}")
        except ApiError as e:
            log.debug("namespace %s: cannot read it either: %s", namespace, e)
            return standing(None)
        return standing(found)

    def _note_unlisted(self, unlisted: Mapping[str, Unlisted]) -> None:
        """Logged when a namespace's standing changes (not every round: rounds run per server, every
        resync), and counted in a gauge while it lasts."""
        assert self.namespaces is not None
        for ns in self.namespaces:
            now = unlisted.get(ns)
            before = self._unlisted.get(ns)
            if now is None and before is not None:
                log.info("watched namespace %s can be read again; its realms and clients replicate again", ns)
                del self._unlisted[ns]
            elif now is not None and now.standing != before:
                self._unlisted[ns] = now.standing
                if now.standing == "gone":
                    log.info(
                        "watched namespace %s is gone or being deleted and cannot be listed (%s); "
                        "replicating the other namespaces without it, nothing of it is deleted from Keycloak",
                        ns,
                        now.error,
                    )
                else:
                    log.warning(
                        "watched namespace %s cannot be listed (%s); replicating the other namespaces "
                        "without it, its objects in Keycloak are left as they are, retried each round",
                        ns,
                        now.error,
                    )
        metrics.unlisted_namespaces(
            {st: sum(1 for v in self._unlisted.values() if v == st) for st in ("gone", "unreadable")}
        )
