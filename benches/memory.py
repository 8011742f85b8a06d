"""Estimated against measured cost of runs that stress memory -> benches/results/memory.md.

Each case runs in its own Python process (so peak resident memory is its own), with the
memory check off, and builds the DataFrames of its series and trace as a user would. The
estimate is the one `mpsim check --estimate` prints (mpsim.resources.total_bytes).

    .venv/bin/python benches/memory.py            # the quick cases (the rows of the long
                                                  # ones are kept from the last --all run)
    .venv/bin/python benches/memory.py --all      # also the 1 Gbit/s, 100-flow hour (minutes)
    .venv/bin/python benches/memory.py --stream   # streamed against in-memory series and trace
                                                  # (its own section of the results, ~15 min)
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
    ("3 flows, 10 Gbit/s, 1 s, trace", dumbbell("10Gbps", 3, "1s", trace=True)),
    ("3 flows, 10 Gbit/s, 10 s, series every 1 ms", dumbbell("10Gbps", 3, "10s", interval="1ms")),
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
    ap.add_argument("--stream", action="store_true", help="only the streamed cases, against in memory (own section)")
    args = ap.parse_args()
    if args.stream:
        return measure_streamed()
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
        "| case | events | estimated events | estimate / events | peak RSS (GB) | estimated peak (GB) | estimate / peak | wall (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, est, m in rows:
        e = total_bytes(est)
        lines.append(f"| {label} | {m['events']:,} | {est['events']:,} | {est['events'] / m['events']:.2f} | "
                     f"{m['peak'] / 1e9:.2f} | {e / 1e9:.2f} | {e / m['peak']:.2f} | {m['wall']:.1f} |")
    if not args.all:
        # the long cases were not run: their rows from the last --all run stay
        kept = _kept_rows([label for label, _ in LONG])
        lines += kept
        if kept:
            lines += ["", "The last row" + ("s are" if len(kept) > 1 else " is") + " kept from the last `--all` run."]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n" + _stream_section(), encoding="utf-8")
    print(f"wrote {OUT}", file=sys.stderr)


def _kept_rows(labels: list[str]) -> list[str]:
    """Rows of the main table in the current results for these cases (the columns as now)."""
    if not OUT.exists():
        return []
    text = OUT.read_text(encoding="utf-8").split(STREAM_BEGIN)[0]
    rows = []
    for line in text.splitlines():
        if not any(line.startswith(f"| {label} |") for label in labels):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7:
            # written before the column estimate / events
            events, est = (int(c.replace(",", "")) for c in cells[1:3])
            cells.insert(3, f"{est / events:.2f}")
        rows.append("| " + " | ".join(cells) + " |")
    return rows


# -------------------------------------------------------------------------------------
# Streamed series and traces (mpsim run --stream): their own section of the results,
# kept when the table above is rewritten

STREAM_BEGIN = "<!-- streamed: written by benches/memory.py --stream -->"
STREAM_END = "<!-- end of streamed -->"

STREAM_CASES = [
    ("100 flows, 1 Gbit/s, 30 s, trace", dumbbell("1Gbps", 100, "30s", trace=True)),
    ("100 flows, 1 Gbit/s, 3600 s, series every 100 ms", dumbbell("1Gbps", 100, "3600s")),
]

# the streamed run: the tables stay on disk (reading them back whole would undo the point)
STREAM_CHILD = """
import json, os, sys, tempfile, time, mpsim
from mpsim.resources import peak_rss_bytes
d = json.loads(sys.stdin.read())
with tempfile.TemporaryDirectory() as tmp:
    t = time.monotonic()
    res = mpsim.run(d, progress=False, memory_check=False, stream=os.path.join(tmp, "out"))
    wall = time.monotonic() - t
    size = sum(f.stat().st_size for f in res.stream_dir.iterdir())
print(json.dumps({"events": res.summary["events"], "peak": peak_rss_bytes(), "wall": wall, "disk": size}))
"""


def _stream_section() -> str:
    """The streamed section of the results file as it stands (empty if none)."""
    text = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
    if STREAM_BEGIN not in text or STREAM_END not in text:
        return ""
    return "\n" + text[text.index(STREAM_BEGIN): text.index(STREAM_END) + len(STREAM_END)] + "\n"


def measure_streamed() -> None:
    """Each case in memory (as :func:`measure`) and streamed to Parquet; rewrites the
    streamed section of the results file."""
    rows = []
    for label, d in STREAM_CASES:
        for stream in (False, True):
            est = mpsim.check(d, stream=stream)["estimate"]
            if stream:
                p = subprocess.run([sys.executable, "-c", STREAM_CHILD], input=json.dumps(d), capture_output=True,
                                   text=True, check=True)
                m = json.loads(p.stdout.strip().splitlines()[-1])
            else:
                m = measure(d)
            rows.append((label, stream, est, m))
            print(f"{label}, {'streamed' if stream else 'in memory'}: peak {m['peak'] / 1e9:.2f} GB "
                  f"(est {total_bytes(est) / 1e9:.2f} GB), {m['wall']:.0f} s", file=sys.stderr)
    lines = [
        STREAM_BEGIN,
        "## Streamed against in-memory series and trace",
        "",
        "Made by `.venv/bin/python benches/memory.py --stream`: each case run twice, each time in its own "
        "process with the memory check off. *In memory*: the tables handed to Python at the end and turned "
        "into DataFrames, as above. *Streamed*: `mpsim.run(..., stream=DIR)` (`mpsim run --out DIR --stream`), "
        "the tables written to `DIR/<table>.parquet` in row groups of 65,536 rows during the run and not read "
        "back. *Estimate* is `mpsim check --estimate` (with `--stream` for the streamed run).",
        "",
        "| case | output | events | peak RSS (GB) | estimated peak (GB) | estimate / peak | Parquet on disk (MB) | wall (s) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, stream, est, m in rows:
        e = total_bytes(est)
        disk = f"{m['disk'] / 1e6:,.0f}" if stream else "-"
        lines.append(f"| {label} | {'streamed' if stream else 'in memory'} | {m['events']:,} | {m['peak'] / 1e9:.2f} | "
                     f"{e / 1e9:.2f} | {e / m['peak']:.2f} | {disk} | {m['wall']:.1f} |")
    lines.append(STREAM_END)
    text = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
    if STREAM_BEGIN in text and STREAM_END in text:
        text = text[: text.index(STREAM_BEGIN)].rstrip("\n") + "\n" + text[text.index(STREAM_END) + len(STREAM_END):].lstrip("\n")
    OUT.write_text(text.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
