"""The machine's own address: the real node's InternalIP, and where pods reach the API server."""

from __future__ import annotations

import socket


def primary_address() -> str:
    """The address of the interface the default route leaves by (a UDP connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("203.0.113.1", 9))  # TEST-NET-3: off-link, so the default route decides
        return str(s.getsockname()[0])
