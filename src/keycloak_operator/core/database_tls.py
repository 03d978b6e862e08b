"""TLS to PostgreSQL (models/database_tls.py) as each of the operator's clients reads it: Keycloak's JDBC URL
properties and the libpq variables of the database-copy Job, with the root certificate mounted read-only
at a path the operator chooses (the Secret's key never becomes a path).

Keycloak builds its default PostgreSQL URL as `jdbc:postgresql://<host>:<port>/<database>` followed by
`db-url-properties` verbatim (Keycloak 26.7.3's `Database.Vendor`: the format `jdbc:postgresql://%s:%s/%s%s`,
and the option's help: "appending the right character at the beginning"), so the properties start with `?`.
Nothing is rendered when the tier has no `tls`: pods rendered before the field existed do not change.
"""

from __future__ import annotations

from typing import Any, Final

from keycloak_operator.models.database_tls import DatabaseTls
from keycloak_operator.models.keycloak import KeycloakSpec

URL_PROPERTIES_ENV: Final = "KC_DB_URL_PROPERTIES"
VOLUME: Final = "database-tls"  # never a user volume's name: those are `user-<name>`
ROOT_CERT_FILE: Final = "root.crt"
KEYCLOAK_DIR: Final = "/opt/keycloak/conf/database-tls"  # under Keycloak's home, where no user mount goes
COPY_DIR: Final = "/etc/database-tls"


def settings(spec: KeycloakSpec) -> DatabaseTls | None:
    """The tier's TLS settings. None on cnpg: a blue-green copy there is a new Cluster with a CA of its own,
    so no one root certificate verifies both colours (and the drivers' default, prefer, already encrypts)."""
    tier = spec.database.managed or spec.database.external
    return tier.tls if tier is not None else None


def root_cert_secret(spec: KeycloakSpec) -> str | None:
    tls = settings(spec)
    return tls.ssl_root_cert.name if tls is not None and tls.ssl_root_cert is not None else None


def url_properties(tls: DatabaseTls) -> str:
    """`?sslmode=...[&sslrootcert=...]`; every piece is an enum value or a fixed path: nothing to escape."""
    properties = [f"sslmode={tls.ssl_mode}"]
    if tls.ssl_root_cert is not None:
        properties.append(f"sslrootcert={KEYCLOAK_DIR}/{ROOT_CERT_FILE}")
    return "?" + "&".join(properties)


def keycloak_env(spec: KeycloakSpec) -> list[dict[str, Any]]:
    tls = settings(spec)
    return [] if tls is None else [{"name": URL_PROPERTIES_ENV, "value": url_properties(tls)}]


def libpq_env(spec: KeycloakSpec) -> list[dict[str, Any]]:
    """The same settings under libpq's variables, for the copy Job's psql, pg_dump and pg_restore."""
    tls = settings(spec)
    if tls is None:
        return []
    env = [{"name": "PGSSLMODE", "value": tls.ssl_mode}]
    if tls.ssl_root_cert is not None:
        env.append({"name": "PGSSLROOTCERT", "value": f"{COPY_DIR}/{ROOT_CERT_FILE}"})
    return env


def volume(spec: KeycloakSpec) -> dict[str, Any] | None:
    """The root certificate's Secret, only its key, as the fixed file name."""
    tls = settings(spec)
    if tls is None or tls.ssl_root_cert is None:
        return None
    ref = tls.ssl_root_cert
    return {
        "name": VOLUME,
        "secret": {"secretName": ref.name, "items": [{"key": ref.key, "path": ROOT_CERT_FILE}]},
    }


def mount(directory: str) -> dict[str, Any]:
    return {"name": VOLUME, "mountPath": directory, "readOnly": True}
