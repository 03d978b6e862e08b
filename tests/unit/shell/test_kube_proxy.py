"""The API server's proxy, resolved once from the environment (the adapter's session does not look again)."""

from __future__ import annotations

import pytest

from keycloak_operator.shell.kube import env_proxy

SERVER = "https://10.0.0.1:6443"
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)


def test_no_proxy_in_the_environment_means_direct() -> None:
    assert env_proxy(SERVER) is None


def test_the_proxy_for_the_servers_scheme_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    monkeypatch.setenv("HTTP_PROXY", "http://other.corp:3128")
    assert env_proxy(SERVER) == "http://proxy.corp:3128"


def test_no_proxy_exempts_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", "10.0.0.1,.cluster.local")
    assert env_proxy(SERVER) is None
    assert env_proxy("https://kubernetes.default.svc.cluster.local") is None
