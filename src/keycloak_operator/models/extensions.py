"""What the Keycloak pods add to the server: trusted certificates (`spec.truststores`), providers and themes
(`spec.extensions`), and whether the image is already built (`spec.startOptimized`).

Checked against the 26.7.3 server: Keycloak reads every certificate file under `conf/truststores`
(recursively; `.p12`/`.pfx`/`.pkcs12` as PKCS12, anything else as PEM/DER, unreadable files skipped) into the
truststore it uses for outgoing TLS; it loads provider jars from the top level of `providers/` only, after a
`kc.sh build`; and it reads directory themes from `themes/<name>/` with no build.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import Field, model_validator

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel

# Volume and container names are DNS-1123 labels of at most 63 characters and carry a prefix
# (`truststore-`, `extension-`): the user's part is shorter.
ENTRY_NAME_MAX = 40
TRUSTSTORES_MAX = 16
EXTENSIONS_MAX = 16
# An absolute directory in an extension image: `/`-separated segments of portable file-name characters, none
# of them `.` or `..`. It is an argument of `cp` (no shell reads it), so only a path, never an option.
_SEGMENT = r"([A-Za-z0-9_][A-Za-z0-9._-]*|\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\.\.[A-Za-z0-9._-]+)"
IMAGE_PATH = rf"^(/{_SEGMENT})+$"
IMAGE_PATH_MAX = 512


class LocalObjectReference(CrdModel):
    name: str = pt.object_name("Name of the object, in the Keycloak's namespace.")


class Truststore(CrdModel):
    """Certificates Keycloak trusts for its outgoing TLS (identity providers, LDAP, SMTP, the database with
    `db-tls-mode`), besides the JVM's own CAs: every key of the Secret or ConfigMap becomes a file; `.p12`,
    `.pfx` and `.pkcs12` keys are PKCS12 stores without password, the others PEM certificates."""

    name: str = Field(
        min_length=1,
        max_length=ENTRY_NAME_MAX,
        pattern=pt.DNS1123_LABEL,
        description="Name of this truststore (a DNS label, unique in the list).",
    )
    secret: LocalObjectReference | None = Field(
        default=None, description="A Secret holding the certificates."
    )
    config_map: LocalObjectReference | None = Field(
        default=None, description="Or: a ConfigMap holding the certificates."
    )

    @model_validator(mode="after")
    def _one_source(self) -> Truststore:
        if (self.secret is None) == (self.config_map is None):
            raise ValueError(f"truststores {self.name}: set exactly one of secret or configMap")
        return self


TRUSTSTORE_ONE_SOURCE_RULE = {
    "rule": "has(self.secret) != has(self.configMap)",
    "message": "set exactly one of secret or configMap",
}


class Extension(CrdModel):
    """Providers or themes shipped in an image, the way teams ship them: an init container of that image
    copies a directory of it into the Keycloak pods. The image needs a `cp` (a `busybox` or distribution base
    has one). Providers need a `kc.sh build`: the operator runs it in the pod before Keycloak starts, and
    Keycloak then starts with `--optimized`. A change of this list is a new version."""

    name: str = Field(
        min_length=1,
        max_length=ENTRY_NAME_MAX,
        pattern=pt.DNS1123_LABEL,
        description="Name of this extension (a DNS label, unique in the list).",
    )
    image: pt.ImageReference = Field(
        description="The image holding the extension. Pin it by digest: a tag whose content changes does "
        "not change the Keycloak's version.",
    )
    path: str = Field(
        default="/extensions",
        min_length=2,
        max_length=IMAGE_PATH_MAX,
        pattern=IMAGE_PATH,
        description="Absolute directory in the image whose contents are copied.",
    )
    type: Literal["providers", "themes"] = Field(
        default="providers",
        description="providers: the directory holds provider jars (theme jars included), copied into "
        "/opt/keycloak/providers (Keycloak reads its top level only). themes: it holds theme directories "
        "(`<theme>/login/...`), copied into /opt/keycloak/themes.",
    )


class _Named(Protocol):
    @property
    def name(self) -> str: ...


def unique_names(kind: str, entries: Sequence[_Named] | None) -> None:
    """Two entries of one name would be two volumes or containers of one name: the API server refuses."""
    seen: set[str] = set()
    for entry in entries or []:
        if entry.name in seen:
            raise ValueError(f"{kind} {entry.name} is listed twice")
        seen.add(entry.name)
