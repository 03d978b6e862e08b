"""What the Keycloak controller (handlers.py) and the replication controller (replication_handlers.py) share
for the life of one operator process: the settings, parsed once; one Kubernetes client; one leadership
watcher.

One kopf startup handler connects, starts the leadership watcher and then each controller; one cleanup
handler stops the controllers and then closes the client they share. So neither controller depends on the
order kopf runs handlers in, and neither opens or closes the client for the other.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import kopf

from keycloak_operator.kernel import names
from keycloak_operator.shell import diagnostics, handlers, replication_handlers
from keycloak_operator.shell.kube import Kube
from keycloak_operator.shell.leadership import leadership
from keycloak_operator.shell.settings import Settings

# Each controller had a client of its own, with the client's default pool of 100 connections; sharing one,
# they keep the same number between them, so neither waits for a connection where it did not before.
CONNECTIONS = 200


class Shared:
    def __init__(self) -> None:
        self.settings = Settings()
        self.kube: Kube | None = None
        self.leadership: asyncio.Task[None] | None = None
        self.resync: asyncio.Task[None] | None = None


shared = Shared()


def configure(settings: Settings) -> None:
    shared.settings = settings


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.persistence.finalizer = f"{names.GROUP}/finalizer"
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=names.GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=names.GROUP)
    settings.posting.enabled = False  # our Events are posted explicitly, only when something happens
    settings.watching.server_timeout = 300
    settings.peering.lifetime = shared.settings.peering_lifetime
    diagnostics.install()
    if shared.kube is None:  # kopf retries a startup handler that failed: connect once
        shared.kube = await Kube.connect(CONNECTIONS)
    if shared.leadership is None:
        shared.leadership = asyncio.create_task(leadership.watch(shared.kube))
    handlers.start(shared.kube, shared.settings)
    replication_handlers.start(shared.kube, shared.settings)
    if shared.resync is None:
        shared.resync = asyncio.create_task(_resync_forever(shared.settings.resync_seconds))


async def _resync_forever(seconds: float) -> None:
    """The fallback for events missed: both controllers queue everything they have seen, every `seconds`."""
    while True:
        await asyncio.sleep(seconds)
        handlers.resync()
        replication_handlers.resync()


@kopf.on.cleanup()
async def cleanup(**_: Any) -> None:
    for task in (shared.resync, shared.leadership):
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    shared.resync = shared.leadership = None
    await handlers.stop()
    await replication_handlers.stop()
    if shared.kube is not None:
        await shared.kube.close()
        shared.kube = None
