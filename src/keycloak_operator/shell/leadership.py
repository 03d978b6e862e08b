"""Whether this replica may act now, read from kopf's peering object (core/common/peering.py decides).

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

from keycloak_operator.core.common import formats, peering
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
        self._problems: dict[str | None, str] = {}  # the last warning about each scope's peering object
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
        """For work that spans namespaces (a replication round covers a whole Keycloak server). Only the
        peering objects that exist count (core/common/peering.active_across): one deleted with its namespace
        must not stand this replica by for every other namespace."""
        if self.peering is None:
            return True
        scopes: list[str | None] = [None] if self.namespaces is None else list(self.namespaces)
        # .get: this runs in the scrape thread too, while the event loop may drop an entry meanwhile.
        present = [st for st in (self._status.get(s) for s in scopes) if st is not None]
        return peering.active_across(present, self.identity, self.priority, datetime.now(UTC))

    def format_in_effect(self) -> int | None:
        """The stored format to write (core/common/formats.py): the newest every live replica in every peering
        object read advertises; None when one shares no format with this replica. Standalone there are no
        peers to ask: this replica's newest."""
        if self.peering is None:
            return formats.FORMAT_VERSION
        supports = formats.live_support(self._status.values(), datetime.now(UTC))
        return formats.in_effect(supports)

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
            where = "cluster-wide" if scope is None else f"in namespace {scope}"
            try:
                obj = await kube.get(res, scope, self.peering)
            except ApiError as e:
                self._problem(scope, f"cannot read peering {self.peering} {where}: {e}")
                continue  # keep the last answer: the API server being away changes nothing about peers
            if obj is None:
                self._problem(
                    scope,
                    f"peering object {self.peering} not found {where}: create it (the chart does); "
                    "until then that namespace has no say in who replicates",
                )
                self._status.pop(scope, None)
                continue
            if self._problems.pop(scope, None) is not None:
                log.info("peering %s %s read again", self.peering, where)
            self._status[scope] = dict(obj.get("status") or {})

    def _problem(self, scope: str | None, message: str) -> None:
        """Logged once until it changes, not every poll: a deleted namespace's peering stays gone."""
        if self._problems.get(scope) != message:
            log.warning("%s", message)
            self._problems[scope] = message


leadership = Leadership()
