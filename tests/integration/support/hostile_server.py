"""Keycloak impostors on loopback, for tenant-isolation tests: servers a tenant could name in
`spec.server.external` to starve or rob the operator. Each records every request it is sent.

- `record`: answers 401 to everything, so the test can read which credentials were posted to it;
- `trickle`: sends headers, then one byte every `pace` seconds, for ever (a read timeout never fires);
- `bomb`: a small gzip body that inflates to a gigabyte, declared `Content-Encoding: gzip`;
- `endless`: an uncompressed body without Content-Length that never ends;
and three that let the login in (a well-formed token) and then misbehave within every per-request limit:
- `slow`: each admin call answered plausibly (`[]`, 201, 204), each after `pace` seconds;
- `huge`: each GET answered with `[{},{},...]` of `size` bytes, declared up front (within the byte cap, but
  about twenty-four times that once parsed);
- `malformed`: each GET answered with a body that is not JSON.
Bounded: loopback only, every connection ends when the server stops.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import threading
import time
import urllib.parse
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal

Mode = Literal["record", "trickle", "bomb", "endless", "slow", "huge", "malformed"]
_TOKEN = json.dumps(
    {
        "access_token": "t",
        "expires_in": 300,
        "refresh_token": "r",
        "refresh_expires_in": 1800,
        "token_type": "Bearer",
    }
).encode()
_BOMB_PART = gzip.compress(b"\0" * 8_000_000)  # 8 MB of zeros in about 8 KB; sent 125 times: 1 GB inflated


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    form: dict[str, str]


class HostileServer:
    def __init__(self, mode: Mode, pace: float = 2.0, size: int = 1024 * 1024) -> None:
        self.mode = mode
        self.pace = pace
        self._huge = b"[" + b"{}," * ((size - 4) // 3) + b"{}]" if mode == "huge" else b""
        self.requests: list[Seen] = []
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode(errors="replace") if length else ""
                form = dict(urllib.parse.parse_qsl(body))
                server.requests.append(Seen(self.command, self.path, form))
                # The operator hanging up on us is the point: not an error here.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    server._answer(self)

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> HostileServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def passwords(self) -> set[str]:
        return {r.form["password"] for r in self.requests if "password" in r.form}

    def _answer(self, h: BaseHTTPRequestHandler) -> None:
        if self.mode in ("slow", "huge", "malformed"):
            self._after_login(h)
            return
        if self.mode == "record":
            payload = b'{"error":"invalid_grant"}'
            h.send_response(401)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(payload)))
            h.end_headers()
            h.wfile.write(payload)
            return
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if self.mode == "trickle":
            h.send_header("Content-Length", "100000")
            h.end_headers()
            while not self._stop.wait(self.pace):
                h.wfile.write(b" ")
                h.wfile.flush()
            return
        if self.mode == "bomb":
            h.send_header("Content-Encoding", "gzip")
            h.send_header("Content-Length", str(len(_BOMB_PART) * 125))
            h.end_headers()
            for _ in range(125):
                if self._stop.is_set():
                    return
                h.wfile.write(_BOMB_PART)
            return
        h.end_headers()  # endless: no length, the connection is the end of the body
        h.close_connection = True
        chunk = b"[" + b'{"realm":"x"},' * 5000
        deadline = time.monotonic() + 600
        while not self._stop.is_set() and time.monotonic() < deadline:
            h.wfile.write(chunk)

    def _after_login(self, h: BaseHTTPRequestHandler) -> None:
        if h.path.endswith("/protocol/openid-connect/token"):
            _send(h, 200, _TOKEN)
        elif self.mode == "slow":
            if self._stop.wait(self.pace):
                return
            if h.command == "GET":
                _send(h, 200, b"[]")
            elif h.command == "POST":
                _send(h, 201, b"", location=f"{h.path.rstrip('/')}/made-{len(self.requests)}")
            else:
                _send(h, 204, b"")
        elif h.command != "GET":
            _send(h, 204, b"")
        else:
            _send(h, 200, self._huge if self.mode == "huge" else b'{"realm": "x", unfinished')


def _send(h: BaseHTTPRequestHandler, status: int, payload: bytes, location: str | None = None) -> None:
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(payload)))
    if location is not None:
        h.send_header("Location", location)
    h.end_headers()
    h.wfile.write(payload)
