"""The round's per-client steps run side by side (shell/replication/fan_out.py) and share one listing of each
client's roles (shell/replication/realm_reads.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.shell.keycloak_admin import AdminError
from keycloak_operator.shell.replication.fan_out import fan_out
from keycloak_operator.shell.replication.realm_reads import RealmReads


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
    finished: list[int] = []

    async def step(i: int) -> int:
        if i == 1:
            raise KeyError("a bug")
        await asyncio.sleep(0.05)
        finished.append(i)
        return i

    with pytest.raises(KeyError):  # not an ExceptionGroup: the round's handlers catch by type
        await fan_out([0, 1, 2, 3], step, 2)
    await asyncio.sleep(0.1)
    assert finished == []


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
