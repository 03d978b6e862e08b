"""The environment variables the operator sets on Keycloak's container, which a user's `spec.env` or
`spec.additionalOptions` must not set: the CRD refuses them (models/crd.py) and the decision marks an object
stored before that rule Degraded (core/keycloak_config.py)."""

from __future__ import annotations

# Variables the operator owns, compared without regard to case; a user `env` entry with one of these names is
# refused by the CRD (and Degraded, for an object stored before the rule). Besides the database and the admin,
# they are everything that carries cache isolation: Keycloak's cache options (KC_CACHE*), the SPI form of the
# cluster name and of the old Infinispan connection settings, and every way to hand the JVM system properties
# (JGroups reads its discovery query and cluster settings from them).
RESERVED_ENV_PREFIXES = (
    "KC_DB_URL",
    "KC_BOOTSTRAP_ADMIN",
    "KEYCLOAK_ADMIN",
    "KC_CACHE",
    "KC_SPI_CACHE_EMBEDDED",
    "KC_SPI_CONNECTIONS_INFINISPAN",
    "KC_HEALTH",
    "KC_HTTPS_CERTIFICATE",
    "KC_HOSTNAME",
    "KC_FEATURES",
    "JAVA_OPTS_APPEND",
    "JAVA_TOOL_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "_JAVA_OPTIONS",
    # Where Keycloak and SmallRye read more configuration from: a file of the user's (a volume) could set the
    # options the operator leaves unset on purpose, the cache configuration file among them.
    "KC_CONFIG_FILE",
    "SMALLRYE_CONFIG",
)
# JAVA_OPTS replaces kc.sh's JVM options whole (JAVA_OPTS_KC_HEAP stays free); the proxy options are
# spec.proxy's (KC_PROXY is the deprecated form of the same).
# The database's vendor, address and credentials are the tier's (KC_DB_POOL_* and the like stay free).
RESERVED_ENV_NAMES = (
    "JAVA_OPTS",
    "KC_PROXY",
    "KC_PROXY_HEADERS",
    "KC_PROXY_TRUSTED_ADDRESSES",
    "KC_DB",
    "KC_DB_USERNAME",
    "KC_DB_PASSWORD",
    "KC_DB_DRIVER",
    # Set for every pod: health and metrics for the probes, HTTP and the HTTPS port from spec.tls.
    "KC_HTTP_ENABLED",
    "KC_HTTPS_PORT",
    "KC_METRICS_ENABLED",
)


def is_reserved_env(name: str) -> bool:
    upper = name.upper()
    return upper in RESERVED_ENV_NAMES or upper.startswith(RESERVED_ENV_PREFIXES)
