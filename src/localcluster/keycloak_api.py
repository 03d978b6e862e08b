"""A plain admin REST client for tests: checks what the operator did inside the real Keycloak, edits by hand,
and counts admin writes from Keycloak's own HTTP metrics (not from anything the operator reports)."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from localcluster.keycloak import KeycloakProcess

# Greedy up to the last "}": templated URIs hold braces themselves (uri="/admin/realms/{realm}/clients").
_COUNT = re.compile(r"^http_server_requests_seconds_count\{(?P<labels>.*)\}\s+(?P<value>\S+)$", re.M)


class KeycloakApi:
    def __init__(self, kc: KeycloakProcess) -> None:
        self.kc = kc

    def _token(self) -> str:
        data = urllib.parse.urlencode(
            {
                "grant_type": "password",
                "client_id": "admin-cli",
                "username": self.kc.admin_username,
                "password": self.kc.admin_password,
            }
        ).encode()
        url = f"{self.kc.url}/realms/master/protocol/openid-connect/token"
        with urllib.request.urlopen(url, data, timeout=30) as r:
            return str(json.load(r)["access_token"])

    def call(self, method: str, path: str, body: Any = None) -> Any:
        request = urllib.request.Request(
            f"{self.kc.url}/admin/realms{path}",
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self._token()}", "Content-Type": "application/json"},
            method=method,
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                raw = r.read()
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise
        return json.loads(raw) if raw else None

    def realm(self, name: str) -> dict[str, Any] | None:
        return self.call("GET", f"/{name}")

    def clients(self, realm: str, client_id: str | None = None) -> list[dict[str, Any]]:
        found = self.call("GET", f"/{realm}/clients") or []
        return [c for c in found if client_id is None or c["clientId"] == client_id]

    def client(self, realm: str, client_id: str) -> dict[str, Any] | None:
        found = self.clients(realm, client_id)
        assert len(found) <= 1, found
        return found[0] if found else None

    def client_secret(self, realm: str, uuid: str) -> str:
        return str(self.call("GET", f"/{realm}/clients/{uuid}/client-secret")["value"])

    def admin_events(self, realm: str) -> list[dict[str, Any]]:
        return list(self.call("GET", f"/{realm}/admin-events?max=1000") or [])

    def admin_writes(self) -> int:
        """POST/PUT/DELETE requests under /admin so far, as Keycloak's metrics count them."""
        with urllib.request.urlopen(f"{self.kc.management_url}/metrics", timeout=30) as r:
            text = r.read().decode()
        total = 0.0
        for m in _COUNT.finditer(text):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m["labels"]))
            if labels.get("method") in ("POST", "PUT", "DELETE") and labels.get("uri", "").startswith(
                "/admin"
            ):
                total += float(m["value"])
        return int(total)
