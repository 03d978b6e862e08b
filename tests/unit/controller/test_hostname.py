"""spec.hostname and spec.proxy: the Keycloak options they become, safe defaults, and what status says."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from keycloak_operator.core import keycloak_config, status
from keycloak_operator.core.common import conditions
from keycloak_operator.models import reserved_env
from keycloak_operator.models.keycloak import KeycloakSpec
from tests.unit.builders import spec


def env(s: KeycloakSpec) -> dict[str, str]:
    rendered = keycloak_config.environment(s, admin_secret="a", cache_cluster=None, discovery_dns=["d"])
    return {e["name"]: e.get("value", "") for e in rendered}


def test_by_default_no_forwarding_header_is_believed_and_the_host_follows_the_request() -> None:
    e = env(spec())
    assert not any(k.startswith("KC_PROXY") for k in e)
    assert e["KC_HOSTNAME_STRICT"] == "false"  # Keycloak refuses to start strict without a hostname
    assert "KC_HOSTNAME" not in e


def test_a_hostname_is_strict_unless_told_otherwise() -> None:
    e = env(spec(hostname={"hostname": "https://sso.example.com", "admin": "https://admin.example.com"}))
    assert e["KC_HOSTNAME"] == "https://sso.example.com"
    assert e["KC_HOSTNAME_ADMIN"] == "https://admin.example.com"
    assert e["KC_HOSTNAME_STRICT"] == "true"
    assert "KC_HOSTNAME_BACKCHANNEL_DYNAMIC" not in e
    loose = env(spec(hostname={"hostname": "sso.example.com", "strict": False}))
    assert loose["KC_HOSTNAME"] == "sso.example.com" and loose["KC_HOSTNAME_STRICT"] == "false"


def test_backchannel_dynamic_needs_a_full_url() -> None:
    e = env(spec(hostname={"hostname": "https://sso.example.com", "backchannelDynamic": True}))
    assert e["KC_HOSTNAME_BACKCHANNEL_DYNAMIC"] == "true"
    with pytest.raises(ValidationError, match="full URL"):
        spec(hostname={"hostname": "sso.example.com", "backchannelDynamic": True})


def test_proxy_headers_and_trusted_addresses() -> None:
    e = env(
        spec(proxy={"headers": "forwarded", "trustedAddresses": ["10.0.0.0/8", "192.168.1.7", "fd00::/8"]})
    )
    assert e["KC_PROXY_HEADERS"] == "forwarded"
    assert e["KC_PROXY_TRUSTED_ADDRESSES"] == "10.0.0.0/8,192.168.1.7,fd00::/8"
    assert "KC_PROXY_TRUSTED_ADDRESSES" not in env(spec(proxy={"headers": "xforwarded"}))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("hostname", {"hostname": "https://sso.example.com/?x=1"}),
        ("hostname", {"hostname": "user@sso.example.com"}),
        ("hostname", {"hostname": "sso.example.com", "admin": "javascript:alert(1)"}),
        ("proxy", {"headers": "via"}),
        ("proxy", {"headers": "forwarded", "trustedAddresses": ["10.0.0.0/8,0.0.0.0/0"]}),
        ("proxy", {"headers": "forwarded", "trustedAddresses": ["any"]}),
    ],
)
def test_hostile_values_are_refused_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(ValidationError) as e:
        spec(**{field: value})
    assert field in str(e.value)


@pytest.mark.parametrize(
    "name", ["KC_HOSTNAME", "KC_HOSTNAME_STRICT", "kc_hostname_admin", "KC_PROXY_HEADERS", "KC_PROXY"]
)
def test_the_options_spec_owns_are_reserved_in_env(name: str) -> None:
    assert reserved_env.is_reserved_env(name)
    assert not reserved_env.is_reserved_env("KC_PROXY_PROTOCOL_ENABLED")  # not ours: left to the user


def hostname_condition(s: KeycloakSpec) -> conditions.Wanted:
    return status._hostname_condition(s)


def test_status_says_when_the_issuer_follows_the_request() -> None:
    unset = hostname_condition(spec())
    assert (unset.status, unset.reason) == ("False", "NoHostname")
    assert "spec.hostname" in unset.message
    fixed = hostname_condition(spec(hostname={"hostname": "https://sso.example.com"}))
    assert (fixed.status, fixed.reason) == ("True", "Configured")


@pytest.mark.parametrize(
    "hostname",
    [
        {"hostname": "sso.example.com", "admin": "https://admin.example.com"},
        {"hostname": "https-sso.example.com", "backchannelDynamic": True},
    ],
)
def test_what_keycloak_needs_a_full_url_for_is_refused_on_a_bare_host(hostname: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="full URL"):
        spec(hostname=hostname)


@pytest.mark.parametrize("address", ["256.1.1.1", "10.0.0.0/33", "1.2.3", "10.0.0.0/8/8"])
def test_trusted_addresses_are_real_addresses(address: str) -> None:
    with pytest.raises(ValidationError, match="trustedAddresses"):
        spec(proxy={"headers": "forwarded", "trustedAddresses": [address]})
