"""What a run of many flows costs from the command line, against the core alone.

Three scenarios: 10,000 (2 s) and 100,000 (1 s) bulk TCP flows written by hand on a 1 Gbit/s
dumbbell, and a generated one, `[traffic]` over a `dumbbell` topology (100 hosts a side,
1 Gbit/s access links, 100 Gbit/s bottleneck): Poisson arrivals of 20 KB flows from every
host to its permutation partner, 495 a second each, about 99,000 flows in 1 s (the flows'
paths stay under the 100,000 a scenario may have). Series every 100 ms (the default).

For each, `mpsim run FILE --quiet --out DIR --format F` runs in a child process (F = json,csv
and json,parquet): its wall and CPU time (getrusage of the child), its peak resident memory
and the bytes written, summary.json apart. The core's own time is the CPU time of
`target/release/examples/speed FILE 1` in a child process (reading the TOML in Rust,
building and running, no Python; its peak memory beside it), and `wall_s` of run_info.json
(the event loop alone). Reading the TOML with Python's tomllib, part of the CLI's time, is
timed apart (a generated matrix has next to nothing to read).

    python benches/many_flows.py [--only hand10k hand100k generated] [--out benches/results/many_flows.md]

The results file's heading and table are made again; whatever follows the table in an
existing file (the findings written about it) is kept.

`--steps N` instead times, N times in this process, the steps of running the generated
scenario and saving it as json,parquet (`time.process_time` around each: importing mpsim,
pandas and pyarrow; `mpsim.run`, the check and the core's run with its output; building the
flows table; the rest of `Result.save`) and prints them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SPEED = ROOT / "target" / "release" / "examples" / "speed"

GENERATED = """name = "short_flows"
duration = "1s"
seed = 1
[topology]
kind = "dumbbell"
hosts = 100
rate = "1Gbps"
delay = "100us"
queue = "100pkt"
[topology.tier.bottleneck]
rate = "100Gbps"
delay = "1ms"
queue = "1000pkt"
[traffic]
matrix = "permutation"
size = "20KB"
rate = 495
"""


def scenario(n: int, duration: str) -> str:
    lines = ['name = "many"', f'duration = "{duration}"', "[[link]]", 'name = "l"', 'rate = "1Gbps"', 'delay = "10ms"',
             'queue = "1000pkt"', "[[path]]", 'name = "p"', 'links = ["l"]']
    for i in range(n):
        lines += ["[[flow]]", f'name = "f{i}"', 'path = "p"']
    return "\n".join(lines) + "\n"


CASES = {
    "hand10k": ("by hand", lambda: scenario(10_000, "2s")),
    "hand100k": ("by hand", lambda: scenario(100_000, "1s")),
    "generated": ("generated", lambda: GENERATED),
}


def peak_of(cmd: list[str]) -> tuple[float, int, str]:
    """CPU seconds, peak resident bytes (GNU time) and the output of *cmd*."""
    p = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", *cmd], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(p.stderr)
    user, system, kb = p.stderr.strip().splitlines()[-1].split()
    return float(user) + float(system), int(kb) * 1024, p.stdout


def measure(path: Path, out: Path, fmt: str) -> dict:
    cpu, peak, _ = peak_of([sys.executable, "-m", "mpsim", "run", str(path), "--quiet", "--out", str(out), "--format", fmt])
    info = json.loads((out / "run_info.json").read_text())
    files = {f.name: f.stat().st_size for f in out.iterdir()}
    return {"cpu": cpu, "peak": peak, "loop": info["wall_s"], "bytes": sum(files.values()), "summary": files.get("summary.json", 0)}


STEPS = """
import sys, tempfile, time
t0 = time.process_time()
import mpsim, pandas, pyarrow
t1 = time.process_time()
res = mpsim.run(sys.argv[1], progress=False)
t2 = time.process_time()
flows = res._flows_arrow
t3 = time.process_time()
with tempfile.TemporaryDirectory() as d:
    res.save(d, "json,parquet")
t4 = time.process_time()
print(f"imports {t1 - t0:.2f}  run {t2 - t1:.2f}  flows table {t3 - t2:.2f}  rest of save {t4 - t3:.2f}  "
      f"total {t4 - t0:.2f} s  ({flows.num_rows:,} flows)")
"""


def steps(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "generated.toml"
        path.write_text(GENERATED)
        for _ in range(repeats):
            subprocess.run([sys.executable, "-c", STEPS, str(path)], check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", choices=list(CASES), default=list(CASES))
    ap.add_argument("--out", default=str(HERE / "results" / "many_flows.md"))
    ap.add_argument("--steps", type=int, metavar="N", help="time the steps of the generated run N times, and stop")
    args = ap.parse_args()
    if args.steps:
        steps(args.steps)
        return
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "mpsim-core", "--example", "speed"], cwd=ROOT, check=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.only:
            label, make = CASES[case]
            path = Path(tmp) / f"{case}.toml"
            text = make()
            path.write_text(text)
            t = time.process_time()
            tomllib.loads(text)
            toml_s = time.process_time() - t
            core_cpu, core_peak, out = peak_of([str(SPEED), str(path), "1"])
            flows = len(json.loads(out)["flows"])
            for fmt in ("json,csv", "json,parquet"):
                m = measure(path, Path(tmp) / f"out-{case}-{fmt}", fmt)
                m.update(core=core_cpu, core_peak=core_peak, toml=toml_s)
                rows.append((label, flows, fmt, m))
                print(label, flows, fmt, {k: round(v, 2) for k, v in m.items()}, flush=True)
    lines = [
        "# Many flows from the command line",
        "",
        "Made by `python benches/many_flows.py` (its docstring says what each column is). CLI CPU is the "
        "user + system time of `mpsim run FILE --quiet --out DIR --format F`; core CPU that of the "
        "core alone on the same file (`target/release/examples/speed FILE 1`: Rust reads the TOML, "
        "builds and runs); loop is the event loop's own wall time (`wall_s` in run_info.json); "
        "TOML is Python's tomllib reading the file, part of the CLI's CPU. Peak memory is the "
        "largest resident set (GNU time).",
        "",
        f"Machine: {os.cpu_count()} CPUs shared with other jobs, Python {sys.version.split()[0]}.",
        "",
        "| flows | formats | CLI CPU (s) | core CPU (s) | CLI / core | CLI without the TOML / core | loop (s) | TOML (s) "
        "| CLI peak (MB) | core peak (MB) | bytes written | summary.json |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, n, fmt, m in rows:
        lines.append(f"| {n:,} {label} | {fmt} | {m['cpu']:.2f} | {m['core']:.2f} | {m['cpu'] / m['core']:.2f} | "
                     f"{(m['cpu'] - m['toml']) / m['core']:.2f} | {m['loop']:.2f} | {m['toml']:.2f} | "
                     f"{m['peak'] / 1e6:,.0f} | {m['core_peak'] / 1e6:,.0f} | {m['bytes']:,} | {m['summary']:,} |")
    out = Path(args.out)
    tail = written_by_hand(out.read_text()) if out.exists() else []
    out.write_text("\n".join(lines + tail) + "\n")
    print("wrote", args.out, f"(the {len(tail)} lines after its table kept)" if tail else "")


def written_by_hand(text: str) -> list[str]:
    """The lines after the generated table of an existing results file: what was written about
    it by hand, kept when the table is made again."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("| flows |")]
    if not starts:
        return []
    i = starts[0]
    while i < len(lines) and lines[i].startswith("|"):
        i += 1
    return lines[i:]


if __name__ == "__main__":
    main()
