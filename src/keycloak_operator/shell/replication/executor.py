"""Runs one scope's planned writes against Keycloak: in the plan's phases, a few at a time, each within the
write limits; a write that fails is reported on its own resource and the others go on."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Final

from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.round import Round
from keycloak_operator.core.replication.sync import ScopeOperation, ScopePlan, operation
from keycloak_operator.shell import metrics
from keycloak_operator.shell.admin_connection import AdminError
from keycloak_operator.shell.ratelimit import WriteLimiter

CONCURRENCY: Final = 4  # Keycloak admin writes in flight per round

Write = Callable[[ScopeOperation], Awaitable[None]]


async def execute(scope: ScopePlan, write: Write, limiter: WriteLimiter, rnd: Round) -> dict[ObjectKey, str]:
    """Removals, then upserts (`ScopePlan.phases`); the keys whose write failed, with the error."""
    failed: dict[ObjectKey, str] = {}
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(op: ScopeOperation) -> None:
        async with gate:
            await limiter.acquire(op.key.namespace)
            try:
                await write(op)
                metrics.replication_write(op.key.kind, operation(op))
            except AdminError as e:
                failed[op.key] = str(e)
                rnd.write_failed(op.key, str(e))

    for ordered in scope.phases():
        await asyncio.gather(*(one(op) for op in ordered))
    return failed
