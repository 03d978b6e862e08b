"""A minimal SMTP server on 127.0.0.1 that records the credentials clients log in with: the one place a test
can read back the SMTP password Keycloak holds (its admin API only ever shows `**********`), through
Keycloak's own "test connection" call, which logs in with the stored password."""

from __future__ import annotations

import base64
import socketserver
import threading
from types import TracebackType


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def _say(self, line: str) -> None:
        self.wfile.write(f"{line}\r\n".encode())

    def _read(self) -> str:
        return self.rfile.readline().decode(errors="replace").rstrip("\r\n")

    def handle(self) -> None:
        self._say("220 localhost ESMTP test")
        while line := self._read():
            verb = line.split(" ", 1)[0].upper()
            if verb in ("EHLO", "HELO"):
                self._say("250-localhost")
                self._say("250 AUTH PLAIN LOGIN")
            elif verb == "AUTH":
                self._auth(line.split(" ")[1:])
            elif verb == "DATA":
                self._say("354 go on")
                while self._read() != ".":
                    pass
                self._say("250 queued")
            elif verb == "QUIT":
                self._say("221 bye")
                return
            else:  # MAIL, RCPT, RSET, NOOP
                self._say("250 ok")

    def _auth(self, args: list[str]) -> None:
        mechanism = args[0].upper() if args else ""
        if mechanism == "PLAIN":
            if len(args) > 1:
                blob = args[1]
            else:
                self._say("334 ")
                blob = self._read()
            _, user, password = base64.b64decode(blob).decode().split("\0")
        elif mechanism == "LOGIN":
            if len(args) > 1:  # the user name as an initial response
                user = base64.b64decode(args[1]).decode()
            else:
                self._say("334 VXNlcm5hbWU6")
                user = base64.b64decode(self._read()).decode()
            self._say("334 UGFzc3dvcmQ6")
            password = base64.b64decode(self._read()).decode()
        else:
            self._say("504 unsupported")
            return
        with self.server.lock:
            self.server.logins.append((user, password))
        self._say("235 accepted")


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.logins: list[tuple[str, str]] = []
        self.lock = threading.Lock()


class SmtpServer:
    def __init__(self) -> None:
        self._server = _Server()
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def logins(self) -> list[tuple[str, str]]:
        with self._server.lock:
            return list(self._server.logins)

    def __enter__(self) -> SmtpServer:
        self._thread.start()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
