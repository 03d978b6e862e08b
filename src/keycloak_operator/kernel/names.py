"""The one owner of every object name, label, annotation and API identifier the operator uses.

Anything that needs a name or a label calls this module; nothing else formats them. Names of child objects
are deterministic (no random suffixes) so GitOps tools see no churn and a restarted operator finds what it
made before.
"""

from __future__ import annotations

import hashlib
import re

from keycloak_operator.kernel import patterns

GROUP = "kcop.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KEYCLOAK_KIND = "Keycloak"
KEYCLOAK_PLURAL = "keycloaks"
REALM_KIND = "KeycloakRealm"
REALM_PLURAL = "keycloakrealms"
CLIENT_KIND = "KeycloakClient"
CLIENT_PLURAL = "keycloakclients"
CLIENT_SCOPE_KIND = "KeycloakClientScope"
CLIENT_SCOPE_PLURAL = "keycloakclientscopes"
GROUP_KIND = "KeycloakGroup"
GROUP_PLURAL = "keycloakgroups"
IDENTITY_PROVIDER_KIND = "KeycloakIdentityProvider"
IDENTITY_PROVIDER_PLURAL = "keycloakidentityproviders"
AUTHENTICATION_FLOW_KIND = "KeycloakAuthenticationFlow"
AUTHENTICATION_FLOW_PLURAL = "keycloakauthenticationflows"

OPERATOR_NAME = "keycloak-operator"
FIELD_MANAGER = OPERATOR_NAME

# Recommended Kubernetes labels plus our own, prefixed with the API group.
LABEL_NAME = "app.kubernetes.io/name"
LABEL_INSTANCE = "app.kubernetes.io/instance"
LABEL_COMPONENT = "app.kubernetes.io/component"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_CACHE_CLUSTER = f"{GROUP}/cache-cluster"
# On the server pods that have no cache cluster name (Keycloak's default channel): a Service selector can only
# ask for labels that are there, never for LABEL_CACHE_CLUSTER being absent, so the discovery of unnamed pods
# needs a label of its own to leave named pods out (ADR 0018). A pod carries exactly one of the two.
LABEL_DEFAULT_CACHE_CLUSTER = f"{GROUP}/default-cache-cluster"
# A track is the slot a Deployment occupies ("a" or "b"): blue and green differ by track, never by colour,
# so a promoted green keeps its labels and its pods.
LABEL_TRACK = f"{GROUP}/track"

# The version string (see core/versions.py) a Deployment was last rendered for; on the object, not the pod
# template, so a version change that does not touch the pods does not restart them.
ANNOTATION_VERSION = f"{GROUP}/version"
# On a Deployment pinned to a digest (ADR 0024): the reference the spec named, and the version read from it.
ANNOTATION_IMAGE = f"{GROUP}/image"
ANNOTATION_IMAGE_VERSION = f"{GROUP}/image-version"

COMPONENT_SERVER = "server"
COMPONENT_DISCOVERY = "discovery"
COMPONENT_HTTP = "http"
COMPONENT_ADMIN_SECRET = "admin-credentials"
COMPONENT_OPERATOR_LOGIN = "operator-login"
# On a Keycloak's operator-login Secret: asks for a new client secret (core/operator_login.py, ADR 0023).
ANNOTATION_ROTATE_LOGIN = f"{GROUP}/rotate-client-secret"
COMPONENT_METRICS = "metrics"
# Set by the API server on every namespace (Kubernetes 1.21 on) to its own name, and immutable: a
# namespaceSelector on it names one namespace, which no tenant can claim by labelling theirs.
LABEL_NAMESPACE_NAME = "kubernetes.io/metadata.name"
# Set by the EndpointSlice controller on every slice it manages for a Service, to the Service's name.
LABEL_SERVICE_NAME = "kubernetes.io/service-name"
APP_NAME = "keycloak"

TRACKS = ("a", "b")

# Longest Keycloak name that keeps every derived Service name a valid DNS-1035 label (63 characters):
# the longest suffix is "-green-discovery" (16 characters; the per-track "-discovery-a" has 12).
MAX_KEYCLOAK_NAME = 63 - len("-green-discovery")

LABEL_VALUE_MAX = 63
_LABEL_VALUE_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_HASH_CHARS = 8


def short_hash(text: str, length: int = _HASH_CHARS) -> str:
    """A short, stable hex digest used to keep shortened names distinct."""
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def is_label_value(value: str) -> bool:
    return len(value) <= LABEL_VALUE_MAX and bool(_LABEL_VALUE_RE.fullmatch(value))


def label_value(raw: str) -> str:
    """Turn any text into a valid label value of at most 63 characters.

    Characters a label value cannot hold become '-', the ends are trimmed to alphanumerics. When the text had
    to change in a way that could make two inputs collide (characters replaced, or shortened), a short hash of
    the ORIGINAL text is appended, so two different inputs never share a value.
    """
    if is_label_value(raw):
        return raw
    cleaned = re.sub(r"[^A-Za-z0-9_.-]", "-", raw)
    cleaned = re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", cleaned)
    suffix = short_hash(raw)
    keep = LABEL_VALUE_MAX - len(suffix) - 1
    head = re.sub(r"[^A-Za-z0-9]+$", "", cleaned[:keep])
    return f"{head}-{suffix}" if head else suffix


# --- child object names -------------------------------------------------------------------------------------


def deployment(keycloak: str, *, green: bool = False) -> str:
    return f"{keycloak}-green-keycloak" if green else f"{keycloak}-keycloak"


def discovery_service(keycloak: str, *, green: bool = False) -> str:
    """The colour-named headless Services. JGroups no longer queries them (ADR 0018): the green one is how
    the blue-green machine sees green's pods serving; the canonical one is kept only while pods rendered
    before ADR 0018 may still query it."""
    return f"{keycloak}-green-discovery" if green else f"{keycloak}-discovery"


def membership_service(keycloak: str, track: str) -> str:
    """The discovery Service the pods of `track` query (ADR 0018). Named by track, never by colour: a green
    keeps its track when promoted, so its pods' query stays right without a restart."""
    return f"{keycloak}-discovery-{track}"


def public_service(keycloak: str) -> str:
    """The Service clients use. Its name never changes, across upgrades included."""
    return f"{keycloak}-service"


def pod_disruption_budget(keycloak: str) -> str:
    return f"{keycloak}-keycloak"


def ingress(keycloak: str) -> str:
    """Its backend is the public Service, so it never changes across upgrades either."""
    return f"{keycloak}-keycloak"


def http_route(keycloak: str) -> str:
    """Its backend is the public Service, as the Ingress's is."""
    return f"{keycloak}-keycloak"


def service_monitor(keycloak: str) -> str:
    return f"{keycloak}-keycloak"


def network_policy(keycloak: str, track: str) -> str:
    """One per track: the pods of one Deployment, whatever its colour (a promoted green keeps its policy)."""
    return f"{keycloak}-keycloak-{track}"


def admin_secret(keycloak: str) -> str:
    return f"{keycloak}-initial-admin"


def operator_login_secret(keycloak: str) -> str:
    """The operator's own login to the Keycloak: its client in `master` and its secret (ADR 0023)."""
    return f"{keycloak}-operator-login"


def cnpg_host(cluster: str) -> str:
    return f"{cluster}-rw"


def cnpg_credentials_secret(cluster: str) -> str:
    return f"{cluster}-app"


# The longest CloudNativePG Cluster name the operator uses: the spec's bound (CnpgDatabase.cluster_name), so
# `<cluster>-rw`, `<cluster>-app` and CloudNativePG's own `<cluster>-<n>` names stay valid labels.
MAX_CNPG_CLUSTER = 50
# A release suffix longer than this (absurd version numbers) gives way to the image's digest.
_MAX_RELEASE_SUFFIX = 20
_COPY_CLUSTER_SUFFIX = re.compile(r"-([0-9]+-[0-9]+-[0-9]+|[0-9a-f]{10})-[0-9a-f]{6}$")


def cnpg_copy_cluster(cluster: str, release: tuple[int, int, int] | None, image: str, started: str) -> str:
    """The Cluster recovered for green on the cnpg tier: the spec's Cluster, green's release and a digest of
    the upgrade's start (`kcdb-26-7-3-5f2a9c`), or a digest of the image when its tag names no release.
    One per upgrade, as for the other tiers' copies; a resumed upgrade asks for the same name. The spec's
    name is cut to fit MAX_CNPG_CLUSTER; it starts with a letter, so the result is a DNS-1035 label."""
    suffix = ""
    if release is not None:
        suffix = "-" + "-".join(str(part) for part in release)
    if not suffix or len(suffix) > _MAX_RELEASE_SUFFIX:
        suffix = "-" + short_hash(image, 10)
    suffix += "-" + short_hash(started, 6)
    return cluster[: MAX_CNPG_CLUSTER - len(suffix)] + suffix


def is_cnpg_copy_cluster_of(name: str, cluster: str) -> bool:
    """`name` is one cnpg_copy_cluster made from `cluster`: the whole of it, or its start when the name is
    at the length bound (so `kc-...` is never taken for a copy of `kcdb`)."""
    found = _COPY_CLUSTER_SUFFIX.search(name)
    if found is None or found.start() == 0:
        return False
    base = name[: found.start()]
    return base == cluster or (len(name) == MAX_CNPG_CLUSTER and cluster.startswith(base))


def discovery_dns(service: str, namespace: str) -> str:
    return f"{service}.{namespace}.svc.cluster.local"


def controller_revision(keycloak: str, spec_hash: str) -> str:
    return f"{keycloak}-{spec_hash[:10]}"


# --- labels -------------------------------------------------------------------------------------------------


def instance_labels(keycloak: str) -> dict[str, str]:
    """Labels every child of one Keycloak carries; also what the operator selects its children by."""
    return {
        LABEL_NAME: APP_NAME,
        LABEL_INSTANCE: label_value(keycloak),
        LABEL_MANAGED_BY: OPERATOR_NAME,
    }


def component_labels(keycloak: str, component: str) -> dict[str, str]:
    return {**instance_labels(keycloak), LABEL_COMPONENT: component}


def server_selector(keycloak: str, track: str) -> dict[str, str]:
    """Selects the server pods of one track: the Deployment's selector and the public Service's."""
    return {LABEL_INSTANCE: label_value(keycloak), LABEL_COMPONENT: COMPONENT_SERVER, LABEL_TRACK: track}


def server_pods(keycloak: str) -> dict[str, str]:
    """Selects every server pod of one Keycloak, whatever its track or colour."""
    return {LABEL_INSTANCE: label_value(keycloak), LABEL_COMPONENT: COMPONENT_SERVER}


def discovery_selector(keycloak: str, track: str, cache_cluster: str | None) -> dict[str, str]:
    """The colour-named Services' selector: one track, and one cache cluster when named."""
    selector = server_selector(keycloak, track)
    if cache_cluster:
        selector[LABEL_CACHE_CLUSTER] = cache_cluster
    return selector


def cache_cluster_labels(cache_cluster: str | None) -> dict[str, str]:
    """The label that says which cache cluster a server pod is in: its name, or the default one's marker."""
    if cache_cluster:
        return {LABEL_CACHE_CLUSTER: cache_cluster}
    return {LABEL_DEFAULT_CACHE_CLUSTER: "true"}


def membership_selector(keycloak: str, cache_cluster: str | None, track: str | None = None) -> dict[str, str]:
    """Selects the pods a pod of cache cluster `cache_cluster` may discover: this Keycloak's server pods of
    that cache cluster, of ANY track (two tracks with one name are one cluster), and no other; with no name,
    this Keycloak's pods that have no name either. With `track`, only that track's: two versions that must
    never share a cluster whatever their names (a blue-green upgrade on a database copy, ADR 0019)."""
    selector = {**server_pods(keycloak), **cache_cluster_labels(cache_cluster)}
    if track is not None:
        selector[LABEL_TRACK] = track
    return selector


def selector_string(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def other_track(track: str) -> str:
    return TRACKS[1] if track == TRACKS[0] else TRACKS[0]


# --- realm and client replication ---------------------------------------------------------------------------

# Held on KeycloakRealm/KeycloakClient resources until their object is gone from Keycloak (or released).
REPLICATION_FINALIZER = f"{GROUP}/replication"
# `kcop.dev/preserve: "true"` on a realm or client resource: deleting the resource leaves its object in
# Keycloak, unmarked (no longer managed), instead of deleting it.
ANNOTATION_PRESERVE = f"{GROUP}/preserve"
# `kcop.dev/adopt: "true"` on a realm or client resource: an existing object of its name that
# the operator did not create is taken over (core/replication/adoption.py) instead of being a Conflict.
ANNOTATION_ADOPT = f"{GROUP}/adopt"
# On a client-secret Secret: the Keycloak id of the client whose secret it holds.
ANNOTATION_CLIENT_ID = f"{GROUP}/keycloak-client-id"
COMPONENT_CLIENT_SECRET = "client-secret"
# The prefix of every attribute the operator writes on a Keycloak object (core/replication/marker.py): `.`,
# not `/`, since Keycloak's strictest rule for attribute names (the user profile's) rejects '/'. The models
# refuse user-written attributes with it: a user allowed to write one could forge who owns what.
ATTRIBUTE_PREFIX = f"{GROUP}."
# Role attribute naming the realm resource (`namespace/name`) that declared a realm role.
ROLE_OWNER_ATTRIBUTE = f"{ATTRIBUTE_PREFIX}role-of"


def client_secret(client: str) -> str:
    """Default name of the Secret a confidential client's secret is written to. A client name near the
    253-character limit is shortened, with a hash of the whole name, so the Secret name stays valid."""
    suffix = "-client-secret"
    if len(client) + len(suffix) <= 253:
        return f"{client}{suffix}"
    head = client[: 253 - len(suffix) - _HASH_CHARS - 1].rstrip("-.")
    return f"{head}-{short_hash(client)}{suffix}"


def client_secret_labels(client: str) -> dict[str, str]:
    return {
        LABEL_NAME: APP_NAME,
        LABEL_INSTANCE: label_value(client),
        LABEL_MANAGED_BY: OPERATOR_NAME,
        LABEL_COMPONENT: COMPONENT_CLIENT_SECRET,
    }


DEFAULT_CLUSTER_DOMAIN = "cluster.local"
_DNS_LABEL = patterns.LABEL  # one spelling of Kubernetes' name rules: kernel/patterns.py
_DNS_SUBDOMAIN = re.compile(patterns.DNS1123_SUBDOMAIN)


def is_dns_subdomain(value: str) -> bool:
    return len(value) <= 253 and bool(_DNS_SUBDOMAIN.fullmatch(value))


# The public Service's ports (the pods' HTTP and HTTPS ports): the controller renders them, the replication
# core reaches a Keycloak at them (keycloak_url).
HTTP_PORT = 8080
HTTPS_PORT = 8443


def keycloak_url(
    keycloak: str,
    namespace: str,
    port: int,
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN,
    scheme: str = "http",
) -> str:
    """In-cluster base URL of a Keycloak this operator runs (its public Service), fully qualified with a
    trailing dot: a shorter name goes through the resolver's search list first (ndots:5), where
    `<kc>-service.<ns>.svc.svc.cluster.local` is a name that a pod in a namespace called `svc` can hold.
    (TLS checks the name without the dot: shell/http_limits.py.) The http form is also the key of the
    server's replication rounds, whatever scheme is used to reach it."""
    return f"{scheme}://{public_service(keycloak)}.{namespace}.svc.{cluster_domain}.:{port}"


def is_keycloak_url(url: str, cluster_domain: str = DEFAULT_CLUSTER_DOMAIN) -> bool:
    """Whether a URL has the form `keycloak_url` gives (the servers this operator runs)."""
    domain = re.escape(cluster_domain)
    return bool(re.fullmatch(rf"http://{_DNS_LABEL}-service\.{_DNS_LABEL}\.svc\.{domain}\.:[0-9]+", url))


def keycloak_url_namespace(url: str) -> str | None:
    """The namespace in a URL of the form `keycloak_url` gives, whatever the cluster domain; None for any
    other URL."""
    found = re.match(rf"http://{_DNS_LABEL}-service\.(?P<ns>{_DNS_LABEL})\.svc\.[^/:]+\.:[0-9]+$", url)
    return found.group("ns") if found else None


# CloudNativePG's API (its Backup and Cluster): core/backups.py and core/cnpg_copy.py.
CNPG_API_VERSION = "postgresql.cnpg.io/v1"
