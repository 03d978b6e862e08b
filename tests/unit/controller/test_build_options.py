"""The build-time options the pods set (core/build_options.py): read from the rendered Keycloak container, by
release line, values from Secrets named as unknown, and any variable name the user can write."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core import build_options as bo
from keycloak_operator.core import build_time_options
from keycloak_operator.core.images import parse_semver
from tests.unit import builders

V26_7 = parse_semver("26.7.3")


def plain(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


def test_the_pods_of_a_default_keycloak_set_the_database_health_and_metrics() -> None:
    """What `kc.sh build` with these persisted on 26.7.3: exactly kc.db, kc.health-enabled and
    kc.metrics-enabled (with kc.optimized and the profile)."""
    found = bo.of_pod(builders.pod(builders.spec()), V26_7)
    assert found == bo.BuildOptions(
        (("db", "postgres"), ("health-enabled", "true"), ("metrics-enabled", "true"))
    )
    # Runtime options (where the database is, the hostname, the cache and its stack) are no build options.
    assert not bo.is_build_time("cache", V26_7) and not bo.is_build_time("cache-stack", V26_7)


def test_per_datasource_and_per_feature_options_by_their_prefix() -> None:
    assert bo.is_build_time("db-kind-audit", V26_7)
    assert bo.is_build_time("feature-scripts", V26_7)
    assert not bo.is_build_time("db-kind-", V26_7)
    assert not bo.is_build_time("feature-scripts", parse_semver("26.4.7"))  # from 26.5
    assert not bo.is_build_time("tracing-enabled", parse_semver("25.0.6"))  # from 26.4


def test_features_and_additional_options_count_runtime_ones_do_not() -> None:
    s = builders.spec(
        features={"enabled": ["token-exchange", "scripts"], "disabled": ["impersonation"]},
        additionalOptions=[
            {"name": "log-level", "value": "debug"},
            {"name": "spi-events-listener--provider", "value": "jboss-logging"},
        ],
    )
    options = bo.of_pod(builders.pod(s), V26_7).as_dict()
    assert options["features"] == "token-exchange,scripts"  # as rendered: Keycloak compares the raw text
    assert options["features-disabled"] == "impersonation"
    assert options["spi-events-listener--provider"] == "jboss-logging"
    assert "log-level" not in options


def test_a_build_option_from_a_secret_is_unknown_never_guessed() -> None:
    s = builders.spec(
        additionalOptions=[{"name": "spi-events-listener--provider", "secret": {"name": "f", "key": "k"}}]
    )
    found = bo.of_pod(builders.pod(s), V26_7)
    assert "spi-events-listener--provider" in found.unknown
    assert "spi-events-listener--provider" not in found.as_dict()


def test_the_last_entry_of_a_name_wins_as_in_kubernetes() -> None:
    env = [plain("KC_DB", "dev-file"), {"name": "KC_DB", "valueFrom": {}}, plain("KC_DB", "postgres")]
    assert bo.of_env(env, V26_7) == bo.BuildOptions((("db", "postgres"),), ())
    assert bo.of_env(env[:2], V26_7) == bo.BuildOptions((), ("db",))


def test_variable_names_map_to_options_as_keycloak_maps_them() -> None:
    assert bo.option_of("KC_HEALTH_ENABLED") == "health-enabled"
    assert (
        bo.option_of("KC_SPI_CACHE_EMBEDDED__DEFAULT__CLUSTER_NAME")
        == "spi-cache-embedded--default--cluster-name"
    )
    for other in ("JAVA_OPTS_APPEND", "KC_", "kc_db", "KC_DB ", "KC__DB", "KC_DB___X", "KC_DB_"):
        assert bo.option_of(other) == ""


def test_spi_options_naming_or_switching_a_provider_are_build_time() -> None:
    assert bo.is_build_time("spi-events-listener--provider", V26_7)
    assert bo.is_build_time("spi-connections-jpa--provider-default", V26_7)
    assert bo.is_build_time("spi-x--y--enabled", V26_7)
    assert not bo.is_build_time("spi-cache-embedded--default--cluster-name", V26_7)


def test_every_release_reads_the_table_of_its_line_or_the_nearest() -> None:
    lines = sorted(build_time_options.BY_LINE)
    assert bo.table_for(None) == lines[-1]
    assert bo.table_for(parse_semver("99.0.0")) == lines[-1]
    assert bo.table_for(parse_semver("1.0.0")) == lines[0]
    for line in lines:
        assert bo.table_for(parse_semver(f"{line[0]}.{line[1]}.9")) == line


@given(
    st.lists(
        st.fixed_dictionaries(
            {"name": st.text(max_size=40), "value": st.text(max_size=40)},
            optional={"valueFrom": st.just({"secretKeyRef": {"name": "s", "key": "k"}})},
        ),
        max_size=12,
    )
)
def test_any_environment_gives_sorted_distinct_build_options(env: list[dict[str, Any]]) -> None:
    found = bo.of_env(env, V26_7)
    names = [name for name, _ in found.values]
    assert names == sorted(names)
    assert not set(names) & set(found.unknown)
    assert all(bo.is_build_time(name, V26_7) for name in [*names, *found.unknown])
