"""The scale benchmark's report: the markdown says which targets were met, from the numbers alone."""

from __future__ import annotations

from typing import Any

from bench.scale.report import checks, markdown


def results(
    ratio: float = 1.2, idle_writes: int = 0, rss_end: float = 90, cutover: int = 300
) -> dict[str, Any]:
    return {
        "machine": "2 CPUs",
        "command": "bench",
        "date": "2026-11-22",
        "convergence": [
            {
                "n": 100,
                "floor_s": 10,
                "operator_s": 12,
                "ratio": 1.2,
                "requests_per_keycloak": {"POST keycloaks": 1.0},
                "peak_rss_mb": 80,
                "cpu_s": 5,
                "errors": 0,
            },
            {
                "n": 500,
                "floor_s": 50,
                "operator_s": 50 * ratio,
                "ratio": ratio,
                "requests_per_keycloak": {},
                "peak_rss_mb": 120,
                "cpu_s": 20,
                "errors": 0,
            },
        ],
        "idle": {
            "n": 500,
            "seconds": 300,
            "resyncs": 5,
            "writes": {},
            "write_total": idle_writes,
            "rss_mb": 110,
        },
        "soak": {
            "seconds": 1800,
            "actions": 1800,
            "keycloaks_at_end": 50,
            "converged": 50,
            "errors": 0,
            "rss_start_mb": 90,
            "rss_end_mb": rss_end,
            "rss_peak_mb": 100,
            "rss_slope_second_half_mb_per_h": 0.5,
            "rss_samples": [(0, 80), (60, 90)],
        },
        "upgrades": {
            "count": 50,
            "boot_s": 5,
            "completed": 50,
            "cutover_ms_median": cutover,
            "cutover_ms_worst": 900,
            "overhead_s_median": 2.0,
            "overhead_s_worst": 4.0,
            "cutover_ms": [cutover],
            "errors": 0,
        },
    }


def test_all_targets_met() -> None:
    assert all(ok for _, ok, _ in checks(results()))
    text = markdown(results())
    assert "**missed**" not in text and "| 500 | 50.0 s | 60.0 s | 1.20 |" in text


def test_each_target_can_be_missed() -> None:
    for bad in (results(ratio=1.6), results(idle_writes=3), results(rss_end=150), results(cutover=1500)):
        missed = [name for name, ok, _ in checks(bad) if not ok]
        assert len(missed) == 1, missed
        assert "**missed**" in markdown(bad)


def test_a_partial_run_reports_only_what_ran() -> None:
    partial = {"machine": "m", "command": "c", "date": "d", "convergence": []}
    assert checks(partial) == [] and "## Soak" not in markdown(partial)
