"""The URLs an identity provider's settings name (OIDC endpoints, SAML services).

https anywhere; http only to a loopback host, which the planner refuses unless the operator runs with
KCOP_IDP_ALLOW_LOOPBACK_HTTP (tests): Keycloak would call its own pod (core/replication/called_urls.py, which
also refuses link-local and metadata hosts, over https too).
No credentials ('@'), query ('?') or fragment ('#').
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from keycloak_operator.kernel import patterns as pt

IDP_URL = (
    r"^(https://[A-Za-z0-9.\-\[\]:]+|http://(localhost|127\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}|\[::1\])"
    r"(:[0-9]{1,5})?)(/[\x21\x22\x24-\x3e\x41-\x7e]*)?$"
)
IdpUrl = Annotated[str, Field(max_length=pt.URL_MAX, pattern=IDP_URL)]
