"""What a user-written value may look like when it becomes a name, a path, an environment variable or a URL.

Every such field in the CRD models uses one of these, so the API server itself refuses a hostile value (a
Secret name of `../../team-b/secrets/x`, a namespace with a slash) with a message naming the field, before
the operator ever sees it. The patterns are Kubernetes' own (apimachinery's validation package); the adapter
still quotes every path segment (shell/kube.py), so a value that got past them addresses nothing else.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

# apimachinery: IsDNS1123Subdomain (most object names: Secrets, PVCs, realms, clients), IsDNS1123Label
# (namespaces), IsDNS1035Label (Service names, which some of our names become).
LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"  # unanchored, to compose (kernel/names.py builds URLs from it)
DNS1123_SUBDOMAIN = rf"^{LABEL}(\.{LABEL})*$"
DNS1123_LABEL = rf"^{LABEL}$"
DNS1035_LABEL = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
SUBDOMAIN_MAX = 253
LABEL_MAX = 63

# A portable environment variable name (POSIX): what every shell, the JVM and Keycloak's option mapping read.
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
# A host name or an IPv4 address: it goes into a JDBC URL, where '/', '?' or '&' would add parameters.
HOST = r"^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*$"
# A PostgreSQL database name as the JDBC URL carries it: no '/', '?', '&', ';' or spaces.
DATABASE = r"^[A-Za-z0-9_][A-Za-z0-9_-]*$"
# Character classes are spelled with \xHH escapes only: `\s`, `\S` and `$` mean different things to the API
# server's Go regexp (ASCII whitespace; end of text), pydantic's Rust regex (Unicode whitespace) and Python's
# re (before a final newline), and the CRD and the model must admit exactly the same strings.
# One token of printable ASCII, no space (image references, client ids, redirect URIs).
NO_SPACE = r"^[\x21-\x7e]+$"
# A container image reference by the distribution reference grammar (the one containerd and the registries
# parse), in the reading Docker and containerd give it: the first part is a registry only when it holds a `.`
# or a port, or is `localhost` (otherwise `team/app` is a path on the default registry, and a path is lower
# case). A digest is one a runtime can pull: sha256, sha384 or sha512 in lower-case hex of its length.
# core/images.py parses the same grammar by hand; a property test holds the two together.
_ALNUM = r"[a-z0-9]+"
_PATH_COMPONENT = rf"{_ALNUM}(?:(?:[._]|__|-+){_ALNUM})*"
_PLAIN_COMPONENT = rf"{_ALNUM}(?:(?:_|__|-+){_ALNUM})*"  # no dot: not read as a registry
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:]+\])"
_REGISTRY = (  # a dot, a port, brackets (they hold a colon) or localhost
    rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})+(?::[0-9]+)?|{_HOST}:[0-9]+"
    r"|\[[0-9a-fA-F]*:[0-9a-fA-F:]*\]|localhost)"
)
_IMAGE_NAME = (
    rf"(?:{_REGISTRY}/{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
    rf"|{_PLAIN_COMPONENT}(?:/{_PATH_COMPONENT})+"
    rf"|{_PATH_COMPONENT})"
)
_IMAGE_DIGEST = r"(?:sha256:[a-f0-9]{64}|sha384:[a-f0-9]{96}|sha512:[a-f0-9]{128})"
IMAGE_REFERENCE = rf"^{_IMAGE_NAME}(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?(?:@{_IMAGE_DIGEST})?$"
# The grammar limits the name (registry and path) to 255 characters; a pattern cannot count it, so the whole
# reference is held to that (a digest-pinned reference of a 100-character name still fits with a sha512).
IMAGE_MAX = 255
# An image reference field: the CRD refuses what is not one, naming the field.
ImageReference = Annotated[str, Field(min_length=1, max_length=IMAGE_MAX, pattern=IMAGE_REFERENCE)]


# Any text without control characters (role names may hold spaces and letters of any script).
NO_CONTROL = r"^[^\x00-\x1f\x7f]+$"
# An http(s) base URL: no credentials in it ('@'), no query ('?'), no fragment ('#'), printable ASCII only.
HTTP_URL = r"^https?://[A-Za-z0-9.\-\[\]:]+(/[\x21\x22\x24-\x3e\x41-\x7e]*)?$"
# A container resource name in requests/limits: a standard one, or an extended one under a domain
# (`example.com/gpu`), as the API server accepts them in a pod.
RESOURCE_KEY = (
    r"^(cpu|memory|ephemeral-storage|hugepages-[0-9]+(Ki|Mi|Gi)|"
    rf"{LABEL}(\.{LABEL})*/[A-Za-z0-9]([-A-Za-z0-9_.]{{0,61}}[A-Za-z0-9])?)$"
)
URL_MAX = 2048
# A label key (`example.com/zone`, `zone`) and a label value, as node selectors and tolerations use them.
QUALIFIED_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
LABEL_KEY = rf"^({LABEL}(\.{LABEL})*/)?{QUALIFIED_NAME}$"
LABEL_KEY_MAX = SUBDOMAIN_MAX + 1 + LABEL_MAX
LABEL_VALUE = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"

# Bounded lists: a namespace list or a redirect list is a handful, never thousands.
LIST_MAX = 256


def object_name(description: str, **extra: Any) -> Any:
    """A Kubernetes object name (DNS-1123 subdomain): Secrets, PVCs, KeycloakRealms, snapshot classes."""
    return Field(
        min_length=1, max_length=SUBDOMAIN_MAX, pattern=DNS1123_SUBDOMAIN, description=description, **extra
    )


def namespace_name(description: str, **extra: Any) -> Any:
    """A namespace (DNS-1123 label)."""
    return Field(min_length=1, max_length=LABEL_MAX, pattern=DNS1123_LABEL, description=description, **extra)


NamespaceName = Annotated[str, Field(min_length=1, max_length=LABEL_MAX, pattern=DNS1123_LABEL)]
# A redirect URI or web origin: Keycloak parses it; we only keep it one bounded token.
UriText = Annotated[str, Field(min_length=1, max_length=URL_MAX, pattern=NO_SPACE)]


def namespace_list(description: str) -> Any:
    return Field(default_factory=list, max_length=LIST_MAX, description=description)
