"""The round's per-client steps run side by side (shell/replication/fan_out.py) and share one listing of each
client's roles (shell/replication/realm_reads.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.kernel import names
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.kube import ApiError
from keycloak_operator.shell.replication.fan_out import fan_out
from keycloak_operator.shell.replication.realm_reads import RealmReads
from tests.unit.replication.test_replication_round import KC_URL, World, _client, _phases, make_world


@given(st.lists(st.integers(0, 5), max_size=30), st.integers(1, 10))
def test_results_come_back_in_order_and_never_more_than_the_limit_run_at_once(
    delays: list[int], limit: int
) -> None:
    running, peak = 0, 0

    async def step(delay: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        for _ in range(delay + 1):  # finishing out of order
            await asyncio.sleep(0)
        running -= 1
        return delay * 10

    assert asyncio.run(fan_out(delays, step, limit)) == [d * 10 for d in delays]
    assert peak <= limit
    assert peak == min(limit, len(delays))  # the limit is used, not a sequential loop in disguise


async def test_an_unexpected_exception_cancels_the_rest_and_is_raised_as_it_was() -> None:
    started, release = asyncio.Event(), asyncio.Event()
    finished: list[int] = []

    async def step(i: int) -> int:
        if i == 1:
            await started.wait()  # item 0 is in flight when the bug surfaces
            raise KeyError("a bug")
        started.set()
        await release.wait()  # never set: only a cancellation ends it
        finished.append(i)
        return i

    with pytest.raises(KeyError):  # not an ExceptionGroup: the round's handlers catch by type
        await fan_out([0, 1, 2, 3], step, 2)
    release.set()
    for _ in range(5):  # a step that was not cancelled would now finish
        await asyncio.sleep(0)
    assert finished == []


def test_steps_start_round_robin_over_namespaces_and_results_keep_the_items_order() -> None:
    """The items come sorted by namespace; started in that order, the first `limit` slots would all go to
    one namespace, whose writes share its per-namespace limit while the global one sits unused."""
    items = ["a/1", "a/2", "a/3", "b/1", "c/1", "c/2"]
    started: list[str] = []

    async def step(item: str) -> str:
        started.append(item)
        await asyncio.sleep(0)
        return item.upper()

    namespace = lambda item: item.split("/")[0]  # noqa: E731
    assert asyncio.run(fan_out(items, step, 2, fair_by=namespace)) == [i.upper() for i in items]
    assert started == ["a/1", "b/1", "c/1", "a/2", "c/2", "a/3"]


class CountingAdmin:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.fail_next = False

    async def client_roles(self, realm: str, client_id: str) -> list[dict[str, Any]]:
        self.calls.append(client_id)
        await asyncio.sleep(0)
        if self.fail_next:
            self.fail_next = False
            raise AdminError(503, "unavailable")
        return [{"name": f"r{len(self.calls)}", "id": "x"}]


async def test_a_clients_roles_are_listed_once_until_a_write_forgets_them() -> None:
    admin = CountingAdmin()
    reads = RealmReads(admin, "main")  # type: ignore[arg-type]
    first = await asyncio.gather(*(reads.client_roles("c1") for _ in range(5)))  # at once: one request
    assert admin.calls == ["c1"] and all(r == first[0] for r in first)
    first[0].append({"name": "mutated"})  # a caller's copy: the shared listing stays as listed
    assert await reads.client_roles("c1") == [{"name": "r1", "id": "x"}]
    await reads.client_roles("c2")
    assert admin.calls == ["c1", "c2"]
    reads.forget("c1")
    assert await reads.client_roles("c1") == [{"name": "r3", "id": "x"}]
    assert admin.calls == ["c1", "c2", "c1"]


async def test_a_failed_listing_is_not_kept() -> None:
    admin = CountingAdmin()
    reads = RealmReads(admin, "main")  # type: ignore[arg-type]
    admin.fail_next = True
    with pytest.raises(AdminError):
        await reads.client_roles("c1")
    assert await reads.client_roles("c1") == [{"name": "r2", "id": "x"}]


class HeldAdmin:
    """Answers a listing only when the test says so: a write can land while the listing is in flight."""

    def __init__(self) -> None:
        self.calls = 0
        self.sent, self.answer = asyncio.Event(), asyncio.Event()

    async def client_roles(self, realm: str, client_id: str) -> list[dict[str, Any]]:
        self.calls += 1
        self.sent.set()
        await self.answer.wait()
        return [{"name": f"listed-{self.calls}"}]


async def test_a_listing_in_flight_when_its_client_is_written_is_not_kept() -> None:
    admin = HeldAdmin()
    reads = RealmReads(admin, "main")  # type: ignore[arg-type]
    before = asyncio.ensure_future(reads.client_roles("c1"))
    await admin.sent.wait()
    reads.forget("c1")  # a write to c1's roles, answered while the listing was under way
    admin.answer.set()
    assert await before == [{"name": "listed-1"}]  # its caller raced the write: it gets what was listed
    assert await reads.client_roles("c1") == [{"name": "listed-2"}]  # the next reader lists again
    assert await reads.client_roles("c1") == [{"name": "listed-2"}] and admin.calls == 2


async def test_a_secret_that_cannot_be_read_fails_its_client_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each client's Secret step runs beside the others: a refused GET of one Secret is that client's
    Error, not an exception that cancels the others' steps and fails the realm's every client."""
    world: World = make_world(monkeypatch)
    main = {"name": "main", "namespace": "team-a"}
    world.kube.add(_client("team-b", "api", main))  # confidential, as web is
    read = world.kube.get

    async def get(res: Any, namespace: str, name: str) -> Any:
        if name == "web-client-secret":
            raise ApiError(500, "etcdserver: request timed out")
        return await read(res, namespace, name)

    monkeypatch.setattr(world.kube, "get", get)
    delay, _, writes = await world.round(KC_URL)
    assert delay is not None  # retried soon
    phases = _phases(writes)
    assert phases["team-a/web"] == "Error" and phases["team-b/api"] == "Ready"
    web = world.obj(names.CLIENT_KIND, "team-a", "web")["status"]
    assert "etcdserver: request timed out" in str(web)
    assert [w[3] for w in writes if w[0] == "apply"] == ["api-client-secret"]
