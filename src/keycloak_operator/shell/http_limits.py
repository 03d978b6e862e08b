"""Limits on what a Keycloak server may send back: a server a tenant names (`spec.server.external`) is not
trusted to answer sensibly.

httpx reads a response whole and decompresses it on the fly, so a few hundred kilobytes of gzip can become
gigabytes in the operator's memory (512 Mi in the chart: it restarts in a loop, and Keycloak upgrades halt
with it). This transport asks for no compression, refuses a compressed answer, and stops reading past a cap.
Time is bounded by the caller (a total deadline per request): httpx's timeouts are per read, so a server
sending one byte every 29 s never trips a 30 s read timeout.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx

IDENTITY = "identity"


class ResponseRefused(httpx.TransportError):
    """The server's answer broke a limit; the message says which, never what the answer held."""


class _CappedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, limit: int, url: str) -> None:
        self._inner = inner
        self._limit = limit
        self._url = url

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise ResponseRefused(f"{self._url}: response larger than {self._limit} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class CappedTransport(httpx.AsyncBaseTransport):
    """Wraps httpx's own transport: identity encoding only, and at most `limit` bytes per response body."""

    def __init__(self, limit: int, inner: httpx.AsyncBaseTransport | None = None, **options: object) -> None:
        self._limit = limit
        self._inner = inner or httpx.AsyncHTTPTransport(**options)  # type: ignore[arg-type]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.headers["Accept-Encoding"] = IDENTITY
        host = request.url.host
        if request.url.scheme == "https" and host.endswith("."):
            # A fully qualified name (trailing dot, so no resolver search list) is checked against the
            # certificate without the dot: certificates never carry it, and Python's check would fail.
            request.extensions = {**request.extensions, "sni_hostname": host.rstrip(".")}
        response = await self._inner.handle_async_request(request)
        url = f"{request.method} {request.url.copy_with(query=None)}"
        encoding = response.headers.get("content-encoding", IDENTITY).strip().lower()
        declared = response.headers.get("content-length", "")
        refused = None
        if encoding not in ("", IDENTITY):
            refused = f"{url}: compressed response ({encoding}) although none was accepted"
        elif declared.isdigit() and int(declared) > self._limit:
            refused = f"{url}: response of {declared} bytes, more than {self._limit}"
        if refused is not None:
            await response.aclose()
            raise ResponseRefused(refused)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_CappedStream(response.stream, self._limit, url),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()
