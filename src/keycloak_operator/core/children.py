"""Desired child objects of a Keycloak: the Deployment, its Services and the generated admin Secret.

Pure: every input is passed in (the resolved cache cluster, the track, the owner's uid), so the same inputs
always give the same objects, and tests can check every field without an API server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from keycloak_operator.core import (
    database_tls,
    keycloak_config,
    operator_login,
    pod_extensions,
    probes,
    scheduling,
    versions,
)
from keycloak_operator.kernel import names
from keycloak_operator.kernel.names import HTTP_PORT, HTTPS_PORT
from keycloak_operator.models import unsupported
from keycloak_operator.models.keycloak import KeycloakSpec

MANAGEMENT_PORT = probes.MANAGEMENT_PORT
MANAGEMENT_PORT_NAME = "management"
JGROUPS_PORT = 7800
# JGroups' failure detection (FD_SOCK2) listens at the bind port plus an offset of 50000 in the `kubernetes`
# stack the pods use (default-jgroups-kubernetes.xml of the Infinispan in Keycloak 26.7.3). Not a container
# port (those are informational); the NetworkPolicy opens it.
JGROUPS_FD_PORT = JGROUPS_PORT + 50000
TLS_VOLUME = "tls"
# A pod being stopped keeps serving this long after it left the Service's endpoints (it is Terminating), so
# that kube-proxy and ingress controllers have stopped sending it new requests before Keycloak shuts down
# (spec.shutdown.delaySeconds; this is its default).
SHUTDOWN_DELAY_SECONDS = 5
# After the delay: Keycloak's own shutdown (`kc.sh start --help`, 26.7.3: shutdown-delay 1 s, then
# shutdown-timeout 10 s for running requests and the caches) and a margin for the JVM to exit.
SHUTDOWN_MARGIN_SECONDS = 25
# The grace period with the default delay.
TERMINATION_GRACE_SECONDS = SHUTDOWN_DELAY_SECONDS + SHUTDOWN_MARGIN_SECONDS
# With a read-only root filesystem, where Keycloak and the JVM still write (temporary files, data/tmp).
WRITABLE_DIRS = (("tmp", "/tmp"), ("data", "/opt/keycloak/data"))


@dataclass(frozen=True)
class Owner:
    """The Keycloak resource that owns the children: garbage collection deletes them with it."""

    name: str
    namespace: str
    uid: str

    def reference(self) -> dict[str, Any]:
        return {
            "apiVersion": names.API_VERSION,
            "kind": names.KEYCLOAK_KIND,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def owns(self, child: dict[str, Any]) -> bool:
        """Made by this Keycloak (its controller reference): only such a child is ever changed or deleted."""
        refs = child.get("metadata", {}).get("ownerReferences", []) or []
        return any(r.get("uid") == self.uid and r.get("controller") for r in refs)


@dataclass(frozen=True)
class WorkloadInputs:
    """Everything the Deployment depends on besides the spec."""

    owner: Owner
    spec: KeycloakSpec
    track: str
    cache_cluster: str | None
    admin_secret: str
    version: str
    green: bool = False
    recreate: bool = False
    progress_deadline_seconds: int = 600


def _metadata(owner: Owner, name: str, labels: dict[str, str], **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": owner.namespace,
        "labels": labels,
        "ownerReferences": [owner.reference()],
    }
    meta.update(extra)
    return meta


def pod_labels(inputs: WorkloadInputs) -> dict[str, str]:
    labels = {
        **names.component_labels(inputs.owner.name, names.COMPONENT_SERVER),
        **names.server_selector(inputs.owner.name, inputs.track),
    }
    # The cache cluster's label: what the membership Services and the NetworkPolicies select by.
    labels.update(names.cache_cluster_labels(inputs.cache_cluster))
    return labels


def pod_metadata(inputs: WorkloadInputs) -> dict[str, Any]:
    """The pod template's labels (the user's under the operator's, which always win) and annotations."""
    wanted = inputs.spec.pod_metadata
    labels = {**((wanted.labels if wanted else None) or {}), **pod_labels(inputs)}
    meta: dict[str, Any] = {"labels": labels}
    if wanted is not None and wanted.annotations:
        meta["annotations"] = dict(wanted.annotations)
    return meta


def serving_ports(spec: KeycloakSpec) -> list[tuple[str, int]]:
    """(name, port) of what Keycloak serves to clients: HTTP, HTTPS, or both."""
    if spec.tls is None:
        return [("http", HTTP_PORT)]
    return [("https", HTTPS_PORT), *([("http", HTTP_PORT)] if spec.tls.http_enabled else [])]


def shutdown_delay(spec: KeycloakSpec) -> int:
    return spec.shutdown.delay_seconds if spec.shutdown is not None else SHUTDOWN_DELAY_SECONDS


def termination_grace(spec: KeycloakSpec) -> int:
    return shutdown_delay(spec) + SHUTDOWN_MARGIN_SECONDS


# Pod spec keys the operator sets from the spec besides placement (core/scheduling.py): one the operator set
# and no longer wants must go (core/drift.py).
POD_SPEC_KEYS = frozenset({"imagePullSecrets"}) | unsupported.POD_KEYS


# The pod security keys spec.podSecurityContext may add: one the operator set and no longer wants must go
# (core/drift.py).
POD_SECURITY_KEYS = frozenset(
    {"runAsUser", "runAsGroup", "fsGroup", "fsGroupChangePolicy", "supplementalGroups"}
)


def pod_security_context(spec: KeycloakSpec) -> dict[str, Any]:
    """Pod Security Standards' `restricted` profile: never root, the runtime's default seccomp profile. No
    user or group is forced (the image's user runs: 1000:0 in the official image, and an arbitrary uid in
    group 0 still writes where it must, as on OpenShift); the spec may set them."""
    out: dict[str, Any] = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    if spec.pod_security_context is not None:
        out.update(spec.pod_security_context.wire())
    return out


def read_only_root(spec: KeycloakSpec) -> bool:
    return spec.security_context is not None and spec.security_context.read_only_root_filesystem


def container_security_context(spec: KeycloakSpec) -> dict[str, Any]:
    """No privilege escalation and no capability (Keycloak binds ports above 1024). The root filesystem stays
    writable unless asked: `kc.sh start` rebuilds into /opt/keycloak/lib when the build options differ from
    the image's, and writes /opt/keycloak/data. Always written, false included, so that turning it off is a
    difference the drift check sees."""
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": read_only_root(spec),
    }


def service_monitor_wanted(spec: KeycloakSpec) -> bool:
    """spec.monitoring.serviceMonitor.enabled, whether the cluster can have one or not (core/monitoring)."""
    monitor = spec.monitoring.service_monitor if spec.monitoring is not None else None
    return monitor is not None and monitor.enabled


def deployment(inputs: WorkloadInputs) -> dict[str, Any]:
    owner, spec = inputs.owner, inputs.spec
    # Only the track's own membership Service: the template must not depend on the Deployment's name (a
    # promoted green keeps its pods), and must not name another cache cluster's Service (ADR 0018).
    discovery = [names.discovery_dns(names.membership_service(owner.name, inputs.track), owner.namespace)]
    env = keycloak_config.environment(
        spec, admin_secret=inputs.admin_secret, cache_cluster=inputs.cache_cluster, discovery_dns=discovery
    )
    container: dict[str, Any] = {
        "name": "keycloak",
        "image": spec.image,
        "args": pod_extensions.start_args(spec),
        "env": env,
        "ports": [
            *({"name": n, "containerPort": p, "protocol": "TCP"} for n, p in serving_ports(spec)),
            {"name": MANAGEMENT_PORT_NAME, "containerPort": MANAGEMENT_PORT, "protocol": "TCP"},
            {"name": "jgroups", "containerPort": JGROUPS_PORT, "protocol": "TCP"},
        ],
        **probes.probes(spec),
        "securityContext": container_security_context(spec),
    }
    delay = shutdown_delay(spec)
    if delay:
        # The kubelet's own sleep: no binary needed in the image, and the same on every Keycloak version.
        container["lifecycle"] = {"preStop": {"sleep": {"seconds": delay}}}
    pod_spec: dict[str, Any] = {
        "containers": [container],
        "enableServiceLinks": False,
        "securityContext": pod_security_context(spec),
        "terminationGracePeriodSeconds": termination_grace(spec),
        **scheduling.pod_placement(spec, owner.name, inputs.track),
    }
    mounts: list[dict[str, Any]] = []
    volumes: list[dict[str, Any]] = []
    if spec.tls is not None:
        mounts.append({"name": TLS_VOLUME, "mountPath": keycloak_config.TLS_MOUNT_PATH, "readOnly": True})
        volumes.append({"name": TLS_VOLUME, "secret": {"secretName": spec.tls.secret}})
    root_cert = database_tls.volume(spec)
    if root_cert is not None:
        mounts.append(database_tls.mount(database_tls.KEYCLOAK_DIR))
        volumes.append(root_cert)
    if read_only_root(spec):
        for volume, path in WRITABLE_DIRS:
            mounts.append({"name": volume, "mountPath": path})
            volumes.append({"name": volume, "emptyDir": {}})
    for extra in spec.volumes or []:
        mounts.append(extra.mount())
        volumes.append(extra.pod_volume())
    for parts in (
        pod_extensions.truststores(spec),
        pod_extensions.extensions(spec, env, container["securityContext"]),
    ):
        mounts.extend(parts.mounts)
        volumes.extend(parts.volumes)
        if parts.init_containers:
            pod_spec.setdefault("initContainers", []).extend(parts.init_containers)
    if mounts:
        container["volumeMounts"] = mounts
        pod_spec["volumes"] = volumes
    if spec.resources is not None:
        container["resources"] = spec.resources.wire()
    if spec.image_pull_secrets:
        # The pod's, so every container in it (extension images, the build) pulls with them, and every Job
        # made from this template (the compatibility check) inherits them.
        pod_spec["imagePullSecrets"] = [{"name": s.name} for s in spec.image_pull_secrets]
    hatch = spec.unsupported.pod_template if spec.unsupported else None
    if hatch is not None:
        # Last, over the operator's values, only at the keys models/unsupported.py lists (ADR 0025).
        pod_spec.update({k: v for k, v in hatch.spec.items() if k != "containers"})
        container.update(hatch.container())
    strategy: dict[str, Any] = (
        {"type": "Recreate"}
        if inputs.recreate
        else {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(
            owner,
            names.deployment(owner.name, green=inputs.green),
            {**names.component_labels(owner.name, names.COMPONENT_SERVER), names.LABEL_TRACK: inputs.track},
            annotations={names.ANNOTATION_VERSION: inputs.version},
        ),
        "spec": {
            "replicas": spec.replicas,
            "progressDeadlineSeconds": inputs.progress_deadline_seconds,
            "selector": {"matchLabels": names.server_selector(owner.name, inputs.track)},
            "strategy": strategy,
            "template": {"metadata": pod_metadata(inputs), "spec": pod_spec},
        },
    }


def _headless(owner: Owner, name: str, selector: dict[str, str]) -> dict[str, Any]:
    """Headless, and lists pods before they are Ready, so a cluster can form before anything serves."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(owner, name, names.component_labels(owner.name, names.COMPONENT_DISCOVERY)),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": selector,
            "ports": [
                {"name": "jgroups", "port": JGROUPS_PORT, "targetPort": JGROUPS_PORT, "protocol": "TCP"}
            ],
        },
    }


def membership_service(
    owner: Owner, track: str, cache_cluster: str | None, *, apart: bool = False
) -> dict[str, Any]:
    """The Service the pods of `track` query for JGroups DNS discovery (ADR 0018): every server pod of this
    Keycloak in `cache_cluster` (the track's pods' cache cluster), whatever its track, and no other; only
    the track's own pods when the tracks must stay `apart` (discovery.tracks_apart)."""
    return _headless(
        owner,
        names.membership_service(owner.name, track),
        names.membership_selector(owner.name, cache_cluster, track if apart else None),
    )


def discovery_service(
    owner: Owner, track: str, cache_cluster: str | None, *, green: bool = False
) -> dict[str, Any]:
    """A colour-named headless Service over one track's pods of one cache cluster. No pod rendered since
    ADR 0018 queries it: green's is the blue-green machine's view of green's pods serving (its
    EndpointSlices), the canonical one stays only while older pods may still query it."""
    return _headless(
        owner,
        names.discovery_service(owner.name, green=green),
        names.discovery_selector(owner.name, track, cache_cluster),
    )


def public_service(owner: Owner, track: str, spec: KeycloakSpec) -> dict[str, Any]:
    """The Service clients use; cutover changes only its selector's track. With a ServiceMonitor asked for,
    it also has the management port (a ServiceMonitor names a Service port); the Ingress names the serving
    port, so that one is never exposed through it."""
    monitored = [(MANAGEMENT_PORT_NAME, MANAGEMENT_PORT)] if service_monitor_wanted(spec) else []
    settings = spec.service
    # The user's labels under the operator's: its own keys are refused by the model, and win regardless.
    labels = {**((settings.labels if settings else None) or {})}
    labels.update(names.component_labels(owner.name, names.COMPONENT_HTTP))
    extra = {"annotations": dict(settings.annotations)} if settings and settings.annotations else {}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(owner, names.public_service(owner.name), labels, **extra),
        "spec": {
            "type": (settings.type if settings else None) or "ClusterIP",
            "selector": names.server_selector(owner.name, track),
            "ports": [
                {"name": n, "port": p, "targetPort": p, "protocol": "TCP"}
                for n, p in [*serving_ports(spec), *monitored]
            ],
        },
    }


def controller_revision(owner: Owner, version: str, spec: KeycloakSpec, revision: int) -> dict[str, Any]:
    """The spec of a version that rolled out, kept so `rollback` can restore it (Kubernetes' history type)."""
    digest = versions.revision_key(version)
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            **_metadata(
                owner, names.controller_revision(owner.name, digest), names.instance_labels(owner.name)
            ),
            "annotations": {names.ANNOTATION_VERSION: version},
        },
        "revision": revision,
        "data": {"spec": spec.wire()},
    }


def admin_secret(owner: Owner, password: str) -> dict[str, Any]:
    """Generated once when the spec references none; the password comes from the shell's random source."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": _metadata(
            owner,
            names.admin_secret(owner.name),
            names.component_labels(owner.name, names.COMPONENT_ADMIN_SECRET),
        ),
        "stringData": {"username": "admin", "password": password},
    }


def operator_login_secret(owner: Owner, client_secret: str) -> dict[str, Any]:
    """The operator's own login (core/operator_login.py): made once, before Keycloak is told the secret; the
    secret comes from the shell's random source."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": _metadata(
            owner,
            names.operator_login_secret(owner.name),
            names.component_labels(owner.name, names.COMPONENT_OPERATOR_LOGIN),
        ),
        "stringData": {
            operator_login.KEY_CLIENT_ID: operator_login.CLIENT_ID,
            operator_login.KEY_SECRET: client_secret,
        },
    }
