"""One replication scope, planned: resources and what Keycloak holds -> writes and a verdict per resource.

What every kind shares; each kind's module (realm.py, client.py) says what its scope is and plans it with
`plan_scope`. Two scopes today, each diffed whole: the realms of one server, then the clients of one realm.
A scope is always diffed complete (every resource that targets it), because the diff deletes what is
marked and not desired: diffing part of a scope would delete the rest. Resources that must not be written
this round (forbidden, in conflict, unreachable, preserved) are `held`: the diff neither writes for them
nor deletes their objects.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from keycloak_operator.core.replication import adoption
from keycloak_operator.core.replication.diff import diff
from keycloak_operator.core.replication.drift import drifted_fields
from keycloak_operator.core.replication.fairness import round_robin
from keycloak_operator.core.replication.identity import ObjectKey, told_to
from keycloak_operator.core.replication.marker import read_marker
from keycloak_operator.core.replication.ownership import Claim, resolve
from keycloak_operator.core.replication.plan import Actual, Create, Delete, Desired, Plan, Update
from keycloak_operator.models.kinds import REPLICATED

Phase = Literal["Pending", "Ready", "Conflict", "Forbidden", "Error", "Deleting"]
# A hash no marker can hold: an object edited by hand is planned as an update.
DRIFTED = "drifted"


@dataclass(frozen=True)
class Verdict:
    phase: Phase
    reason: str
    message: str = ""
    # A Forbidden that revokes the object (its namespace no longer allowed) starts the revocation clock; one
    # that only refuses part of it (a service-account role not granted) must not, or a later revocation
    # would run on the earlier clock.
    revocable: bool = True


# The reason given to what depends on a watched namespace that could not be read this round (watched.py).
UNREADABLE = "NamespaceUnreadable"
# Why such a namespace was not read, in the messages of what waits on it (the reason above is the same).
NOT_READ = "it could not be listed, or holds more resources of a kind than the operator reads"
# The reason of the verdict on a resource whose realm (or Keycloak) does not allow its namespace: the one
# Forbidden that says the namespace may declare nothing there at all (in_realm.namespace_refusal), whatever
# the resource's spec, so that such a resource never holds the realm back (realm.blocked_realm_deletes).
NAMESPACE_NOT_ALLOWED = "NamespaceNotAllowed"


def waits_on_unreadable(problem: Verdict | None) -> bool:
    """A problem that says only that something could not be read: a deleting resource with it keeps its
    finalizer (what it depends on was not found, which does not mean it is gone)."""
    return problem is not None and problem.reason == UNREADABLE


@dataclass(frozen=True)
class Resource:
    """A KeycloakRealm or KeycloakClient, reduced to what a round needs (built by `resources.py`)."""

    key: ObjectKey
    natural_key: str  # realm name, or clientId
    content: Mapping[str, Any]
    created: datetime
    deleting: bool = False
    preserve: bool = False
    # Set when nothing may be written for it (Forbidden, an unreadable Secret, its realm not ready...).
    problem: Verdict | None = None
    parent: ObjectKey | None = None  # a client's realm resource
    # Since when its status has said Forbidden (status.forbiddenSince): the revocation clock.
    forbidden_since: datetime | None = None
    # `kcop.dev/adopt: "true"` (adoption.py): `adopt` when asked and allowed; `adopt_refused`, why not.
    adopt: bool = False
    adopt_refused: str = ""
    # The remote id its status names (status.keycloakId), if any: of several objects carrying its marker (a
    # marker copied by hand), the one kept.
    keycloak_id: str | None = None
    # Its status said Pending when read: what is written now was held back, not edited by hand (the realm
    # defaults' event says Updated rather than DriftRepaired).
    was_pending: bool = False
    # The content hash its status recorded at its last write (status.contentHash), if any: for a kind with no
    # hash to read back from Keycloak (flows), what tells a spec change from a hand edit in its events.
    written_hash: str | None = None


@dataclass(frozen=True)
class Release:
    """Preserve on delete: strip the marker, so the object stays in Keycloak and is no longer ours."""

    key: ObjectKey
    remote_id: str


@dataclass(frozen=True)
class Disable:
    """Revocation, first step: a forbidden resource's object is switched off (`enabled: false`), kept whole.
    `current`: the object as Keycloak returned it, so the write changes nothing else."""

    key: ObjectKey
    remote_id: str
    current: Mapping[str, Any]


@dataclass(frozen=True)
class Revocation:
    """What happens to the object of a resource that is no longer allowed (its namespace was removed from
    `realmNamespaces` / `clientNamespaces` / `identityProviderNamespaces`): disabled after `grace`, deleted
    after twice that. A grace of zero or less turns revocation off (objects stay as they were, held)."""

    now: datetime
    grace: timedelta

    def stage(self, since: datetime | None) -> Literal["keep", "disable", "delete"]:
        if since is None or self.grace <= timedelta(0):
            return "keep"
        age = self.now - since
        if age >= 2 * self.grace:
            return "delete"
        return "disable" if age >= self.grace else "keep"

    def message(self, since: datetime | None, kind: str) -> str:
        if since is None or self.grace <= timedelta(0):
            return ""
        disable, delete = since + self.grace, since + 2 * self.grace
        if kind not in SWITCHED_KINDS:
            return (
                f"; its object in Keycloak, if any, is deleted at {_stamp(delete)} unless access is granted "
                "again"
            )
        return (
            f"; its object in Keycloak, if any, is disabled at {_stamp(disable)} and deleted at "
            f"{_stamp(delete)} unless access is granted again"
        )


# The kinds whose Keycloak objects have an `enabled` switch, which revocation turns off before it deletes;
# the others (a client scope, a group) are kept as they are until deleted.
SWITCHED_KINDS = frozenset(k.kind for k in REPLICATED if k.switched)


NO_REVOCATION = Revocation(datetime.min, timedelta(0))


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class ScopePlan:
    plan: Plan
    releases: list[Release] = field(default_factory=list)
    disables: list[Disable] = field(default_factory=list)
    # Resources decided without a write this round (conflicts, problems, blocked deletes, in sync).
    verdicts: dict[ObjectKey, Verdict] = field(default_factory=dict)
    drift: dict[ObjectKey, list[str]] = field(default_factory=dict)  # key -> fields edited by hand
    remote_ids: dict[ObjectKey, str] = field(default_factory=dict)  # objects found, by our marker
    adopted: dict[ObjectKey, str] = field(default_factory=dict)  # unmarked objects taken over this round
    remarked: dict[ObjectKey, str] = field(default_factory=dict)  # of those, ours whose marker was lost
    finalizable: list[ObjectKey] = field(default_factory=list)  # deleting, and nothing left in Keycloak

    def phases(self) -> list[list[ScopeOperation]]:
        """The writes in the order they are made: every removal (deletes, duplicates, releases, disables)
        before any upsert, so a freed natural key can be taken in the same round; within a phase,
        namespaces take turns (fairness.py)."""
        removals: list[ScopeOperation] = [
            *self.plan.deletes,
            *self.plan.duplicates,
            *self.releases,
            *self.disables,
        ]
        upserts: list[ScopeOperation] = [*self.plan.creates, *self.plan.updates]
        return [round_robin(ops, lambda op: op.key.namespace) for ops in (removals, upserts)]


ScopeOperation = Delete | Create | Update | Release | Disable


def operation(op: ScopeOperation) -> str:
    """The operation as the write metrics name it: delete, create, update, release, disable."""
    return type(op).__name__.lower()


def plan_scope(
    kind: str,
    resources: Sequence[Resource],
    observed: Iterable[Mapping[str, Any]],
    *,
    remote_id_of: str,
    natural_key_of: str,
    subresources: tuple[str, ...] = (),
    compare_attributes: bool = False,
    blocked: Mapping[ObjectKey, str] | None = None,
    namespaces: Container[str] | None = None,
    declared_elsewhere: AbstractSet[ObjectKey] = frozenset(),
    revocation: Revocation = NO_REVOCATION,
    never_adopt: AbstractSet[str] = frozenset(),
) -> ScopePlan:
    """Plan one scope. `observed`: every object of the scope as Keycloak returns it (attributes included);
    `remote_id_of` / `natural_key_of`: the fields holding its id for the API and its unique name;
    `subresources`: fields of the content written by other calls, left out of the drift check;
    `compare_attributes`: the content's declared attributes are drift-checked too (drift.py).
    `blocked`: deleting resources that must wait (a realm with clients still declared), with why.
    `namespaces`: when the operator watches only some, markers from others are another operator's: they
    still hold their names, but are never diffed (an unseen resource would look deleted).
    `declared_elsewhere`: resources that exist but target another scope (another server URL, which may be
    this very server under another name): their objects here are never orphans, so never deleted; only an
    object whose resource is gone from every watched namespace is.
    `revocation`: when the objects of forbidden resources are disabled, then deleted.
    `never_adopt`: names whose unmarked objects no resource adopts (Keycloak's own)."""
    blocked = blocked or {}
    actual: list[Actual] = []
    by_remote: dict[str, Mapping[str, Any]] = {}
    holders: dict[tuple[str, ...], ObjectKey | None] = {}
    found: dict[ObjectKey, str] = {}
    unmarked: dict[str, str] = {}  # natural key -> remote id of an object without a marker
    markless: dict[str, str] = {}  # the same, a damaged marker included (adoption.remarked)
    for obj in observed:
        # What a server returns is not trusted to have any shape: an entry without an id cannot be ours.
        if not isinstance(obj, Mapping):
            continue
        remote_id, natural = obj.get(remote_id_of), obj.get(natural_key_of)
        if not isinstance(remote_id, str) or not isinstance(natural, str) or remote_id in by_remote:
            continue  # no id, or the same id listed twice (the first stands)
        marker = read_marker(obj.get("attributes"))
        holders[(natural,)] = marker.key if marker else None
        if marker is None:
            markless.setdefault(natural, remote_id)
        if marker is None and not adoption.marked_in_part(obj.get("attributes")):
            unmarked.setdefault(natural, remote_id)
            by_remote[remote_id] = obj
        ours = namespaces is None or (marker is not None and marker.key.namespace in namespaces)
        if marker is not None and marker.key.kind == kind and ours:
            actual.append(Actual(marker.key, remote_id, marker.content_hash))
            by_remote[remote_id] = obj
            found.setdefault(marker.key, remote_id)

    # A marker copied by hand onto another object: the copy the resource's status names is its object.
    listed = {(a.key, a.remote_id) for a in actual}
    for r in resources:
        if r.keycloak_id and (r.key, r.keycloak_id) in listed:
            found[r.key] = r.keycloak_id
    result = ScopePlan(Plan(), remote_ids=dict(found))
    held: set[ObjectKey] = set(declared_elsewhere)
    claims: list[Claim] = []
    wanted: dict[ObjectKey, Resource] = {}
    for r in resources:
        if r.deleting and r.key in blocked:
            result.verdicts[r.key] = Verdict("Deleting", "DeletionBlocked", blocked[r.key])
        if r.deleting and r.key not in blocked:
            if r.preserve:
                held.add(r.key)
                if r.key in found:
                    result.releases.append(Release(r.key, found[r.key]))
                else:
                    result.finalizable.append(r.key)
            elif r.problem is not None and r.problem.phase == "Error":
                held.add(r.key)  # cannot reach Keycloak for it: keep the finalizer, retry
                result.verdicts[r.key] = r.problem
            continue  # not desired: the diff deletes its object; finalizable once gone (see `settle`)
        if r.problem is not None:
            _hold_or_revoke(r, found, by_remote, revocation, held, result)
            continue
        claims.append(Claim(r.key, (r.natural_key,), r.created))
        wanted[r.key] = r

    resolution = resolve(claims, holders)
    owning = frozenset(found)
    result.adopted = adoption.adopters(resolution.conflicts, wanted, unmarked, never_adopt, owning)
    undecided = [c for c in resolution.conflicts if c.key not in result.adopted]
    result.remarked = adoption.remarked(undecided, wanted, markless, owning, never_adopt)
    result.adopted.update(result.remarked)
    taken_by = {remote: key for key, remote in result.adopted.items()}
    for c in resolution.conflicts:
        if c.key in result.adopted:
            continue
        held.add(c.key)
        by = taken_by.get(unmarked.get(c.natural_key[0], ""))
        claimed_by = c.holder or by
        holder = (
            told_to(claimed_by, c.key.namespace) if claimed_by else "an object the operator did not create"
        )
        why = adoption.refusal(wanted[c.key], c, never_adopt, owning)
        message = f"{c.natural_key[0]!r} is already held by {holder}; nothing was written{why}"
        result.verdicts[c.key] = Verdict("Conflict", "Conflict", message)
    for key, remote in result.adopted.items():
        found[key] = remote
        result.remote_ids[key] = remote

    desired = [Desired.of(r.key, r.content) for k, r in wanted.items() if k not in held]
    wanted_hash = {d.key: d.content_hash for d in desired}
    marked_actual = []
    drift: dict[tuple[ObjectKey, str], list[str]] = {}
    for a in actual:
        want = wanted.get(a.key)
        obj = by_remote[a.remote_id]
        # Drift is a hand edit of an object written as declared (its marker holds the declared hash); after
        # a change of the spec the object differs too, and the update that follows is no repair. Every copy
        # of a marker is checked: a copy made by hand (its marker copied whole) is never taken as in step.
        in_step = wanted_hash.get(a.key) == a.content_hash
        if want is not None and in_step:
            changed = drifted_fields(want.content, obj, subresources, attributes=compare_attributes)
            if changed:
                drift[(a.key, a.remote_id)] = changed
                a = Actual(a.key, a.remote_id, DRIFTED)
        marked_actual.append(a)
    # An adopted object is taken as this resource's, with a hash nothing has: the update writes it whole.
    marked_actual.extend(Actual(key, remote, adoption.ADOPTING) for key, remote in result.adopted.items())
    plan = diff(desired, marked_actual, {kind}, frozenset(held), preferred=found)
    result.plan = plan
    # The copy kept is the one reported (keycloakId), and the drift told is that copy's.
    copies = {(d.key, d.remote_id) for d in plan.duplicates}
    for key in {d.key for d in plan.duplicates}:
        kept = [a.remote_id for a in marked_actual if a.key == key and (key, a.remote_id) not in copies]
        if len(kept) == 1:
            result.remote_ids[key] = kept[0]
    for (key, remote), changed in drift.items():
        if result.remote_ids.get(key) == remote:
            result.drift[key] = changed
    for d in desired:
        if d.key not in result.verdicts:
            result.verdicts[d.key] = Verdict("Ready", "InSync")
    for r in resources:
        gone = r.key not in found
        if r.deleting and r.key not in blocked and not r.preserve and r.key not in held and gone:
            result.finalizable.append(r.key)
    return result


def _hold_or_revoke(
    r: Resource,
    found: Mapping[ObjectKey, str],
    by_remote: Mapping[str, Mapping[str, Any]],
    revocation: Revocation,
    held: set[ObjectKey],
    result: ScopePlan,
) -> None:
    """A resource with a problem is held (nothing written, its object kept), except a Forbidden one past its
    grace period: its object is disabled, then left out of the hold so that the diff deletes it."""
    assert r.problem is not None
    # The schedule is added to the message where the status is written (one place, whatever path of the
    # round ended Forbidden), so the plan keeps the problem as it is.
    # Only a revocable Forbidden: a refusal of part of a resource (a role not granted) keeps its object even
    # when its status still carries the clock of an earlier revocation.
    revoking = r.problem.phase == "Forbidden" and r.problem.revocable
    stage = revocation.stage(r.forbidden_since) if revoking else "keep"
    result.verdicts.setdefault(r.key, r.problem)
    remote = found.get(r.key)
    if stage == "delete" and remote is not None:
        return  # not desired and not held: the diff deletes it
    held.add(r.key)
    if stage == "disable" and remote is not None and by_remote[remote].get("enabled") is not False:
        result.disables.append(Disable(r.key, remote, by_remote[remote]))


def settle(scope: ScopePlan, failed: Mapping[ObjectKey, str]) -> ScopePlan:
    """After the writes: failed keys become Error verdicts; deletes that went through free finalizers. A
    forbidden resource whose revocation failed stays Forbidden (the failure in its message), so the
    revocation clock in its status keeps running rather than starting again."""
    for key, message in failed.items():
        before = scope.verdicts.get(key)
        if before is not None and before.phase == "Forbidden":
            scope.verdicts[key] = Verdict(
                "Forbidden", before.reason, f"{before.message}; revoking failed: {message}"
            )
        else:
            scope.verdicts[key] = Verdict("Error", "WriteFailed", message)
    for d in scope.plan.deletes:
        if d.key not in failed and d.key not in scope.finalizable:
            scope.finalizable.append(d.key)
    for r in scope.releases:
        if r.key not in failed:
            scope.finalizable.append(r.key)
    return scope
