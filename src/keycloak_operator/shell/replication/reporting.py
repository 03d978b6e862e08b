"""The round's Kubernetes writes on the resources it replicates: finalizers first, then at the end each one's
events and its finalizer's release or its status (core/replication/report.py decides which)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.report import finalizer_added, report
from keycloak_operator.core.replication.round import Round
from keycloak_operator.shell import events, metrics
from keycloak_operator.shell.kube import REPLICATED, ApiError, Kube, Resource

log = logging.getLogger(__name__)

KUBE_CONCURRENCY: Final = 8  # Kubernetes writes in flight per round (finalizers, statuses, events)

Obj = dict[str, Any]


def _api(kind: str) -> Resource:
    return REPLICATED[kind]


class Reporter:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    async def ensure_finalizers(self, objs: Iterable[Obj]) -> None:
        """Each resource the round replicates holds the finalizer until its object is gone from Keycloak."""

        async def one(obj: Obj) -> None:
            patch = finalizer_added(obj)
            if patch is None:
                return
            meta = obj["metadata"]
            try:
                updated = await self.kube.merge_patch(
                    _api(obj["kind"]), meta["namespace"], meta["name"], patch
                )
            except ApiError as e:  # changed or gone meanwhile, or its namespace going: this one only
                log.info(
                    "%s %s/%s: finalizer not added yet: %s", obj["kind"], meta["namespace"], meta["name"], e
                )
                return
            meta.update(updated["metadata"])

        await _bounded(one(obj) for obj in objs)

    async def report(self, rnd: Round, revocation_grace: timedelta, server: str = "") -> None:
        now = datetime.now(UTC)
        await _bounded(
            self._one(rnd, key, obj, now, revocation_grace, server) for key, obj in rnd.objects.items()
        )
        metrics.FLEET.replicated_round(server, {(k.kind, k.namespace, k.name) for k in rnd.objects})

    async def _one(
        self, rnd: Round, key: ObjectKey, obj: Obj, now: datetime, grace: timedelta, server: str = ""
    ) -> None:
        done = report(rnd, key, obj, now, grace)
        for event in done.events:
            await events.post(self.kube, obj, event)
        if done.release is not None:
            metrics.FLEET.replicated_gone(key.kind, key.namespace, key.name)
            try:
                await self.kube.merge_patch(_api(key.kind), key.namespace, key.name, done.release)
            except ApiError as e:
                if e.status not in (404, 409):  # gone, or changed meanwhile: the next round looks again
                    _failed(rnd, key, e)
            return
        if done.ok is None:
            return  # not in this round's server
        metrics.resource_result(key.kind, done.ok)
        metrics.FLEET.replicated_seen(key.kind, key.namespace, key.name, rnd.verdicts[key].phase, server)
        if not done.status:
            return
        if done.transition is not None:
            if done.conflict:
                metrics.replication_conflict(key.kind)
            await events.post(self.kube, obj, done.transition)
        try:
            await self.kube.patch_status(
                _api(key.kind), key.namespace, key.name, done.status
            )  # False: deleted
        except ApiError as e:
            _failed(rnd, key, e)


def _failed(rnd: Round, key: ObjectKey, error: ApiError) -> None:
    """One resource's Kubernetes write failed: logged, retried by the next round, the others go on."""
    log.warning("%s %s/%s: %s", key.kind, key.namespace, key.name, error)
    rnd.failed = True


async def _bounded(calls: Iterable[Awaitable[None]], limit: int = KUBE_CONCURRENCY) -> None:
    """Runs Kubernetes writes for many resources side by side, a few at a time: one round touches every
    resource of a server on its first sync, and one at a time that is a minute per thousand."""
    gate = asyncio.Semaphore(limit)

    async def one(call: Awaitable[None]) -> None:
        async with gate:
            await call

    await asyncio.gather(*(one(c) for c in calls))
