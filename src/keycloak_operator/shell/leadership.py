"""Whether this replica may act now, read from kopf's peering object (core/peering.py decides).

kopf pauses its watchers while another replica leads, but our work queues and resync ticks run beside them;
they ask `leadership.active(namespace)` before each pass. The peering status is polled every few seconds and
the decision is re-evaluated on every call, so a dead leader's deadline passing is seen at once; a new leader
is seen within one poll (its writes and ours are both guarded by resourceVersion meanwhile).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

from keycloak_operator.core import peering
from keycloak_operator.shell.kube import ApiError, Kube, Resource

log = logging.getLogger(__name__)

CLUSTER_PEERINGS = Resource("kopf.dev", "v1", "clusterkopfpeerings")
NAMESPACED_PEERINGS = Resource("kopf.dev", "v1", "kopfpeerings")
POLL_SECONDS = 2.0
STANDBY_RECHECK_SECONDS = 2.0  # a standby replica looks at a queued key again after this long


class Leadership:
    def __init__(self) -> None:
        self.peering: str | None = None  # None: standalone, always active
        self.identity = ""
        self.priority = 0
        self.namespaces: list[str] | None = None  # None: cluster-wide peering
        self._status: dict[str | None, dict[str, Any]] = {}
        self._was_active: bool | None = None

    def configure(
        self, peering_name: str | None, identity: str, priority: int, namespaces: list[str] | None
    ) -> None:
        self.peering, self.identity, self.priority = peering_name, identity, priority
        self.namespaces = namespaces or None

    def active(self, namespace: str | None = None) -> bool:
        if self.peering is None:
            return True
        scope = None if self.namespaces is None else namespace
        status = self._status.get(scope)
        return status is not None and peering.is_active(
            status, self.identity, self.priority, datetime.now(UTC)
        )

    def all_active(self) -> bool:
        """For work that spans namespaces (a replication round covers a whole Keycloak server)."""
        scopes = [None] if self.namespaces is None else self.namespaces
        return all(self.active(s) for s in scopes)

    async def watch(self, kube: Kube) -> None:
        if self.peering is None:
            return
        while True:
            await self._poll(kube)
            now_active = self.all_active()
            if now_active != self._was_active:
                log.info("this replica is %s", "active" if now_active else "standing by")
                self._was_active = now_active
            await asyncio.sleep(POLL_SECONDS)

    async def _poll(self, kube: Kube) -> None:
        assert self.peering is not None
        scopes: list[str | None] = [None] if self.namespaces is None else list(self.namespaces)
        for scope in scopes:
            res = CLUSTER_PEERINGS if scope is None else NAMESPACED_PEERINGS
            try:
                obj = await kube.get(res, scope, self.peering)
            except ApiError as e:
                log.warning("cannot read peering %s: %s", self.peering, e)
                continue  # keep the last answer: the API server being away changes nothing about peers
            if obj is None:
                log.warning("peering object %s not found: create it (the chart does)", self.peering)
                self._status.pop(scope, None)
                continue
            self._status[scope] = dict(obj.get("status") or {})


leadership = Leadership()
