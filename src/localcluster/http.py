"""Tiny HTTPS GETs against the control plane with the admin client certificate (stdlib only)."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from pathlib import Path

from localcluster.pki import CertPair


def context(ca: Path | None, client: CertPair | None) -> ssl.SSLContext:
    # Without a CA: component health ports serve self-signed certs and only liveness is asked of them.
    ctx = ssl._create_unverified_context() if ca is None else ssl.create_default_context(cafile=str(ca))
    if client is not None:
        ctx.load_cert_chain(str(client.cert), str(client.key))
    return ctx


def get(url: str, ctx: ssl.SSLContext | None = None, timeout: float = 5) -> tuple[int, str]:
    """(status, body); connection errors come back as status 0 so pollers can simply retry."""
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=ctx) as resp:
            return int(resp.status), resp.read().decode(errors="replace")
    except urllib.error.HTTPError as err:
        return int(err.code), err.read().decode(errors="replace")
    except (urllib.error.URLError, OSError):
        return 0, ""
