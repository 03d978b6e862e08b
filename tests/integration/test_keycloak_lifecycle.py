"""The Keycloak resource on the real control plane: create, status, spec changes, scale, delete, bad input."""

from __future__ import annotations

import time

import pytest

from keycloak_operator.core import pod_defaults
from keycloak_operator.kernel import names
from localcluster import manifests
from localcluster.metrics import writes
from localcluster.operator_process import OperatorProcess
from tests.integration.support.kubectl import Kubectl, events, wait_for

pytestmark = pytest.mark.integration

KC = f"keycloaks.{names.GROUP}"


def condition(obj: dict | None, type_: str) -> dict | None:
    for c in ((obj or {}).get("status") or {}).get("conditions", []):
        if c["type"] == type_:
            return dict(c)
    return None


def ready(kubectl: Kubectl, ns: str, name: str, replicas: int) -> dict | None:
    kc = kubectl.get(KC, name, ns)
    c = condition(kc, "Ready")
    if kc and c and c["status"] == "True" and kc["status"].get("readyReplicas") == replicas:
        return kc
    return None


def create(kubectl: Kubectl, ns: str, name: str, **kw) -> dict:
    kubectl.apply(manifests.db_secret(ns))
    kubectl.apply(manifests.keycloak(name, ns, **kw))
    kc = kubectl.get(KC, name, ns)
    assert kc is not None
    return kc


def test_create_gives_owned_children_and_ready_status(
    kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    kc = create(kubectl, namespace, "alpha", replicas=3)
    uid = kc["metadata"]["uid"]
    done = wait_for(
        "Keycloak Ready with 3 replicas", lambda: ready(kubectl, namespace, "alpha", 3), timeout=90
    )
    assert done["status"]["phase"] == "Running"
    assert done["status"]["observedGeneration"] == done["metadata"]["generation"]

    children = {
        ("deployment", names.deployment("alpha")),
        ("service", names.public_service("alpha")),
        ("service", names.membership_service("alpha", "a")),
        ("secret", names.admin_secret("alpha")),
        ("secret", names.operator_login_secret("alpha")),  # the operator's own login (ADR 0023)
    }
    for kind, child in children:
        obj = kubectl.get(kind, child, namespace)
        assert obj is not None, f"{kind} {child} missing"
        owners = obj["metadata"].get("ownerReferences", [])
        assert [o["uid"] for o in owners] == [uid], f"{kind} {child} not owned by the Keycloak"

    discovery = kubectl.get("service", names.membership_service("alpha", "a"), namespace)
    assert discovery["spec"]["clusterIP"] == "None"
    assert discovery["spec"]["publishNotReadyAddresses"] is True
    assert discovery["spec"]["ports"][0]["port"] == 7800

    pods = kubectl.list("pods", namespace, names.selector_string(names.server_selector("alpha", "a")))
    assert len(pods) == 3
    assert all(p["status"].get("podIP") for p in pods)
    assert all(
        any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"]["conditions"]) for p in pods
    )

    # The generated admin password never shows in status or events.
    secret = kubectl.get("secret", names.admin_secret("alpha"), namespace)
    import base64

    password = base64.b64decode(secret["data"]["password"]).decode()
    login = kubectl.get("secret", names.operator_login_secret("alpha"), namespace)
    client_secret = base64.b64decode(login["data"]["clientSecret"]).decode()
    for value in (password, client_secret):
        assert value not in str(done["status"])
        assert value not in kubectl.run("get", "events", "-n", namespace, "-o", "json").stdout
        assert value not in operator.tail(2000)


def test_every_spec_change_reaches_the_deployment(
    kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    create(kubectl, namespace, "beta", replicas=1)
    wait_for("Ready", lambda: ready(kubectl, namespace, "beta", 1), timeout=90)
    kubectl.apply(manifests.db_secret(namespace, "other-db"))
    changed = manifests.keycloak(
        "beta",
        namespace,
        replicas=2,
        env=[{"name": "KC_LOG_LEVEL", "value": "debug"}],
        resources={"requests": {"cpu": "250m", "memory": "512Mi"}},
        database={
            "external": {
                "host": "db2.example.internal",
                "port": 6432,
                "credentialsSecret": {"name": "other-db"},
            }
        },
    )
    kubectl.apply(changed)

    def rolled() -> dict | None:
        dep = kubectl.get("deployment", names.deployment("beta"), namespace)
        container = dep["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") or e.get("valueFrom") for e in container["env"]}
        ok = (
            dep["spec"]["replicas"] == 2
            and env.get("KC_LOG_LEVEL") == "debug"
            and env.get("KC_DB_URL_HOST") == "db2.example.internal"
            and env.get("KC_DB_URL_PORT") == "6432"
            and env["KC_DB_PASSWORD"]["secretKeyRef"]["name"] == "other-db"
            and container.get("resources", {}).get("requests", {}).get("cpu") == "250m"
        )
        return dep if ok else None

    wait_for("spec change in the Deployment", rolled, timeout=60)
    wait_for("Ready with 2", lambda: ready(kubectl, namespace, "beta", 2), timeout=90)


def test_scheduling_places_the_pods_and_the_budget_follows_the_replicas(
    kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    """The pods land where spec.scheduling says (kwok's nodes carry one zone each); the PodDisruptionBudget
    exists while replicas > 1; taking scheduling out of the spec takes its fields out of the pods and gives
    them the defaults of a Keycloak made under this operator (a soft spread over nodes and zones), and the
    memory defaults apply throughout since spec.resources is unset (ADR 0028)."""
    zone = "zone-1"
    placement = {
        "nodeSelector": {"topology.kubernetes.io/zone": zone},
        "tolerations": [{"key": "kcop.dev/maintenance", "operator": "Exists", "effect": "NoSchedule"}],
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname"}],
    }
    create(kubectl, namespace, "placed", replicas=2, scheduling=placement)
    wait_for("Ready", lambda: ready(kubectl, namespace, "placed", 2), timeout=90)

    def pods_in_zone() -> list | None:
        pods = kubectl.list("pods", namespace, selector=f"{names.LABEL_INSTANCE}=placed")
        nodes = {p["spec"].get("nodeName") for p in pods}
        return pods if len(pods) == 2 and nodes == {"kwok-node-1"} else None

    wait_for(f"both pods on the node of {zone}", pods_in_zone, timeout=60)
    pdb_name = names.pod_disruption_budget("placed")
    pdb = wait_for("the PodDisruptionBudget", lambda: kubectl.get("pdb", pdb_name, namespace), timeout=60)
    assert pdb["spec"]["maxUnavailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == names.server_pods("placed")
    wait_for(
        "the budget to count both pods",
        lambda: (kubectl.get("pdb", pdb_name, namespace) or {}).get("status", {}).get("currentHealthy") == 2,
        timeout=60,
    )

    kubectl.apply(manifests.keycloak("placed", namespace, replicas=1))

    def unplaced() -> dict | None:
        dep = kubectl.get("deployment", names.deployment("placed"), namespace)
        pod_spec = dep["spec"]["template"]["spec"]
        gone = not {"nodeSelector", "tolerations"} & set(pod_spec)
        spreads = [(c["topologyKey"], c["whenUnsatisfiable"]) for c in pod_spec["topologySpreadConstraints"]]
        defaults = spreads == [(key, "ScheduleAnyway") for key in pod_defaults.SPREAD_KEYS]
        return dep if gone and defaults and dep["spec"]["replicas"] == 1 else None

    dep = wait_for("placement out of the pod template, the default spread in", unplaced, timeout=60)
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    assert container["resources"] == {
        "requests": {"memory": pod_defaults.MEMORY_REQUEST},
        "limits": {"memory": pod_defaults.MEMORY_LIMIT},
    }
    assert kubectl.get(KC, "placed", namespace)["status"]["podDefaults"] == pod_defaults.HA
    wait_for(
        "the budget deleted at one replica",
        lambda: kubectl.get("pdb", pdb_name, namespace) is None,
        timeout=60,
    )


def test_kubectl_scale_works(kubectl: Kubectl, operator: OperatorProcess, namespace: str):
    create(kubectl, namespace, "gamma", replicas=1)
    wait_for("Ready", lambda: ready(kubectl, namespace, "gamma", 1), timeout=90)
    kubectl.run("scale", KC, "gamma", "-n", namespace, "--replicas=3")
    wait_for("scaled to 3", lambda: ready(kubectl, namespace, "gamma", 3), timeout=90)
    dep = kubectl.get("deployment", names.deployment("gamma"), namespace)
    assert dep["spec"]["replicas"] == 3
    scale = kubectl.run(
        "get", "--raw", f"/apis/{names.API_VERSION}/namespaces/{namespace}/keycloaks/gamma/scale"
    )
    assert '"replicas":3' in scale.stdout.replace(" ", "")


def test_delete_cascades(kubectl: Kubectl, operator: OperatorProcess, namespace: str):
    create(kubectl, namespace, "delta", replicas=1)
    wait_for("Ready", lambda: ready(kubectl, namespace, "delta", 1), timeout=90)
    # The pods the cascade must remove, named now: "pods gone" below must not pass on a list that was empty.
    pods = [p["metadata"]["name"] for p in kubectl.list("pods", namespace, f"{names.LABEL_INSTANCE}=delta")]
    assert pods, "a Ready Keycloak with no pod"
    kubectl.run("delete", KC, "delta", "-n", namespace, "--wait=true", "--timeout=60s")

    def gone() -> bool:
        return all(
            kubectl.get(kind, child, namespace) is None
            for kind, child in [
                ("deployment", names.deployment("delta")),
                ("service", names.public_service("delta")),
                ("service", names.membership_service("delta", "a")),
                ("secret", names.admin_secret("delta")),
            ]
        )

    wait_for("children garbage-collected", gone, timeout=60)
    wait_for(
        f"pods {pods} and every other pod of delta gone",
        lambda: (
            all(kubectl.get("pod", pod, namespace) is None for pod in pods)
            and not kubectl.list("pods", namespace, f"{names.LABEL_INSTANCE}=delta")
        ),
        timeout=60,
    )


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (
            {
                "database": {
                    "external": {"host": "h", "credentialsSecret": {"name": "s"}},
                    "cnpg": {"clusterName": "c"},
                }
            },
            "spec.database",
        ),
        ({"replicas": -1}, "spec.replicas"),
        ({"upgradePolicy": {"strategy": "Sideways"}}, "spec.upgradePolicy.strategy"),
        ({"cacheIsolation": {"clusterName": "not a label!"}}, "spec.cacheIsolation.clusterName"),
    ],
)
def test_invalid_spec_is_refused_with_the_field_named(
    kubectl: Kubectl, crds: None, namespace: str, spec, field
):
    result = kubectl.apply(manifests.keycloak("bad", namespace, **spec), check=False)
    assert result.returncode != 0
    assert field in result.stderr, result.stderr


def test_name_too_long_is_refused(kubectl: Kubectl, crds: None, namespace: str):
    result = kubectl.apply(manifests.keycloak("k" * (names.MAX_KEYCLOAK_NAME + 1), namespace), check=False)
    assert result.returncode != 0
    assert "metadata.name" in result.stderr


def test_operator_judged_problem_is_degraded_with_event(
    kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    kubectl.apply(manifests.db_secret(namespace))
    kubectl.apply(manifests.keycloak("eps", namespace, adminSecret={"name": "no-such-secret"}))

    def degraded() -> dict | None:
        c = condition(kubectl.get(KC, "eps", namespace), "Degraded")
        return c if c and c["status"] == "True" else None

    c = wait_for("Degraded condition", degraded, timeout=60)
    assert c["reason"] == "SecretNotFound"
    assert "no-such-secret" in c["message"]
    # The Event is posted after the status write that shows Degraded, in the same pass: it may come later.
    wait_for(
        "a SecretNotFound Warning event",
        lambda: events(kubectl, namespace, name="eps", type_="Warning", reason="SecretNotFound"),
        timeout=30,
    )
    assert kubectl.get("deployment", names.deployment("eps"), namespace) is None

    # Fixing the problem heals it.
    kubectl.apply(manifests.db_secret(namespace, "no-such-secret"))
    wait_for("Ready after the fix", lambda: ready(kubectl, namespace, "eps", 2), timeout=90)


def platform_service(namespace: str, name: str, port: int) -> dict:
    """A Service someone else made (a platform team, say), under a name a Keycloak would give a child."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": {"team": "platform"}},
        "spec": {"selector": {"app": "platform-pay"}, "ports": [{"name": "p", "port": port}]},
    }


def test_objects_it_did_not_make_are_left_alone_and_reported(
    kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    """A Keycloak named `pay` beside the platform's `pay-service` and `pay-discovery-a` neither takes them
    over nor deletes them, pass after pass; it says so (issue 26)."""
    taken = [names.public_service("pay"), names.membership_service("pay", "a")]
    for service, port in zip(taken, (80, 7800), strict=True):
        kubectl.apply(platform_service(namespace, service, port))
    before = {s: kubectl.get("service", s, namespace) for s in taken}
    kc = create(kubectl, namespace, "pay", replicas=1)

    def not_owned() -> dict | None:
        c = condition(kubectl.get(KC, "pay", namespace), "Degraded")
        return c if c and c["status"] == "True" and c["reason"] == "ChildNotOwned" else None

    c = wait_for("Degraded naming the platform's Services", not_owned, timeout=60)
    assert all(f"Service {s}" in c["message"] for s in taken), c["message"]
    wait_for(
        "a ChildNotOwned Warning event",
        lambda: events(kubectl, namespace, name="pay", type_="Warning", reason="ChildNotOwned"),
        timeout=30,
    )
    # The rest is reconciled: the Deployment is the Keycloak's.
    deployment = wait_for(
        "the Keycloak's Deployment", lambda: kubectl.get("deployment", names.deployment("pay"), namespace)
    )
    assert [o["uid"] for o in deployment["metadata"]["ownerReferences"]] == [kc["metadata"]["uid"]]

    # Two more reconcile passes that demonstrably ran (each spec change reaches the Deployment and the
    # status's observedGeneration), and the platform's Services are still exactly as they were made.
    for replicas in (2, 3):
        kubectl.run(
            "patch", KC, "pay", "-n", namespace, "--type=merge", "-p", f'{{"spec":{{"replicas":{replicas}}}}}'
        )

        def reconciled(replicas: int = replicas) -> bool:
            kc = kubectl.get(KC, "pay", namespace) or {}
            dep = kubectl.get("deployment", names.deployment("pay"), namespace) or {}
            return (
                (kc.get("status") or {}).get("observedGeneration") == kc["metadata"]["generation"]
                and dep.get("spec", {}).get("replicas") == replicas
                and not_owned() is not None
            )

        wait_for(f"the change to {replicas} replicas reconciled, still Degraded", reconciled, timeout=60)
        for s, made in before.items():
            now = kubectl.get("service", s, namespace)
            assert now is not None, f"{s} deleted"
            assert now["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"], s
            assert now["metadata"].get("ownerReferences") is None, s
            assert (now["metadata"]["labels"], now["spec"]) == (made["metadata"]["labels"], made["spec"]), s


def test_one_broken_keycloak_does_not_stop_the_others(
    kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    kubectl.apply(manifests.keycloak("broken", namespace, adminSecret={"name": "missing"}))
    create(kubectl, namespace, "fine", replicas=1)
    wait_for("the healthy one Ready", lambda: ready(kubectl, namespace, "fine", 1), timeout=90)
    assert operator.alive()


def test_idle_resync_makes_zero_writes(cluster, kubectl: Kubectl, operator: OperatorProcess, namespace: str):
    # Every kind of field, written the way people copy them, empty values included: the API server leaves
    # empties out of what it stores, which must not read as drift.
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "idle-options", "namespace": namespace},
            "stringData": {"level": "INFO"},
        }
    )
    rich = {
        "scheduling": {
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "", "effect": "NoSchedule"}],
            "affinity": {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 10,
                            "podAffinityTerm": {
                                "topologyKey": "kubernetes.io/hostname",
                                "labelSelector": {"matchLabels": {"app": "x"}, "matchExpressions": []},
                            },
                        }
                    ]
                }
            },
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone"}],
        },
        "hostname": {"hostname": "https://sso.example.test"},
        "proxy": {"headers": "xforwarded", "trustedAddresses": ["10.0.0.0/8"]},
        "features": {"enabled": ["scripts"]},
        "additionalOptions": [{"name": "log-level", "secret": {"name": "idle-options", "key": "level"}}],
        "env": [{"name": "EMPTY", "value": ""}],
        "ingress": {"className": "nginx", "annotations": {"example.com/empty": ""}, "tls": {}},
        "networkPolicy": {
            "enabled": True,
            "ingressFrom": [
                {"namespaceSelector": {}, "podSelector": {"matchLabels": {}, "matchExpressions": []}},
                {"podSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}},
                {"ipBlock": {"cidr": "10.0.0.0/8", "except": []}},
            ],
        },
        "podSecurityContext": {"supplementalGroups": []},
        "securityContext": {"readOnlyRootFilesystem": False},
        "shutdown": {"delaySeconds": 5},
    }
    create(kubectl, namespace, "idle", replicas=2, **rich)
    wait_for("Ready", lambda: ready(kubectl, namespace, "idle", 2), timeout=90)
    # Namespaces of earlier tests being deleted would add the namespace controller's writes: wait them out.
    wait_for(
        "no namespace terminating",
        lambda: "Terminating" not in kubectl.run("get", "namespaces", "--no-headers").stdout,
        timeout=120,
    )
    time.sleep(3 * operator.resync_seconds)  # let any tail of the rollout settle
    before = cluster.metrics()
    time.sleep(3 * operator.resync_seconds + 1)  # at least three forced resyncs of every Keycloak
    after = cluster.metrics()
    operator_resources = {
        "keycloaks",
        "deployments",
        "services",
        "secrets",
        "events",
        "controllerrevisions",
        "poddisruptionbudgets",
        "ingresses",
        "networkpolicies",
    }
    # The disruption controller keeps the budget's status; the operator writes only its spec.
    changed = {
        k: v
        for k, v in writes(before, after, operator_resources).items()
        if k[1:] != ("poddisruptionbudgets", "status")
    }
    assert changed == {}
