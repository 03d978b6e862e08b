"""A bounded sign-in load generator: real token requests to a Keycloak, every response recorded.

It alternates client-credentials tokens for a confidential client and password-grant logins for a user,
back to back, from one thread, until stopped, until `max_requests`, or until `max_seconds`, whichever comes
first. It only talks to loopback or the cluster's own Service and pod ranges, so a typo cannot aim it at
anything else. A sign-in fails when the answer is not 200 with an access token, or when there is no answer.
"""

from __future__ import annotations

import ipaddress
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from localcluster.layout import POD_CIDR, SERVICE_CIDR
from localcluster.node_config import REAL_POD_RANGE

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # cluster addresses: never a proxy
ALLOWED = [ipaddress.ip_network(n) for n in ("127.0.0.0/8", SERVICE_CIDR, POD_CIDR, REAL_POD_RANGE)]


FAILURE_PAUSE_SECONDS = 0.05


@dataclass(frozen=True)
class Attempt:
    at: float  # time.monotonic() when sent
    seconds: float
    grant: str
    status: int  # 0: no HTTP answer
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status == 200 and not self.error


@dataclass(frozen=True)
class Login:
    token_url: str  # http://<ClusterIP>:8080/realms/<realm>/protocol/openid-connect/token
    client_id: str
    client_secret: str
    username: str
    password: str


@dataclass
class SignIns:
    login: Login
    max_requests: int = 20_000
    max_seconds: float = 900.0
    timeout: float = 10.0
    attempts: list[Attempt] = field(default_factory=list)

    def __post_init__(self) -> None:
        host = urllib.parse.urlsplit(self.login.token_url).hostname or ""
        if not any(ipaddress.ip_address(host) in net for net in ALLOWED):
            raise ValueError(f"{host} is not a loopback or cluster address: the load stays inside")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sign-ins", daemon=True)

    def start(self) -> SignIns:
        self._thread.start()
        return self

    def stop(self) -> list[Attempt]:
        self._stop.set()
        self._thread.join(timeout=self.timeout + 5)
        return list(self.attempts)

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
        request = urllib.request.Request(self.login.token_url, data=urllib.parse.urlencode(form).encode())
        started = time.monotonic()
        try:
            with _OPENER.open(request, timeout=self.timeout) as r:
                body = json.loads(r.read())
                error = "" if body.get("access_token") else "no access_token"
                return Attempt(started, time.monotonic() - started, grant, int(r.status), error)
        except urllib.error.HTTPError as e:
            return Attempt(
                started, time.monotonic() - started, grant, e.code, e.read()[:200].decode(errors="replace")
            )
        except (OSError, ValueError) as e:
            return Attempt(started, time.monotonic() - started, grant, 0, repr(e)[:200])
