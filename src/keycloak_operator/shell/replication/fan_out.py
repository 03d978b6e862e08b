"""Runs one step per object (a client's parts, its service account, its Secret) a few at a time.

A round's per-client steps are mostly reads, one after another: sequential, a first sync of 1,000 clients
was bound by request latency (about 13 writes/s against a write limit of 50/s). Run side by side, at most
`limit` at once, every write still goes through the write limiter (shell/ratelimit.py). Steps of one phase
are independent of each other by construction (the caller keeps phases apart: roles before composites,
clients before their service accounts' mappings); results come back in the objects' order, so what the round
reports does not depend on which request answered first. Given `fair_by` (an item's namespace), steps start
round-robin over namespaces (core/replication/fairness.py), as the executor's writes do: in the items' own
order (sorted by namespace) every slot would go to one namespace, whose writes all wait for its own
per-namespace limit while the global budget sits unused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from keycloak_operator.core.replication.fairness import round_robin

T = TypeVar("T")
R = TypeVar("R")


async def fan_out(
    items: Sequence[T],
    step: Callable[[T], Awaitable[R]],
    limit: int,
    *,
    fair_by: Callable[[T], str] | None = None,
) -> list[R]:
    """`step(item)` for each item, at most `limit` at a time, started round-robin over `fair_by` if given;
    the results in the items' order. Each step handles its object's own failures; an exception it lets
    through (a bug) cancels the others and is raised as it was, not wrapped in a group, so the round's
    handlers see the type they expect."""
    gate = asyncio.Semaphore(max(1, limit))

    async def one(item: T) -> R:
        async with gate:
            return await step(item)

    starts = list(range(len(items)))
    if fair_by is not None:
        starts = round_robin(starts, lambda i: fair_by(items[i]))
    # Tasks run, and queue on the semaphore (first come, first served), in the order they are made.
    started = {i: asyncio.ensure_future(one(items[i])) for i in starts}
    tasks = list(started.values())
    try:
        await asyncio.gather(*tasks)
        return [started[i].result() for i in range(len(items))]
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
