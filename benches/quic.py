#!/usr/bin/env python3
"""QUIC against mpsim's TCP on one lossy path: goodput of each and their ratio.

    python benches/quic.py                # prints the table of benches/results/quic.md
    python benches/quic.py --multipath    # Multipath QUIC against Multipath TCP (second table)
    python benches/quic.py --ack-frequency  # QUIC's ACK frequency extension (docs/quic.md)

One bulk flow, Reno for both (RFC 9002's NewReno for QUIC), over a 10 Mbit/s link whose queue
holds 100 packets, one-way delay RTT/2, random loss on the data direction; 120 s with a 10 s
warm-up, mean over seeds 1 to 5. TCP runs mpsim's defaults (SACK, RACK, TLP, PRR, an ACK per segment,
1460-byte segments), and again with delayed ACKs (every second segment, as QUIC's receiver
acknowledges); QUIC carries 1440 stream bytes in the same 1500-byte IP packets, so its
ceiling is 1440/1460 = 0.986 of TCP's.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import mpsim  # noqa: E402

SEEDS = range(1, 6)


def one_path_run(flow: dict, rtt_ms: int, loss: float, seed: int) -> dict:
    """The summary of `flow` alone over the grid's path: 10 Mbit/s, a 100-packet queue, the
    one-way delay half the RTT, random loss on the data direction; 120 s, 10 s of warm-up."""
    d = {
        "duration": "120s",
        "seed": seed,
        "metrics": {"warmup": "10s"},
        "link": [{"name": "l", "rate": "10Mbps", "delay": f"{rtt_ms / 2}ms", "queue": "100pkt", "loss": f"{loss}%"}],
        "path": [{"name": "p", "links": ["l"]}],
        "flow": [flow],
    }
    return mpsim.run(d, progress=False).summary["flows"][0]


def goodput(transport: str, rtt_ms: int, loss: float, seed: int) -> tuple[float, float]:
    flow: dict = {"name": "f", "path": "p", "cc": "reno"}
    if transport == "quic":
        flow["transport"] = "quic"
    elif transport == "tcp_delack":
        flow["tcp"] = {"delayed_ack": True}
    f = one_path_run(flow, rtt_ms, loss, seed)
    return f["goodput_bps"], f["retransmit_rate"]


def main() -> None:
    rows = [
        "| RTT | loss | TCP (Mbit/s) | TCP, delayed ACKs (Mbit/s) | QUIC (Mbit/s) | QUIC / TCP | QUIC / TCP with delayed ACKs | retransmit rate TCP, QUIC |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for rtt in (20, 100):
        for loss in (0.0, 1.0, 3.0):
            m = {}
            for tr in ("tcp", "tcp_delack", "quic"):
                runs = [goodput(tr, rtt, loss, s) for s in SEEDS]
                m[tr] = (statistics.mean(x[0] for x in runs), statistics.mean(x[1] for x in runs))
            t, d, q = m["tcp"][0], m["tcp_delack"][0], m["quic"][0]
            rows.append(
                f"| {rtt} ms | {loss:g}% | {t / 1e6:.3f} | {d / 1e6:.3f} | {q / 1e6:.3f} | {q / t:.3f} | {q / d:.3f} "
                f"| {m['tcp'][1]:.4f}, {m['quic'][1]:.4f} |"
            )
    print("\n".join(rows))


KERNEL = ROOT / "scenarios" / "kernel"
TWO_PATH = ("mptcp_2x10m", "mptcp_asym", "mptcp_2x10m_loss1", "mptcp_rcvbuf_small")


def multipath(name: str, quic: bool, seed: int) -> tuple[float, list[float]]:
    """Goodput of the kernel scenario's two-path flow, total and per path (bit/s)."""
    o: dict = {"seed": seed}
    if quic:
        o["flow.mptcp.transport"] = "quic"
    f = mpsim.run(KERNEL / f"{name}.toml", overrides=o, progress=False).summary["flows"][0]
    return f["goodput_bps"], [s["goodput_bps"] for s in f["subflows"]]


def main_multipath() -> None:
    rows = [
        "| scenario | MPTCP (Mbit/s) | per path | MPQUIC (Mbit/s) | per path | MPQUIC / MPTCP |",
        "|---|---|---|---|---|---|",
    ]
    for name in TWO_PATH:
        m = {}
        for quic in (False, True):
            runs = [multipath(name, quic, s) for s in SEEDS]
            m[quic] = (statistics.mean(r[0] for r in runs), [statistics.mean(r[1][k] for r in runs) for k in range(2)])
        per = {q: " + ".join(f"{x / 1e6:.2f}" for x in m[q][1]) for q in m}
        rows.append(
            f"| {name} | {m[False][0] / 1e6:.3f} | {per[False]} | {m[True][0] / 1e6:.3f} | {per[True]} | {m[True][0] / m[False][0]:.3f} |"
        )
    print("\n".join(rows))


# quic.ack_frequency cases: RFC 9000's receiver, fixed thresholds, the window policy
ACK_FREQUENCY = (
    ("RFC 9000 (none)", None),
    ("threshold 2", {"threshold": 2}),
    ("threshold 10", {"threshold": 10}),
    ("window policy", {"policy": "window"}),
    ("threshold 10, unpaced", {"threshold": 10}),
)


def ack_frequency_run(af: dict | None, rtt_ms: int, loss: float, seed: int, pacing: bool) -> tuple[float, float, int]:
    """Goodput (bit/s), ACK packets per data packet and ACK_FREQUENCY frames of one QUIC flow."""
    flow: dict = {"name": "f", "path": "p", "cc": "reno", "transport": "quic", "quic": {"pacing": pacing}}
    if af is not None:
        flow["quic"]["ack_frequency"] = af
    f = one_path_run(flow, rtt_ms, loss, seed)
    q = f["quic"]
    return f["goodput_bps"], q["acks_sent"][0] / f["segments_sent"], q.get("ack_frequency_frames", 0)


def main_ack_frequency() -> None:
    rows = [
        "| RTT | loss | receiver | ACK packets per data packet | ACK_FREQUENCY frames | goodput (Mbit/s) | goodput / RFC 9000's |",
        "|---|---|---|---|---|---|---|",
    ]
    for rtt in (20, 100):
        for loss in (0.0, 1.0):
            base = None
            for name, af in ACK_FREQUENCY:
                runs = [ack_frequency_run(af, rtt, loss, s, "unpaced" not in name) for s in SEEDS]
                g, ratio, frames = (statistics.mean(r[k] for r in runs) for k in range(3))
                base = base or g
                rows.append(f"| {rtt} ms | {loss:g}% | {name} | {ratio:.3f} | {frames:.1f} | {g / 1e6:.3f} | {g / base:.3f} |")
    print("\n".join(rows))


if __name__ == "__main__":
    if "--multipath" in sys.argv[1:]:
        main_multipath()
    elif "--ack-frequency" in sys.argv[1:]:
        main_ack_frequency()
    else:
        main()
