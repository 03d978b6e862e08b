"""Keycloak's compatibility check as a Job: when it runs, what it runs, how its answer is read, and that
nothing moves until it answers."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from keycloak_operator.core import bluegreen as bg
from keycloak_operator.core import compatibility_check as cc
from keycloak_operator.core import reconcile, rollout, upgrade_plan
from keycloak_operator.core.decide_inputs import Observed
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.models.keycloak import KeycloakSpec
from tests.unit import builders
from tests.unit.builders import OWNER

OLD = "quay.io/keycloak/keycloak:26.7.0"
NEW = "quay.io/keycloak/keycloak:26.7.3"


def spec(image: str = NEW, check: bool = True, **policy: Any) -> KeycloakSpec:
    return builders.spec(image=image, upgradePolicy={"compatibilityCheck": check, **policy})


@pytest.mark.parametrize(
    ("running", "wanted", "asked", "runs"),
    [
        (OLD, NEW, True, True),
        (OLD, NEW, False, False),  # opt-in
        (NEW, NEW, True, False),  # no image change: nothing to check
        ("quay.io/keycloak/keycloak:26.1.4", NEW, True, False),  # the old release has no such command
        (OLD, "quay.io/keycloak/keycloak:latest", True, False),  # no release named
        ("quay.io/keycloak/keycloak:26.2.0", "quay.io/keycloak/keycloak:26.5.6", True, True),
    ],
)
def test_the_check_runs_only_where_asked_and_both_releases_have_it(
    running: str, wanted: str, asked: bool, runs: bool
) -> None:
    assert cc.wanted(spec(wanted, asked), running) is runs


def test_one_job_per_pair_of_rendered_versions() -> None:
    a = cc.job_name("kc", "26.7.0#aaa", "26.7.3#bbb")
    assert a == cc.job_name("kc", "26.7.0#aaa", "26.7.3#bbb") and a.startswith("kc-compat-")
    assert a != cc.job_name("kc", "26.7.0#aaa", "26.7.3#ccc")  # a configuration change asks again


def deployments(s_old: KeycloakSpec, s_new: KeycloakSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    old = render_deployment(OWNER, s_old, image=s_old.image, track="a", version="26.7.0#aaa")
    new = render_deployment(OWNER, s_new, image=s_new.image, track="a", version="26.7.3#bbb")
    return old, new


def test_the_job_runs_metadata_with_the_old_container_then_check_with_the_new() -> None:
    tls = {"tls": {"secret": "kc-tls"}}
    old, new = deployments(spec(OLD), builders.spec(image=NEW, **tls))
    job = cc.job(OWNER, old, new, "kc-compat-1")
    pod = job["spec"]["template"]["spec"]
    (metadata,), (check,) = pod["initContainers"], pod["containers"]
    assert (metadata["image"], check["image"]) == (OLD, NEW)
    assert metadata["command"] == check["command"] == ["/opt/keycloak/bin/kc.sh"]
    assert metadata["args"][0] == check["args"][0] == "update-compatibility"
    assert metadata["args"][1] == "metadata" and check["args"][1] == "check"
    assert metadata["args"][2] == check["args"][2]  # one file, shared through the emptyDir
    assert {e["name"] for e in check["env"]} >= {"KC_HTTPS_CERTIFICATE_FILE", "KC_DB"}
    # The TLS Secret is there for the new configuration; no probes, ports or hooks.
    assert {v["name"] for v in pod["volumes"]} >= {"check"} and any("secret" in v for v in pod["volumes"])
    assert not any(k in check for k in ("readinessProbe", "ports", "lifecycle"))
    rule = job["spec"]["podFailurePolicy"]["rules"][0]
    assert rule["onExitCodes"] == {"containerName": "check", "operator": "In", "values": [3]}
    assert job["spec"]["backoffLimit"] == 0 and pod["restartPolicy"] == "Never"
    assert job["metadata"]["ownerReferences"] == [OWNER.reference()]


def test_the_check_keeps_the_servers_nodes_but_not_their_anti_affinity() -> None:
    """A required "one server per node" would keep the check off every node a server runs on."""
    node = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["sso"]}]}
            ]
        }
    }
    apart = {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "kc"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
    placed = {"scheduling": {"affinity": {"nodeAffinity": node, "podAntiAffinity": apart}}}
    old, new = deployments(spec(OLD), builders.spec(image=NEW, **placed))
    assert new["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"] == apart  # the servers keep it
    pod = cc.job(OWNER, old, new, "kc-compat-1")["spec"]["template"]["spec"]
    assert pod["affinity"] == {"nodeAffinity": node}
    only_apart = {"scheduling": {"affinity": {"podAntiAffinity": apart}}}
    old, new = deployments(spec(OLD), builders.spec(image=NEW, **only_apart))
    assert "affinity" not in cc.job(OWNER, old, new, "kc-compat-1")["spec"]["template"]["spec"]


def test_filled_empty_dirs_are_never_mounted_empty() -> None:
    ext = {
        "extensions": [
            {"name": "theme", "image": "registry.example/theme:1", "path": "/themes/x", "kind": "Theme"}
        ]
    }
    s = builders.spec(image=NEW, **ext)
    old, new = deployments(s.model_copy(update={"image": OLD}), s)
    pod = cc.job(OWNER, old, new, "j")["spec"]["template"]["spec"]
    assert all("emptyDir" not in v or v["name"] == "check" for v in pod["volumes"])


@pytest.mark.parametrize(
    ("conditions", "code"),
    [
        ([], None),
        ([{"type": "Complete", "status": "True"}], 0),
        ([{"type": "Failed", "status": "True", "reason": "PodFailurePolicy"}], 3),
        ([{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}], cc.ERROR),
        ([{"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}], cc.ERROR),
        ([{"type": "Failed", "status": "False", "reason": "PodFailurePolicy"}], None),
    ],
)
def test_the_answer_is_read_from_the_jobs_conditions(
    conditions: list[dict[str, str]], code: int | None
) -> None:
    assert cc.exit_code({"status": {"conditions": conditions}}) == code
    assert cc.exit_code(None) is None
    answer = cc.answer("j", {"metadata": OWNED, "status": {"conditions": conditions}}, OWNER)
    assert answer.pending is (code is None) and answer.exists and not answer.foreign


OWNED = {"ownerReferences": [{"uid": OWNER.uid, "controller": True}]}


@pytest.mark.parametrize(
    "metadata",
    [
        {},
        {"ownerReferences": [{"uid": "someone-else", "controller": True}]},
        {"ownerReferences": [{"uid": OWNER.uid}]},
    ],
)
def test_a_job_this_keycloak_did_not_make_is_never_its_answer(metadata: dict[str, Any]) -> None:
    """Whoever may create Jobs in the namespace could otherwise forge "rolling update possible"."""
    forged = {"metadata": metadata, "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    answer = cc.answer("kc-compat-1", forged, OWNER)
    assert answer.foreign and answer.pending and answer.exit is None
    s, world = observed_change(answer)
    decision = reconcile.decide(s, world, now=builders.NOW)
    assert not any(o["kind"] in ("Deployment", "Job") for o in [*decision.apply, *decision.create])
    assert not any(o["kind"] == "Job" for o in decision.delete)
    degraded = [c for c in (decision.status or {})["conditions"] if c["type"] == "Degraded"]
    assert degraded[0]["reason"] == "ChildNotOwned" and "Job kc-compat-1" in degraded[0]["message"]
    assert any(e.reason == "ChildNotOwned" for e in decision.events)
    assert "is not this Keycloak's" in cc.for_plan(spec(NEW, True), OLD, answer)


@pytest.mark.parametrize(
    ("code", "path"), [(0, upgrade_plan.ROLL), (3, upgrade_plan.RECREATE), (cc.ERROR, upgrade_plan.ROLL)]
)
def test_the_answer_chooses_the_path(code: int, path: str) -> None:
    # 26.7.0 -> 26.7.3 rolls by the version rule; "not possible" recreates; an error leaves it to the rule.
    assert upgrade_plan.for_spec(spec(), OLD, code).path == path


def observed_change(answer: cc.Answer) -> tuple[KeycloakSpec, Observed]:
    s = spec()
    running = builders.deployment(spec(OLD))
    return s, builders.observed(s, deployment=running, compatibility=answer)


def test_nothing_moves_until_the_check_answers_and_the_job_is_created_once() -> None:
    s, world = observed_change(cc.Answer("kc-compat-1"))
    decision = reconcile.decide(s, world, now=builders.NOW)
    assert not any(o["kind"] == "Deployment" for o in decision.apply)  # the running pods stay as they are
    (job,) = decision.create
    assert job["kind"] == "Job" and job["metadata"]["name"] == "kc-compat-1"
    plan = (decision.status or {})["upgradePlan"]
    assert plan["compatibilityCheck"] == "Job kc-compat-1: running" and not plan.get("path")
    s, world = observed_change(cc.Answer("kc-compat-1", exists=True))
    assert reconcile.decide(s, world, now=builders.NOW).create == []  # running: not again


def test_once_answered_the_plan_says_so_and_the_change_goes_on() -> None:
    s, world = observed_change(cc.Answer("kc-compat-1", exists=True, exit=3))
    decision = reconcile.decide(s, world, now=builders.NOW)
    plan = (decision.status or {})["upgradePlan"]
    assert plan["path"] == upgrade_plan.RECREATE and "exit 3" in plan["reason"]
    assert plan["compatibilityCheck"] == "Job kc-compat-1: rolling update not possible (exit 3)"
    (dep,) = [o for o in decision.apply if o["kind"] == "Deployment"]
    assert rollout.image_of(dep) == NEW and dep["spec"]["strategy"]["type"] == "Recreate"


def test_blue_green_waits_at_rest_while_the_check_runs() -> None:
    """The shell gives the machine no path while the check runs (shell/upgrade._path), so it never starts."""
    world = bg.Observed(name="kc", spec_image=NEW, blue=builders.deployment(spec(OLD)), upgrade_path=None)
    assert bg.step(None, world, datetime(2026, 1, 1, tzinfo=UTC)) == bg.Step(None)


@pytest.mark.parametrize(
    ("running", "asked", "found", "says"),
    [
        (OLD, True, cc.Answer("kc-compat-1", True, 0), "Job kc-compat-1: rolling update possible (exit 0)"),
        (OLD, True, cc.Answer("kc-compat-1", True, 3), "Job kc-compat-1: rolling update not possible"),
        (OLD, True, cc.Answer("kc-compat-1", True, None), "Job kc-compat-1: running;"),
        (OLD, True, cc.Answer("kc-compat-1", False, None), "Job kc-compat-1: not run yet for this change;"),
        (OLD, False, cc.Answer(), "off: upgradePolicy.compatibilityCheck: true"),
        ("quay.io/keycloak/keycloak:26.1.4", False, cc.Answer(), ""),  # no such command before 26.2
        (NEW, True, cc.Answer(), ""),  # no change
    ],
)
def test_the_plan_command_says_what_the_check_answered_or_that_it_has_not(
    running: str, asked: bool, found: cc.Answer, says: str
) -> None:
    text = cc.for_plan(spec(NEW, asked), running, found)
    assert text.startswith(says) if says else text == ""
    if found.job and found.exit is None:
        assert "the answer can change the path" in text
