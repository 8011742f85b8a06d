"""The inputs that once stalled a run, against the event budget: what the estimate says,
what the core really processes, what `mpsim check` and `mpsim run` say, and a sweep over
them with a per-run time limit.

Each scenario in benches/scenarios/stalls is valid and two simulated seconds long, yet its
source ticks far faster than its 10 Mbit/s path carries (an on/off source with 1 ns periods,
1-byte writes at 1 Tbit/s, VBR at 1 Tbit/s over TCP and over UDP). The real event count is
measured on a 20 ms run (events grow linearly with the duration here) and scaled to 2 s.

    python benches/stalls.py [--out benches/results/stalls.md] [--run-timeout 10]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import mpsim
from mpsim import resources

HERE = Path(__file__).resolve().parent
STALLS = sorted((HERE / "scenarios" / "stalls").glob("*.toml"))
SHORT = 0.02  # seconds simulated to count real events


def cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    p = subprocess.run([sys.executable, "-m", "mpsim", *args], capture_output=True, text=True,
                       env={**os.environ, **(env or {})})
    return p.returncode, (p.stdout + p.stderr).strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(HERE / "results" / "stalls.md"))
    ap.add_argument("--run-timeout", type=float, default=10.0)
    args = ap.parse_args()

    lines = [
        "# Stall inputs against the event budget",
        "",
        "Made by `python benches/stalls.py`. Each scenario (benches/scenarios/stalls) is valid and "
        "2 s long; its source ticks far faster than its 10 Mbit/s path carries. Real events are "
        f"counted on a {SHORT * 1000:g} ms run and scaled to 2 s (they grow linearly with the duration). "
        f"The budget warns above {resources.EVENT_WARN:,} estimated events and refuses above "
        f"{resources.EVENT_LIMIT:,} (MPSIM_EVENT_LIMIT).",
        "",
        "| scenario | estimated events (2 s) | real events (scaled) | estimate / real | core events/s | named cause |",
        "|---|---:|---:|---:|---:|---|",
    ]
    said = []
    for f in STALLS:
        est = mpsim.check(str(f))["estimate"]
        t = time.perf_counter()
        short = mpsim.run(str(f), overrides={"duration": f"{SHORT}s"}, progress=False)
        wall = time.perf_counter() - t
        real = short.summary["events"] * 2.0 / SHORT
        rate = short.summary["events"] / max(wall, 1e-9)
        lines.append(f"| {f.name} | {est['events']:,} | {real:,.0f} | {est['events'] / real:.2f} | "
                     f"{rate / 1e6:.1f} M | {resources.events_cause(est)} |")
        rc, text = cli("check", str(f))
        said.append(f"$ mpsim check {f.name}   # exit {rc}\n{text}")
        rc, text = cli("run", str(f), "--quiet", env={"MPSIM_EVENT_LIMIT": "1e9"})
        said.append(f"$ MPSIM_EVENT_LIMIT=1e9 mpsim run {f.name}   # exit {rc}\n{text}")
        print(f.name, "done", flush=True)

    lines += ["", "## What check and run say", "", "```", *[s.replace(str(HERE) + "/scenarios/stalls/", "") for s in said], "```", ""]

    # a sweep over the four: each run past the limit is recorded as a failure, the sweep goes on
    t = time.perf_counter()
    rows = []
    for f in STALLS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            frame = mpsim.sweep(str(f), seeds=1, processes=1, progress=False, run_timeout=args.run_timeout).frame
        failed = frame.attrs.get("failed", [])
        why = ", ".join(sorted({str(x.get("error_type", "")) for x in failed}))
        rows.append((f.name, len(frame), len(failed), why))
        print(f.name, "swept", flush=True)
    wall = time.perf_counter() - t
    lines += [
        f"## A sweep with run_timeout = {args.run_timeout:g} s",
        "",
        "`mpsim.sweep(file, seeds=1, processes=1, run_timeout=...)` over each file in turn "
        f"(`mpsim sweep FILE --run-timeout {args.run_timeout:g}s` on the command line):",
        "",
        "| scenario | rows | failed | failure |",
        "|---|---:|---:|---|",
        *[f"| {n} | {k} | {fl} | {why} |" for n, k, fl, why in rows],
        "",
        f"Wall time of the four sweeps: {wall:.1f} s.",
        "",
    ]
    Path(args.out).write_text("\n".join(lines))
    print("wrote", args.out)


if __name__ == "__main__":
    main()
