"""A watched namespace that cannot be listed (deleted, its RoleBinding with it: 403) is left out of the round,
never read as empty, and never stalls the other namespaces: the pure rule (core/replication/watched.py), the
plans it feeds, and the shell's listing with a Kubernetes that refuses one namespace."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from keycloak_operator.core.common import formats
from keycloak_operator.core.replication import ObjectKey, marked
from keycloak_operator.core.replication.client import plan_clients
from keycloak_operator.core.replication.in_realm import client_resource
from keycloak_operator.core.replication.realm import plan_realms, releasable_without_server
from keycloak_operator.core.replication.resources import RealmTarget, realm_target
from keycloak_operator.core.replication.sync import Resource, Verdict
from keycloak_operator.core.replication.watched import (
    UNREADABLE,
    Listing,
    Unlisted,
    deletions_waiting,
    releasable_without_realm,
    standing,
)
from keycloak_operator.kernel import names
from keycloak_operator.shell.kube import ApiError
from keycloak_operator.shell.leadership import Leadership
from keycloak_operator.shell.replication.listing import Reader
from tests.unit.paged import page_of

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REALM, CLIENT = names.REALM_KIND, names.CLIENT_KIND


def realm(ns: str, name: str, **flags: Any) -> Resource:
    return Resource(ObjectKey(REALM, ns, name), name, {"realm": name, "enabled": True}, T0, **flags)


def client(ns: str, name: str, parent: ObjectKey, **flags: Any) -> Resource:
    return Resource(
        ObjectKey(CLIENT, ns, name), name, {"clientId": name, "enabled": True}, T0, parent=parent, **flags
    )


def stored(r: Resource, remote: str) -> dict[str, Any]:
    """How Keycloak returns the object the operator wrote for `r`."""
    return {**marked(r.content, r.key), "id": remote}


def listing(
    *, gone: tuple[str, ...] = (), unreadable: tuple[str, ...] = (), over: tuple[str, ...] = ()
) -> Listing:
    unlisted = {ns: Unlisted(ns, "gone", "403") for ns in gone}
    unlisted |= {ns: Unlisted(ns, "unreadable", "403") for ns in unreadable}
    unlisted |= {ns: Unlisted(ns, "over_cap", "holds more than 2") for ns in over}
    return Listing(frozenset({"team-a", "team-b", *gone, *unreadable, *over}), unlisted)


# --- which namespaces a round trusts ------------------------------------------------------------------------


def namespace(deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "team-a"}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-24T00:00:00Z"
    return {"metadata": meta}


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        ([], "gone"),  # no such namespace (any more)
        ([namespace(deleting=True)], "gone"),  # Terminating: its resources are being deleted
        ([namespace()], "unreadable"),  # it exists and refused: its resources are live
        (None, "unreadable"),  # the namespace could not be read either: nothing is assumed
    ],
)
def test_a_namespace_is_gone_only_when_the_api_server_says_so(found: Any, expected: str) -> None:
    assert standing(found) == expected


def test_the_listing_leaves_unlisted_namespaces_out_and_fails_only_for_unreadable_ones() -> None:
    gone = listing(gone=("team-x",))
    assert gone.observed == {"team-a", "team-b"} and not gone.held and not gone.failed
    both = listing(gone=("team-x",), unreadable=("team-y",))
    assert both.observed == {"team-a", "team-b"} and both.held == {"team-y"} and both.failed
    # Over the cap: held like an unreadable one, but the round has not failed (a retry finds it as full).
    over = listing(over=("team-z",))
    assert over.observed == {"team-a", "team-b"} and over.held == {"team-z"} and not over.failed
    everywhere = Listing(None)
    assert everywhere.observed is None and not everywhere.failed


def test_watching_every_namespace_a_listing_still_leaves_some_out() -> None:
    everywhere = Listing(None, {"team-z": Unlisted("team-z", "over_cap", "holds more than 2")})
    observed = everywhere.observed
    assert observed is not None and "team-z" not in observed and "team-a" in observed
    assert everywhere.held == {"team-z"} and not everywhere.failed


# --- never read as empty ------------------------------------------------------------------------------------


def test_a_namespace_that_could_not_be_listed_keeps_its_realms_and_the_others_go_on() -> None:
    """team-x was not listed: its realm in Keycloak is no orphan. team-b's new realm is created all the
    same."""
    theirs, mine = realm("team-x", "theirs"), realm("team-b", "mine")
    observed = [stored(theirs, "theirs")]
    for lst in (listing(gone=("team-x",)), listing(unreadable=("team-x",))):
        scope = plan_realms([mine], [], observed, lst.observed)
        assert not scope.plan.deletes
        assert [c.key for c in scope.plan.creates] == [mine.key]
    # What the rule prevents: the failed list read as empty would have made it an orphan and deleted it.
    read_as_empty = plan_realms([mine], [], observed, {"team-a", "team-b", "team-x"})
    assert [d.key for d in read_as_empty.plan.deletes] == [theirs.key]


def test_clients_of_a_namespace_that_could_not_be_listed_stay_in_a_realm_of_another() -> None:
    """clientNamespaces reach across: team-x's client lives in team-b's realm, and stays there."""
    home = ObjectKey(REALM, "team-b", "shared")
    theirs, mine = client("team-x", "theirs", home), client("team-b", "mine", home)
    scope = plan_clients([mine], [stored(theirs, "c1")], listing(unreadable=("team-x",)).observed)
    assert not scope.plan.deletes and [c.key for c in scope.plan.creates] == [mine.key]


def test_the_names_a_namespace_that_could_not_be_listed_holds_stay_held() -> None:
    """Its realm still holds its name: another namespace claiming the same name is in Conflict, not given
    it."""
    theirs, claim = realm("team-x", "sso"), realm("team-b", "sso")
    scope = plan_realms([claim], [], [stored(theirs, "sso")], listing(gone=("team-x",)).observed)
    assert scope.plan.is_empty() and scope.verdicts[claim.key].phase == "Conflict"


# --- what reaches across namespaces waits while one cannot be read ------------------------------------------


def k8s(kind: str, ns: str, name: str, spec: dict[str, Any], deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": ns, "name": name, "creationTimestamp": "2026-01-01T00:00:00Z"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    return {"kind": kind, "metadata": meta, "spec": spec}


ON_TEAM_X_KEYCLOAK = {"server": {"keycloak": {"name": "kc", "namespace": "team-x"}}}


def test_a_deleting_realm_on_a_keycloak_in_an_unreadable_namespace_keeps_its_finalizer() -> None:
    obj = k8s(REALM, "team-b", "r", ON_TEAM_X_KEYCLOAK, deleting=True)
    blind = realm_target(obj, {}, unreadable=frozenset({"team-x"}))
    assert blind.server is None and blind.resource.problem is not None
    assert blind.resource.problem.reason == UNREADABLE and blind.resource.problem.phase == "Error"
    assert not releasable_without_server(blind.resource)
    # Gone with its namespace (not unreadable): not found, and nothing is left to delete it from.
    gone = realm_target(obj, {})
    assert gone.resource.problem == Verdict("Pending", "KeycloakNotFound", "Keycloak team-x/kc not found")
    assert releasable_without_server(gone.resource)


def test_a_deleting_client_whose_realm_is_in_an_unreadable_namespace_keeps_its_finalizer() -> None:
    obj = k8s(
        CLIENT, "team-b", "app", {"realm": {"name": "r", "namespace": "team-x"}, "clientId": "app"}, True
    )
    blind = client_resource(obj, {}, frozenset({"team-x"}))
    assert blind.problem is not None and blind.problem.reason == UNREADABLE
    assert not releasable_without_realm(blind, frozenset({"team-x"}))
    gone = client_resource(obj, {})
    assert gone.problem is not None and gone.problem.reason == "RealmNotFound"
    assert releasable_without_realm(gone, frozenset())
    # An invalid client (its own problem) whose realm's namespace is unreadable waits all the same.
    invalid = client(
        "team-b",
        "bad",
        ObjectKey(REALM, "team-x", "r"),
        deleting=True,
        problem=Verdict("Error", "InvalidSpec", "x"),
    )
    assert not releasable_without_realm(invalid, frozenset({"team-x"}))
    assert releasable_without_realm(invalid, frozenset())


def test_a_deleting_realm_waits_on_an_unreadable_namespace_of_either_allow_list_naming_it() -> None:
    going = realm("team-b", "going", deleting=True)
    target = RealmTarget(
        going, None, None, frozenset({"team-c"}), provider_namespaces=frozenset({"idp-only"})
    )
    waiting = deletions_waiting([(going, target.allow_lists())], frozenset({"idp-only"}))
    message = waiting[going.key]
    assert "identity providers" in message and "spec.identityProviderNamespaces" in message
    assert "spec.clientNamespaces" not in message
    both = deletions_waiting([(going, target.allow_lists())], frozenset({"idp-only", "team-c"}))
    assert "spec.clientNamespaces" in both[going.key] and "spec.identityProviderNamespaces" in both[going.key]
    assert not deletions_waiting([(going, target.allow_lists())], frozenset({"team-x"}))


def test_a_deleting_realm_that_allows_clients_from_an_unreadable_namespace_waits() -> None:
    going, staying = realm("team-b", "going", deleting=True), realm("team-b", "staying")
    allowed = {"clientNamespaces": frozenset({"team-x"})}
    waiting = deletions_waiting([(going, allowed), (staying, allowed)], frozenset({"team-x"}))
    assert list(waiting) == [going.key] and "team-x" in waiting[going.key]
    assert "spec.clientNamespaces" in waiting[going.key]
    scope = plan_realms([going], [], [stored(going, "going")], {"team-b"}, waiting=waiting)
    assert not scope.plan.deletes and not scope.finalizable
    assert scope.verdicts[going.key].reason == "DeletionBlocked"
    # Namespaces it does not allow, or that are gone, do not hold it.
    assert not deletions_waiting(
        [(going, {"clientNamespaces": frozenset({"team-c"})})], frozenset({"team-x"})
    )
    assert not deletions_waiting([(going, allowed)], frozenset())
    unblocked = plan_realms([going], [], [stored(going, "going")], {"team-b"})
    assert [d.key for d in unblocked.plan.deletes] == [going.key]


# --- the shell's listing ------------------------------------------------------------------------------------


class RefusingKube:
    """Lists per namespace; `refused` namespaces answer 403 as after their RoleBinding went with them;
    `namespaces` is what a LIST of namespaces shows (None: that LIST is refused too)."""

    def __init__(self, objects: dict[str, list[dict[str, Any]]], refused: set[str], namespaces: Any) -> None:
        self.objects, self.refused, self.namespaces = objects, refused, namespaces
        self.calls: list[tuple[str, str | None]] = []

    async def list(self, res: Any, namespace: str | None, **selectors: Any) -> list[dict[str, Any]]:
        self.calls.append((res.plural, namespace))
        if res.plural == "namespaces":
            if self.namespaces is None:
                raise ApiError(403, "GET /api/v1/namespaces: 403 forbidden")
            wanted = selectors["field_selector"].removeprefix("metadata.name=")
            return [n for n in self.namespaces if n["metadata"]["name"] == wanted]
        if namespace is None or namespace in self.refused:
            raise ApiError(403, f"GET {res.path(namespace)}: 403 forbidden")
        return [o for o in self.objects.get(namespace, []) if o["kind"] == _KINDS[res.plural]]

    async def list_page(
        self, res: Any, namespace: str | None, *, limit: int, token: str | None = None
    ) -> tuple[list[dict[str, Any]], str | None]:
        return page_of(await self.list(res, namespace), limit, token)


_KINDS = {
    names.REALM_PLURAL: REALM,
    names.CLIENT_PLURAL: CLIENT,
    names.CLIENT_SCOPE_PLURAL: names.CLIENT_SCOPE_KIND,
    names.GROUP_PLURAL: names.GROUP_KIND,
    names.IDENTITY_PROVIDER_PLURAL: names.IDENTITY_PROVIDER_KIND,
    names.AUTHENTICATION_FLOW_PLURAL: names.AUTHENTICATION_FLOW_KIND,
    names.KEYCLOAK_PLURAL: names.KEYCLOAK_KIND,
}


def reader(kube: RefusingKube, namespaces: list[str] | None) -> Reader:
    return Reader(kube, namespaces)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("namespaces", "expected"),
    [([], "gone"), ([{"metadata": {"name": "team-a"}}], "unreadable"), (None, "unreadable")],
)
async def test_the_round_reads_every_namespace_that_answers(namespaces: Any, expected: str) -> None:
    on_kc = {"server": {"keycloak": {"name": "kc"}}}
    objects = {
        "team-a": [k8s(REALM, "team-a", "ra", on_kc)],
        "team-b": [
            k8s(REALM, "team-b", "rb", on_kc),
            k8s(CLIENT, "team-b", "cb", {}),
            k8s(names.CLIENT_SCOPE_KIND, "team-b", "sb", {}),
            k8s(names.KEYCLOAK_KIND, "team-b", "kc", {}),
        ],
    }
    kube = RefusingKube(objects, {"team-a"}, namespaces)
    read = await reader(kube, ["team-a", "team-b"]).read()
    lst = read.listing
    assert [r["metadata"]["name"] for r in read.of(names.REALM_KIND)] == ["rb"]
    assert [c["metadata"]["name"] for c in read.of(names.CLIENT_KIND)] == ["cb"]
    assert [s["metadata"]["name"] for s in read.of(names.CLIENT_SCOPE_KIND)] == ["sb"]
    assert [k["metadata"]["name"] for k in read.keycloaks] == ["kc"]
    assert list(lst.unlisted) == ["team-a"] and lst.unlisted["team-a"].standing == expected
    assert "403" in lst.unlisted["team-a"].error
    assert lst.observed == {"team-b"} and lst.failed == (expected == "unreadable")


async def test_a_keycloak_list_refused_leaves_the_whole_namespace_out() -> None:
    """Realms and clients of a namespace whose Keycloaks could not be listed are not half-read."""

    class KeycloaksRefused(RefusingKube):
        async def list(self, res: Any, namespace: str | None, **selectors: Any) -> list[dict[str, Any]]:
            if res.plural == names.KEYCLOAK_PLURAL and namespace == "team-a":
                raise ApiError(403, "forbidden")
            return await super().list(res, namespace, **selectors)

    on_kc = {"server": {"keycloak": {"name": "kc"}}}
    objects = {"team-a": [k8s(REALM, "team-a", "ra", on_kc)], "team-b": [k8s(REALM, "team-b", "rb", on_kc)]}
    kube = KeycloaksRefused(objects, set(), [{"metadata": {"name": "team-a"}}])
    read = await reader(kube, ["team-a", "team-b"]).read()
    assert [r["metadata"]["name"] for r in read.of(names.REALM_KIND)] == ["rb"] and list(
        read.listing.unlisted
    ) == ["team-a"]


async def test_watching_every_namespace_a_refused_list_fails_the_round() -> None:
    """One cluster-wide LIST: there is no namespace to leave out, and nothing may be read as empty."""
    kube = RefusingKube({}, set(), [])
    with pytest.raises(ApiError):
        await reader(kube, None).read()


# --- leadership across the watched namespaces (HA: a peering object in each) --------------------------------


class Peerings:
    """kopf's KopfPeering objects by namespace; a namespace without one answers 404 (None)."""

    def __init__(self, statuses: dict[str, dict[str, Any]]) -> None:
        self.statuses = statuses

    async def get(self, res: Any, namespace: str | None, name: str) -> dict[str, Any] | None:
        status = self.statuses.get(str(namespace))
        return None if status is None else {"status": status}


def peer(priority: int) -> dict[str, Any]:
    return {"priority": priority, "lifetime": 60, "lastseen": datetime.now(UTC).isoformat()}


async def test_a_peering_object_deleted_with_its_namespace_does_not_stand_the_leader_by() -> None:
    leading = {"me": peer(10), "other": peer(5)}
    kube = Peerings({"team-a": leading, "team-b": leading})
    lead = Leadership()
    lead.configure("keycloak-operator", "me", 10, ["team-a", "team-b"])
    await lead._poll(kube)  # type: ignore[arg-type]
    assert lead.all_active()
    del kube.statuses["team-a"]  # deleted with team-a
    await lead._poll(kube)  # type: ignore[arg-type]
    assert lead.all_active() and not lead.active("team-a")
    kube.statuses["team-b"] = {"me": peer(10), "other": peer(11)}  # the other replica leads where it counts
    await lead._poll(kube)  # type: ignore[arg-type]
    assert not lead.all_active()
    kube.statuses.clear()  # no peering object read at all: never act blind
    await lead._poll(kube)  # type: ignore[arg-type]
    assert not lead.all_active()


async def test_the_stored_format_is_the_newest_every_live_replica_of_every_peering_supports() -> None:
    me = formats.advertise("me")
    kube = Peerings({"team-a": {me: peer(10)}, "team-b": {me: peer(10), "old-replica": peer(5)}})
    lead = Leadership()
    assert lead.format_in_effect() == formats.FORMAT_VERSION  # standalone: nobody to ask
    lead.configure("keycloak-operator", me, 10, ["team-a", "team-b"])
    assert lead.format_in_effect() == formats.OLDEST_FORMAT  # nothing read yet: never newer than others know
    await lead._poll(kube)  # type: ignore[arg-type]
    assert lead.format_in_effect() == 1  # a replica from before formats, alive in team-b's peering
    kube.statuses["team-b"] = {me: peer(10)}  # it stopped (kopf removes its entry)
    await lead._poll(kube)  # type: ignore[arg-type]
    assert lead.format_in_effect() == formats.FORMAT_VERSION


@pytest.mark.parametrize("namespaces", [None, ["team-a"]])
async def test_an_unserved_client_scope_kind_is_no_scopes_and_realms_and_clients_go_on(
    namespaces: list[str] | None,
) -> None:
    """After a `helm upgrade` (which adds no CRD) the API server answers 404 for KeycloakClientScope: no
    such resource can exist then, so there are none, and the rest of the round is read as ever."""

    class NoScopeCrd(RefusingKube):
        async def list(self, res: Any, namespace: str | None, **selectors: Any) -> list[dict[str, Any]]:
            if res.plural == names.CLIENT_SCOPE_PLURAL:
                raise ApiError(404, "the server could not find the requested resource")
            if namespace is None:  # every namespace at once
                return [
                    o for found in self.objects.values() for o in found if o["kind"] == _KINDS[res.plural]
                ]
            return await super().list(res, namespace, **selectors)

    objects = {"team-a": [k8s(REALM, "team-a", "ra", {}), k8s(CLIENT, "team-a", "ca", {})]}
    read = await reader(NoScopeCrd(objects, set(), []), namespaces).read()
    assert [r["metadata"]["name"] for r in read.of(names.REALM_KIND)] == ["ra"]
    assert [c["metadata"]["name"] for c in read.of(names.CLIENT_KIND)] == ["ca"]
    assert read.of(names.CLIENT_SCOPE_KIND) == [] and not read.listing.unlisted


async def test_a_refused_client_scope_list_is_never_read_as_none() -> None:
    """A 403 (the Role lacks the new kind) is not "no scopes": the namespace stays out, nothing deleted."""

    class ScopesForbidden(RefusingKube):
        async def list(self, res: Any, namespace: str | None, **selectors: Any) -> list[dict[str, Any]]:
            if res.plural == names.CLIENT_SCOPE_PLURAL:
                raise ApiError(403, "forbidden")
            return await super().list(res, namespace, **selectors)

    objects = {"team-a": [k8s(REALM, "team-a", "ra", {})]}
    read = await reader(
        ScopesForbidden(objects, set(), [{"metadata": {"name": "team-a"}}]), ["team-a"]
    ).read()
    assert read.of(names.REALM_KIND) == [] and list(read.listing.unlisted) == ["team-a"]


@pytest.mark.parametrize(("status", "left_out"), [(404, False), (403, True)])
async def test_an_unserved_identity_provider_kind_is_none_and_a_refused_list_leaves_the_namespace_out(
    status: int, left_out: bool
) -> None:
    """As for client scopes: 404 (no CRD yet) is no providers; any other refusal is never read as none."""

    class NoIdpList(RefusingKube):
        async def list(self, res: Any, namespace: str | None, **selectors: Any) -> list[dict[str, Any]]:
            if res.plural == names.IDENTITY_PROVIDER_PLURAL:
                raise ApiError(status, "refused")
            return await super().list(res, namespace, **selectors)

    objects = {"team-a": [k8s(REALM, "team-a", "ra", {})]}
    read = await reader(NoIdpList(objects, set(), [{"metadata": {"name": "team-a"}}]), ["team-a"]).read()
    assert read.of(names.IDENTITY_PROVIDER_KIND) == []
    assert [r["metadata"]["name"] for r in read.of(names.REALM_KIND)] == ([] if left_out else ["ra"])
    assert list(read.listing.unlisted) == (["team-a"] if left_out else [])
