"""What one replication round's LIST of a kind costs in memory, unpaged and paged with the namespace cap
(shell/replication/paging.py, core/replication/namespace_cap.py).

    uv run python bench/bench_listing_pages.py [--items 20000] [--namespaces 10]

`--items` KeycloakClients as the API server returns them (spec, status, a managedFields record of two
managers and kubectl's last-applied annotation: about 1.8 KiB of JSON each), spread over `--namespaces`
namespaces, one of which holds half of them. For each way of reading: tracemalloc's peak while the whole
kind is read (each page's JSON text parsed, as the adapter does) and what is kept at the end. Not a test:
prints figures, asserts nothing; ADR 0012 records them.
"""

from __future__ import annotations

import argparse
import json
import tracemalloc
from typing import Any

from keycloak_operator.core.replication.namespace_cap import DEFAULT_CAP, LAST_APPLIED, Tally

MIB = 1024 * 1024
PAGE = 250


def client(ns: str, i: int) -> dict[str, Any]:
    spec = {
        "realm": {"name": "shared", "namespace": "platform"},
        "clientId": f"app-{i}",
        "redirectUris": [f"https://app-{i}.{ns}.example.com/callback/{k}" for k in range(4)],
        "serviceAccountRoles": [{"client": "api", "role": f"role-{k}"} for k in range(4)],
    }
    fields = {f"f:{k}": {} for k in spec}
    return {
        "apiVersion": "kcop.dev/v1alpha1",
        "kind": "KeycloakClient",
        "metadata": {
            "name": f"app-{i}",
            "namespace": ns,
            "uid": f"00000000-0000-0000-0000-{i:012d}",
            "resourceVersion": str(1000 + i),
            "generation": 1,
            "creationTimestamp": "2026-11-27T00:00:00Z",
            "finalizers": ["kcop.dev/replication"],
            "annotations": {LAST_APPLIED: json.dumps({"spec": spec})},
            "managedFields": [
                {"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:spec": fields}},
                {"manager": "keycloak-operator", "operation": "Update", "fieldsV1": {"f:status": fields}},
            ],
        },
        "spec": spec,
        "status": {"phase": "Ready", "reason": "InSync", "observedGeneration": 1, "keycloakId": f"id-{i}"},
    }


def items(total: int, namespaces: int) -> list[dict[str, Any]]:
    out = [client("big", i) for i in range(total // 2)]
    rest = total - len(out)
    out += [client(f"team-{i % (namespaces - 1)}", total + i) for i in range(rest)]
    return out


def measure(label: str, read: Any) -> None:
    tracemalloc.start()
    kept = read()
    _, peak = tracemalloc.get_traced_memory()
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{label:<48} peak {peak / MIB:7.1f} MiB, kept {current / MIB:7.1f} MiB ({len(kept)} objects)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=20000)
    parser.add_argument("--namespaces", type=int, default=10)
    args = parser.parse_args()
    objects = items(args.items, args.namespaces)
    whole = json.dumps({"items": objects}).encode()
    pages = [json.dumps({"items": objects[i : i + PAGE]}).encode() for i in range(0, len(objects), PAGE)]
    del objects
    print(f"{args.items} KeycloakClients, {len(whole) / MIB:.1f} MiB of JSON, {len(pages)} pages of {PAGE}")

    def unpaged() -> list[Any]:
        return list(json.loads(whole)["items"])

    def paged() -> list[Any]:
        tally = Tally("keycloakclients", DEFAULT_CAP)
        for text in pages:
            tally.add(json.loads(text)["items"])
        return tally.kept

    measure("one LIST, unpaged (before)", unpaged)
    measure(f"pages of {PAGE}, cap {DEFAULT_CAP} per namespace, slimmed", paged)


if __name__ == "__main__":
    main()
