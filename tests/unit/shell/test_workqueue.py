import asyncio

from keycloak_operator.shell.workqueue import CUTOVER, ROUTINE, URGENT, WorkQueue


async def drain(q: WorkQueue, seconds: float = 0.2) -> None:
    await asyncio.sleep(seconds)
    await q.stop()


async def test_duplicates_collapse_and_urgent_goes_first() -> None:
    seen: list[str] = []

    async def process(key: str) -> None:
        seen.append(key)

    q: WorkQueue[str] = WorkQueue(process, workers=1)
    for key in ["a", "b", "a", "c", "a"]:
        q.add(key, priority=ROUTINE)
    q.add("c", priority=URGENT)
    q.add("b", priority=CUTOVER)
    q.start()
    await drain(q)
    assert seen == ["b", "c", "a"]


async def test_one_key_never_runs_twice_at_once_and_late_adds_run_again() -> None:
    running: set[str] = set()
    overlaps = 0
    runs = 0

    async def process(key: str) -> None:
        nonlocal overlaps, runs
        if key in running:
            overlaps += 1
        running.add(key)
        runs += 1
        await asyncio.sleep(0.05)
        running.discard(key)

    q: WorkQueue[str] = WorkQueue(process, workers=4)
    q.start()
    q.add("k")
    await asyncio.sleep(0.01)
    q.add("k")  # while processing: must run once more afterwards, not concurrently
    q.add("k")
    await drain(q, 0.3)
    assert overlaps == 0
    assert runs == 2


async def test_a_failing_key_backs_off_and_does_not_block_others() -> None:
    attempts: dict[str, int] = {"bad": 0, "good": 0}

    async def process(key: str) -> None:
        attempts[key] += 1
        if key == "bad":
            raise RuntimeError("boom")

    q: WorkQueue[str] = WorkQueue(process, workers=1, base_backoff=0.05, max_backoff=0.05)
    q.add("bad")
    q.add("good")
    q.start()
    await drain(q, 0.4)
    assert attempts["good"] == 1
    assert attempts["bad"] >= 3


async def test_a_pass_that_never_ends_is_cut_off_and_retried() -> None:
    calls = 0
    retried = asyncio.Event()

    async def process(key: str) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.sleep(3600)  # a request lost on the way
        retried.set()

    q: WorkQueue[str] = WorkQueue(process, workers=1, timeout=0.05, base_backoff=0.01)
    q.start()
    q.add("k")
    try:
        # The cut-off and retry take about 0.06 s; the deadline only bounds a failure.
        await asyncio.wait_for(retried.wait(), timeout=30)
    finally:
        await q.stop()
    assert calls == 2
