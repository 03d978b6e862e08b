import pytest

from keycloak_operator.core import children
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec

OWNER = children.Owner(name="kc", namespace="ns", uid="uid-1")


def spec(**kw) -> KeycloakSpec:
    base = {
        "image": "quay.io/keycloak/keycloak:26.0.0",
        "replicas": 3,
        "database": {"cnpg": {"clusterName": "db"}},
    }
    base.update(kw)
    return KeycloakSpec.model_validate(base)


def inputs(**kw) -> children.WorkloadInputs:
    values = {
        "owner": OWNER,
        "spec": spec(),
        "track": "a",
        "cache_cluster": "kc-v26",
        "admin_secret": "kc-initial-admin",
        "version": "26.0.0#abc",
    }
    values.update(kw)
    return children.WorkloadInputs(**values)


def env_of(dep: dict) -> dict:
    return {e["name"]: e for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]}


def test_deployment_selects_its_own_pods() -> None:
    dep = children.deployment(inputs())
    selector = dep["spec"]["selector"]["matchLabels"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= labels.items()
    assert labels[names.LABEL_CACHE_CLUSTER] == "kc-v26"
    assert dep["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    assert dep["metadata"]["ownerReferences"][0]["controller"] is True


def test_one_cluster_name_reaches_label_selector_and_setting() -> None:
    dep = children.deployment(inputs())
    svc = children.membership_service(OWNER, "a", "kc-v26")
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert svc["spec"]["selector"].items() <= labels.items()
    env = env_of(dep)
    assert env["KC_SPI_CACHE_EMBEDDED__DEFAULT__CLUSTER_NAME"]["value"] == "kc-v26"
    assert env["KC_CACHE_EMBEDDED_CLUSTER_NAME"]["value"] == "kc-v26"
    # Only the track's own membership Service: never the other colour's (ADR 0018).
    assert env["JAVA_OPTS_APPEND"]["value"] == "-Djgroups.dns.query=kc-discovery-a.ns.svc.cluster.local"
    assert svc["metadata"]["name"] == "kc-discovery-a"
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"] is True
    # Any track of the cache cluster: the selector has no track.
    assert names.LABEL_TRACK not in svc["spec"]["selector"]


def test_no_isolation_means_no_cluster_label_and_no_setting() -> None:
    dep = children.deployment(inputs(cache_cluster=None))
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert names.LABEL_CACHE_CLUSTER not in labels
    assert labels[names.LABEL_DEFAULT_CACHE_CLUSTER] == "true"
    assert not any("CLUSTER_NAME" in variable for variable in env_of(dep))
    assert names.LABEL_CACHE_CLUSTER not in children.discovery_service(OWNER, "a", None)["spec"]["selector"]
    selector = children.membership_service(OWNER, "a", None)["spec"]["selector"]
    assert selector[names.LABEL_DEFAULT_CACHE_CLUSTER] == "true" and names.LABEL_CACHE_CLUSTER not in selector
    assert selector.items() <= labels.items()


def test_a_named_pod_carries_no_default_marker() -> None:
    labels = children.deployment(inputs())["spec"]["template"]["metadata"]["labels"]
    assert names.LABEL_DEFAULT_CACHE_CLUSTER not in labels


def test_credentials_are_referenced_never_inlined() -> None:
    env = env_of(children.deployment(inputs()))
    assert env["KC_DB_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "db-app", "key": "password"}
    assert env["KC_DB_URL_HOST"]["value"] == "db-rw"
    assert env["KC_BOOTSTRAP_ADMIN_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "kc-initial-admin"


@pytest.mark.parametrize(
    ("image", "legacy"),
    [
        ("quay.io/keycloak/keycloak:25.0.6", True),  # 25 reads KEYCLOAK_ADMIN*
        ("quay.io/keycloak/keycloak:26.0.0", False),
        ("quay.io/keycloak/keycloak:nightly", False),  # no release named: only the current names
    ],
)
def test_keycloak_25_gets_the_admin_under_the_names_it_reads(image: str, legacy: bool) -> None:
    env = env_of(children.deployment(inputs(spec=spec(image=image))))
    assert env["KC_BOOTSTRAP_ADMIN_USERNAME"]["valueFrom"]["secretKeyRef"]["key"] == "username"
    assert ("KEYCLOAK_ADMIN" in env) is legacy and ("KEYCLOAK_ADMIN_PASSWORD" in env) is legacy
    if legacy:
        assert env["KEYCLOAK_ADMIN_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
            "name": "kc-initial-admin",
            "key": "password",
        }


def test_probes_use_the_management_port() -> None:
    container = children.deployment(inputs())["spec"]["template"]["spec"]["containers"][0]
    for probe, path in [
        ("startupProbe", "/health/started"),
        ("readinessProbe", "/health/ready"),
        ("livenessProbe", "/health/live"),
    ]:
        assert container[probe]["httpGet"] == {"path": path, "port": 9000, "scheme": "HTTP"}


def test_rolling_by_default_recreate_on_request() -> None:
    rolling = children.deployment(inputs())["spec"]["strategy"]
    assert rolling == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}
    assert children.deployment(inputs(recreate=True))["spec"]["strategy"] == {"type": "Recreate"}


def test_green_uses_green_names() -> None:
    dep = children.deployment(inputs(green=True, track="b"))
    assert dep["metadata"]["name"] == "kc-green-keycloak"
    # Green's pods query their track's membership Service, which the canonical keeps after promotion.
    assert (
        env_of(dep)["JAVA_OPTS_APPEND"]["value"] == "-Djgroups.dns.query=kc-discovery-b.ns.svc.cluster.local"
    )
    # The pod template is the same as the canonical one: promotion adopts green's pods without a restart.
    canonical = children.deployment(inputs(green=False, track="b"))
    assert dep["spec"]["template"] == canonical["spec"]["template"]
    assert (
        children.discovery_service(OWNER, "b", None, green=True)["metadata"]["name"] == "kc-green-discovery"
    )


def test_public_service_name_is_stable_and_selects_by_track() -> None:
    a, b = children.public_service(OWNER, "a", spec()), children.public_service(OWNER, "b", spec())
    assert a["metadata"]["name"] == b["metadata"]["name"] == "kc-service"
    assert a["spec"]["selector"][names.LABEL_TRACK] == "a"
    assert b["spec"]["selector"][names.LABEL_TRACK] == "b"


def test_user_env_and_resources_reach_the_container() -> None:
    s = spec(env=[{"name": "KC_LOG_LEVEL", "value": "debug"}], resources={"limits": {"memory": "2Gi"}})
    container = children.deployment(inputs(spec=s))["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "KC_LOG_LEVEL", "value": "debug"} in container["env"]
    assert container["resources"] == {"limits": {"memory": "2Gi"}}


def test_external_and_managed_tiers() -> None:
    ext = spec(
        database={
            "external": {"host": "h", "port": 6000, "database": "d", "credentialsSecret": {"name": "c"}}
        }
    )
    env = env_of(children.deployment(inputs(spec=ext)))
    assert env["KC_DB_URL_HOST"]["value"] == "h" and env["KC_DB_URL_PORT"]["value"] == "6000"
    assert env["KC_DB_USERNAME"]["valueFrom"]["secretKeyRef"]["name"] == "c"


def test_a_stopping_pod_keeps_serving_until_the_service_has_forgotten_it() -> None:
    """Sign-ins during a roll: the kubelet's preStop sleep runs while the pod is Terminating (out of the
    endpoints), and the grace period covers it plus Keycloak's own shutdown."""
    pod = children.deployment(inputs())["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["lifecycle"]["preStop"] == {"sleep": {"seconds": children.SHUTDOWN_DELAY_SECONDS}}
    assert pod["terminationGracePeriodSeconds"] >= children.SHUTDOWN_DELAY_SECONDS + 10 + 5
