"""The operator process's one runtime object: what the Keycloak controller (handlers.py) and the replication
controller (replication_handlers.py) share for the life of one process (the settings, parsed once; one
Kubernetes client; the leadership watcher and the resync tick), and each controller's own state beside it.

It holds state only; lifecycle.py's kopf startup and cleanup fill and empty it, and each controller reads
its own part. Modules hold this one object; tests replace its parts (never the object) to start from
nothing.
"""

from __future__ import annotations

import asyncio
from typing import Final

from keycloak_operator.core import ingress_policy
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.servers import DEFAULT_POLICY, ServerPolicy
from keycloak_operator.kernel import names
from keycloak_operator.shell.kube import Kube
from keycloak_operator.shell.replication import Replicator
from keycloak_operator.shell.settings import Settings
from keycloak_operator.shell.workqueue import WorkQueue

Key = tuple[str, str]  # a Keycloak's (namespace, name)
NO_SERVER: Final = (
    ""  # replication rounds for resources that name no reachable server (reported, never written)
)


class KeycloakState:
    """The Keycloak controller's: its work queue, and the Keycloaks it has seen."""

    def __init__(self) -> None:
        self.queue: WorkQueue[Key] | None = None
        self.known: dict[str, Key] = {}  # uid -> key, for waking an owner from its child's event
        self.ingress_policy = ingress_policy.DEFAULT_POLICY  # the installation's, from the settings


class ReplicationState:
    """The replication controller's: its replicator, its two lanes and the servers its resources name."""

    def __init__(self) -> None:
        self.policy: ServerPolicy = DEFAULT_POLICY
        self.replicator: Replicator | None = None
        self.own: WorkQueue[str] | None = None  # servers this operator runs
        self.external: WorkQueue[str] | None = None  # servers tenants name
        self.servers: dict[ObjectKey, str] = {}  # realm resource -> its server URL
        self.realms_of_client: dict[ObjectKey, ObjectKey] = {}  # an in-realm resource's realm

    def queue(self, url: str) -> None:
        """A URL's lane follows from the URL alone, so one server is never in two queues at once."""
        own = url == NO_SERVER or names.is_keycloak_url(url, self.policy.cluster_domain)
        lane = self.own if own else self.external
        assert lane is not None
        lane.add(url)


class Runtime:
    def __init__(self) -> None:
        self.settings = Settings()
        self.kube: Kube | None = None
        self.leadership: asyncio.Task[None] | None = None
        self.resync: asyncio.Task[None] | None = None
        self.keycloaks = KeycloakState()
        self.replication = ReplicationState()


runtime = Runtime()


def configure(settings: Settings) -> None:
    runtime.settings = settings
