"""Which options each Keycloak release line marks build-time: what `kc.sh build --help-all` lists on that
line's distribution (run 2026-11-27 on 25.0.6, 26.4.7, 26.5.6, 26.7.0 and 26.7.3; 26.7.0 and 26.7.3 list
the same). `cache` and `cache-stack` are runtime options on all of them. Options named per datasource or per
feature (`db-kind-<datasource>`, `feature-<name>`) are kept as their prefixes.

SPI options are not listed by `--help`: Keycloak takes those ending in `-provider`, `-provider-default` or
`-enabled` as build-time (PropertyMappers.isSpiBuildTimeProperty).
"""

from __future__ import annotations

from typing import Final

from keycloak_operator.core.releases import Line

_V25: Final = frozenset(
    {
        "db",
        "db-driver",
        "features",
        "features-disabled",
        "fips-mode",
        "health-enabled",
        "http-management-relative-path",
        "http-relative-path",
        "https-client-auth",
        "https-management-client-auth",
        "legacy-observability-interface",
        "metrics-enabled",
        "transaction-xa-enabled",
        "vault",
    }
)
_V26_4: Final = _V25 | {
    "event-metrics-user-enabled",
    "http-management-health-enabled",
    "log-mdc-enabled",
    "tracing-enabled",
    "tracing-jdbc-enabled",
    "tracing-sampler-type",
}
_V26_5: Final = _V26_4 | {
    "openapi-enabled",
    "openapi-ui-enabled",
    "telemetry-logs-enabled",
    "telemetry-metrics-enabled",
}
BY_LINE: Final[dict[Line, frozenset[str]]] = {
    (25, 0): _V25,
    (26, 4): _V26_4,
    (26, 5): _V26_5,
    (26, 7): _V26_5,
}
# `<prefix><name>`: one option per datasource or feature.
PREFIXES_BY_LINE: Final[dict[Line, tuple[str, ...]]] = {
    (25, 0): (),
    (26, 4): ("db-driver-", "db-kind-", "transaction-xa-enabled-"),
    (26, 5): ("db-driver-", "db-kind-", "transaction-xa-enabled-", "feature-"),
    (26, 7): ("db-driver-", "db-kind-", "transaction-xa-enabled-", "feature-", "db-health-exclude-"),
}
SPI_BUILD_TIME_SUFFIXES: Final = ("-provider", "-provider-default", "-enabled")
