"""When a server's next round runs after one that failed: soon, or, for an external server that could not be
reached at all, later and later.

A dead or trickling server a tenant names costs a worker one request deadline per period, and the period
grows while it stays unreachable; the Keycloaks this operator runs are always retried soon (a restart or a
rollout of theirs is not a reason to wait minutes). Times are the caller's monotonic clock, in seconds.
"""

from __future__ import annotations

from typing import Final

from keycloak_operator.core import names
from keycloak_operator.core.replication.servers import backoff_key

RETRY_S: Final = 10.0
# A server that could not be reached at all (no login, no realm list) is retried later each time, up to this.
MAX_RETRY_S: Final = 300.0


class Backoff:
    """Per host and port (whatever the path: a tenant cannot multiply its slow server by spelling paths),
    how many rounds in a row could not reach it, and when the next one may start."""

    def __init__(self, cluster_domain: str = names.DEFAULT_CLUSTER_DOMAIN) -> None:
        self.cluster_domain = cluster_domain
        self._unreachable: dict[str, int] = {}  # server host:port -> rounds in a row that could not reach it
        self._not_before: dict[str, float] = {}  # server host:port -> time a next round may start

    def waiting(self, url: str, now: float) -> bool:
        """Whether a round for `url` is to be skipped: the failed round asked for its retry later, and
        resyncs and events do not hurry it."""
        return now < self._not_before.get(backoff_key(url), 0.0)

    def after(self, url: str, *, failed: bool, reached: bool, now: float) -> float | None:
        """The delay before the next round (None: none needed). RETRY_S after a round with failures. An
        external server that could not be reached at all (no login, no realm list, or a request that ran
        out its deadline) waits twice as long after each such round in a row, up to MAX_RETRY_S."""
        host = backoff_key(url)
        if reached or names.is_keycloak_url(url, self.cluster_domain):
            self._unreachable.pop(host, None)
            self._not_before.pop(host, None)
            return RETRY_S if failed or not reached else None
        streak = self._unreachable.get(host, 0) + 1
        self._unreachable[host] = streak
        delay = min(RETRY_S * 2 ** (streak - 1), MAX_RETRY_S)
        self._not_before[host] = now + delay - 1.0  # the retry itself must not be skipped
        return delay
