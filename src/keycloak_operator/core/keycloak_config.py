"""Keycloak server settings rendered as container environment variables.

The option names are Keycloak's own (checked against the server distribution the tests run; see
docs/adr/0004-keycloak-cluster-name-setting.md). Secrets are referenced, never inlined, so no credential
appears in the Deployment, in logs or in status.
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.core import database_tls
from keycloak_operator.core.images import release_of
from keycloak_operator.core.releases import BOOTSTRAP_ADMIN_SINCE, line_of
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.options import variable
from keycloak_operator.models.reserved_env import is_reserved_env
from keycloak_operator.models.workload import EnvVar

# The cache cluster name: Keycloak 26.7 reads only the SPI option (verified on the real 26.7.3 server,
# ADR 0004); 26.8 makes it the first-class `cache-embedded-cluster-name`. Both are rendered: each version
# silently ignores the environment variable it does not know.
CLUSTER_NAME_ENVS = ("KC_SPI_CACHE_EMBEDDED__DEFAULT__CLUSTER_NAME", "KC_CACHE_EMBEDDED_CLUSTER_NAME")
# The JGroups stack the pods were rendered with; rollout.py reads it back, since a change of stack recreates.
STACK_ENV = "KC_CACHE_STACK"

TLS_MOUNT_PATH = "/opt/keycloak/conf/tls"  # the TLS Secret, mounted read-only


def _plain(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


def _from_secret(name: str, secret: str, key: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def database_coordinates(spec: KeycloakSpec) -> tuple[str, int, str, str]:
    """(host, port, database, credentials Secret) for whichever tier is set."""
    db = spec.database
    if db.cnpg is not None:
        return (
            names.cnpg_host(db.cnpg.cluster_name),
            5432,
            db.cnpg.database,
            names.cnpg_credentials_secret(db.cnpg.cluster_name),
        )
    tier = db.managed or db.external
    if tier is None:
        raise ValueError("no database tier set")
    return tier.host, tier.port, tier.database, tier.credentials_secret.name


def referenced_secrets(spec: KeycloakSpec, admin_secret: str) -> list[str]:
    """Secrets the pods need; the operator checks they exist before rolling pods that would not start."""
    options = [o.secret.name for o in spec.additional_options or [] if o.secret is not None]
    tls = [spec.tls.secret] if spec.tls else []
    stores = [t.secret.name for t in spec.truststores or [] if t.secret is not None]
    env = [e.value_from.secret_key_ref.name for e in spec.env if e.value_from and e.value_from.secret_key_ref]
    volumes = [v.secret.name for v in spec.volumes or [] if v.secret is not None]
    root_cert = database_tls.root_cert_secret(spec)
    database = [database_coordinates(spec)[3], *([root_cert] if root_cert else [])]
    return list(dict.fromkeys([*database, admin_secret, *tls, *stores, *options, *env, *volumes]))


def referenced_config_maps(spec: KeycloakSpec) -> list[str]:
    """ConfigMaps the pods mount (truststores, volumes) or read variables from; checked like the Secrets."""
    stores = [t.config_map.name for t in spec.truststores or [] if t.config_map is not None]
    env = [
        e.value_from.config_map_key_ref.name
        for e in spec.env
        if e.value_from and e.value_from.config_map_key_ref
    ]
    volumes = [v.config_map.name for v in spec.volumes or [] if v.config_map is not None]
    return list(dict.fromkeys([*stores, *env, *volumes]))


def _user_env(entry: EnvVar) -> dict[str, Any]:
    source = entry.value_from
    if source is None:
        return _plain(entry.name, entry.value)
    if source.secret_key_ref is not None:
        return _from_secret(entry.name, source.secret_key_ref.name, source.secret_key_ref.key)
    if source.config_map_key_ref is not None:
        ref = source.config_map_key_ref
        return {"name": entry.name, "valueFrom": {"configMapKeyRef": {"name": ref.name, "key": ref.key}}}
    raise ValueError(f"env {entry.name}: valueFrom names no source")  # the model requires one


def _serving(spec: KeycloakSpec) -> list[dict[str, Any]]:
    if spec.tls is None:
        return [_plain("KC_HTTP_ENABLED", "true")]
    return [
        _plain("KC_HTTP_ENABLED", "true" if spec.tls.http_enabled else "false"),
        _plain("KC_HTTPS_PORT", "8443"),
        _plain("KC_HTTPS_CERTIFICATE_FILE", f"{TLS_MOUNT_PATH}/tls.crt"),
        _plain("KC_HTTPS_CERTIFICATE_KEY_FILE", f"{TLS_MOUNT_PATH}/tls.key"),
    ]


def _addressing(spec: KeycloakSpec) -> list[dict[str, Any]]:
    """Hostname v2 and proxy options. Without a hostname, strict mode must be off or Keycloak refuses to
    start; the HostnameFixed condition says what that means. Without spec.proxy no header is believed."""
    env: list[dict[str, Any]] = []
    if spec.hostname is None:
        env.append(_plain("KC_HOSTNAME_STRICT", "false"))
    else:
        env.append(_plain("KC_HOSTNAME", spec.hostname.hostname))
        if spec.hostname.admin:
            env.append(_plain("KC_HOSTNAME_ADMIN", spec.hostname.admin))
        env.append(_plain("KC_HOSTNAME_STRICT", "true" if spec.hostname.strict else "false"))
        if spec.hostname.backchannel_dynamic:
            env.append(_plain("KC_HOSTNAME_BACKCHANNEL_DYNAMIC", "true"))
    if spec.proxy is not None:
        env.append(_plain("KC_PROXY_HEADERS", spec.proxy.headers))
        if spec.proxy.trusted_addresses:
            env.append(_plain("KC_PROXY_TRUSTED_ADDRESSES", ",".join(spec.proxy.trusted_addresses)))
    return env


def reserved_env_conflicts(spec: KeycloakSpec) -> list[str]:
    """spec.env names and spec.additionalOptions names (as their variables) that the operator owns."""
    env = [f"env {e.name}" for e in spec.env if is_reserved_env(e.name)]
    options = [
        f"additionalOptions {o.name}"
        for o in spec.additional_options or []
        if is_reserved_env(variable(o.name))
    ]
    return env + options


def _options(spec: KeycloakSpec) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = []
    if spec.features is not None and spec.features.enabled:
        env.append(_plain("KC_FEATURES", ",".join(spec.features.enabled)))
    if spec.features is not None and spec.features.disabled:
        env.append(_plain("KC_FEATURES_DISABLED", ",".join(spec.features.disabled)))
    for option in spec.additional_options or []:
        if option.secret is not None:
            env.append(_from_secret(variable(option.name), option.secret.name, option.secret.key))
        else:
            env.append(_plain(variable(option.name), option.value or ""))
    return env


def _legacy_admin(spec: KeycloakSpec, admin_secret: str) -> list[dict[str, Any]]:
    """The same admin under the names Keycloak 25 reads; only for images that name such a release."""
    release = release_of(spec.image)
    if release is None or line_of(release) >= BOOTSTRAP_ADMIN_SINCE:
        return []
    return [
        _from_secret("KEYCLOAK_ADMIN", admin_secret, "username"),
        _from_secret("KEYCLOAK_ADMIN_PASSWORD", admin_secret, "password"),
    ]


def _discovery(spec: KeycloakSpec, discovery_dns: list[str]) -> list[dict[str, Any]]:
    if spec.cache_isolation.stack_in_use == "jdbc-ping":
        # Peers by cluster name in the database's jgroups_ping table: isolation by name from 26.7 only, and
        # by database before it (core/cache_cluster.py, ADR 0021).
        jvm = _jvm_options(spec)
        return [_plain(STACK_ENV, "jdbc-ping"), *([_java_opts_append(jvm)] if jvm else [])]
    return [
        # DNS discovery through a discovery Service, so membership follows its selector (ADR 0003): on
        # Keycloak before 26.7, which ignores the cluster name, that selector is all that keeps cache
        # clusters apart (ADR 0018). Keycloak deprecates this stack from 26.4 in favour of jdbc-ping.
        _plain(STACK_ENV, "kubernetes"),
        # DNS_PING takes a comma-separated list; the operator passes one name, the pod's track's membership
        # Service, which a promoted green keeps (ADR 0007, 0018).
        _java_opts_append([f"-Djgroups.dns.query={','.join(discovery_dns)}", *_jvm_options(spec)]),
    ]


def _jvm_options(spec: KeycloakSpec) -> list[str]:
    return list(spec.jvm.options) if spec.jvm is not None else []


def _java_opts_append(options: list[str]) -> dict[str, Any]:
    """kc.sh appends this after its own JVM defaults (heap as a share of the container's memory, G1), so
    those stay unless an option here overrides one. The operator's own options come first; the user's can
    never name what they set (models/workload.py refuses JGroups and Keycloak properties)."""
    return _plain("JAVA_OPTS_APPEND", " ".join(options))


def environment(
    spec: KeycloakSpec, *, admin_secret: str, cache_cluster: str | None, discovery_dns: list[str]
) -> list[dict[str, Any]]:
    host, port, database, credentials = database_coordinates(spec)
    env = [
        _plain("KC_DB", "postgres"),
        _plain("KC_DB_URL_HOST", host),
        _plain("KC_DB_URL_PORT", str(port)),
        _plain("KC_DB_URL_DATABASE", database),
        *database_tls.keycloak_env(spec),
        _from_secret("KC_DB_USERNAME", credentials, "username"),
        _from_secret("KC_DB_PASSWORD", credentials, "password"),
        _from_secret("KC_BOOTSTRAP_ADMIN_USERNAME", admin_secret, "username"),
        _from_secret("KC_BOOTSTRAP_ADMIN_PASSWORD", admin_secret, "password"),
        *_legacy_admin(spec, admin_secret),
        _plain("KC_HEALTH_ENABLED", "true"),
        _plain("KC_METRICS_ENABLED", "true"),
        *_serving(spec),
        *_addressing(spec),
        _plain("KC_CACHE", "ispn"),
        *_discovery(spec, discovery_dns),
    ]
    if cache_cluster:
        env.extend(_plain(variable, cache_cluster) for variable in CLUSTER_NAME_ENVS)
    env.extend(_options(spec))
    env.extend(_user_env(e) for e in spec.env)
    return env
