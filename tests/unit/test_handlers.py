"""The Keycloak work queue's processor: which failures are retried and which mean nothing is left to do."""

from __future__ import annotations

import pytest

from keycloak_operator.shell import handlers
from keycloak_operator.shell.kube import ApiError


@pytest.fixture
def leading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handlers.runtime, "kube", object())
    monkeypatch.setattr(handlers.leadership, "active", lambda namespace=None: True)


def failing_with(error: Exception):
    async def reconcile_once(kube: object, namespace: str, name: str) -> float | None:
        raise error

    return reconcile_once


async def test_a_terminating_namespace_ends_the_pass_without_a_retry(
    leading: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    error = ApiError(403, "PATCH ...: 403 being terminated", ("NamespaceTerminating",))
    monkeypatch.setattr(handlers, "reconcile_once", failing_with(error))
    assert await handlers._process(("ns", "kc")) is None


async def test_any_other_refusal_fails_the_pass_so_the_queue_retries_it(
    leading: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    error = ApiError(403, 'PATCH ...: 403 deployments.apps is forbidden: User "x" cannot patch')
    monkeypatch.setattr(handlers, "reconcile_once", failing_with(error))
    with pytest.raises(ApiError):
        await handlers._process(("ns", "kc"))
