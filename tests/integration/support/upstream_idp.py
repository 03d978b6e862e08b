"""An upstream OpenID Connect server, as far as the identity provider tests need one: a token endpoint on
127.0.0.1 that records what Keycloak sends it, and a browser's sign-in through Keycloak's broker, which makes
Keycloak send its stored client secret there (the admin API only ever shows it masked)."""

from __future__ import annotations

import base64
import hashlib
import http.server
import secrets
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from localcluster.keycloak import KeycloakProcess


class TokenEndpoint:
    """An upstream token endpoint on 127.0.0.1 that records each token request's form and refuses it."""

    def __init__(self) -> None:
        self.requests: list[dict[str, str]] = []
        seen = self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                seen.append({k: v[0] for k, v in form.items()})
                body = b'{"error": "invalid_grant"}'
                self.send_response(400)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *_: Any, **__: Any) -> None:
        return None


def _browse(url: str, cookies: dict[str, str]) -> str:
    """One GET as a browser makes it, without following a redirect: where it points to ("" for none). The
    cookies are kept by hand: Keycloak marks them Secure, which urllib's jar never sends over http."""
    opener = urllib.request.build_opener(_NoRedirect())
    header = "; ".join(f"{k}={v}" for k, v in cookies.items())
    request = urllib.request.Request(url, headers={"Cookie": header} if header else {})
    try:
        with opener.open(request, timeout=30):
            return ""
    except urllib.error.HTTPError as e:
        for line in e.headers.get_all("set-cookie") or []:
            name, _, value = line.split(";", 1)[0].partition("=")
            cookies[name.strip()] = value
        return e.headers.get("location") or "" if 300 <= e.code < 400 else ""


def secret_sent(kc: KeycloakProcess, rn: str, alias: str, upstream: TokenEndpoint) -> str | None:
    """The client secret Keycloak sends upstream now: a sign-in started with `kc_idp_hint` is redirected to
    the provider; coming back with a code, Keycloak redeems it at the token endpoint, with the secret."""
    cookies: dict[str, str] = {}
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = urllib.parse.urlencode(
        {
            "client_id": "account-console",
            "redirect_uri": f"{kc.url}/realms/{rn}/account/",
            "response_type": "code",
            "scope": "openid",
            "kc_idp_hint": alias,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
    )
    location = _browse(f"{kc.url}/realms/{rn}/protocol/openid-connect/auth?{query}", cookies)
    for _ in range(5):  # Keycloak's own redirects (its broker login step) until it sends us upstream
        if not location.startswith(kc.url):
            break
        location = _browse(location, cookies)
    if not location.startswith(upstream.url):
        return None  # the provider is not there (yet)
    state = urllib.parse.parse_qs(urllib.parse.urlsplit(location).query)["state"][0]
    before = len(upstream.requests)
    back = urllib.parse.urlencode({"state": state, "code": "c0de"})
    _browse(f"{kc.url}/realms/{rn}/broker/{alias}/endpoint?{back}", cookies)  # an error page: code refused
    sent = upstream.requests[before:]
    return sent[-1].get("client_secret") if sent else None
