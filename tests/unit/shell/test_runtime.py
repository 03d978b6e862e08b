"""The runtime both controllers share: settings parsed once, one Kubernetes client, one leadership watcher;
started before either controller and closed after both stopped."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from keycloak_operator.core.replication import ObjectKey
from keycloak_operator.core.replication.servers import ServerPolicy
from keycloak_operator.shell import handlers, lifecycle, replication_handlers, runtime
from keycloak_operator.shell.kube import Kube
from keycloak_operator.shell.settings import Settings


def test_the_settings_are_read_from_the_environment_with_the_documented_defaults() -> None:
    assert Settings.parse(None, env={}) == Settings()
    assert Settings() == Settings(None, ServerPolicy(), 60.0, 8, 60, 50.0, 10.0, timedelta(seconds=3600))
    env = {
        "KCOP_RESYNC_SECONDS": "5",
        "KCOP_WORKERS": "3",
        "KCOP_PEERING_LIFETIME": "20",
        "KCOP_REPLICATION_WRITES_PER_SECOND": "7.5",
        "KCOP_REPLICATION_NAMESPACE_WRITES_PER_SECOND": "2",
        "KCOP_REVOCATION_GRACE_SECONDS": "0",
        "KCOP_REPLICATION_CONCURRENCY": "3",
        "KCOP_ROUND_BUDGET_SECONDS": "30",
    }
    policy = ServerPolicy(external_hosts=("sso.example.com",))
    parsed = Settings.parse(["team-a"], policy, env)
    assert parsed == Settings(["team-a"], policy, 5.0, 3, 20, 7.5, 2.0, timedelta(0), 3, 30.0)
    assert Settings().round_budget == 120.0
    with pytest.raises(ValueError):
        Settings.parse(None, env={"KCOP_WORKERS": "many"})
    with pytest.raises(ValueError, match="KCOP_REPLICATION_CONCURRENCY"):
        Settings.parse(None, env={"KCOP_REPLICATION_CONCURRENCY": "0"})
    # Above httpx's pool of 100 connections per admin client, steps would queue for a connection instead.
    assert Settings.parse(None, env={"KCOP_REPLICATION_CONCURRENCY": "64"}).replication_concurrency == 64
    with pytest.raises(ValueError, match="KCOP_REPLICATION_CONCURRENCY must be between 1 and 64, got 65"):
        Settings.parse(None, env={"KCOP_REPLICATION_CONCURRENCY": "65"})
    # A round's budget ends before the work queue's 300 s limit, with room to report that it ran out.
    assert Settings.parse(None, env={"KCOP_ROUND_BUDGET_SECONDS": "240"}).round_budget == 240.0
    for bad in ("0", "-1", "241", "nan", "inf"):
        with pytest.raises(ValueError, match="KCOP_ROUND_BUDGET_SECONDS must be above 0 and at most 240"):
            Settings.parse(None, env={"KCOP_ROUND_BUDGET_SECONDS": bad})
    # The most resources of one kind read from one namespace: at least one, or every namespace is left out.
    assert Settings().namespace_cap == 2000
    assert Settings.parse(None, env={"KCOP_NAMESPACE_MAX_RESOURCES": "5"}).namespace_cap == 5
    with pytest.raises(ValueError, match="KCOP_NAMESPACE_MAX_RESOURCES must be at least 1, got 0"):
        Settings.parse(None, env={"KCOP_NAMESPACE_MAX_RESOURCES": "0"})


class FakeKube:
    closed = 0

    async def close(self) -> None:
        self.closed += 1


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Fresh controller state, a Kube.connect that counts, and a leadership watcher that only waits."""
    fresh = runtime.Runtime()
    for part, value in vars(fresh).items():  # every module holds the one object: its parts are replaced
        monkeypatch.setattr(runtime.runtime, part, value)
    monkeypatch.setattr(lifecycle.diagnostics, "install", lambda: None)
    seen: dict[str, Any] = {"connects": [], "watching": []}

    async def connect(connections: int | None = None) -> FakeKube:
        seen["connects"].append(connections)
        return FakeKube()

    async def watch(kube: Any) -> None:
        seen["watching"].append(kube)
        await asyncio.Event().wait()

    monkeypatch.setattr(Kube, "connect", connect)
    monkeypatch.setattr(lifecycle.leadership, "watch", watch)
    return seen


def kopf_settings() -> Any:
    return SimpleNamespace(
        persistence=SimpleNamespace(),
        posting=SimpleNamespace(),
        watching=SimpleNamespace(),
        peering=SimpleNamespace(),
    )


async def test_both_controllers_start_on_one_client_and_one_watcher_and_stop_before_it_closes(
    fresh: dict[str, Any],
) -> None:
    policy = ServerPolicy(external_hosts=("sso.example.com",))
    runtime.configure(Settings(["team-a"], policy, 5.0, 3, 20, 7.5, 2.0, timedelta(seconds=9)))
    settings = kopf_settings()
    await lifecycle.startup(settings=settings)
    await lifecycle.startup(settings=settings)  # kopf retrying the handler: nothing is started twice
    await asyncio.sleep(0)
    state = lifecycle.runtime
    kube = state.kube
    assert fresh["connects"] == [lifecycle.CONNECTIONS] and fresh["watching"] == [kube]
    assert settings.peering.lifetime == 20 and settings.posting.enabled is False

    assert state.keycloaks.queue is not None
    replicator = state.replication.replicator
    assert replicator is not None and replicator.kube is kube
    assert replicator.reader.namespaces == ["team-a"] and replicator.policy == policy
    assert replicator.revocation_grace == timedelta(seconds=9)
    assert state.replication.policy == policy
    assert state.replication.own is not None and state.replication.external is not None

    tasks = [state.resync, state.leadership]
    await lifecycle.cleanup()
    assert isinstance(kube, FakeKube) and kube.closed == 1
    assert all(t is not None and t.done() for t in tasks)
    assert state.kube is None


async def test_one_resync_tick_has_both_controllers_queue_what_they_have_seen(
    fresh: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks: list[str] = []
    twice = asyncio.Event()

    def servers() -> None:
        ticks.append("servers")
        if len(ticks) == 4:
            twice.set()

    monkeypatch.setattr(handlers, "resync", lambda: ticks.append("keycloaks"))
    monkeypatch.setattr(replication_handlers, "resync", servers)
    runtime.configure(Settings(resync_seconds=0.01))
    await lifecycle.startup(settings=kopf_settings())
    await asyncio.wait_for(twice.wait(), 5)
    await lifecycle.cleanup()
    assert ticks[:4] == ["keycloaks", "servers", "keycloaks", "servers"]


async def test_the_controllers_queue_everything_they_have_seen_on_a_tick(fresh: dict[str, Any]) -> None:
    await lifecycle.startup(settings=kopf_settings())
    lifecycle.runtime.keycloaks.known["uid-1"] = ("team", "kc")
    lifecycle.runtime.replication.servers[ObjectKey("KeycloakRealm", "team", "main")] = "https://sso"
    queued: list[Any] = []
    assert lifecycle.runtime.keycloaks.queue is not None
    lifecycle.runtime.keycloaks.queue.add = lambda key, priority=0: queued.append(key)  # type: ignore[method-assign]
    lifecycle.runtime.replication.queue = lambda url: queued.append(url)  # type: ignore[method-assign]
    handlers.resync()
    replication_handlers.resync()
    await lifecycle.cleanup()
    assert queued[0] == ("team", "kc") and sorted(queued[1:]) == ["", "https://sso"]
