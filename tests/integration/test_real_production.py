"""A production-shaped Keycloak on real pods on the real node: a hostname, TLS from a Secret, forwarding
headers believed only from a named proxy, a truststore from a ConfigMap, and a provider and a theme from an
extension image. It becomes Ready through its real (HTTPS) probes; a token fetched over HTTPS through the
Service, the certificate checked, carries the configured issuer; forged forwarding headers sent from another
pod do not move the issuer; Keycloak trusts the truststore's CA for its own outgoing TLS; server info lists
the provider and the theme; the settings platform teams set reach what runs (a registry pull secret on the
pods and the compatibility check's Job, a variable from a Secret key, JVM options after Keycloak's own, a
Service annotation, pod labels, the escape hatch's keys). Then a blue-green patch upgrade (26.7.0 to 26.7.3)
under HTTPS sign-ins, with the operator SIGKILLed while green starts: not one sign-in fails, no JGroups view
of one colour ever takes in the other's (read from Keycloak's own logs), and green keeps every one of those
settings. (One replica per colour: four production JVMs with their extension builds would double the test's
time on two cores; two pods forming one view is test_real_keycloak.py's.)
"""

from __future__ import annotations

import base64
import json
import ssl
import time
from pathlib import Path
from typing import Any

import pytest

import localcluster
from keycloak_operator.kernel import names
from localcluster import app_images, pki, real_keycloak, realnode, signins
from localcluster.node_config import NODE_NAME
from localcluster.operator_process import OperatorProcess
from tests.integration.support import extension_image, jgroups, real_resources
from tests.integration.support.kubectl import Kubectl, wait_for
from tests.integration.support.real_resources import replicate

pytestmark = pytest.mark.integration

FROM_VERSION, TO_VERSION = "26.7.0", "26.7.3"  # one minor line: blue-green on one database
REPLICAS = 1
HOST = "sso.example.test"
ISSUER = f"https://{HOST}:8443/realms/team"  # a bare host name: scheme and port follow the request
UNTRUSTED_PROXY = "192.0.2.10/32"  # TEST-NET-1: no pod has it, so no forwarding header is believed
FORGED = {"X-Forwarded-Host": "evil.example.test", "X-Forwarded-Proto": "http", "X-Forwarded-Port": "80"}
# The settings platform teams set (docs/guide/keycloak.md), checked on what the pods run.
PULL_SECRET = "registry"
SETTING = "from-a-secret-key"
JVM_OPTIONS = ["-XX:MaxRAMPercentage=65", "-Dkcop.test.marker=on"]
SERVICE_ANNOTATIONS = {"example.com/team": "identity"}
POD_LABELS = {"example.com/team": "identity"}
# Probe overrides: each field the user sets replaces the operator's default for that probe only.
PROBES = {"readiness": {"periodSeconds": 2, "failureThreshold": 20}, "liveness": {"timeoutSeconds": 3}}
HATCH = {
    "automountServiceAccountToken": False,
    "containers": [{"name": "keycloak", "imagePullPolicy": "IfNotPresent"}],
}


@pytest.fixture(scope="module")
def images(cluster: localcluster.Cluster, real_node: realnode.RealNode) -> dict[str, str]:
    built = {
        "from": app_images.keycloak(cluster, FROM_VERSION),
        "to": app_images.keycloak(cluster, TO_VERSION),
        "postgres": app_images.postgres(cluster),
        "python": app_images.operator(cluster),  # Debian's python3: the other pod that forges headers
    }
    built["extension"] = extension_image.extension(cluster, TO_VERSION)
    return built


def production(namespace: str, images: dict[str, str], image: str, cluster_name: str) -> dict[str, Any]:
    ext = images["extension"]
    return real_keycloak.keycloak(
        "sso",
        namespace,
        image,
        replicas=REPLICAS,
        hostname={"hostname": HOST},
        proxy={"headers": "xforwarded", "trustedAddresses": [UNTRUSTED_PROXY]},
        tls={"secret": "sso-tls"},
        truststores=[{"name": "corporate", "configMap": {"name": "corporate-ca"}}],
        extensions=[
            {"name": "audit", "image": ext, "path": extension_image.PROVIDERS_PATH},
            {"name": "theme", "image": ext, "path": extension_image.THEMES_PATH, "type": "themes"},
        ],
        # Keycloak's own compatibility check first (a Job): 26.7.0 -> 26.7.3 rolls (exit 0).
        upgradePolicy={"strategy": "BlueGreen", "compatibilityCheck": True},
        cacheIsolation={"clusterName": cluster_name},
        imagePullSecrets=[{"name": PULL_SECRET}],
        env=[
            {"name": "SSO_SETTING", "valueFrom": {"secretKeyRef": {"name": "sso-settings", "key": "value"}}}
        ],
        jvm={"options": JVM_OPTIONS},
        probes=PROBES,
        service={"annotations": SERVICE_ANNOTATIONS},
        podMetadata={"labels": POD_LABELS},
        unsupported={"podTemplate": {"spec": HATCH}},
    )


def serving_pods(kubectl: Kubectl, namespace: str) -> list[dict[str, Any]]:
    # Server pods only: the compatibility check's Job pod carries the instance label too.
    server = f"{names.LABEL_INSTANCE}=sso,{names.LABEL_COMPONENT}={names.COMPONENT_SERVER}"
    pods = [
        p
        for p in kubectl.list("pods", namespace, selector=server)
        if not p["metadata"].get("deletionTimestamp")
    ]
    assert len(pods) == REPLICAS, [p["metadata"]["name"] for p in pods]
    return pods


def green_starting(kubectl: Kubectl, namespace: str) -> bool:
    """The compatibility check has answered and the machine is waiting for green's pods."""
    status = (kubectl.get(real_resources.KC, "sso", namespace) or {}).get("status") or {}
    return (status.get("blueGreen") or {}).get("state") == "WaitingForGreen"


def claims(jwt: str) -> dict[str, Any]:
    payload = jwt.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


def forged_issuer(kubectl: Kubectl, namespace: str, image: str, colour: str) -> str:
    """The issuer another pod on the real node reads from the discovery document, sending forged
    X-Forwarded-* headers straight to the Service."""
    service = f"{names.public_service('sso')}.{namespace}.svc"
    url = f"https://{service}:8443/realms/team/.well-known/openid-configuration"
    script = (
        "import json, ssl, urllib.request\n"
        f"request = urllib.request.Request({url!r}, headers={FORGED!r})\n"
        "context = ssl.create_default_context(cafile='/ca/ca.pem')\n"
        "print(json.load(urllib.request.urlopen(request, context=context, timeout=20))['issuer'])\n"
    )
    name = f"forger-{colour}"
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "forger",
                        "image": image,
                        "imagePullPolicy": "Never",
                        "command": ["python3", "-c", script],
                        "volumeMounts": [{"name": "ca", "mountPath": "/ca"}],
                    }
                ],
                "volumes": [{"name": "ca", "configMap": {"name": "corporate-ca"}}],
                **real_keycloak.ON_REAL_NODE,
            },
        }
    )

    def finished() -> str | None:
        phase = ((kubectl.get("pod", name, namespace) or {}).get("status") or {}).get("phase")
        return phase if phase in ("Succeeded", "Failed") else None

    phase = wait_for(f"pod {name} finished", finished, timeout=120, interval=1)
    logs = kubectl.run("logs", "-n", namespace, name, check=False).stdout.strip()
    assert phase == "Succeeded", logs
    return logs.splitlines()[-1]


class Sso:
    """The Keycloak `sso` as a client outside the cluster reaches it: HTTPS to the Service's ClusterIP, the
    certificate checked against the test's CA and required to name the Service."""

    def __init__(self, kubectl: Kubectl, namespace: str, ca: Path) -> None:
        service = kubectl.get("service", names.public_service("sso"), namespace)
        assert service is not None
        assert [p["port"] for p in service["spec"]["ports"]] == [8443]  # HTTPS only: HTTP is off
        self.url = f"https://{service['spec']['clusterIP']}:8443"
        self.internal_url = f"https://{names.public_service('sso')}.{namespace}.svc:8443"  # as pods reach it
        self.tls = signins.Tls(
            ssl.create_default_context(cafile=str(ca)), f"{names.public_service('sso')}.{namespace}.svc"
        )
        self.creds = real_resources.admin_credentials(kubectl, namespace)

    def token(self, form: dict[str, str]) -> dict[str, Any] | None:
        return real_keycloak.token(f"{self.url}/realms/team/protocol/openid-connect/token", form, self.tls)

    def admin(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        return real_keycloak.admin(self.url, self.creds, method, path, body, self.tls)


def in_pod(kubectl: Kubectl, namespace: str, pod: dict[str, Any], *argv: str) -> str:
    return kubectl.run("exec", "-n", namespace, pod["metadata"]["name"], "-c", "keycloak", "--", *argv).stdout


def check_platform_settings(kubectl: Kubectl, namespace: str) -> None:
    """What the pods run with: the pull secret, the escape hatch's keys, the variable from a Secret key as
    the container sees it, the JVM options on the java command line after Keycloak's own heap default (so
    they win), the probe overrides over the operator's defaults, the default memory limit (spec.resources
    is unset) as the container's cgroup enforces it, the pod labels; and the public Service's annotation
    beside its own selector."""
    pods = serving_pods(kubectl, namespace)
    assert pods
    for pod in pods:
        assert pod["spec"]["imagePullSecrets"] == [{"name": PULL_SECRET}]
        # The escape hatch: no ServiceAccount token mounted, the pull policy asked for.
        assert pod["spec"]["automountServiceAccountToken"] is False
        keycloak = next(c for c in pod["spec"]["containers"] if c["name"] == "keycloak")
        assert keycloak["imagePullPolicy"] == "IfNotPresent"
        assert not any(
            m["mountPath"].startswith("/var/run/secrets/kubernetes.io") for m in keycloak["volumeMounts"]
        )
        assert pod["metadata"]["labels"].items() >= POD_LABELS.items()
        assert in_pod(kubectl, namespace, pod, "printenv", "SSO_SETTING").strip() == SETTING
        # Every process's command line, NUL-separated: the JVM is kc.sh's child, not PID 1.
        lines = in_pod(kubectl, namespace, pod, "sh", "-c", "cat /proc/[0-9]*/cmdline").split("\0")
        default, ours = lines.index("-XX:MaxRAMPercentage=70"), lines.index(JVM_OPTIONS[0])
        assert default < ours and JVM_OPTIONS[1] in lines, lines
        assert any(a.startswith("-Djgroups.dns.query=") for a in lines), lines
        readiness, liveness = keycloak["readinessProbe"], keycloak["livenessProbe"]
        assert (readiness["periodSeconds"], readiness["failureThreshold"]) == (2, 20), readiness
        assert (liveness["timeoutSeconds"], liveness["periodSeconds"]) == (3, 10), liveness  # 10: default
        # cgroup v2's file, else v1's (this node's kubelet runs on v1).
        cgroup = "cat /sys/fs/cgroup/memory.max || cat /sys/fs/cgroup/memory/memory.limit_in_bytes"
        limit = in_pod(kubectl, namespace, pod, "sh", "-c", f"({cgroup}) 2>/dev/null").strip()
        assert limit == str(2 * 1024**3), limit  # pod_defaults.MEMORY_LIMIT, 2Gi
    service = kubectl.get("service", names.public_service("sso"), namespace) or {}
    assert service["metadata"]["annotations"].items() >= SERVICE_ANNOTATIONS.items()
    assert service["spec"]["selector"][names.LABEL_INSTANCE] == "sso"


def check_settings(
    kubectl: Kubectl, namespace: str, sso: Sso, images: dict[str, str], form: dict[str, str], colour: str
) -> None:
    """What must hold on blue and again on green."""
    check_platform_settings(kubectl, namespace)
    issued = wait_for("a token over HTTPS", lambda: sso.token(form), timeout=60)
    assert claims(issued["access_token"])["iss"] == ISSUER
    # Another pod forges every forwarding header: none is believed (the only trusted proxy is elsewhere).
    assert forged_issuer(kubectl, namespace, images["python"], colour) == ISSUER
    # Keycloak's own outgoing TLS trusts the truststore's CA: it fetches its Service's discovery document,
    # whose certificate that CA signed (the JVM's CAs alone would refuse it).
    discovery = f"{sso.internal_url}/realms/team/.well-known/openid-configuration"
    status, imported = sso.admin(
        "POST",
        "/admin/realms/team/identity-provider/import-config",
        {"providerId": "oidc", "fromUrl": discovery},
    )
    assert status == 200 and imported["issuer"] == ISSUER, (status, imported)
    # The extension image's provider and theme are loaded.
    status, info = sso.admin("GET", "/admin/serverinfo")
    assert status == 200
    listeners = info["providers"]["eventsListener"]["providers"]
    assert extension_image.PROVIDER_ID in listeners, sorted(listeners)
    assert extension_image.THEME in {t["name"] for t in info["themes"]["login"]}


def test_a_production_keycloak_on_real_pods_keeps_its_settings_through_a_blue_green_upgrade(
    cluster: localcluster.Cluster,
    kubectl: Kubectl,
    images: dict[str, str],
    session_operator_stopped: None,
    real_operator: OperatorProcess,
    namespace: str,
    tmp_path: Path,
) -> None:
    service_names = tuple(
        f"{names.public_service('sso')}.{namespace}.{suffix}" for suffix in ("svc", "svc.cluster.local")
    )
    ca, leaf = pki.serving(tmp_path / "tls", dns=(*service_names, HOST))
    pem = {p.name: base64.b64encode(p.read_bytes()).decode() for p in (leaf.cert, leaf.key, ca.cert)}
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/tls",
            "metadata": {"name": "sso-tls", "namespace": namespace},
            "data": {"tls.crt": pem["tls.crt"], "tls.key": pem["tls.key"], "ca.crt": pem["ca.crt"]},
        }
    )
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "corporate-ca", "namespace": namespace},
            "data": {"ca.pem": ca.cert.read_text()},
        }
    )
    for obj in real_keycloak.postgres(namespace, images["postgres"]):
        kubectl.apply(obj)
    registry = base64.b64encode(json.dumps({"auths": {}}).encode()).decode()
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/dockerconfigjson",
            "metadata": {"name": PULL_SECRET, "namespace": namespace},
            "data": {".dockerconfigjson": registry},
        }
    )
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "sso-settings", "namespace": namespace},
            "stringData": {"value": SETTING},
        }
    )
    kubectl.apply(production(namespace, images, images["from"], "sso-blue"))
    wait_for(
        f"Keycloak {FROM_VERSION} Ready through its HTTPS probes, with its extensions built in the pod",
        lambda: real_resources.running(kubectl, namespace, FROM_VERSION, replicas=REPLICAS),
        timeout=600,
        interval=2,
    )
    for pod in serving_pods(kubectl, namespace):
        assert pod["spec"]["nodeName"] == NODE_NAME
        assert [c["name"] for c in pod["spec"]["initContainers"]] == [
            "extensions-base",
            "extension-audit",
            "extension-theme",
            "build",
        ]
    secret = replicate(kubectl, namespace, directAccessGrantsEnabled=True)
    sso = Sso(kubectl, namespace, ca.cert)
    form = {"grant_type": "client_credentials", "client_id": "backend", "client_secret": secret}
    check_settings(kubectl, namespace, sso, images, form, "blue")

    real_keycloak.create_user(sso.url, sso.creds, "team", "alice", "alice-password-1", sso.tls)
    login = signins.Login(
        f"{sso.url}/realms/team/protocol/openid-connect/token",
        "backend",
        secret,
        "alice",
        "alice-password-1",
        tls=sso.tls,
    )
    load = signins.SignIns(login, max_seconds=900).start()
    try:
        with jgroups.ViewWatch(kubectl, namespace, "sso") as cache_views:
            wait_for("sign-ins before the change", lambda: load.count() >= 20, timeout=60)
            changed_at = time.monotonic()
            kubectl.apply(production(namespace, images, images["to"], "sso-green"))
            # The operator dies while green starts, with no chance to clean up, and a new one takes over.
            wait_for("green starting", lambda: green_starting(kubectl, namespace), timeout=300)
            real_operator.kill()
            real_operator.start("--all-namespaces")
            wait_for(
                f"{TO_VERSION} serving after a blue-green upgrade and the operator's SIGKILL",
                lambda: real_resources.running(kubectl, namespace, TO_VERSION, replicas=REPLICAS),
                timeout=900,
                interval=2,
            )
            settled = time.monotonic() + 10
            wait_for(
                "sign-ins after the change",
                lambda: sum(a.at > settled for a in list(load.attempts)) >= 20,
                timeout=90,
            )
    finally:
        attempts = load.stop()
    failed = [a for a in attempts if not a.ok]
    assert {a.grant for a in attempts} == {"client_credentials", "password"}
    assert not failed, (
        f"{len(failed)} of {len(attempts)} HTTPS sign-ins failed, from {failed[0].at - changed_at:+.1f} s "
        f"after the change; first: {failed[:2]}"
    )
    assert {p["spec"]["containers"][0]["image"] for p in serving_pods(kubectl, namespace)} == {images["to"]}
    # Each colour's pods logged their own views, and no view took in the other colour's.
    assert set(cache_views.cache_cluster_of.values()) >= {"sso-blue", "sso-green"}, (
        cache_views.cache_cluster_of
    )
    assert cache_views.largest("sso-blue") == REPLICAS and cache_views.largest("sso-green") == REPLICAS
    assert not cache_views.crossings(), "\n".join(cache_views.crossings())
    check_settings(kubectl, namespace, sso, images, form, "green")
    plan = ((kubectl.get(real_resources.KC, "sso", namespace) or {}).get("status") or {})["upgradePlan"]
    assert plan["path"] == "BlueGreenShared", plan
    assert plan["compatibilityCheck"].endswith("rolling update possible (exit 0)"), plan
    # The compatibility check's Job pulled with the same secret.
    selector = f"{names.LABEL_INSTANCE}=sso,{names.LABEL_COMPONENT}=compatibility-check"
    (job,) = kubectl.list("jobs", namespace, selector=selector)
    assert job["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": PULL_SECRET}]


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ({"jvm": {"options": ["-Djgroups.dns.query=other"]}}, "JGroups, Infinispan"),
        ({"jvm": {"options": ["-Da=b c"]}}, "spec.jvm.options[0]"),
        (
            {"env": [{"name": "A", "value": "v", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]},
            "set value or valueFrom, not both",
        ),
        (
            {
                "env": [
                    {
                        "name": "A",
                        "valueFrom": {
                            "secretKeyRef": {"name": "s", "key": "k"},
                            "configMapKeyRef": {"name": "c", "key": "k"},
                        },
                    }
                ]
            },
            "set exactly one of secretKeyRef or configMapKeyRef",
        ),
        (
            {"volumes": [{"name": "v", "mountPath": "/opt/keycloak/conf", "emptyDir": {}}]},
            "mountPath must not be at, above or under",
        ),
        ({"volumes": [{"name": "v", "mountPath": "/etc/v"}]}, "set exactly one of secret, configMap"),
        ({"imagePullSecrets": [{"name": "a"}, {"name": "a"}]}, "Duplicate value"),
    ],
)
def test_the_api_server_refuses_settings_that_could_reach_what_isolation_depends_on(
    kubectl: Kubectl, crds: None, namespace: str, extra: dict[str, Any], said: str
) -> None:
    """The CRD's own rules (models/workload.py), before anything is stored; a valid spec with every setting
    passes the same dry run."""

    def dry_run(spec: dict[str, Any]) -> Any:
        obj = real_keycloak.keycloak("sso", namespace, "quay.io/keycloak/keycloak:26.7.3", **spec)
        return kubectl.run("apply", "--dry-run=server", "-f", "-", input=json.dumps(obj), check=False)

    refused = dry_run(extra)
    assert refused.returncode != 0 and said in refused.stderr, refused.stderr
    fine = {
        "imagePullSecrets": [{"name": PULL_SECRET}],
        "jvm": {"options": JVM_OPTIONS},
        "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}],
        "volumes": [{"name": "v", "mountPath": "/etc/v", "emptyDir": {}}],
        "service": {"type": "NodePort", "annotations": SERVICE_ANNOTATIONS},
        "podMetadata": {"labels": POD_LABELS},
    }
    accepted = dry_run(fine)
    assert accepted.returncode == 0, accepted.stderr
