"""Token buckets for Keycloak admin writes: one global, one per namespace (issue: no namespace starves)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class TokenBucket:
    def __init__(self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self._clock = rate, burst, clock
        self._tokens, self._at = burst, clock()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now

    async def take(self) -> None:
        async with self._lock:  # FIFO: waiters are served in arrival order
            self._refill()
            if self._tokens < 1:
                await asyncio.sleep((1 - self._tokens) / self.rate)
                self._refill()
            self._tokens -= 1


class WriteLimiter:
    """`await limiter.acquire(namespace)` before each write: the namespace's bucket, then the global one."""

    def __init__(self, global_rate: float, namespace_rate: float) -> None:
        self._global = TokenBucket(global_rate, max(1.0, global_rate))
        self._namespace_rate = namespace_rate
        self._namespaces: dict[str, TokenBucket] = {}

    async def acquire(self, namespace: str) -> None:
        bucket = self._namespaces.get(namespace)
        if bucket is None:
            rate = self._namespace_rate
            bucket = self._namespaces[namespace] = TokenBucket(rate, max(1.0, rate))
        await bucket.take()
        await self._global.take()
