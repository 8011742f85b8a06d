#!/usr/bin/env python3
"""What a scheduler or a congestion controller written in Python costs: wall time of the
two-path MPTCP speed scenario with the Python port of lowest-RTT (and of Reno) as a ratio to
the same run with the built-in one, in the same benchmark run.

    python benches/plugin_speed.py [--rounds 3] [--duration 600s] [--out benches/results/plugin_speed.md]

Cases run interleaved, round after round, and each keeps its best round (noise on a shared
machine hits all alike). The time is the core's own wall time of the run (``run_info
["wall_s"]``: the simulation, calls into Python included, without reading the scenario or
building DataFrames). Each pair is checked to give the same summary, so the comparison is
between identical simulations. On a shared machine the wall time of a short run depends on
what else runs; the CPU time of the process over the same call is given beside it (it also
counts reading the scenario, the same for every case). Target (issue 11): the Python
scheduler at most 5x the Rust one.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import mpsim

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "mptcp" / "speed_2path.toml"
FLOW = "mptcp"
#: (label, scheduler, controller); each Python case is compared with the Rust case above it
CASES = [
    ("lowest_rtt_plain + reno (Rust)", "lowest_rtt_plain", "reno"),
    ("Python lowest-RTT + reno", "mpsim.examples.lowest_rtt:LowestRtt", "reno"),
    ("Python Reno + lowest_rtt_plain", "lowest_rtt_plain", "mpsim.examples.reno:Reno"),
    ("Python lowest-RTT + Python Reno", "mpsim.examples.lowest_rtt:LowestRtt", "mpsim.examples.reno:Reno"),
]
SCHED_TARGET = 5.0


def summary_without_names(res: mpsim.Result) -> str:
    s = json.loads(res.to_json())
    s = s.get("summary", s)
    for f in s["flows"]:
        f.pop("scheduler", None)
        f.pop("cc", None)
    return json.dumps(s, sort_keys=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", default="600s", help="simulated time (the scenario's own is 600s)")
    ap.add_argument("--out", type=Path, default=ROOT / "benches" / "results" / "plugin_speed.md")
    args = ap.parse_args(argv)
    best: dict[str, float] = {}
    cpu: dict[str, float] = {}
    summaries: dict[str, str] = {}
    goodput = 0
    for _ in range(args.rounds):
        for label, sched, cc in CASES:
            o = {"duration": args.duration, f"flow.{FLOW}.scheduler": sched, f"flow.{FLOW}.cc": cc}
            t = time.process_time()
            res = mpsim.run(SCENARIO, overrides=o, progress=False)
            cpu[label] = min(cpu.get(label, float("inf")), time.process_time() - t)
            best[label] = min(best.get(label, float("inf")), float(res.run_info["wall_s"]))
            summaries[label] = summary_without_names(res)
            goodput = int(res.flows["goodput_bps"].iloc[0])
    same = len(set(summaries.values())) == 1
    rust, rust_cpu = best[CASES[0][0]], cpu[CASES[0][0]]
    sched_ratio = best[CASES[1][0]] / rust
    sched_cpu_ratio = cpu[CASES[1][0]] / rust_cpu
    lines = [
        "# Cost of schedulers and controllers written in Python",
        "",
        f"Produced by `python benches/plugin_speed.py --rounds {args.rounds} --duration {args.duration}` "
        f"(best of {args.rounds} interleaved rounds, one core, {platform.machine()}, Python {platform.python_version()}). "
        f"Scenario: `scenarios/mptcp/speed_2path.toml` ({args.duration} simulated, goodput {goodput / 1e6:.2f} Mbit/s); "
        "the ports are in `python/mpsim/examples/`. "
        + ("All four runs give the same summary." if same else "**The summaries differ.**"),
        "",
        "| case | wall (s) | ratio to Rust | CPU (s) | ratio to Rust |",
        "|---|---|---|---|---|",
    ]
    for label, _, _ in CASES:
        lines.append(f"| {label} | {best[label]:.3f} | {best[label] / rust:.2f}x | {cpu[label]:.3f} | {cpu[label] / rust_cpu:.2f}x |")
    lines += ["", f"Target: the Python scheduler at most {SCHED_TARGET:g}x the Rust run: "
              f"wall {sched_ratio:.2f}x ({'met' if sched_ratio <= SCHED_TARGET else 'NOT met'}), "
              f"CPU {sched_cpu_ratio:.2f}x ({'met' if sched_cpu_ratio <= SCHED_TARGET else 'NOT met'})."]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
