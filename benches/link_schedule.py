#!/usr/bin/env python3
"""Time-varying links: does goodput follow a link's rate steps, and does the handover
scenario move the connection between its paths?

    python benches/link_schedule.py                # prints the tables of benches/results/link_schedule.md

1. One CUBIC TCP flow over a link of 100 packets of queue whose schedule is 20 Mbit/s and
   20 ms one way for 10 s, 4 Mbit/s and 60 ms for 10 s, 12 Mbit/s and 20 ms to 30 s: mean
   goodput of each step (the flow series, 1 s intervals), leaving out the 2 s after each
   step, against the step's payload rate (rate x 1460 / 1500).
2. `scenarios/links/wifi_handover.toml`: mean goodput of each subflow over each step of the
   WiFi link's schedule (1 s after each step left out).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import mpsim  # noqa: E402

STEPS = [
    {"at": "0s", "rate": "20Mbps"},
    {"at": "10s", "rate": "4Mbps", "delay": "60ms"},
    {"at": "20s", "rate": "12Mbps", "delay": "20ms"},
]


def steps_table() -> str:
    d = {
        "duration": "30s",
        "metrics": {"warmup": "1s", "interval": "1s"},
        "link": [{"name": "l", "delay": "20ms", "queue": "100pkt", "schedule": STEPS}],
        "path": [{"name": "p", "links": ["l"]}],
        "flow": [{"name": "f", "path": "p", "cc": "cubic"}],
    }
    fs = mpsim.run(d, progress=False).flow_series
    rows = ["| step | rate | payload rate (Mbit/s) | goodput (Mbit/s) | goodput / payload rate | min srtt (ms) |", "|---|---|---|---|---|---|"]
    for lo, hi, rate in [(0, 10, 20e6), (10, 20, 4e6), (20, 30, 12e6)]:
        part = fs[(fs.time_s > lo + 2) & (fs.time_s <= hi)]
        g = part.goodput_bps.mean()
        pay = rate * 1460 / 1500
        rows.append(f"| {lo}-{hi} s | {rate / 1e6:g} Mbit/s | {pay / 1e6:.2f} | {g / 1e6:.2f} | {g / pay:.3f} | {part.srtt_ms.min():.1f} |")
    return "\n".join(rows)


def handover_table() -> str:
    res = mpsim.run(ROOT / "scenarios" / "links" / "wifi_handover.toml", progress=False)
    ss = res.subflow_series
    rows = ["| WiFi step | WiFi rate | WiFi goodput (Mbit/s) | LTE goodput (Mbit/s) |", "|---|---|---|---|"]
    for lo, hi, rate in [(0, 10, "20 Mbit/s, 10 ms"), (10, 14, "6 Mbit/s, 25 ms"), (14, 22, "1 Mbit/s, 60 ms, 2% loss"), (22, 30, "20 Mbit/s, 10 ms")]:
        cells = []
        for path in ("p_wifi", "p_lte"):
            s = ss[(ss.path == path) & (ss.time_s > lo + 1) & (ss.time_s <= hi)]
            cells.append(f"{s.goodput_bps.mean() / 1e6:.2f}")
        rows.append(f"| {lo}-{hi} s | {rate} | {cells[0]} | {cells[1]} |")
    return "\n".join(rows)


def main() -> int:
    print(steps_table())
    print()
    print(handover_table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
