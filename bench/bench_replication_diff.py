"""The replication diff alone on synthetic entries (default 100,000): how long one round's decision takes.

    uv run python bench/bench_replication_diff.py [--entries 100000] [--repeats 7] [--seed 1]

The mix: realms and clients spread over 500 namespaces with names reused across namespaces (so keys collide
on kind and name), 1% of the actual objects carry an old content hash (updates), 1% of them are no longer
declared (deletes), 1% of the declared entries are new (creates), plus 0.1% objects of a kind this operator
does not know (left alone). Times, over `repeats` runs: reading markers from attribute maps, hashing the
desired content, the diff with changes, and the diff in a steady state (which must plan nothing). Prints
best and median; not a test, so the only checks are on the plan's counts.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any, TypeVar

from keycloak_operator.core.replication import (
    Actual,
    Desired,
    ObjectKey,
    Plan,
    content_hash,
    diff,
    marker_attributes,
    read_marker,
)

KNOWN = frozenset({"KeycloakRealm", "KeycloakClient"})
NAMESPACES = 500
T = TypeVar("T")


def client_content(namespace: str, name: str, version: int) -> dict[str, Any]:
    return {
        "clientId": f"{namespace}-{name}",
        "enabled": True,
        "publicClient": version % 2 == 0,
        "redirectUris": [f"https://{name}.{namespace}.example.com/callback", f"https://{name}.example.com/*"],
        "webOrigins": [f"https://{name}.{namespace}.example.com"],
        "standardFlowEnabled": True,
        "directAccessGrantsEnabled": False,
        "serviceAccountsEnabled": version % 3 == 0,
        "attributes": {"pkce.code.challenge.method": "S256", "post.logout.redirect.uris": "+"},
        "description": f"revision {version}",
    }


def synthetic_keys(n: int) -> list[ObjectKey]:
    """n distinct keys; every name appears in many namespaces, 1 in 50 is a realm."""
    keys = []
    for i in range(n):
        kind = "KeycloakRealm" if i % 50 == 0 else "KeycloakClient"
        keys.append(ObjectKey(kind, f"team-{i % NAMESPACES:03d}", f"app-{i // NAMESPACES:04d}"))
    return keys


def build(n: int, rnd: random.Random) -> tuple[list[Desired], list[Actual], list[dict[str, str]], int]:
    keys = synthetic_keys(n + n // 100)
    base, new = keys[:n], keys[n:]
    one_percent = n // 100
    picked = rnd.sample(range(n), 2 * one_percent)
    changed, undeclared = set(picked[:one_percent]), set(picked[one_percent:])

    desired: list[Desired] = []
    actual: list[Actual] = []
    for i, k in enumerate(base):
        current = Desired.of(k, client_content(k.namespace, k.name, 1))
        if i not in undeclared:
            desired.append(current)
        stored = (
            content_hash(client_content(k.namespace, k.name, 0)) if i in changed else current.content_hash
        )
        actual.append(Actual(k, f"uuid-{i:08d}", stored))
    desired.extend(Desired.of(k, client_content(k.namespace, k.name, 1)) for k in new)
    for j in range(max(1, n // 1000)):
        actual.append(Actual(ObjectKey("KeycloakGroup", "team-000", f"g-{j}"), f"foreign-{j}", "0" * 64))
    rnd.shuffle(desired)
    rnd.shuffle(actual)
    attributes = [marker_attributes(a.key, a.content_hash) for a in actual]
    return desired, actual, attributes, one_percent


def timed(fn: Callable[[], T], repeats: int) -> tuple[T, list[float]]:
    times = []
    result = fn()
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return result, times


def report(label: str, times: list[float], n: int) -> None:
    best, median = min(times), statistics.median(times)
    per = median / n * 1e6
    print(f"{label:<34} best {best * 1e3:8.1f} ms   median {median * 1e3:8.1f} ms   {per:6.2f} us/entry")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    desired, actual, attributes, one_percent = build(args.entries, random.Random(args.seed))
    print(f"{len(desired)} desired, {len(actual)} actual ({len(actual) - args.entries} of an unknown kind)")

    markers, t_read = timed(lambda: [read_marker(a) for a in attributes], args.repeats)
    assert all(m is not None for m in markers)
    contents = [d.content for d in desired]
    _, t_hash = timed(lambda: [content_hash(c) for c in contents], args.repeats)
    plan, t_diff = timed(lambda: diff(desired, actual, KNOWN), args.repeats)
    counts = (len(plan.deletes), len(plan.creates), len(plan.updates), len(plan.duplicates))
    assert counts == (one_percent, one_percent, one_percent, 0), counts

    steady = [Actual(d.key, f"uuid-{i}", d.content_hash) for i, d in enumerate(desired)]
    idle, t_idle = timed(lambda: diff(desired, steady, KNOWN), args.repeats)
    assert idle == Plan()

    n = len(desired)
    report("read_marker", t_read, len(attributes))
    report("content_hash", t_hash, n)
    report("diff, 1% changed/deleted/new", t_diff, n)
    report("diff, steady state", t_idle, n)
    print(f"plan: {counts[0]} deletes, {counts[1]} creates, {counts[2]} updates; steady state: 0 operations")


if __name__ == "__main__":
    main()
