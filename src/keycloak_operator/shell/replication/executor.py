"""Runs one scope's planned writes against Keycloak: in the plan's phases, a few at a time, each within the
write limits; a write that fails is reported on its own resource and the others go on. `write_scope` is the
step every kind's writer shares (ADR 0030): execute, settle, fold into the round."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Final

from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.round import Round, collect
from keycloak_operator.core.replication.sync import Resource, ScopeOperation, ScopePlan, operation, settle
from keycloak_operator.shell import metrics
from keycloak_operator.shell.admin.connection import AdminError
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


async def write_scope(
    rnd: Round,
    scope: ScopePlan,
    write: Write,
    limiter: WriteLimiter,
    resources: Mapping[ObjectKey, Resource],
    stages: Iterable[ScopePlan] | None = None,
) -> dict[ObjectKey, str]:
    """A kind's planned writes, executed (`stages` in turn, when a kind's writes depend on earlier ones, as
    a subgroup's on its parent's id), settled into verdicts and folded into the round for `resources`; the
    keys whose write failed, with the error."""
    failed: dict[ObjectKey, str] = {}
    for stage in (scope,) if stages is None else stages:
        failed.update(await execute(stage, write, limiter, rnd))
    settle(scope, failed)
    collect(rnd, scope, resources)
    return failed
