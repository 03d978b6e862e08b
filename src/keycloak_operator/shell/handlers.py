"""kopf wiring: events become keys in one work queue; workers reconcile from the stored state.

Watching the children (Deployments, Services) turns a child's change, such as a Deployment becoming Ready or
a hand-edited selector, into an immediate reconcile of its owner; the resync tick is only the fallback.
Keycloaks with a change in flight (after a restart, say) are urgent and go first.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import kopf

from keycloak_operator.core import bluegreen, reconcile
from keycloak_operator.kernel import names
from keycloak_operator.shell import metrics
from keycloak_operator.shell.kube import ApiError, Kube
from keycloak_operator.shell.leadership import STANDBY_RECHECK_SECONDS, leadership
from keycloak_operator.shell.reconciler import reconcile_once
from keycloak_operator.shell.runtime import Key, runtime
from keycloak_operator.shell.settings import Settings
from keycloak_operator.shell.workqueue import CUTOVER, ROUTINE, URGENT, WorkQueue

log = logging.getLogger(__name__)

# A pass whose transition asks to be followed at once (requeue 0) is followed in the same worker, this many
# times at most, instead of going to the back of the queue: with 50 upgrades at once, each trip through the
# queue cost a state one to three seconds.
CHAIN_LIMIT = 8


async def _process(key: Key) -> float | None:
    assert runtime.kube is not None
    if not leadership.active(key[0]):
        return STANDBY_RECHECK_SECONDS  # another replica leads; kopf is paused too
    started = time.monotonic()
    ok = False
    try:
        again = await reconcile_once(runtime.kube, *key, runtime.keycloaks.ingress_policy)
        for _ in range(CHAIN_LIMIT):
            if again != 0 or not leadership.active(key[0]):
                break
            again = await reconcile_once(runtime.kube, *key, runtime.keycloaks.ingress_policy)
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


def resync() -> None:
    """The resync tick (shell/lifecycle.py): every Keycloak seen goes through the queue again."""
    assert runtime.keycloaks.queue is not None
    for key in list(runtime.keycloaks.known.values()):
        runtime.keycloaks.queue.add(key)


def start(kube: Kube, settings: Settings) -> None:
    """Called once at startup (shell/lifecycle.py), with the client and settings both controllers share."""
    runtime.kube = kube
    runtime.keycloaks.ingress_policy = settings.ingress
    if runtime.keycloaks.queue is None:
        runtime.keycloaks.queue = WorkQueue(_process, workers=settings.workers)
        runtime.keycloaks.queue.start()


async def stop() -> None:
    """Its work queue; the shared client is closed after both controllers stopped."""
    if runtime.keycloaks.queue is not None:
        await runtime.keycloaks.queue.stop()


@kopf.on.event(names.GROUP, names.VERSION, names.KEYCLOAK_PLURAL)
async def keycloak_event(event: kopf.RawEvent, body: kopf.Body, **_: Any) -> None:
    uid, key = body.metadata["uid"], (body.metadata["namespace"], body.metadata["name"])
    assert runtime.keycloaks.queue is not None
    if event["type"] == "DELETED":
        runtime.keycloaks.known.pop(uid, None)
        runtime.keycloaks.queue.forget(key)
        metrics.FLEET.keycloak_gone(key)
        return
    runtime.keycloaks.known[uid] = key
    # Every status the operator stores comes back as an event: the fleet gauges follow it from here.
    metrics.FLEET.keycloak_seen(key, body.get("status"))
    urgent = reconcile.change_in_flight(dict(body.get("status") or {}))
    runtime.keycloaks.queue.add(key, priority=URGENT if urgent else ROUTINE)


async def _child_event(body: kopf.Body, **_: Any) -> None:
    for ref in body.metadata.get("ownerReferences", []) or []:
        key = runtime.keycloaks.known.get(ref.get("uid", ""))
        if key is not None and runtime.keycloaks.queue is not None:
            cutover = bluegreen.green_rolled_out(key[1], dict(body))
            runtime.keycloaks.queue.add(key, priority=CUTOVER if cutover else ROUTINE)


_MANAGED = {names.LABEL_MANAGED_BY: names.OPERATOR_NAME}
kopf.on.event("apps", "v1", "deployments", labels=_MANAGED)(_child_event)
kopf.on.event("", "v1", "services", labels=_MANAGED)(_child_event)
