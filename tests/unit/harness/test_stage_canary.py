"""The canary check that tells the test harness which kwok stage started a pod."""

from __future__ import annotations

from localcluster import stage_templates
from localcluster.stages import canary_verdict


def test_a_pod_without_an_ip_has_not_been_started() -> None:
    assert canary_verdict({"status": {"phase": "Pending"}}) is None
    assert canary_verdict({}) is None


def test_the_marker_names_a_test_stage_and_its_absence_the_default() -> None:
    started = {"podIP": "10.0.0.7", "message": stage_templates.MARKER}
    assert canary_verdict({"status": started}) is True
    assert canary_verdict({"status": {"podIP": "10.0.0.7"}}) is False


def test_every_starting_template_writes_the_marker() -> None:
    for template in (stage_templates.STARTED_NOT_READY, stage_templates.CRASH_LOOP):
        assert f'message: "{stage_templates.MARKER}"' in template
