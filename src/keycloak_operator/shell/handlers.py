"""kopf wiring: one worker per Keycloak, woken by its own changes, by its children's, or by a resync timer.

Each Keycloak has a kopf daemon running a level-triggered loop: wait for a wake-up, reconcile from the
stored state, repeat. Watching the children (Deployments, Services) turns a child's change, such as a green
Deployment becoming Ready or a hand-edited selector, into an immediate reconcile of its owner; the timer is
only the fallback. A failing Keycloak backs off on its own and never blocks the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Any

import kopf

from keycloak_operator.core import names
from keycloak_operator.shell.kube import Kube
from keycloak_operator.shell.reconciler import reconcile_once

log = logging.getLogger(__name__)

RESYNC_SECONDS = float(os.environ.get("KCOP_RESYNC_SECONDS", "60"))
MAX_BACKOFF_SECONDS = 60.0

_wakers: dict[str, asyncio.Event] = {}
_kube: Kube | None = None


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
    global _kube
    settings.persistence.finalizer = f"{names.GROUP}/finalizer"
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=names.GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=names.GROUP)
    settings.posting.enabled = False  # our Events are posted explicitly, only when something happens
    settings.watching.server_timeout = 300
    _kube = await Kube.connect()


@kopf.on.cleanup()
async def cleanup(**_: Any) -> None:
    if _kube is not None:
        await _kube.close()


def wake(uid: str) -> None:
    waker = _wakers.get(uid)
    if waker is not None:
        waker.set()


@kopf.daemon(names.GROUP, names.VERSION, names.KEYCLOAK_PLURAL, cancellation_timeout=2.0)
async def keycloak_worker(
    name: str, namespace: str | None, uid: str, stopped: kopf.DaemonStopped, **_: Any
) -> None:
    waker = _wakers.setdefault(uid, asyncio.Event())
    waker.set()
    backoff = 1.0
    try:
        while not stopped:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waker.wait(), timeout=RESYNC_SECONDS)
            waker.clear()
            if stopped:
                break
            assert _kube is not None and namespace is not None
            try:
                await reconcile_once(_kube, namespace, name)
                backoff = 1.0
            except Exception:
                log.exception(
                    "reconcile of Keycloak %s/%s failed; retrying in %.0fs", namespace, name, backoff
                )
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
                waker.set()
    finally:
        _wakers.pop(uid, None)


@kopf.on.event(names.GROUP, names.VERSION, names.KEYCLOAK_PLURAL)
async def keycloak_changed(uid: str, **_: Any) -> None:
    wake(uid)


async def _child_changed(body: kopf.Body, **_: Any) -> None:
    for ref in body.metadata.get("ownerReferences", []) or []:
        if ref.get("kind") == names.KEYCLOAK_KIND and ref.get("apiVersion", "").startswith(names.GROUP):
            wake(ref["uid"])


_MANAGED = {names.LABEL_MANAGED_BY: names.OPERATOR_NAME}
kopf.on.event("apps", "v1", "deployments", labels=_MANAGED)(_child_changed)
kopf.on.event("", "v1", "services", labels=_MANAGED)(_child_changed)
