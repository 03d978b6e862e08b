"""spec.features and spec.additionalOptions as the operator renders them (core/keycloak_config.py), run by
the real Keycloak server in production mode: the variables are the ones Keycloak reads."""

from __future__ import annotations

import re

import pytest

from keycloak_operator.core import keycloak_config
from keycloak_operator.models.keycloak import KeycloakSpec
from localcluster.keycloak import KEYCLOAK_VERSION, KeycloakProcess

pytestmark = pytest.mark.integration


def test_features_and_an_option_take_effect_on_the_real_server() -> None:
    spec = KeycloakSpec.model_validate(
        {
            "image": f"quay.io/keycloak/keycloak:{KEYCLOAK_VERSION}",
            "database": {"cnpg": {"clusterName": "db"}},
            "features": {"enabled": ["scripts"], "disabled": ["impersonation"]},
            "additionalOptions": [{"name": "log-level", "value": "INFO,org.keycloak.services:DEBUG"}],
        }
    )
    rendered = keycloak_config.environment(spec, admin_secret="a", cache_cluster=None, discovery_dns=["d"])
    wanted = {"KC_FEATURES", "KC_FEATURES_DISABLED", "KC_LOG_LEVEL"}
    env = {e["name"]: e["value"] for e in rendered if e["name"] in wanted}
    assert set(env) == wanted, rendered
    kc = KeycloakProcess(mode="start", env=env)
    kc.start()
    try:
        log = kc.log_text()
        # Keycloak lists the preview features it turned on at boot, and logs DEBUG for the category asked.
        assert re.search(r"Preview features enabled: .*\bscripts\b", log), kc.log_tail()
        assert re.search(r"DEBUG \[org\.keycloak\.services", log), kc.log_tail()
    finally:
        kc.stop()
        kc.cleanup()
