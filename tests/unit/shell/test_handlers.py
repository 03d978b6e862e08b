"""The Keycloak work queue's processor: which failures are retried and which mean nothing is left to do."""

from __future__ import annotations

import pytest

from keycloak_operator.shell import handlers
from keycloak_operator.shell.kube import NAMESPACE_NOT_FOUND, ApiError


@pytest.fixture
def leading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handlers.runtime, "kube", object())
    monkeypatch.setattr(handlers.leadership, "active", lambda namespace=None: True)


def failing_with(error: Exception):
    async def reconcile_once(kube: object, namespace: str, name: str, *_: object) -> float | None:
        raise error

    return reconcile_once


async def test_a_terminating_namespace_ends_the_pass_without_a_retry(
    leading: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    error = ApiError(403, "PATCH ...: 403 being terminated", ("NamespaceTerminating",))
    monkeypatch.setattr(handlers, "reconcile_once", failing_with(error))
    assert await handlers._process(("ns", "kc")) is None


async def test_a_namespace_gone_since_the_pass_read_its_keycloak_ends_the_pass_without_a_retry(
    leading: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The namespace's last step came between reading the Keycloak and writing its first child (an
    operator starting up amid namespaces being deleted sees that): not a fault, nothing to retry."""
    error = ApiError(404, 'POST ...: 404 namespaces "ns" not found', (NAMESPACE_NOT_FOUND,))
    monkeypatch.setattr(handlers, "reconcile_once", failing_with(error))
    assert await handlers._process(("ns", "kc")) is None
    other = ApiError(404, 'PATCH ...: 404 secrets "x" not found')
    monkeypatch.setattr(handlers, "reconcile_once", failing_with(other))
    with pytest.raises(ApiError):
        await handlers._process(("ns", "kc"))


async def test_any_other_refusal_fails_the_pass_so_the_queue_retries_it(
    leading: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    error = ApiError(403, 'PATCH ...: 403 deployments.apps is forbidden: User "x" cannot patch')
    monkeypatch.setattr(handlers, "reconcile_once", failing_with(error))
    with pytest.raises(ApiError):
        await handlers._process(("ns", "kc"))


async def test_transitions_asking_to_go_on_at_once_are_followed_in_the_same_pass(
    leading: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = [0.0, 0.0, 5.0, 0.0]
    calls = 0

    async def reconcile_once(kube: object, namespace: str, name: str, *_: object) -> float | None:
        nonlocal calls
        calls += 1
        return answers[calls - 1]

    monkeypatch.setattr(handlers, "reconcile_once", reconcile_once)
    assert await handlers._process(("ns", "kc")) == 5.0
    assert calls == 3


async def test_the_chain_is_bounded_and_the_rest_goes_back_to_the_queue(
    leading: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = 0

    async def reconcile_once(kube: object, namespace: str, name: str, *_: object) -> float | None:
        nonlocal calls
        calls += 1
        return 0.0

    monkeypatch.setattr(handlers, "reconcile_once", reconcile_once)
    assert await handlers._process(("ns", "kc")) == 0.0
    assert calls == handlers.CHAIN_LIMIT + 1
