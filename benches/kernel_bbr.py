#!/usr/bin/env python3
"""BBR's model over time in the Linux kernel beside mpsim's: the bandwidth and min-RTT
estimates and the gains, per subflow, for the BBR kernel scenarios.

    sudo .venv/bin/python benches/kernel_bbr.py [--repeat 3] [--ss-interval 0.05]
        [--only bbr_10m_deep] [--figures docs/figures] [--csv DIR] [--from-csv DIR]

Each scenario runs through `mpsim kernel` (`mpsim.kernel.compare`) with the kernel's sockets
sampled by `ss` every SS_INTERVAL s (`bbr:(bw:...,mrtt:...,pacing_gain:...,cwnd_gain:...)`,
the kernel's `tcp_bbr_info`); mpsim runs each repeat as `mpsim kernel` configures it
(`mpsim_overrides` from that kernel run) with its subflow series sampled at the same
interval (`bbr_bw_bps`, `bbr_min_rtt_ms`, `bbr_pacing_gain`, `bbr_cwnd_gain`). Printed: a
Markdown table per scenario (per path, median and range over the repeats: the end of STARTUP,
the bandwidth and min-RTT estimates after the warm-up, the time shares of the 5/4 and 3/4
gain phases, the PROBE_RTT episodes) and the estimates per second of the first repeat; one
figure per scenario (bandwidth and min RTT over time, kernel and mpsim, every repeat).

Samples before the first bandwidth sample are left out (the kernel shows both gains as 1
until its first ACK). STARTUP ends at the first sample whose pacing gain is below 2 (DRAIN or
later); PROBE_RTT is
the window gain of 1 (Linux's `bbr_update_gains` sets both gains to 1 there, and nowhere
else the window gain).
"""

from __future__ import annotations

import argparse
import statistics as st
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCEN = ROOT / "scenarios" / "kernel"
SCENARIOS = ("bbr_10m_deep", "bbr_2x10m")


def mpsim_series(path: Path, res: Any, interval: float) -> Any:
    """mpsim's subflow series of every repeat of *res*, configured as `mpsim kernel` did."""
    import pandas as pd

    from mpsim.api import run
    from mpsim.kernel import testbed as K
    from mpsim.scenario import load

    d, origin = load(path)
    desc = K.describe(d, origin)
    out = []
    for k, g in res.flows.groupby("repeat"):
        ov = K.mpsim_overrides(desc, dict(zip(g["flow"], g["kernel_max_window_bytes"])),
                               {r["flow"]: K.flow_start_s(r) for r in g.to_dict("records")})
        ov["metrics.interval"] = f"{round(interval * 1e3)}ms"
        r = run(d, overrides={**ov, "seed": int(g["seed"].iloc[0])}, progress=False)
        out.append(r.subflow_series.assign(repeat=k))
    return pd.concat(out, ignore_index=True)


def episodes(t: list[float], flag: list[bool], step: float) -> list[tuple[float, float]]:
    """(start, end) of the runs of consecutive samples with *flag* set."""
    out: list[tuple[float, float]] = []
    for x, f in zip(t, flag):
        if f:
            if out and x - out[-1][1] <= 1.5 * step:
                out[-1] = (out[-1][0], x)
            else:
                out.append((x, x))
    return out


def phases(df: Any, warm: float, step: float) -> dict[str, Any]:
    """What one subflow's samples say of its BBR: *df* has time_s, bw (Mbit/s), mrtt (ms),
    pacing_gain and cwnd_gain."""
    df = df[df["bw"] > 0].sort_values("time_s")  # from the first bandwidth sample on
    t, pg, cg = df["time_s"].tolist(), df["pacing_gain"].tolist(), df["cwnd_gain"].tolist()
    exit_s = next((x for x, g in zip(t, pg) if g == g and g < 2), float("nan"))
    after = df[df["time_s"] >= warm]
    probe = after[after["cwnd_gain"] == 2]
    n = max(len(probe), 1)
    prtt = episodes(t, [g == 1 for g in cg], step)
    return {"startup_exit_s": exit_s, "bw_mbps": after["bw"].median(), "mrtt_ms": after["mrtt"].median(),
            "mrtt_max_ms": after["mrtt"].max(), "up": (probe["pacing_gain"] == 1.25).sum() / n,
            "down": (probe["pacing_gain"] == 0.75).sum() / n, "probe_rtt": [(a, b - a + step) for a, b in prtt]}


def tables(name: str, kern: Any, mps: Any, warm: float, step: float) -> list[str]:
    stats: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for side, df in (("kernel", kern), ("mpsim", mps)):
        for (_, path), g in df.groupby(["repeat", "path"]):
            stats.setdefault((path, side), []).append(phases(g, warm, step))

    def cell(path: str, side: str, key: str, fmt: str) -> str:
        v = [s[key] for s in stats.get((path, side), [])]
        if not v:
            return "-"
        return f"{st.median(v):{fmt}} ({min(v):{fmt}}-{max(v):{fmt}})"

    lines = [f"### {name}", "",
             "| path | side | STARTUP ends (s) | bw estimate (Mbit/s) | min RTT estimate, median / max (ms) | time at 5/4 | time at 3/4 | PROBE_RTT start (s) and length, per repeat |",
             "|---|---|---|---|---|---|---|---|"]
    for path in sorted({p for p, _ in stats}):
        for side in ("kernel", "mpsim"):
            ss = stats.get((path, side), [])
            lines.append(f"| {path} | {side} | {cell(path, side, 'startup_exit_s', '.2f')} | {cell(path, side, 'bw_mbps', '.2f')} | "
                         f"{cell(path, side, 'mrtt_ms', '.1f')} / {cell(path, side, 'mrtt_max_ms', '.1f')} | "
                         f"{cell(path, side, 'up', '.1%')} | {cell(path, side, 'down', '.1%')} | "
                         f"{'; '.join(', '.join(f'{a:.2f} ({d * 1e3:.0f} ms)' for a, d in s['probe_rtt']) or '-' for s in ss)} |")
    lines += ["", "Per second, first repeat (median of the samples within the second): bandwidth estimate (Mbit/s) "
              "and min RTT estimate (ms), kernel / mpsim", ""]
    paths = sorted(kern["path"].unique())
    lines.append("| s | " + " | ".join(f"{p} bw | {p} min RTT" for p in paths) + " |")
    lines.append("|---|" + "---|---|" * len(paths))
    k0, m0 = kern[kern["repeat"] == 0], mps[mps["repeat"] == 0]
    for sec in range(int(max(kern["time_s"].max(), 1))):
        row = [str(sec)]
        for p in paths:
            ks = k0[(k0["path"] == p) & (k0["time_s"] >= sec) & (k0["time_s"] < sec + 1)]
            ms = m0[(m0["path"] == p) & (m0["time_s"] > sec) & (m0["time_s"] <= sec + 1)]
            row += [f"{ks['bw'].median():.2f} / {ms['bw'].median():.2f}", f"{ks['mrtt'].median():.1f} / {ms['mrtt'].median():.1f}"]
        lines.append("| " + " | ".join(row) + " |")
    return lines + [""]


def figure(name: str, kern: Any, mps: Any, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = sorted(kern["path"].unique())
    fig, axes = plt.subplots(2, len(paths), figsize=(6 * len(paths), 6), sharex=True, squeeze=False)
    for j, p in enumerate(paths):
        for side, df, color in (("kernel", kern, "tab:blue"), ("mpsim", mps, "tab:orange")):
            for rep, g in df[df["path"] == p].groupby("repeat"):
                g = g.sort_values("time_s")
                label = side if rep == 0 else None
                axes[0][j].plot(g["time_s"], g["bw"], color=color, lw=0.8, alpha=0.8, label=label)
                axes[1][j].plot(g["time_s"], g["mrtt"], color=color, lw=0.8, alpha=0.8, label=label)
        axes[0][j].set_title(f"{name}, path {p}")
        axes[0][j].set_ylabel("BBR bandwidth estimate (Mbit/s)")
        axes[1][j].set_ylabel("BBR min RTT estimate (ms)")
        axes[1][j].set_xlabel("time (s)")
        axes[0][j].legend()
        axes[0][j].set_ylim(bottom=0)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ss-interval", type=float, default=0.05)
    ap.add_argument("--only", nargs="*", choices=SCENARIOS)
    ap.add_argument("--figures", type=Path, default=ROOT / "docs" / "figures")
    ap.add_argument("--csv", type=Path, help="also write both sides' samples here")
    ap.add_argument("--from-csv", type=Path, help="no runs: tables and figures from the samples --csv wrote there")
    args = ap.parse_args()
    import pandas as pd

    from mpsim.kernel import compare

    for name in args.only or SCENARIOS:
        path = SCEN / f"{name}.toml"
        if args.from_csv:
            kern, mps = (pd.read_csv(args.from_csv / f"{name}_{side}.csv") for side in ("kernel", "mpsim"))
            print("\n".join(tables(name, kern, mps, 2.0, args.ss_interval)))
            figure(name, kern, mps, args.figures / f"bbr_model_{name}.png")
            continue
        print(f"{name}: mpsim kernel, {args.repeat} repeats ...", file=sys.stderr, flush=True)
        res = compare(path, repeat=args.repeat, ss_interval=args.ss_interval, progress=True)
        kern = res.subflow_series
        kern = kern[(kern["cc"] == "bbr") & kern["bbr_bw_bps"].notna()].rename(
            columns={"bbr_min_rtt_ms": "mrtt", "bbr_pacing_gain": "pacing_gain", "bbr_cwnd_gain": "cwnd_gain"})
        kern = kern.assign(bw=kern["bbr_bw_bps"] / 1e6)
        mps = mpsim_series(path, res, args.ss_interval).rename(
            columns={"bbr_min_rtt_ms": "mrtt", "bbr_pacing_gain": "pacing_gain", "bbr_cwnd_gain": "cwnd_gain"})
        mps = mps.assign(bw=mps["bbr_bw_bps"] / 1e6)
        if args.csv:
            args.csv.mkdir(parents=True, exist_ok=True)
            kern.to_csv(args.csv / f"{name}_kernel.csv", index=False)
            mps.to_csv(args.csv / f"{name}_mpsim.csv", index=False)
        warm = 2.0
        print("\n".join(tables(name, kern, mps, warm, args.ss_interval)))
        print(res.paths[["repeat", "path", "kernel_goodput_bps", "mpsim_goodput_bps", "kernel_rtt_mean_ms", "mpsim_rtt_mean_ms"]]
              .to_string(index=False), file=sys.stderr)
        figure(name, kern, mps, args.figures / f"bbr_model_{name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
