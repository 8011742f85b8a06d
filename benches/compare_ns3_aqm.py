#!/usr/bin/env python3
"""mpsim's queue disciplines beside ns-3's on the same dumbbell: CoDel, FQ-CoDel, RED, PIE.

Two cases, 60 s each, each run twice: dropping (no ECN) and with ECN (RFC 3168 in TCP and
the discipline's `ecn`, which marks ECN-capable packets CE instead of dropping them): 2 flows over a 10 Mbit/s bottleneck and 4 flows over 100 Mbit/s,
20 ms one way, access links 100 Mbit/s and 1 ms, NewReno with SACK, one ACK per segment,
min RTO 200 ms, 1514-byte data packets on the wire, a hard limit of 1000 packets. The
bottleneck's data direction runs each discipline with mpsim's defaults (docs/aqm.md) on
both sides; ns-3 runs benches/ns3/dumbbell.cc with the matching queue disc over a 1-packet
device queue. PIE's de-randomised drops are on in both (mpsim's `derandomize`, ns-3's
`UseDerandomization`). With ECN, ns-3's RED runs `UseHardDrop` false and PIE
`MarkEcnThreshold` 0.1, as Linux's RED without harddrop and sch_pie that mpsim follows.

    python benches/compare_ns3_aqm.py [--out benches/results/aqm_ns3.md] [--duration 60] [--mode both]

Needs the `ns3` wheel (installed on first use) and a C++ compiler. Not part of CI: the whole
comparison takes about 5 minutes on 2 cores (295 s measured; about half for one mode). The
section of the output file from "## Differences" on is written by hand and kept when the file
is regenerated.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benches" / "ns3"))

import mpsim  # noqa: E402
from ns3_dumbbell import run_ns3  # noqa: E402

CASES = [("2 flows, 10 Mbit/s", 2, 10_000_000), ("4 flows, 100 Mbit/s", 4, 100_000_000)]
DISCIPLINES = ["codel", "fq_codel", "red", "pie"]
MODES = {"drop": [False], "ecn": [True], "both": [False, True]}
QUEUE_PKTS = 1000
KEPT_SECTION = "## Differences"

# ns-3's drop reasons that are the hard limit (mpsim's `queue_drops`); every other reason
# is the discipline's own decision (mpsim's `aqm_drops`). RED's "Forced drop" is the
# average above 2*MaxTh (gentle), an AQM decision; PIE's "Forced drop" is its queue limit.
NS3_OVERFLOW_REASONS = {
    "codel": {"Overlimit drop"},
    "fq_codel": {"Overlimit drop"},
    "red": {"Queue limit drop"},
    "pie": {"Forced drop"},
}


def scenario(n_flows: int, rate_bps: int, aqm: str, duration_s: float, ecn: bool = False) -> dict:
    """The dumbbell of scenarios/validation/dumbbell_*.toml with a managed 1000-packet bottleneck."""
    bottleneck = {"name": "bottleneck", "rate": f"{rate_bps}bps", "delay": "20ms", "queue": f"{QUEUE_PKTS}pkt"}
    bottleneck["aqm"] = {"kind": aqm, "ecn": ecn} | ({"derandomize": True} if aqm == "pie" else {})
    links, paths, flows = [bottleneck], [], []
    for i in range(n_flows):
        links += [
            {"name": f"src{i}", "rate": "100Mbps", "delay": "1ms", "queue": "1000pkt"},
            {"name": f"dst{i}", "rate": "100Mbps", "delay": "1ms", "queue": "1000pkt"},
        ]
        paths.append({"name": f"p{i}", "links": [f"src{i}", "bottleneck", f"dst{i}"]})
        flows.append({"name": f"tcp{i}", "path": f"p{i}", "cc": "reno"})
    return {
        "name": f"aqm_{aqm}_{n_flows}x{rate_bps // 1_000_000}m" + ("_ecn" if ecn else ""),
        "duration": f"{duration_s}s",
        "seed": 1,
        "tcp": {
            "mss": "1460B",
            "initial_window": 10,
            "min_rto": "200ms",
            "delayed_ack": False,
            "rcv_buf": "4MB",
            "snd_buf": "4MB",
            "header": "54B",  # 20 B IP + 32 B TCP with timestamps + 2 B PPP, as ns-3's wire
            "ecn": ecn,
        },
        "link": links,
        "path": paths,
        "flow": flows,
    }


def run_mpsim(n_flows: int, rate_bps: int, aqm: str, duration_s: float, ecn: bool = False) -> dict:
    r = mpsim.run(scenario(n_flows, rate_bps, aqm, duration_s, ecn), progress=False)
    link = next(lk for lk in r.summary["links"] if lk["link"] == "bottleneck" and lk["direction"] == "forward")
    return {
        "goodputs": [f["goodput_bps"] for f in r.summary["flows"]],
        "delay_mean_ms": link["queue_delay_mean_ms"],
        "delay_p95_ms": link["queue_delay_p95_ms"],
        "aqm_drops": link["aqm_drops"],
        "overflow_drops": link["queue_drops"],
        "marks": link["aqm_marks"],
        "timeouts": sum(f["timeouts"] for f in r.summary["flows"]),
        "ecn_reductions": sum(f.get("ecn_reductions") or 0 for f in r.summary["flows"]),
        "wall_s": r.run_info["wall_s"],
    }


def run_ns3_case(n_flows: int, rate_bps: int, aqm: str, duration_s: float, ecn: bool = False) -> dict:
    ns = run_ns3(n_flows, rate_bps, 0.0, duration_s, seed=1, min_rto_s=0.2, qdisc=aqm, queue_pkts=QUEUE_PKTS, ecn=ecn)
    q = ns["qdisc"]
    reasons = {**q["drops_before_enqueue"], **q["drops_after_dequeue"]}
    overflow = sum(n for why, n in reasons.items() if why.split(") ")[-1] in NS3_OVERFLOW_REASONS[aqm])
    # The device queue under the queue disc must never drop or hold more than one packet,
    # else it hides part of the queue from the discipline.
    if ns["drops"]["bottleneck_tc_full_queue"] or ns["drops"]["bottleneck_queue"] or ns["bottleneck"]["max_queue_pkts"] > 1:
        raise RuntimeError(f"ns-3's device queue took part of the queue: {ns['drops']}, {ns['bottleneck']}")
    return {
        "goodputs": [f["goodput_bps"] for f in ns["flows"]],
        "delay_mean_ms": q["delay_to_wire_mean_ms"],
        "delay_p95_ms": q["delay_to_wire_p95_ms"],
        "sojourn_mean_ms": q["sojourn_mean_ms"],
        "sojourn_p95_ms": q["sojourn_p95_ms"],
        "aqm_drops": q["dropped"] - overflow,
        "overflow_drops": overflow,
        "marks": q["marked"],
        "reasons": reasons,
        "mark_reasons": q["marks"],
        "timeouts": sum(f["timeouts"] for f in ns["flows"]),
        "ecn_reductions": sum(f["cwr_entries"] for f in ns["flows"]),
        "wall_s": ns["wall_s"],
        "version": ns["ns3_version"],
    }


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else ("1.00" if a == b else "-")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benches" / "results" / "aqm_ns3.md")
    ap.add_argument("--duration", type=float, default=60.0, help="simulated seconds (default 60)")
    ap.add_argument(
        "--mode", choices=sorted(MODES), default="both", help="drop (no ECN), ecn, or both (default)"
    )
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    rows = []
    for ecn in MODES[args.mode]:
        for label, n, rate in CASES:
            for aqm in DISCIPLINES:
                name = f"{label}, {aqm}{', ECN' if ecn else ''}"
                print(f"{name}: ns-3 ...", file=sys.stderr, flush=True)
                ns = run_ns3_case(n, rate, aqm, args.duration, ecn)
                print(f"{name}: mpsim ...", file=sys.stderr, flush=True)
                mp = run_mpsim(n, rate, aqm, args.duration, ecn)
                rows.append((label, aqm, ecn, ns, mp))
    elapsed = time.perf_counter() - t0

    version = rows[0][3]["version"]
    lines = [
        "# mpsim's queue disciplines beside ns-3's",
        "",
        f"Produced by `python benches/compare_ns3_aqm.py --mode {args.mode}` (`make bench-aqm`) with ns-3 {version} (PyPI wheel) on "
        f"{platform.machine()}, Python {platform.python_version()}; {args.duration:g} simulated seconds per run, "
        f"seed 1, {elapsed:.0f} s for the whole comparison.",
        "",
        "Dumbbell as in [ns3_comparison.md](ns3_comparison.md) (access 100 Mbit/s 1 ms, bottleneck 20 ms one way,",
        "NewReno with SACK, an ACK per segment, min RTO 200 ms, 1514-byte data packets on the wire),",
        f"with a {QUEUE_PKTS}-packet hard limit and the discipline on the bottleneck's data direction.",
        "Parameters are mpsim's defaults on both sides (CoDel target 5 ms, interval 100 ms, MinBytes 1500;",
        "FQ-CoDel 1024 flows, quantum 1514, drop batch 64; RED MinTh 5, MaxTh 15 packets, max_p 0.02",
        "(LInterm 50), weight 0.002, gentle, MeanPktSize 1500, LinkBandwidth the bottleneck's rate;",
        "PIE target 15 ms, Tupdate 15 ms, A 0.125, B 1.25, burst allowance 150 ms, de-randomised drops",
        "on both sides (ns-3 `UseDerandomization` true, mpsim `derandomize = true`), timestamp-based",
        "delay). Rows marked ECN run RFC 3168 ECN: ns-3 `TcpSocketBase::UseEcn` \"On\" and the queue",
        "disc's `UseEcn` true (RED `UseHardDrop` false, PIE `MarkEcnThreshold` 0.1, as Linux), mpsim",
        "`tcp.ecn = true` and the discipline's `ecn = true`; other rows have ECN off on both sides",
        "(ns-3 `UseEcn` false, mpsim `ecn = false`), so every signal is a drop and marks are 0.",
        "",
        "In ns-3 the queue disc sits over a 1-packet device queue (flow control stops the queue disc",
        "while the device holds a packet); the run checks that the device queue never held more than",
        "one packet and never dropped. Queueing delay is, on both sides, each transmitted packet's",
        "time from its arrival at the bottleneck to the start of its transmission (ns-3: queue disc",
        "`Enqueue` to the device's `PhyTxBegin`, matched by packet uid); mean and 95th percentile",
        "(ns-3 exact, mpsim from 0.1 ms bins). ns-3's own `SojournTime` (to leaving the queue disc,",
        "up to one transmission earlier) is listed too. AQM drops are the discipline's decisions;",
        "overflow drops are at the hard limit (ns-3 reasons: CoDel/FQ-CoDel \"Overlimit drop\", RED",
        "\"Queue limit drop\", PIE \"Forced drop\").",
        "",
        "| case | discipline | ECN | goodput per flow, ns-3 (Mbit/s) | goodput per flow, mpsim | sum mpsim/ns-3 | mean delay ns-3 / mpsim (ms) | ratio | p95 delay ns-3 / mpsim (ms) | ratio | AQM drops ns-3 / mpsim | ratio | overflow drops ns-3 / mpsim | marks ns-3 / mpsim | ratio | RTOs ns-3 / mpsim | ns-3 SojournTime mean / p95 (ms) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, aqm, ecn, ns, mp in rows:
        ns_sum, mp_sum = sum(ns["goodputs"]), sum(mp["goodputs"])
        lines.append(
            f"| {label} | {aqm} | {'on' if ecn else 'off'} | {', '.join(f'{g / 1e6:.2f}' for g in ns['goodputs'])} | "
            f"{', '.join(f'{g / 1e6:.2f}' for g in mp['goodputs'])} | {_ratio(mp_sum, ns_sum)} | "
            f"{ns['delay_mean_ms']:.2f} / {mp['delay_mean_ms']:.2f} | {_ratio(mp['delay_mean_ms'], ns['delay_mean_ms'])} | "
            f"{ns['delay_p95_ms']:.2f} / {mp['delay_p95_ms']:.2f} | {_ratio(mp['delay_p95_ms'], ns['delay_p95_ms'])} | "
            f"{ns['aqm_drops']} / {mp['aqm_drops']} | {_ratio(mp['aqm_drops'], ns['aqm_drops'])} | "
            f"{ns['overflow_drops']} / {mp['overflow_drops']} | {ns['marks']} / {mp['marks']} | "
            f"{_ratio(mp['marks'], ns['marks'])} | "
            f"{ns['timeouts']} / {mp['timeouts']} | {ns['sojourn_mean_ms']:.2f} / {ns['sojourn_p95_ms']:.2f} |"
        )
    lines += ["", "ns-3 drops and marks by reason:", ""]
    for label, aqm, ecn, ns, _mp in rows:
        why = [f"{why}: {n}" for why, n in ns["reasons"].items()]
        why += [f"{why} (mark): {n}" for why, n in ns["mark_reasons"].items()]
        lines.append(f"- {label}, {aqm}{', ECN' if ecn else ''}: " + (", ".join(why) or "none"))
    ecn_rows = [(label, aqm, ns, mp) for label, aqm, ecn, ns, mp in rows if ecn]
    if ecn_rows:
        lines += ["", "Window reductions on ECN-Echo (ns-3 entries into CA_CWR / mpsim `ecn_reductions`, all flows), "
                  "and marks per reduction:", ""]
        for label, aqm, ns, mp in ecn_rows:
            per = [f"{r['marks'] / r['ecn_reductions']:.1f}" if r["ecn_reductions"] else "-" for r in (ns, mp)]
            lines.append(f"- {label}, {aqm}: {ns['ecn_reductions']} / {mp['ecn_reductions']} "
                         f"({_ratio(mp['ecn_reductions'], ns['ecn_reductions'])}); marks per reduction {per[0]} / {per[1]}")
    lines += [
        "",
        "Wall time (s), ns-3 `Simulator::Run()` / mpsim core: "
        + "; ".join(
            f"{label} {aqm}{' ECN' if ecn else ''} {ns['wall_s']:.1f} / {mp['wall_s']:.2f}"
            for label, aqm, ecn, ns, mp in rows
        ),
        "",
    ]
    kept = ""
    if args.out.is_file():
        old = args.out.read_text()
        if KEPT_SECTION in old:
            kept = old[old.index(KEPT_SECTION) :]
    text = "\n".join(lines) + ("\n" + kept if kept else "")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
