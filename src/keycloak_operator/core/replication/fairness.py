"""Fair shares between tenants: the write order within a phase, and whose rounds share a worker budget.

Write order: round-robin over namespaces, so one busy namespace cannot starve the rest. With a thousand writes
queued for namespace A and one for B, B's write goes second, not last; together with the per-namespace rate
limit (shell/ratelimit.py) a namespace's share of the write budget is bounded.

Rounds: a round covers one server, and a lane's workers run rounds of different servers at once. Any
namespace may create Keycloaks, and any namespace allowed to name external servers may name many ports of one
host, each answering as slowly as its round budget allows. So rounds are grouped by who controls the server
(`round_group`) and a group holds at most a share of a lane's workers (shell/workqueue.py): one tenant's
servers, however many, never occupy every worker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from itertools import chain, zip_longest
from typing import TypeVar
from urllib.parse import urlsplit

from keycloak_operator.kernel import names

T = TypeVar("T")
_GAP = object()


def round_robin(items: Iterable[T], namespace_of: Callable[[T], str]) -> list[T]:
    """Stable within a namespace; namespaces take turns in sorted order."""
    lanes: dict[str, list[T]] = {}
    for item in items:
        lanes.setdefault(namespace_of(item), []).append(item)
    turns = zip_longest(*(lanes[ns] for ns in sorted(lanes)), fillvalue=_GAP)
    return [item for item in chain.from_iterable(turns) if item is not _GAP]  # type: ignore[misc]


def round_group(url: str, naming: AbstractSet[str] = frozenset()) -> str:
    """Who controls a server, for sharing workers: the namespace of a Keycloak this operator runs (whoever
    may create Keycloaks there made it); for an external server, the one namespace whose realms name it (a
    tenant's servers share its share, however many hosts it names), else its host (one party answers on all
    its ports; the name as resolvers read it, without case or a final dot). Anything else, as the key of
    rounds for resources that name no server, is a group of its own. `naming`: the namespaces of the realms
    that name `url`."""
    namespace = names.keycloak_url_namespace(url)
    if namespace is not None:
        return f"namespace:{namespace}"
    if len(naming) == 1:
        return f"namespace:{next(iter(naming))}"
    try:
        host = urlsplit(url).hostname
    except ValueError:
        host = None
    host = (host or "").rstrip(".")
    return f"host:{host}" if host else f"key:{url}"
