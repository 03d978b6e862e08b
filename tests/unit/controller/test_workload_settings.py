"""Settings platform teams set on the Keycloak pods: registry credentials (spec.imagePullSecrets) on the
pods, green's, the extensions' init containers and every Job the operator runs; variables from Secret and
ConfigMap keys (spec.env[].valueFrom)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from pydantic import ValidationError

from keycloak_operator.core import (
    children,
    compatibility_check,
    database_copy,
    discovery,
    drift,
    keycloak_config,
    reconcile,
    versions,
)
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.kernel import names
from keycloak_operator.models import metadata, workload
from keycloak_operator.models.keycloak import KeycloakSpec
from tests.unit import builders
from tests.unit.builders import NOW, OWNER, SECRETS, fields_v1, observed, spec

render = builders.deployment
pod = builders.pod
PULL = {"imagePullSecrets": [{"name": "registry"}, {"name": "mirror"}]}


def stored(applied: dict[str, Any]) -> dict[str, Any]:
    """As the API server returns it, with the operator's managedFields."""
    obj = copy.deepcopy(applied)
    obj["metadata"]["managedFields"] = [
        {"manager": names.FIELD_MANAGER, "operation": "Apply", "fieldsV1": fields_v1(applied)}
    ]
    return obj


# --- imagePullSecrets -----------------------------------------------------------------------------------


def test_pull_secrets_are_the_pods_so_every_container_in_it_pulls_with_them() -> None:
    s = spec(
        **PULL, extensions=[{"name": "t", "type": "themes", "image": "reg.example/t:1", "path": "/themes"}]
    )
    p = pod(s)
    assert p["imagePullSecrets"] == [{"name": "registry"}, {"name": "mirror"}]
    assert p["initContainers"]  # the extension images are pulled by the same pod
    assert "imagePullSecrets" not in pod(spec())


def test_green_carries_the_pull_secrets() -> None:
    s = spec(**PULL)
    green = render_deployment(OWNER, s, image=s.image, track="b", version="v", green=True)
    assert green["spec"]["template"]["spec"]["imagePullSecrets"] == pod(s)["imagePullSecrets"]


def test_the_compatibility_check_pulls_with_both_pods_secrets() -> None:
    old_spec = spec(image="quay.io/keycloak/keycloak:26.7.0", imagePullSecrets=[{"name": "old"}])
    new_spec = spec(imagePullSecrets=[{"name": "old"}, {"name": "new"}])
    old = render_deployment(OWNER, old_spec, image=old_spec.image, track="a", version="1#a")
    new = render_deployment(OWNER, new_spec, image=new_spec.image, track="a", version="2#b")
    job = compatibility_check.job(OWNER, old, new, "kc-compat-1")
    assert job["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "old"}, {"name": "new"}]
    plain = compatibility_check.job(OWNER, render(spec()), render(spec()), "kc-compat-1")
    assert "imagePullSecrets" not in plain["spec"]["template"]["spec"]


def test_the_database_copy_job_pulls_with_them() -> None:
    s = KeycloakSpec.model_validate(
        {
            "image": builders.IMAGE,
            "database": {"external": {"host": "pg", "credentialsSecret": {"name": "pg"}}},
            "upgradePolicy": {"strategy": "BlueGreen", "databaseCopy": {"image": "reg.example/pg:17"}},
            **PULL,
        }
    )
    job = database_copy.job(OWNER, s, name="kc-dbcopy-1", source="keycloak", target="keycloak_2")
    assert job["spec"]["template"]["spec"]["imagePullSecrets"] == PULL["imagePullSecrets"]


@pytest.mark.parametrize(
    "value",
    [
        [{"name": "../other-ns/secret"}],
        [{"name": "Upper"}],
        [{"name": ""}],
        [{"name": "a"}, {"name": "a"}],
        [{"name": f"s{i}"} for i in range(17)],
    ],
)
def test_hostile_pull_secrets_are_refused_naming_the_field(value: list[dict[str, str]]) -> None:
    with pytest.raises(ValidationError, match="imagePullSecrets"):
        spec(imagePullSecrets=value)


def test_pull_secrets_are_part_of_the_version_and_unset_changes_nothing() -> None:
    assert versions.spec_hash(spec(**PULL)) != versions.spec_hash(spec())
    assert versions.spec_hash(spec(imagePullSecrets=None)) == versions.spec_hash(spec())


def test_pull_secrets_taken_out_are_drift() -> None:
    was = stored(render(spec(**PULL)))
    assert not drift.needs_apply(render(spec(**PULL)), was)
    assert drift.needs_apply(render(spec()), was)


# --- env from Secret and ConfigMap keys -----------------------------------------------------------------

FROM = [
    {"name": "SMTP_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "smtp", "key": "password"}}},
    {"name": "THEME", "valueFrom": {"configMapKeyRef": {"name": "branding", "key": "theme.name"}}},
    {"name": "PLAIN", "value": "x"},
]


def test_env_from_keys_reaches_the_pods_by_reference_in_order() -> None:
    env = builders.container(spec(env=FROM))["env"]
    user = [e for e in env if e["name"] in {"SMTP_PASSWORD", "THEME", "PLAIN"}]
    assert user == [
        {"name": "SMTP_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "smtp", "key": "password"}}},
        {"name": "THEME", "valueFrom": {"configMapKeyRef": {"name": "branding", "key": "theme.name"}}},
        {"name": "PLAIN", "value": "x"},
    ]


def test_the_referenced_objects_are_checked_before_pods_roll() -> None:
    s = spec(env=FROM)
    assert "smtp" in keycloak_config.referenced_secrets(s, "kc-initial-admin")
    assert keycloak_config.referenced_config_maps(s) == ["branding"]
    missing = reconcile.decide(s, observed(s), now=NOW)
    reasons = {c["reason"] for c in missing.status["conditions"] if c["type"] == "Degraded"}
    assert reasons <= {"SecretNotFound", "ConfigMapNotFound"} and reasons
    assert not any(o["kind"] == "Deployment" for o in missing.apply)
    ready = observed(s, existing_secrets=SECRETS | {"smtp"}, existing_config_maps=frozenset({"branding"}))
    assert any(o["kind"] == "Deployment" for o in reconcile.decide(s, ready, now=NOW).apply)


@pytest.mark.parametrize(
    "entry",
    [
        {"name": "X", "value": "v", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        {"name": "X", "valueFrom": {}},
        {
            "name": "X",
            "valueFrom": {
                "secretKeyRef": {"name": "s", "key": "k"},
                "configMapKeyRef": {"name": "c", "key": "k"},
            },
        },
        {"name": "X", "valueFrom": {"secretKeyRef": {"name": "../team-b/s", "key": "k"}}},
        {"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "a/b"}}},
        {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "Upper", "key": "k"}}},
        {"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},  # no such source here
    ],
)
def test_a_bad_env_source_is_refused_naming_the_field(entry: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="env"):
        spec(env=[entry])


def test_a_reserved_name_stays_reserved_from_a_secret_too() -> None:
    s = spec(env=[{"name": "KC_DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}])
    assert keycloak_config.reserved_env_conflicts(s) == ["env KC_DB_PASSWORD"]


@pytest.mark.parametrize("name", ["KC_CONFIG_FILE", "SMALLRYE_CONFIG_LOCATIONS", "smallrye_config_locations"])
def test_more_configuration_files_are_reserved(name: str) -> None:
    # A keycloak.conf of the user's (from a volume) could set the cache configuration file the operator leaves
    # unset on purpose.
    s = spec(env=[{"name": name, "value": "/mnt/conf/keycloak.conf"}])
    assert keycloak_config.reserved_env_conflicts(s) == [f"env {name}"]


def test_existing_env_keeps_its_version() -> None:
    """A Keycloak stored before valueFrom keeps its hash: no roll on an operator upgrade."""
    before = '"env":[{"name":"A","value":""}],'
    assert before in versions.canonical_json(spec(env=[{"name": "A"}]))


# --- JVM options ----------------------------------------------------------------------------------------


def env_of(s: KeycloakSpec) -> dict[str, Any]:
    return {e["name"]: e for e in builders.container(s)["env"]}


def test_jvm_options_follow_the_operators_own_in_java_opts_append() -> None:
    s = spec(jvm={"options": ["-XX:MaxRAMPercentage=60", "-Duser.timezone=UTC"]})
    value = env_of(s)["JAVA_OPTS_APPEND"]["value"]
    assert value == (
        "-Djgroups.dns.query=kc-discovery-a.ns.svc.cluster.local -XX:MaxRAMPercentage=60 -Duser.timezone=UTC"
    )
    # The discovery query is still read back from it (core/discovery.py).
    assert discovery.queries(render(s)) == ["kc-discovery-a.ns.svc.cluster.local"]


def test_unset_jvm_leaves_keycloaks_defaults_and_the_variable_as_it_was() -> None:
    """kc.sh's own heap default (70% of the container's memory) applies: nothing sets JAVA_OPTS or
    JAVA_OPTS_KC_HEAP."""
    env = env_of(spec())
    assert env["JAVA_OPTS_APPEND"]["value"] == "-Djgroups.dns.query=kc-discovery-a.ns.svc.cluster.local"
    assert "JAVA_OPTS" not in env and "JAVA_OPTS_KC_HEAP" not in env
    assert versions.spec_hash(spec(jvm={"options": []})) != versions.spec_hash(
        spec(jvm={"options": ["-Xss1m"]})
    )


def test_on_jdbc_ping_only_the_users_options_are_appended() -> None:
    jdbc = {"stack": "jdbc-ping"}
    assert "JAVA_OPTS_APPEND" not in env_of(spec(cacheIsolation=jdbc))
    s = spec(cacheIsolation=jdbc, jvm={"options": ["-Xss1m"]})
    assert env_of(s)["JAVA_OPTS_APPEND"]["value"] == "-Xss1m"


@pytest.mark.parametrize(
    "option",
    [
        "-Djgroups.dns.query=kc-discovery-b.other.svc.cluster.local",  # another cache cluster's members
        "-DJGroups.bind_addr=1.2.3.4",
        "-Dorg.jgroups.x=1",
        "-Dinfinispan.cluster.name=x",
        "-Dkc.cache-embedded-cluster-name=other",
        "-Dkc.db-url=jdbc:postgresql://other/db",
        "-Dquarkus.datasource.jdbc.url=jdbc:postgresql://other/db",
        "-XX:VMOptionsFile=/tmp/opts",
        "-XX:Flags=/tmp/flags",
        "-Dsmallrye.config.locations=/mnt/conf/keycloak.conf",  # more configuration, from a volume
        "-Djava.naming.provider.url=dns://192.0.2.1",  # a resolver of the user's
        "-Djdk.net.hosts.file=/mnt/hosts",
        "-Dsun.net.spi.nameservice.nameservers=192.0.2.1",
        "-Dnetworkaddress.cache.ttl=-1",
        "-XX:OnError=sh",  # a command the JVM runs
        "-XX:OnOutOfMemoryError=sh",
        "@/tmp/argfile",  # the launcher would read more options from it
        "-Da=b c",  # kc.sh splits at white space
        "-Da='b'",  # and reads quotes
        '-Da="b"',
        "-Da=\\b",
        "Xmx1g",  # not an option
        "-",
        "-" + "x" * 1024,
    ],
)
def test_a_jvm_option_that_could_reach_isolation_or_split_is_refused(option: str) -> None:
    with pytest.raises(ValidationError, match="jvm"):
        spec(jvm={"options": [option]})


def test_too_many_jvm_options_are_refused() -> None:
    with pytest.raises(ValidationError, match="jvm"):
        spec(jvm={"options": [f"-Dx{i}=1" for i in range(65)]})


def test_the_crd_refuses_the_same_jvm_options() -> None:
    rule = workload.jvm_reserved_rule()["rule"]
    for prefix in workload.JVM_RESERVED_PREFIXES:
        assert f"startsWith('{prefix}')" in rule


# --- the public Service and the pods' metadata ----------------------------------------------------------

SERVICE = {
    "type": "LoadBalancer",
    "annotations": {"service.beta.kubernetes.io/aws-load-balancer-internal": "true"},
    "labels": {"team": "identity", "app.kubernetes.io/part-of": "sso"},
}


def test_the_service_takes_type_and_metadata_and_keeps_its_selector_ports_and_labels() -> None:
    plain = children.public_service(OWNER, "a", spec())
    svc = children.public_service(OWNER, "a", spec(service=SERVICE))
    assert svc["spec"]["type"] == "LoadBalancer" and plain["spec"]["type"] == "ClusterIP"
    assert (
        svc["spec"]["selector"] == plain["spec"]["selector"]
        and svc["spec"]["ports"] == plain["spec"]["ports"]
    )
    assert svc["metadata"]["labels"] == {**SERVICE["labels"], **plain["metadata"]["labels"]}
    assert svc["metadata"]["annotations"] == SERVICE["annotations"]
    assert "annotations" not in plain["metadata"]


def test_service_settings_are_no_new_version_and_taking_them_out_is_drift() -> None:
    assert versions.spec_hash(spec(service=SERVICE)) == versions.spec_hash(spec())
    was = stored(children.public_service(OWNER, "a", spec(service=SERVICE)))
    assert not drift.needs_apply(children.public_service(OWNER, "a", spec(service=SERVICE)), was)
    assert drift.needs_apply(children.public_service(OWNER, "a", spec()), was)


def test_pod_metadata_reaches_the_template_under_the_operators_labels() -> None:
    meta = {"labels": {"team": "identity"}, "annotations": {"prometheus.io/scrape": "false"}}
    s = spec(podMetadata=meta)
    template = render(s)["spec"]["template"]["metadata"]
    plain = render(spec())["spec"]["template"]["metadata"]
    assert template["labels"] == {"team": "identity", **plain["labels"]}
    assert template["annotations"] == meta["annotations"] and "annotations" not in plain
    assert render(s)["spec"]["selector"] == render(spec())["spec"]["selector"]
    green = render_deployment(OWNER, s, image=s.image, track="b", version="v", green=True)
    assert green["spec"]["template"]["metadata"]["labels"]["team"] == "identity"
    assert versions.spec_hash(s) != versions.spec_hash(spec())  # the pods change: a new version


def test_pod_annotations_taken_out_are_drift_but_another_writers_are_not() -> None:
    s = spec(podMetadata={"annotations": {"a.example/x": "1"}})
    was = stored(render(s))
    assert drift.needs_apply(render(spec()), was)
    restarted = copy.deepcopy(stored(render(spec())))
    restarted["spec"]["template"]["metadata"]["annotations"] = {"kubectl.kubernetes.io/restartedAt": "t"}
    assert not drift.needs_apply(render(spec()), restarted)


RESERVED_KEYS = [
    "app.kubernetes.io/instance",
    "app.kubernetes.io/component",
    "app.kubernetes.io/name",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/version",
    "kcop.dev/track",
    "kcop.dev/cache-cluster",
    "kcop.dev/default-cache-cluster",
    "KCOP.dev/track",
    "sub.kcop.dev/x",
]


@pytest.mark.parametrize("key", RESERVED_KEYS)
@pytest.mark.parametrize("where", ["labels", "annotations"])
def test_the_operators_keys_are_refused_on_the_service_and_the_pods(key: str, where: str) -> None:
    for field in ("service", "podMetadata"):
        with pytest.raises(ValidationError, match=f"{field}.{where}"):
            spec(**{field: {where: {key: "x"}}})


@pytest.mark.parametrize(
    "body",
    [
        {"labels": {"bad key": "x"}},
        {"labels": {"ok": "not a label value"}},
        {"labels": {"ok": "x" * 64}},
        {"annotations": {"/x": "y"}},
        {"labels": {f"k{i}": "v" for i in range(33)}},
    ],
)
def test_malformed_metadata_is_refused(body: dict[str, Any]) -> None:
    for field in ("service", "podMetadata"):
        with pytest.raises(ValidationError, match=field):
            spec(**{field: body})


def test_a_service_type_outside_the_three_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"service\.type"):
        spec(service={"type": "ExternalName"})


def test_every_label_the_operator_puts_on_a_pod_or_service_is_reserved() -> None:
    s = spec()
    operator_keys = set(render(s)["spec"]["template"]["metadata"]["labels"])
    operator_keys |= set(children.public_service(OWNER, "a", s)["metadata"]["labels"])
    assert all(metadata.reserved_key(k) for k in operator_keys)


# --- volumes --------------------------------------------------------------------------------------------

VOLUMES = [
    {"name": "corp", "mountPath": "/etc/corp", "configMap": {"name": "corp-settings"}},
    {"name": "keys", "mountPath": "/var/run/keys", "secret": {"name": "signing"}, "subPath": "key.pem"},
    {"name": "scratch", "mountPath": "/var/scratch", "emptyDir": {"sizeLimit": "1Gi"}},
    {"name": "shared", "mountPath": "/srv/shared", "persistentVolumeClaim": {"claimName": "rwx"}},
]


def test_volumes_are_mounted_under_names_of_their_own() -> None:
    p = pod(spec(volumes=VOLUMES, tls={"secret": "t"}))
    (keycloak,) = p["containers"]
    mine = [v for v in p["volumes"] if v["name"].startswith("user-")]
    assert mine == [
        {"name": "user-corp", "configMap": {"name": "corp-settings"}},
        {"name": "user-keys", "secret": {"secretName": "signing"}},
        {"name": "user-scratch", "emptyDir": {"sizeLimit": "1Gi"}},
        {"name": "user-shared", "persistentVolumeClaim": {"claimName": "rwx"}},
    ]
    mounts = {m["name"]: m for m in keycloak["volumeMounts"]}
    assert mounts["user-corp"] == {"name": "user-corp", "mountPath": "/etc/corp", "readOnly": True}
    assert mounts["user-keys"]["subPath"] == "key.pem" and mounts["user-keys"]["readOnly"] is True
    assert "readOnly" not in mounts["user-scratch"] and "readOnly" not in mounts["user-shared"]
    assert "tls" in mounts  # the operator's own stay beside them
    assert len({v["name"] for v in p["volumes"]}) == len(p["volumes"])


def test_volume_sources_are_checked_before_pods_roll() -> None:
    s = spec(volumes=VOLUMES)
    assert "signing" in keycloak_config.referenced_secrets(s, "kc-initial-admin")
    assert keycloak_config.referenced_config_maps(s) == ["corp-settings"]


@pytest.mark.parametrize(
    "path",
    [
        "/opt/keycloak",
        "/opt/keycloak/conf",  # keycloak.conf could set the cache configuration
        "/opt/keycloak/providers/x.jar",
        "/opt",  # would hide Keycloak's home whole
        "/tmp",
        "/tmp/x",
        "/proc/self",
        "/dev",
        "/",
        "/etc/../opt/keycloak",
        "relative/path",
        "/etc/resolv.conf",  # a resolver of the user's could hand JGroups another cache cluster's pods
        "/etc/hosts",
        "/etc",
        "/var/run/secrets/kubernetes.io",
        "/run/secrets",
    ],
)
def test_no_volume_is_mounted_over_what_the_operator_uses(path: str) -> None:
    with pytest.raises(ValidationError, match="volumes"):
        spec(volumes=[{"name": "v", "mountPath": path, "emptyDir": {}}])


@pytest.mark.parametrize(
    "entry",
    [
        {"name": "v", "mountPath": "/etc/v"},  # no source
        {"name": "v", "mountPath": "/etc/v", "emptyDir": {}, "secret": {"name": "s"}},
        {"name": "V", "mountPath": "/etc/v", "emptyDir": {}},
        {"name": "v", "mountPath": "/etc/v", "secret": {"name": "../b/s"}},
        {"name": "v", "mountPath": "/etc/v", "emptyDir": {}, "subPath": "../x"},
    ],
)
def test_a_bad_volume_is_refused(entry: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="volumes"):
        spec(volumes=[entry])


def test_a_host_path_is_no_source_here() -> None:
    """Not offered (a tenant must never reach the node's files): the schema drops it, and alone it is no
    source at all."""
    alone = {"name": "v", "mountPath": "/etc/v", "hostPath": {"path": "/"}}
    with pytest.raises(ValidationError, match="exactly one"):
        spec(volumes=[alone])
    (mounted,) = [
        v for v in pod(spec(volumes=[{**alone, "emptyDir": {}}]))["volumes"] if v["name"] == "user-v"
    ]
    assert mounted == {"name": "user-v", "emptyDir": {}}


def test_two_volumes_on_one_path_or_name_are_refused() -> None:
    one = {"name": "a", "mountPath": "/etc/a", "emptyDir": {}}
    with pytest.raises(ValidationError, match="used twice"):
        spec(volumes=[one, {**one, "name": "b"}])
    with pytest.raises(ValidationError, match="listed twice"):
        spec(volumes=[one, {**one, "mountPath": "/etc/b"}])


def test_the_crd_refuses_the_same_mounts() -> None:
    rule = workload.VOLUME_RULES[1]["rule"]
    for forbidden in workload.FORBIDDEN_MOUNTS:
        assert f"self.mountPath.startsWith('{forbidden}/')" in rule


# --- the escape hatch -----------------------------------------------------------------------------------


def hatch(spec_part: dict[str, Any]) -> KeycloakSpec:
    return spec(unsupported={"podTemplate": {"spec": spec_part}})


def test_the_escape_hatch_is_merged_last_at_its_keys() -> None:
    s = hatch(
        {
            "runtimeClassName": "gvisor",
            "schedulerName": "bin-packer",
            "automountServiceAccountToken": False,
            "containers": [{"name": "keycloak", "imagePullPolicy": "Always"}],
        }
    )
    p = pod(s)
    assert (p["runtimeClassName"], p["schedulerName"]) == ("gvisor", "bin-packer")
    assert p["automountServiceAccountToken"] is False
    (keycloak,) = p["containers"]
    assert keycloak["imagePullPolicy"] == "Always" and keycloak["name"] == "keycloak"
    plain = builders.container(spec())
    assert {k: v for k, v in keycloak.items() if k != "imagePullPolicy"} == plain
    assert versions.spec_hash(s) != versions.spec_hash(spec())


def test_taking_the_escape_hatch_out_is_drift() -> None:
    s = hatch({"schedulerName": "other"})
    assert drift.needs_apply(render(spec()), stored(render(s)))


@pytest.mark.parametrize(
    "spec_part",
    [
        {"hostNetwork": True},  # the host's namespaces
        {"hostPID": True},
        {"dnsPolicy": "None", "dnsConfig": {"nameservers": ["10.0.0.1"]}},  # who JGroups' query resolves to
        {"hostAliases": [{"ip": "10.0.0.1", "hostnames": ["kc-discovery-a.ns.svc.cluster.local"]}]},
        {"readinessGates": [{"conditionType": "x"}]},  # upgrades wait for readiness
        {"volumes": [{"name": "conf", "emptyDir": {}}]},
        {"initContainers": [{"name": "x", "image": "x"}]},
        {"imagePullSecrets": [{"name": "x"}]},  # a field's
        {"containers": [{"name": "keycloak", "image": "evil:1"}]},
        {"containers": [{"name": "keycloak", "command": ["sh"]}]},
        {"containers": [{"name": "keycloak", "args": ["start-dev"]}]},
        {"containers": [{"name": "keycloak", "env": [{"name": "KC_CACHE_STACK", "value": "tcp"}]}]},
        {"containers": [{"name": "keycloak", "volumeMounts": [{"name": "x", "mountPath": "/opt"}]}]},
        {"containers": [{"name": "sidecar", "imagePullPolicy": "Always"}]},
        {"containers": [{"name": "keycloak"}, {"name": "keycloak"}]},
        {"containers": {"name": "keycloak"}},
    ],
)
def test_the_escape_hatch_refuses_what_isolation_upgrades_and_selectors_depend_on(
    spec_part: dict[str, Any],
) -> None:
    with pytest.raises(ValidationError, match=r"unsupported\.podTemplate"):
        hatch(spec_part)


def test_the_escape_hatch_has_no_metadata_so_no_selector_label() -> None:
    """Labels are podMetadata's, whose rule refuses the operator's keys; the hatch takes only spec."""
    s = spec(unsupported={"podTemplate": {"metadata": {"labels": {"kcop.dev/track": "b"}}, "spec": {}}})
    assert render(s)["spec"]["template"]["metadata"] == render(spec())["spec"]["template"]["metadata"]


@pytest.mark.parametrize(
    ("part", "path"),
    [
        ({"serviceAccountName": "keycloak-operator"}, "spec.serviceAccountName"),
        ({"automountServiceAccountToken": True}, "spec.automountServiceAccountToken (false only)"),
    ],
)
def test_the_escape_hatch_never_gives_the_pods_a_service_account_token(
    part: dict[str, Any], path: str
) -> None:
    with pytest.raises(ValidationError, match=re.escape(path)):
        hatch(part)
