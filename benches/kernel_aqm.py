#!/usr/bin/env python3
"""The Linux kernel beside mpsim over a cellular trace, with a drop-tail queue, with CoDel and
with CoDel marking ECN at the bottleneck: one CUBIC TCP flow, and one two-path Multipath TCP
flow (the traced link and a fixed 10 Mbit/s link), through `mpsim kernel` (root; the link
emulator runs the same trace and CoDel code as the simulator, and sets CE in the real IP
headers).

    sudo python benches/kernel_aqm.py [--trace ../shared/traces/Verizon-LTE-short.down]
        [--duration 30] [--repeat 3] [--out benches/results/kernel_aqm.md]

The trace drives the data direction, its partner (.up for .down) the ACKs; 20 ms each way;
on both sides the traces begin with the run (the emulator's time zero is the endpoints' start).
Drop-tail: a queue of one bandwidth-delay product at the trace's mean rate and the 40 ms base
RTT. CoDel: RFC 8289's defaults in both directions, a 1,000-packet hard limit. CoDel with
ECN: the same with `ecn = true` and `tcp.ecn = true` (the kernel's `tcp_ecn` = 1 on both
sides); the table adds CoDel's drops and marks on both sides. The fixed
link of the multipath case: 10 Mbit/s, 10 ms each way, a one-BDP queue (or CoDel). Ratios
are mpsim/kernel: goodput per flow, and the mean RTT per path (on both sides the smoothed
RTT sampled once a second after the warm-up: the kernel's from `ss`, mpsim's from its series).
mpsim runs as `mpsim kernel` configures it (docs/kernel.md).
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benches"))

from mpsim import traces  # noqa: E402
from trace_links import partner, queue_pkts  # noqa: E402

WIFI_MBPS = 10


def scenario(trace: Path, duration: float, multipath: bool, codel: bool, ecn: bool = False) -> str:
    mean = traces.summary(trace)["mean_mbps"] * 1e6
    c = '{ kind = "codel", ecn = true }' if ecn else '"codel"'
    managed = f'aqm = {c}\nreverse_aqm = {c}\nqueue = "1000pkt"'
    aqm = managed if codel else f'queue = "{queue_pkts(mean)}pkt"'
    wifi_q = managed if codel else f'queue = "{max(10, round(WIFI_MBPS * 1e6 * 0.02 / 8 / 1500))}pkt"'
    kind = ("codel_ecn" if ecn else "codel") if codel else "droptail"
    text = f"""name = "{'mptcp' if multipath else 'tcp'}_{kind}"
duration = "{duration:g}s"
[metrics]
warmup = "5s"
{'[tcp]' + chr(10) + 'ecn = true' if ecn else ''}
[[link]]
name = "cell"
trace = "{trace.name}"
reverse_trace = "{partner(trace).name}"
delay = "20ms"
{aqm}
[[path]]
name = "cellp"
links = ["cell"]
"""
    if multipath:
        text += f"""[[link]]
name = "wifi"
rate = "{WIFI_MBPS}Mbps"
delay = "10ms"
{wifi_q}
[[path]]
name = "wifip"
links = ["wifi"]
[[flow]]
name = "f"
paths = ["cellp", "wifip"]
scheduler = "linux_upstream"
cc = "cubic"
"""
    else:
        text += '[[flow]]\nname = "f"\npath = "cellp"\ncc = "cubic"\n'
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", type=Path, default=ROOT.parent / "shared" / "traces" / "Verizon-LTE-short.down")
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "benches" / "results" / "kernel_aqm.md")
    ap.add_argument("--only", nargs="*", help="run only these cases (e.g. tcp_codel_ecn)")
    args = ap.parse_args()
    if not args.trace.exists():
        print(f"skipped: {args.trace} is not there (the shared traces are not part of the repository)", file=sys.stderr)
        return 0
    mpsim_cmd = shutil.which("mpsim") or str(Path(sys.executable).parent / "mpsim")
    work = Path(tempfile.mkdtemp(prefix="kernel_aqm_"))
    for t in (args.trace, partner(args.trace)):
        shutil.copy(t, work / t.name)
    rows = []
    for multipath in (False, True):
        for codel, ecn in ((False, False), (True, False), (True, True)):
            text = scenario(work / args.trace.name, args.duration, multipath, codel, ecn)
            name = text.split('"')[1]
            if args.only and name not in args.only:
                continue
            f = work / f"{name}.toml"
            f.write_text(text)
            out = work / name
            print(f"{name}: mpsim kernel, {args.repeat} repeats ...", file=sys.stderr, flush=True)
            subprocess.run([mpsim_cmd, "kernel", str(f), "--repeat", str(args.repeat), "--out", str(out)], check=True,
                           stdout=subprocess.DEVNULL)
            with open(out / "paths.csv") as fh:
                paths = list(csv.DictReader(fh))
            runs = json.loads((out / "summary.json").read_text())["runs"]
            aqm_cell = "-"
            if codel:
                tot = {(side, key): [sum(a[key] for a in r["aqm"][side].values()) for r in runs]
                       for side in ("kernel", "mpsim") for key in ("drops", "marks")}
                aqm_cell = (f"{statistics.median(tot['kernel', 'drops']):.0f} / {statistics.mean(tot['mpsim', 'drops']):.0f}; "
                            f"{statistics.median(tot['kernel', 'marks']):.0f} / {statistics.mean(tot['mpsim', 'marks']):.0f}")
            per_repeat: dict[str, list[float]] = {"k": [], "m": []}
            rtts: dict[str, dict[str, list[float]]] = {}
            for rep in sorted({p["repeat"] for p in paths}):
                ps = [p for p in paths if p["repeat"] == rep]
                per_repeat["k"].append(sum(float(p["kernel_goodput_bps"]) for p in ps))
                per_repeat["m"].append(sum(float(p["mpsim_goodput_bps"]) for p in ps))
                for p in ps:
                    r = rtts.setdefault(p["path"], {"k": [], "m": []})
                    r["k"].append(float(p["kernel_rtt_mean_ms"] or "nan"))
                    r["m"].append(float(p["mpsim_rtt_mean_ms"] or "nan"))
            k, m = statistics.median(per_repeat["k"]), statistics.mean(per_repeat["m"])
            rtt_cells = "; ".join(
                f"{path}: {statistics.median(r['k']):.0f} / {statistics.mean(r['m']):.0f} ({statistics.mean(r['m']) / statistics.median(r['k']):.2f})"
                for path, r in rtts.items()
            )
            rows.append((name, per_repeat["k"], k, m, m / k, rtt_cells, aqm_cell))
            print(f"{name}: kernel {k / 1e6:.2f}, mpsim {m / 1e6:.2f} Mbit/s, mpsim/kernel {m / k:.3f}; RTT {rtt_cells}", file=sys.stderr)
    lines = [
        "# The kernel beside mpsim over a cellular trace, drop-tail and CoDel",
        "",
        f"`sudo python benches/kernel_aqm.py --trace {args.trace.name} --duration {args.duration:g} --repeat {args.repeat}`",
        f"(trace from `../shared/traces`, outside the repository). {args.duration:g} s runs, goodput after a 5 s warmup,",
        "the kernel's median over the repeats against mpsim's mean; ratios are mpsim/kernel. RTT: the",
        "smoothed RTT sampled once a second after the warm-up, on both sides (`ss`, mpsim's series).",
        "The trace drives the cellular link's data direction and its partner the ACKs (20 ms each",
        "way); drop-tail: one BDP at the trace's mean rate; CoDel: RFC 8289 defaults in both",
        f"directions, 1,000-packet limit. Multipath: the cellular link and a fixed {WIFI_MBPS} Mbit/s link (10 ms",
        "each way), CUBIC on each subflow, the kernel's default scheduler (`linux_upstream` in mpsim).",
        "",
        "CoDel drops and marks: every managed link, both directions, the kernel side's (the emulator's) median",
        "over the repeats / mpsim's mean.",
        "",
        "| case | kernel goodput per repeat (Mbit/s) | kernel median | mpsim mean | mpsim/kernel | mean RTT per path, kernel / mpsim ms (mpsim/kernel) | CoDel drops kernel / mpsim; marks kernel / mpsim |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, ks, k, m, ratio, rtt, aqm in rows:
        lines.append(f"| {name} | {', '.join(f'{x / 1e6:.2f}' for x in ks)} | {k / 1e6:.2f} | {m / 1e6:.2f} | {ratio:.3f} | {rtt} | {aqm} |")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
