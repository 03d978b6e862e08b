"""A keyed work queue with priorities, deduplication and per-key backoff, processed by a pool of workers.

Every trigger (a Keycloak event, a child's event, the resync tick) only adds a key; workers reconcile keys
one at a time per key, so two passes over one Keycloak never overlap. Cutover keys (a green just became
Ready: traffic waits on that pass) go first, then urgent ones (an upgrade in flight), then routine ones. A
key added while it is being processed runs once more afterwards, so no change is lost; a failing key
retries with exponential backoff and never blocks the others.

Keys may belong to groups (for replication: the namespace that runs a server, or an external server's host)
with at most `per_group` of a group's keys processed at once. Whoever controls many keys of one group (a
tenant that makes many Keycloaks, or names many ports of one host) then holds at most that many workers, and
the others' keys keep being processed (docs/adr/0012-tenant-isolation.md). A key whose group is full waits in
the queue, in its place, until one of its group finishes.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import itertools
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

CUTOVER = 0
URGENT = 1
ROUTINE = 2


K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    def __init__(
        self,
        process: Callable[[K], Awaitable[float | None]],
        *,
        workers: int = 8,
        base_backoff: float = 1.0,
        max_backoff: float = 60.0,
        timeout: float = 300.0,
        group: Callable[[K], Hashable] | None = None,
        per_group: int | None = None,
    ) -> None:
        self._process = process
        self._workers = workers
        self._base_backoff = base_backoff
        self._max_backoff = max_backoff
        self._timeout = timeout
        self._group = group
        self._per_group = per_group if group is not None and per_group is not None else workers
        if self._per_group < 1:
            raise ValueError("per_group must be at least 1")
        self._running: dict[Hashable, int] = {}  # a group -> its keys being processed
        self._group_at_start: dict[K, Hashable] = {}  # a key's group may change while it runs
        self._heap: list[tuple[int, int, K]] = []
        self._queued: dict[K, int] = {}
        self._processing: set[K] = set()
        self._dirty: dict[K, int] = {}
        self._failures: dict[K, int] = {}
        self._seq = itertools.count()
        self._ready = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def add(self, key: K, *, priority: int = ROUTINE) -> None:
        if key in self._processing:
            self._dirty[key] = min(priority, self._dirty.get(key, priority))
            return
        current = self._queued.get(key)
        if current is not None and current <= priority:
            return
        self._queued[key] = priority
        heapq.heappush(self._heap, (priority, next(self._seq), key))
        self._ready.set()

    def add_after(self, key: K, delay: float, *, priority: int = ROUTINE) -> None:
        asyncio.get_running_loop().call_later(delay, functools.partial(self.add, key, priority=priority))

    def forget(self, key: K) -> None:
        """The object is gone: drop queued work and its failure count."""
        self._queued.pop(key, None)
        self._dirty.pop(key, None)
        self._failures.pop(key, None)

    def __len__(self) -> int:
        return len(self._queued)

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._worker(), name=f"workqueue-{i}") for i in range(self._workers)
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _group_of(self, key: K) -> Hashable:
        return self._group(key) if self._group is not None else None

    def _pop(self) -> K | None:
        """The first key in priority order whose group has room; keys of full groups keep their place."""
        waiting: list[tuple[int, int, K]] = []
        found: K | None = None
        full = {group for group, running in self._running.items() if running >= self._per_group}
        while self._heap:
            entry = heapq.heappop(self._heap)
            priority, _, key = entry
            if self._queued.get(key) != priority:  # older, superseded entries are skipped
                continue
            if full and self._group_of(key) in full:  # a key's group is asked only when some group is full
                waiting.append(entry)
                continue
            del self._queued[key]
            found = key
            break
        for entry in waiting:
            heapq.heappush(self._heap, entry)
        return found

    def _started(self, key: K) -> None:
        self._processing.add(key)
        if self._group is not None:
            group = self._group_of(key)
            self._group_at_start[key] = group
            self._running[group] = self._running.get(group, 0) + 1

    def _finished(self, key: K) -> None:
        self._processing.discard(key)
        if self._group is not None:
            group = self._group_at_start.pop(key)
            left = self._running.get(group, 0) - 1
            if left > 0:
                self._running[group] = left
            else:
                self._running.pop(group, None)
            if self._heap:
                self._ready.set()  # a key of this group may have been waiting for its room

    async def _worker(self) -> None:
        while True:
            key = self._pop()
            if key is None:
                self._ready.clear()
                await self._ready.wait()
                continue
            self._started(key)
            try:
                # A pass that never ends would hold its key forever (events only mark it dirty): bound it, so
                # it fails loudly and is retried like any failure.
                again_after = await asyncio.wait_for(self._process(key), self._timeout)
                self._failures.pop(key, None)
                if again_after is not None:  # the processor asked to look again later (a timed wait)
                    self.add_after(key, again_after)
            except asyncio.CancelledError:
                raise
            except Exception:
                failures = self._failures.get(key, 0) + 1
                self._failures[key] = failures
                delay = min(self._base_backoff * 2 ** (failures - 1), self._max_backoff)
                log.exception("processing %s failed (%d in a row); retrying in %.0fs", key, failures, delay)
                self.add_after(key, delay)
            finally:
                self._finished(key)
                again = self._dirty.pop(key, None)
                if again is not None:
                    self.add(key, priority=again)
