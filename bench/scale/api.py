"""The harness's own API client: async httpx with the cluster admin's certificate, plus watches and the
API server's request counters. Independent of the operator's code, so it measures the operator, not itself."""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx

import localcluster
from localcluster.metrics import request_counts

Obj = dict[str, Any]


class Api:
    def __init__(self, cluster: localcluster.Cluster, concurrency: int = 16) -> None:
        pki = cluster.state_dir / "pki"
        tls = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        tls.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        limits = httpx.Limits(max_connections=concurrency + 8)
        self.http = httpx.AsyncClient(base_url=cluster.server, verify=tls, timeout=120, limits=limits)
        self.gate = asyncio.Semaphore(concurrency)

    async def close(self) -> None:
        await self.http.aclose()

    async def request(self, method: str, path: str, body: Any = None, *, content_type: str = "") -> Obj:
        headers = {"Content-Type": content_type} if content_type else {}
        async with self.gate:
            r = await self.http.request(method, path, json=body, headers=headers)
        if r.status_code >= 300 and not (method == "DELETE" and r.status_code == 404):
            raise RuntimeError(f"{method} {path}: {r.status_code} {r.text[:300]}")
        return dict(r.json()) if r.content else {}

    async def apply(self, path: str, obj: Obj) -> Obj:
        query = "?fieldManager=bench&force=true"
        return await self.request("PATCH", path + query, obj, content_type="application/apply-patch+yaml")

    async def items(self, path: str) -> tuple[list[Obj], str]:
        listed = await self.request("GET", path)
        return list(listed.get("items") or []), str(listed["metadata"]["resourceVersion"])

    async def watch(self, path: str, resource_version: str) -> AsyncIterator[tuple[float, str, Obj]]:
        """(arrival time, type, object) for each change after `resource_version`, until cancelled."""
        params = {"watch": "1", "resourceVersion": resource_version, "allowWatchBookmarks": "false"}
        async with self.http.stream("GET", path, params=params, timeout=None) as r:
            async for line in r.aiter_lines():
                if line:
                    event = json.loads(line)
                    yield time.monotonic(), event["type"], event["object"]

    async def request_counts(self) -> dict[tuple[str, str, str], int]:
        r = await self.http.get("/metrics")
        return dict(request_counts(r.text))


def delta(before: dict[tuple[str, str, str], int], after: dict[tuple[str, str, str], int]) -> dict[str, int]:
    """Requests between two scrapes, keyed "VERB resource[/sub]"."""
    out: dict[str, int] = {}
    for key, value in after.items():
        d = value - before.get(key, 0)
        if d > 0:
            verb, res, sub = key
            out[f"{verb} {res}{'/' + sub if sub else ''}"] = (
                out.get(f"{verb} {res}{'/' + sub if sub else ''}", 0) + d
            )
    return out
