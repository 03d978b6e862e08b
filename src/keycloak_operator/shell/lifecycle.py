"""The operator process's start and stop: kopf's startup and cleanup handlers, filling and emptying the one
runtime object (runtime.py) both controllers share.

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
from keycloak_operator.shell import diagnostics, handlers, hooks_for_tests, replication_handlers
from keycloak_operator.shell.kube import Kube
from keycloak_operator.shell.leadership import leadership
from keycloak_operator.shell.runtime import runtime

# Each controller had a client of its own, with the client's default pool of 100 connections; sharing one,
# they keep the same number between them, so neither waits for a connection where it did not before.
CONNECTIONS = 200


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.persistence.finalizer = f"{names.GROUP}/finalizer"
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=names.GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=names.GROUP)
    settings.posting.enabled = False  # our Events are posted explicitly, only when something happens
    settings.watching.server_timeout = 300
    settings.peering.lifetime = runtime.settings.peering_lifetime
    diagnostics.install()
    hooks_for_tests.announce()
    if runtime.kube is None:  # kopf retries a startup handler that failed: connect once
        runtime.kube = await Kube.connect(CONNECTIONS)
    if runtime.leadership is None:
        runtime.leadership = asyncio.create_task(leadership.watch(runtime.kube))
    handlers.start(runtime.kube, runtime.settings)
    replication_handlers.start(runtime.kube, runtime.settings)
    if runtime.resync is None:
        runtime.resync = asyncio.create_task(_resync_forever(runtime.settings.resync_seconds))


async def _resync_forever(seconds: float) -> None:
    """The fallback for events missed: both controllers queue everything they have seen, every `seconds`."""
    while True:
        await asyncio.sleep(seconds)
        handlers.resync()
        replication_handlers.resync()


@kopf.on.cleanup()
async def cleanup(**_: Any) -> None:
    for task in (runtime.resync, runtime.leadership):
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    runtime.resync = runtime.leadership = None
    await handlers.stop()
    await replication_handlers.stop()
    if runtime.kube is not None:
        await runtime.kube.close()
        runtime.kube = None


def register() -> None:
    """Nothing to do: importing this module registered kopf's startup and cleanup handlers, and through
    `handlers` and `replication_handlers` every resource handler. The CLI calls it so that the import is
    a use, not an unused name a linter drops."""
