"""The one Kubernetes adapter: plain JSON over kubernetes_asyncio's authenticated HTTP client.

Objects travel as dicts (the same shape the pure core builds and reads). Writes use server-side apply under
one field manager. Every call is async and shares kopf's event loop.
"""

from __future__ import annotations

import builtins
import functools
import json
import logging
import re
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aiohttp
from kubernetes_asyncio import client, config

from keycloak_operator.core import http_route, monitoring
from keycloak_operator.kernel import names, patterns
from keycloak_operator.models import kinds
from keycloak_operator.shell import settings

log = logging.getLogger(__name__)

# aiohttp's default is no timeout at all: a request lost on the way would stall its work queue key forever.
REQUEST_TIMEOUT_S = 60.0


NAMESPACE_NOT_FOUND = "NamespaceNotFound"  # our name for a 404 whose details name the namespace


class ApiError(Exception):
    """A request the API server refused; `status` is the HTTP status, `causes` the reasons it gave."""

    def __init__(self, status: int, message: str, causes: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.causes = causes

    @property
    def namespace_terminating(self) -> bool:
        """Refused because the namespace is being deleted, or is gone already (a pass that read its object
        just before the namespace's last step): nothing to write there any more, not a fault."""
        return "NamespaceTerminating" in self.causes or NAMESPACE_NOT_FOUND in self.causes


@dataclass(frozen=True)
class Resource:
    group: str  # "" for the core group
    version: str
    plural: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        """Every user-derived part is one quoted segment: a name of `../../team-b/secrets/x` (or `..`)
        can never climb out of its namespace, whatever the CRD let through and however the URL is later
        normalised."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        parts = [base]
        if namespace is not None:
            parts.append(f"namespaces/{segment(namespace)}")
        parts.append(self.plural)
        if name is not None:
            parts.append(segment(name))
        if sub is not None:
            parts.append(segment(sub))
        return "/".join(parts)


def segment(value: str) -> str:
    """One URL path segment. '.', '..' and '' are refused here, as the API server would refuse such a name
    (400), so callers handle them like any refusal: quoting leaves dots as they are, and a client
    normalising the path would resolve them."""
    if value in ("", ".", ".."):
        raise ApiError(400, f"not a valid object name or namespace: {value!r}")
    return urllib.parse.quote(value, safe="")


DEPLOYMENTS = Resource("apps", "v1", "deployments")
CONTROLLER_REVISIONS = Resource("apps", "v1", "controllerrevisions")
SERVICES = Resource("", "v1", "services")
ENDPOINT_SLICES = Resource("discovery.k8s.io", "v1", "endpointslices")
POD_DISRUPTION_BUDGETS = Resource("policy", "v1", "poddisruptionbudgets")
INGRESSES = Resource("networking.k8s.io", "v1", "ingresses")
NETWORK_POLICIES = Resource("networking.k8s.io", "v1", "networkpolicies")
SERVICE_MONITORS = Resource(monitoring.GROUP, monitoring.VERSION, monitoring.PLURAL)
HTTP_ROUTES = Resource(http_route.GROUP, http_route.VERSION, http_route.PLURAL)
SECRETS = Resource("", "v1", "secrets")
CONFIG_MAPS = Resource("", "v1", "configmaps")
EVENTS = Resource("", "v1", "events")
NAMESPACES = Resource("", "v1", "namespaces")
KEYCLOAKS = Resource(names.GROUP, names.VERSION, names.KEYCLOAK_PLURAL)
# Each replicated kind's resource, by kind (models/kinds.py).
REPLICATED: Final[Mapping[str, Resource]] = {
    k.kind: Resource(names.GROUP, names.VERSION, k.plural) for k in kinds.REPLICATED
}
CNPG_BACKUPS = Resource("postgresql.cnpg.io", "v1", "backups")
CNPG_CLUSTERS = Resource("postgresql.cnpg.io", "v1", "clusters")
VOLUME_SNAPSHOTS = Resource("snapshot.storage.k8s.io", "v1", "volumesnapshots")
JOBS = Resource("batch", "v1", "jobs")
PODS = Resource("", "v1", "pods")

_BY_KIND = {
    ("apps/v1", "Deployment"): DEPLOYMENTS,
    ("apps/v1", "ControllerRevision"): CONTROLLER_REVISIONS,
    ("v1", "Service"): SERVICES,
    ("policy/v1", "PodDisruptionBudget"): POD_DISRUPTION_BUDGETS,
    ("networking.k8s.io/v1", "Ingress"): INGRESSES,
    ("networking.k8s.io/v1", "NetworkPolicy"): NETWORK_POLICIES,
    (SERVICE_MONITORS.api_version, monitoring.KIND): SERVICE_MONITORS,
    (HTTP_ROUTES.api_version, http_route.KIND): HTTP_ROUTES,
    ("v1", "Secret"): SECRETS,
    ("v1", "Event"): EVENTS,
    (names.API_VERSION, names.KEYCLOAK_KIND): KEYCLOAKS,
    ("postgresql.cnpg.io/v1", "Backup"): CNPG_BACKUPS,
    ("postgresql.cnpg.io/v1", "Cluster"): CNPG_CLUSTERS,
    ("snapshot.storage.k8s.io/v1", "VolumeSnapshot"): VOLUME_SNAPSHOTS,
    ("batch/v1", "Job"): JOBS,
}


SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


@functools.cache
def operator_namespace() -> str | None:
    """The namespace the operator runs in: KCOP_OPERATOR_NAMESPACE (the chart sets it from the downward
    API), else the mounted ServiceAccount's; None outside a cluster (no pod a NetworkPolicy could name)."""
    text = settings.operator_namespace()
    if not text:
        try:
            text = SERVICE_ACCOUNT_NAMESPACE.read_text().strip()
        except OSError:
            return None
    if len(text) > patterns.LABEL_MAX or not re.fullmatch(patterns.DNS1123_LABEL, text):
        log.warning("operator namespace %r is not a namespace name: NetworkPolicies will not name it", text)
        return None
    return text


def resource_of(obj: dict[str, Any]) -> Resource:
    return _BY_KIND[(obj["apiVersion"], obj["kind"])]


def env_proxy(server: str) -> str | None:
    """The HTTP proxy the environment names for the API server, if any (HTTPS_PROXY, NO_PROXY...)."""
    url = urllib.parse.urlsplit(server)
    if url.hostname is None or urllib.request.proxy_bypass(url.hostname):
        return None
    return urllib.request.getproxies().get(url.scheme)


def _without_per_request_env_lookups(api: client.ApiClient) -> aiohttp.ClientSession:
    """kubernetes_asyncio's session trusts the environment, so aiohttp looks up proxies and parses ~/.netrc in
    a thread on every request: a sixth of the operator's busy CPU with 50 upgrades at once (py-spy). Resolve
    the proxy once and send through a session that does not look again. Returns the original session, which
    still owns the connection pool and is closed last."""
    rest = api.rest_client
    original: aiohttp.ClientSession = rest.pool_manager
    if rest.proxy is None:
        rest.proxy = env_proxy(api.configuration.host)
    rest.pool_manager = aiohttp.ClientSession(
        connector=original.connector,
        connector_owner=False,
        trust_env=False,
        read_bufsize=2**21,  # as kubernetes_asyncio sets it: large objects in one read
    )
    return original


class Kube:
    def __init__(self, api: client.ApiClient) -> None:
        self.api = api
        self._pool_owner = _without_per_request_env_lookups(api)

    @classmethod
    async def connect(cls, connections: int | None = None) -> Kube:
        """Same credentials as kopf: in-cluster service account, else the current kubeconfig.
        `connections`: the most connections to the API server at once (None: the client's default, 100)."""
        try:
            config.load_incluster_config()
        except config.ConfigException:
            await config.load_kube_config()
        configuration = client.Configuration.get_default_copy()
        if connections is not None:
            configuration.connection_pool_maxsize = connections
        return cls(client.ApiClient(configuration))

    async def close(self) -> None:
        await self.api.close()
        await self._pool_owner.close()

    async def _call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: list[tuple[str, Any]] | None = None,
        content_type: str = "application/json",
    ) -> Any:
        response = await self.api.call_api(
            path,
            method,
            query_params=query or [],
            header_params={"Content-Type": content_type, "Accept": "application/json"},
            body=body,
            auth_settings=["BearerToken"],
            response_types_map={},
            _preload_content=False,
            _request_timeout=REQUEST_TIMEOUT_S,
        )
        raw = await response.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            # Not JSON: the API server's plain "404 page not found" for a kind it does not serve (a CRD
            # not installed), or a proxy's error page. Only an error may be that.
            if response.status < 400:
                raise
            body = {"message": raw[:200].decode(errors="replace").strip()}
        if response.status >= 400:
            message = body.get("message", "") if isinstance(body, dict) else ""
            details = (body.get("details") or {}) if isinstance(body, dict) else {}
            causes = tuple(str(c.get("reason", "")) for c in details.get("causes") or [])
            if response.status == 404 and details.get("kind") == "namespaces":
                causes += (NAMESPACE_NOT_FOUND,)  # a write into a namespace that is gone
            raise ApiError(response.status, f"{method} {path}: {response.status} {message}", causes)
        return body

    async def get(self, res: Resource, namespace: str | None, name: str) -> dict[str, Any] | None:
        try:
            result: dict[str, Any] = await self._call("GET", res.path(namespace, name))
            return result
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    async def serves(self, res: Resource) -> bool:
        """Whether the API server serves the resource now (API discovery, which every authenticated client
        may read): a CRD installed and established, or not."""
        base = f"/apis/{res.group}/{res.version}" if res.group else f"/api/{res.version}"
        try:
            found = await self._call("GET", base)
        except ApiError as e:
            if e.status in (404, 503):  # no such group version; an aggregated API not available
                return False
            raise
        return any(r.get("name") == res.plural for r in (found or {}).get("resources", []) or [])

    async def list(
        self,
        res: Resource,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        query = [("labelSelector", label_selector)] if label_selector else []
        if field_selector:
            query.append(("fieldSelector", field_selector))
        result = await self._call("GET", res.path(namespace), query=query)
        return list(result.get("items", []))

    async def list_page(
        self, res: Resource, namespace: str | None, *, limit: int, token: str | None = None
    ) -> tuple[builtins.list[dict[str, Any]], str | None]:
        """One page of a LIST (Kubernetes' chunking: `limit`, and the `continue` token of the page before):
        its items and the token of the next page, None after the last. A token that expired answers 410."""
        query: list[tuple[str, Any]] = [("limit", limit)]
        if token:
            query.append(("continue", token))
        result = await self._call("GET", res.path(namespace), query=query)
        following = (result.get("metadata") or {}).get("continue")
        return list(result.get("items") or []), following if isinstance(
            following, str
        ) and following else None

    async def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply with force: the operator owns every field it sets on its children."""
        res = resource_of(obj)
        meta = obj["metadata"]
        result: dict[str, Any] = await self._call(
            "PATCH",
            res.path(meta.get("namespace"), meta["name"]),
            body=obj,
            query=[("fieldManager", names.FIELD_MANAGER), ("force", "true")],
            content_type="application/apply-patch+yaml",
        )
        return result

    async def create(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Create; None when it already exists (someone else, or a previous life of ours, made it)."""
        res = resource_of(obj)
        try:
            result: dict[str, Any] = await self._call(
                "POST",
                res.path(obj["metadata"].get("namespace")),
                body=obj,
                query=[("fieldManager", names.FIELD_MANAGER)],
            )
            return result
        except ApiError as e:
            if e.status == 409:
                return None
            raise

    async def replace(
        self, res: Resource, namespace: str | None, name: str, obj: dict[str, Any]
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self._call(
            "PUT", res.path(namespace, name), body=obj, query=[("fieldManager", names.FIELD_MANAGER)]
        )
        return result

    async def merge_patch(
        self, res: Resource, namespace: str, name: str, patch: dict[str, Any]
    ) -> dict[str, Any]:
        """A JSON merge patch; put metadata.resourceVersion in it to make it conditional (409 if stale)."""
        result: dict[str, Any] = await self._call(
            "PATCH", res.path(namespace, name), body=patch, content_type="application/merge-patch+json"
        )
        return result

    async def patch_status(self, res: Resource, namespace: str, name: str, status: dict[str, Any]) -> bool:
        """A merge patch of the status; False when the object is gone (deleted since it was read)."""
        try:
            await self._call(
                "PATCH",
                res.path(namespace, name, "status"),
                body={"status": status},
                content_type="application/merge-patch+json",
            )
        except ApiError as e:
            if e.status == 404:
                return False
            raise
        return True

    async def delete(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        *,
        propagation: str = "Background",
        uid: str | None = None,
    ) -> bool:
        body: dict[str, Any] = {"propagationPolicy": propagation}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            await self._call("DELETE", res.path(namespace, name), body=body)
            return True
        except ApiError as e:
            if e.status in (404, 409):
                return False
            raise
