"""The report: a markdown summary against the targets, and PNG plots. Pure except for writing files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TARGETS = {
    "ratio": 1.5,  # convergence at the largest N within 1.5 x the floor
    "idle_writes": 0,
    "rss_mb": 200.0,
    "cutover_ms_median": 1000,
}


def verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "# Scale benchmark",
        "",
        f"Machine: {results['machine']}. Command: `{results['command']}`. Date: {results['date']}.",
        "",
        "## Convergence (N Keycloaks created at once, 1 replica each)",
        "",
        "| N | floor | operator | ratio | operator peak RSS | operator CPU | errors |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in results.get("convergence", []):
        lines.append(
            f"| {c['n']} | {c['floor_s']:.1f} s | {c['operator_s']:.1f} s | {c['ratio']:.2f} | "
            f"{c['peak_rss_mb']:.0f} MB | {c['cpu_s']:.1f} s | {c['errors']} |"
        )
    for c in results.get("convergence", []):
        per = ", ".join(f"{k} {v}" for k, v in c["requests_per_keycloak"].items())
        lines.append(f"\nRequests per Keycloak at N = {c['n']} (API server's counters, all clients): {per}")
    idle = results.get("idle")
    if idle:
        lines += [
            "",
            f"## Idle (N = {idle['n']}, {idle['seconds']:.0f} s, {idle['resyncs']} forced resyncs)",
            "",
            f"Write requests on the operator's resources: **{idle['write_total']}** {idle['writes'] or ''}; "
            f"operator RSS {idle['rss_mb']:.0f} MB.",
        ]
    soak = results.get("soak")
    if soak:
        lines += [
            "",
            f"## Soak ({soak['seconds'] / 60:.0f} min of churn, {soak['actions']} actions)",
            "",
            "| RSS after warm-up | RSS at end | peak | slope, second half | errors | converged at end |",
            "|---|---|---|---|---|---|",
            f"| {soak['rss_start_mb']:.0f} MB | {soak['rss_end_mb']:.0f} MB | {soak['rss_peak_mb']:.0f} MB | "
            f"{soak['rss_slope_second_half_mb_per_h']:+.1f} MB/h | {soak['errors']} | "
            f"{soak['converged']}/{soak['keycloaks_at_end']} |",
        ]
    up = results.get("upgrades")
    if up:
        lines += [
            "",
            f"## {up['count']} concurrent blue-green upgrades (green boots in {up['boot_s']:.0f} s)",
            "",
            "| completed | cutover latency median | worst | overhead median | worst | errors |",
            "|---|---|---|---|---|---|",
            f"| {up['completed']}/{up['count']} | {up['cutover_ms_median']} ms | "
            f"{up['cutover_ms_worst']} ms | {up['overhead_s_median']} s | {up['overhead_s_worst']} s | "
            f"{up['errors']} |",
        ]
    lines += ["", "## Targets", "", "| target | result |", "|---|---|"]
    for name, ok, shown in checks(results):
        lines.append(f"| {name} | {shown}: {verdict(ok)} |")
    return "\n".join(lines) + "\n"


def checks(results: dict[str, Any]) -> list[tuple[str, bool, str]]:
    out: list[tuple[str, bool, str]] = []
    conv = results.get("convergence") or []
    if conv:
        big = max(conv, key=lambda c: c["n"])
        out.append(
            (
                f"convergence at N = {big['n']} within 1.5 x floor",
                big["ratio"] <= TARGETS["ratio"],
                f"{big['ratio']:.2f} x",
            )
        )
        out.append(
            (
                f"operator RSS under 200 MB at N = {big['n']}",
                big["peak_rss_mb"] < TARGETS["rss_mb"],
                f"{big['peak_rss_mb']:.0f} MB",
            )
        )
    if results.get("idle"):
        w = results["idle"]["write_total"]
        out.append(("zero idle writes", w == TARGETS["idle_writes"], f"{w} writes"))
    if results.get("soak"):
        s = results["soak"]
        flat = s["rss_end_mb"] <= max(s["rss_start_mb"] * 1.25, s["rss_start_mb"] + 20)
        out.append(("RSS flat over the soak", flat, f"{s['rss_start_mb']:.0f} -> {s['rss_end_mb']:.0f} MB"))
    if results.get("upgrades") and results["upgrades"]["cutover_ms_median"] is not None:
        m = results["upgrades"]["cutover_ms_median"]
        out.append(("median cutover under 1 s at 50 upgrades", m < TARGETS["cutover_ms_median"], f"{m} ms"))
    return out


def plots(results: dict[str, Any], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []
    conv = results.get("convergence") or []
    if conv:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ns = [str(c["n"]) for c in conv]
        x = range(len(ns))
        ax.bar([i - 0.2 for i in x], [c["floor_s"] for c in conv], width=0.4, label="floor")
        ax.bar([i + 0.2 for i in x], [c["operator_s"] for c in conv], width=0.4, label="operator")
        ax.set_xticks(list(x), ns)
        ax.set_xlabel("Keycloaks created at once")
        ax.set_ylabel("seconds until all Ready")
        ax.legend()
        fig.tight_layout()
        written.append(_save(fig, out / "convergence.png"))
    soak = results.get("soak")
    if soak and soak["rss_samples"]:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot([t / 60 for t, _ in soak["rss_samples"]], [mb for _, mb in soak["rss_samples"]])
        ax.set_xlabel("minutes of churn")
        ax.set_ylabel("operator RSS (MB)")
        ax.set_ylim(bottom=0)
        fig.tight_layout()
        written.append(_save(fig, out / "soak-rss.png"))
    up = results.get("upgrades")
    if up and up["cutover_ms"]:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.hist(up["cutover_ms"], bins=20)
        ax.set_xlabel("cutover latency (ms): green Ready -> traffic on green")
        ax.set_ylabel("upgrades")
        fig.tight_layout()
        written.append(_save(fig, out / "cutover.png"))
    return written


def _save(fig: Any, path: Path) -> Path:
    fig.savefig(path, dpi=100)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def write(results: dict[str, Any], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / "report.md").write_text(markdown(results))
    return [out / "results.json", out / "report.md", *plots(results, out)]
