"""The JGroups cluster views real Keycloak pods log, collected while pods come and go.

Keycloak logs every view its node joins ("ISPN000094: Received new cluster view for channel ISPN:
[a-1|3] (2) [a-1, b-2]"), members named after the pods' hostnames. A pod's log is gone once the pod is, so
a thread reads every live pod's log every few seconds and keeps each view it has seen, with the cache cluster
the operator put the pod in (its label). Whether two cache clusters stayed apart is then a question about
the views, answered from Keycloak's own words.

A node prints a member whose logical name it has not learnt yet as the bare UUID of its JGroups address
(two pods joining at once do this). A view is the same list on every member, so such a member is named from
another pod's log of the same view (channel and view id); one that no pod named stays unaccounted for.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

from keycloak_operator.kernel import names
from tests.integration.support.kubectl import Kubectl

VIEW = re.compile(r"Received new cluster view for channel (\S+): \[([^\]]*)\] \((\d+)\) \[([^\]]*)\]")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(\(.*\))?")


@dataclass(frozen=True)
class View:
    pod: str  # the pod that logged it
    cache_cluster: str  # the operator's label on that pod
    channel: str
    members: tuple[str, ...]
    view_id: str = ""  # "coordinator|number": the same view on every member that logs it


def views_in(log: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(channel, view id, members) of every view a Keycloak log reports, in order."""
    return [
        (channel, view_id.strip(), tuple(m.strip() for m in members.split(",") if m.strip()))
        for channel, view_id, _, members in VIEW.findall(log)
    ]


def named(seen: set[View]) -> set[View]:
    """The views with every member printed as a bare UUID replaced by the name another pod's log of the
    same view gives it at the same place; a UUID no log names is kept, so it still counts as unknown."""
    names_of: dict[tuple[str, str], list[set[str]]] = {}
    for view in seen:
        if not view.view_id:
            continue
        places = names_of.setdefault((view.channel, view.view_id), [set() for _ in view.members])
        for place, member in zip(places, view.members, strict=False):
            if not UUID.fullmatch(member):
                place.add(member)

    def name(view: View, index: int, member: str) -> str:
        places = names_of.get((view.channel, view.view_id), [])
        if UUID.fullmatch(member) and index < len(places) and len(places[index]) == 1:
            return next(iter(places[index]))
        return member

    return {
        View(
            v.pod,
            v.cache_cluster,
            v.channel,
            tuple(name(v, i, m) for i, m in enumerate(v.members)),
            v.view_id,
        )
        for v in seen
    }


def pod_of(member: str, pods: set[str]) -> str | None:
    """The pod a JGroups member name belongs to: Keycloak names its node `<hostname>-<number>`."""
    owners = [p for p in pods if member == p or member.startswith(f"{p}-")]
    return max(owners, key=len) if owners else None


@dataclass
class ViewWatch:
    kubectl: Kubectl
    namespace: str
    instance: str  # the Keycloak's name
    interval: float = 3.0
    seen: set[View] = field(default_factory=set)
    cache_cluster_of: dict[str, str] = field(default_factory=dict)  # every pod seen -> its cache cluster

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="jgroups-views", daemon=True)

    def __enter__(self) -> ViewWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        self.collect()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.collect()
            self._stop.wait(self.interval)

    def collect(self) -> None:
        selector = f"{names.LABEL_INSTANCE}={self.instance}"
        for pod in self.kubectl.list("pods", self.namespace, selector=selector):
            name = pod["metadata"]["name"]
            cluster = (pod["metadata"].get("labels") or {}).get(names.LABEL_CACHE_CLUSTER, "")
            self.cache_cluster_of[name] = cluster
            log = self.kubectl.run("logs", "-n", self.namespace, name, check=False).stdout
            for channel, view_id, members in views_in(log):
                self.seen.add(View(name, cluster, channel, members, view_id))

    def crossings(self) -> list[str]:
        """Every view in which a pod saw a member from another cache cluster (or one no pod accounts for)."""
        pods = set(self.cache_cluster_of)
        found = []
        for view in sorted(named(self.seen), key=lambda v: (v.pod, v.members)):
            for member in view.members:
                owner = pod_of(member, pods)
                if owner is None or self.cache_cluster_of[owner] != view.cache_cluster:
                    theirs = self.cache_cluster_of.get(owner or "", "unknown")
                    found.append(
                        f"{view.pod} (cache cluster {view.cache_cluster}) saw {member} ({theirs}) in "
                        f"{view.channel} view {list(view.members)}"
                    )
        return found

    def largest(self, cache_cluster: str) -> int:
        return max((len(v.members) for v in self.seen if v.cache_cluster == cache_cluster), default=0)


def assert_apart(seen: set[View], tracks: dict[str, str]) -> None:
    """Every view a pod logged holds pods of that pod's own track only (`tracks`: pod -> track, every pod
    that ran), and every pod logged one: blue's and green's nodes never met."""
    logged = {v.pod for v in seen}
    assert set(tracks) <= logged, (tracks, logged)
    for view in named(seen):
        members = {pod_of(m, set(tracks)) for m in view.members}
        assert None not in members and {tracks[m] for m in members if m} == {tracks[view.pod]}, view
