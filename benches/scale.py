"""Cost per delivered packet as the network grows: dumbbells of 10 to 1,000 TCP flows.

Each dumbbell has N hosts a side, host h<i> sending to h<N+i>, 100 Mbit/s access links (1 ms)
and a bottleneck of N x 10 Mbit/s (20 ms, a queue of N x 10 packets), so every flow has the
same share and the same dynamics whatever N: only the size of the network changes. The
instructions of one run of `target/release/examples/speed` under callgrind, divided by the
data packets delivered (as benches/speed.py --instructions counts them); events from the
summary (`--events`, a native run).

    python benches/scale.py [--flows 10 100 1000] [--duration 2s] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEED = ROOT / "target" / "release" / "examples" / "speed"


def dumbbell(n: int, duration: str) -> str:
    lines = [
        f'name = "dumbbell_{n}"', f'duration = "{duration}"', "seed = 1",
        "[tcp]", 'mss = "1460B"', "initial_window = 10", 'min_rto = "200ms"', "delayed_ack = false",
        'rcv_buf = "4MB"', 'snd_buf = "4MB"', 'header = "54B"',
        "[topology]", 'kind = "dumbbell"', f"hosts = {n}", 'rate = "100Mbps"', 'delay = "1ms"', 'queue = "1000pkt"',
        "[topology.tier.bottleneck]", f'rate = "{10 * n}Mbps"', 'delay = "20ms"', f'queue = "{10 * n}pkt"',
    ]
    for i in range(n):
        lines += ["[[flow]]", f'from = "h{i}"', f'to = "h{n + i}"']
    return "\n".join(lines) + "\n"


def count(scen: Path) -> dict:
    """Instructions (callgrind), packets delivered and events of one run."""
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(SPEED), str(scen), "1"],
                       check=True, capture_output=True, text=True)
    ir = int(re.search(r"Collected : (\d+)", r.stderr).group(1))
    out = json.loads(r.stdout)
    events = out["events_per_s"] * out["wall_s"]
    return {"instructions": ir, "packets": out["packets_delivered"], "events": events}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flows", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--duration", default="2s")
    ap.add_argument("--keep", type=Path, help="write the scenarios into this folder and keep them")
    ap.add_argument("files", nargs="*", type=Path, help="more scenarios to count")
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "mpsim-core", "--example", "speed"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        cases = []
        for n in args.flows:
            p = folder / f"dumbbell_{n}.toml"
            p.write_text(dumbbell(n, args.duration))
            cases.append((f"dumbbell, {n} flows", p))
        cases += [(f.stem, f) for f in args.files]
        print("| scenario | packets | events / packet | instructions / packet | relative to the first |")
        print("|---|---:|---:|---:|---:|")
        base = None
        for label, p in cases:
            c = count(p)
            per = c["instructions"] / c["packets"]
            base = base or per
            print(f"| {label} | {c['packets']:,} | {c['events'] / c['packets']:.2f} | {per:,.0f} | {per / base:.3f} |", flush=True)


if __name__ == "__main__":
    main()
