#!/usr/bin/env python3
"""The PO-MPTCP reproduction's video over Multipath QUIC, stream priorities on and off and
PO-MPTCP as its scheduler, beside Multipath TCP (lowest RTT, and PO-MPTCP over it) on the same
paths.

    python benches/quic_media.py                 # prints the table of benches/results/quic_media.md
    python benches/quic_media.py --seeds 2 --losses 2%

The scenario is the reproduction's (scenarios/po_mptcp/wifi_wimax.toml: two wireless paths of
11 and 10 Mbit/s with 15 and 35 ms one-way delay, 50-packet router queues, bursty background
traffic, a 9.5 Mbit/s video of 25 frames/s, GOP IBBPBBPBBPBB, I frames of priority 1, a 1 s
playback deadline, 256 KB buffers, LIA), 60 s, with uniform loss on both paths. The QUIC flow
carries each frame on a stream of its own; `quic.priorities = false` sends the streams in the
order they were written; the `QUIC po_mptcp` case runs the PO-MPTCP scheduler (priorities on),
which is told the priority of the data that goes next; `QUIC priorities + reset` adds
`quic.reset_late` (the stream of a frame past its deadline is reset). Figures are means over seeds 1..N of the video flow's summary: mean
delay per frame class (production to delivery to the receiving application), frames late
(delivered after the deadline) as a share of those produced, and the PSNR the reproduction
computes (from throughput against the stream's rate), and the goodput of the frames
delivered by their deadline (their sizes over the run).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import mpsim  # noqa: E402
from mpsim.reproduce import po_mptcp  # noqa: E402

CASES = {
    "MPTCP lowest_rtt": {"scheduler": "lowest_rtt"},
    "MPTCP po_mptcp": {"scheduler": "po_mptcp"},
    "QUIC priorities on": {"scheduler": "lowest_rtt", "transport": "quic"},
    "QUIC priorities off": {"scheduler": "lowest_rtt", "transport": "quic", "quic": {"priorities": False}},
    "QUIC po_mptcp": {"scheduler": "po_mptcp", "transport": "quic"},
    "QUIC priorities + reset": {"scheduler": "lowest_rtt", "transport": "quic", "quic": {"reset_late": True}},
}
CLASSES = ("I", "P", "B")


def scenario(loss: str, case: str) -> dict:
    d = po_mptcp.scenario(loss, "lowest_rtt")
    d["flow"][0].update(copy.deepcopy(CASES[case]))
    return d


def size_bytes(text: str) -> float:
    """A frame size as the scenario writes it ("150KB")."""
    units = {"B": 1, "KB": 1000, "MB": 1000_000}
    num = text.rstrip("KMB")
    return float(num) * units[text[len(num) :]]


def video(loss: str, case: str, seed: int) -> dict[str, float]:
    d = scenario(loss, case)
    d["seed"] = seed
    s = mpsim.run(d).summary
    f = next(f for f in s["flows"] if f["flow"] == "video")
    out = {"goodput_mbps": f["goodput_bps"] / 1e6, "delay_ms": f["delay_mean_ms"], "psnr_db": f["psnr_db"]}
    sizes = {name: size_bytes(c["size"]) for name, c in d["flow"][0]["app"]["classes"].items()}
    in_time = sum((c["delivered"] - c["late"]) * sizes[c["class"]] for c in f["classes"])
    out["in_time_mbps"] = 8 * in_time / float(d["duration"].rstrip("s")) / 1e6
    for c in f["classes"]:
        gen = (c["frames"] + c["refused"] + c["queued"]) or 1
        name = c["class"]
        out[f"{name}_delay_ms"] = c["delay_mean_ms"] if c["delay_mean_ms"] is not None else float("nan")
        out[f"{name}_late_pct"] = 100 * c["late"] / gen
        out[f"{name}_refused_pct"] = 100 * c["refused"] / gen
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--losses", default="0%,2%")
    a = ap.parse_args()
    cols = ["goodput_mbps", "delay_ms"] + [f"{c}_delay_ms" for c in CLASSES] + [f"{c}_late_pct" for c in CLASSES]
    cols += [f"{c}_refused_pct" for c in CLASSES] + ["psnr_db", "in_time_mbps"]
    print(f"seeds 1..{a.seeds}, means")
    print("| loss | case | " + " | ".join(cols) + " |")
    print("|" + "---|" * (len(cols) + 2))
    for loss in a.losses.split(","):
        for case in CASES:
            runs = [video(loss, case, seed) for seed in range(1, a.seeds + 1)]
            row = [statistics.fmean(r[c] for r in runs) for c in cols]
            print(f"| {loss} | {case} | " + " | ".join(f"{v:.2f}" for v in row) + " |", flush=True)


if __name__ == "__main__":
    main()
