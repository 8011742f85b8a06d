#!/usr/bin/env python3
"""Transport over the shared cellular traces (Mahimahi format), and what a traced link costs.

    python benches/trace_links.py                      # ../shared/traces, 60 s, results below
    python benches/trace_links.py --traces DIR --duration 60 --cost-duration 300 --repeat 5 --out FILE.md

For each trace in the folder (the data direction; the other file of its pair, .up for .down
and .down for .up, carries the ACKs) two runs of `--duration` seconds, 20 ms one way, a queue
of one bandwidth-delay product at the trace's mean rate and the 40 ms base RTT (at least 10
packets):

* one CUBIC TCP flow over the traced link;
* one Multipath TCP flow (lowest_rtt, LIA) over the traced link and a fixed 10 Mbit/s link
  of the same delay and a one-BDP queue.

Goodput (after a 5 s warmup) is set against the capacity the trace offers over the same
window (its opportunities between warmup and end, 1500 bytes each), and against its mean
over a whole period. The cost of a traced link: the TCP run again with the link at the
trace's mean rate, and with the forward direction following a constant trace of that mean
rate (same traffic as the fixed rate: the link's own cost), each `--cost-duration` seconds
long and timed `--repeat` times in this one process (fastest of each); wall time per
data packet delivered, each over the fixed rate.

The traces are GPL v3 test data beside the checkout (../shared/traces); nothing of them is
copied into the repository.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import mpsim
from mpsim import traces

ROOT = Path(__file__).resolve().parents[1]
DELAY_MS = 20
WARMUP_S = 5.0
FIXED_MBPS = 10.0


def partner(path: Path) -> Path:
    other = {".down": ".up", ".up": ".down"}[path.suffix]
    return path.with_suffix(other)


def queue_pkts(rate_bps: float) -> int:
    """One bandwidth-delay product (the 2 x 20 ms base RTT) in 1500-byte packets, at least 10."""
    return max(10, round(rate_bps * 2 * DELAY_MS / 1000 / 8 / 1500))


def window_capacity_bps(ms: list[int], start_s: float, end_s: float) -> float:
    """The capacity the trace offers between start_s and end_s, repetitions included."""
    period = ms[-1]
    count = 0
    for t in ms:
        k = 0
        while (at := t + k * period) <= end_s * 1000:
            count += at > start_s * 1000
            k += 1
    return count * 12_000 / (end_s - start_s)


def scenario(trace: Path, duration: float, multipath: bool, fixed_rate: float | None = None, const: Path | None = None) -> dict:
    """The traced link (both directions from the pair); with fixed_rate, a fixed rate instead
    (both directions), and with const too, the forward direction follows that trace."""
    mean = traces.summary(trace)["mean_mbps"] * 1e6
    cell = {"name": "cell", "delay": f"{DELAY_MS}ms", "queue": f"{queue_pkts(mean)}pkt"}
    if fixed_rate is None:
        cell |= {"trace": str(trace), "reverse_trace": str(partner(trace))}
    else:
        cell |= {"rate": f"{fixed_rate:.0f}bps"}
        if const is not None:
            cell["trace"] = str(const)
    links = [cell]
    paths = [{"name": "cellp", "links": ["cell"]}]
    if multipath:
        links.append({"name": "fixed", "rate": f"{FIXED_MBPS}Mbps", "delay": f"{DELAY_MS}ms", "queue": f"{queue_pkts(FIXED_MBPS * 1e6)}pkt"})
        paths.append({"name": "fixedp", "links": ["fixed"]})
        flow = {"name": "mptcp", "paths": ["cellp", "fixedp"], "scheduler": "lowest_rtt", "cc": "lia"}
    else:
        flow = {"name": "tcp", "path": "cellp", "cc": "cubic"}
    return {
        "name": "trace_links",
        "duration": f"{duration}s",
        "metrics": {"warmup": f"{WARMUP_S}s", "interval": "0s"},
        "link": links,
        "path": paths,
        "flow": [flow],
    }


def wall_per_packet(d: dict, repeat: int) -> tuple[float, int, float]:
    """The fastest wall time per delivered packet, the packets and the events per packet."""
    best, packets, events = float("inf"), 0, 0.0
    for _ in range(repeat):
        r = mpsim.run(d, progress=False)
        packets = r.summary["packets_delivered"]
        events = r.summary["events"] / max(1, packets)
        best = min(best, r.run_info["wall_s"] / max(1, packets))
    return best, packets, events


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", default=str(ROOT.parent / "shared" / "traces"), help="folder of .down/.up traces")
    ap.add_argument("--duration", type=float, default=60.0, help="simulated seconds per run")
    ap.add_argument("--cost-duration", type=float, default=300.0, help="simulated seconds of each timed run")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per case for the cost ratio")
    ap.add_argument("--out", default=str(ROOT / "benches" / "results" / "trace_links.md"))
    args = ap.parse_args()
    folder = Path(args.traces)
    files = sorted(p for p in folder.glob("*") if p.suffix in (".down", ".up") and partner(p).exists())
    if not files:
        print(f"no trace pairs in {folder}", file=sys.stderr)
        return 1

    rows, cost_rows = [], []
    scratch = Path(tempfile.mkdtemp(prefix="trace_links_"))
    for f in files:
        info = traces.summary(f)
        ms = traces.load(f)
        window = window_capacity_bps(ms, WARMUP_S, args.duration)
        tcp = mpsim.run(scenario(f, args.duration, False), progress=False).summary["flows"][0]
        mp = mpsim.run(scenario(f, args.duration, True), progress=False).summary["flows"][0]
        rows.append((f.name, info["mean_mbps"], window / 1e6, queue_pkts(info["mean_mbps"] * 1e6),
                     tcp["goodput_bps"] / 1e6, tcp["goodput_bps"] / window, tcp["retransmits"],
                     mp["goodput_bps"] / 1e6, mp["goodput_bps"] / (window + FIXED_MBPS * 1e6)))
        # a constant trace at the mean rate; the fixed rate is that trace's exact mean
        const = scratch / f"{f.name}.const"
        rate = traces.generate(const, "60s", rate=info["mean_mbps"] * 1e6)["mean_mbps"] * 1e6
        cd = args.cost_duration
        traced = wall_per_packet(scenario(f, cd, False), args.repeat)
        fixed = wall_per_packet(scenario(f, cd, False, fixed_rate=rate), args.repeat)
        constant = wall_per_packet(scenario(f, cd, False, fixed_rate=rate, const=const), args.repeat)
        cost_rows.append((f.name, traced, fixed, constant))
        print(f"{f.name}: TCP {tcp['goodput_bps'] / 1e6:.2f} Mbit/s of {window / 1e6:.2f}, "
              f"MPTCP {mp['goodput_bps'] / 1e6:.2f}; cost x{traced[0] / fixed[0]:.3f} (real), "
              f"x{constant[0] / fixed[0]:.3f} (constant trace)", flush=True)

    cmd = f"python benches/trace_links.py --duration {args.duration:g} --cost-duration {args.cost_duration:g} --repeat {args.repeat}"
    lines = [
        "# Transport over the shared cellular traces",
        "",
        f"`{cmd}` (traces from `../shared/traces`, the Mahimahi cellular traces; they stay",
        "outside the repository). Each trace carries the data direction of a link with 20 ms of",
        "delay each way; the other trace of its pair carries the ACKs. The queue holds one",
        "bandwidth-delay product at the trace's mean rate and the 40 ms base RTT (at least 10",
        f"packets). Runs last {args.duration:g} s; goodput counts payload after a {WARMUP_S:g} s warmup.",
        "\"window capacity\" is what the trace offers in that same window (its opportunities",
        "times 1500 bytes), the figure goodput can reach at most (times 1460/1500 for the",
        "headers); \"mean\" is the trace's mean over a whole period (the traces' README table).",
        "",
        "TCP: one CUBIC flow over the traced link. MPTCP: one flow, lowest_rtt scheduler, LIA,",
        f"over the traced link and a fixed {FIXED_MBPS:g} Mbit/s link (same delay, one-BDP queue);",
        f"its ratio is against the window capacity plus {FIXED_MBPS:g} Mbit/s.",
        "",
        "| trace | mean (Mbit/s) | window capacity (Mbit/s) | queue (pkt) | TCP goodput (Mbit/s) | TCP / capacity | TCP retransmits | MPTCP goodput (Mbit/s) | MPTCP / (capacity + 10) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r[0]} | {r[1]:.2f} | {r[2]:.2f} | {r[3]} | {r[4]:.2f} | {r[5]:.1%} | {r[6]:,} | {r[7]:.2f} | {r[8]:.1%} |")
    lines += [
        "",
        "## Cost of a traced link",
        "",
        "The TCP case (real trace, both directions) against the same link at the trace's mean",
        "rate (both directions), and against a constant trace of that mean rate in the data",
        "direction (the ACK direction at the fixed rate). The constant trace carries the same",
        "traffic as the fixed rate, so its ratio is the traced link's own cost; the real trace's",
        "ratio also has TCP working harder per packet (losses, recoveries, timers: see events per",
        f"packet). Each case runs {args.cost_duration:g} s (the traces repeat) and is timed {args.repeat} times in",
        "one process, the fastest kept; wall time per data packet delivered to the receiver.",
        "",
        "| trace | packets: real / fixed / constant | events per packet: real / fixed / constant | ns per packet: real / fixed / constant | real / fixed | constant / fixed |",
        "|---|---|---|---|---|---|",
    ]
    for name, (rw, rp, re_), (fw, fp, fe), (cw, cp, ce) in cost_rows:
        lines.append(f"| {name} | {rp:,} / {fp:,} / {cp:,} | {re_:.2f} / {fe:.2f} / {ce:.2f} | {rw * 1e9:.0f} / {fw * 1e9:.0f} / {cw * 1e9:.0f} "
                     f"| {rw / fw:.3f} | {cw / fw:.3f} |")
    tcp_share = [r[5] for r in rows]
    mp_share = [r[8] for r in rows]
    const_ratio = [c[0] / f[0] for _, _, f, c in cost_rows]
    real_ratio = [r[0] / f[0] for _, r, f, _ in cost_rows]
    lines += [
        "",
        "## Reading",
        "",
        f"- One CUBIC flow gets {min(tcp_share):.0%} to {max(tcp_share):.0%} of the capacity the trace offers while",
        "  it runs: the queue of one BDP at the mean rate is short against the swings of a cellular",
        "  link (a burst of opportunities finds the queue empty and is lost; a dip overflows it).",
        f"- The Multipath TCP flow gets {min(mp_share):.0%} to {max(mp_share):.0%} of the two links' capacity together.",
        f"- A constant trace costs {min(const_ratio) - 1:+.0%} to {max(const_ratio) - 1:+.0%} per packet against the same fixed rate,",
        "  for the same traffic (same packets and events): the traced link's own work. The real",
        f"  traces cost {min(real_ratio) - 1:+.0%} to {max(real_ratio) - 1:+.0%} with about the same events per packet: their ACK",
        "  direction follows a trace too, and the traffic differs (fewer packets, more of them in",
        "  loss recovery); this run does not break the difference down further.",
    ]
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
