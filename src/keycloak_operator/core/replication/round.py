"""What one replication round learns and decides, per resource, on its way: verdicts, Keycloak ids, content
hashes, finalizers that may go, and the events to post. The shell fills it while it reads and writes; the
rules for what goes in are here, so that each is said once, whatever kind or path of the round reaches it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.marker import content_hash
from keycloak_operator.core.replication.realm import releasable_without_server
from keycloak_operator.core.replication.resources import RealmTarget
from keycloak_operator.core.replication.sync import Resource, ScopePlan, Verdict, waits_on_unreadable
from keycloak_operator.core.replication.watched import releasable_without_realm
from keycloak_operator.kernel.events import Event


@dataclass
class Round:
    """What one round learnt and did, for the status and event pass at its end."""

    objects: dict[ObjectKey, dict[str, Any]] = field(default_factory=dict)
    verdicts: dict[ObjectKey, Verdict] = field(default_factory=dict)
    remote_ids: dict[ObjectKey, str] = field(default_factory=dict)
    hashes: dict[ObjectKey, str] = field(default_factory=dict)
    finalizable: set[ObjectKey] = field(default_factory=set)
    events: dict[ObjectKey, list[Event]] = field(default_factory=dict)
    failed: bool = False

    def note(self, key: ObjectKey, event: Event) -> None:
        self.events.setdefault(key, []).append(event)

    def write_failed(self, key: ObjectKey, message: str) -> None:
        """A Keycloak write for `key` was refused: said on its resource; the round is retried soon."""
        self.failed = True
        self.note(key, Event("Warning", "WriteFailed", message))


def collect(rnd: Round, scope: ScopePlan, resources: Mapping[ObjectKey, Resource]) -> None:
    """Fold a settled scope into the round, and say what was written, on each resource."""
    rnd.verdicts.update(scope.verdicts)
    # Only ids of this scope's own resources: a server can hold markers naming anything at all.
    rnd.remote_ids.update({k: v for k, v in scope.remote_ids.items() if k in resources})
    for key, r in resources.items():
        if scope.verdicts.get(key, Verdict("Pending", "")).phase == "Ready":
            rnd.hashes[key] = content_hash(r.content)
    rnd.finalizable.update(scope.finalizable)
    ok = {k for k, v in scope.verdicts.items() if v.phase != "Error"}
    for op in scope.plan.deletes:
        if op.key in resources and op.key in ok | set(scope.finalizable):
            rnd.note(op.key, Event("Normal", "Deleted", f"deleted from Keycloak ({op.remote_id})"))
    for release in scope.releases:
        if release.key in scope.finalizable:
            rnd.note(release.key, Event("Normal", "Released", "left in Keycloak, no longer managed"))
    for disable in scope.disables:
        if disable.key in ok:
            message = "disabled in Keycloak: this namespace is no longer allowed (revocation grace passed)"
            rnd.note(disable.key, Event("Warning", "Revoked", message))
    for create in scope.plan.creates:
        if create.key in ok:
            rnd.note(create.key, Event("Normal", "Created", "created in Keycloak"))
    for update in scope.plan.updates:
        if update.key not in ok:
            continue
        drift = scope.drift.get(update.key)
        if update.key in scope.remarked:
            message = (
                f"re-marked {update.remote_id}, the object this resource created, whose marker was removed "
                "or damaged in Keycloak; written as declared"
            )
            rnd.note(update.key, Event("Warning", "MarkerRepaired", message))
        elif update.key in scope.adopted:
            message = f"adopted {update.remote_id}, an object the operator did not create, as declared"
            rnd.note(update.key, Event("Normal", "Adopted", message))
        elif drift:
            message = f"restored fields edited in Keycloak: {', '.join(drift)}"
            rnd.note(update.key, Event("Normal", "DriftRepaired", message))
        else:
            rnd.note(update.key, Event("Normal", "Updated", "updated in Keycloak"))


def no_login(rnd: Round, realms: Sequence[Resource]) -> bool:
    """No login to the server worked: nothing is read or written, each realm says why. Whether the server
    counts as reached (only when there was nothing to reach it for)."""
    for r in realms:
        rnd.verdicts[r.key] = r.problem or Verdict("Pending", "NoCredentials")
    rnd.failed = bool(realms)
    return not realms


def without_realm(
    rnd: Round, clients: Iterable[Resource], targets: AbstractSet[ObjectKey], unreadable: AbstractSet[str]
) -> None:
    """Clients of a realm resource that does not exist (`targets`: the realm resources that do): their own
    problem says so, reported by every round; a deleting one lets go when nothing can be left to delete."""
    for c in clients:
        if c.parent not in targets and c.problem is not None:
            rnd.verdicts[c.key] = c.problem
            if releasable_without_realm(c, unreadable):
                rnd.finalizable.add(c.key)


def without_server(
    rnd: Round,
    unresolved: Mapping[ObjectKey, RealmTarget],
    clients: Iterable[Resource],
    unreadable: AbstractSet[str],
) -> None:
    """Realms that name no server the operator may reach (`unresolved`), and their clients: reported, and
    released when deleting and nothing was ever written for them."""
    for key, t in unresolved.items():
        if t.resource.problem is not None:
            rnd.verdicts.setdefault(key, t.resource.problem)
        if releasable_without_server(t.resource):
            rnd.finalizable.add(key)
    for c in clients:
        target = unresolved.get(c.parent) if c.parent is not None else None
        realm_problem = target.resource.problem if target is not None else None
        if realm_problem is None:
            continue
        where = f"realm {c.parent.namespace}/{c.parent.name}" if c.parent else "realm"
        rnd.verdicts[c.key] = c.problem or Verdict(
            "Pending", "RealmNotReady", f"{where}: {realm_problem.message}"
        )
        if releasable_without_realm(c, unreadable) and not waits_on_unreadable(realm_problem):
            rnd.finalizable.add(c.key)  # no server to hold its object: nothing left to delete


def settled_realm(rnd: Round, realm: Resource, children: Iterable[Resource]) -> str | None:
    """The realm's name in Keycloak when what lives in it (its roles, its clients) can be synced now: it is
    Ready or being deleted, and in Keycloak. Otherwise None, and each child says why it waits; a deleting
    child of a realm that is not in Keycloak (and not merely unreachable) has nothing left to delete."""
    verdict = rnd.verdicts.get(realm.key)
    remote = rnd.remote_ids.get(realm.key)
    if verdict is not None and verdict.phase in ("Ready", "Deleting") and remote is not None:
        return remote
    why = verdict.message if verdict and verdict.message else "not in Keycloak"
    reachable = verdict is None or verdict.phase != "Error"
    for c in children:
        if c.deleting and remote is None and reachable:
            rnd.finalizable.add(c.key)
        rnd.verdicts[c.key] = c.problem or Verdict(
            "Pending", "RealmNotReady", f"realm {realm.key.namespace}/{realm.key.name}: {why}"
        )
    return None


def realm_failed(rnd: Round, realm: Resource, children: Iterable[Resource], message: str) -> None:
    """A step inside one realm failed: the realm says so, its children wait on it, the other realms go on."""
    rnd.failed = True
    rnd.verdicts[realm.key] = Verdict("Error", "RoundFailed", message)
    for c in children:
        rnd.verdicts[c.key] = c.problem or Verdict(
            "Pending", "RealmNotReady", f"realm {realm.key.namespace}/{realm.key.name}: {message}"
        )


def out_of_budget(rnd: Round, realms: Iterable[Resource], children: Iterable[Resource], message: str) -> None:
    """The round over a server ran out its time budget: each of its realms says so (what was written stays
    written; the next round, after a growing delay, goes on from there), and what lives in them waits."""
    rnd.failed = True
    for r in realms:
        rnd.verdicts[r.key] = r.problem or Verdict("Error", "RoundBudgetExceeded", message)
        for c in children:
            if c.parent == r.key:
                rnd.verdicts[c.key] = c.problem or Verdict(
                    "Pending", "RealmNotReady", f"realm {r.key.namespace}/{r.key.name}: {message}"
                )
