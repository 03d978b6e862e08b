"""The transport between the operator and Keycloak servers refuses compressed and oversized answers."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator

import httpx
import pytest

from keycloak_operator.shell.http_limits import CappedTransport, ResponseRefused

LIMIT = 1000


class Endless(httpx.AsyncByteStream):
    """A body with no Content-Length that never ends: only a cap on what is read stops it."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            yield b"x" * 100


def client(handler: httpx.MockTransport) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=CappedTransport(LIMIT, inner=handler))


async def test_identity_is_asked_for_and_a_small_answer_passes() -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["accept-encoding"])
        return httpx.Response(200, json={"ok": True})

    async with client(httpx.MockTransport(answer)) as c:
        assert (await c.get("http://kc/x")).json() == {"ok": True}
    assert seen == ["identity"]


async def test_a_compressed_answer_is_refused_before_it_is_inflated() -> None:
    bomb = gzip.compress(b"\0" * 10_000_000)  # 10 MB of zeros in about 10 KB

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=bomb, headers={"content-encoding": "gzip"})

    async with client(httpx.MockTransport(answer)) as c:
        with pytest.raises(ResponseRefused, match="compressed"):
            await c.get("http://kc/x")


async def test_a_declared_length_over_the_cap_is_refused_unread() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"x" * (LIMIT + 1))

    async with client(httpx.MockTransport(answer)) as c:
        with pytest.raises(ResponseRefused, match="more than 1000"):
            await c.get("http://kc/x")


async def test_an_endless_answer_is_cut_at_the_cap() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=Endless())

    async with client(httpx.MockTransport(answer)) as c:
        with pytest.raises(ResponseRefused, match="larger than 1000"):
            await c.get("http://kc/x")
