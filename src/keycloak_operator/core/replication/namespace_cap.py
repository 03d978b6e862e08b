"""How much of one namespace a replication round reads: at most a cap of resources of each kind (ADR 0012).

Every round LISTs every kind it replicates, page by page (shell/replication/listing.py). A namespace holding
more than `cap` resources of one kind is left out of the round whole, as a namespace that could not be read
is (watched.py, standing `over_cap`): its objects in Keycloak are held, never diffed, never deleted, and
what reaches across into it waits. Every other namespace converges as before. Any namespace may create
resources, so without the cap one tenant's hundred thousand clients would cost every round of every tenant
their memory and time.

A `Tally` takes one kind's pages as they arrive: what it keeps is bounded by the cap per namespace (a
namespace that goes over has what was kept of it dropped at once), and each item is kept without the
metadata the round never reads (managedFields, kubectl's last-applied copy of the whole object).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from keycloak_operator.core.replication.watched import Unlisted

Obj = dict[str, Any]

CAP_SETTING: Final = "KCOP_NAMESPACE_MAX_RESOURCES"
# A tenant's 2,000 clients (or realms, groups...) in one namespace are read; more are refused. Large enough
# for the largest tenant measured (1,000 clients: bench/), small enough that one namespace's share of a
# round stays a few tens of MiB.
DEFAULT_CAP: Final = 2000
LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"


def namespace_of(obj: Mapping[str, Any]) -> str:
    """The namespace the API server listed an object in ('' if it named none: counted as one namespace)."""
    meta = obj.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, Mapping) else None
    return ns if isinstance(ns, str) else ""


def slim(obj: Obj) -> Obj:
    """The object without what no round reads and what can be most of its size: the field managers' record
    and kubectl's last-applied copy of the whole object. A shallow copy: the page it came from goes."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return obj
    trimmed = {k: v for k, v in meta.items() if k != "managedFields"}
    annotations = meta.get("annotations")
    if isinstance(annotations, Mapping) and LAST_APPLIED in annotations:
        trimmed["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    return {**obj, "metadata": trimmed}


@dataclass
class Tally:
    """One kind's LIST as its pages arrive: the items of each namespace up to the cap, and which namespaces
    went over it (of those nothing is kept). `plural`: the kind as the API names it, for messages."""

    plural: str
    cap: int
    counts: dict[str, int] = field(default_factory=dict)
    kept: list[Obj] = field(default_factory=list)

    def add(self, page: Iterable[Obj]) -> None:
        for obj in page:
            ns = namespace_of(obj)
            n = self.counts[ns] = self.counts.get(ns, 0) + 1
            if n <= self.cap:
                self.kept.append(slim(obj))
            elif n == self.cap + 1:  # just went over: what was kept of it goes
                self.kept = [o for o in self.kept if namespace_of(o) != ns]

    @property
    def over(self) -> frozenset[str]:
        return frozenset(ns for ns, n in self.counts.items() if n > self.cap)

    def message(self, namespace: str) -> str:
        return (
            f"namespace {namespace} holds more than {self.cap} {self.plural} (at least "
            f"{self.counts.get(namespace, 0)} listed), more than the operator reads from one namespace "
            f"({CAP_SETTING}); none of its resources are replicated, and nothing of it is changed or "
            "deleted in Keycloak, until it holds fewer"
        )


def over_cap(tallies: Iterable[Tally]) -> dict[str, Unlisted]:
    """The namespaces left out of a round for holding too many of some kind, each with why (the first kind
    over, in the order read)."""
    out: dict[str, Unlisted] = {}
    for tally in tallies:
        for ns in sorted(tally.over):
            out.setdefault(ns, Unlisted(ns, "over_cap", tally.message(ns)))
    return out


def kept(tally: Tally, left_out: Iterable[str]) -> list[Obj]:
    """What a round reads of one kind: nothing of a namespace left out (over the cap of any kind, or
    unreadable): a namespace is read whole or not at all."""
    out = frozenset(left_out)
    return [o for o in tally.kept if namespace_of(o) not in out]
