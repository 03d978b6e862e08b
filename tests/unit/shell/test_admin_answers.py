"""An admin client marks its server unusable (so the round backs off: core/replication/retry.py) when an
answer is refused as oversize or compressed, is not JSON, has the wrong shape, or the server cannot be
reached; a plain refusal (4xx) does not."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from keycloak_operator.core.bounded_json import JsonLimits
from keycloak_operator.shell.admin import connection as admin_connection
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin
from keycloak_operator.shell.http_limits import CappedTransport

LIMIT = 1000


def token(_: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"access_token": "t", "refresh_token": "r", "expires_in": 60})


def admin(answer: Callable[[httpx.Request], httpx.Response]) -> KeycloakAdmin:
    """An admin client whose login works and whose admin calls get `answer`, through the capped transport."""
    a = KeycloakAdmin("http://kc:8080", "admin", "pw")
    a._conn.async_s = httpx.AsyncClient(transport=CappedTransport(LIMIT, inner=httpx.MockTransport(answer)))
    a._conn.keycloak_openid.connection.async_s = httpx.AsyncClient(transport=httpx.MockTransport(token))
    return a


def refused(_: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused")


@pytest.mark.parametrize(
    "answer",
    [
        lambda _: httpx.Response(200, content=b"x" * (LIMIT + 1), headers={"content-type": "app/json"}),
        lambda _: httpx.Response(200, content=b"{", headers={"content-type": "application/json"}),
        lambda _: httpx.Response(200, json={"not": "a list"}),
        lambda _: httpx.Response(200, content=b"[]", headers={"content-encoding": "gzip"}),
        refused,
    ],
    ids=["oversize", "not-json", "not-a-list", "compressed", "unreachable"],
)
async def test_an_unusable_answer_marks_the_server(answer: Callable[[httpx.Request], httpx.Response]) -> None:
    a = admin(answer)
    await a.login()
    assert not a.unusable
    with pytest.raises(AdminError):
        await a.roles("r")
    assert a.unusable
    await a.close()


async def test_a_refusal_is_an_answer() -> None:
    a = admin(lambda _: httpx.Response(403, json={"error": "forbidden"}))
    await a.login()
    with pytest.raises(AdminError) as e:
        await a.roles("r")
    assert e.value.status == 403 and not a.unusable
    a2 = admin(lambda _: httpx.Response(200, json=[{"name": "r"}]))
    await a2.login()
    assert await a2.roles("r") == [{"name": "r"}] and not a2.unusable
    await a.close()
    await a2.close()


async def test_an_answer_over_the_parse_limits_is_refused_and_marks_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(admin_connection, "JSON_LIMITS", JsonLimits(max_entries=5, max_values=50))
    for body, why in (
        ("[" + ",".join(["{}"] * 6) + "]", "more than 5 entries"),
        ('[{"a":[' + ",".join(["0"] * 60) + "]}]", "more than 50 JSON values"),
    ):
        a = admin(
            lambda _, body=body: httpx.Response(
                200, content=body.encode(), headers={"content-type": "application/json"}
            )
        )
        await a.login()
        with pytest.raises(AdminError, match=f"GET admin/realms/r/roles: answer refused, .*{why}"):
            await a.roles("r")
        assert a.unusable
        await a.close()


async def test_after_one_unusable_answer_the_server_is_not_asked_again_in_the_round() -> None:
    asked: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        return httpx.Response(200, content=b"not json", headers={"content-type": "application/json"})

    a = admin(answer)
    await a.login()
    with pytest.raises(AdminError, match="not JSON"):
        await a.roles("r")
    with pytest.raises(AdminError, match="not sent, the server could not be reached or answered unusably"):
        await a.clients("r")
    assert asked == ["/admin/realms/r/roles"]
    await a.close()
