#!/usr/bin/env python3
"""Sweep scaling and memory: local processes against a Dask LocalCluster, and the parent's
peak memory as the number of runs grows.

    python benches/sweep_scaling.py [--rounds 3] [--out benches/results/sweep_scaling.md]

(`make sweep-bench`.) Three measurements, each a sweep into a fresh sweep folder:

1. Scaling: a 64-run sweep (10 TCP flows on a 100 Mbit/s dumbbell, 60 simulated seconds,
   about 0.1-0.2 s of wall time per run) with 1 local worker process, 2 local worker
   processes, and a 2-worker Dask LocalCluster (processes, 1 thread each; started once,
   before timing, and its start-up time reported apart). The machine is shared, so the
   three are run interleaved, in a rotating order, for several rounds, and the speed-ups
   are ratios within one round; the table gives every round and the median.
2. Per-run cost: sweeps of 32 and 512 runs of about 2 ms each on 2 local processes and on
   the 2-worker cluster; the slope between the two sizes is the cost of one more run, and
   the difference between the back ends is what the Dask path costs per run.
3. Memory: the peak resident memory (ru_maxrss) of the parent process for a 2,000-run sweep
   of short runs against a 20-run sweep of the same runs, each in a fresh Python process,
   2 local workers, results and every run's time series (10 ms samples) in a sweep folder.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONG = ROOT / "scenarios" / "validation" / "dumbbell_10x100m_loss0.toml"
SHORT = ROOT / "scenarios" / "validation" / "dumbbell_2x10m_loss1.toml"
LONG_GRID = {"flow.*.tcp.min_rto": ["200ms", "1s"]}  # x 32 seeds = 64 runs
SHORT_SET = {"duration": "5s", "metrics.warmup": "0s"}
SIZES = (32, 512)  # short-run sweep sizes for the per-run cost

MEMORY_SCRIPT = """
import json, os, resource, sys, time
import pandas, pyarrow, pyarrow.parquet, duckdb, tqdm
import mpsim

def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

if __name__ == "__main__":
    runs, out = int(sys.argv[1]), sys.argv[2]
    before = rss_mb()
    t = time.perf_counter()
    rep = mpsim.sweep(sys.argv[3], {{"flow.*.tcp.min_rto": ["200ms", "1s"]}}, seeds=runs // 2,
                      overrides={short!r}, processes=2, progress=False, out=out, series=True)
    wall = time.perf_counter() - t
    peak = rss_mb()  # before reading the folder back
    rows = duckdb.sql("SELECT count(*) FROM read_parquet('" + out + "/*_series/*/*.parquet')").fetchall()[0][0]
    size = sum(f.stat().st_size for f in __import__("pathlib").Path(out).rglob("*.parquet"))
    print(json.dumps({{"runs": rep.done, "wall_s": wall, "before_mb": before, "maxrss_mb": peak,
                      "series_rows": rows, "folder_mb": size / 2**20}}))
"""
# Short runs for the memory test keep every run's time series, sampled every 10 ms.
MEMORY_SET = {**SHORT_SET, "metrics.interval": "10ms"}


def cpu_seconds() -> float:
    """CPU time (user + system) of this process, its finished children (local workers) and
    its live descendants (the Dask cluster's processes)."""
    import psutil

    own = resource.getrusage(resource.RUSAGE_SELF)
    done = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + done.ru_utime + done.ru_stime
    for p in psutil.Process().children(recursive=True):
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def timed_sweep(tmp: Path, name: str, scenario: Path, grid: dict, seeds: int, overrides: dict | None,
                **where) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, seconds spent simulating summed over runs) of one sweep
    into a fresh sweep folder."""
    import mpsim

    folder = tmp / f"{name}-{time.monotonic_ns()}"
    cpu = cpu_seconds()
    t = time.perf_counter()
    rep = mpsim.sweep(scenario, grid, seeds=seeds, overrides=overrides, progress=False, out=folder, **where)
    wall = time.perf_counter() - t
    cpu = cpu_seconds() - cpu
    assert rep.failed == 0 and rep.done == len(next(iter(grid.values()))) * seeds, rep
    sim = mpsim.query(folder, "SELECT sum(w) AS s FROM (SELECT DISTINCT run_id, wall_s AS w FROM flows)")["s"][0]
    return wall, cpu, float(sim)


def memory_run(runs: int, out: str) -> dict:
    code = MEMORY_SCRIPT.format(short=MEMORY_SET)
    r = subprocess.run([sys.executable, "-c", code, str(runs), out, str(SHORT)], capture_output=True, text=True,
                       check=True, cwd=ROOT)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "benches" / "results" / "sweep_scaling.md")
    args = ap.parse_args(argv)

    from distributed import Client, LocalCluster

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmpname:
        tmp = Path(tmpname)
        t = time.perf_counter()
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
        cluster_start = time.perf_counter() - t
        configs = {
            "local1": {"processes": 1},
            "local2": {"processes": 2},
            "dask2": {"dask": client},
        }
        # Warm-up: one small sweep on each back end (imports, worker start, file cache).
        for where in configs.values():
            timed_sweep(tmp, "warm", LONG, LONG_GRID, 2, {"duration": "5s"}, **where)

        rounds, cpu, busy = [], {n: [] for n in configs}, {n: [] for n in configs}
        workers = {"local1": 1, "local2": 2, "dask2": 2}
        names = list(configs)
        for i in range(args.rounds):
            order = names[i % 3:] + names[: i % 3]
            times = {}
            for n in order:
                times[n], c, sim = timed_sweep(tmp, n, LONG, LONG_GRID, 32, None, **configs[n])
                cpu[n].append(c)
                busy[n].append(sim / (workers[n] * times[n]))
            rounds.append({"order": order, "load": os.getloadavg()[0], **times})
            print(f"round {i + 1}: " + ", ".join(f"{n} {times[n]:.2f} s" for n in order), flush=True)

        overhead = []
        for i in range(args.rounds):
            order = ["local2", "dask2"] if i % 2 == 0 else ["dask2", "local2"]
            times = {}
            for n in order:
                for size in SIZES:
                    times[n, size] = timed_sweep(tmp, n, SHORT, LONG_GRID, size // 2, SHORT_SET, **configs[n])[0]
            overhead.append(times)
            print(f"short runs {i + 1}: " + ", ".join(f"{n} x{k} {v:.2f} s" for (n, k), v in times.items()), flush=True)
        client.close()
        cluster.close()

        mem = {}
        for label, runs in (("20", 20), ("2000", 2000)):
            mem[label] = memory_run(runs, str(tmp / f"mem{runs}"))
            print(f"memory {label}: {mem[label]}", flush=True)
    load_after = os.getloadavg()

    def med(xs: list[float]) -> float:
        return statistics.median(xs)

    lines = [
        "# Sweep scaling and memory",
        "",
        f"Produced by `python benches/sweep_scaling.py --rounds {args.rounds}` (`make sweep-bench`) on "
        f"{os.cpu_count()} cores ({platform.machine()}, Python {platform.python_version()}). "
        f"Load average before {load_before[0]:.2f}, after {load_after[0]:.2f}.",
        "",
        "The machine is shared with other builds, so absolute times are noisy: the back ends are run",
        "interleaved (rotating order) and each speed-up is a ratio of times measured in the same",
        "round. The median over rounds is the figure to quote.",
        "",
        f"## Scaling: 64 runs of `{LONG.relative_to(ROOT)}` (grid {json.dumps(LONG_GRID)} x 32 seeds)",
        "",
        f"Dask LocalCluster (2 worker processes, 1 thread each) start-up: {cluster_start:.2f} s, not included below.",
        "",
        "| round | order | load avg | 1 local worker (s) | 2 local workers (s) | Dask, 2 workers (s) | speed-up local 2 | efficiency local 2 | speed-up Dask 2 | efficiency Dask 2 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    su_l, su_d = [], []
    for i, r in enumerate(rounds, 1):
        sl, sd = r["local1"] / r["local2"], r["local1"] / r["dask2"]
        su_l.append(sl)
        su_d.append(sd)
        lines.append(f"| {i} | {' > '.join(r['order'])} | {r['load']:.1f} | {r['local1']:.2f} | {r['local2']:.2f} | "
                     f"{r['dask2']:.2f} | {sl:.2f} | {sl / 2:.0%} | {sd:.2f} | {sd / 2:.0%} |")
    lines.append(f"| median | | | {med([r['local1'] for r in rounds]):.2f} | {med([r['local2'] for r in rounds]):.2f} | "
                 f"{med([r['dask2'] for r in rounds]):.2f} | {med(su_l):.2f} | {med(su_l) / 2:.0%} | "
                 f"{med(su_d):.2f} | {med(su_d) / 2:.0%} |")
    best = {n: min(r[n] for r in rounds) for n in configs}
    lines.append(f"| best of {len(rounds)} | | | {best['local1']:.2f} | {best['local2']:.2f} | {best['dask2']:.2f} | "
                 f"{best['local1'] / best['local2']:.2f} | {best['local1'] / best['local2'] / 2:.0%} | "
                 f"{best['local1'] / best['dask2']:.2f} | {best['local1'] / best['dask2'] / 2:.0%} |")
    lines += [
        "",
        "CPU time (user + system, this process and every worker process) per sweep, median over",
        "rounds, and the parallelism the machine actually gave (CPU time / wall time; 2.0 is both",
        "cores). The CPU cost of the work is the same on every back end; where the parallelism of a",
        "2-worker sweep is well below 2, other processes had the cores and the wall-time speed-up",
        "says more about them than about the sweep.",
        "",
        "The last column is less sensitive to the other load: the time the workers spent",
        "simulating (each run's `wall_s`, summed) over the time they had (workers x the sweep's",
        "wall time). A run slowed by another process is slow in both, so this is what the sweep",
        "machinery itself loses: starting workers, handing out runs, writing results, the tail.",
        "",
        "| back end | CPU s per sweep | CPU ms per run | parallelism (CPU / wall, median) | workers busy simulating (median, min-max) |",
        "|---|---|---|---|---|",
    ]
    labels = {"local1": "1 local worker", "local2": "2 local workers", "dask2": "Dask, 2 workers"}
    for n in configs:
        par = med([c / r[n] for c, r in zip(cpu[n], rounds)])
        lines.append(f"| {labels[n]} | {med(cpu[n]):.2f} | {med(cpu[n]) / 64 * 1e3:.0f} | {par:.2f} | "
                     f"{med(busy[n]):.0%} ({min(busy[n]):.0%}-{max(busy[n]):.0%}) |")
    per_run_long = [(r["dask2"] - r["local2"]) / 64 * 1e3 for r in rounds]
    lines += [
        "",
        "Efficiency is the speed-up over one worker divided by the number of workers (target: at",
        "least 85% for the second worker).",
        "",
        f"## Per-run cost: sweeps of {SIZES[0]} and {SIZES[1]} runs of `{SHORT.relative_to(ROOT)}` shortened to 5 s "
        "(about 2 ms of simulation each)",
        "",
        "The cost of one more run is the slope between the two sweep sizes; what is left of the",
        f"{SIZES[0]}-run sweep is the fixed cost of a sweep (starting the local worker processes;",
        "on Dask the cluster is already up). Short runs go to the workers in chunks (about 50 ms",
        "of work per local task, 100 ms per Dask task), so per-task costs are shared.",
        "",
        "| round | back end | " + " | ".join(f"{k} runs (s)" for k in SIZES) + " | ms per run | fixed cost (s) |",
        "|---|---|---|---|---|---|",
    ]
    slopes = {"local2": [], "dask2": []}
    fixed = {"local2": [], "dask2": []}
    for i, r in enumerate(overhead, 1):
        for n in ("local2", "dask2"):
            a, b = r[n, SIZES[0]], r[n, SIZES[1]]
            per = (b - a) / (SIZES[1] - SIZES[0])
            slopes[n].append(per)
            fixed[n].append(a - SIZES[0] * per)
            lines.append(f"| {i} | {labels[n]} | {a:.2f} | {b:.2f} | {per * 1e3:.2f} | {a - SIZES[0] * per:.2f} |")
    diff = [(d - l) * 1e3 for d, l in zip(slopes["dask2"], slopes["local2"])]
    lines += [
        f"| median | {labels['local2']} | | | {med(slopes['local2']) * 1e3:.2f} | {med(fixed['local2']):.2f} |",
        f"| median | {labels['dask2']} | | | {med(slopes['dask2']) * 1e3:.2f} | {med(fixed['dask2']):.2f} |",
        "",
        f"Per-run cost of the Dask path minus that of local processes: {med(diff):+.2f} ms per run (median "
        f"of the rounds' differences: {', '.join(f'{d:+.2f}' for d in diff)}).",
        "",
        f"On the 64-run sweep above, Dask minus 2 local workers is {med(per_run_long):+.1f} ms per run (median), "
        "including the local workers' start-up.",
        "",
        "## Memory of the parent process (peak RSS), 2 local workers, short runs",
        "",
        "Each sweep runs in a fresh Python process that first imports what a sweep uses (pandas,",
        "pyarrow, DuckDB, mpsim); 'after imports' is its peak RSS then, 'peak' at the end. Every run",
        f"keeps its time series, sampled every 10 ms ({json.dumps(MEMORY_SET)}), in a sweep folder.",
        "",
        "| runs | wall (s) | time-series rows written | folder size (MB) | RSS after imports (MB) | peak RSS (MB) | peak vs 20-run sweep |",
        "|---|---|---|---|---|---|---|",
    ]
    base = mem["20"]["maxrss_mb"]
    for m in mem.values():
        lines.append(f"| {m['runs']:,} | {m['wall_s']:.2f} | {m['series_rows']:,} | {m['folder_mb']:.1f} | "
                     f"{m['before_mb']:.1f} | {m['maxrss_mb']:.1f} | {m['maxrss_mb'] / base:.2f}x |")
    ratio = mem["2000"]["maxrss_mb"] / base
    lines += [
        "",
        f"2,000 runs peak at {ratio:.2f}x the memory of 20 runs (target: at most 1.5x).",
        "",
    ]
    text = "\n".join(lines)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
