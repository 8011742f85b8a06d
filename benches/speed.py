#!/usr/bin/env python3
"""Core speed: delivered data packets per wall-clock second on fixed scenarios.

    python benches/speed.py [--repeats 5] [--instructions] [--out benches/results/speed.md]
    python benches/speed.py --baseline OLD_BINARY [--rounds 5] [--instructions]

With --baseline, the `speed` example built from an earlier commit (copy
target/release/examples/speed aside before changing the code) runs interleaved with the
current one, round after round, and the table gives each case's wall time as a ratio
new/old of the best round of each: noise on a shared machine hits both alike.

Builds the Rust example `speed` (release) and runs it on each scenario, best of N runs
(timings on a shared machine are noisy; the best run is the least disturbed). Targets from
the project's issues: 1.5 million packets/s on the 10-flow 100 Mbit/s dumbbell and 3.5 million
on the two-path MPTCP transfer; the C++ htsim simulator does about 1.5 and 3.4 million on
those runs on this kind of machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = [
    ("scenarios/validation/dumbbell_10x100m_loss0.toml", 1.5e6),
    ("scenarios/validation/dumbbell_10x100m_loss1.toml", 1.5e6),
    ("scenarios/validation/dumbbell_2x10m_loss1.toml", None),
    ("scenarios/mptcp/speed_2path.toml", 3.5e6),
    ("scenarios/mptcp/speed_2path_tcp.toml", None),
    # SCTP CMT over the same two paths as speed_2path
    ("scenarios/speed/sctp_cmt_2path.toml", None),
    # Multipath QUIC over the same two paths
    ("scenarios/speed/mpquic_2path.toml", None),
    ("scenarios/speed/dumbbell_100x1g.toml", None),
    # the redundant scheduler with large windows: the SACK scoreboard's per-ACK work
    ("benches/scenarios/redundant_large_windows.toml", None),
    ("benches/scenarios/redundant_one_byte_segments.toml", None),
]

#: One Multipath TCP connection over 1, 2, 4 and 8 paths: the cost per delivered packet should
#: not grow with the number of subflows (target: 8 within 1.3x of 1).
SUBFLOW_CASES = [f"scenarios/speed/mptcp_{n}path.toml" for n in (1, 2, 4, 8)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=ROOT / "benches" / "results" / "speed.md")
    ap.add_argument("--baseline", type=Path, help="an earlier build of the speed example to compare with")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds with --baseline")
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="also count instructions per delivered packet with valgrind's callgrind "
        "(independent of the machine's load; about 50 times slower than a plain run)",
    )
    ap.add_argument("--only", nargs="+", metavar="STEM", help="run only these scenarios (file names without .toml)")
    args = ap.parse_args(argv)
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "mpsim-core", "--example", "speed"], cwd=ROOT, check=True)
    binary = ROOT / "target" / "release" / "examples" / "speed"
    if args.baseline:
        return compare(args.baseline, binary, args.rounds, args.instructions, args.only)
    lines = [
        "# Core speed",
        "",
        f"Produced by `python benches/speed.py{' --only ' + ' '.join(args.only) if args.only else ''}{' --instructions' if args.instructions else ''}` (best of {args.repeats} runs, one core, {platform.machine()}).",
        "",
        "| scenario | simulated packets delivered | wall (s) | packets / wall s | events / wall s | target | flows' goodput (Mbit/s) |",
        "|---|---|---|---|---|---|---|",
    ]
    ok = True
    for scen, target in CASES + [(c, None) for c in SUBFLOW_CASES]:
        if args.only and Path(scen).stem not in args.only:
            continue
        out = subprocess.run([str(binary), scen, str(args.repeats)], cwd=ROOT, check=True, capture_output=True, text=True).stdout
        r = json.loads(out)
        good = target is None or r["packets_per_s"] >= target
        ok &= good
        tgt = "-" if target is None else f"{target / 1e6:.1f} M ({'met' if good else 'MISSED'})"
        flows = ", ".join(f"{f['flow']} {f['goodput_bps'] / 1e6:.2f}" for f in r["flows"])
        lines.append(
            f"| {Path(scen).stem} | {r['packets_delivered']:,} | {r['wall_s']:.3f} | {r['packets_per_s']:,.0f} | {r['events_per_s']:,.0f} | {tgt} | {flows} |"
        )
    if args.instructions:
        lines += [
            "",
            "Instructions per delivered packet (valgrind's callgrind; independent of the machine's load):",
            "",
            "| scenario | instructions / packet | relative to 1 subflow |",
            "|---|---|---|",
        ]
        base = None
        for scen in [c for c, _ in CASES] + SUBFLOW_CASES:
            if args.only and Path(scen).stem not in args.only:
                continue
            ir, pk = instructions(binary, scen)
            per = ir / pk
            rel = ""
            if scen in SUBFLOW_CASES:
                base = base or per
                rel = f"{per / base:.2f}"
            lines.append(f"| {Path(scen).stem} | {per:,.0f} | {rel} |")
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0 if ok else 1


def instructions(binary: Path, scen: str) -> tuple[int, int]:
    """Instructions executed by one run under callgrind, and packets delivered."""
    r = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(binary), scen, "1"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    )
    ir = int(re.search(r"Collected : (\d+)", r.stderr).group(1))
    return ir, json.loads(r.stdout)["packets_delivered"]


def compare(old: Path, new: Path, rounds: int, count_instructions: bool = False, only: list[str] | None = None) -> int:
    """Wall time new/old per case, interleaving the two binaries (best round of each)."""
    # --only may also name the subflow cases (scenarios/speed/mptcp_*path)
    every = CASES + [(scen, None) for scen in SUBFLOW_CASES]
    cases = [(scen, t) for scen, t in every if Path(scen).stem in only] if only else CASES
    best: dict[tuple[str, str], float] = {}
    same = True
    for _ in range(rounds):
        for scen, _ in cases:
            outs = {}
            for tag, binary in (("old", old), ("new", new)):
                r = json.loads(subprocess.run([str(binary), scen, "1"], cwd=ROOT, check=True, capture_output=True, text=True).stdout)
                key = (scen, tag)
                best[key] = min(best.get(key, float("inf")), r["wall_s"])
                outs[tag] = (r["packets_delivered"], r["flows"])
            same &= outs["old"] == outs["new"]
    print("| scenario | old wall (s) | new wall (s) | new / old |")
    print("|---|---|---|---|")
    for scen, _ in cases:
        o, n = best[(scen, "old")], best[(scen, "new")]
        print(f"| {Path(scen).stem} | {o:.3f} | {n:.3f} | {n / o:.3f} |")
    print(f"\nresults identical: {same} (best of {rounds} interleaved rounds)")
    if count_instructions:
        print("\n| scenario | old instructions / packet | new instructions / packet | new / old |")
        print("|---|---|---|---|")
        for scen, _ in cases:
            (io, po), (inew, pn) = instructions(old, scen), instructions(new, scen)
            print(f"| {Path(scen).stem} | {io / po:,.0f} | {inew / pn:,.0f} | {inew / pn / (io / po):.4f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
