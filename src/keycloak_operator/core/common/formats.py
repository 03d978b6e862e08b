"""Which stored format the replicas may write: the newest one every live replica understands.

During a rolling update old and new replicas run side by side (ADR 0022). Each advertises the stored formats
it reads and writes in its kopf peering identity, `<name>@kcop-formats-<oldest>-<newest>`: kopf uses the
identity only as a key of the peering object's status (any string; its own default holds '@' and '/'), and
we choose it (cli.py), so every replica's advertisement is already where every other replica reads the
peering (shell/leadership.py) and vanishes with the replica's keep-alive. An identity without the suffix is
a replica from before formats existed: it understands format 1 only. Peers whose lastseen + lifetime has
passed do not count, as for leadership.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from keycloak_operator.core.common import peering

FIRST_FORMAT: Final = 1  # what every replica before stored formats wrote
OLDEST_FORMAT: Final = 1  # the oldest format this code still reads and writes (for one release)
FORMAT_VERSION: Final = 2  # the newest format this code writes once every live replica supports it

_SUFFIX: Final = re.compile(r"@kcop-formats-([0-9]{1,4})-([0-9]{1,4})$")


@dataclass(frozen=True, slots=True)
class Supported:
    oldest: int
    newest: int

    def __contains__(self, fmt: object) -> bool:
        return isinstance(fmt, int) and self.oldest <= fmt <= self.newest


THIS_REPLICA: Final = Supported(OLDEST_FORMAT, FORMAT_VERSION)


def advertise(name: str, supported: Supported = THIS_REPLICA) -> str:
    """The peering identity for a replica called `name` (its pod's name, say)."""
    return f"{name}@kcop-formats-{supported.oldest}-{supported.newest}"


def advertised(identity: str) -> Supported:
    """What a peer supports, from its identity. No suffix: a replica from before formats, format 1 only. A
    malformed range (oldest above newest) claims nothing beyond format 1 either: it can never let a
    migration run that the peer did not really agree to."""
    m = _SUFFIX.search(identity)
    if m is None:
        return Supported(FIRST_FORMAT, FIRST_FORMAT)
    oldest, newest = int(m[1]), int(m[2])
    if oldest > newest:
        return Supported(FIRST_FORMAT, FIRST_FORMAT)
    return Supported(oldest, newest)


def live_support(statuses: Iterable[Mapping[str, Any]], now: datetime) -> list[Supported]:
    """What each live peer supports, over every peering object the replica reads (one per watched
    namespace, or the cluster-wide one); a peer seen in several counts in each."""
    return [advertised(p.identity) for s in statuses for p in peering.peers(s) if p.deadline > now]


def in_effect(supports: Iterable[Supported], mine: Supported = THIS_REPLICA) -> int | None:
    """The newest format this replica and every live peer can read and write, which is what it writes.
    With no peer seen at all (peering not read yet) it is this replica's oldest: never newer than the others
    might know. None when some live peer shares no format with this replica (too old or too new): there is
    no agreement, so nothing whose shape depends on the format is written (ADR 0022: a format a live
    replica cannot read never runs under it)."""
    seen = list(supports)
    if not seen:
        return mine.oldest
    for fmt in range(mine.newest, mine.oldest - 1, -1):
        if all(fmt in s for s in seen):
            return fmt
    return None
