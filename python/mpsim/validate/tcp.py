"""Validation of the single-path TCP model against formulas nobody on this project wrote.

Three checks, each on a scenario in ``scenarios/validation``:

* ``tcp_loss``: one TCP over a link with random loss p, RTT 20 or 100 ms, capacity far above
  the formula's rate, one ACK per segment. Goodput must be within ±20% of the Padhye et al.
  formula (ALGORITHMS.md §11) at every point, with p measured as Padhye et al. did: loss
  indications (fast retransmits and timeout series) per packet sent. The formula with the
  configured drop rate, and Mathis et al., are reported beside it.
* ``lossfree``: a loss-free bottleneck whose queue holds one bandwidth-delay product; one TCP
  must reach 95% of the rate (less header overhead).
* ``fairness``: five TCPs with equal RTTs on one bottleneck; Jain's index above 0.95.

Run ``python -m mpsim.validate.tcp --out docs/reports/validation.md`` (or ``make validate``) to produce
the report; ``tests/test_validate_tcp.py`` runs the same checks with fewer seeds.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from .. import api
from ..progress import ProgressArg
from ..shipped import scenarios_dir

SCENARIOS = scenarios_dir() / "validation"

LOSS_RATES = ["0.1%", "0.5%", "1%", "2%"]
#: one-way delays giving RTTs of 20 and 100 ms
DELAYS = {"10ms": 20, "50ms": 100}
PADHYE_TOLERANCE = 0.20
LOSSFREE_TARGET = 0.95
JAIN_TARGET = 0.95


def mathis_bps(p: float, rtt_s: float, mss: int = 1460, b: int = 1) -> float:
    """Mathis et al. (1997): MSS/RTT · sqrt(3/(2b)) / sqrt(p), in bit/s."""
    return mss * 8 / rtt_s * math.sqrt(3 / (2 * b)) / math.sqrt(p)


def padhye_bps(p: float, rtt_s: float, t0_s: float, mss: int = 1460, b: int = 1, wmax: float = math.inf) -> float:
    """Padhye et al. (1998), full approximation, in bit/s.

    B(p) = min(Wmax/RTT, 1 / (RTT·sqrt(2bp/3) + T0·min(1, 3·sqrt(3bp/8))·p·(1 + 32p²))) packets/s.
    """
    denom = rtt_s * math.sqrt(2 * b * p / 3) + t0_s * min(1.0, 3 * math.sqrt(3 * b * p / 8)) * p * (1 + 32 * p * p)
    pkts = min(wmax / rtt_s, 1.0 / denom)
    return pkts * mss * 8


def _pct(s: str) -> float:
    return float(s.rstrip("%")) / 100


def tcp_loss_grid(seeds: int = 5, duration: str = "600s", processes: int | None = None, progress: ProgressArg = None,
                  rto: str | None = None) -> Any:
    """Runs the p × RTT grid and returns one row per run with the formulas beside it.

    ``progress``: as for :func:`mpsim.sweep`.

    ``rto``: the retransmission timer (``tcp.rto``: "linux", the default, or "rfc6298").
    """
    overrides: dict[str, Any] = {"duration": duration}
    if rto:
        overrides["tcp.rto"] = rto
    frame = api.sweep(
        SCENARIOS / "tcp_loss.toml",
        {"link.wire.delay": list(DELAYS), "link.wire.loss": LOSS_RATES},
        seeds,
        processes=processes,
        progress=progress,
        overrides=overrides,
    ).frame
    rows = []
    for _, r in frame.iterrows():
        p = _pct(r["link.wire.loss"])
        rtt = r["rtt_mean_ms"] / 1e3
        # T0: the mean length of the first timer of each timeout series; the timer's floor
        # (200 ms, or RFC 6298's 1 s) if the run had no timeout at all
        floor_ms = 1000.0 if rto == "rfc6298" else 200.0
        t0 = (r["first_rto_mean_ms"] if r["first_rto_mean_ms"] == r["first_rto_mean_ms"] and r["first_rto_mean_ms"] else floor_ms) / 1e3
        pad = padhye_bps(p, rtt, t0)
        mat = mathis_bps(p, rtt)
        # Padhye et al. measured p as loss indications (triple duplicate ACKs or timeout
        # series) per packet sent; uniform losses that hit one window count once
        p_ind = r["loss_indications"] / r["segments_sent"]
        pad_ind = padhye_bps(p_ind, rtt, t0)
        rows.append(
            {
                "loss": r["link.wire.loss"],
                "rtt_nominal_ms": DELAYS[r["link.wire.delay"]],
                "seed": r["seed"],
                "goodput_bps": r["goodput_bps"],
                "rtt_mean_ms": r["rtt_mean_ms"],
                "t0_ms": t0 * 1e3,
                "timeouts": r["timeouts"],
                "fast_recoveries": r["fast_recoveries"],
                "indications": r["loss_indications"],
                "p_indications": p_ind,
                "padhye_bps": pad,
                "padhye_ind_bps": pad_ind,
                "vs_padhye_ind": r["goodput_bps"] / pad_ind,
                "mathis_bps": mat,
                "vs_padhye": r["goodput_bps"] / pad,
                "vs_mathis": r["goodput_bps"] / mat,
            }
        )
    import pandas as pd

    return pd.DataFrame(rows)


def summarize_grid(runs: Any) -> Any:
    """Mean over seeds per (RTT, p), with the 95% CI of the ratio to Padhye."""
    g = runs.groupby(["rtt_nominal_ms", "loss"], sort=False)
    out = g.agg(
        seeds=("seed", "count"),
        goodput_mbps=("goodput_bps", lambda x: x.mean() / 1e6),
        rtt_ms=("rtt_mean_ms", "mean"),
        t0_ms=("t0_ms", "mean"),
        timeouts=("timeouts", "mean"),
        indications=("indications", "mean"),
        padhye_mbps=("padhye_bps", lambda x: x.mean() / 1e6),
        mathis_mbps=("mathis_bps", lambda x: x.mean() / 1e6),
        vs_padhye=("vs_padhye", "mean"),
        p_ind=("p_indications", "mean"),
        padhye_ind_mbps=("padhye_ind_bps", lambda x: x.mean() / 1e6),
        vs_padhye_ind=("vs_padhye_ind", "mean"),
        vs_padhye_ind_sd=("vs_padhye_ind", "std"),
        vs_mathis=("vs_mathis", "mean"),
    ).reset_index()
    out["vs_padhye_ind_ci95"] = [
        api.t95(n - 1) * sd / math.sqrt(n) if n > 1 else math.nan for n, sd in zip(out["seeds"], out["vs_padhye_ind_sd"])
    ]
    out["within"] = (out["vs_padhye_ind"] - 1).abs() <= PADHYE_TOLERANCE
    return out.drop(columns=["vs_padhye_ind_sd"])


def lossfree_check(seeds: int = 3) -> dict[str, float]:
    frame = api.sweep(SCENARIOS / "lossfree.toml", None, seeds, processes=1, progress=False).frame
    ceiling = 10e6 * 1460 / 1500
    gp = float(frame["goodput_bps"].min())
    return {"goodput_bps": gp, "ceiling_bps": ceiling, "fraction": gp / ceiling}


def fairness_check(seeds: int = 3) -> dict[str, float]:
    frame = api.sweep(SCENARIOS / "fairness.toml", None, seeds, processes=1, progress=False).frame
    per_run = frame.groupby("seed")["jain_index"].first()
    total = frame.groupby("seed")["goodput_bps"].sum()
    return {"jain_min": float(per_run.min()), "jain_mean": float(per_run.mean()), "total_bps_mean": float(total.mean())}


def _vs_mathis(grid: Any, rtt_ms: int, loss: str) -> float:
    row = grid[(grid["rtt_nominal_ms"] == rtt_ms) & (grid["loss"] == loss)]
    return float(row["vs_mathis"].iloc[0]) if len(row) else math.nan


def _t0_label(rto: str | None) -> str:
    return "1 s" if rto == "rfc6298" else "200 ms"


TIMERS = {
    "linux": "Linux's retransmission timer (RTO = SRTT + max(per-round mean deviation, 200 ms))",
    "rfc6298": "RFC 6298's retransmission timer (RTO = max(SRTT + 4 RTTVAR, 1 s))",
}


def report(grid: Any, lossfree: dict[str, float], fairness: dict[str, float], command: str, rto: str | None = None) -> str:
    lines = [
        "# Validation of the TCP model",
        "",
        f"Produced by `{command}`. Scenarios: `scenarios/validation/`. Formulas: ALGORITHMS.md §11.",
        "",
        "## Goodput vs the Padhye and Mathis formulas",
        "",
        "One NewReno+SACK flow, 100 Mbit/s link with uniform random loss, no queueing loss, one ACK",
        f"per segment (b = 1), {TIMERS[rto or 'linux']}, after a 10 s warm-up. `p` is the configured drop rate;",
        "`p_ind` is the measured rate of loss indications (fast retransmits plus timeout series, per",
        "packet sent), which is how Padhye et al. measured p. RTT is the mean measured sample; T0 the",
        f"mean length of the first timer of each timeout series. Target: goodput within ±{PADHYE_TOLERANCE:.0%} of",
        "Padhye(p_ind) at every point.",
        "",
        "| RTT (ms) | p | p_ind | seeds | goodput (Mbit/s) | RTT meas. (ms) | T0 (ms) | timeouts/run | Padhye(p_ind) (Mbit/s) | goodput / Padhye(p_ind) ±95% CI | goodput / Padhye(p) | goodput / Mathis(p) | within ±20% |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in grid.iterrows():
        ci = "" if math.isnan(r["vs_padhye_ind_ci95"]) else f" ± {r['vs_padhye_ind_ci95']:.3f}"
        lines.append(
            f"| {r['rtt_nominal_ms']} | {r['loss']} | {r['p_ind'] * 100:.3f}% | {r['seeds']} | {r['goodput_mbps']:.3f} | {r['rtt_ms']:.1f} | "
            f"{r['t0_ms']:.0f} | {r['timeouts']:.1f} | {r['padhye_ind_mbps']:.3f} | {r['vs_padhye_ind']:.3f}{ci} | "
            f"{r['vs_padhye']:.3f} | {r['vs_mathis']:.3f} | {'yes' if r['within'] else 'NO'} |"
        )
    lines += [
        "",
        "Reading the table:",
        "",
        f"- With the configured drop rate p instead of p_ind the ratio spans {grid['vs_padhye'].min():.2f} to "
        f"{grid['vs_padhye'].max():.2f}: several drops in one window are one loss indication, and SACK repairs",
        "  them without the timeout that Padhye's Reno model expects.",
        f"- Timeouts per run: {grid['timeouts'].mean():.1f} on average, at most {grid['timeouts'].max():.1f} (at "
        f"{grid.loc[grid['timeouts'].idxmax(), 'rtt_nominal_ms']} ms, p = {grid.loc[grid['timeouts'].idxmax(), 'loss']}). "
        "A timeout follows a loss",
        "  that leaves too few segments behind it for RACK, SACK or the tail loss probe to find it, or a",
        "  lost retransmission when no later segment is delivered; Padhye's T0 term models them.",
        "- Padhye's formula charges a timeout to a fraction min(1, 3·sqrt(3p/8)) of the loss indications (Reno",
        f"  without SACK: {min(1.0, 3 * math.sqrt(3 * 0.01 / 8)):.0%} at p = 1%); here {grid['timeouts'].sum():.1f} timeouts per run in all against "
        f"{grid['indications'].sum():.0f} loss indications. With T0 = {_t0_label(rto)} that term costs "
        f"{'little' if (rto or 'linux') == 'linux' else 'much of the formula at 20 ms RTT, so the ratio to Padhye(p_ind) climbs with p there while the goodput is the same as with the Linux timer (docs/reports/validation.md): the formula, not the flow, is off; compare the Mathis column'}.",
        f"- At 1% and RTT 20 ms mpsim gets {_vs_mathis(grid, 20, '1%'):.3f} of Mathis. Simulators of NewReno with SACK",
        "  and RFC 6675 recovery (ns-2, ns-3) land at 0.90-0.96 there; RACK and the tail loss probe",
        "  repair some losses those wait a timeout for, which puts Linux-like recovery a little higher.",
        "",
        "## Loss-free bottleneck, queue of one BDP",
        "",
        f"10 Mbit/s, 40 ms RTT, 34-packet queue: goodput {lossfree['goodput_bps'] / 1e6:.3f} Mbit/s of a",
        f"{lossfree['ceiling_bps'] / 1e6:.3f} Mbit/s ceiling (rate x 1460/1500) = {lossfree['fraction']:.4f}",
        f"(target at least {LOSSFREE_TARGET}).",
        "",
        "## Fairness",
        "",
        "Five flows, equal RTTs, 20 Mbit/s bottleneck, 100-packet queue: Jain's index minimum",
        f"{fairness['jain_min']:.4f}, mean {fairness['jain_mean']:.4f} over seeds (target above {JAIN_TARGET});",
        f"total goodput {fairness['total_bps_mean'] / 1e6:.2f} Mbit/s.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mpsim.validate.tcp", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5, help="seeds per grid point (default 5)")
    ap.add_argument("--duration", default="600s", help="simulated time per tcp_loss run (default 600s)")
    ap.add_argument("--processes", type=int, default=None, help="worker processes (default: all cores)")
    ap.add_argument("--out", type=Path, default=None, help="write the Markdown report here")
    ap.add_argument("--rto", choices=["linux", "rfc6298"], default=None, help="retransmission timer (tcp.rto; default linux)")
    args = ap.parse_args(argv)
    runs = tcp_loss_grid(args.seeds, args.duration, args.processes, progress=None, rto=args.rto)
    grid = summarize_grid(runs)
    lf = lossfree_check()
    fair = fairness_check()
    cmd = "python -m mpsim.validate.tcp" + ("" if args.seeds == 5 else f" --seeds {args.seeds}") + (
        "" if args.duration == "600s" else f" --duration {args.duration}"
    ) + (f" --rto {args.rto}" if args.rto else "")
    text = report(grid, lf, fair, cmd, args.rto)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    print(text)
    return 1 if not grid["within"].all() or lf["fraction"] < LOSSFREE_TARGET or fair["jain_min"] <= JAIN_TARGET else 0


if __name__ == "__main__":
    raise SystemExit(main())
