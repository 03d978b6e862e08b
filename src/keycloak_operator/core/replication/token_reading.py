"""How Keycloak reads what a team writes into a role's or a claim's place (token_authority.py judges what
it reads): a role's text, which may name a realm role or a client's role, and a claim path, whose top-level
claim is what readers of the token see. Pure."""

from __future__ import annotations

from typing import Final

# Top-level claims that tell who the bearer is, what it may do, for whom the token is, or how the session
# stands: a mapper writing one (forged or from a user-editable attribute) changes what every reader of the
# token believes. A mapper writing a nested path (`resource_access.payments.roles`) writes its top level.
RESERVED_CLAIMS: Final = frozenset(
    {
        # who: OIDC's identity claims that resource servers key users on
        "sub", "preferred_username", "email", "email_verified", "name", "given_name", "family_name",
        "upn", "phone_number", "phone_number_verified",
        # what it may do, and for whom
        "realm_access", "resource_access", "groups", "roles", "scope", "aud", "azp", "client_id",
        "authorization", "allowed-origins",
        # the token and its session
        "iss", "exp", "nbf", "iat", "jti", "typ", "auth_time", "nonce", "acr", "amr", "sid",
        "session_state", "at_hash", "c_hash", "s_hash", "cnf", "act", "may_act",
    }
)  # fmt: skip


def role_readings(text: str) -> list[tuple[str | None, str]]:
    """Every way Keycloak may read a role's text: (None, text) as a realm role, and (clientId, role) for each
    '.' in it."""
    return [(None, text)] + [(text[:i], text[i + 1 :]) for i, ch in enumerate(text) if ch == "."]


def top_claim(path: str) -> str:
    """The top-level claim a mapper's `claim.name` writes, as Keycloak splits claim paths (JsonUtils): a
    component is one or more characters, each a backslash and the character it escapes, or anything but a
    backslash or a '.', ended by a '.'; escapes are removed. A path starting with '.' has no such component
    and names one claim, the whole path unescaped."""
    out: list[str] = []
    i = 0
    while i < len(path):
        ch = path[i]
        if ch == "\\" and i + 1 < len(path):
            out.append(path[i + 1])
            i += 2
        elif ch == "." and out:
            return "".join(out)
        elif ch == "." or ch == "\\":  # a leading '.', or a trailing lone backslash: no component ends here
            return _unescaped(path)
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _unescaped(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            i += 1
        out.append(text[i])
        i += 1
    return "".join(out)
