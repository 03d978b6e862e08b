"""The watched namespaces a replication round could read, and what it does about the others.

With a list of namespaces (the chart's `watchNamespaces`, `run -n A -n B`) a round LISTs realms, clients and
Keycloaks in each of them. One of them may refuse: a watched namespace that is deleted takes its RoleBinding
with it (the chart's namespace-restricted install binds the operator's role in each watched namespace), so
its LISTs answer 403 from then on, and go on doing so while it stays Terminating. Such a namespace is left
out of that round, and the others go on: a bad namespace never stalls the rest.

Left out means never read as empty. An empty answer would make every object it owns in Keycloak an orphan,
and the round would delete another team's realms and clients because a LIST failed. So the objects of a
namespace that could not be read are treated like another operator's: their markers still hold their names
(no one else takes them) but they are never diffed, so never deleted, released or disabled. What reaches
across namespaces is held too, whenever the namespace could still be holding live resources:

- a realm that targets a Keycloak in that namespace, and a client whose realm is there, are not released
  when deleted (they are not found, but need not be gone); they keep their finalizer and wait;
- a realm being deleted that allows clients from that namespace waits (`DeletionBlocked`): deleting it in
  Keycloak would take with it clients that namespace may still declare.

Two standings, told apart by reading the namespace itself (the restricted install may list namespaces):

- `gone`: it does not exist, or is being deleted. Expected after `kubectl delete namespace`: its resources
  are being deleted; each one's finalizer deletes its object in Keycloak in a round that can still read it.
  With the chart's RoleBindings that is seldom: the namespace's deletion takes the RoleBinding at once, and
  its realms keep their finalizer (docs/guide/troubleshooting.md). Nothing waits on a gone namespace, and a
  round that only left out such namespaces has not failed.
- `unreadable`: it exists and is not being deleted (a RoleBinding removed by hand, an API server error), or
  the namespace could not be read either. Its resources are live: the round counts as failed (retried soon,
  reported as a warning), and the holds above apply.

A third, in either mode (a namespace list or every namespace): `over_cap`, a namespace holding more resources
of one kind than the operator reads from one namespace (namespace_cap.py). It was read, and is left out the
same way: its resources are live, so the holds above apply. The round does not count as failed: the cap is
the tenant's doing and retrying sooner cannot change it, so the other tenants' rounds run at their pace.
Watching every namespace, a listing leaves namespaces out too: `observed` is then every namespace but
those (`Excluding`).
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.sync import NOT_READ, UNREADABLE, Resource, waits_on_unreadable

__all__ = [
    "UNREADABLE",
    "Excluding",
    "Listing",
    "Standing",
    "Unlisted",
    "deletions_waiting",
    "releasable_without_realm",
    "standing",
    "waits_on_unreadable",
]

Standing = Literal["gone", "unreadable", "over_cap"]
STANDINGS: Final[tuple[Standing, ...]] = ("gone", "unreadable", "over_cap")


def standing(found: Sequence[Mapping[str, Any]] | None) -> Standing:
    """A namespace whose LIST failed, from a read of the namespace itself: `found` is what a LIST of
    namespaces by that name returned (None: that read failed too, so nothing is known and nothing assumed).
    Gone only when the API server said so: no such namespace, or one being deleted."""
    if found is None:
        return "unreadable"
    if not found:
        return "gone"
    meta = found[0].get("metadata") or {}
    return "gone" if meta.get("deletionTimestamp") else "unreadable"


@dataclass(frozen=True)
class Unlisted:
    namespace: str
    standing: Standing
    error: str  # what the LIST was answered


@dataclass(frozen=True)
class Excluding:
    """Every namespace but `left_out`: what a listing of every namespace observed when it left some out."""

    left_out: frozenset[str]

    def __contains__(self, namespace: object) -> bool:
        return namespace not in self.left_out


@dataclass(frozen=True)
class Listing:
    """What one round could read. `watched`: None when every namespace is watched (then read by one LIST
    per kind, which either answers or fails the round; a namespace over the cap is still left out)."""

    watched: frozenset[str] | None
    unlisted: Mapping[str, Unlisted] = field(default_factory=dict)

    @property
    def observed(self) -> Container[str] | None:
        """The namespaces whose markers this round may diff (`sync.plan_scope(namespaces=...)`): None for
        every one."""
        if self.watched is None:
            return Excluding(frozenset(self.unlisted)) if self.unlisted else None
        return self.watched - frozenset(self.unlisted)

    @property
    def held(self) -> frozenset[str]:
        """Namespaces not read this round that may hold live resources (unreadable, or over the cap): what
        reaches across into them is held (the module's docstring)."""
        return frozenset(ns for ns, u in self.unlisted.items() if u.standing != "gone")

    @property
    def failed(self) -> bool:
        """Some namespace that may hold live resources could not be read: the round is retried soon. Not
        for one over the cap: a retry would find it as full."""
        return any(u.standing == "unreadable" for u in self.unlisted.values())


def deletions_waiting(
    realms: Iterable[tuple[Resource, Mapping[str, AbstractSet[str]]]], unreadable: AbstractSet[str]
) -> dict[ObjectKey, str]:
    """Realms being deleted that must wait, with why: each given with its allow-lists by spec field
    (resources.RealmTarget.allow_lists: `clientNamespaces`, `identityProviderNamespaces`). One that allows
    a namespace that was not read (`unreadable`: Listing.held) waits, since deleting it in Keycloak would
    take what that namespace declared with it (what `realm.blocked_realm_deletes` does for clients it can
    see)."""
    out: dict[ObjectKey, str] = {}
    for realm, lists in realms:
        blind = sorted(set().union(*(allowed & unreadable for allowed in lists.values())))
        if not realm.deleting or not blind:
            continue
        fields = [f"spec.{name}" for name, allowed in sorted(lists.items()) if allowed & unreadable]
        what = " or ".join(
            DECLARES.get(name, "resources") for name, allowed in sorted(lists.items()) if allowed & unreadable
        )
        out[realm.key] = (
            f"namespace {', '.join(blind)} may still declare {what} in this realm ({', '.join(fields)}) "
            f"and was not read by the operator ({NOT_READ}); the realm is deleted once it can be, or once "
            f"the namespace is removed from {' and '.join(fields)}"
        )
    return out


# What each allow-list lets a namespace declare, for messages.
DECLARES: Final = {
    "clientNamespaces": "clients, client scopes or groups",
    "identityProviderNamespaces": "identity providers",
    "flowNamespaces": "authentication flows",
}


def releasable_without_realm(client: Resource, unreadable: AbstractSet[str]) -> bool:
    """A client being deleted whose realm resource was not found, or names no server: nothing is left to
    delete (its realm went, taking its clients with it), and its finalizer goes. Not while the realm's
    namespace could not be read: the realm was not found, which does not mean it is gone."""
    if not client.deleting or waits_on_unreadable(client.problem):
        return False
    return client.parent is None or client.parent.namespace not in unreadable
