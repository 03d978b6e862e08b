"""The real-pod upgrade benchmark's figures, from made-up pods, logs and sign-ins (no cluster)."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Any

import pytest

from bench.bench_real_upgrade import (
    PodRecord,
    image_at,
    keycloak_log_times,
    median_of,
    observe_pod,
    parse_time,
    pod_figures,
    standalone_deployment,
    status_mark,
    upgrade_done,
    upgrade_figures,
)
from hack.operator_keycloak_env import operator_keycloak_env
from keycloak_operator.core import children
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec
from localcluster import app_images, real_keycloak
from localcluster.signins import Attempt

OLD, NEW = "quay.io/keycloak/keycloak:26.7.0", "quay.io/keycloak/keycloak:26.7.3"
T0 = parse_time("2026-11-23T12:00:00Z")  # the image change
OFFSET = 1_000_000.0  # epoch = monotonic + OFFSET


def stamp(seconds_after_t0: float) -> str:
    return dt.datetime.fromtimestamp(T0 + seconds_after_t0, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(name: str, ip: str, image: str, created: float, ready: float | None = None) -> dict[str, Any]:
    conditions = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp(created)}]
    if ready is not None:
        conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": stamp(ready)})
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": stamp(created)},
        "spec": {"containers": [{"name": "keycloak", "image": image}]},
        "status": {
            "podIP": ip,
            "conditions": conditions,
            "containerStatuses": [
                {"restartCount": 0, "state": {"running": {"startedAt": stamp(created + 2)}}}
            ],
        },
    }


def record(
    name: str, ip: str, image: str, created: float, ready: float | None, last_seen: float
) -> PodRecord:
    """A pod as the polls saw it, its times in seconds after the change; its container started 2 s in."""
    return PodRecord(
        name=name,
        uid=f"uid-{name}",
        ip=ip,
        image=image,
        created=T0 + created,
        started=T0 + created + 2,
        ready=None if ready is None else T0 + ready,
        first_seen=T0 + created,
        last_seen=T0 + last_seen,
    )


def attempt(at: float, ip: str, ok: bool = True, seconds: float = 0.1) -> Attempt:
    """A sign-in sent `at` seconds after the change (on the monotonic clock), answered by `ip`."""
    return Attempt(
        at=T0 + at - OFFSET,
        seconds=seconds,
        grant="password",
        status=200 if ok else 0,
        error="" if ok else "ConnectionRefusedError()",
        served_by=ip,
    )


def test_parse_time_reads_the_api_servers_seconds_and_the_kubelets_nanoseconds() -> None:
    assert parse_time("2026-11-23T12:00:00Z") == T0
    assert parse_time("2026-11-23T12:00:01.123456789Z") == pytest.approx(T0 + 1.123456)
    with pytest.raises(ValueError):
        parse_time("Updating")


def test_a_pod_record_keeps_its_first_ready_time_and_its_address() -> None:
    first = observe_pod(None, pod("a", "", NEW, created=1), now=T0 + 1.5)
    assert first.ready is None and first.ip == "" and first.first_seen == T0 + 1.5
    assert first.created == T0 + 1 and first.started == T0 + 3
    second = observe_pod(first, pod("a", "10.0.0.5", NEW, created=1, ready=40), now=T0 + 41)
    assert second.ready == T0 + 40 and second.ip == "10.0.0.5"
    assert second.first_seen == T0 + 1.5 and second.last_seen == T0 + 41
    # Not Ready for a while, then Ready again: the first time counts.
    third = observe_pod(second, pod("a", "10.0.0.5", NEW, created=1, ready=70), now=T0 + 71)
    assert third.ready == T0 + 40


def test_an_address_maps_to_the_image_of_the_pod_that_had_it_then() -> None:
    pods = [
        record("old", "10.0.0.5", OLD, created=-300, ready=-250, last_seen=20),
        record("new", "10.0.0.5", NEW, created=100, ready=150, last_seen=200),  # the address reused
    ]
    assert image_at(pods, "10.0.0.5", T0 - 10) == OLD
    assert image_at(pods, "10.0.0.5", T0 + 160) == NEW
    assert image_at(pods, "10.0.0.5", T0 + 210) == NEW  # after the last poll: the nearest
    assert image_at(pods, "10.0.0.9", T0) == ""
    assert image_at(pods, "", T0) == ""


def test_the_upgrade_is_done_once_the_new_version_is_current_and_both_replicas_ready() -> None:
    done = {"versions": {"currentVersion": "26.7.3#abc", "nextVersion": ""}, "readyReplicas": 2}
    assert upgrade_done(done, "26.7.3")
    assert not upgrade_done({**done, "readyReplicas": 1}, "26.7.3")
    assert not upgrade_done(
        {**done, "versions": {"currentVersion": "26.7.3#abc", "nextVersion": "x"}}, "26.7.3"
    )
    assert not upgrade_done({**done, "versions": {"currentVersion": "26.7.0#abc"}}, "26.7.3")
    assert not upgrade_done({}, "26.7.3")
    mark = status_mark(
        {
            "phase": "Upgrading",
            "blueGreen": {"state": "WaitingForGreen"},
            "versions": {"nextVersion": "26.7.3#x"},
        }
    )
    assert mark == "Upgrading blueGreen=WaitingForGreen next=26.7.3 ready=None"


# As the API server returns them with ?timestamps=true (lines from the real node, shortened).
START_LOG = """\
2026-11-23T12:00:03.000000000Z Appending additional Java properties to JAVA_OPTS
2026-11-23T12:00:10.500000000Z Changes detected in configuration. Updating the server image.
2026-11-23T12:00:10.600000000Z Updating the configuration and installing your custom providers, if any. Please wait.
2026-11-23T12:00:21.500000000Z 2026-11-23 12:00:21,500 INFO  [io.quarkus.deployment.QuarkusAugmentor] (main) Quarkus augmentation completed in 10843ms
2026-11-23T12:00:21.600000000Z Server configuration updated and persisted. Run the following command to review the configuration:
2026-11-23T12:00:21.600000000Z
2026-11-23T12:00:21.600000000Z \tkc.sh show-config
2026-11-23T12:00:21.700000000Z Next time you run the server, just add --optimized to the command to ensure this build is used.
2026-11-23T12:00:45.250000000Z 2026-11-23 12:00:45,250 INFO  [io.quarkus] (main) Keycloak 26.7.3 on JVM (powered by Quarkus 3.33.3.1) started in 22.917s. Listening on: http://0.0.0.0:8080. Management interface listening on http://0.0.0.0:9000.
2026-11-23T12:00:45.300000000Z 2026-11-23 12:00:45,300 INFO  [io.quarkus] (main) Profile prod activated.
2026-11-23T12:00:45.900000000Z 2026-11-23 12:00:45,900 INFO  [io.smallrye.health] (vert.x-eventloop-thread-0) SRHCK01001: Reporting health down status: {"status":"DOWN","checks":[{"name":"Keycloak Initialized","status":"DOWN"}]}
2026-11-23T12:00:51.500000000Z 2026-11-23 12:00:51,500 INFO  [org.keycloak.services.resources.KeycloakApplication] (executor-thread-1) Bootstrap completed in 6.250000 seconds
"""  # noqa: E501
OPTIMIZED_LOG = """\
2026-11-23T12:00:03.000000000Z Appending additional Java properties to JAVA_OPTS
2026-11-23T12:00:20.000000000Z 2026-11-23 12:00:07,000 INFO  [org.keycloak.truststore.TruststoreBuilder] (main) Found the following truststore files
2026-11-23T12:00:26.000000000Z 2026-11-23 12:00:26,000 INFO  [io.quarkus] (main) Keycloak 26.7.3 on JVM (powered by Quarkus 3.33.3.1) started in 22.500s. Listening on: http://0.0.0.0:8080.
"""  # noqa: E501


def test_keycloaks_log_says_when_it_re_augmented_and_when_it_started() -> None:
    start = keycloak_log_times(START_LOG)
    assert start["first_line"] == T0 + 3
    assert start["augmented"] == pytest.approx(T0 + 21.6) and start["augmentation_s"] == pytest.approx(18.6)
    assert start["quarkus_augmentation_s"] == pytest.approx(10.843)
    assert start["started"] == pytest.approx(T0 + 45.25) and start["started_in_s"] == pytest.approx(22.917)
    # Keycloak 26.7 bootstraps after "started"; /health/ready waits for it.
    assert start["bootstrapped"] == pytest.approx(T0 + 51.5)
    optimized = keycloak_log_times(OPTIMIZED_LOG)
    assert optimized["augmented"] is None and optimized["augmentation_s"] is None
    assert optimized["quarkus_augmentation_s"] is None
    assert optimized["started"] == T0 + 26 and optimized["started_in_s"] == 22.5
    assert optimized["bootstrapped"] is None  # a version that logs no such line
    assert keycloak_log_times("")["started"] is None


def test_a_pods_start_in_seconds_from_its_creation() -> None:
    p = record("g1", "10.0.0.7", NEW, created=1, ready=60, last_seen=100)
    figures = pod_figures(p, keycloak_log_times(START_LOG), since=T0)
    assert figures["ready_s"] == 59 and figures["container_started_s"] == 2
    assert figures["keycloak_started_s"] == 44.25 and figures["keycloak_started_in_s"] == pytest.approx(
        22.917
    )
    assert figures["augmentation_s"] == pytest.approx(18.6)
    assert figures["quarkus_augmentation_s"] == pytest.approx(10.843)
    assert figures["started_to_ready_s"] == 14.75  # Keycloak's bootstrap, then the probes
    assert figures["keycloak_bootstrapped_s"] == 50.5
    assert figures["bootstrapped_to_ready_s"] == 8.5  # the probes' share
    assert figures["created_after_change_s"] == 1 and figures["ready_after_change_s"] == 60
    assert pod_figures(replace(p, ready=None), {})["ready_s"] is None


def blue_green() -> list[PodRecord]:
    return [
        record("blue-1", "10.0.0.1", OLD, created=-300, ready=-240, last_seen=90),
        record("blue-2", "10.0.0.2", OLD, created=-300, ready=-238, last_seen=90),
        record("green-1", "10.0.0.3", NEW, created=2, ready=60, last_seen=120),
        record("green-2", "10.0.0.4", NEW, created=2, ready=64, last_seen=120),
    ]


def test_blue_green_figures_from_the_sign_ins_and_the_pods() -> None:
    attempts = [
        attempt(-5, "10.0.0.1"),
        attempt(-4, "10.0.0.2"),
        attempt(30, "10.0.0.1"),
        attempt(64.5, "10.0.0.2"),  # still blue: the selector has not moved yet
        attempt(65.0, "10.0.0.3", seconds=0.2),  # green's first answer, at 65.2
        attempt(66, "10.0.0.9", ok=False),  # nobody known: failed and untraced
        attempt(100, "10.0.0.4"),
        attempt(120, "10.0.0.3"),
    ]
    f = upgrade_figures(attempts, blue_green(), offset=OFFSET, changed=T0, completed=T0 + 90, to_image=NEW)
    s = f["signins"]
    assert (s["attempted"], s["failed"]) == (8, 1)
    assert (s["attempted_during_upgrade"], s["failed_during_upgrade"]) == (4, 1)  # from 0 to 90 s
    assert s["first_failure_s"] == s["last_failure_s"] == 66
    assert s["answered_by_image"] == {OLD: 4, NEW: 3, "untraced": 1}
    assert s["failures"] == ["66.0 s: 0 ConnectionRefusedError() (reached 10.0.0.9, no pod)"]
    assert f["first_new_pod_created_s"] == 2 and f["first_new_pod_ready_s"] == 60
    assert f["green_serving_s"] == 65.2 and f["completed_s"] == 90
    assert f["slowest_new_pod_ready_s"] == 62  # green-2: created at 2, Ready at 64
    assert f["overhead_s"] == 3.2  # 65.2 - 62: the operator's share beyond Keycloak's start
    assert f["overhead_vs_pods_ready_by_then_s"] == 3.2  # both green pods were Ready by then
    assert f["first_ready_to_traffic_s"] == 5.2  # green-1 Ready at 60, first green answer at 65.2


def test_rolling_figures_count_the_first_new_pod_serving_as_soon_as_it_is_ready() -> None:
    pods = [
        record("old-1", "10.0.0.1", OLD, created=-300, ready=-240, last_seen=70),
        record("old-2", "10.0.0.2", OLD, created=-300, ready=-240, last_seen=140),
        record("new-1", "10.0.0.3", NEW, created=1, ready=55, last_seen=200),
        record("new-2", "10.0.0.4", NEW, created=62, ready=130, last_seen=200),
    ]
    attempts = [attempt(-1, "10.0.0.1"), attempt(56, "10.0.0.3"), attempt(131, "10.0.0.4")]
    f = upgrade_figures(attempts, pods, offset=OFFSET, changed=T0, completed=T0 + 140, to_image=NEW)
    assert f["green_serving_s"] == 56.1
    assert f["slowest_new_pod_ready_s"] == 68  # new-2, which started after new-1 served
    assert f["overhead_s"] == -11.9  # against the slowest: meaningless when rolling...
    assert f["overhead_vs_pods_ready_by_then_s"] == 2.1  # ...against the pod that served: 56.1 - 54
    assert f["first_ready_to_traffic_s"] == 1.1


def test_no_green_answer_and_no_completion_leave_the_figures_empty() -> None:
    f = upgrade_figures(
        [attempt(-1, "10.0.0.1"), attempt(10, "10.0.0.1")],
        blue_green()[:2],
        offset=OFFSET,
        changed=T0,
        completed=None,
        to_image=NEW,
    )
    assert f["green_serving_s"] is None and f["completed_s"] is None and f["overhead_s"] is None
    assert f["first_new_pod_created_s"] is None and f["first_ready_to_traffic_s"] is None
    assert f["signins"]["attempted_during_upgrade"] == 1


def test_median_skips_missing_values() -> None:
    assert median_of([{"x": 1.0}, {"x": None}, {"x": 3.0}, {}], "x") == 2.0
    assert median_of([{"x": None}], "x") is None


def test_the_standalone_deployment_runs_the_operators_pod_under_its_own_name() -> None:
    ns, image = "bench-ready", "quay.io/keycloak/keycloak:26.7.3-optimized"
    d = standalone_deployment(ns, "optimized", image, ["start", "--optimized"], replicas=2)
    resource = real_keycloak.keycloak(
        "sso", ns, image, upgradePolicy={"strategy": "Recreate"}, cacheIsolation={"autoRevision": True}
    )
    spec = KeycloakSpec.model_validate(resource["spec"])
    rendered = render_deployment(
        children.Owner("sso", ns, ""), spec, image=image, track=names.TRACKS[0], version=image
    )
    pod_spec, operators = d["spec"]["template"]["spec"], rendered["spec"]["template"]["spec"]
    container, theirs = pod_spec["containers"][0], operators["containers"][0]
    assert container["env"] == theirs["env"] and container["readinessProbe"] == theirs["readinessProbe"]
    assert container["image"] == image and container["args"] == ["start", "--optimized"]
    assert pod_spec["nodeSelector"] == operators["nodeSelector"] and pod_spec["tolerations"]
    assert d["metadata"] == {"name": "optimized", "namespace": ns, "labels": {"app": "optimized"}}
    assert d["spec"]["selector"] == {"matchLabels": {"app": "optimized"}} and d["spec"]["replicas"] == 2
    # Nothing selects it: not the operator's Services, not its discovery (no instance or track label).
    assert d["spec"]["template"]["metadata"]["labels"] == {"app": "optimized"}


def test_the_optimised_image_is_built_with_the_operators_literal_keycloak_variables() -> None:
    env = operator_keycloak_env("26.7.3")
    assert {"KC_DB=postgres", "KC_HEALTH_ENABLED=true", "KC_METRICS_ENABLED=true"} <= set(env)
    assert all(line.startswith("KC_") and "=" in line for line in env)
    # The credentials come from Secrets at run time, never into an image.
    assert not any(
        line.startswith(("KC_DB_PASSWORD", "KC_DB_USERNAME", "KC_BOOTSTRAP_ADMIN")) for line in env
    )
    assert app_images.keycloak_image("26.7.3") == "quay.io/keycloak/keycloak:26.7.3"
