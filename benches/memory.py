"""Estimated against measured cost of runs that stress memory -> benches/results/memory.md.

Each case runs in its own Python process (so peak resident memory is its own), with the
memory check off, and builds the DataFrames of its series and trace as a user would. The
estimate is the one `mpsim check --estimate` prints (mpsim.resources.total_bytes).

    .venv/bin/python benches/memory.py            # the quick cases
    .venv/bin/python benches/memory.py --all      # also the 1 Gbit/s, 100-flow hour (minutes)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import mpsim
from mpsim.resources import total_bytes

OUT = Path(__file__).parent / "results" / "memory.md"


def dumbbell(rate: str, flows: int, duration: str, *, snd_buf: str | None = None, interval: str | None = None,
             trace: bool = False) -> dict:
    tcp = {"snd_buf": snd_buf} if snd_buf else {}
    metrics: dict = {"trace": trace}
    if interval is not None:
        metrics["interval"] = interval
    return {
        "name": "memory",
        "duration": duration,
        "tcp": tcp,
        "metrics": metrics,
        "link": [{"name": "bottleneck", "rate": rate, "delay": "10ms", "queue": "1000pkt"}],
        "path": [{"name": "p", "links": ["bottleneck"]}],
        "flow": [{"name": f"f{i}", "path": "p"} for i in range(flows)],
    }


CASES = [
    ("one bulk flow, snd_buf 100 GB, 1 Gbit/s, 2 s", dumbbell("1Gbps", 1, "2s", snd_buf="100GB")),
    ("10,000 bulk flows, 1 Gbit/s, 2 s", dumbbell("1Gbps", 10_000, "2s")),
    ("100,000 bulk flows, 1 Gbit/s, 1 s", dumbbell("1Gbps", 100_000, "1s")),
    ("100 flows, 1 Gbit/s, 60 s, series every 100 ms", dumbbell("1Gbps", 100, "60s")),
    ("100 flows, 1 Gbit/s, 5 s, trace", dumbbell("1Gbps", 100, "5s", trace=True)),
]
LONG = [
    ("100 flows, 1 Gbit/s, 3600 s, series every 100 ms", dumbbell("1Gbps", 100, "3600s")),
]

CHILD = """
import json, sys, time, mpsim
from mpsim.resources import peak_rss_bytes
d = json.loads(sys.stdin.read())
t = time.monotonic()
res = mpsim.run(d, progress=False, memory_check=False)
for name in ("flow_series", "subflow_series", "link_series", "trace"):
    getattr(res, name)
print(json.dumps({"events": res.summary["events"], "peak": peak_rss_bytes(), "wall": time.monotonic() - t}))
"""


def measure(d: dict) -> dict:
    p = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps(d), capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--all", action="store_true", help="include the hour-long case")
    args = ap.parse_args()
    rows = []
    for label, d in CASES + (LONG if args.all else []):
        est = mpsim.check(d)["estimate"]
        t = time.monotonic()
        m = measure(d)
        rows.append((label, est, m))
        print(f"{label}: events {m['events']:,} (est {est['events']:,}), peak {m['peak'] / 1e9:.2f} GB "
              f"(est {total_bytes(est) / 1e9:.2f} GB), {time.monotonic() - t:.0f} s", file=sys.stderr)
    lines = [
        "# Estimated against measured memory",
        "",
        "Made by `.venv/bin/python benches/memory.py" + (" --all" if args.all else "") + "` (each case in its own "
        "process, memory check off, series and trace turned into DataFrames). *Estimate* is what "
        "`mpsim check --estimate` prints before a run; *peak* is the process's peak resident memory.",
        "",
        "| case | events | estimated events | peak RSS (GB) | estimated peak (GB) | estimate / peak | wall (s) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, est, m in rows:
        e = total_bytes(est)
        lines.append(f"| {label} | {m['events']:,} | {est['events']:,} | {m['peak'] / 1e9:.2f} | {e / 1e9:.2f} | "
                     f"{e / m['peak']:.2f} | {m['wall']:.1f} |")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
