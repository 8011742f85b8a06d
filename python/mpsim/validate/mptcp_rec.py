"""MPTCP-rec checks, as a report: the receiver's rate estimate on one lossy path against
mpsim's NewReno (TEAR's TCP-friendliness claim), and one MPTCP-rec connection against one TCP
on a shared bottleneck beside LIA.

Run ``python -m mpsim.validate.mptcp_rec --out docs/reports/mptcp_rec.md`` (part of ``make validate``);
the assertions live in ``tests/test_mptcp_rec.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .. import api
from ..reproduce.common import fmt_ci, md_table, mean_ci
from ..shipped import scenarios_dir

LOSSES = ("0.5%", "1%", "2%")
# one-way delays of the two links: round trips of 20 and 100 ms
DELAYS = {"20ms": "10ms", "100ms": "50ms"}
TOLERANCE = 0.20


def _flow(frame: Any, name: str) -> Any:
    return frame[frame["flow"] == name]


def soundness(seeds: int, processes: int | None) -> tuple[list[str], list[dict[str, Any]]]:
    """The one-path table: per loss and RTT, NewReno's goodput, the advertised rate averaged
    over the run and MPTCP-rec's goodput, with their ratios to NewReno."""
    grid = {"link.*.loss": list(LOSSES), "link.*.delay": list(DELAYS.values())}
    f = api.sweep(scenarios_dir() / "mptcp_rec" / "one_path.toml", grid, seeds, processes=processes, progress=False).frame
    rows, records = [], []
    for rtt, delay in DELAYS.items():
        for loss in LOSSES:
            g = f[(f["link.*.loss"] == loss) & (f["link.*.delay"] == delay)]
            reno = _flow(g, "newreno").set_index("seed")["goodput_bps"]
            rec = _flow(g, "rec").set_index("seed")
            dsr, good = rec["subflow0_dsr_mean_bps"], rec["goodput_bps"]
            r_dsr, r_good = mean_ci(dsr / reno), mean_ci(good / reno)
            ok = abs(r_dsr[0] - 1) <= TOLERANCE and abs(r_good[0] - 1) <= TOLERANCE
            records.append({"loss": loss, "rtt": rtt, "dsr_ratio": r_dsr[0], "goodput_ratio": r_good[0], "ok": ok})
            rows.append(
                [loss, rtt, fmt_ci(*mean_ci(reno)), fmt_ci(*mean_ci(dsr)), fmt_ci(*mean_ci(good)), fmt_ci(*r_dsr, scale=1), fmt_ci(*r_good, scale=1), "yes" if ok else "**no**"]
            )
    out = [
        "## The receiver's estimate on one path",
        "",
        "`scenarios/mptcp_rec/one_path.toml`: two identical, separate 100 Mbit/s paths with deep queues and",
        "random loss, NewReno on one, MPTCP-rec on one path of its own on the other; 120 s, the first 10 s",
        f"left out; {seeds} seeds, mean ± 95% CI, Mbit/s. The advertised rate is the DSR the receiver sends",
        "back, averaged over time. Target: both within 20% of NewReno's goodput.",
        "",
    ]
    out += md_table(["loss", "RTT", "NewReno goodput", "advertised DSR", "MPTCP-rec goodput", "DSR / NewReno", "MPTCP-rec / NewReno", "within 20%"], rows)
    return out, records


def fairness(seeds: int, processes: int | None) -> list[str]:
    sc = scenarios_dir() / "mptcp" / "shared_bottleneck.toml"
    lia = api.sweep(sc, {"flow.mptcp.cc": ["lia"]}, seeds, processes=processes, progress=False).frame
    rec = api.sweep(sc, {"flow.mptcp.scheduler": ["mptcp_rec"], "flow.mptcp.cc": ["receiver_rate"]}, seeds, processes=processes, progress=False).frame
    rows = []
    for label, g in (("LIA + lowest_rtt (RFC 6356)", lia), ("MPTCP-rec (receiver_rate)", rec)):
        mp = _flow(g, "mptcp").set_index("seed")["goodput_bps"]
        tcp = _flow(g, "tcp").set_index("seed")["goodput_bps"]
        rows.append([label, fmt_ci(*mean_ci(mp)), fmt_ci(*mean_ci(tcp)), fmt_ci(*mean_ci(mp / tcp), scale=1)])
    out = [
        "",
        "## Fairness: one MPTCP-rec connection and one TCP on a shared bottleneck",
        "",
        "`scenarios/mptcp/shared_bottleneck.toml` (two subflows through one 10 Mbit/s, 20 ms bottleneck beside",
        f"one NewReno TCP); {seeds} seeds, mean ± 95% CI, Mbit/s. RFC 6356's goal is a ratio near 1.",
        "",
    ]
    out += md_table(["connection", "multipath goodput", "TCP goodput", "multipath / TCP"], rows)
    out += [
        "",
        "MPTCP-rec's receiver emulates TCP on each path separately and seed 000 describes no coupling",
        "between the paths' rates, so two subflows through one bottleneck behave like two TCP flows",
        "(a ratio near 2, as uncoupled Reno subflows), not like one.",
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mpsim.validate.mptcp_rec", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--processes", type=int, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    cmd = "python -m mpsim.validate.mptcp_rec" + ("" if args.seeds == 5 else f" --seeds {args.seeds}")
    lines = ["# MPTCP-rec: the receiver's rate estimate and fairness", "", f"Produced by `{cmd}`.", ""]
    table, _ = soundness(args.seeds, args.processes)
    lines += table
    lines += fairness(args.seeds, args.processes)
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
