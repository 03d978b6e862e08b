"""Which of several operator replicas may act: the one kopf's peering leaves running.

kopf keeps a peering object whose status maps each operator's identity to its priority, lifetime and the time
it was last seen. kopf pauses its own watchers when a live peer has a higher priority, or the same one (then
every replica pauses, as kopf does). Our work queues run beside kopf's watchers, so they ask the same
question of the same object; this module is that question, kept pure so it can be tested against kopf's rule.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

PRIORITY_RANGE = (1, 1_000_000)


@dataclass(frozen=True)
class Peer:
    identity: str
    priority: int
    deadline: datetime


def peers(status: Mapping[str, Any]) -> list[Peer]:
    """The peers recorded in a peering object's status; entries that cannot be read are left out."""
    out: list[Peer] = []
    for identity, info in status.items():
        if not isinstance(info, Mapping):
            continue
        try:
            seen = datetime.fromisoformat(str(info["lastseen"]))
            lifetime = timedelta(seconds=int(info.get("lifetime", 60)))
            priority = int(info.get("priority", 0))
        except (KeyError, TypeError, ValueError):
            continue
        if seen.tzinfo is None:
            seen = seen.replace(tzinfo=UTC)
        out.append(Peer(str(identity), priority, seen + lifetime))
    return out


def is_active(status: Mapping[str, Any], me: str, priority: int, now: datetime) -> bool:
    """True when this replica has announced itself and no live peer outranks or ties with it."""
    known = peers(status)
    if not any(p.identity == me for p in known):
        return False  # kopf itself stays paused until it has seen its own keep-alive
    return all(p.priority < priority for p in known if p.identity != me and p.deadline > now)


def active_across(statuses: Iterable[Mapping[str, Any]], me: str, priority: int, now: datetime) -> bool:
    """For work that spans namespaces (a replication round covers a whole server), with one peering object
    per watched namespace: `statuses` are those of the peering objects that exist. Active when active in
    each of them, and there is at least one. A watched namespace whose peering object is gone (deleted with
    the namespace) has no say: otherwise deleting one watched namespace would stand every replica by, and
    stop replication in all the others."""
    seen = list(statuses)
    return bool(seen) and all(is_active(s, me, priority, now) for s in seen)


def default_priority(rng: random.Random | None = None) -> int:
    """Replicas of one Deployment share their arguments; a random priority keeps them from tying (a tie
    pauses all of them)."""
    return (rng or random.SystemRandom()).randint(*PRIORITY_RANGE)
