"""spec.features and spec.additionalOptions: the variables they become, secrets by reference, and the
options the operator owns refused."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core import keycloak_config, reconcile
from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models import options
from keycloak_operator.models.keycloak import KeycloakSpec
from tests.unit.builders import NOW, observed, spec


def env(s: KeycloakSpec) -> dict[str, Any]:
    rendered = keycloak_config.environment(s, admin_secret="a", cache_cluster=None, discovery_dns=["d"])
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in rendered}


@pytest.mark.parametrize(
    ("option", "variable"),
    [
        ("log-level", "KC_LOG_LEVEL"),
        ("db-pool-max-size", "KC_DB_POOL_MAX_SIZE"),
        (
            "spi-events-listener--jboss-logging--success-level",
            "KC_SPI_EVENTS_LISTENER__JBOSS_LOGGING__SUCCESS_LEVEL",
        ),
    ],
)
def test_an_option_becomes_keycloaks_variable(option: str, variable: str) -> None:
    assert options.variable(option) == variable


def test_features_and_options_reach_the_pods_secrets_by_reference() -> None:
    s = spec(
        features={
            "enabled": ["token-exchange", "admin-fine-grained-authz:v1"],
            "disabled": ["impersonation"],
        },
        additionalOptions=[
            {"name": "log-level", "value": "INFO,org.keycloak.events:DEBUG"},
            {"name": "spi-truststore-file--file--password", "secret": {"name": "trust", "key": "password"}},
        ],
    )
    e = env(s)
    assert e["KC_FEATURES"] == "token-exchange,admin-fine-grained-authz:v1"
    assert e["KC_FEATURES_DISABLED"] == "impersonation"
    assert e["KC_LOG_LEVEL"] == "INFO,org.keycloak.events:DEBUG"
    assert e["KC_SPI_TRUSTSTORE_FILE__FILE__PASSWORD"] == {
        "secretKeyRef": {"name": "trust", "key": "password"}
    }
    assert "trust" in keycloak_config.referenced_secrets(s, "admin")


def test_nothing_is_rendered_when_unset() -> None:
    assert not any(k.startswith("KC_FEATURES") for k in env(spec()))


@pytest.mark.parametrize(
    "body",
    [
        {"name": "log-level"},
        {"name": "log-level", "value": "x", "secret": {"name": "s", "key": "k"}},
        {"name": "--log-level", "value": "x"},
        {"name": "LOG_LEVEL", "value": "x"},
        {"name": "log-level", "secret": {"name": "../other", "key": "k"}},
        {"name": "log-level", "secret": {"name": "s", "key": "a/b"}},
    ],
)
def test_malformed_options_are_refused(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="additionalOptions"):
        spec(additionalOptions=[body])


def test_a_feature_cannot_be_on_and_off() -> None:
    with pytest.raises(ValidationError, match="both enabled and disabled"):
        spec(features={"enabled": ["scripts"], "disabled": ["scripts"]})


@pytest.mark.parametrize(
    "name",
    [
        "db-password",
        "db-url-host",
        "bootstrap-admin-password",
        "hostname",
        "proxy-headers",
        "features",
        "cache-stack",
    ],
)
def test_options_the_operator_sets_are_reported(name: str) -> None:
    """The CRD refuses them (a CEL copy of the same list); one stored before is Degraded, pods not rolled."""
    s = spec(additionalOptions=[{"name": name, "value": "x"}])
    assert keycloak_config.reserved_env_conflicts(s) == [f"additionalOptions {name}"]
    decision = reconcile.decide(s, observed(s), now=NOW)
    assert not [o for o in decision.apply if o["kind"] == "Deployment"]
    assert decision.status is not None
    degraded = next(c for c in decision.status["conditions"] if c["type"] == "Degraded")
    assert degraded["reason"] == "ReservedEnv" and name in degraded["message"]


@given(st.from_regex(options.OPTION_NAME, fullmatch=True).filter(lambda n: len(n) <= options.OPTION_NAME_MAX))
def test_every_valid_option_name_maps_to_a_portable_variable(name: str) -> None:
    variable = options.variable(name)
    assert re.fullmatch(pt.ENV_NAME, variable) and variable.startswith("KC_")


def test_database_pool_options_stay_free() -> None:
    """The tier owns the vendor, address and credentials; tuning the pool is the user's."""
    s = spec(additionalOptions=[{"name": "db-pool-max-size", "value": "50"}])
    assert keycloak_config.reserved_env_conflicts(s) == []
    assert env(s)["KC_DB_POOL_MAX_SIZE"] == "50"


@pytest.mark.parametrize(
    "spec_part",
    [
        {"additionalOptions": [{"name": "log-level", "value": "a"}, {"name": "log-level", "value": "b"}]},
        {
            "additionalOptions": [{"name": "log-level", "value": "a"}],
            "env": [{"name": "KC_LOG_LEVEL", "value": "b"}],
        },
        {"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]},
    ],
)
def test_one_variable_is_set_once(spec_part: dict[str, Any]) -> None:
    """Twice would be a Deployment the API server refuses: the model (and the CRD's list keys) refuse it."""
    with pytest.raises(ValidationError, match="again"):
        spec(**spec_part)


@pytest.mark.parametrize(
    "name", ["metrics-enabled", "http-enabled", "https-port", "health-enabled", "cache-stack"]
)
def test_every_variable_the_operator_sets_is_reserved(name: str) -> None:
    assert keycloak_config.reserved_env_conflicts(spec(additionalOptions=[{"name": name, "value": "x"}]))


def test_no_rendered_variable_appears_twice() -> None:
    s = spec(
        tls={"secret": "t", "httpEnabled": True},
        hostname={"hostname": "https://sso.example.com", "admin": "https://a.example.com"},
        proxy={"headers": "forwarded", "trustedAddresses": ["10.0.0.0/8"]},
        features={"enabled": ["scripts"], "disabled": ["impersonation"]},
        additionalOptions=[{"name": "log-level", "value": "INFO"}],
        env=[{"name": "TZ", "value": "UTC"}],
    )
    rendered = [
        e["name"]
        for e in keycloak_config.environment(s, admin_secret="a", cache_cluster="c", discovery_dns=["d"])
    ]
    assert len(rendered) == len(set(rendered)), rendered
