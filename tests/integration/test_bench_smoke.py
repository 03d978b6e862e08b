"""A short run of the scale benchmark's harness on the real control plane, so it cannot rot: every phase
runs (tiny), and the report and plots are written. The figures themselves are for `make bench`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import bench_scale

pytestmark = pytest.mark.integration


def test_the_scale_harness_runs_every_phase_and_writes_its_report(
    cluster, session_operator_stopped: None, tmp_path: Path
) -> None:
    args = ["--n", "3", "--idle-n", "3", "--idle", "5", "--resync", "2", "--soak", "15", "--soak-base", "4"]
    args += ["--soak-rate", "2", "--upgrades", "2", "--boot", "1", "--out", str(tmp_path)]
    out = bench_scale.main(args)
    results = json.loads((out / "results.json").read_text())
    conv = results["convergence"][0]
    assert conv["n"] == 3 and conv["floor_s"] > 0 and conv["operator_s"] > 0 and conv["peak_rss_mb"] > 0
    assert conv["requests_per_keycloak"], "no API requests counted"
    assert results["idle"]["write_total"] == 0, results["idle"]["writes"]
    assert (
        results["soak"]["converged"] == results["soak"]["keycloaks_at_end"] and results["soak"]["errors"] == 0
    )
    assert results["upgrades"]["completed"] == 2 and results["upgrades"]["cutover_ms_median"] is not None
    report = (out / "report.md").read_text()
    assert "## Convergence" in report and "## Targets" in report
    for png in ("convergence.png", "soak-rss.png", "cutover.png"):
        assert (out / png).stat().st_size > 1000, png
