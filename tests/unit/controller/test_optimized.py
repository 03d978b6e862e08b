"""Optimized starts found and used (core/optimized.py): a passed preflight whose dry run says the pods' start
builds nothing starts them `--optimized`, with no user setting; one that names differing options leaves them
as they were and says which; nothing known, nothing changes; `startOptimized` stays the user's."""

from __future__ import annotations

from typing import Any

import pytest

from keycloak_operator.core import build_options, optimized, reconcile
from keycloak_operator.core import preflight as pf
from keycloak_operator.core import preflight_gate as gate
from keycloak_operator.core.build_options import BuildOptions
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.core.images import parse_semver
from keycloak_operator.core.preflight_script import Change
from keycloak_operator.models.upgrade_status import PreflightStatus
from tests.unit import builders

OLD = "quay.io/keycloak/keycloak:26.7.0"
NEW = "quay.io/keycloak/keycloak:26.7.3"
JOB = "kc-preflight-1"
BUILT = pf.Answer(JOB, "passed", True, "26.7.3", message="ok", rebuild=False)


def decide(found: pf.Answer, status: dict[str, Any] | None = None, **kw: Any) -> reconcile.Decision:
    s = builders.spec(image=NEW, **kw)
    running = builders.deployment(builders.spec(image=OLD, **kw))
    secrets = builders.SECRETS | {"f"}  # the Secret a test's option reads
    world = builders.observed(s, deployment=running, preflight=found, status=status, existing_secrets=secrets)
    return reconcile.decide(s, world, now=builders.NOW)


def args(decision: reconcile.Decision) -> list[str]:
    (deployment,) = [o for o in decision.apply if o["kind"] == "Deployment"]
    (keycloak,) = deployment["spec"]["template"]["spec"]["containers"]
    return list(keycloak["args"])


def condition(decision: reconcile.Decision) -> dict[str, Any] | None:
    found = [c for c in (decision.status or {}).get("conditions", []) if c["type"] == optimized.CONDITION]
    return found[0] if found else None


def pods_options(**kw: Any) -> dict[str, str]:
    return build_options.of_pod(
        builders.pod(builders.spec(image=NEW, **kw)), parse_semver("26.7.3")
    ).as_dict()


def test_without_a_preflight_answer_the_pods_start_as_today() -> None:
    for found in (pf.Answer(JOB, "passed", True, "26.7.3", message="no report"), pf.Answer()):
        decision = decide(found)
        assert args(decision) == ["start"]
        assert condition(decision) is None


def test_an_image_built_with_the_pods_options_starts_optimized_with_no_user_setting() -> None:
    decision = decide(BUILT)
    assert args(decision) == ["start", "--optimized"]
    cond = condition(decision)
    assert cond is not None and (cond["status"], cond["reason"]) == ("True", "ImageBuilt")
    record = (decision.status or {})["preflight"]
    assert record["build"] == "Read"
    assert record["buildOptions"] == [f"{k}={v}" for k, v in sorted(pods_options().items())]
    assert record["buildDigest"] == optimized.digest(pods_options())


def test_an_image_built_with_other_options_starts_as_today_and_names_them() -> None:
    found = pf.Answer(
        JOB,
        "passed",
        True,
        "26.7.3",
        message="ok",
        rebuild=True,
        changed=(Change("db", "dev-file"), Change("metrics-enabled", None)),
    )
    decision = decide(found)
    assert args(decision) == ["start"]
    cond = condition(decision)
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", "BuildOptionsDiffer")
    assert "db: image dev-file, pods postgres" in cond["message"]
    assert "metrics-enabled: image <unset>, pods true" in cond["message"]
    assert "image-recipe" in cond["message"]


def test_an_image_never_built_is_said_so() -> None:
    decision = decide(pf.Answer(JOB, "passed", True, "26.7.3", message="ok", rebuild=True))
    assert args(decision) == ["start"]
    cond = condition(decision)
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", "ImageNotBuilt")


def test_start_optimized_set_by_the_user_stays_the_users() -> None:
    for found in (BUILT, pf.Answer(JOB, "passed", True, "26.7.3", message="ok", rebuild=True)):
        decision = decide(found, startOptimized=True)
        assert args(decision) == ["start", "--optimized"]
        assert condition(decision) is None


def test_provider_extensions_build_in_the_pod_whatever_the_image() -> None:
    ext = [
        {
            "name": "audit",
            "image": "registry.example/acme/audit:1.2",
            "path": "/opt/audit/jars",
            "type": "providers",
        }
    ]
    decision = decide(BUILT, extensions=ext)
    assert condition(decision) is None


def test_a_build_option_changed_since_the_preflight_starts_as_today() -> None:
    """The record is the image's build: a feature added later (no image change, no new preflight) is
    compared with it, and the pods start without --optimized, naming the feature."""
    first = decide(BUILT)
    s = builders.spec(image=NEW, features={"enabled": ["scripts"]})
    running = render_deployment(builders.OWNER, builders.spec(image=NEW), image=NEW, track="a", version="v")
    world = builders.observed(s, deployment=running, status=first.status)
    later = reconcile.decide(s, world, now=builders.NOW)
    assert args(later) == ["start"]
    cond = condition(later)
    assert cond is not None and cond["reason"] == "BuildOptionsDiffer"
    assert "features: image <unset>, pods scripts" in cond["message"]


def test_the_record_is_kept_when_the_answer_is_read_back_from_it() -> None:
    first = decide(BUILT)
    record = PreflightStatus.model_validate((first.status or {})["preflight"])
    again = gate.from_record(JOB, record, NEW)
    assert again is not None and again.rebuild is None
    kept = gate.record(record, again, NEW)
    assert kept is not None and (kept.build, kept.build_digest) == (record.build, record.build_digest)


def test_a_build_option_from_a_secret_never_starts_optimized() -> None:
    kw = {
        "additionalOptions": [{"name": "spi-events-listener--provider", "secret": {"name": "f", "key": "k"}}]
    }
    decision = decide(BUILT, **kw)
    assert args(decision) == ["start"]
    cond = condition(decision)
    assert (
        cond is not None
        and cond["reason"] == "BuildOptionsFromSecrets"
        and "spi-events-listener--provider" in cond["message"]
    )


@pytest.mark.parametrize("forged", ["", "x" * 64, "AB" * 32, optimized.digest({"db": "postgres"})])
def test_a_recorded_digest_of_another_set_or_shape_is_not_believed(forged: str) -> None:
    proof = PreflightStatus(job=JOB, image=NEW, state="Passed", build="Read", build_digest=forged)
    pod = builders.pod(builders.spec(image=NEW))
    found = optimized.verdict(proof, NEW, pod)
    assert found is not None and not found.optimized


def test_only_a_passed_preflight_of_this_image_tells() -> None:
    pod = builders.pod(builders.spec(image=NEW))
    good = PreflightStatus(
        job=JOB, image=NEW, state="Passed", build="Read", build_digest=optimized.digest(pods_options())
    )
    assert optimized.verdict(good, NEW, pod) == optimized.Verdict(
        True, "ImageBuilt", optimized.verdict(good, NEW, pod).message
    )  # type: ignore[union-attr]
    for other in (
        good.model_copy(update={"image": OLD}),
        good.model_copy(update={"state": "Failed"}),
        good.model_copy(update={"build": ""}),
        good.model_copy(update={"build": "Maybe"}),
        None,
    ):
        assert optimized.verdict(other, NEW, pod) is None


def test_the_images_build_follows_keycloaks_list() -> None:
    pods = BuildOptions((("db", "postgres"), ("features", "scripts"), ("health-enabled", "true")))
    found = pf.Answer(
        JOB,
        "passed",
        True,
        rebuild=True,
        changed=(Change("db", "dev-file"), Change("features", None), Change("cache", "local")),
    )
    assert optimized.image_build(pods, found) == (
        "Differs",
        {"db": "dev-file", "health-enabled": "true", "cache": "local"},
    )
    assert optimized.image_build(pods, pf.Answer(JOB, "passed", True, rebuild=False)) == (
        "Read",
        pods.as_dict(),
    )
    assert optimized.image_build(pods, pf.Answer(JOB, "passed", True)) == ("", {})
    assert optimized.image_build(pods, pf.Answer(JOB, "failed", True, rebuild=False)) == ("", {})


def test_options_made_to_match_the_ones_keycloak_listed_still_start_as_today() -> None:
    """Keycloak's answer keeps at most 16 changes, cut: options beyond them, or a provider, may differ too.
    A user who sets exactly the listed values (no new image, so no new preflight) is told the record cannot
    show the rest, and the pods never start --optimized on it (26.x would refuse to start)."""
    found = pf.Answer(
        JOB, "passed", True, "26.7.3", message="ok", rebuild=True, changed=(Change("features", "scripts"),)
    )
    first = decide(found)
    record = (first.status or {})["preflight"]
    assert (record["build"], record["buildDigest"]) == ("Differs", "")
    assert "features=scripts" in record["buildOptions"]
    aligned = builders.spec(image=NEW, features={"enabled": ["scripts"]})
    pod = builders.pod(aligned)
    assert build_options.of_pod(pod, parse_semver("26.7.3")).as_dict().get("features") == "scripts"
    found_now = optimized.verdict(PreflightStatus.model_validate(record), NEW, pod)
    assert found_now is not None and not found_now.optimized
    assert found_now.reason == "BuildOptionsDiffer" and "does not show" in found_now.message


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("quay.io/keycloak/keycloak:25.0.6", "25.0.6"),
        ("quay.io/keycloak/keycloak:25.0.6", "26.7.3"),
        (NEW, "25.0.6"),
    ],
)
def test_no_record_starts_pods_optimized_before_the_dry_run_existed(image: str, version: str) -> None:
    """25.x has no `start --dry-run`, so no preflight of the operator's recorded its build; and it only warns
    when build options differ. A record there (a forged status) is not believed, whatever it says."""
    pod = builders.pod(builders.spec(image=image))
    options = build_options.of_pod(pod, parse_semver("26.7.3")).as_dict()
    proof = PreflightStatus(
        job=JOB,
        image=image,
        state="Passed",
        version=version,
        build="Read",
        build_digest=optimized.digest(options),
    )
    assert optimized.verdict(proof, image, pod) is None


def test_what_status_shows_is_bounded() -> None:
    many = {f"spi-x{i}--provider": "v" * 500 for i in range(50)}
    shown = optimized.recorded("Read", many)
    assert len(shown["build_options"]) == optimized.SHOWN_MAX
    assert all(len(e) <= optimized.SHOWN_LENGTH for e in shown["build_options"])
    assert shown["build_digest"] == optimized.digest(many)
