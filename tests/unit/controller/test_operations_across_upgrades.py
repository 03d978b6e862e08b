"""Every setting of issue 15 (hostname, proxy, TLS, features and options, truststores, extensions, ingress,
ServiceMonitor, NetworkPolicy, security context, graceful shutdown) through a blue-green upgrade and a
rollback, on the rendered objects: green runs with the same pod settings as blue; the Ingress, the
ServiceMonitor and the public Service's ports are the same objects before, during and after, so an upgrade
never writes them; a rollback restores the pods' settings of the version it goes back to and keeps today's
Ingress, ServiceMonitor and NetworkPolicy."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from keycloak_operator.core import (
    children,
    ingress,
    monitoring,
    network_policy,
    reconcile,
    rollback,
    versions,
)
from keycloak_operator.core.bluegreen import model as bg
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.upgrade_status import BlueGreenStatus
from tests.unit.builders import OWNER, SECRETS, observed

OLD, NEW = "quay.io/keycloak/keycloak:26.7.3", "quay.io/keycloak/keycloak:27.0.1"
EVERYTHING: dict[str, Any] = {
    "image": OLD,
    "replicas": 3,
    "database": {"cnpg": {"clusterName": "db"}},
    "cacheIsolation": {"autoRevision": True},
    "upgradePolicy": {"strategy": "BlueGreen"},
    "hostname": {"hostname": "https://sso.example.com"},
    "tls": {"secret": "kc-tls"},
    "ingress": {"className": "nginx", "tls": {"secretName": "sso-tls"}, "annotations": {"a.example/b": "c"}},
    "monitoring": {"serviceMonitor": {"enabled": True, "interval": "15s", "labels": {"release": "prom"}}},
    "networkPolicy": {
        "enabled": True,
        "ingressFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress"}}}],
        "managementFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "mon"}}}],
    },
    "podSecurityContext": {"fsGroup": 0, "supplementalGroups": [4000]},
    "securityContext": {"readOnlyRootFilesystem": True},
    "shutdown": {"delaySeconds": 20},
    "proxy": {"headers": "xforwarded", "trustedAddresses": ["10.0.0.0/8"]},
    "features": {"enabled": ["token-exchange"]},
    "additionalOptions": [{"name": "log-level", "value": "INFO"}],
    "truststores": [{"name": "corporate", "configMap": {"name": "corporate-ca"}}],
    "extensions": [
        {"name": "theme", "image": "registry.example/acme/theme:1", "path": "/theme", "type": "themes"},
        {"name": "audit", "image": "registry.example/acme/audit:2", "path": "/providers"},
    ],
}
BLUE = KeycloakSpec.model_validate(EVERYTHING)
GREEN = KeycloakSpec.model_validate({**EVERYTHING, "image": NEW})


def pod_settings(dep: dict[str, Any]) -> dict[str, Any]:
    """What issue 15's settings put in a pod template. The Keycloak image (in the init containers that stage
    and build the extensions too) and the variables that name the cache cluster are the upgrade's own; so is
    the discovery query, which names the track's own membership Service (ADR 0018; checked apart)."""
    pod = dep["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    keycloak = container["image"]
    own = {
        "KC_SPI_CACHE_EMBEDDED__DEFAULT__CLUSTER_NAME",
        "KC_CACHE_EMBEDDED_CLUSTER_NAME",
        "JAVA_OPTS_APPEND",
    }
    env = [e for e in container["env"] if e["name"] not in own]
    init = [
        {**c, "image": "<keycloak>" if c["image"] == keycloak else c["image"]}
        | ({"env": [e for e in c["env"] if e["name"] not in own]} if "env" in c else {})
        for c in pod.get("initContainers", [])
    ]
    return {
        "args": container["args"],
        "env": env,
        "init": init,
        "pod": pod["securityContext"],
        "container": container["securityContext"],
        "lifecycle": container.get("lifecycle"),
        "grace": pod["terminationGracePeriodSeconds"],
        "volumes": pod.get("volumes"),
        "mounts": container.get("volumeMounts"),
    }


def test_green_runs_with_blues_pod_settings() -> None:
    blue = render_deployment(OWNER, BLUE, image=OLD, track="a", version="v1")
    green = render_deployment(OWNER, GREEN, image=NEW, track="b", version="v2", green=True)
    promoted = render_deployment(OWNER, GREEN, image=NEW, track="b", version="v2")
    assert pod_settings(green) == pod_settings(blue) == pod_settings(promoted)
    for dep, track in ((blue, "a"), (green, "b"), (promoted, "b")):
        (container,) = dep["spec"]["template"]["spec"]["containers"]
        query = next(e["value"] for e in container["env"] if e["name"] == "JAVA_OPTS_APPEND")
        assert query == f"-Djgroups.dns.query=kc-discovery-{track}.ns.svc.cluster.local"
    assert pod_settings(blue)["lifecycle"] == {"preStop": {"sleep": {"seconds": 20}}}
    assert pod_settings(blue)["container"]["readOnlyRootFilesystem"] is True
    init = pod_settings(blue)["init"]
    assert [c["name"] for c in init] == ["extensions-base", "extension-theme", "extension-audit", "build"]
    assert init[0]["image"] == init[-1]["image"] == "<keycloak>"  # green's build uses green's image
    assert pod_settings(blue)["args"] == ["start", "--optimized"]
    # Promotion adopts green's pods without a restart: the template is the same whatever the colour.
    assert green["spec"]["template"] == promoted["spec"]["template"]


def test_the_objects_around_the_pods_do_not_depend_on_the_image_or_the_track() -> None:
    assert ingress.ingress(BLUE, OWNER) == ingress.ingress(GREEN, OWNER)
    assert monitoring.service_monitor(BLUE, OWNER, crd_served=True) == monitoring.service_monitor(
        GREEN, OWNER, crd_served=True
    )
    blue_service, green_service = (
        children.public_service(OWNER, "a", BLUE),
        children.public_service(OWNER, "b", GREEN),
    )
    assert blue_service["metadata"] == green_service["metadata"]
    assert blue_service["spec"]["ports"] == green_service["spec"]["ports"]
    assert [p["name"] for p in blue_service["spec"]["ports"]] == ["https", "management"]
    # The Ingress's backend is the Service by its never-changing name and a port it has on both tracks.
    rendered = ingress.ingress(GREEN, OWNER)
    assert rendered is not None
    backend = rendered["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": names.public_service("kc"), "port": {"name": "https"}}


def test_each_colours_policy_differs_only_by_its_track_and_cache_cluster() -> None:
    blue, green = network_policy.policies(GREEN, OWNER, {"a": "kc-v26", "b": "kc-v27"}, "kcop")
    for p in (blue, green):
        p["metadata"].pop("name")
        p["metadata"]["labels"].pop(names.LABEL_TRACK)
        p["spec"]["podSelector"]["matchLabels"].pop(names.LABEL_TRACK)
        p["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"].pop(names.LABEL_CACHE_CLUSTER)
    assert blue == green


def _stored(obj: dict[str, Any] | None) -> dict[str, Any]:
    assert obj is not None
    stored = copy.deepcopy(obj)
    stored["metadata"]["uid"] = f"{obj['kind']}-uid"
    return stored


@pytest.mark.parametrize("state", [s for s in bg.STATES if s != bg.IDLE])
def test_no_state_of_an_upgrade_writes_the_ingress_or_the_service_monitor(state: str) -> None:
    blue = render_deployment(OWNER, BLUE, image=OLD, track="a", version="v1")
    blue["metadata"]["uid"] = "blue-uid"
    green = render_deployment(OWNER, GREEN, image=NEW, track="b", version="v2", green=True)
    seen = observed(
        GREEN,
        deployment=blue,
        generation=2,
        existing_secrets=SECRETS | {"kc-tls"},
        green=green,
        ingress=_stored(ingress.ingress(BLUE, OWNER)),
        service_monitor=_stored(monitoring.service_monitor(BLUE, OWNER, crd_served=True)),
        service_monitor_served=True,
        operator_namespace="kcop",
    )
    status = BlueGreenStatus(state=state, blue_image=OLD, green_image=NEW, blue_track="a", green_track="b")
    decision = reconcile.decide(GREEN, seen, now="t", blue_green=status)
    touched = {o["kind"] for o in [*decision.apply, *decision.delete]}
    assert not touched & {"Ingress", "ServiceMonitor"}


def test_a_rollback_restores_the_pods_settings_and_keeps_todays_surroundings() -> None:
    """Today: green's image, and since the upgrade a new ingress class, a ServiceMonitor turned off, the
    ingress controller's namespace renamed in the policy, a longer shutdown and a stricter user. The rollback
    brings back what the old version's pods ran (its security context and shutdown) and keeps today's
    Ingress, ServiceMonitor and NetworkPolicy: none of those is part of a version."""
    today_spec = {
        **EVERYTHING,
        "image": NEW,
        "ingress": {**EVERYTHING["ingress"], "className": "traefik"},
        "monitoring": {"serviceMonitor": {"enabled": False}},
        "networkPolicy": {
            **EVERYTHING["networkPolicy"],
            "ingressFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "edge"}}}],
        },
        "podSecurityContext": {"runAsUser": 2000},
        "shutdown": {"delaySeconds": 40},
        "extensions": [{"name": "audit", "image": "registry.example/acme/audit:3", "path": "/providers"}],
        "truststores": [{"name": "corporate", "secret": {"name": "corporate-ca-2027"}}],
    }
    keycloak = {"metadata": {"name": "kc", "namespace": "ns", "uid": OWNER.uid}, "spec": today_spec}
    revision = children.controller_revision(OWNER, versions.version_of(BLUE).format(), BLUE, 1)
    restored = KeycloakSpec.model_validate(rollback.restored_spec(keycloak, revision))
    today = KeycloakSpec.model_validate(today_spec)

    assert versions.spec_hash(restored) == versions.spec_hash(BLUE)
    old_pods = render_deployment(OWNER, BLUE, image=OLD, track="a", version="v")
    back = render_deployment(OWNER, restored, image=restored.image, track="a", version="v")
    assert pod_settings(back) == pod_settings(old_pods)
    assert pod_settings(back) != pod_settings(
        render_deployment(OWNER, today, image=OLD, track="a", version="v")
    )
    assert ingress.ingress(restored, OWNER) == ingress.ingress(today, OWNER)
    assert monitoring.service_monitor(restored, OWNER, crd_served=True) is None
    tracks = {"a": "kc-v26"}
    assert network_policy.policies(restored, OWNER, tracks, "kcop") == network_policy.policies(
        today, OWNER, tracks, "kcop"
    )
