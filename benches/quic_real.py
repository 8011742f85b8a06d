"""Multipath QUIC on a real implementation (noq, through ``mpsim kernel``) beside mpsim's QUIC,
for every scenario of scenarios/kernel_quic/: the table of benches/results/quic_real.md.

    sudo .venv/bin/python benches/quic_real.py --repeat 3 --out benches/results/quic_real.md

Needs what ``mpsim kernel`` needs (root, TUN, iproute2, the link emulator) and the peer
(``make quicpeer``). Writes the aggregate and per-path tables, the machine's load average
before each scenario, and keeps each scenario's summary.json (and qlog) in --data.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import mpsim.kernel as K  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benches/results/quic_real.md"))
    ap.add_argument("--data", default=str(ROOT / "out/quic_real"), help="folder for each scenario's summary.json and qlog")
    ap.add_argument("scenarios", nargs="*", help="scenario files (default: scenarios/kernel_quic/*.toml)")
    a = ap.parse_args()
    files = [Path(s) for s in a.scenarios] or sorted((ROOT / "scenarios/kernel_quic").glob("*.toml"))
    flows, paths, loads = [], [], []
    for f in files:
        loads.append((f.stem, os.getloadavg()[0]))
        res = K.compare(str(f), repeat=a.repeat, out=Path(a.data) / f.stem, progress=True)
        for s in res.flow_summary():
            flows.append((f.stem, s, res))
        for p in res.path_summary():
            paths.append((f.stem, p))

    def mb(x: float | None) -> str:
        return "n/a" if x is None else f"{x / 1e6:.2f}"

    def r3(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    out = ["| scenario | cc | real median (min-max) | mpsim matched | mpsim as the file | ratio mpsim/real | "
           "lost packets real / mpsim | errors |", "|---|---|---|---|---|---|---|---|"]
    for name, s, res in flows:
        k = s["real_goodput_bps"]
        errs = "; ".join(f"{e['repeat']}: {e['error']}" for e in s["errors"]) or "none"
        out.append(f"| {name} | {res.info['cc']} | {mb(k['median'])} ({mb(k['min'])}-{mb(k['max'])}) | "
                   f"{mb(s['mpsim_goodput_bps'])} | {mb(s['mpsim_file_goodput_bps'])} | {r3(s['ratio_mpsim_real'])} | "
                   f"{s['real_lost_packets']:.0f} / {s['mpsim_lost_packets']:.0f} | {errs} |")
    out += ["", "| scenario | path | real | mpsim matched | ratio mpsim/real | share of goodput real / mpsim | "
            "lost packets real / mpsim | RTT mean real / mpsim (ms) |", "|---|---|---|---|---|---|---|---|"]
    tot = {name: (s["real_goodput_bps"]["median"], s["mpsim_goodput_bps"]) for name, s, _ in flows}
    for name, p in paths:
        rt, mt = tot[name]
        share = (f"{p['real_goodput_bps'] / rt:.0%} / {p['mpsim_goodput_bps'] / mt:.0%}"
                 if rt and mt and p["real_goodput_bps"] is not None and p["mpsim_goodput_bps"] is not None else "n/a")
        rtt = lambda x: "n/a" if x is None else f"{x:.1f}"  # noqa: E731
        out.append(f"| {name} | {p['path']} | {mb(p['real_goodput_bps'])} | {mb(p['mpsim_goodput_bps'])} | "
                   f"{r3(p['ratio_mpsim_real'])} | {share} | {p['real_lost_packets']:.0f} / {p['mpsim_lost_packets']:.0f} | "
                   f"{rtt(p['real_rtt_mean_ms'])} / {rtt(p['mpsim_rtt_mean_ms'])} |")
    out += ["", "Load average (1 min) when each scenario started: " + ", ".join(f"{n} {v:.1f}" for n, v in loads)]
    text = "\n".join(out) + "\n"
    print(text)
    marker = "<!-- table -->"
    dest = Path(a.out)
    if dest.exists() and marker in dest.read_text():
        head, _, rest = dest.read_text().partition(marker)
        _, _, tail = rest.partition("<!-- end -->")
        dest.write_text(f"{head}{marker}\n{text}<!-- end -->{tail}")
    else:
        dest.write_text(f"{marker}\n{text}<!-- end -->\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
