"""TLS to PostgreSQL on the managed and external tiers: one setting read by both of the operator's clients,
Keycloak (through its JDBC driver, pgjdbc) and the database-copy Job (libpq's psql, pg_dump, pg_restore).

Both clients name the modes alike (libpq's `sslmode` values, which pgjdbc copies). A root certificate is
given exactly when the mode verifies the server: with `require`, libpq verifies against a root certificate
it finds while pgjdbc does not, so the two would differ; with verify-ca or verify-full and none given, both
look in a home directory the pods do not have and fail.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, model_validator

from keycloak_operator.models.base import CrdModel
from keycloak_operator.models.options import SecretKeySelector

SslMode = Literal["disable", "allow", "prefer", "require", "verify-ca", "verify-full"]
VERIFYING: Final = ("verify-ca", "verify-full")

ROOT_CERT_MESSAGE: Final = "sslRootCert is required with sslMode verify-ca or verify-full, and only with them"
# On the CRD: the same rule as DatabaseTls._root_cert_exactly_when_verifying, so kubectl refuses it at once.
ROOT_CERT_RULE: Final = {
    "rule": "has(self.sslRootCert) == (self.sslMode == 'verify-ca' || self.sslMode == 'verify-full')",
    "message": ROOT_CERT_MESSAGE,
}


class DatabaseTls(CrdModel):
    """TLS to the database for Keycloak and for the database-copy Job alike."""

    ssl_mode: SslMode = Field(
        description="libpq's and pgjdbc's sslmode: disable, allow, prefer (the drivers' default when this "
        "block is unset), require (encrypted, the server not verified), verify-ca (its certificate signed "
        "by sslRootCert) or verify-full (that, and the certificate names the tier's host).",
    )
    ssl_root_cert: SecretKeySelector | None = Field(
        default=None,
        description="The CA certificate (PEM) that signed the database server's certificate: a key of a "
        "Secret in the Keycloak's namespace, mounted read-only (Keycloak: "
        "/opt/keycloak/conf/database-tls/root.crt; the copy Job: /etc/database-tls/root.crt). Required "
        "with verify-ca and verify-full, refused otherwise.",
    )

    @model_validator(mode="after")
    def _root_cert_exactly_when_verifying(self) -> DatabaseTls:
        if (self.ssl_root_cert is not None) != (self.ssl_mode in VERIFYING):
            raise ValueError(ROOT_CERT_MESSAGE)
        return self
