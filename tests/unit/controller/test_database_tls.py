"""TLS to PostgreSQL: the model's rule, what reaches Keycloak's pods (its JDBC URL properties and the root
certificate's mount), the compatibility check and the database-copy Job (libpq's variables), and that
nothing is rendered without the setting."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core import (
    compatibility_check,
    database_copy,
    keycloak_config,
    spec_problems,
)
from keycloak_operator.core import database_tls as dt
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.models import crd
from keycloak_operator.models.database_tls import DatabaseTls
from keycloak_operator.models.keycloak import KeycloakSpec
from tests.unit import builders
from tests.unit.builders import IMAGE, OWNER

MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"]
ROOT = {"name": "pg-ca", "key": "ca.crt"}
VERIFIED = {"sslMode": "verify-full", "sslRootCert": ROOT}


def tier(tier_name: str = "external", tls: dict[str, Any] | None = None) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "host": "pg.db.svc",
        "database": "keycloak",
        "credentialsSecret": {"name": "pg"},
    }
    if tls is not None:
        fields["tls"] = tls
    return {tier_name: fields}


def spec(tls: dict[str, Any] | None = VERIFIED, tier_name: str = "external", **kw: Any) -> KeycloakSpec:
    return KeycloakSpec.model_validate({"image": IMAGE, "database": tier(tier_name, tls), **kw})


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


# --- the model ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("with_root", [True, False])
def test_a_root_certificate_is_given_exactly_when_the_mode_verifies(mode: str, with_root: bool) -> None:
    tls: dict[str, Any] = {"sslMode": mode, **({"sslRootCert": ROOT} if with_root else {})}
    if with_root == (mode in ("verify-ca", "verify-full")):
        assert spec(tls).database.external is not None
        return
    with pytest.raises(ValidationError, match=r"database\.external\.tls[\s\S]*sslRootCert is required"):
        spec(tls)


@pytest.mark.parametrize(
    "tls",
    [
        {"sslMode": "full"},  # not one of the drivers' modes
        {"sslMode": "VERIFY-FULL", "sslRootCert": ROOT},  # the drivers' spelling only
        {"sslRootCert": ROOT},  # no mode
        {"sslMode": "verify-ca", "sslRootCert": {"name": "Not_A_Name", "key": "ca.crt"}},
        {"sslMode": "verify-ca", "sslRootCert": {"name": "pg-ca", "key": "ca crt"}},
        {"sslMode": "verify-ca", "sslRootCert": {"name": "pg-ca", "key": "../ca.crt/x"}},
        {"sslMode": "verify-ca", "sslRootCert": {"name": "pg-ca", "key": "k" * 254}},
    ],
)
def test_hostile_settings_are_refused_naming_the_field(tls: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match=r"database\.managed\.tls"):
        spec(tls, tier_name="managed")


def test_the_crd_carries_the_same_rule_on_both_tiers_and_none_on_cnpg() -> None:
    database = crd.keycloak_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    tiers = database["properties"]["database"]["properties"]
    for name in ("managed", "external"):
        tls = tiers[name]["properties"]["tls"]
        assert tls["x-kubernetes-validations"][0]["rule"].startswith("has(self.sslRootCert) ==")
        assert tls["properties"]["sslMode"]["enum"] == MODES and tls["required"] == ["sslMode"]
        assert tls["description"] and tls["properties"]["sslRootCert"]["description"]
    assert "tls" not in tiers["cnpg"]["properties"]


# --- Keycloak's pods ----------------------------------------------------------------------------------------


def test_the_pods_get_keycloaks_url_properties_and_the_certificate_mounted_read_only() -> None:
    s = spec()
    pod = builders.pod(s)
    (container,) = pod["containers"]
    assert env_of(container)["KC_DB_URL_PROPERTIES"] == (
        "?sslmode=verify-full&sslrootcert=/opt/keycloak/conf/database-tls/root.crt"
    )
    assert {"name": "database-tls", "mountPath": dt.KEYCLOAK_DIR, "readOnly": True} in container[
        "volumeMounts"
    ]
    # Only the named key, under a fixed name: the key never becomes a path.
    assert {
        "name": "database-tls",
        "secret": {"secretName": "pg-ca", "items": [{"key": "ca.crt", "path": "root.crt"}]},
    } in pod["volumes"]


@pytest.mark.parametrize("mode", ["disable", "allow", "prefer", "require"])
def test_a_mode_without_verification_sets_only_the_mode_and_mounts_nothing(mode: str) -> None:
    pod = builders.pod(spec({"sslMode": mode}, tier_name="managed"))
    (container,) = pod["containers"]
    assert env_of(container)["KC_DB_URL_PROPERTIES"] == f"?sslmode={mode}"
    assert "volumes" not in pod


@pytest.mark.parametrize("tier_name", ["managed", "external"])
def test_without_the_setting_nothing_is_rendered_so_existing_pods_do_not_change(tier_name: str) -> None:
    pod = builders.pod(spec(None, tier_name=tier_name))
    assert "KC_DB_URL_PROPERTIES" not in env_of(pod["containers"][0]) and "volumes" not in pod
    assert "KC_DB_URL_PROPERTIES" not in env_of(builders.container(builders.spec()))  # cnpg


def test_green_and_a_colour_on_a_copied_database_keep_the_settings() -> None:
    s = spec()
    green = render_deployment(OWNER, s, image=s.image, track="b", version="v", green=True)
    moved = database_copy.with_database(s, "keycloak_26_7_3_abcdef")
    for pod in (green["spec"]["template"]["spec"], builders.pod(moved)):
        assert "KC_DB_URL_PROPERTIES" in env_of(pod["containers"][0])
        assert any(v["name"] == "database-tls" for v in pod["volumes"])
    assert env_of(builders.container(moved))["KC_DB_URL_DATABASE"] == "keycloak_26_7_3_abcdef"


def test_the_certificates_secret_must_exist_before_pods_roll() -> None:
    s = spec()
    assert "pg-ca" in keycloak_config.referenced_secrets(s, "kc-initial-admin")
    stored = builders.keycloak(s)
    found = spec_problems.problems(s, stored, frozenset({"pg"}), frozenset(), OWNER, "kc-initial-admin")
    assert any(p.reason == "SecretNotFound" and "pg-ca" in p.message for p in found)
    fine = spec_problems.problems(
        s, stored, frozenset({"pg", "pg-ca"}), frozenset(), OWNER, "kc-initial-admin"
    )
    assert not any(p.reason == "SecretNotFound" for p in fine)


@pytest.mark.parametrize(
    "extra",
    [
        {"env": [{"name": "KC_DB_URL_PROPERTIES", "value": "?sslmode=disable"}]},
        {"additionalOptions": [{"name": "db-url-properties", "value": "?sslmode=disable"}]},
    ],
)
def test_no_other_field_can_set_the_properties(extra: dict[str, Any]) -> None:
    """The operator's variable: a user's would override the tier's TLS (reserved, models/reserved_env.py)."""
    assert keycloak_config.reserved_env_conflicts(spec(**extra))


def test_the_compatibility_check_runs_with_the_same_settings_and_mount() -> None:
    old = render_deployment(OWNER, spec(), image=spec().image, track="a", version="1#a")
    new = render_deployment(OWNER, spec(), image=spec().image, track="a", version="2#b")
    pod = compatibility_check.job(OWNER, old, new, "kc-compat-1")["spec"]["template"]["spec"]
    assert any(v["name"] == "database-tls" for v in pod["volumes"])
    for container in (*pod["initContainers"], *pod["containers"]):
        assert "KC_DB_URL_PROPERTIES" in env_of(container)
        assert any(m["mountPath"] == dt.KEYCLOAK_DIR for m in container["volumeMounts"])


# --- the database-copy Job ----------------------------------------------------------------------------------


def copy_pod(s: KeycloakSpec) -> dict[str, Any]:
    s = s.model_copy(
        update={
            "upgrade_policy": s.upgrade_policy.model_validate(
                {"strategy": "BlueGreen", "databaseCopy": {"image": "docker.io/library/postgres:17"}}
            )
        }
    )
    job = database_copy.job(OWNER, s, name="kc-dbcopy-1", source="keycloak", target="keycloak_26_7_3")
    return dict(job["spec"]["template"]["spec"])


def test_the_copy_job_reads_the_database_as_strictly_as_keycloak() -> None:
    pod = copy_pod(spec())
    (container,) = pod["containers"]
    env = env_of(container)
    assert env["PGSSLMODE"] == "verify-full" and env["PGSSLROOTCERT"] == "/etc/database-tls/root.crt"
    assert {"name": "database-tls", "mountPath": dt.COPY_DIR, "readOnly": True} in container["volumeMounts"]
    assert dt.volume(spec()) in pod["volumes"]
    assert {"name": "work", "emptyDir": {}} in pod["volumes"]  # its scratch space stays


def test_the_copy_job_without_verification_and_without_the_setting() -> None:
    plain = env_of(copy_pod(spec({"sslMode": "require"}))["containers"][0])
    assert plain["PGSSLMODE"] == "require" and "PGSSLROOTCERT" not in plain
    unset = copy_pod(spec(None))
    assert not any(k.startswith("PGSSL") for k in env_of(unset["containers"][0]))
    assert unset["volumes"] == [{"name": "work", "emptyDir": {}}]


# --- the properties -----------------------------------------------------------------------------------------


@given(st.sampled_from(MODES), st.from_regex(r"[-._a-zA-Z0-9]{1,40}", fullmatch=True))
def test_the_properties_are_one_query_string_keycloak_appends_as_is(mode: str, key: str) -> None:
    root = {"name": "pg-ca", "key": key} if mode in ("verify-ca", "verify-full") else None
    tls = DatabaseTls.model_validate({"sslMode": mode, **({"sslRootCert": root} if root else {})})
    properties = dt.url_properties(tls)
    assert properties.startswith("?") and " " not in properties
    parsed = parse_qs(properties[1:], strict_parsing=True)
    assert parsed["sslmode"] == [mode]
    assert parsed.get("sslrootcert") == ([f"{dt.KEYCLOAK_DIR}/root.crt"] if root else None)
