"""Write order within a phase: round-robin over namespaces, so one busy namespace cannot starve the rest.

With a thousand writes queued for namespace A and one for B, B's write goes second, not last; together with
the per-namespace rate limit (shell/ratelimit.py) a namespace's share of the write budget is bounded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import chain, zip_longest
from typing import TypeVar

T = TypeVar("T")
_GAP = object()


def round_robin(items: Iterable[T], namespace_of: Callable[[T], str]) -> list[T]:
    """Stable within a namespace; namespaces take turns in sorted order."""
    lanes: dict[str, list[T]] = {}
    for item in items:
        lanes.setdefault(namespace_of(item), []).append(item)
    turns = zip_longest(*(lanes[ns] for ns in sorted(lanes)), fillvalue=_GAP)
    return [item for item in chain.from_iterable(turns) if item is not _GAP]  # type: ignore[misc]
