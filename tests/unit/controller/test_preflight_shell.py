"""The shell's reading of the preflight (shell/reconciler._preflight, _hold): the Job by name, its pods by the
Job controller's label only when the Job is this Keycloak's, a passed answer read back from status without
touching the cluster, and the upgrade machine told "not answered" while the preflight holds."""

from __future__ import annotations

from typing import Any

from keycloak_operator.core import compatibility_check, reconcile
from keycloak_operator.core import preflight as pf
from keycloak_operator.shell import reconciler
from keycloak_operator.shell.kube import Resource
from tests.unit import builders
from tests.unit.builders import OWNER

OLD = "quay.io/keycloak/keycloak:26.7.0"
NEW = "quay.io/keycloak/keycloak:26.7.3"
DIGEST = "sha256:" + "ab" * 32


class FakeKube:
    def __init__(self, objects: dict[tuple[str, str], dict[str, Any]], pods: list[dict[str, Any]]) -> None:
        self.objects, self.pods = objects, pods
        self.reads: list[str] = []

    async def get(self, res: Resource, namespace: str | None, name: str) -> dict[str, Any] | None:
        self.reads.append(f"get {res.plural}/{name}")
        return self.objects.get((res.plural, name))

    async def list(self, res: Resource, namespace: str | None, **kw: Any) -> list[dict[str, Any]]:
        self.reads.append(f"list {res.plural} {kw.get('label_selector')}")
        return self.pods


def world(status: dict[str, Any] | None = None) -> tuple[dict[str, Any], Any, dict[str, Any], str]:
    s = builders.spec(image=NEW)
    running = builders.deployment(builders.spec(image=OLD))
    stored = builders.keycloak(s, status=status)
    return stored, s, running, "26.7.3#h"


def passed_pod() -> dict[str, Any]:
    report = "version-txt: Keycloak - Version 26.7.3\ncore-jar: 26.7.3\ncommand: x\nexit: 0\n---\n"
    status = {
        "name": pf.CONTAINER,
        "imageID": f"{NEW.rsplit(':', 1)[0]}@{DIGEST}",  # the image's own repository
        "state": {"terminated": {"exitCode": 0, "message": report}},
    }
    made_by = [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "job-uid", "controller": True}]
    return {
        "metadata": {"creationTimestamp": "2026-01-01T00:00:00Z", "ownerReferences": made_by},
        "status": {"containerStatuses": [status]},
    }


async def test_the_job_and_its_pods_are_read_and_answer() -> None:
    stored, s, running, version = world()
    name = pf.job_name(OWNER.name, "v", version)
    job = pf.job(OWNER, builders.deployment(s), name, "v")
    job["metadata"]["uid"] = "job-uid"
    fake = FakeKube({("jobs", name): job}, [passed_pod()])
    found = await reconciler.preflight_answer(fake, stored, s, running, version)  # type: ignore[arg-type]
    assert (found.state, found.version, found.digest) == ("passed", "26.7.3", DIGEST)
    assert fake.reads == [f"get jobs/{name}", f"list pods {pf.JOB_NAME_LABEL}={name}"]


async def test_another_owners_job_is_not_read_further() -> None:
    stored, s, running, version = world()
    name = pf.job_name(OWNER.name, "v", version)
    theirs = {"metadata": {"name": name, "ownerReferences": []}, "status": {}}
    fake = FakeKube({("jobs", name): theirs}, [passed_pod()])
    found = await reconciler.preflight_answer(fake, stored, s, running, version)  # type: ignore[arg-type]
    assert found.state == "foreign" and fake.reads == [f"get jobs/{name}"]


async def test_a_recorded_pass_is_not_read_again_and_no_change_reads_nothing() -> None:
    stored, s, running, version = world()
    name = pf.job_name(OWNER.name, "v", version)
    record = {"job": name, "image": NEW, "state": "Passed", "version": "26.7.3", "digest": DIGEST}
    stored, s, running, version = world({"preflight": record})
    fake = FakeKube({}, [])
    found = await reconciler.preflight_answer(fake, stored, s, running, version)  # type: ignore[arg-type]
    assert found.state == "passed" and found.digest == DIGEST and fake.reads == []
    same = builders.deployment(s)
    assert (await reconciler.preflight_answer(fake, stored, s, same, version)).state == "none"  # type: ignore[arg-type]
    assert (await reconciler.preflight_answer(fake, stored, s, None, version)).state == "none"  # type: ignore[arg-type]


def test_the_machine_is_told_not_answered_while_the_preflight_holds() -> None:
    check = compatibility_check.Answer("kc-compat-1", True, 0)
    held = reconciler._hold(check, pf.Answer("kc-preflight-1", "failed", True))
    assert held.pending
    assert reconciler._hold(check, pf.Answer("kc-preflight-1", "passed", True)) == check
    assert reconciler._hold(check, pf.Answer()) == check
    assert reconcile.stored_status(builders.keycloak(builders.spec())).preflight is None
