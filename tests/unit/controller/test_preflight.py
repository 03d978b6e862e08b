"""The preflight (core/preflight.py): its Job, the report its script writes, the version reader, the digest
and every answer read from the Job and its pod."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core import preflight as pf
from keycloak_operator.core.images import repository
from keycloak_operator.kernel import names
from tests.unit import builders
from tests.unit.builders import OWNER

NEW = "quay.io/keycloak/keycloak:26.7.3"
DIGEST = "sha256:" + "ab" * 32
NOW = dt.datetime(2026, 1, 1, 0, 1, 0, tzinfo=dt.UTC)
JOB = "kc-preflight-x"


def the_job(image: str = NEW, **spec: Any) -> dict[str, Any]:
    desired = builders.deployment(builders.spec(image=image, **spec))
    return pf.job(OWNER, desired, JOB, "26.7.0#abc")


JOB_UID = "job-uid"
MADE_BY_THE_JOB = [{"apiVersion": "batch/v1", "kind": "Job", "name": JOB, "uid": JOB_UID, "controller": True}]


def owned(conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    obj = the_job()
    obj["metadata"]["uid"] = JOB_UID
    obj["status"] = {"conditions": conditions or []}
    return obj


def pod(
    state: dict[str, Any], *, created: str = "2026-01-01T00:00:30Z", image_id: str = ""
) -> dict[str, Any]:
    status: dict[str, Any] = {"name": pf.CONTAINER, "state": state}
    if image_id:
        status["imageID"] = image_id
    metadata = {"creationTimestamp": created, "ownerReferences": MADE_BY_THE_JOB}
    return {"metadata": metadata, "status": {"containerStatuses": [status]}}


def report(
    exit_code: int, tail: str = "", version: str = "26.7.3", command: str = "update-compatibility metadata"
) -> str:
    return (
        f"version-txt: Keycloak - Version {version}\ncore-jar: {version}\ncommand: {command}\n"
        f"exit: {exit_code}\n---\n{tail}"
    )


def terminated(message: str, code: int = 0) -> dict[str, Any]:
    return {
        "terminated": {"exitCode": code, "message": message, "reason": "Completed" if code == 0 else "Error"}
    }


# The Job


def test_the_job_runs_the_wanted_container_with_its_configuration_and_scheduling() -> None:
    s = builders.spec(
        image=NEW,
        additionalOptions=[{"name": "http-port", "value": "8081"}],
        scheduling={"nodeSelector": {"disk": "ssd"}, "tolerations": [{"key": "k", "operator": "Exists"}]},
    )
    desired = builders.deployment(s)
    obj = pf.job(OWNER, desired, JOB, "26.7.0#abc")
    pod_spec = obj["spec"]["template"]["spec"]
    (container,) = pod_spec["containers"]
    source = desired["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == NEW
    assert container["env"] == source["env"]  # the rendered configuration, as the pods get it
    assert {"name": "KC_HTTP_PORT", "value": "8081"} in container["env"]
    assert container["command"][:2] == ["/bin/bash", "-c"]
    assert container["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert pod_spec["nodeSelector"] == {"disk": "ssd"}
    assert pod_spec["tolerations"] == [{"key": "k", "operator": "Exists"}]
    assert pod_spec["securityContext"] == desired["spec"]["template"]["spec"]["securityContext"]
    assert obj["spec"]["backoffLimit"] == 0
    assert obj["metadata"]["ownerReferences"][0]["uid"] == OWNER.uid
    assert obj["metadata"]["annotations"][names.ANNOTATION_IMAGE] == NEW
    assert obj["metadata"]["annotations"][f"{names.GROUP}/from-version"] == "26.7.0#abc"
    # No emptyDir the pods' init containers fill: only Secrets, ConfigMaps and its own directory.
    for volume in pod_spec["volumes"]:
        assert "secret" in volume or "configMap" in volume or volume["name"] == "preflight"


def test_the_job_carries_pull_secrets_service_account_and_node_affinity_but_not_pod_anti_affinity() -> None:
    desired = builders.deployment(builders.spec(image=NEW))
    template = desired["spec"]["template"]["spec"]
    template["imagePullSecrets"] = [{"name": "regcred"}]
    template["serviceAccountName"] = "kc-sa"
    template["runtimeClassName"] = "gvisor"
    template["schedulerName"] = "bin-packer"
    template["containers"][0]["imagePullPolicy"] = "Never"
    template["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []},
    }
    pod_spec = pf.job(OWNER, desired, JOB, "v")["spec"]["template"]["spec"]
    assert pod_spec["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod_spec["serviceAccountName"] == "kc-sa"
    assert (pod_spec["runtimeClassName"], pod_spec["schedulerName"]) == ("gvisor", "bin-packer")
    assert pod_spec["containers"][0]["imagePullPolicy"] == "Never"
    assert pod_spec["affinity"] == {"nodeAffinity": template["affinity"]["nodeAffinity"]}


def test_the_job_name_is_per_change_of_image_or_configuration() -> None:
    a = pf.job_name("kc", "26.7.0#h1", "26.7.3#h2")
    assert a == pf.job_name("kc", "26.7.0#h1", "26.7.3#h2")  # a restart finds the same Job
    assert a != pf.job_name("kc", "26.7.0#h1", "26.7.3#h3")  # a fix asks again
    assert a != pf.job_name("kc", "26.7.1#h1", "26.7.3#h2")
    assert a.startswith("kc-preflight-")


@pytest.mark.parametrize(
    ("running", "wanted", "runs"),
    [
        ("", NEW, False),  # the first creation: nothing serving to protect
        (NEW, NEW, False),
        ("quay.io/keycloak/keycloak:26.7.0", NEW, True),
        (NEW, "quay.io/keycloak/keycloak:latest", True),
    ],
)
def test_a_preflight_is_wanted_for_every_change_of_a_serving_image(
    running: str, wanted: str, runs: bool
) -> None:
    assert pf.wanted(running, wanted) is runs


# Digests and tags


@pytest.mark.parametrize(
    ("image_id", "image", "digest"),
    [
        (f"quay.io/keycloak/keycloak@{DIGEST}", NEW, DIGEST),
        (f"docker.io/library/kc@{DIGEST}", "kc:latest", DIGEST),
        (f"docker.io/library/kc@{DIGEST}", "index.docker.io/library/kc:1", DIGEST),
        (f"docker.io/team/kc@{DIGEST}", "team/kc", DIGEST),
        (DIGEST, NEW, ""),  # a bare image ID names the local config, not something a registry resolves
        ("", NEW, ""),
        ("quay.io/keycloak/keycloak@sha256:short", NEW, ""),
        # The same content held under another name (a mirror, a second tag pulled from elsewhere beside
        # an image loaded by tag): that name's digest is not the image's to pin.
        (f"127.0.0.1:5000/keycloak@{DIGEST}", NEW, ""),
        (f"mirror.example.com/keycloak/keycloak@{DIGEST}", NEW, ""),
        (f"docker.io/library/keycloak@{DIGEST}", "quay.io/keycloak/keycloak:26.7.3", ""),
        (f"quay.io/keycloak/keycloak@{DIGEST}", "not an image", ""),
        (f"docker-pullable://quay.io/keycloak/keycloak@{DIGEST}", NEW, DIGEST),  # cri-dockerd's form
        (f"docker-pullable://mirror.test/keycloak@{DIGEST}", NEW, ""),
        # An image that names its digest keeps it: the node's answer pins only that same digest.
        (f"quay.io/keycloak/keycloak@{DIGEST}", f"quay.io/keycloak/keycloak@{DIGEST}", DIGEST),
        (f"quay.io/keycloak/keycloak@{DIGEST}", "quay.io/keycloak/keycloak@sha256:" + "cd" * 32, ""),
        (f"docker.io/library/kc@{DIGEST}", "docker.io/kc", DIGEST),
        (f"docker.io/acme/kc@{DIGEST}", "acme/kc:2", DIGEST),
        (f"127.0.0.1:5000/keycloak@{DIGEST}", "127.0.0.1:5000/keycloak:latest", DIGEST),
        # The same bits the node also holds under another name: that repository's digest, not NEW's.
        (f"quay.io/keycloak/keycloak@{DIGEST}", "127.0.0.1:5000/keycloak:latest", ""),
        (f"127.0.0.1:5001/keycloak@{DIGEST}", "127.0.0.1:5000/keycloak:latest", ""),
        (f"docker.io/library/kc@{DIGEST}", "acme/kc:2", ""),
        (f"quay.io/keycloak/keycloak@{DIGEST}", "not_an::image", ""),
    ],
)
def test_the_digest_is_the_manifest_digest_of_the_image_id_under_the_images_own_name(
    image_id: str, image: str, digest: str
) -> None:
    assert pf.digest_of(image_id, image) == digest


_COMPONENT = st.from_regex(r"[a-z0-9]+(?:[._-][a-z0-9]+)?", fullmatch=True)


@given(
    domain=st.sampled_from(["", "docker.io/", "quay.io/", "127.0.0.1:5000/", "localhost:5000/"]),
    path=st.lists(_COMPONENT, min_size=1, max_size=3).map("/".join),
    tag=_COMPONENT,
    other=_COMPONENT,
)
def test_a_node_reported_digest_is_taken_only_for_the_images_own_repository(
    domain: str, path: str, tag: str, other: str
) -> None:
    image = f"{domain}{path}:{tag}"
    reported = f"{repository(image)}@{DIGEST}"  # as containerd spells the same name
    assert pf.digest_of(reported, image) == DIGEST
    assert pf.digest_of(f"{repository(image)}-{other}@{DIGEST}", image) == ""


@pytest.mark.parametrize(
    ("image", "digest", "result"),
    [
        (NEW, DIGEST, f"quay.io/keycloak/keycloak@{DIGEST}"),
        ("keycloak:latest", DIGEST, f"keycloak@{DIGEST}"),
        (
            f"quay.io/keycloak/keycloak:26.7.3@{'sha256:' + 'cd' * 32}",
            DIGEST,
            f"quay.io/keycloak/keycloak@{DIGEST}",
        ),
        (NEW, "", NEW),
        ("not_an::image", DIGEST, "not_an::image"),
    ],
)
def test_an_image_is_pinned_to_the_digest_the_node_resolved(image: str, digest: str, result: str) -> None:
    assert pf.pinned(image, digest) == result


@pytest.mark.parametrize(
    ("image", "version", "disagrees"),
    [
        (NEW, "26.7.3", False),
        (NEW, "26.5.6", True),  # a tag that lies
        ("quay.io/keycloak/keycloak:26.7.3-optimized", "26.7.3", False),
        ("quay.io/keycloak/keycloak:latest", "26.7.3", False),  # names no release: nothing to disagree with
        (f"quay.io/keycloak/keycloak@{DIGEST}", "26.7.3", False),
        (NEW, "", False),  # nothing read
    ],
)
def test_a_tag_naming_another_release_than_the_images_is_reported(
    image: str, version: str, disagrees: bool
) -> None:
    message = pf.tag_disagrees(image, version)
    assert bool(message) is disagrees
    if disagrees:
        assert version in message and "26.7.3" in message


# Every answer


def test_no_job_yet_is_pending() -> None:
    found = pf.answer(JOB, None, [], OWNER, NOW)
    assert (found.state, found.exists, found.pending, found.holds) == ("pending", False, True, True)


def test_a_job_this_keycloak_did_not_make_is_never_read() -> None:
    foreign = owned([{"type": "Complete", "status": "True"}])
    foreign["metadata"]["ownerReferences"] = []
    found = pf.answer(JOB, foreign, [pod(terminated(report(0)))], OWNER, NOW)
    assert found.state == "foreign" and found.holds and not found.version


def test_a_pull_failing_within_the_grace_is_pending_then_failed() -> None:
    waiting = {"waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "x:26.8.0"'}}
    early = pf.answer(JOB, owned(), [pod(waiting, created="2026-01-01T00:00:40Z")], OWNER, NOW)
    assert early.state == "pending" and "retrying" in early.message
    late = pf.answer(JOB, owned(), [pod(waiting, created="2026-01-01T00:00:00Z")], OWNER, NOW)
    assert late.state == "failed"
    assert "cannot be pulled (ImagePullBackOff)" in late.message and "x:26.8.0" in late.message


@pytest.mark.parametrize("reason", ["InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError"])
def test_what_no_retry_can_fix_fails_at_once(reason: str) -> None:
    found = pf.answer(
        JOB, owned(), [pod({"waiting": {"reason": reason}}, created="2026-01-01T00:00:59Z")], OWNER, NOW
    )
    assert found.state == "failed" and reason in found.message


def test_a_pull_failing_when_the_job_has_ended_has_failed() -> None:
    ended = owned([{"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}])
    waiting = {"waiting": {"reason": "ErrImagePull", "message": "not found"}}
    found = pf.answer(JOB, ended, [pod(waiting, created="2026-01-01T00:00:59Z")], OWNER, NOW)
    assert found.state == "failed"


def test_a_refused_configuration_fails_with_the_commands_last_lines() -> None:
    message = report(2, "Changes detected\nInvalid value for option 'KC_HTTP_PORT': Expected an integer\n")
    found = pf.answer(JOB, owned(), [pod(terminated(message, 2), image_id=f"kc@{DIGEST}")], OWNER, NOW)
    assert found.state == "failed" and found.holds
    assert "Invalid value for option 'KC_HTTP_PORT'" in found.message and "exited 2" in found.message
    assert found.version == "26.7.3"


def test_success_gives_the_version_and_the_digest() -> None:
    found = pf.answer(
        JOB, owned(), [pod(terminated(report(0)), image_id=f"quay.io/keycloak/keycloak@{DIGEST}")], OWNER, NOW
    )
    assert (found.state, found.version, found.digest, found.holds) == ("passed", "26.7.3", DIGEST, False)
    assert "configuration accepted" in found.message


def test_success_with_a_digest_of_another_name_passes_unpinned() -> None:
    """The node holds the image under a second name too (here the local registry's) and reported that one:
    its digest is not taken for NEW's repository, so the pods run NEW as named."""
    reported = f"127.0.0.1:5000/keycloak@{DIGEST}"
    found = pf.answer(JOB, owned(), [pod(terminated(report(0)), image_id=reported)], OWNER, NOW)
    assert (found.state, found.version, found.digest) == ("passed", "26.7.3", "")


def test_success_before_26_2_says_the_configuration_was_not_checked() -> None:
    found = pf.answer(JOB, owned(), [pod(terminated(report(0, command="", version="26.1.4")))], OWNER, NOW)
    assert found.state == "passed" and "not checked" in found.message and found.version == "26.1.4"


def test_an_exit_without_a_report_fails_with_the_log_tail() -> None:
    found = pf.answer(JOB, owned(), [pod(terminated("exec format error\n", 1))], OWNER, NOW)
    assert found.state == "failed" and "exec format error" in found.message


def test_exit_0_without_a_report_passes_with_nothing_read() -> None:
    """A fake node's Job pod (kwok completes it with exit 0 and no message), or a lost message."""
    found = pf.answer(JOB, owned(), [pod(terminated("", 0))], OWNER, NOW)
    assert (found.state, found.version, found.holds) == ("passed", "", False)


def test_a_running_or_starting_pod_is_pending() -> None:
    running = pf.answer(
        JOB, owned(), [pod({"running": {}}, image_id=f"quay.io/keycloak/keycloak@{DIGEST}")], OWNER, NOW
    )
    assert running.state == "pending" and running.digest == DIGEST
    mirrored = pf.answer(
        JOB, owned(), [pod({"running": {}}, image_id=f"mirror.test/kc@{DIGEST}")], OWNER, NOW
    )
    assert mirrored.state == "pending" and mirrored.digest == ""  # another name's digest is not pinned
    assert pf.answer(JOB, owned(), [], OWNER, NOW).state == "pending"
    assert (
        pf.answer(JOB, owned(), [pod({"waiting": {"reason": "ContainerCreating"}})], OWNER, NOW).state
        == "pending"
    )


def test_an_ended_job_whose_pod_is_gone() -> None:
    complete = pf.answer(JOB, owned([{"type": "Complete", "status": "True"}]), [], OWNER, NOW)
    assert complete.state == "passed" and not complete.version
    failed = pf.answer(
        JOB, owned([{"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}]), [], OWNER, NOW
    )
    assert failed.state == "failed" and "DeadlineExceeded" in failed.message


def test_the_newest_pod_decides() -> None:
    old = pod(terminated(report(2, "bad")), created="2026-01-01T00:00:00Z")
    new = pod(terminated(report(0)), created="2026-01-01T00:00:50Z")
    assert pf.answer(JOB, owned(), [new, old], OWNER, NOW).state == "passed"


@given(st.text(max_size=300), st.sampled_from(["ErrImagePull", "ImagePullBackOff", "InvalidImageName"]))
def test_a_pull_message_of_any_size_stays_bounded(text: str, reason: str) -> None:
    found = pf.answer(
        JOB,
        owned(),
        [pod({"waiting": {"reason": reason, "message": text * 10}}, created="2025-01-01T00:00:00Z")],
        OWNER,
        NOW,
    )
    assert found.state == "failed" and len(found.message) < 1200


# The plan's words


def test_the_plan_says_what_the_preflight_found() -> None:
    assert pf.for_plan(pf.Answer()) == ""
    passed = pf.Answer(JOB, "passed", True, "26.7.3", DIGEST, "Keycloak 26.7.3; configuration accepted")
    assert "26.7.3" in pf.for_plan(passed) and DIGEST in pf.for_plan(passed)
    assert "FAILED" in pf.for_plan(pf.Answer(JOB, "failed", True, message="cannot be pulled"))
    assert "until it answers" in pf.for_plan(pf.Answer(JOB, "pending", message=f"Job {JOB}: running"))


def test_the_plan_command_prints_the_preflights_line() -> None:
    from keycloak_operator.core import upgrade_plan

    plan = upgrade_plan.for_spec(builders.spec(image=NEW), "quay.io/keycloak/keycloak:26.7.0")
    failed = pf.for_plan(pf.Answer(JOB, "failed", True, message="image x cannot be pulled"))
    text = upgrade_plan.summary(plan, "quay.io/keycloak/keycloak:26.7.0", NEW, proved=failed)
    assert "preflight FAILED: image x cannot be pulled" in text
    assert "preflight" not in upgrade_plan.summary(plan, "a", NEW)


@pytest.mark.parametrize(
    "owners",
    [
        [],  # a pod anyone in the namespace made, with the Job's name label
        [{**MADE_BY_THE_JOB[0], "uid": "another-job"}],
        [{**MADE_BY_THE_JOB[0], "controller": False}],
        [{**MADE_BY_THE_JOB[0], "kind": "ReplicaSet"}],
    ],
)
def test_only_a_pod_the_job_made_answers(owners: list[dict[str, Any]]) -> None:
    forged = pod(terminated(report(0)), image_id=f"kc@{DIGEST}")
    forged["metadata"]["ownerReferences"] = owners
    found = pf.answer(JOB, owned(), [forged], OWNER, NOW)
    assert found.state == "pending" and not found.digest and not found.version
