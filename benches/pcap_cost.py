"""Cost of packet captures: wall time of scenarios/mptcp/speed_2path.toml without a capture,
with a headers-only capture (the default) and with the payload stored, best of N runs.

Usage: python benches/pcap_cost.py [REPEATS]  -> benches/results/pcap.md
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import mpsim

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "mptcp" / "speed_2path.toml"
OUT = ROOT / "benches" / "results" / "pcap.md"


def timed(repeats: int, **kw) -> tuple[float, float, int, int]:
    """Best simulation wall time, best total wall time (writing the files included), capture
    bytes and packets delivered."""
    best_sim = best_total = float("inf")
    size = delivered = 0
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            res = mpsim.run(SCENARIO, progress=False, pcap=d if kw.get("pcap") else None, overrides=kw.get("overrides"))
            total = time.perf_counter() - t0
            size = sum(p.stat().st_size for p in res.pcap_files)
        best_sim = min(best_sim, res.run_info["wall_s"])
        best_total = min(best_total, total)
        delivered = res.summary["packets_delivered"]
    return best_sim, best_total, size, delivered


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    rows = [
        ("no capture", timed(repeats)),
        ("capture, headers only", timed(repeats, pcap=True)),
        ("capture, payload stored", timed(repeats, pcap=True, overrides={"metrics.pcap_payload": True,
                                                                          "metrics.pcap_limit": "4GB"})),
    ]
    base = rows[0][1][0]
    lines = [
        "# Cost of packet captures",
        "",
        f"`python benches/pcap_cost.py {repeats}` on `scenarios/mptcp/speed_2path.toml` (600 s simulated, one",
        "MPTCP flow over two 10 Mbit/s paths), best of "
        f"{repeats} runs. Simulation wall time is the core's own (`run_info.wall_s`); total",
        "includes building the Python result and writing the capture files.",
        "",
        "| case | simulation wall s | vs no capture | total wall s | capture size MB | packets delivered |",
        "|---|---|---|---|---|---|",
    ]
    for name, (sim, total, size, delivered) in rows:
        lines.append(f"| {name} | {sim:.2f} | {sim / base:.2f}x | {total:.2f} | {size / 1e6:.1f} | {delivered} |")
    lines.append("")
    OUT.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
