"""The chart's alert rules as Prometheus' own tool reads them: `promtool check rules` accepts the file the
PrometheusRule carries, and `promtool test rules` shows each alert firing on the series it is about, after
its `for`, and staying quiet on a standby's zeros (fixtures/alerts-test.yaml). promtool is built from its Go
module on first use and cached (localcluster/build.py); a build that fails fails these tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from localcluster.build import ensure_promtool
from localcluster.helm import CHART

pytestmark = pytest.mark.integration

RULES = CHART / "files" / "prometheus-rules.yaml"
CASES = Path(__file__).resolve().parent / "fixtures" / "alerts-test.yaml"


@pytest.fixture(scope="module")
def promtool() -> Path:
    return ensure_promtool()


def promtool_run(promtool: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(promtool), *args], capture_output=True, text=True, timeout=120, check=False)


def test_promtool_checks_the_rules(promtool: Path) -> None:
    proc = promtool_run(promtool, "check", "rules", str(RULES))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 6 rules found" in proc.stdout + proc.stderr


def test_each_alert_fires_on_what_it_is_about(promtool: Path) -> None:
    proc = promtool_run(promtool, "test", "rules", str(CASES))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout + proc.stderr
