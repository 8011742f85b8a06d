#!/usr/bin/env python3
"""What a managed queue (FQ-CoDel, CoDel) and a trace-driven link cost per packet, beside a
fixed-rate drop-tail link: instructions per delivered data packet, counted by callgrind
(load-independent), on the ns-3 comparison's dumbbells.

    python benches/link_cost.py [--out benches/results/link_cost.md]

Each dumbbell runs as shipped (drop-tail bottleneck), then with its bottleneck's data
direction under `aqm = "fq_codel"` and `aqm = "codel"` (the same hard limit), and following
a constant Mahimahi trace of the bottleneck's rate (`trace`, the ACK direction at the fixed
rate). The traffic is not the same in every case (an AQM drops earlier, so windows and losses
differ): events per packet are given beside the instructions, and the goodput.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from mpsim import traces  # noqa: E402

CASES = [
    ("scenarios/validation/dumbbell_2x10m_loss0.toml", 10_000_000),
    ("scenarios/validation/dumbbell_10x100m_loss0.toml", 100_000_000),
]


def variant(text: str, extra: str) -> str:
    """The scenario with `extra` added to its bottleneck link's table."""
    marker = 'name = "bottleneck"\n'
    if marker not in text:
        raise SystemExit("the scenario has no link named bottleneck")
    return text.replace(marker, marker + extra + "\n", 1)


def measure(binary: Path, scen: Path) -> dict:
    """Instructions, packets and events of one run under callgrind; goodputs from the run."""
    r = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(binary), str(scen), "1"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    )
    ir = int(re.search(r"Collected : (\d+)", r.stderr).group(1))
    out = json.loads(r.stdout)
    packets = out["packets_delivered"]
    events = out["events_per_s"] / out["packets_per_s"] if out["packets_per_s"] else 0.0
    goodput = sum(f["goodput_bps"] for f in out["flows"])
    return {"ir": ir, "packets": packets, "ir_per_packet": ir / packets, "events_per_packet": events, "goodput": goodput}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benches" / "results" / "link_cost.md")
    args = ap.parse_args(argv)
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "mpsim-core", "--example", "speed"], cwd=ROOT, check=True)
    binary = ROOT / "target" / "release" / "examples" / "speed"
    scratch = Path(tempfile.mkdtemp(prefix="link_cost_"))
    lines = [
        "# What a queue discipline and a trace cost per packet",
        "",
        "`python benches/link_cost.py`: instructions per delivered data packet (callgrind, one run",
        "each), the bottleneck's data direction drop-tail as shipped, then under FQ-CoDel and CoDel",
        "(same hard limit), then following a constant Mahimahi trace of the same rate. The traffic",
        "differs between cases (an AQM drops earlier than a full queue), so events per packet and",
        "the goodput are given too.",
        "",
        "| scenario | bottleneck | instructions / packet | x drop-tail | events / packet | goodput (Mbit/s) |",
        "|---|---|---|---|---|---|",
    ]
    for scen, rate in CASES:
        text = (ROOT / scen).read_text()
        trace = scratch / f"{Path(scen).stem}.trace"
        traces.generate(trace, "60s", rate=rate)
        variants = [
            ("drop-tail", text),
            ("fq_codel", variant(text, 'aqm = "fq_codel"')),
            ("codel", variant(text, 'aqm = "codel"')),
            ("constant trace", variant(text, f"trace = {json.dumps(str(trace))}")),
        ]
        base = None
        for label, body in variants:
            f = scratch / f"{Path(scen).stem}-{label.replace(' ', '_')}.toml"
            f.write_text(body)
            m = measure(binary, f)
            base = base or m["ir_per_packet"]
            lines.append(
                f"| {Path(scen).stem} | {label} | {m['ir_per_packet']:,.0f} | {m['ir_per_packet'] / base:.2f} "
                f"| {m['events_per_packet']:.2f} | {m['goodput'] / 1e6:.2f} |"
            )
            print(lines[-1], flush=True)
    lines += [
        "",
        "A managed queue takes each packet through the discipline's queue and one more event per",
        "transmission (the dequeue), where a drop-tail link computes the departure on arrival and",
        "needs no event of its own; FQ-CoDel also hashes the packet's flow and runs its deficit",
        "round robin. The trace's cost is the search for the next delivery opportunity.",
    ]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
