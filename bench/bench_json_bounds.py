"""What parsing one Keycloak answer costs in memory, with and without the parse limits (core/bounded_json.py).

    uv run python bench/bench_json_bounds.py [--bytes 8388608]

Answers of `--bytes` (the cap on one answer from a Keycloak the operator runs): full client representations
(about 1.3 KiB each, 20 attributes, 3 protocol mappers), and the shapes a hostile server would send: empty
objects at the top level, and the same inside one entry. For each: the values the text holds by the bound,
plain json.loads' peak (tracemalloc) and the process's RSS growth (ru_maxrss, meaningful only where it
passes the peak before), and what the bounded parse does with the default limits (its time without
tracemalloc, its peak, or the limit that refused it). Then the worst answer the limits
let through: empty objects up to the value cap. Not a test: prints figures, asserts nothing; ADR 0012
records them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from keycloak_operator.core.bounded_json import JsonLimits, TooLarge, loads, value_bound

MIB = 1024 * 1024
CLIENT: dict[str, Any] = {
    "id": "0d6b1e9c-5b5e-4b63-8d0f-1c1f5b0e0e0e",
    "clientId": "app",
    "name": "App",
    "rootUrl": "https://app.example.com",
    "enabled": True,
    "redirectUris": ["https://app.example.com/*"],
    "webOrigins": ["+"],
    "attributes": {f"attribute.{i}": "value" for i in range(20)},
    "protocolMappers": [
        {
            "id": "1d6b1e9c-5b5e-4b63-8d0f-1c1f5b0e0e0e",
            "name": f"mapper-{i}",
            "protocol": "openid-connect",
            "protocolMapper": "oidc-usermodel-attribute-mapper",
            "config": {"claim.name": "a", "user.attribute": "a", "access.token.claim": "true"},
        }
        for i in range(3)
    ],
    "defaultClientScopes": ["web-origins", "acr", "profile", "roles", "email"],
    "optionalClientScopes": ["address", "phone", "offline_access"],
    "access": {"view": True, "configure": True, "manage": True},
}


def clients(size: int) -> str:
    one = len(json.dumps(CLIENT)) + 1
    return json.dumps([{**CLIENT, "clientId": f"app-{i}"} for i in range(size // one)])


def empty_objects(size: int) -> str:
    return "[" + ",".join(["{}"] * (size // 3)) + "]"


def nested(size: int) -> str:
    return '[{"a":[' + ",".join(["{}"] * (size // 3)) + "]}]"


def measured(parse: Callable[[], Any]) -> tuple[str, float, float]:
    """What `parse` did, its tracemalloc peak in MiB and its run time in seconds."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        parsed = parse()
        outcome = f"parsed ({len(parsed)} entries)" if isinstance(parsed, list) else "parsed"
    except TooLarge as e:
        outcome = f"refused: {e}"
    took = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] / MIB
    tracemalloc.stop()
    return outcome, peak, took


def rss_growth(text: str) -> float:
    """MiB the process's peak RSS grew by while json.loads held `text` parsed (run in the order of growing
    cost, so each one's growth is its own)."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    parsed = json.loads(text)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    del parsed
    return (after - before) / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bytes", type=int, default=8 * MIB)
    args = parser.parse_args()
    limits = JsonLimits()
    print(f"limits: {limits.max_entries} entries per listing, {limits.max_values} JSON values per answer")
    print(
        "| answer | bytes | values (bound) | json.loads peak MiB | RSS growth MiB | bounded parse "
        "| its peak MiB |"
    )
    print("|---|---|---|---|---|---|---|")
    # The densest shapes the value bound still lets through: each `{}` counts twice (itself and its comma),
    # as does each member of an object with distinct keys mapping to `{}` (its comma and its `{`).
    worst = "[" + ",".join(["{}"] * ((limits.max_values - 1) // 2)) + "]"
    keys = "{" + ",".join(f'"k{i}":{{}}' for i in range((limits.max_values - 2) // 2)) + "}"
    shapes = [
        ("full clients", clients(args.bytes)),
        ("empty objects up to the value cap", worst),
        ("distinct keys up to the value cap", keys),
        ("empty objects, in one entry", nested(args.bytes)),
        ("empty objects", empty_objects(args.bytes)),
    ]
    for name, text in shapes:
        growth = rss_growth(text)
        _, plain_peak, _ = measured(lambda text=text: json.loads(text))
        outcome, peak, _ = measured(lambda text=text: loads(text, limits))
        started = time.perf_counter()
        with contextlib.suppress(TooLarge):
            loads(text, limits)
        took = time.perf_counter() - started
        print(
            f"| {name} | {len(text)} | {value_bound(text)} | {plain_peak:.1f} | {growth:.1f} | {outcome} "
            f"({took:.2f} s) | {peak:.1f} |"
        )


if __name__ == "__main__":
    main()
