"""What a run of many flows costs from the command line, against the core alone.

For 10,000 flows (2 s) and 100,000 flows (1 s) of bulk TCP on a 1 Gbit/s dumbbell, series
every 100 ms (the default), `mpsim run FILE --quiet --out DIR --format F` is run in a child
process for F = json,csv (the default) and json,parquet: its wall and CPU time (getrusage of
the child), its peak resident memory, the core's own time (`wall_s` of run_info.json) and
the bytes written, summary.json apart.

    python benches/many_flows.py [--flows 10000,100000] [--out benches/results/many_flows.md]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def scenario(n: int, duration: str) -> str:
    lines = ['name = "many"', f'duration = "{duration}"', "[[link]]", 'name = "l"', 'rate = "1Gbps"', 'delay = "10ms"',
             'queue = "1000pkt"', "[[path]]", 'name = "p"', 'links = ["l"]']
    for i in range(n):
        lines += ["[[flow]]", f'name = "f{i}"', 'path = "p"']
    return "\n".join(lines) + "\n"


def measure(path: Path, out: Path, fmt: str) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "mpsim", "run", str(path), "--quiet", "--out", str(out), "--format", fmt],
                       capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(p.stderr)
    info = json.loads((out / "run_info.json").read_text())
    files = {f.name: f.stat().st_size for f in out.iterdir()}
    return {
        "wall": wall,
        "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "peak": after.ru_maxrss * 1024,  # the largest child so far: runs go from small to large
        "core": info["wall_s"],
        "bytes": sum(files.values()),
        "summary": files.get("summary.json", 0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flows", default="10000,100000")
    ap.add_argument("--out", default=str(HERE / "results" / "many_flows.md"))
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(x) for x in args.flows.split(",")):
            path = Path(tmp) / f"f{n}.toml"
            path.write_text(scenario(n, "2s" if n <= 10_000 else "1s"))
            for fmt in ("json,csv", "json,parquet"):
                m = measure(path, Path(tmp) / f"out{n}{fmt}", fmt)
                rows.append((n, fmt, m))
                print(n, fmt, {k: round(v, 2) for k, v in m.items()}, flush=True)
    lines = [
        "# Many flows from the command line",
        "",
        "Made by `python benches/many_flows.py`: bulk TCP flows on a 1 Gbit/s dumbbell, series every "
        "100 ms, `mpsim run FILE --quiet --out DIR --format F` in a child process. CPU is the child's "
        "user + system time; the core's time is `wall_s` in run_info.json. Reading the TOML file "
        "(Python's tomllib) is part of the CLI's time: about 3 s for 100,000 flows.",
        "",
        f"Machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}.",
        "",
        "| flows | formats | CLI wall (s) | CLI CPU (s) | core (s) | CLI CPU / core | peak memory (MB) | bytes written | summary.json |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, fmt, m in rows:
        lines.append(f"| {n:,} | {fmt} | {m['wall']:.1f} | {m['cpu']:.1f} | {m['core']:.2f} | {m['cpu'] / m['core']:.1f} | "
                     f"{m['peak'] / 1e6:,.0f} | {m['bytes']:,} | {m['summary']:,} |")
    lines += ["", "summary.json holds the first 1,000 flows when a flows table is written beside it "
              "(`flows_omitted` says how many more); the flows, subflows, series and trace tables come "
              "from the core as Arrow buffers and JSON lines read by Arrow, without a Python object per "
              "flow or sample. Writing CSV (pandas' text formatting) is most of what is left with "
              "json,csv.", ""]
    Path(args.out).write_text("\n".join(lines))
    print("wrote", args.out)


if __name__ == "__main__":
    main()
