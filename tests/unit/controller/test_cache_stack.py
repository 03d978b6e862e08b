"""The jdbc-ping stack (cacheIsolation.stack, ADR 0021): what it renders, when its cluster name isolates,
that changing the stack recreates, and 26.8's cluster-name check in the planner."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core import children, rollout, upgrade_plan
from keycloak_operator.core.cache_cluster import resolve_cache_cluster
from keycloak_operator.kernel import names
from keycloak_operator.models.cache_isolation import CacheIsolation
from tests.unit.controller.test_children import env_of, inputs, spec
from tests.unit.controller.test_rollout import dep

IMG = "quay.io/keycloak/keycloak"


def jdbc(**kw: object) -> CacheIsolation:
    return CacheIsolation.model_validate({"stack": "jdbc-ping", **kw})


def test_kubernetes_stays_the_default_so_no_running_pod_moves_under_an_operator_upgrade() -> None:
    # Unset, not a default value: a default would enter every spec's hash and start a new version for every
    # Keycloak when the operator is upgraded (test_versions pins those hashes).
    assert CacheIsolation().stack is None and CacheIsolation().stack_in_use == "kubernetes"
    env = env_of(children.deployment(inputs()))
    assert env["KC_CACHE_STACK"]["value"] == "kubernetes" and "JAVA_OPTS_APPEND" in env


def test_jdbc_ping_renders_the_stack_and_no_dns_query_and_keeps_the_name() -> None:
    jdbc_spec = spec(cacheIsolation={"stack": "jdbc-ping", "autoRevision": True})
    env = env_of(children.deployment(inputs(spec=jdbc_spec)))
    assert env["KC_CACHE_STACK"]["value"] == "jdbc-ping"
    assert "JAVA_OPTS_APPEND" not in env  # no DNS discovery: peers come from the database
    assert env["KC_SPI_CACHE_EMBEDDED__DEFAULT__CLUSTER_NAME"]["value"] == "kc-v26"


@pytest.mark.parametrize("tag", ["26.7.0", "26.7.3", "26.8.0", "27.1.0"])
def test_from_26_7_the_name_isolates_on_one_database(tag: str) -> None:
    r = resolve_cache_cluster("kc", jdbc(autoRevision=True), f"{IMG}:{tag}")
    assert r.isolated and not r.warning and r.name is not None
    assert "by name: jdbc-ping finds peers by cluster name in the database" in r.reason


@pytest.mark.parametrize("image", [f"{IMG}:25.0.6", f"{IMG}:26.5.6", f"{IMG}:26.6.1", f"{IMG}:latest"])
def test_before_26_7_jdbc_ping_claims_no_isolation_and_warns(image: str) -> None:
    """Every node on one database joins `ISPN` there: ADR 0003 wants a warning, never false confidence."""
    r = resolve_cache_cluster("kc", jdbc(clusterName="blue"), image)
    assert (r.name, r.isolated, r.warning) == ("blue", False, True)
    assert "every node on one database joins one cluster" in r.reason and len(r.reason) <= 300


@given(
    st.sampled_from(["kubernetes", "jdbc-ping"]),
    st.integers(24, 28),
    st.integers(0, 9),
    st.one_of(st.none(), st.sampled_from(["blue", "green"])),
)
def test_isolation_is_claimed_only_where_it_holds(
    stack: str, major: int, minor: int, name: str | None
) -> None:
    isolation = CacheIsolation.model_validate({"stack": stack, "clusterName": name})
    r = resolve_cache_cluster("kc", isolation, f"{IMG}:{major}.{minor}.0")
    honoured = (major, minor) >= (26, 7)
    # kubernetes: membership isolates any named cluster; jdbc-ping: only the name, where Keycloak honours it.
    assert r.isolated == (name is not None and (stack == "kubernetes" or honoured))


def with_stack(deployment: dict, stack: str) -> dict:
    deployment["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "KC_CACHE_STACK", "value": stack}
    ]
    return deployment


def test_changing_the_stack_recreates_and_keeping_it_does_not() -> None:
    old = with_stack(dep("kc:26.7.3", "kc-v26"), "kubernetes")
    assert rollout.use_recreate(old, "kc-v26", "jdbc-ping")
    assert not rollout.use_recreate(old, "kc-v26", "kubernetes")
    assert not rollout.use_recreate(dep("kc:26.7.3", "kc-v26"), "kc-v26", "jdbc-ping")  # no stack rendered
    assert rollout.cache_stack_of(old) == "kubernetes"


def planned(old: str, new: str, **kw: object) -> upgrade_plan.Plan:
    given_input = upgrade_plan.PlanInput(f"{IMG}:{old}", f"{IMG}:{new}", strategy="BlueGreen", **kw)  # type: ignore[arg-type]
    return upgrade_plan.plan(given_input)


@pytest.mark.parametrize(
    ("kw", "path"),
    [
        ({}, upgrade_plan.REFUSE),
        ({"copy_possible": True}, upgrade_plan.BLUE_GREEN_COPY),  # a copy holds no other name
        ({"allow_downtime": True}, upgrade_plan.RECREATE),
    ],
)
def test_from_26_8_green_under_a_new_name_beside_blue_on_jdbc_ping_takes_the_not_compatible_rows(
    kw: dict, path: str
) -> None:
    p = planned("26.8.0", "26.8.1", jdbc_ping=True, green_renamed=True, **kw)
    assert p.path == path and not p.compatible
    assert "report unhealthy" in p.reason and "stack kubernetes" in p.reason


@pytest.mark.parametrize(
    ("old", "new", "kw", "path"),
    [
        ("26.8.0", "26.8.1", {"jdbc_ping": True}, upgrade_plan.BLUE_GREEN_SHARED),  # one name: one cluster
        ("26.8.0", "26.8.1", {"green_renamed": True}, upgrade_plan.BLUE_GREEN_SHARED),  # kubernetes stack
        ("26.7.0", "26.7.3", {"jdbc_ping": True, "green_renamed": True}, upgrade_plan.BLUE_GREEN_SHARED),
        (  # a copy: green on its own database, where no other name is
            "26.7.3",
            "26.8.0",
            {"jdbc_ping": True, "green_renamed": True, "copy_possible": True},
            upgrade_plan.BLUE_GREEN_COPY,
        ),
    ],
)
def test_the_name_check_matters_only_for_two_names_on_one_database_from_26_8(
    old: str, new: str, kw: dict, path: str
) -> None:
    assert planned(old, new, **kw).path == path


def test_for_deployment_compares_green_s_name_with_the_running_pods() -> None:
    policy = {"strategy": "BlueGreen"}
    isolation = {"stack": "jdbc-ping", "clusterName": "green"}
    bg_spec = spec(image=f"{IMG}:26.8.1", cacheIsolation=isolation, upgradePolicy=policy)
    blue = with_stack(dep(f"{IMG}:26.8.0", "blue"), "jdbc-ping")
    same = with_stack(dep(f"{IMG}:26.8.0", "green"), "jdbc-ping")
    assert upgrade_plan.for_deployment(bg_spec, "kc", blue).path == upgrade_plan.REFUSE
    assert upgrade_plan.for_deployment(bg_spec, "kc", same).path == upgrade_plan.BLUE_GREEN_SHARED
    # Blue on the kubernetes stack writes no discovery rows for green to find.
    kube_blue = with_stack(dep(f"{IMG}:26.8.0", "blue"), "kubernetes")
    assert upgrade_plan.for_deployment(bg_spec, "kc", kube_blue).path == upgrade_plan.BLUE_GREEN_SHARED
    # The default strategy rolls a patch release, one cluster, whatever the stack.
    rolled = spec(image=f"{IMG}:26.8.1", cacheIsolation=isolation)
    assert upgrade_plan.for_deployment(rolled, "kc", same).path == upgrade_plan.ROLL
    assert names.LABEL_CACHE_CLUSTER in blue["spec"]["template"]["metadata"]["labels"]


@pytest.mark.parametrize(
    ("stack", "downtime", "path"),
    [
        ("kubernetes", False, upgrade_plan.BLUE_GREEN_COPY),
        ("jdbc-ping", False, upgrade_plan.REFUSE),
        ("jdbc-ping", True, upgrade_plan.RECREATE),
    ],
)
def test_a_cnpg_recovery_is_no_copy_for_jdbc_ping_since_it_carries_blue_s_discovery_rows(
    stack: str, downtime: bool, path: str
) -> None:
    cnpg = spec(
        image=f"{IMG}:26.7.3",
        database={"cnpg": {"clusterName": "kcdb"}},
        cacheIsolation={"stack": stack, "autoRevision": True},
        upgradePolicy={"strategy": "BlueGreen", "databaseCopy": {}, "allowDowntime": downtime},
    )
    p = upgrade_plan.for_deployment(cnpg, "kc", dep(f"{IMG}:26.5.6", "kc-v26"))
    assert p.path == path
    assert ("discovery rows" in p.reason) == (stack == "jdbc-ping")


def test_before_26_7_every_name_in_use_is_ispn_so_labels_that_differ_are_no_rename() -> None:
    """Blue 26.6 writes `ISPN` rows whatever its label; a green 26.8 under `ISPN`... is what the labels
    hide: compare the names Keycloak uses."""
    policy = {"strategy": "BlueGreen"}
    green_spec = spec(
        image=f"{IMG}:26.8.1",
        cacheIsolation={"stack": "jdbc-ping", "autoRevision": True},
        upgradePolicy=policy,
    )
    blue_26_6 = with_stack(dep(f"{IMG}:26.6.2", "kc-v26"), "jdbc-ping")  # label kc-v26, name in use ISPN
    p = upgrade_plan.for_deployment(green_spec, "kc", blue_26_6, check_exit=0)
    assert p.path == upgrade_plan.REFUSE and "report unhealthy" in p.reason
