"""Timeouts of one TCP flow at 100 ms RTT with 2% loss and 200 ms RTT with 1% loss, 3 seeds
of 600 s each: the points where the retransmission timer used to fire while the head's
retransmission was already acknowledged on its way back.

The scenario is the Padhye check's (scenarios/validation/tcp_loss.toml: one NewReno+SACK
flow, 100 Mbit/s, uniform random loss, Linux's timer). `--save FILE` keeps the per-run
figures as JSON; `--before FILE` puts such a file from another build beside this build's
in the Markdown table.

    python benches/rto_restart.py [--save runs.json] [--before runs.json] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import mpsim
SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "validation" / "tcp_loss.toml"
#: (one-way delay, loss): RTT 100 ms with 2%, RTT 200 ms with 1%
POINTS = [("50ms", "2%"), ("100ms", "1%")]
SEEDS = [1, 2, 3]
FIELDS = ["timeouts", "spurious_timeouts", "fast_recoveries", "retransmits", "goodput_bps"]


def measure() -> list[dict]:
    rows = []
    for delay, loss in POINTS:
        for seed in SEEDS:
            over = {"link.wire.delay": delay, "link.wire.loss": loss, "seed": seed}
            f = mpsim.run(SCENARIO, overrides=over, progress=False).summary["flows"][0]
            rows.append({"delay": delay, "loss": loss, "seed": seed, **{k: f[k] for k in FIELDS}})
    return rows


def table(now: list[dict], before: list[dict] | None) -> str:
    def key(r: dict) -> tuple:
        return (r["delay"], r["loss"], r["seed"])

    old = {key(r): r for r in before or []}
    head = "| RTT | loss | seed | timeouts | spurious | goodput (Mbit/s) |"
    if before:
        head = ("| RTT | loss | seed | timeouts before | timeouts after | spurious before | spurious after | "
                "goodput before (Mbit/s) | goodput after (Mbit/s) | change |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    totals: dict[str, list[int]] = {}
    for r in now:
        rtt = f"{2 * int(r['delay'].removesuffix('ms'))} ms"
        t = totals.setdefault(rtt, [0, 0, 0, 0])
        t[2] += r["timeouts"]
        t[3] += r["spurious_timeouts"]
        if before:
            b = old[key(r)]
            t[0] += b["timeouts"]
            t[1] += b["spurious_timeouts"]
            change = r["goodput_bps"] / b["goodput_bps"] - 1
            lines.append(f"| {rtt} | {r['loss']} | {r['seed']} | {b['timeouts']} | {r['timeouts']} | {b['spurious_timeouts']} | "
                         f"{r['spurious_timeouts']} | {b['goodput_bps'] / 1e6:.4f} | {r['goodput_bps'] / 1e6:.4f} | {change * 100:+.2f}% |")
        else:
            lines.append(f"| {rtt} | {r['loss']} | {r['seed']} | {r['timeouts']} | {r['spurious_timeouts']} | "
                         f"{r['goodput_bps'] / 1e6:.4f} |")
    lines.append("")
    for rtt, t in totals.items():
        if before:
            lines.append(f"- {rtt}: {t[0]} timeouts before ({t[1]} spurious), {t[2]} after ({t[3]} spurious), over {len(SEEDS)} seeds.")
        else:
            lines.append(f"- {rtt}: {t[2]} timeouts ({t[3]} spurious) over {len(SEEDS)} seeds.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--save", help="write this build's per-run figures to this JSON file")
    ap.add_argument("--before", help="per-run figures of another build (from --save), shown beside")
    ap.add_argument("--out", help="write the Markdown table here (default: stdout)")
    a = ap.parse_args(argv)
    rows = measure()
    if a.save:
        Path(a.save).write_text(json.dumps(rows, indent=1) + "\n")
    before = json.loads(Path(a.before).read_text()) if a.before else None
    text = table(rows, before)
    if a.out:
        Path(a.out).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
