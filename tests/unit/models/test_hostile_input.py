"""Hostile strings in every spec field that becomes a name, label, path, env var, DNS name or URL.

Each field is set to a hostile value (path segments, `..`, `/`, `%2F`, Unicode, control characters, newlines,
300+ characters, upper case...) in an otherwise valid spec. The model either refuses it, or what the operator
makes of it is valid for Kubernetes: checked here with regexes written from Kubernetes' own rules
(apimachinery's validation package), never with the project's patterns, and always with `fullmatch` (Python's
`$` also matches before a trailing newline). The CRD must carry a pattern for each field and accept exactly
what the model accepts; the API server evaluates it with Go's regexp, which `go_pattern` reproduces.
"""

from __future__ import annotations

import copy
import functools
import re
import unicodedata
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from keycloak_operator.core import backups, children, keycloak_config, reconcile, versions
from keycloak_operator.core.bluegreen import backup_name
from keycloak_operator.core.cache_cluster import resolve_cache_cluster
from keycloak_operator.core.deployment import admin_secret_name, render_deployment
from keycloak_operator.core.replication.client_secret import client_secret_name
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.in_realm import client_resource
from keycloak_operator.core.replication.realm import smtp_password_ref
from keycloak_operator.core.replication.resources import (
    RealmTarget,
    realm_target,
    server_url,
)
from keycloak_operator.core.replication.servers import ServerPolicy, host_of, normalize_url
from keycloak_operator.kernel import names
from keycloak_operator.models import crd
from keycloak_operator.models.client import KeycloakClientSpec
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.kinds import REPLICATED
from keycloak_operator.models.realm import KeycloakRealmSpec
from keycloak_operator.shell import kube
from tests.unit import builders

FAST = settings(max_examples=100, deadline=None, derandomize=True, database=None)
# Tests run once per field (about 30 each): breadth comes from the fields, and HOSTILE is run whole.
PER_FIELD = settings(max_examples=50, deadline=None, derandomize=True, database=None)

# --- Kubernetes' rules, written out here (apimachinery/pkg/util/validation) ---------------------------------

_K8S_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_K8S_SUBDOMAIN = re.compile(rf"{_K8S_LABEL}(\.{_K8S_LABEL})*")
_K8S_DNS1123_LABEL = re.compile(_K8S_LABEL)
_K8S_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_K8S_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
_K8S_QUALIFIED_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_K8S_ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")  # IsEnvVarName (before relaxed validation)
_K8S_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_K8S_QUANTITY = re.compile(
    r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?"
)
_K8S_PORT_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
# Go's unicode.IsSpace, which strings.TrimSpace (the image check) uses.
_GO_SPACE = frozenset("\t\n\v\f\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | frozenset(
    chr(c) for c in range(0x2000, 0x200B)
)
# Container resources that need no limit to match the request (hugepages-* and extended resources do).
_K8S_STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def is_subdomain(v: object) -> bool:
    return isinstance(v, str) and len(v) <= 253 and _K8S_SUBDOMAIN.fullmatch(v) is not None


def is_dns1123_label(v: object) -> bool:
    return isinstance(v, str) and len(v) <= 63 and _K8S_DNS1123_LABEL.fullmatch(v) is not None


def is_dns1035_label(v: object) -> bool:
    return isinstance(v, str) and len(v) <= 63 and _K8S_DNS1035_LABEL.fullmatch(v) is not None


def is_label_value(v: object) -> bool:
    return isinstance(v, str) and len(v) <= 63 and _K8S_LABEL_VALUE.fullmatch(v) is not None


def is_qualified_name(v: object) -> bool:
    """A label or annotation key: an optional DNS subdomain prefix, '/', and a name of 63 characters."""
    if not isinstance(v, str):
        return False
    prefix, slash, name = v.rpartition("/")
    if slash and not (prefix and is_subdomain(prefix)):
        return False
    return len(name) <= 63 and _K8S_QUALIFIED_NAME.fullmatch(name) is not None


def is_env_name(v: object) -> bool:
    return isinstance(v, str) and _K8S_ENV_NAME.fullmatch(v) is not None


def is_config_key(v: object) -> bool:
    return isinstance(v, str) and len(v) <= 253 and _K8S_CONFIG_KEY.fullmatch(v) is not None


def is_quantity(v: object) -> bool:
    return isinstance(v, str) and _K8S_QUANTITY.fullmatch(v) is not None


def is_port_name(v: object) -> bool:  # IsValidPortName (IANA_SVC_NAME)
    return (
        isinstance(v, str)
        and len(v) <= 15
        and _K8S_PORT_NAME.fullmatch(v) is not None
        and "--" not in v
        and any(c.isalpha() for c in v)
    )


def is_extended_resource(v: str) -> bool:
    """IsExtendedResourceName: a domain-prefixed name outside kubernetes.io; it needs limits == requests."""
    return (
        "/" in v
        and "kubernetes.io/" not in v
        and not v.startswith("requests.")
        and is_qualified_name(f"requests.{v}")
    )


def is_image(v: object) -> bool:
    """What the API server checks of a container image: present, without leading or trailing space."""
    return isinstance(v, str) and bool(v) and v[0] not in _GO_SPACE and v[-1] not in _GO_SPACE


def problems_of_labels(where: str, labels: Mapping[str, Any]) -> list[str]:
    out = []
    for k, v in labels.items():
        if not is_qualified_name(k):
            out.append(f"{where}: label key {k!r}")
        if not is_label_value(v):
            out.append(f"{where}: label value {v!r} (key {k})")
    return out


# --- what the operator makes of a spec, and whether Kubernetes would take it -------------------------------

OWNER = children.Owner(name="kc", namespace="ns", uid="uid-1")
SECRETS = kube.Resource("", "v1", "secrets")
_NAME_RULE: dict[str, Callable[[object], bool]] = {
    "Deployment": is_subdomain,
    "ControllerRevision": is_subdomain,
    "Secret": is_subdomain,
    "Service": is_dns1035_label,
    "Backup": is_subdomain,
    "VolumeSnapshot": is_subdomain,
    "Ingress": is_subdomain,
    "NetworkPolicy": is_subdomain,
    "ServiceMonitor": is_subdomain,
}


def problems_of_object(obj: Mapping[str, Any]) -> list[str]:
    """Everything about one child object the API server would refuse (for the fields the operator sets)."""
    kind, meta = obj["kind"], obj["metadata"]
    where = f"{kind} {meta.get('name')!r}"
    out = []
    if not _NAME_RULE[kind](meta["name"]):
        out.append(f"{where}: metadata.name")
    if not is_dns1123_label(meta["namespace"]):
        out.append(f"{where}: metadata.namespace {meta['namespace']!r}")
    out += problems_of_labels(f"{where} metadata.labels", meta.get("labels") or {})
    out += [
        f"{where}: annotation key {k!r}" for k in meta.get("annotations") or {} if not is_qualified_name(k)
    ]
    for ref in meta.get("ownerReferences") or []:
        if not is_subdomain(ref["name"]):
            out.append(f"{where}: ownerReference name {ref['name']!r}")
    spec = obj.get("spec") or {}
    if kind == "Deployment":
        selector = spec["selector"]["matchLabels"]
        template = spec["template"]["metadata"]["labels"]
        out += problems_of_labels(f"{where} selector", selector)
        out += problems_of_labels(f"{where} template labels", template)
        if not selector.items() <= template.items():
            out.append(f"{where}: selector does not match the template's labels")
        pod = spec["template"]["spec"]
        containers = [*pod.get("initContainers", []), *pod["containers"]]
        for c in containers:
            out += problems_of_container(where, c)
        out += problems_of_volumes(where, pod.get("volumes", []), containers)
    elif kind == "Service":
        out += problems_of_labels(f"{where} selector", spec["selector"])
        out += [f"{where}: port name {p['name']!r}" for p in spec["ports"] if not is_port_name(p["name"])]
    elif kind == "Secret":
        out += [f"{where}: data key {k!r}" for k in obj.get("stringData") or {} if not is_config_key(k)]
    elif kind == "Backup":
        if not is_subdomain(spec["cluster"]["name"]):
            out.append(f"{where}: spec.cluster.name {spec['cluster']['name']!r}")
    elif kind == "VolumeSnapshot":
        for name in (spec["source"]["persistentVolumeClaimName"], spec.get("volumeSnapshotClassName", "x")):
            if not is_subdomain(name):
                out.append(f"{where}: {name!r} is not an object name")
    return out


def problems_of_volumes(
    where: str, volumes: list[Mapping[str, Any]], containers: list[Mapping[str, Any]]
) -> list[str]:
    """Volume and container names unique DNS labels, their sources object names, every mount of a volume
    that exists, at an absolute path (core/validation: ValidateVolumes, validateVolumeMounts)."""
    out = []
    names_ = [v["name"] for v in volumes]
    out += [f"{where}: volume name {n!r}" for n in names_ if not is_dns1123_label(n)]
    if len(set(names_)) != len(names_):
        out.append(f"{where}: volume names repeat: {names_}")
    container_names = [c["name"] for c in containers]
    if len(set(container_names)) != len(container_names):
        out.append(f"{where}: container names repeat: {container_names}")
    for v in volumes:
        source = (v.get("secret") or {}).get("secretName") or (v.get("configMap") or {}).get("name")
        if source is not None and not is_subdomain(source):
            out.append(f"{where}: volume {v['name']!r} source {source!r}")
    for c in containers:
        for m in c.get("volumeMounts", []):
            if m["name"] not in names_:
                out.append(f"{where}: {c['name']} mounts a volume that is not there: {m['name']!r}")
            if not m["mountPath"].startswith("/") or ":" in m["mountPath"]:
                out.append(f"{where}: {c['name']} mountPath {m['mountPath']!r}")
    return out


def problems_of_container(where: str, c: Mapping[str, Any]) -> list[str]:
    out = []
    if not is_dns1123_label(c["name"]):
        out.append(f"{where}: container name {c['name']!r}")
    if not is_image(c["image"]):
        out.append(f"{where}: image {c['image']!r}")
    for e in c.get("env", []):
        if not is_env_name(e["name"]):
            out.append(f"{where}: env name {e['name']!r}")
        ref = (e.get("valueFrom") or {}).get("secretKeyRef")
        if ref is not None and not (is_subdomain(ref["name"]) and is_config_key(ref["key"])):
            out.append(f"{where}: env {e['name']} secretKeyRef {ref!r}")
        if ref is None and not isinstance(e.get("value"), str):
            out.append(f"{where}: env {e['name']} has no string value")
    out += [f"{where}: port name {p['name']!r}" for p in c.get("ports", []) if not is_port_name(p["name"])]
    resources = c.get("resources") or {}
    limits = resources.get("limits") or {}
    for section in ("requests", "limits"):
        for key, value in (resources.get(section) or {}).items():
            if not is_quantity(value):
                out.append(f"{where}: resources.{section}[{key!r}] = {value!r} is not a quantity")
            if not is_qualified_name(key):
                out.append(f"{where}: resources.{section} key {key!r} is not a qualified name")
            elif key not in _K8S_STANDARD_CONTAINER_RESOURCES and not (
                is_extended_resource(key) and limits.get(key) == value
            ):
                out.append(f"{where}: resources.{section} key {key!r} is not a standard container resource")
    return out


def problems_of_address(namespace: str, name: str) -> list[str]:
    """The adapter's path for a Secret `name`: one segment, which unquotes to exactly the name."""
    try:
        path = SECRETS.path(namespace, name)
    except kube.ApiError:
        return [f"path for {name!r} refused"]
    ns_part, _, last = path.rpartition("/")
    if (
        last in ("", ".", "..")
        or urllib.parse.unquote(last) != name
        or ns_part != f"/api/v1/namespaces/{urllib.parse.quote(namespace, safe='')}/secrets"
    ):
        return [f"path {path!r} for {namespace!r}/{name!r}"]
    return []


def keycloak_children(spec: KeycloakSpec, owner: children.Owner = OWNER) -> list[dict[str, Any]]:
    """The objects the operator makes for a Keycloak, the way it makes them."""
    version = versions.version_of(spec).format()
    cache = resolve_cache_cluster(owner.name, spec.cache_isolation, spec.image)
    secret = admin_secret_name(owner, spec)
    objs = [
        render_deployment(owner, spec, image=spec.image, track="a", version=version),
        render_deployment(
            owner, spec, image=spec.image, track="b", version=version, green=True, recreate=True
        ),
        children.discovery_service(owner, "a", cache.name),
        children.discovery_service(owner, "b", cache.name, green=True),
        children.public_service(owner, "a", spec),
        children.admin_secret(owner, "generated"),
        children.controller_revision(owner, version, spec, 1),
    ]
    observed = builders.observed(
        spec, owner=owner, existing_secrets=frozenset(keycloak_config.referenced_secrets(spec, secret))
    )
    decision = reconcile.decide(spec, observed, now="2026-01-01T00:00:00Z")
    objs += decision.apply
    db = spec.database
    if db.cnpg is not None or (db.managed is not None and db.managed.pvc_name):
        name = backup_name(owner.name, spec.image, "2026-01-01T00:00:00Z")
        objs.append(backups.backup_object(owner, spec, name))
    return objs


def problems_of_keycloak(spec: KeycloakSpec, owner: children.Owner = OWNER) -> list[str]:
    out: list[str] = []
    for obj in keycloak_children(spec, owner):
        out += problems_of_object(obj)
    secret = admin_secret_name(owner, spec)
    for name in keycloak_config.referenced_secrets(spec, secret):
        out += problems_of_address(owner.namespace, name)
    db = spec.database.managed
    if db is not None and db.pvc_name:
        out += problems_of_address(owner.namespace, db.pvc_name)
    out += [f"realmNamespaces: {ns!r}" for ns in spec.realm_namespaces if not is_dns1123_label(ns)]
    return out


# --- realms and clients -------------------------------------------------------------------------------------

REALM_NS = "team"
ALLOW_LISTED = ServerPolicy(external_hosts=("sso.example.com",))


def k8s(kind: str, namespace: str, name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"namespace": namespace, "name": name, "uid": "u"}, "spec": spec}


def _keycloak_for(namespace: str) -> dict[str, Any]:
    return {
        "spec": {
            "image": "quay.io/keycloak/keycloak:26.0.0",
            "database": {"cnpg": {"clusterName": "db"}},
            "realmNamespaces": [REALM_NS],
        },
        "metadata": {"namespace": namespace},
    }


def problems_of_url(url: str) -> list[str]:
    """A server URL the operator would send an admin login to: one spelling, a plain http(s) URL, and the
    host the allow-list judges (host_of) is the host the HTTP client (httpx) connects to."""
    out = []
    if normalize_url(url) != url:
        out.append(f"url {url!r} is not a fixed point of normalize_url")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
        out.append(f"url {url!r} is not plain http(s) with a host")
    if parts.query or parts.fragment:
        out.append(f"url {url!r} has a query or fragment")
    try:
        client_host = httpx.URL(url).host
    except httpx.InvalidURL as e:
        return [*out, f"url {url!r}: the HTTP client refuses it ({e})"]
    if client_host.rstrip(".") != host_of(url):
        out.append(
            f"url {url!r}: the client connects to {client_host!r}, the allow-list judged {host_of(url)!r}"
        )
    return out


def problems_of_realm(obj: dict[str, Any]) -> list[str]:
    """`obj`'s spec is accepted by the model."""
    spec = KeycloakRealmSpec.model_validate(obj["spec"])
    ns = obj["metadata"]["namespace"]
    keycloaks = {}
    if spec.server.keycloak is not None:
        kc_ns = spec.server.keycloak.namespace or ns
        keycloaks[(kc_ns, spec.server.keycloak.name)] = _keycloak_for(kc_ns)
    target = realm_target(obj, keycloaks)
    out = []
    problem = target.resource.problem
    if spec.server.external is not None and normalize_url(spec.server.external.url) is None:
        if problem is None or problem.reason != "InvalidSpec" or target.credentials is not None:
            out.append(f"url {spec.server.external.url!r}: unusable but not refused ({problem})")
        return out
    if problem is not None:
        out.append(f"a valid realm got a problem: {problem}")
    if target.server is None or target.credentials is None:
        return [*out, "no server or credentials"]
    if server_url(obj, ServerPolicy()) != target.server.url:
        out.append(f"server_url and realm_target disagree: {target.server.url!r}")
    if spec.server.keycloak is not None and not names.is_keycloak_url(target.server.url):
        out.append(f"url {target.server.url!r} is not one of our Keycloaks' URLs")
    out += problems_of_url(target.server.url)
    creds = target.credentials
    if not is_dns1123_label(creds.namespace):
        out.append(f"credentials namespace {creds.namespace!r}")
    if not is_subdomain(creds.secret):
        out.append(f"credentials Secret {creds.secret!r}")
    out += problems_of_address(creds.namespace, creds.secret)
    smtp = smtp_password_ref(obj)  # read from the realm's own namespace, by this name
    if smtp is not None:
        out += problems_of_address(ns, smtp[0])
    realm = target.resource.natural_key
    if not realm or realm in (".", "..") or "/" in realm:
        out.append(f"realm name {realm!r} is not one Keycloak path segment")
    out += [f"clientNamespaces: {n!r}" for n in target.client_namespaces if not is_dns1123_label(n)]
    if spec.server.external is not None:  # an allow-list decides on the host the URL really names
        listed = realm_target(obj, {}, ALLOW_LISTED)
        allowed = listed.resource.problem is None
        if allowed != (host_of(target.server.url) == "sso.example.com"):
            out.append(f"allow-list judged {target.server.url!r} wrongly: allowed={allowed}")
        if not allowed and listed.credentials is not None:
            out.append("a Forbidden realm still names its admin Secret")
    return out


def problems_of_client(obj: dict[str, Any]) -> list[str]:
    """`obj`'s spec is accepted by the model."""
    spec = KeycloakClientSpec.model_validate(obj["spec"])
    ns = obj["metadata"]["namespace"]
    parent_ns = spec.realm.namespace or ns
    realm_obj = k8s(
        names.REALM_KIND,
        parent_ns,
        spec.realm.name,
        {
            "server": {"external": {"url": "https://sso.example.com", "adminSecret": {"name": "adm"}}},
            "clientNamespaces": [ns],
        },
    )
    realms: dict[ObjectKey, RealmTarget] = {
        ObjectKey(names.REALM_KIND, parent_ns, spec.realm.name): realm_target(realm_obj, {})
    }
    resource = client_resource(obj, realms)
    out = []
    if resource.problem is not None:
        out.append(f"a valid client got a problem: {resource.problem}")
    if resource.parent is None or not (
        is_dns1123_label(resource.parent.namespace) and is_subdomain(resource.parent.name)
    ):
        out.append(f"parent {resource.parent!r}")
    if resource.natural_key != spec.client_id:
        out.append(f"client id {spec.client_id!r} became {resource.natural_key!r}")
    secret = client_secret_name(obj)
    if secret is None or not is_subdomain(secret):
        out.append(f"client Secret name {secret!r}")
    else:
        out += problems_of_address(ns, secret)
    out += problems_of_labels("client Secret", names.client_secret_labels(obj["metadata"]["name"]))
    return out


# --- the fields -------------------------------------------------------------------------------------------

KC_BASE: dict[str, Any] = {
    "image": "quay.io/keycloak/keycloak:26.0.0",
    "database": {"cnpg": {"clusterName": "db", "database": "app"}},
    "adminSecret": {"name": "admin"},
    "env": [{"name": "EXTRA", "value": "v"}],
    "realmNamespaces": ["team"],
    # autoSuffix: the image's tag flows into a label too (clusterName, when a case sets it, wins).
    "cacheIsolation": {"autoSuffix": True},
    "resources": {"requests": {"cpu": "100m"}, "limits": {"memory": "1Gi"}},
    "truststores": [
        {"name": "corporate", "secret": {"name": "corp-ca"}},
        {"name": "partners", "configMap": {"name": "partner-cas"}},
    ],
    "extensions": [{"name": "audit", "image": "registry.example.com/audit:1", "path": "/providers"}],
}
_PG = {"host": "pg", "database": "keycloak", "credentialsSecret": {"name": "pg-credentials"}}
KC_MANAGED = {
    **KC_BASE,
    "database": {"managed": {**_PG, "pvcName": "pg-data", "volumeSnapshotClassName": "csi-snapshots"}},
}
KC_EXTERNAL = {**KC_BASE, "database": {"external": _PG}}
REALM_ON_KC = {
    "server": {"keycloak": {"name": "kc", "namespace": "kc-ns"}},
    "realmName": "main",
    "clientNamespaces": ["apps"],
}
REALM_EXTERNAL = {
    "server": {"external": {"url": "https://sso.example.com", "adminSecret": {"name": "adm"}}},
    "realmName": "main",
}
REALM_SMTP = {
    **REALM_ON_KC,
    "smtp": {
        "host": "smtp.example.com",
        "from": "sso@example.com",
        "auth": {"user": "mailer", "passwordSecret": {"name": "smtp", "key": "password"}},
    },
}
CLIENT_BASE = {
    "realm": {"name": "main", "namespace": "home"},
    "clientId": "web",
    "secretName": "web-secret",
    "redirectUris": ["https://app.example.com/callback"],
}


@dataclass(frozen=True)
class Case:
    id: str
    model: type[BaseModel]
    base: Mapping[str, Any]
    path: tuple[str | int, ...]  # where the value goes in the spec; "*" for a key of the mapping before it

    def spec_with(self, value: str) -> dict[str, Any]:
        spec = copy.deepcopy(dict(self.base))
        node: Any = spec
        for step in self.path[:-2] if self.path[-1] == "*" else self.path[:-1]:
            node = node[step]
        if self.path[-1] == "*":
            node[self.path[-2]] = {value: "1"}
        else:
            node[self.path[-1]] = value
        return spec

    def accepts(self, value: str) -> bool:
        try:
            self.model.model_validate(self.spec_with(value))
        except ValidationError:
            return False
        return True

    def problems(self, value: str) -> list[str]:
        """What is invalid about the objects made from the spec holding `value`; [] when refused."""
        spec = self.spec_with(value)
        try:
            parsed = self.model.model_validate(spec)
        except ValidationError:
            return []
        if isinstance(parsed, KeycloakSpec):
            return problems_of_keycloak(parsed)
        if isinstance(parsed, KeycloakRealmSpec):
            return problems_of_realm(k8s(names.REALM_KIND, REALM_NS, "main", spec))
        return problems_of_client(k8s(names.CLIENT_KIND, "apps", "web", spec))


CASES = [
    Case("adminSecret.name", KeycloakSpec, KC_BASE, ("adminSecret", "name")),
    Case("database.cnpg.clusterName", KeycloakSpec, KC_BASE, ("database", "cnpg", "clusterName")),
    Case("database.cnpg.database", KeycloakSpec, KC_BASE, ("database", "cnpg", "database")),
    Case("database.managed.host", KeycloakSpec, KC_MANAGED, ("database", "managed", "host")),
    Case("database.managed.database", KeycloakSpec, KC_MANAGED, ("database", "managed", "database")),
    Case(
        "database.managed.credentialsSecret.name",
        KeycloakSpec,
        KC_MANAGED,
        ("database", "managed", "credentialsSecret", "name"),
    ),
    Case("database.managed.pvcName", KeycloakSpec, KC_MANAGED, ("database", "managed", "pvcName")),
    Case(
        "database.managed.volumeSnapshotClassName",
        KeycloakSpec,
        KC_MANAGED,
        ("database", "managed", "volumeSnapshotClassName"),
    ),
    Case("database.external.host", KeycloakSpec, KC_EXTERNAL, ("database", "external", "host")),
    Case("database.external.database", KeycloakSpec, KC_EXTERNAL, ("database", "external", "database")),
    Case(
        "database.external.credentialsSecret.name",
        KeycloakSpec,
        KC_EXTERNAL,
        ("database", "external", "credentialsSecret", "name"),
    ),
    Case("env[].name", KeycloakSpec, KC_BASE, ("env", 0, "name")),
    Case("realmNamespaces[]", KeycloakSpec, KC_BASE, ("realmNamespaces", 0)),
    Case("cacheIsolation.clusterName", KeycloakSpec, KC_BASE, ("cacheIsolation", "clusterName")),
    Case("image", KeycloakSpec, KC_BASE, ("image",)),
    Case("resources.requests.cpu", KeycloakSpec, KC_BASE, ("resources", "requests", "cpu")),
    Case("resources.limits.memory", KeycloakSpec, KC_BASE, ("resources", "limits", "memory")),
    Case("truststores[].name", KeycloakSpec, KC_BASE, ("truststores", 0, "name")),
    Case("truststores[].secret.name", KeycloakSpec, KC_BASE, ("truststores", 0, "secret", "name")),
    Case("truststores[].configMap.name", KeycloakSpec, KC_BASE, ("truststores", 1, "configMap", "name")),
    Case("extensions[].name", KeycloakSpec, KC_BASE, ("extensions", 0, "name")),
    Case("extensions[].image", KeycloakSpec, KC_BASE, ("extensions", 0, "image")),
    Case("extensions[].path", KeycloakSpec, KC_BASE, ("extensions", 0, "path")),
    Case("server.keycloak.name", KeycloakRealmSpec, REALM_ON_KC, ("server", "keycloak", "name")),
    Case("server.keycloak.namespace", KeycloakRealmSpec, REALM_ON_KC, ("server", "keycloak", "namespace")),
    Case("server.external.url", KeycloakRealmSpec, REALM_EXTERNAL, ("server", "external", "url")),
    Case(
        "server.external.adminSecret.name",
        KeycloakRealmSpec,
        REALM_EXTERNAL,
        ("server", "external", "adminSecret", "name"),
    ),
    Case("realmName", KeycloakRealmSpec, REALM_ON_KC, ("realmName",)),
    Case("realmName (external)", KeycloakRealmSpec, REALM_EXTERNAL, ("realmName",)),
    Case("clientNamespaces[]", KeycloakRealmSpec, REALM_ON_KC, ("clientNamespaces", 0)),
    Case(
        "smtp.auth.passwordSecret.name",
        KeycloakRealmSpec,
        REALM_SMTP,
        ("smtp", "auth", "passwordSecret", "name"),
    ),
    Case("realm.name", KeycloakClientSpec, CLIENT_BASE, ("realm", "name")),
    Case("realm.namespace", KeycloakClientSpec, CLIENT_BASE, ("realm", "namespace")),
    Case("secretName", KeycloakClientSpec, CLIENT_BASE, ("secretName",)),
    Case("clientId", KeycloakClientSpec, CLIENT_BASE, ("clientId",)),
    Case("redirectUris[]", KeycloakClientSpec, CLIENT_BASE, ("redirectUris", 0)),
]
# Keys of a mapping: no pattern can say anything about them in a structural schema, so only the objects made
# from them are checked.
KEY_CASES = [
    Case("resources.requests{key}", KeycloakSpec, KC_BASE, ("resources", "requests", "*")),
    Case("resources.limits{key}", KeycloakSpec, KC_BASE, ("resources", "limits", "*")),
]
CASE_IDS = [c.id for c in CASES]

# --- hostile strings ----------------------------------------------------------------------------------------

HOSTILE = (
    "..",
    ".",
    "../../team-b/secrets/sso-admin",
    "a/b",
    "a%2Fb",
    "%2e%2e",
    "A",
    "UPPER",
    "\u00fcn\u00efc\u00f6d\u00e9",
    "a\nb",
    "a\rb",
    "a\n",
    "db\n",
    "x" * 300,
    "-a",
    "a-",
    "1kc",
    "my.kc",
    "A=B",
    "",
    " a",
    "a ",
    "a b",
    "a:b",
    "a@b",
    "a?b",
    "a#b",
    "\x00",
    "a\x00b",
    "a\tb",
    "a\x1bb",
    "a\x7fb",
    "a..b",
    "a_b",
    "_a",
    "a;b",
    "a&b",
    "${HOME}",
    "$(id)",
    "kc\u2024evil",  # ONE DOT LEADER, a dot look-alike
    "\u0430dmin",  # Cyrillic a
    # whitespace that is not ASCII: Go's \s is ASCII only, Rust's (pydantic) and Python's are Unicode
    "a\u00a0b",
    "a\x0bb",
    "a\x85b",
    "a\u2028b",
    "a\u3000b",
    "a\x1cb",
    # boundaries
    "a" * 47,
    "a" * 48,
    "a" * 50,
    "a" * 51,
    "a" * 63,
    "a" * 64,
    "a" * 253,
    "a" * 254,
    ".".join(["a" * 63] * 4),
    # quantities
    "1",
    "0.5",
    "100m",
    "1Gi",
    "1e3",
    "-1",
    "+1",
    "1.",
    ".5",
    "0x10",
    "1 Gi",
    "1Gi\n",
    "1GiB",
    "Infinity",
    "NaN",
    "9" * 64,
    # URLs
    "https://sso.example.com",
    "HTTP://SSO.EXAMPLE.COM:80/",
    "https://sso.example.com./auth/",
    "http://sso.example.com.evil.com",
    "https://user:pw@sso.example.com",
    "https://sso.example.com?x=1",
    "https://sso.example.com#f",
    "https://sso.example.com/a/../b",
    "https://sso.example.com/%2e%2e/%2F",
    "https://sso.example.com/a\x00b",
    "https://sso.example.com/a\x1bb",
    "https://sso.example.com/\u00fc",
    "https://sso.example.com/a\\b",
    "http://[::1]:8080",
    "http://a[::1]c",
    "http://[sso.example.com]",
    "http://sso.example.com]",
    "http://:80",
    "http://..",
    "http://-",
    "http://sso.example.com:99999",
    "http://sso.example.com:0",
    "http://sso.example.com:+80",
    "file:///etc/passwd",
    "javascript:alert(1)",
    "//sso.example.com",
    "https://sso.example.com/\u00a0",
)

# Generated text: any Unicode (control characters included, surrogates cannot be JSON), near-miss names,
# env names, URLs and quantities.
hostile_text = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=40),
    st.text("aZ09-._/%:@?#=\n\r\t \x00\u00a0\u00fc", max_size=40),
    st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,70}[a-z0-9])?(\n|\.|-|A|_)?", fullmatch=True),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_.-]{0,20}", fullmatch=True),
    st.from_regex(r"https?://[a-zA-Z0-9.:\[\]@-]{0,24}(/[-a-z./%?#@\\ \x00]{0,16})?", fullmatch=True),
    st.from_regex(r"[-+]?[0-9]{0,3}(\.[0-9]{0,3})?(m|Ki|Mi|Gi|e3|E|k|K|i)?", fullmatch=True),
    st.integers(240, 320).map(lambda n: "a" * n),
)


# --- 1. every hostile value is refused, or makes valid objects --------------------------------------------


@pytest.mark.parametrize("case", CASES + KEY_CASES, ids=[c.id for c in CASES + KEY_CASES])
def test_every_hostile_sample_is_refused_or_makes_valid_objects(case: Case) -> None:
    found = {repr(v): p for v in HOSTILE if (p := case.problems(v))}
    assert not found, f"spec.{case.id} accepted values that make invalid objects: {found}"


@pytest.mark.parametrize("case", CASES + KEY_CASES, ids=[c.id for c in CASES + KEY_CASES])
@PER_FIELD
@given(value=hostile_text)
def test_generated_hostile_text_is_refused_or_makes_valid_objects(case: Case, value: str) -> None:
    assert case.problems(value) == [], f"spec.{case.id} = {value!r}"


def test_the_base_specs_are_valid_and_make_valid_objects() -> None:
    """Otherwise every refusal above would prove nothing."""
    for case in CASES + KEY_CASES:
        assert case.model.model_validate(case.base) is not None
    for base in (KC_BASE, KC_MANAGED, KC_EXTERNAL):
        assert problems_of_keycloak(KeycloakSpec.model_validate(base)) == []
        assert len(keycloak_children(KeycloakSpec.model_validate(base))) >= 8
    assert problems_of_realm(k8s(names.REALM_KIND, REALM_NS, "main", REALM_ON_KC)) == []
    assert problems_of_realm(k8s(names.REALM_KIND, REALM_NS, "main", REALM_EXTERNAL)) == []
    assert problems_of_client(k8s(names.CLIENT_KIND, "apps", "web", CLIENT_BASE)) == []


@pytest.mark.parametrize(
    ("case", "value"),
    [
        ("adminSecret.name", "../../team-b/secrets/sso-admin"),
        ("adminSecret.name", "a%2Fb"),
        ("database.cnpg.clusterName", "my.kc"),
        ("database.managed.host", "pg/evil?sslmode=disable"),
        ("env[].name", "A=B"),
        ("realmNamespaces[]", "UPPER"),
        ("image", "a b"),
        ("resources.requests.cpu", "1 Gi"),
        ("server.keycloak.name", "1kc"),
        ("server.keycloak.namespace", ".."),
        ("server.external.url", "https://user:pw@sso.example.com"),
        ("server.external.url", "file:///etc/passwd"),
        ("realmName", ".."),
        ("secretName", "a/b"),
        ("clientId", "a\nb"),
        ("redirectUris[]", "a b"),
    ],
)
def test_plainly_hostile_values_are_refused_by_the_model(case: str, value: str) -> None:
    """The refusals the tests above rely on actually happen (the tests would also pass if nothing was
    ever accepted for lack of a valid base)."""
    assert not {c.id: c for c in CASES}[case].accepts(value)


def test_env_values_may_hold_anything_and_reach_the_pod_verbatim() -> None:
    for value in (
        "a\nb",
        "line1\r\nline2",
        "../../x",
        "${HOME}",
        "\u00fcn\u00efc\u00f6d\u00e9",
        "x" * 300,
        "",
    ):
        spec = KeycloakSpec.model_validate({**KC_BASE, "env": [{"name": "EXTRA", "value": value}]})
        assert problems_of_keycloak(spec) == []
        container = render_deployment(OWNER, spec, image=spec.image, track="a", version="v")["spec"][
            "template"
        ]["spec"]["containers"][0]
        assert {"name": "EXTRA", "value": value} in container["env"]


@FAST
@given(name=st.one_of(hostile_text, st.from_regex(r"[a-z]([-a-z0-9]{0,50}[a-z0-9])?", fullmatch=True)))
def test_any_keycloak_name_the_crd_admits_makes_valid_children(name: str) -> None:
    """metadata.name of a Keycloak: the API server's own rule (a DNS subdomain) and the CRD's CEL rules."""
    admitted = is_subdomain(name) and all(
        _cel_rule_admits(r["rule"], name) for r in crd_schema(KeycloakSpec)["x-kubernetes-validations"]
    )
    if admitted:
        owner = children.Owner(name=name, namespace="ns", uid="u")
        assert problems_of_keycloak(KeycloakSpec.model_validate(KC_BASE), owner) == []


def _cel_rule_admits(rule: str, name: str) -> bool:
    """The two metadata.name rules of the Keycloak CRD, evaluated as CEL would (matches() is RE2)."""
    if m := re.fullmatch(r"size\(self\.metadata\.name\) <= ([0-9]+)", rule):
        return len(name) <= int(m.group(1))
    if m := re.fullmatch(r"self\.metadata\.name\.matches\('(.*)'\)", rule):
        return re.search(go_pattern(m.group(1)), name) is not None
    raise AssertionError(f"an unknown rule on metadata.name: {rule}")


@FAST
@given(
    name=st.one_of(
        st.from_regex(r"[a-z0-9]([-a-z0-9]{0,250}[a-z0-9])?", fullmatch=True),
        st.integers(230, 253).map(lambda n: "c" * n),
    )
)
def test_the_default_client_secret_name_is_an_object_name_for_any_client_name(name: str) -> None:
    """A KeycloakClient's metadata.name is any DNS subdomain; its default Secret is `<name>-client-secret`."""
    obj = k8s(names.CLIENT_KIND, "apps", name, {"realm": {"name": "main"}, "clientId": "web"})
    secret = client_secret_name(obj)
    assert secret is not None and is_subdomain(secret), f"{len(name)}-character client: {secret!r}"


@pytest.mark.parametrize("text", HOSTILE)
def test_label_value_gives_a_kubernetes_label_value_for_every_hostile_sample(text: str) -> None:
    """Every label value the operator sets from user text (instance, cache cluster) goes through it."""
    assert is_label_value(names.label_value(text)), f"label_value({text!r}) = {names.label_value(text)!r}"


@FAST
@given(text=hostile_text)
def test_label_value_always_gives_a_kubernetes_label_value(text: str) -> None:
    assert is_label_value(names.label_value(text)), f"label_value({text!r}) = {names.label_value(text)!r}"


@pytest.mark.parametrize("name", ["", ".", ".."])
def test_the_adapter_refuses_dot_segments_whatever_the_model_let_through(name: str) -> None:
    with pytest.raises(kube.ApiError):
        SECRETS.path("ns", name)
    with pytest.raises(kube.ApiError):
        SECRETS.path(name, "x")


@pytest.mark.parametrize("name", [v for v in HOSTILE if v not in ("", ".", "..")])
def test_the_adapter_keeps_any_other_name_one_segment(name: str) -> None:
    assert problems_of_address("ns", name) == []


# --- 2. the CRD says the same as the model -----------------------------------------------------------------


def go_pattern(pattern: str) -> str:
    """A JSON-schema pattern as Go's regexp (the API server, CEL's matches()) reads it, for Python's re:
    Go's `$` is the end of the text (Python's also matches before a final newline) and Go's `\\s` is
    `[\\t\\n\\f\\r ]` (Python's and Rust's are Unicode). Non-capturing groups `(?:` read the same in all
    three; constructs with other differences are refused."""
    assert pattern.endswith("$") and "$" not in pattern[:-1], pattern
    out = pattern[:-1].replace("[^\\s", "[^\\t\\n\\f\\r ").replace("\\S", "[^\\t\\n\\f\\r ]") + r"\Z"
    assert not re.search(r"\\[sSwWdDbB]|\(\?(?!:)", out), f"no Go equivalent written for {pattern}"
    return out


def crd_admits(schema: Mapping[str, Any], value: str) -> bool:
    """A string schema of a CRD, evaluated as the API server does (lengths count code points, as Go runes).
    CEL rules are not evaluated: the one on env items (reserved names) refuses more than the model does, and
    for those the operator reports the Keycloak Degraded instead."""
    assert schema.get("type") == "string", schema
    if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", len(value)):
        return False
    return "pattern" not in schema or re.search(go_pattern(schema["pattern"]), value) is not None


@functools.cache
def crd_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The openAPIV3Schema of the CRD generated for `model` (generated once: it takes milliseconds)."""
    if model is KeycloakSpec:
        return crd.keycloak_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    kind = next(k for k in REPLICATED if k.spec is model)
    return crd.replicated_crd(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def crd_schema_of(case: Case) -> dict[str, Any]:
    node = crd_schema(case.model)["properties"]["spec"]
    for step in case.path:
        if isinstance(step, int):
            node = node["items"]
        elif step in node.get("properties", {}):
            node = node["properties"][step]
        else:
            node = node["additionalProperties"]
    return node


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_the_crd_carries_a_pattern_and_a_size_cap_for_every_field(case: Case) -> None:
    schema = crd_schema_of(case)
    assert schema.get("pattern"), f"spec.{case.id} has no pattern in the CRD"
    assert schema.get("maxLength"), f"spec.{case.id} has no maxLength in the CRD"


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_the_crd_admits_exactly_the_hostile_samples_the_model_accepts(case: Case) -> None:
    schema = crd_schema_of(case)
    differ = {
        repr(v): "CRD admits, model refuses" if crd_admits(schema, v) else "model accepts, CRD refuses"
        for v in HOSTILE
        if crd_admits(schema, v) != case.accepts(v)
    }
    assert not differ, f"spec.{case.id}: CRD pattern {schema['pattern']!r} and the model disagree: {differ}"


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@PER_FIELD
@given(value=hostile_text)
def test_the_crd_admits_exactly_the_generated_text_the_model_accepts(case: Case, value: str) -> None:
    schema = crd_schema_of(case)
    assert crd_admits(schema, value) == case.accepts(value), (
        f"spec.{case.id} = {value!r}: CRD {schema['pattern']!r} admits={crd_admits(schema, value)}"
    )


def test_go_pattern_reads_as_go_does() -> None:
    assert re.search(go_pattern(r"^[a-z]+$"), "abc\n") is None  # Python's own `$` would match
    assert re.search(go_pattern(r"^\S+$"), "a\u00a0b") is not None  # Go's \S: NBSP is not space
    assert re.search(go_pattern(r"^\S+$"), "a\tb") is None
    assert re.search(go_pattern(r"^x(/[^\s?]*)?$"), "x/a\x0bb") is not None
    assert re.search(go_pattern(r"^x(/[^\s?]*)?$"), "x/a b") is None


def test_hostile_values_are_unicode_clean_test_data() -> None:
    """Surrogates cannot travel in JSON; every sample must be something a user could really send."""
    assert not [v for v in HOSTILE if any(unicodedata.category(c) == "Cs" for c in v)]


def test_the_kubernetes_rules_written_here_refuse_what_kubernetes_refuses() -> None:
    """The oracle itself: a rule that admitted everything would make every test above pass."""
    assert is_subdomain("a.b-c") and not any(map(is_subdomain, ["A", "a/b", "..", "a\n", "-a", "a" * 254]))
    assert is_dns1123_label("1kc") and not any(map(is_dns1123_label, ["my.kc", "a" * 64, "a\n"]))
    assert is_dns1035_label("kc") and not any(map(is_dns1035_label, ["1kc", "my.kc", "kc\n"]))
    assert (
        is_label_value("") and is_label_value("A.b_c") and not any(map(is_label_value, ["a\n", "-a", "a/b"]))
    )
    assert is_qualified_name("kcop.dev/track") and not any(map(is_qualified_name, ["/a", "A/b", "a/", "a b"]))
    assert is_env_name("KC_DB") and not any(map(is_env_name, ["A=B", "1A", "a b", "", "a\n"]))
    assert is_quantity("100m") and is_quantity("1e3") and not any(map(is_quantity, ["1 Gi", "1GiB", "x", ""]))
    assert is_port_name("http") and not any(map(is_port_name, ["8080", "a--b", "management-port-x"]))
    assert is_image("quay.io/k:1") and not any(map(is_image, ["", " a", "a\u00a0", "a\n"]))
    assert is_extended_resource("example.com/gpu") and not is_extended_resource("kubernetes.io/gpu")
    assert problems_of_address("ns", "../../team-b/secrets/x") == []
    assert SECRETS.path("ns", "a/b").endswith("/secrets/a%2Fb")
