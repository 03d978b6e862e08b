"""The database tiers a Keycloak runs on: a CloudNativePG Cluster, or a PostgreSQL server the operator
reaches directly (managed: it can snapshot the volume; external: it cannot back it up). `spec.database`
(models/keycloak.DatabaseSpec) holds exactly one."""

from __future__ import annotations

from pydantic import Field

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel, SecretKeyRef
from keycloak_operator.models.database_tls import DatabaseTls


class CnpgDatabase(CrdModel):
    """A CloudNativePG Cluster: host `<cluster>-rw`, credentials from Secret `<cluster>-app`."""

    # `<cluster>-rw` is a Service name (DNS-1035 label, 63 characters).
    cluster_name: str = Field(
        min_length=1, max_length=50, pattern=pt.DNS1035_LABEL, description="Name of the CNPG Cluster."
    )
    database: str = Field(
        default="app",
        min_length=1,
        max_length=63,
        pattern=pt.DATABASE,
        description="Database name inside the cluster.",
    )


TLS_DESCRIPTION = (
    "TLS to the database, for Keycloak (rendered as its db-url-properties) and the database-copy Job "
    "(PGSSLMODE, PGSSLROOTCERT) alike. Unset: the drivers' default, sslmode prefer (TLS when the server "
    "offers it, its certificate unchecked)."
)


class ManagedDatabase(CrdModel):
    """A PostgreSQL the operator reaches directly and can snapshot through its volume."""

    host: str = Field(min_length=1, max_length=253, pattern=pt.HOST, description="Database host name.")
    port: int = Field(default=5432, ge=1, le=65535, description="Database port.")
    database: str = Field(
        default="keycloak", min_length=1, max_length=63, pattern=pt.DATABASE, description="Database name."
    )
    credentials_secret: SecretKeyRef = Field(description="Secret with `username` and `password`.")
    tls: DatabaseTls | None = Field(default=None, description=TLS_DESCRIPTION)
    pvc_name: str | None = pt.object_name(
        "PersistentVolumeClaim of the database, snapshotted before upgrades.", default=None
    )
    volume_snapshot_class_name: str | None = pt.object_name(
        "VolumeSnapshotClass used for the pre-upgrade snapshot.", default=None
    )


class ExternalDatabase(CrdModel):
    """A PostgreSQL the operator cannot back up: upgrades warn and proceed."""

    host: str = Field(min_length=1, max_length=253, pattern=pt.HOST, description="Database host name.")
    port: int = Field(default=5432, ge=1, le=65535, description="Database port.")
    database: str = Field(
        default="keycloak", min_length=1, max_length=63, pattern=pt.DATABASE, description="Database name."
    )
    credentials_secret: SecretKeyRef = Field(description="Secret with `username` and `password`.")
    tls: DatabaseTls | None = Field(default=None, description=TLS_DESCRIPTION)
