"""A namespace holding more resources of one kind than the operator reads is left out of the round whole, held
like an unreadable one, in either mode (a namespace list or every namespace); the listing is paged, starts
over when its continue token expires, and never returns part of a list as the whole."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keycloak_operator.core.replication import ObjectKey, marked
from keycloak_operator.core.replication.namespace_cap import LAST_APPLIED, Tally, kept, over_cap, slim
from keycloak_operator.core.replication.realm import plan_realms
from keycloak_operator.core.replication.sync import Resource
from keycloak_operator.core.replication.watched import Listing, Unlisted
from keycloak_operator.kernel import names
from keycloak_operator.shell import metrics
from keycloak_operator.shell.kube import REPLICATED, ApiError
from keycloak_operator.shell.replication import paging
from keycloak_operator.shell.replication.listing import Reader
from keycloak_operator.shell.replication.paging import read_kind
from tests.unit.paged import page_of

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REALM, CLIENT = names.REALM_KIND, names.CLIENT_KIND


def obj(kind: str, ns: str, name: str, **meta: Any) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"namespace": ns, "name": name, **meta}, "spec": {}}


# --- the pure tally ----------------------------------------------------------------------------------------


def test_a_namespace_over_the_cap_is_counted_and_nothing_of_it_is_kept() -> None:
    tally = Tally("keycloakclients", 2)
    tally.add([obj(CLIENT, "a", "1"), obj(CLIENT, "b", "1"), obj(CLIENT, "a", "2")])
    assert not tally.over and len(tally.kept) == 3  # at the cap is within it
    tally.add([obj(CLIENT, "a", "3"), obj(CLIENT, "a", "4")])
    assert tally.over == {"a"} and [o["metadata"]["namespace"] for o in tally.kept] == ["b"]
    assert tally.counts["a"] == 4
    message = tally.message("a")
    assert "more than 2 keycloakclients" in message and "KCOP_NAMESPACE_MAX_RESOURCES" in message
    left = over_cap([Tally("keycloakrealms", 2), tally])
    assert list(left) == ["a"] and left["a"].standing == "over_cap" and left["a"].error == message


def test_a_namespace_is_read_whole_or_not_at_all() -> None:
    """Over the cap of clients: its realms are left out too."""
    realms, clients = Tally("keycloakrealms", 1), Tally("keycloakclients", 1)
    realms.add([obj(REALM, "a", "r"), obj(REALM, "b", "r")])
    clients.add([obj(CLIENT, "a", "1"), obj(CLIENT, "a", "2"), obj(CLIENT, "b", "1")])
    left = over_cap([realms, clients])
    assert [o["metadata"]["namespace"] for o in kept(realms, left)] == ["b"]
    assert [o["metadata"]["namespace"] for o in kept(clients, left)] == ["b"]


def test_what_no_round_reads_is_dropped_as_pages_arrive_and_the_page_is_not_changed() -> None:
    listed = obj(
        CLIENT,
        "a",
        "c",
        managedFields=[{"manager": "kubectl"}],
        annotations={LAST_APPLIED: "{...}", "keep": "me"},
    )
    slimmed = slim(listed)
    assert "managedFields" not in slimmed["metadata"]
    assert slimmed["metadata"]["annotations"] == {"keep": "me"}
    assert slimmed["metadata"]["name"] == "c" and slimmed["spec"] == {}
    assert "managedFields" in listed["metadata"] and LAST_APPLIED in listed["metadata"]["annotations"]
    assert slim({"metadata": None}) == {"metadata": None}  # nothing to trim on what has no metadata


# --- held, never deleted: the property ---------------------------------------------------------------------

CAP = 3

namespaces_st = st.dictionaries(
    st.sampled_from(["a", "b", "c", "d"]),
    st.tuples(
        st.integers(0, CAP + 2),  # realm resources declared there
        st.sets(st.integers(0, CAP + 2)),  # which of its realms are in Keycloak
        st.booleans(),  # its LIST refused (unreadable)
    ),
    max_size=4,
)


def realm(ns: str, i: int) -> Resource:
    name = f"{ns}-{i}"  # names unique across namespaces: no conflict muddles what is deleted
    return Resource(ObjectKey(REALM, ns, name), name, {"realm": name, "enabled": True}, T0)


@settings(max_examples=150, deadline=None)
@given(namespaces_st, st.booleans(), st.randoms(use_true_random=False))
def test_namespaces_left_out_never_lose_an_object_and_the_others_converge_as_ever(
    spec: dict[str, tuple[int, set[int], bool]], everywhere: bool, rnd: Any
) -> None:
    declared = [obj(REALM, ns, f"{ns}-{i}") for ns, (n, _, _) in spec.items() for i in range(n)]
    rnd.shuffle(declared)  # a cluster-wide LIST interleaves namespaces
    tally = Tally("keycloakrealms", CAP)
    for start in range(0, len(declared), 2):
        tally.add(declared[start : start + 2])
    unlisted = over_cap([tally])
    unlisted |= {ns: Unlisted(ns, "unreadable", "403") for ns, (_, _, refused) in spec.items() if refused}
    listing = Listing(None if everywhere else frozenset(spec), unlisted)
    seen = [
        realm(o["metadata"]["namespace"], int(o["metadata"]["name"].rsplit("-", 1)[1]))
        for o in kept(tally, unlisted)
    ]
    stored = [
        {**marked(realm(ns, i).content, realm(ns, i).key), "id": f"{ns}-{i}"}
        for ns, (_, present, _) in spec.items()
        for i in present
    ]
    scope = plan_realms(seen, [], stored, listing.observed)

    assert {ns for ns, (n, _, _) in spec.items() if n > CAP} <= set(unlisted)
    assert not listing.failed or any(refused for _, _, refused in spec.values())
    touched = {op.key for phase in scope.phases() for op in phase}
    assert not {k for k in touched if k.namespace in unlisted}  # held: nothing written, released or deleted
    for ns, (n, present, _) in spec.items():
        if ns in unlisted:
            continue
        deleted = {d.key for d in scope.plan.deletes if d.key.namespace == ns}
        created = {c.key for c in scope.plan.creates if c.key.namespace == ns}
        assert deleted == {realm(ns, i).key for i in present if i >= n}
        assert created == {realm(ns, i).key for i in range(n) if i not in present}


# --- the shell: paging -------------------------------------------------------------------------------------


class PagedKube:
    """Objects by namespace, listed in pages; `expire` continue tokens answer 410 (the first N of them)."""

    def __init__(self, objects: list[dict[str, Any]], expire: int = 0) -> None:
        self.objects, self.expire = objects, expire
        self.calls: list[tuple[str, str | None, str | None]] = []

    async def list_page(
        self, res: Any, namespace: str | None, *, limit: int, token: str | None = None
    ) -> tuple[list[dict[str, Any]], str | None]:
        self.calls.append((res.plural, namespace, token))
        if token is not None and self.expire:
            self.expire -= 1
            raise ApiError(410, "the provided continue parameter is too old")
        kind = {names.REALM_PLURAL: REALM, names.CLIENT_PLURAL: CLIENT}.get(res.plural)
        items = [
            o for o in self.objects if o["kind"] == kind and namespace in (None, o["metadata"]["namespace"])
        ]
        return page_of(items, limit, token)

    async def list(self, res: Any, namespace: str | None, **selectors: Any) -> list[dict[str, Any]]:
        """Namespaces, for the standing of one that could not be listed: all exist."""
        return [{"metadata": {"name": selectors["field_selector"].removeprefix("metadata.name=")}}]


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paging, "PAGE_SIZE", 2)


def clients(ns: str, n: int) -> list[dict[str, Any]]:
    return [obj(CLIENT, ns, f"c{i}") for i in range(n)]


@pytest.mark.usefixtures("small_pages")
async def test_a_listing_reads_every_page() -> None:
    kube = PagedKube(clients("a", 5))
    tally = await read_kind(kube, REPLICATED[names.CLIENT_KIND], None, 100)
    assert len(tally.kept) == 5 and [t for _, _, t in kube.calls] == [None, "2", "4"]


@pytest.mark.usefixtures("small_pages")
async def test_an_expired_continue_token_starts_the_listing_over_never_half_read() -> None:
    kube = PagedKube(clients("a", 5), expire=1)
    tally = await read_kind(kube, REPLICATED[names.CLIENT_KIND], None, 100)
    assert len(tally.kept) == 5  # the whole list, not the first page and whatever followed
    assert [t for _, _, t in kube.calls] == [None, "2", None, "2", "4"]


@pytest.mark.usefixtures("small_pages")
async def test_a_token_that_keeps_expiring_fails_the_listing() -> None:
    kube = PagedKube(clients("a", 5), expire=paging.ATTEMPTS)
    with pytest.raises(ApiError) as e:
        await read_kind(kube, REPLICATED[names.CLIENT_KIND], None, 100)
    assert e.value.status == 410 and len(kube.calls) == 2 * paging.ATTEMPTS


@pytest.mark.usefixtures("small_pages")
async def test_reading_one_namespace_stops_once_it_is_over_the_cap() -> None:
    kube = PagedKube(clients("a", 40))
    tally = await read_kind(kube, REPLICATED[names.CLIENT_KIND], "a", 3, stop_over=True)
    assert tally.over == {"a"} and not tally.kept and len(kube.calls) == 2  # not the 20 pages


# --- the shell: the round's reader -------------------------------------------------------------------------


def world() -> list[dict[str, Any]]:
    return [
        obj(REALM, "full", "r"),
        *clients("full", 4),
        obj(REALM, "calm", "r"),
        *clients("calm", 2),
    ]


@pytest.mark.usefixtures("small_pages")
@pytest.mark.parametrize("namespaces", [None, ["full", "calm"]])
async def test_a_namespace_over_the_cap_is_left_out_whole_and_the_round_goes_on_unfailed(
    namespaces: list[str] | None, caplog: pytest.LogCaptureFixture
) -> None:
    kube = PagedKube(world())
    reader = Reader(kube, namespaces, cap=3)  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO):
        read = await reader.read()
        await reader.read()  # the same standing: not logged again
    assert [r["metadata"]["namespace"] for r in read.of(names.REALM_KIND)] == ["calm"]
    assert {c["metadata"]["namespace"] for c in read.of(names.CLIENT_KIND)} == {"calm"} and len(
        read.of(names.CLIENT_KIND)
    ) == 2
    lst = read.listing
    assert list(lst.unlisted) == ["full"] and lst.unlisted["full"].standing == "over_cap"
    assert lst.held == {"full"} and not lst.failed
    observed = lst.observed
    assert observed is not None and "full" not in observed and "calm" in observed
    warned = [r for r in caplog.records if "holds more than 3 keycloakclients" in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING
    assert metrics.UNLISTED_NAMESPACES.labels(standing="over_cap")._value.get() == 1

    kube.objects = [o for o in kube.objects if o["metadata"]["name"] not in ("c2", "c3")]
    with caplog.at_level(logging.INFO):
        again = await reader.read()
    assert not again.listing.unlisted and {
        r["metadata"]["namespace"] for r in again.of(names.REALM_KIND)
    } == {
        "full",
        "calm",
    }
    assert any("namespace full is read again" in r.getMessage() for r in caplog.records)
    assert metrics.UNLISTED_NAMESPACES.labels(standing="over_cap")._value.get() == 0


@pytest.mark.usefixtures("small_pages")
async def test_watching_every_namespace_an_expired_token_that_keeps_expiring_fails_the_round() -> None:
    """Nothing is read as empty: the LIST fails as a refused one does, and so does the round."""
    kube = PagedKube(world(), expire=paging.ATTEMPTS)
    with pytest.raises(ApiError):
        await Reader(kube, None).read()  # type: ignore[arg-type]


@pytest.mark.usefixtures("small_pages")
async def test_with_a_namespace_list_an_expired_token_leaves_that_namespace_out_as_unreadable() -> None:
    kube = PagedKube([*world(), *clients("calm", 1)], expire=paging.ATTEMPTS)  # calm's clients: 2 pages
    read = await Reader(kube, ["calm"]).read()  # type: ignore[arg-type]
    assert read.listing.unlisted["calm"].standing == "unreadable" and read.listing.failed
    assert read.of(names.REALM_KIND) == [] and read.of(names.CLIENT_KIND) == []


async def test_pages_are_asked_for_with_a_limit() -> None:
    kube = PagedKube(world())
    await read_kind(kube, REPLICATED[names.REALM_KIND], None, 100)
    assert len(kube.calls) == 1  # two realms, one page of PAGE_SIZE
    assert paging.PAGE_SIZE >= 100
