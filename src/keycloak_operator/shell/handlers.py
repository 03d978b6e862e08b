"""kopf wiring: events become keys in one work queue; workers reconcile from the stored state.

Watching the children (Deployments, Services) turns a child's change, such as a Deployment becoming Ready or
a hand-edited selector, into an immediate reconcile of its owner; the resync tick is only the fallback.
Keycloaks with a change in flight (after a restart, say) are urgent and go first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from typing import Any

import kopf

from keycloak_operator.core import bluegreen, names, reconcile
from keycloak_operator.shell import diagnostics, metrics
from keycloak_operator.shell.kube import ApiError, Kube
from keycloak_operator.shell.leadership import STANDBY_RECHECK_SECONDS, leadership
from keycloak_operator.shell.reconciler import reconcile_once
from keycloak_operator.shell.workqueue import CUTOVER, ROUTINE, URGENT, WorkQueue

log = logging.getLogger(__name__)

RESYNC_SECONDS = float(os.environ.get("KCOP_RESYNC_SECONDS", "60"))
WORKERS = int(os.environ.get("KCOP_WORKERS", "8"))
# How long a silent replica counts as alive in the peering object: a standby takes over this long after the
# leader died. kopf's default is 60 s.
PEERING_LIFETIME = int(os.environ.get("KCOP_PEERING_LIFETIME", "60"))

Key = tuple[str, str]  # (namespace, name)
# A pass whose transition asks to be followed at once (requeue 0) is followed in the same worker, this many
# times at most, instead of going to the back of the queue: with 50 upgrades at once, each trip through the
# queue cost a state one to three seconds.
CHAIN_LIMIT = 8


class Runtime:
    """What the handlers share for the life of one operator process."""

    def __init__(self) -> None:
        self.kube: Kube | None = None
        self.queue: WorkQueue[Key] | None = None
        self.known: dict[str, Key] = {}  # uid -> key, for waking an owner from its child's event
        self.resync: asyncio.Task[None] | None = None
        self.leadership: asyncio.Task[None] | None = None


runtime = Runtime()


async def _process(key: Key) -> float | None:
    assert runtime.kube is not None
    if not leadership.active(key[0]):
        return STANDBY_RECHECK_SECONDS  # another replica leads; kopf is paused too
    started = time.monotonic()
    ok = False
    try:
        again = await reconcile_once(runtime.kube, *key)
        for _ in range(CHAIN_LIMIT):
            if again != 0 or not leadership.active(key[0]):
                break
            again = await reconcile_once(runtime.kube, *key)
        ok = True
        return again
    except ApiError as e:
        if not e.namespace_terminating:
            raise
        # Its children cannot be written and the Keycloak goes with the namespace: its deletion event follows.
        log.info("namespace %s is being deleted; not reconciling %s", *key)
        ok = True
        return None
    finally:
        metrics.reconciled(names.KEYCLOAK_KIND, time.monotonic() - started, ok)


async def _resync_forever() -> None:
    while True:
        await asyncio.sleep(RESYNC_SECONDS)
        assert runtime.queue is not None
        for key in list(runtime.known.values()):
            runtime.queue.add(key)


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.persistence.finalizer = f"{names.GROUP}/finalizer"
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=names.GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=names.GROUP)
    settings.posting.enabled = False  # our Events are posted explicitly, only when something happens
    settings.watching.server_timeout = 300
    settings.peering.lifetime = PEERING_LIFETIME
    diagnostics.install()
    runtime.kube = await Kube.connect()
    runtime.queue = WorkQueue(_process, workers=WORKERS)
    runtime.queue.start()
    runtime.resync = asyncio.create_task(_resync_forever())
    runtime.leadership = asyncio.create_task(leadership.watch(runtime.kube))


@kopf.on.cleanup()
async def cleanup(**_: Any) -> None:
    for task in (runtime.resync, runtime.leadership):
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if runtime.queue is not None:
        await runtime.queue.stop()
    if runtime.kube is not None:
        await runtime.kube.close()


@kopf.on.event(names.GROUP, names.VERSION, names.KEYCLOAK_PLURAL)
async def keycloak_event(event: kopf.RawEvent, body: kopf.Body, **_: Any) -> None:
    uid, key = body.metadata["uid"], (body.metadata["namespace"], body.metadata["name"])
    assert runtime.queue is not None
    if event["type"] == "DELETED":
        runtime.known.pop(uid, None)
        runtime.queue.forget(key)
        return
    runtime.known[uid] = key
    urgent = reconcile.change_in_flight(dict(body.get("status") or {}))
    runtime.queue.add(key, priority=URGENT if urgent else ROUTINE)


async def _child_event(body: kopf.Body, **_: Any) -> None:
    for ref in body.metadata.get("ownerReferences", []) or []:
        key = runtime.known.get(ref.get("uid", ""))
        if key is not None and runtime.queue is not None:
            cutover = bluegreen.green_rolled_out(key[1], dict(body))
            runtime.queue.add(key, priority=CUTOVER if cutover else ROUTINE)


_MANAGED = {names.LABEL_MANAGED_BY: names.OPERATOR_NAME}
kopf.on.event("apps", "v1", "deployments", labels=_MANAGED)(_child_event)
kopf.on.event("", "v1", "services", labels=_MANAGED)(_child_event)
