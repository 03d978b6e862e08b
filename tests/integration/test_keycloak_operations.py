"""Issue 15's operations settings on the real control plane (kwok's pods): the Ingress, the NetworkPolicies,
the ServiceMonitor and the pods' security context and shutdown, each made, kept through a blue-green
upgrade where it applies, and removed when turned off. Nothing here enforces policies or scrapes metrics:
these tests check what the operator writes and when."""

from __future__ import annotations

from pathlib import Path

import pytest

from keycloak_operator.kernel import names
from localcluster import manifests, stages
from localcluster.operator_process import OperatorProcess
from tests.integration.support.kubectl import Kubectl, events, wait_for

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
KC = f"keycloaks.{names.GROUP}"
IMAGE = "quay.io/keycloak/keycloak"
# Patch releases of a line Keycloak rolls: the upgrade planner lets them share the database under blue-green.
OLD, NEW = f"{IMAGE}:26.7.0", f"{IMAGE}:26.7.3"
BOOT_SECONDS = 4
BLUE_GREEN = {"strategy": "BlueGreen", "drainDelay": "1s", "greenReadyTimeout": "2m"}
SERVICE_MONITOR_CRD = "servicemonitors.monitoring.coreos.com"


def status(kubectl: Kubectl, ns: str, name: str) -> dict:
    return dict((kubectl.get(KC, name, ns) or {}).get("status") or {})


def condition(kubectl: Kubectl, ns: str, name: str, type_: str) -> dict | None:
    return next((c for c in status(kubectl, ns, name).get("conditions", []) if c["type"] == type_), None)


def monitored(kubectl: Kubectl, ns: str, name: str, value: str) -> dict | None:
    c = condition(kubectl, ns, name, "Monitored")
    return c if c is not None and c["status"] == value else None


def default_image() -> str:
    return str(manifests.keycloak("x", "y")["spec"]["image"])


def running(kubectl: Kubectl, ns: str, name: str, image: str) -> dict | None:
    s = status(kubectl, ns, name)
    return s if s.get("phase") == "Running" and s.get("image") == image else None


def upgraded(kubectl: Kubectl, ns: str, name: str, image: str) -> bool:
    s = status(kubectl, ns, name)
    return (s.get("blueGreen") or {}).get("state") == "Completed" and running(
        kubectl, ns, name, image
    ) is not None


def apply(kubectl: Kubectl, ns: str, name: str, **spec) -> None:
    kubectl.apply(manifests.db_secret(ns))
    kubectl.apply(manifests.keycloak(name, ns, **spec))


def owned_by(obj: dict, kubectl: Kubectl, ns: str, name: str) -> bool:
    uid = kubectl.get(KC, name, ns)["metadata"]["uid"]
    return [r["uid"] for r in obj["metadata"].get("ownerReferences", [])] == [uid]


def test_the_ingress_fronts_the_public_service_and_an_upgrade_never_writes_it(
    cluster, kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    spec = {
        "hostname": {"hostname": "https://sso.example.com"},
        "ingress": {"className": "nginx", "tls": {"secretName": "sso-tls"}},
        "cacheIsolation": {"autoRevision": True},
        "upgradePolicy": BLUE_GREEN,
    }
    apply(kubectl, namespace, "door", image=OLD, **spec)
    name = names.ingress("door")
    ingress = wait_for("the Ingress", lambda: kubectl.get("ingress", name, namespace), timeout=60)
    assert owned_by(ingress, kubectl, namespace, "door")
    assert ingress["spec"]["ingressClassName"] == "nginx"
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == "sso.example.com"
    backend = rule["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": names.public_service("door"), "port": {"name": "http"}}
    assert ingress["spec"]["tls"] == [{"hosts": ["sso.example.com"], "secretName": "sso-tls"}]
    wait_for("blue running", lambda: running(kubectl, namespace, "door", OLD), timeout=90)

    stages.apply_ready_delay(cluster.kubeconfig, NEW, BOOT_SECONDS)
    try:
        apply(kubectl, namespace, "door", image=NEW, **spec)
        wait_for("the upgrade", lambda: upgraded(kubectl, namespace, "door", NEW), timeout=180)
    finally:
        stages.remove(cluster.kubeconfig, NEW)
    after = kubectl.get("ingress", name, namespace)
    # Written once, at creation: the backend never changed, so the upgrade never touched it.
    assert after["metadata"]["resourceVersion"] == ingress["metadata"]["resourceVersion"]

    apply(kubectl, namespace, "door", image=NEW, **{**spec, "ingress": {"enabled": False}})
    wait_for("the Ingress deleted", lambda: kubectl.get("ingress", name, namespace) is None, timeout=60)


def degraded_by(kubectl: Kubectl, ns: str, name: str, reason: str, field: str) -> dict | None:
    c = condition(kubectl, ns, name, "Degraded")
    ok = c is not None and c["status"] == "True" and c["reason"] == reason and c["message"].startswith(field)
    return c if ok else None


def test_an_ingress_the_installation_does_not_allow_is_not_made_and_the_keycloak_says_which_field(
    cluster, kubectl: Kubectl, session_operator_stopped: None, namespace: str, tmp_path: Path
):
    """The operator's allow-lists for classes, annotation keys and hosts (ADR 0012): each refused value is
    named on the Keycloak and in a Warning, no Ingress is made, and the rest of the Keycloak is."""
    refused = kubectl.apply(
        manifests.keycloak("open", namespace, ingress={"className": "nginx"}), check=False
    )
    assert refused.returncode != 0 and "spec.ingress.hosts" in refused.stderr  # no host: every host

    operator = OperatorProcess(cluster.kubeconfig, tmp_path)
    operator.start(
        "--all-namespaces",
        "--ingress-class=nginx",
        "--ingress-annotation-key=nginx.ingress.kubernetes.io/*",
        "--ingress-host=.example.com",
    )
    try:
        name = names.ingress("gate")
        allowed = {
            "className": "nginx",
            "annotations": {"nginx.ingress.kubernetes.io/proxy-buffer-size": "128k"},
            "hosts": ["sso.example.com"],
        }
        for change, field, value in [
            ({"className": "traefik"}, "spec.ingress.className", "'traefik'"),
            (
                {"annotations": {"example.org/snippet": "x"}},
                "spec.ingress.annotations",
                "'example.org/snippet'",
            ),
            ({"hosts": ["sso.evil-example.com"]}, "spec.ingress.hosts", "'sso.evil-example.com'"),
        ]:
            apply(kubectl, namespace, "gate", ingress={**allowed, **change})
            c = wait_for(
                f"Degraded naming {field}",
                lambda field=field: degraded_by(kubectl, namespace, "gate", "IngressNotAllowed", field),
                timeout=60,
            )
            assert value in c["message"]
            warning = wait_for(
                f"a Warning naming {field}",
                lambda field=field: [
                    e
                    for e in events(
                        kubectl, namespace, name="gate", type_="Warning", reason="IngressNotAllowed"
                    )
                    if e["message"].startswith(field)
                ],
                timeout=60,
            )
            assert value in warning[0]["message"]
            # The rest of the Keycloak was reconciled in the same pass; the Ingress was not.
            wait_for("the Deployment", lambda: kubectl.get("deployment", names.deployment("gate"), namespace))
            assert kubectl.get("ingress", name, namespace) is None

        apply(kubectl, namespace, "gate", ingress=allowed)
        made = wait_for("the Ingress", lambda: kubectl.get("ingress", name, namespace), timeout=60)
        assert made["spec"]["ingressClassName"] == "nginx"
        assert [r["host"] for r in made["spec"]["rules"]] == ["sso.example.com"]
        wait_for(
            "no longer Degraded",
            lambda: (condition(kubectl, namespace, "gate", "Degraded") or {}).get("status") == "False",
            timeout=60,
        )
    finally:
        operator.stop()


def jgroups_cluster(policy: dict) -> str | None:
    labels = policy["spec"]["ingress"][0]["from"][0]["podSelector"].get("matchLabels", {})
    return labels.get(names.LABEL_CACHE_CLUSTER)


def test_network_policies_follow_each_track_and_its_cache_cluster(
    cluster, kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    """Blue's policy lets JGroups in from blue's cache cluster only, green's from green's, green's exists
    before green's pods; after the promotion only the track in use keeps one; off deletes them all."""
    spec = {
        "replicas": 2,
        "cacheIsolation": {"clusterName": "fence-blue"},
        "upgradePolicy": BLUE_GREEN,
        "networkPolicy": {
            "enabled": True,
            "ingressFrom": [{"namespaceSelector": {"matchLabels": {names.LABEL_NAMESPACE_NAME: "ingress"}}}],
        },
    }
    # Green gets a cache cluster of its own, as a real 26.7 upgrade may (test_real_production.py does too).
    green_spec = {**spec, "cacheIsolation": {"clusterName": "fence-green"}}
    apply(kubectl, namespace, "fence", image=OLD, **spec)
    blue_name, green_name = names.network_policy("fence", "a"), names.network_policy("fence", "b")
    blue = wait_for("blue's policy", lambda: kubectl.get("networkpolicy", blue_name, namespace), timeout=60)
    assert owned_by(blue, kubectl, namespace, "fence")
    assert blue["spec"]["podSelector"]["matchLabels"] == names.server_selector("fence", "a")
    assert blue["spec"]["policyTypes"] == ["Ingress"]
    assert jgroups_cluster(blue) == "fence-blue"
    assert [p["port"] for p in blue["spec"]["ingress"][0]["ports"]] == [7800, 57800]
    assert all(rule.get("from") for rule in blue["spec"]["ingress"])  # never a rule open to every source
    wait_for("blue running", lambda: running(kubectl, namespace, "fence", OLD), timeout=90)

    stages.apply_ready_delay(cluster.kubeconfig, NEW, BOOT_SECONDS)
    try:
        apply(kubectl, namespace, "fence", image=NEW, **green_spec)

        def green_and_its_policy() -> tuple[dict, dict] | None:
            dep = kubectl.get("deployment", names.deployment("fence", green=True), namespace)
            policy = kubectl.get("networkpolicy", green_name, namespace)
            return (dep, policy) if dep and policy else None

        green_dep, green = wait_for("green and its policy", green_and_its_policy, timeout=90, interval=0.1)
        assert green["metadata"]["creationTimestamp"] <= green_dep["metadata"]["creationTimestamp"]
        assert jgroups_cluster(green) == "fence-green"
        assert jgroups_cluster(kubectl.get("networkpolicy", blue_name, namespace)) == "fence-blue"
        wait_for("the upgrade", lambda: upgraded(kubectl, namespace, "fence", NEW), timeout=180)
    finally:
        stages.remove(cluster.kubeconfig, NEW)
    wait_for(
        "the old track's policy deleted",
        lambda: kubectl.get("networkpolicy", blue_name, namespace) is None,
        timeout=60,
    )
    assert jgroups_cluster(kubectl.get("networkpolicy", green_name, namespace)) == "fence-green"

    apply(kubectl, namespace, "fence", image=NEW, **{**green_spec, "networkPolicy": {"enabled": False}})
    wait_for(
        "every policy deleted",
        lambda: not kubectl.list("networkpolicy", namespace, f"{names.LABEL_INSTANCE}=fence"),
        timeout=60,
    )


def test_the_service_monitor_waits_for_its_crd_and_nothing_else_does(
    kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    installed_here = kubectl.get("crd", SERVICE_MONITOR_CRD) is None
    spec = {"replicas": 1, "monitoring": {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}}}
    apply(kubectl, namespace, "watched", **spec)
    try:
        if installed_here:
            missing = wait_for(
                "Monitored False", lambda: monitored(kubectl, namespace, "watched", "False"), timeout=60
            )
            assert missing["reason"] == "ServiceMonitorCRDMissing"
            warning = wait_for(
                "a Warning naming the field",
                lambda: events(kubectl, namespace, type_="Warning", reason="ServiceMonitorUnavailable"),
                timeout=60,
            )
            assert "spec.monitoring.serviceMonitor" in warning[0]["message"]
            # Nothing waited for it.
            wait_for("Running", lambda: running(kubectl, namespace, "watched", default_image()), timeout=90)
            crd = ROOT / "tests" / "integration" / "fixtures" / "servicemonitor-crd.yaml"
            kubectl.run("apply", "--server-side", "-f", str(crd))
            kubectl.run("wait", "--for=condition=Established", "--timeout=60s", f"crd/{SERVICE_MONITOR_CRD}")
        name = names.service_monitor("watched")
        monitor = wait_for(
            "the ServiceMonitor", lambda: kubectl.get(SERVICE_MONITOR_CRD, name, namespace), timeout=60
        )
        assert owned_by(monitor, kubectl, namespace, "watched")
        assert monitor["metadata"]["labels"]["release"] == "prom"
        (endpoint,) = monitor["spec"]["endpoints"]
        assert (endpoint["port"], endpoint["path"]) == ("management", "/metrics")
        service = kubectl.get("service", names.public_service("watched"), namespace)
        assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
        assert {"name": "management", "port": 9000} in [
            {"name": p["name"], "port": p["port"]} for p in service["spec"]["ports"]
        ]
        wait_for("Monitored True", lambda: monitored(kubectl, namespace, "watched", "True"), timeout=60)

        apply(kubectl, namespace, "watched", replicas=1)
        wait_for(
            "the ServiceMonitor deleted",
            lambda: kubectl.get(SERVICE_MONITOR_CRD, name, namespace) is None,
            timeout=60,
        )

        def port_gone() -> bool:
            svc = kubectl.get("service", names.public_service("watched"), namespace)
            return [p["name"] for p in svc["spec"]["ports"]] == ["http"]

        wait_for("the management port off the public Service", port_gone, timeout=60)
        assert condition(kubectl, namespace, "watched", "Monitored") is None
    finally:
        if installed_here:
            kubectl.run("delete", "crd", SERVICE_MONITOR_CRD, "--wait=false", check=False)


def test_security_context_and_shutdown_reach_the_pods(
    kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    apply(
        kubectl,
        namespace,
        "safe",
        replicas=1,
        podSecurityContext={"supplementalGroups": [4000]},
        shutdown={"delaySeconds": 12},
    )
    wait_for("Running", lambda: running(kubectl, namespace, "safe", default_image()), timeout=90)
    (pod,) = kubectl.list("pods", namespace, f"{names.LABEL_INSTANCE}=safe")
    assert pod["spec"]["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
        "supplementalGroups": [4000],
    }
    (container,) = pod["spec"]["containers"]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": False,
    }
    assert container["lifecycle"]["preStop"] == {"sleep": {"seconds": 12}}
    assert pod["spec"]["terminationGracePeriodSeconds"] == 37
    first = status(kubectl, namespace, "safe")["versions"]["currentVersion"]

    apply(kubectl, namespace, "safe", replicas=1, shutdown={"delaySeconds": 20})

    def rolled() -> dict | None:
        s = status(kubectl, namespace, "safe")
        dep = kubectl.get("deployment", names.deployment("safe"), namespace)
        template = dep["spec"]["template"]["spec"]
        ok = (
            s.get("phase") == "Running"
            and s["versions"]["currentVersion"] != first
            and template["terminationGracePeriodSeconds"] == 45
            and "supplementalGroups" not in template["securityContext"]
        )
        return s if ok else None

    done = wait_for("the new shutdown rolled out as a new version", rolled, timeout=90)
    assert done["versions"]["lastVersion"] == first
