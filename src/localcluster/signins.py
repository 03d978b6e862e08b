"""A bounded sign-in load generator: real token requests to a Keycloak, every response recorded.

It alternates client-credentials tokens for a confidential client and password-grant logins for a user,
back to back, from one thread, until stopped, until `max_requests`, or until `max_seconds`, whichever comes
first. It only talks to loopback or the cluster's own Service and pod ranges, so a typo cannot aim it at
anything else. A sign-in fails when the answer is not 200 with an access token, or when there is no answer.
Each request opens its own connection, so each is balanced by kube-proxy on its own; when the URL is a
ClusterIP, every attempt records the address of the pod that answered it (localcluster/routes.py).
"""

from __future__ import annotations

import dataclasses
import http.client
import ipaddress
import json
import socket
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass, field

from localcluster.layout import POD_CIDR, SERVICE_CIDR
from localcluster.node_config import REAL_POD_RANGE
from localcluster.routes import Routes

ALLOWED = [ipaddress.ip_network(n) for n in ("127.0.0.0/8", SERVICE_CIDR, POD_CIDR, REAL_POD_RANGE)]


FAILURE_PAUSE_SECONDS = 0.05


@dataclass(frozen=True)
class Attempt:
    at: float  # time.monotonic() when sent
    seconds: float
    grant: str
    status: int  # 0: no HTTP answer
    error: str = ""
    local_port: int = 0  # the connection's, to find who answered it
    served_by: str = ""  # the pod IP that answered ("" unknown; the ClusterIP: no pod, kube-proxy refused)

    @property
    def ok(self) -> bool:
        return self.status == 200 and not self.error


@dataclass(frozen=True)
class Tls:
    """HTTPS to an address: the certificate is checked against `context`'s CAs and must name `server_name`
    (a ClusterIP is in no certificate; the Service's DNS name is)."""

    context: ssl.SSLContext
    server_name: str


@dataclass(frozen=True)
class Login:
    token_url: str  # http(s)://<ClusterIP>:<port>/realms/<realm>/protocol/openid-connect/token
    client_id: str
    client_secret: str
    username: str
    password: str
    tls: Tls | None = None  # required for an https URL


@dataclass
class SignIns:
    login: Login
    max_requests: int = 20_000
    max_seconds: float = 900.0
    timeout: float = 10.0
    attempts: list[Attempt] = field(default_factory=list)

    def __post_init__(self) -> None:
        url = urllib.parse.urlsplit(self.login.token_url)
        host = url.hostname or ""
        inside = any(ipaddress.ip_address(host) in net for net in ALLOWED)
        if url.scheme not in ("http", "https") or not inside:
            raise ValueError(f"{url.scheme}://{host} is not http(s) to a loopback or cluster address")
        if (url.scheme == "https") != (self.login.tls is not None):
            raise ValueError("an https URL needs Login.tls, and only an https URL takes it")
        self._host, self._port, self._path = host, url.port or 80, url.path
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sign-ins", daemon=True)
        self._routes = Routes(host, self._port)

    def start(self) -> SignIns:
        self._routes.start()
        self._thread.start()
        return self

    def stop(self) -> list[Attempt]:
        """Every attempt, each with the pod that answered it."""
        self._stop.set()
        self._thread.join(timeout=self.timeout + 5)
        self._routes.stop()
        return [
            dataclasses.replace(a, served_by=self._routes.served_by(a.local_port, a.at))
            for a in list(self.attempts)
        ]

    def failures(self) -> list[Attempt]:
        return [a for a in list(self.attempts) if not a.ok]

    def count(self) -> int:
        return len(self.attempts)

    def _run(self) -> None:
        end = time.monotonic() + self.max_seconds
        grants = ("client_credentials", "password")
        while not self._stop.is_set() and len(self.attempts) < self.max_requests and time.monotonic() < end:
            attempt = self._one(grants[len(self.attempts) % 2])
            self.attempts.append(attempt)
            if not attempt.ok:
                self._stop.wait(FAILURE_PAUSE_SECONDS)  # a refused connection returns at once: do not spin

    def _one(self, grant: str) -> Attempt:
        form = {
            "grant_type": grant,
            "client_id": self.login.client_id,
            "client_secret": self.login.client_secret,
        }
        if grant == "password":
            form |= {"username": self.login.username, "password": self.login.password}
        body = urllib.parse.urlencode(form)
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        started, port = time.monotonic(), 0
        connection = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
        try:
            # The local port is chosen before connecting, so even a refused connection can be traced.
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            connection.sock = sock
            sock.settimeout(self.timeout)
            sock.bind(("", 0))
            port = int(sock.getsockname()[1])
            sock.connect((self._host, self._port))
            if self.login.tls is not None:
                connection.sock = self.login.tls.context.wrap_socket(
                    sock, server_hostname=self.login.tls.server_name
                )
            connection.request("POST", self._path, body, headers)
            response = connection.getresponse()
            text = response.read()
            elapsed = time.monotonic() - started
            if response.status != 200:
                error = text[:200].decode(errors="replace") or response.reason
                return Attempt(started, elapsed, grant, response.status, error, port)
            error = "" if json.loads(text).get("access_token") else "no access_token"
            return Attempt(started, elapsed, grant, response.status, error, port)
        except (OSError, ValueError, http.client.HTTPException) as e:
            return Attempt(started, time.monotonic() - started, grant, 0, repr(e)[:200], port)
        finally:
            connection.close()
