"""What a round reads from Kubernetes: every replicated kind (models/kinds.py) and, if a realm names one,
Keycloaks, LISTed fresh, page by page (paging.py).

Not taken from a cache: a resource missing from a stale cache would look deleted, and its object would go.
With a namespace list, each namespace is read on its own; one that does not answer is left out of the round
whole, never read as empty, and the others go on (core/replication/watched.py). In either mode a namespace
holding more resources of one kind than the cap is left out the same way (core/replication/namespace_cap.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from keycloak_operator.core.replication.namespace_cap import DEFAULT_CAP, Obj, Tally, kept, over_cap
from keycloak_operator.core.replication.resources import names_keycloaks
from keycloak_operator.core.replication.watched import STANDINGS, Listing, Standing, Unlisted, standing
from keycloak_operator.kernel import names
from keycloak_operator.models.kinds import REPLICATED
from keycloak_operator.shell import metrics
from keycloak_operator.shell.kube import KEYCLOAKS, NAMESPACES, ApiError, Kube, Resource
from keycloak_operator.shell.kube import REPLICATED as RESOURCES
from keycloak_operator.shell.replication.paging import read_kind

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Read:
    objects: Mapping[str, list[Obj]]  # by kind, each object with its apiVersion and kind
    keycloaks: list[Obj]
    listing: Listing

    def of(self, kind: str) -> list[Obj]:
        return self.objects.get(kind, [])


# The kinds every round reads, in the registry's order (the realm first); Keycloaks after them, when some
# realm names one.
KINDS: Final = tuple(RESOURCES[k.kind] for k in REPLICATED)
REQUIRED: Final = frozenset(RESOURCES[k.kind].plural for k in REPLICATED if k.required)


class Reader:
    def __init__(self, kube: Kube, namespaces: Sequence[str] | None, cap: int = DEFAULT_CAP) -> None:
        """`cap`: the most resources of one kind read from one namespace (namespace_cap.py)."""
        self.kube = kube
        self.namespaces = list(namespaces) if namespaces else None
        self.cap = cap
        self._unlisted: dict[str, Standing] = {}  # namespaces the last round left out
        self._unserved: set[str] = set()  # kinds warned once that their CRD is missing

    async def read(self) -> Read:
        if self.namespaces is None:
            return await self._everywhere()
        read: dict[str, list[Tally]] = {}
        unlisted: dict[str, Unlisted] = {}
        for ns in self.namespaces:
            try:
                tallies = await self._namespace(ns, KINDS)
            except ApiError as e:
                unlisted[ns] = Unlisted(ns, await self._standing(ns), str(e))
                continue
            unlisted |= over_cap(tallies)
            if ns not in unlisted:
                read[ns] = tallies
        if names_keycloaks(o for tallies in read.values() for o in tallies[0].kept):
            for ns in list(read):
                try:
                    found = await self._namespace(ns, (KEYCLOAKS,))
                except ApiError as e:
                    unlisted[ns] = Unlisted(ns, await self._standing(ns), str(e))
                    del read[ns]
                    continue
                unlisted |= over_cap(found)
                if ns in unlisted:
                    del read[ns]
                else:
                    read[ns].extend(found)
        self._note_unlisted(unlisted)
        per_kind = [
            [o for tallies in read.values() if len(tallies) > i for o in tallies[i].kept]
            for i in range(len(KINDS) + 1)
        ]
        return self._read(per_kind, Listing(frozenset(self.namespaces), unlisted))

    async def _everywhere(self) -> Read:
        """Every namespace, one paged LIST per kind: one that fails fails the round (there is no namespace to
        leave out, and nothing may be read as empty); a namespace over the cap is left out."""
        tallies = [await self._kind(res, None) for res in KINDS]
        unlisted = over_cap(tallies)
        if names_keycloaks(kept(tallies[0], unlisted)):
            tallies.append(await self._kind(KEYCLOAKS, None))
            unlisted = over_cap(tallies)
        self._note_unlisted(unlisted)
        per_kind = [kept(t, unlisted) for t in tallies]
        return self._read(per_kind, Listing(None, unlisted))

    @staticmethod
    def _read(per_kind: list[list[Obj]], listing: Listing) -> Read:
        """Each kind's objects, stamped with their apiVersion and kind (a LIST's items carry neither)."""
        objects = {
            k.kind: [{**o, "apiVersion": names.API_VERSION, "kind": k.kind} for o in found]
            for k, found in zip(REPLICATED, per_kind, strict=False)
        }
        keycloaks = per_kind[len(REPLICATED)] if len(per_kind) > len(REPLICATED) else []
        return Read(objects, keycloaks, listing)

    async def _namespace(self, namespace: str, kinds: Sequence[Resource]) -> list[Tally]:
        """The kinds of one namespace, each read until it is over the cap; the kinds after one over the cap
        are not read (the namespace is left out whole)."""
        out: list[Tally] = []
        for res in kinds:
            out.append(await self._kind(res, namespace))
            if out[-1].over:
                break
        return out

    async def _kind(self, res: Resource, namespace: str | None) -> Tally:
        """One kind, paged. A kind that is not `required` (models/replicated.py): none when the API server
        does not serve it (404: its CRD is not installed yet, as after a `helm upgrade`, which never adds
        CRDs). Without the CRD no such resource can exist, so this is the truth, and the other kinds go on
        replicating; any other refusal is an unreadable listing, as for the other kinds."""
        try:
            return await read_kind(self.kube, res, namespace, self.cap, stop_over=namespace is not None)
        except ApiError as e:
            if e.status != 404 or res.plural in REQUIRED or res == KEYCLOAKS:
                raise
            if res.plural not in self._unserved:
                log.warning("%s is not served (its CRD is not installed): none of them", res.plural)
                self._unserved.add(res.plural)
            return Tally(res.plural, self.cap)

    async def _standing(self, namespace: str) -> Standing:
        """Whether a namespace that could not be listed is gone: read by a LIST with a field selector (the
        namespace-restricted install may list and watch namespaces, as kopf does; not get them)."""
        try:
            found = await self.kube.list(NAMESPACES, None, field_selector=f"metadata.name={namespace}")
        except ApiError as e:
            log.debug("namespace %s: cannot read it either: %s", namespace, e)
            return standing(None)
        return standing(found)

    def _note_unlisted(self, unlisted: Mapping[str, Unlisted]) -> None:
        """Logged when a namespace's standing changes (not every round: rounds run per server, every
        resync), and counted in a gauge while it lasts."""
        for ns in sorted({*self._unlisted, *unlisted}):
            now = unlisted.get(ns)
            before = self._unlisted.get(ns)
            if now is None:
                log.info("namespace %s is read again; its resources replicate again", ns)
                del self._unlisted[ns]
            elif now.standing != before:
                self._unlisted[ns] = now.standing
                _log_left_out(now)
        metrics.unlisted_namespaces(
            {st: sum(1 for v in self._unlisted.values() if v == st) for st in STANDINGS}
        )


def _log_left_out(now: Unlisted) -> None:
    if now.standing == "gone":
        log.info(
            "watched namespace %s is gone or being deleted and cannot be listed (%s); "
            "replicating the other namespaces without it, nothing of it is deleted from Keycloak",
            now.namespace,
            now.error,
        )
    elif now.standing == "over_cap":
        log.warning("%s; replicating the other namespaces without it", now.error)
    else:
        log.warning(
            "watched namespace %s cannot be listed (%s); replicating the other namespaces "
            "without it, its objects in Keycloak are left as they are, retried each round",
            now.namespace,
            now.error,
        )
