"""When a server's next round runs after one that failed: soon, or, for a server that could not be reached or
answered unusably, later and later.

Every server backs off, the Keycloaks this operator runs included: any namespace may create a `Keycloak`,
whose image then answers as slowly or as hugely as it likes, so "runs it" does not mean "trusts it" (ADR
0012). A dead, trickling or hostile server costs a worker at most one round budget per period, and the
period grows while it stays that way. The operator's own Keycloaks stop growing sooner: their restarts (a
rollout, an upgrade) are routine, and a restarted one waits at most MAX_OWN_RETRY_S (one default resync)
before its realms converge again. Times are the caller's monotonic clock, in seconds.
"""

from __future__ import annotations

from typing import Final

from keycloak_operator.core.replication.servers import backoff_key
from keycloak_operator.kernel import names

RETRY_S: Final = 10.0
# A server that could not be reached (no login, no realm list, a deadline or the round budget run out, an
# answer refused as oversize or malformed) is retried later each time, up to this.
MAX_RETRY_S: Final = 300.0
# The same for a Keycloak this operator runs: one default resync (KCOP_RESYNC_SECONDS), so an upgrade's
# restart delays its realms by at most that much, while a hostile image still costs a worker only one round
# budget per minute.
MAX_OWN_RETRY_S: Final = 60.0


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
        """The delay before the next round (None: none needed). RETRY_S after a round with failures. A
        server that could not be reached or answered unusably waits twice as long after each such round in
        a row, up to MAX_RETRY_S (MAX_OWN_RETRY_S for a Keycloak this operator runs)."""
        host = backoff_key(url)
        if reached:
            self._unreachable.pop(host, None)
            self._not_before.pop(host, None)
            return RETRY_S if failed else None
        streak = self._unreachable.get(host, 0) + 1
        self._unreachable[host] = streak
        ceiling = MAX_OWN_RETRY_S if names.is_keycloak_url(host, self.cluster_domain) else MAX_RETRY_S
        delay = min(RETRY_S * 2 ** (streak - 1), ceiling)
        self._not_before[host] = now + delay - 1.0  # the retry itself must not be skipped
        return delay
