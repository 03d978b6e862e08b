"""Runs one step per object (a client's parts, its service account, its Secret) a few at a time.

A round's per-client steps are mostly reads, one after another: sequential, a first sync of 1,000 clients
was bound by request latency (about 13 writes/s against a write limit of 50/s). Run side by side, at most
`limit` at once, every write still goes through the write limiter (shell/ratelimit.py). Steps of one phase
are independent of each other by construction (the caller keeps phases apart: roles before composites,
clients before their service accounts' mappings); results come back in the objects' order, so what the round
reports does not depend on which request answered first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Final, TypeVar

DEFAULT_CONCURRENCY: Final = 8  # KCOP_REPLICATION_CONCURRENCY: per-object steps in flight per realm

T = TypeVar("T")
R = TypeVar("R")


async def fan_out(items: Sequence[T], step: Callable[[T], Awaitable[R]], limit: int) -> list[R]:
    """`step(item)` for each item, at most `limit` at a time; the results in the items' order. Each step
    handles its object's own failures; an exception it lets through (a bug) cancels the others and is
    raised as it was, not wrapped in a group, so the round's handlers see the type they expect."""
    gate = asyncio.Semaphore(max(1, limit))

    async def one(item: T) -> R:
        async with gate:
            return await step(item)

    tasks = [asyncio.ensure_future(one(item)) for item in items]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
