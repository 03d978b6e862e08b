"""What the reconcile does with the preflight (core/preflight_gate.py): nothing serving moves until it
answers, a failure keeps every old pod and says why once, a fix asks again, a passed one pins the digest and
gives the version the planner and the cache cluster use, a tag that lies is reported."""

from __future__ import annotations

from typing import Any

import pytest

from keycloak_operator.core import preflight as pf
from keycloak_operator.core import preflight_gate as gate
from keycloak_operator.core import reconcile, rollout, upgrade_plan
from keycloak_operator.core.cache_cluster import resolve_cache_cluster
from keycloak_operator.core.decide_inputs import Observed
from keycloak_operator.kernel import names
from keycloak_operator.models.cache_isolation import CacheIsolation
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.upgrade_status import PreflightStatus
from tests.unit import builders

OLD = "quay.io/keycloak/keycloak:26.7.0"
NEW = "quay.io/keycloak/keycloak:26.7.3"
LATEST = "quay.io/keycloak/keycloak:latest"
DIGEST = "sha256:" + "ab" * 32
JOB = "kc-preflight-1"


def change(
    found: pf.Answer, image: str = NEW, status: dict[str, Any] | None = None, **kw: Any
) -> tuple[KeycloakSpec, Observed]:
    s = builders.spec(image=image, **kw)
    running = builders.deployment(builders.spec(image=OLD, **kw))
    return s, builders.observed(s, deployment=running, preflight=found, status=status)


def decide(found: pf.Answer, **kw: Any) -> reconcile.Decision:
    s, world = change(found, **kw)
    return reconcile.decide(s, world, now=builders.NOW)


def deployments(decision: reconcile.Decision) -> list[dict[str, Any]]:
    return [o for o in decision.apply if o["kind"] == "Deployment"]


def degraded(decision: reconcile.Decision) -> dict[str, Any] | None:
    found = [c for c in (decision.status or {}).get("conditions", []) if c["type"] == "Degraded"]
    return found[0] if found and found[0]["status"] == "True" else None


def test_nothing_serving_moves_until_it_answers_and_the_job_is_made_once() -> None:
    decision = decide(pf.Answer(JOB, "pending", message=f"Job {JOB}: not started yet"))
    assert deployments(decision) == []
    (job,) = decision.create
    assert job["metadata"]["name"] == JOB and job["metadata"]["labels"][names.LABEL_COMPONENT] == pf.COMPONENT
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == NEW
    assert any(e.reason == "PreflightStarted" for e in decision.events)
    plan = (decision.status or {})["upgradePlan"]
    assert "waiting for the preflight" in plan["reason"] and not plan.get("path")
    assert (decision.status or {})["preflight"]["state"] == "Pending"
    running = decide(pf.Answer(JOB, "pending", exists=True, message=f"Job {JOB}: running"))
    assert running.create == [] and deployments(running) == []


def test_a_failure_keeps_every_old_pod_and_says_why_once() -> None:
    failed = pf.Answer(
        JOB, "failed", True, message="image x:26.8.0 cannot be pulled (ImagePullBackOff): not found"
    )
    decision = decide(failed)
    assert deployments(decision) == [] and decision.create == []
    condition = degraded(decision)
    assert condition is not None and condition["reason"] == pf.REASON
    assert "cannot be pulled" in condition["message"] and "keep serving" in condition["message"]
    warnings = [e for e in decision.events if e.type == "Warning" and e.reason == pf.REASON]
    assert len(warnings) == 1
    # The next pass finds the condition stored: no second event.
    again = decide(failed, status=decision.status)
    assert not [e for e in again.events if e.reason == pf.REASON]
    assert deployments(again) == []


def test_a_fix_asks_again_and_the_failed_one_holds_nothing() -> None:
    failed = pf.Answer(JOB, "failed", True, message="refused")
    first = decide(failed)
    fixed = decide(pf.Answer("kc-preflight-2", "pending", message="not started"), status=first.status)
    assert degraded(fixed) is None or degraded(fixed)["reason"] != pf.REASON  # type: ignore[index]
    (job,) = fixed.create
    assert job["metadata"]["name"] == "kc-preflight-2"


def test_a_job_this_keycloak_did_not_make_holds_the_change_and_is_named() -> None:
    decision = decide(pf.Answer(JOB, "foreign", True, message="not this Keycloak's"))
    assert deployments(decision) == [] and decision.create == []
    condition = degraded(decision)
    assert condition is not None and condition["reason"] == "ChildNotOwned" and JOB in condition["message"]


def test_a_passed_preflight_pins_the_digest_and_the_change_goes_on() -> None:
    passed = pf.Answer(JOB, "passed", True, "26.7.3", DIGEST, "Keycloak 26.7.3; configuration accepted")
    decision = decide(passed)
    (dep,) = deployments(decision)
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == f"quay.io/keycloak/keycloak@{DIGEST}"
    assert rollout.image_of(dep) == NEW  # compared with the spec as the spec names it
    assert rollout.image_version_of(dep) == "26.7.3"
    recorded = (decision.status or {})["preflight"]
    assert (recorded["state"], recorded["version"], recorded["digest"], recorded["image"]) == (
        "Passed",
        "26.7.3",
        DIGEST,
        NEW,
    )
    assert (decision.status or {})["upgradePlan"]["path"] == upgrade_plan.ROLL


def test_the_planner_plans_from_the_verified_version_not_the_tag() -> None:
    # `latest` names no release: by the tag alone this recreates; the image holds 26.7.3, a patch that rolls.
    by_tag = upgrade_plan.for_spec(builders.spec(image=LATEST), OLD)
    assert by_tag.path == upgrade_plan.RECREATE
    passed = pf.Answer(JOB, "passed", True, "26.7.3", DIGEST, "ok")
    decision = decide(passed, image=LATEST)
    assert (decision.status or {})["upgradePlan"]["path"] == upgrade_plan.ROLL


def test_a_tag_that_lies_is_reported_once_and_the_images_version_wins() -> None:
    # Tagged 26.7.3, holding 26.5.6: a downgrade from 26.7.0, refused, though the tag says a patch.
    lying = pf.Answer(JOB, "passed", True, "26.5.6", DIGEST, "Keycloak 26.5.6; configuration accepted")
    decision = decide(lying)
    mismatch = [e for e in decision.events if e.reason == gate.TAG_MISMATCH]
    assert len(mismatch) == 1 and "26.5.6" in mismatch[0].message and mismatch[0].type == "Warning"
    assert "contains Keycloak 26.5.6" in (decision.status or {})["preflight"]["message"]
    assert (decision.status or {})["upgradePlan"]["path"] == upgrade_plan.REFUSE
    again = decide(lying, status=decision.status)
    assert not [e for e in again.events if e.reason == gate.TAG_MISMATCH]


def test_auto_revision_takes_the_major_version_from_the_image_on_a_tag_without_one() -> None:
    isolation = CacheIsolation.model_validate({"autoRevision": True})
    by_tag = resolve_cache_cluster("kc", isolation, LATEST)
    assert not by_tag.isolated and by_tag.warning  # seed 000's rule without a preflight answer
    proved = resolve_cache_cluster("kc", isolation, LATEST, "26.7.3")
    assert proved.isolated and proved.name == "kc-v26"
    digest_only = resolve_cache_cluster("kc", isolation, f"quay.io/keycloak/keycloak@{DIGEST}", "26.7.3")
    assert digest_only.name == "kc-v26"
    # The image's version wins over a tag that lies.
    assert resolve_cache_cluster("kc", isolation, "x/kc:25.0.6", "26.7.3").name == "kc-v26"


def test_a_passed_preflight_gives_the_cache_cluster_of_the_rendered_pods() -> None:
    passed = pf.Answer(JOB, "passed", True, "26.7.3", DIGEST, "ok")
    decision = decide(passed, image=LATEST, cacheIsolation={"autoRevision": True})
    (dep,) = deployments(decision)
    assert rollout.cache_cluster_of(dep) == "kc-v26"


@pytest.mark.parametrize(
    ("record", "image", "version"),
    [
        (None, NEW, ""),
        (PreflightStatus(job=JOB, image=NEW, state="Passed", version="26.7.3"), NEW, "26.7.3"),
        (PreflightStatus(job=JOB, image=NEW, state="Passed", version="26.7.3"), OLD, ""),  # another image
        (PreflightStatus(job=JOB, image=NEW, state="Failed", version="26.7.3"), NEW, ""),
        (PreflightStatus(job=JOB, image=NEW, state="Pending"), NEW, ""),
    ],
)
def test_only_a_passed_preflight_of_this_very_image_gives_its_version(
    record: PreflightStatus | None, image: str, version: str
) -> None:
    assert gate.verified_version(record, image) == version


def test_without_a_digest_the_image_is_left_as_named_but_the_version_is_recorded() -> None:
    proof = PreflightStatus(job=JOB, image=NEW, state="Passed", version="26.7.3")
    dep = gate.pin(builders.deployment(builders.spec(image=NEW)), proof, NEW)
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == NEW
    assert rollout.image_version_of(dep) == "26.7.3"
    untouched = builders.deployment(builders.spec(image=NEW))
    assert gate.pin(builders.deployment(builders.spec(image=NEW)), None, NEW) == untouched


def test_the_record_stays_after_the_change_and_says_what_was_proved() -> None:
    before = PreflightStatus(job=JOB, image=NEW, state="Passed", version="26.7.3", digest=DIGEST)
    assert gate.record(before, pf.Answer(), NEW) == before  # no change at hand: the last one stays
    pending = gate.record(before, pf.Answer("kc-preflight-2", "pending", message="running"), LATEST)
    assert pending is not None and (pending.job, pending.state, pending.image) == (
        "kc-preflight-2",
        "Pending",
        LATEST,
    )


def test_the_first_creation_does_not_wait() -> None:
    s = builders.spec(image=NEW)
    decision = reconcile.decide(s, builders.observed(s), now=builders.NOW)
    assert deployments(decision) and not decision.create


@pytest.mark.parametrize(
    ("isolation", "image", "needs"),
    [
        ({"autoRevision": True}, LATEST, True),  # the pods' cache cluster needs the image's version
        ({"autoRevision": True}, NEW, False),  # the tag has it
        ({"autoRevision": True, "clusterName": "x"}, LATEST, False),  # named by the user
        ({"autoSuffix": True}, LATEST, False),
        ({}, LATEST, False),
    ],
)
def test_the_first_creation_waits_only_when_auto_revision_needs_the_images_version(
    isolation: dict[str, Any], image: str, needs: bool
) -> None:
    s = builders.spec(image=image, cacheIsolation=isolation)
    assert gate.needs_version(s) is needs
    assert pf.wanted("", image, gate.needs_version(s)) is needs


def test_the_first_creation_on_latest_with_auto_revision_waits_for_the_version() -> None:
    s = builders.spec(image=LATEST, cacheIsolation={"autoRevision": True})
    waiting = reconcile.decide(
        s, builders.observed(s, preflight=pf.Answer(JOB, "pending", message="not started")), now=builders.NOW
    )
    assert deployments(waiting) == [] and [o["kind"] for o in waiting.create] == ["Job"]
    passed = pf.Answer(JOB, "passed", True, "26.7.3", DIGEST, "ok")
    started = reconcile.decide(s, builders.observed(s, preflight=passed), now=builders.NOW)
    (dep,) = deployments(started)
    assert rollout.cache_cluster_of(dep) == "kc-v26"
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"].endswith(DIGEST)
    assert (started.status or {})["cacheCluster"]["isolated"] is True


def test_a_passed_answer_is_read_back_from_the_record_only_for_this_very_change() -> None:
    record = PreflightStatus(job=JOB, image=NEW, state="Passed", version="26.7.3", digest=DIGEST, message="m")
    assert gate.from_record(JOB, record, NEW) == pf.Answer(JOB, "passed", True, "26.7.3", DIGEST, "m")
    assert gate.from_record("kc-preflight-2", record, NEW) is None
    assert gate.from_record(JOB, record, LATEST) is None
    assert gate.from_record(JOB, record.model_copy(update={"state": "Failed"}), NEW) is None
    assert gate.from_record(JOB, None, NEW) is None
    # Read back and recorded again, the message does not grow.
    lying = record.model_copy(update={"version": "26.5.6"})
    once = gate.record(record, pf.Answer(JOB, "passed", True, "26.5.6", DIGEST, "m"), NEW)
    assert once is not None
    twice = gate.record(once, gate.from_record(JOB, once, NEW) or pf.Answer(), NEW)
    assert twice == once and lying.version == "26.5.6"


def test_a_pending_preflight_is_read_again_sooner_than_a_failed_one() -> None:
    assert gate.poll_after(pf.Answer(JOB, "pending")) < gate.poll_after(pf.Answer(JOB, "failed"))


def test_a_failing_pull_says_its_first_words_until_it_ends_one_event() -> None:
    first = pf.Answer(JOB, "failed", True, message="image x cannot be pulled (ErrImagePull): no such host")
    decision = decide(first)
    later = pf.Answer(JOB, "failed", True, message="image x cannot be pulled (ImagePullBackOff): back-off")
    again = decide(later, status=decision.status)
    assert not [e for e in again.events if e.reason == pf.REASON]
    assert again.status is None  # nothing to store: the condition and the record say what they said
    condition = degraded(decision)
    assert condition is not None and "ErrImagePull" in condition["message"]


@pytest.mark.parametrize(
    ("digest", "version"),
    [
        ("sha256:xyz", "26.7.3-but-longer-than-semver allows?"),
        ("sha512:" + "0" * 128, "twenty-six"),
        ("sha256:" + "0" * 63 + "G", ""),
    ],
)
def test_a_recorded_digest_or_version_of_another_shape_is_not_believed(digest: str, version: str) -> None:
    # Whoever may write the Keycloak's status could write anything there.
    image = "quay.io/keycloak/keycloak:26.7.3"
    record = PreflightStatus(job="j", image=image, state="Passed", version=version, digest=digest)
    found = gate.from_record("j", record, image)
    assert found is not None and found.digest == "" and found.version == ""
    assert gate.verified_version(record, image) == ""
    desired = builders.deployment(builders.spec(image=image))
    pinned = gate.pin(desired, record, image)
    assert pinned["spec"]["template"]["spec"]["containers"][0]["image"] == image
    assert names.ANNOTATION_IMAGE_VERSION not in (pinned["metadata"].get("annotations") or {})
