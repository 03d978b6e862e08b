"""Rounds grouped by who controls the server, and a lane's workers shared between groups."""

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core.replication.fairness import round_group
from keycloak_operator.kernel import names
from keycloak_operator.shell.workqueue import WorkQueue

labels = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True)
domains = st.sampled_from(["cluster.local", "corp.example", "svc.cluster.local"])


@given(labels, labels, st.integers(1, 65535), domains)
def test_a_keycloak_the_operator_runs_is_grouped_by_its_namespace(
    name: str, namespace: str, port: int, domain: str
) -> None:
    url = names.keycloak_url(name, namespace, port, domain)
    assert names.keycloak_url_namespace(url) == namespace
    assert round_group(url) == f"namespace:{namespace}"


@given(labels, labels, labels, st.integers(1, 65535), st.integers(1, 65535))
def test_every_port_of_an_external_host_is_one_group(
    host: str, a: str, b: str, port_a: int, port_b: int
) -> None:
    first = round_group(f"https://{host}.example:{port_a}/{a}")
    assert first == round_group(f"http://{host.upper()}.example:{port_b}/{b}")
    assert first != round_group(f"https://{host}-other.example:{port_a}/{a}")


def test_a_namespace_never_shares_a_group_with_a_host_of_that_name() -> None:
    assert round_group(names.keycloak_url("kc", "team", 8080)) != round_group("http://team:8080")


def test_rounds_without_a_server_and_odd_keys_are_groups_of_their_own() -> None:
    assert round_group("") == "key:"
    assert round_group("http://[::1") != round_group("")  # unparseable: a group of its own
    assert names.keycloak_url_namespace("http://kc-service.team.svc.cluster.local:8080") is None  # no dot


async def test_one_group_takes_at_most_its_share_and_the_others_keep_going() -> None:
    started: list[str] = []
    running: dict[str, int] = {}
    peak: dict[str, int] = {}
    release = asyncio.Event()

    async def process(key: str) -> None:
        group = key.split("/")[0]
        started.append(key)
        running[group] = running.get(group, 0) + 1
        peak[group] = max(peak.get(group, 0), running[group])
        if group == "slow":
            await release.wait()
        running[group] -= 1

    q: WorkQueue[str] = WorkQueue(process, workers=4, group=lambda k: k.split("/")[0], per_group=2)
    for i in range(6):
        q.add(f"slow/{i}")
    q.add("fast/a")
    q.add("fast/b")
    q.start()
    deadline = asyncio.get_running_loop().time() + 5
    while {"fast/a", "fast/b"} - set(started):
        assert asyncio.get_running_loop().time() < deadline, started
        await asyncio.sleep(0.01)
    assert peak["slow"] == 2  # six slow keys queued first, two run, the fast ones are not stuck behind them
    release.set()
    while len(started) < 8:
        assert asyncio.get_running_loop().time() < deadline, started
        await asyncio.sleep(0.01)
    await q.stop()
    assert peak["slow"] == 2
    assert sorted(started) == sorted([*(f"slow/{i}" for i in range(6)), "fast/a", "fast/b"])


async def test_a_waiting_key_keeps_its_place_and_runs_when_its_group_has_room() -> None:
    order: list[str] = []
    b_started = asyncio.Event()

    async def process(key: str) -> None:
        order.append(key)
        if key == "b1":
            b_started.set()
        if key == "a1":  # held until b1 runs beside it, however slow the machine: no race on a sleep
            await asyncio.wait_for(b_started.wait(), timeout=5)

    q: WorkQueue[str] = WorkQueue(process, workers=2, group=lambda k: k[0], per_group=1)
    for key in ["a1", "a2", "b1"]:
        q.add(key)
    q.start()
    deadline = asyncio.get_running_loop().time() + 5
    while len(order) < 3:
        assert asyncio.get_running_loop().time() < deadline, order
        await asyncio.sleep(0.01)
    await q.stop()
    assert order == ["a1", "b1", "a2"]


def test_an_external_server_named_by_one_namespace_shares_that_namespaces_share() -> None:
    """A tenant naming slow servers on many hosts holds its namespace's share, not a share per host."""
    assert round_group("https://a.example/", {"team"}) == round_group("http://b.example:81/", {"team"})
    assert round_group("https://a.example/", {"team"}) == round_group(names.keycloak_url("kc", "team", 80))
    shared = round_group("https://sso.example/", {"team", "other"})
    assert shared == "host:sso.example" == round_group("https://SSO.example.:8443/", set())


async def test_a_key_whose_group_changes_while_it_runs_is_counted_where_it_started() -> None:
    groups = {"k": "a"}
    release = asyncio.Event()

    async def process(key: str) -> None:
        groups["k"] = "b"  # the realms naming the server changed meanwhile
        await release.wait()

    q: WorkQueue[str] = WorkQueue(process, workers=2, group=lambda k: groups[k], per_group=1)
    q.add("k")
    q.start()
    deadline = asyncio.get_running_loop().time() + 5
    while groups["k"] != "b":
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.01)
    release.set()
    while q._running:  # the counts are what this checks
        assert asyncio.get_running_loop().time() < deadline, q._running
        await asyncio.sleep(0.01)
    await q.stop()
