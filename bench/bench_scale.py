"""Scale and efficiency on the local control plane, against the floor measured in the same run.

    uv run python bench/bench_scale.py [--n 100 500] [--idle-n 500] [--idle 300] [--resync 60]
        [--soak 1800] [--soak-base 50] [--soak-rate 1] [--upgrades 50] [--boot 5] [--out bench/results]

Phases (each in its own namespace, with its own operator process watching only it):
- convergence: N Keycloaks created at once; time until all are Running, as a ratio to the floor (a plain
  async client doing the operator's first-pass API work with the same concurrency); API requests per
  Keycloak by verb (kube-apiserver's /metrics); operator peak RSS and CPU seconds;
- idle: N Keycloaks, nothing changing for --idle seconds with a resync every --resync seconds: write requests;
- soak: --soak seconds of churn (scale, image bump, create, delete) at --soak-rate actions/s: RSS over time,
  errors, convergence at the end;
- upgrades: --upgrades blue-green upgrades at once: cutover latency and overhead, median and worst.
Writes results.json, report.md and PNG plots to --out. Not a test: it reports, it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import localcluster  # noqa: E402
from bench.scale import phases, report  # noqa: E402
from bench.scale.api import Api  # noqa: E402


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, nargs="*", default=[100, 500])
    p.add_argument("--idle-n", type=int, default=500)
    p.add_argument("--idle", type=float, default=300.0, help="seconds of idle measurement (0: skip)")
    p.add_argument(
        "--resync", type=float, default=60.0, help="the operator's resync period in the idle phase"
    )
    p.add_argument("--soak", type=float, default=1800.0, help="seconds of churn (0: skip)")
    p.add_argument("--soak-base", type=int, default=50)
    p.add_argument("--soak-rate", type=float, default=1.0)
    p.add_argument("--upgrades", type=int, default=50, help="concurrent blue-green upgrades (0: skip)")
    p.add_argument("--boot", type=float, default=5.0, help="simulated Keycloak boot time of green (s)")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    return p


async def run(args: argparse.Namespace) -> dict[str, Any]:
    cluster = localcluster.ensure_running(real_node=False)  # kwok only
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "deploy" / "crds"))
    api = Api(cluster)
    results: dict[str, Any] = {
        "machine": f"{os.cpu_count()} CPUs, {cpu_model()}",
        "command": "uv run python bench/bench_scale.py " + " ".join(sys.argv[1:]),
        "date": dt.date.today().isoformat(),
        "convergence": [],
    }
    try:
        for n in args.n:
            print(f"convergence, N = {n} ...", flush=True)
            results["convergence"].append(await phases.convergence(cluster, api, n))
            print(results["convergence"][-1], flush=True)
        if args.idle > 0:
            print(f"idle, N = {args.idle_n}, {args.idle:.0f} s ...", flush=True)
            results["idle"] = await phases.idle(cluster, api, args.idle_n, args.idle, args.resync)
            print(results["idle"], flush=True)
        if args.soak > 0:
            print(f"soak, {args.soak:.0f} s ...", flush=True)
            results["soak"] = await phases.soak(cluster, api, args.soak_base, args.soak, args.soak_rate)
            print({k: v for k, v in results["soak"].items() if k != "rss_samples"}, flush=True)
        if args.upgrades > 0:
            print(f"{args.upgrades} concurrent upgrades ...", flush=True)
            results["upgrades"] = await phases.upgrades(cluster, api, args.upgrades, args.boot)
            print({k: v for k, v in results["upgrades"].items() if k != "cutover_ms"}, flush=True)
    finally:
        await api.close()
    return results


def main(argv: list[str] | None = None) -> Path:
    args = parser().parse_args(argv)
    results = asyncio.run(run(args))
    for path in report.write(results, args.out):
        print(f"wrote {path}")
    return args.out


if __name__ == "__main__":
    main()
