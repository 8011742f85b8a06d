"""The kernel-beside-mpsim table of docs/kernel.md: every scenario of scenarios/kernel/ with
Reno and with CUBIC (BBR's scenarios with BBR, the one without SACK with Reno), several repeats
each, plus the link emulator's accuracy on this machine.

    python -m mpsim.kernel.report --out docs/reports/kernel-results.md [--repeat 3]
    python -m mpsim.kernel.report --render-only [--add-file-runs]   # from the saved data
    python -m mpsim.kernel.report --update mptcp_rtt_20_50,...        # those rows only
    python -m mpsim.kernel.report --rematch                           # mpsim's side again, no root

(`make kernel-table`; needs root, /dev/net/tun and Multipath TCP, like `mpsim kernel`.)
Writes the Markdown tables, a CSV of every run beside them (kernel-results/runs.csv,
paths.csv) and one goodput-over-time figure per scenario and controller.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import pandas as pd

from .result import STALL_SHARE, STALL_SILENCE_S, flag_stalls
from .testbed import accuracy, compare

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ["tcp_10m", "tcp_10m_loss1", "mptcp_2x10m", "mptcp_2x10m_loss1", "mptcp_asym",
             "mptcp_rcvbuf_small", "mptcp_rcvbuf_large", "mptcp_tcp_shared", "tcp_long_deep", "tcp_long_loss1",
             "tcp_long_nosack", "mptcp_rcvbuf_256k", "bbr_10m_deep", "bbr_10m_loss1", "bbr_2x10m",
             "mptcp_rtt_20_200", "mptcp_rtt_20_50"]
LOSSY = {"tcp_10m_loss1", "mptcp_2x10m_loss1", "tcp_long_loss1", "bbr_10m_loss1"}
# The controllers each scenario runs with (Reno and CUBIC unless named here).
CONTROLLERS = {"tcp_long_nosack": ("reno",), "bbr_10m_deep": ("bbr",), "bbr_10m_loss1": ("bbr",), "bbr_2x10m": ("bbr",),
               "mptcp_rtt_20_200": ("cubic",), "mptcp_rtt_20_50": ("cubic",)}


def controllers(scenario: str) -> tuple[str, ...]:
    """The controllers a scenario of the table runs with."""
    return CONTROLLERS.get(scenario, ("reno", "cubic"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mpsim.kernel.report", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="docs/reports/kernel-results.md")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--render-only", action="store_true", help="rewrite the Markdown from the saved data, run nothing")
    ap.add_argument("--add-file-runs", action="store_true",
                    help="with --render-only: first run mpsim as each scenario file stands (same controller and seeds) "
                         "where the saved data lacks it, and save that (mpsim alone, no root)")
    ap.add_argument("--update", metavar="SCENARIOS",
                    help="measure only these scenarios (comma-separated) and put their rows in place of the saved "
                         "ones (or add them), keeping every other row and the emulator's accuracy as saved")
    ap.add_argument("--rematch", action="store_true",
                    help="run every row's matched mpsim side again from the saved kernel runs (same seeds and "
                         "settings taken from the kernel), for a model that changed since the table was measured; "
                         "the kernel side and the figures stay as measured (mpsim alone, no root)")
    a = ap.parse_args(argv)
    out = Path(a.out)
    data = out.with_suffix("")
    if a.rematch and (a.update or a.render_only):
        ap.error("--rematch goes alone: it re-runs mpsim's side of the saved table and writes it")
    if a.rematch and not (data / "emulator.json").exists():
        ap.error(f"--rematch needs a saved table in {data}/")
    if a.update:
        unknown = [n for n in a.update.split(",") if n not in SCENARIOS]
        if unknown:
            ap.error(f"--update: not a scenario of the table: {', '.join(unknown)} (known: {', '.join(SCENARIOS)})")
        if not (data / "emulator.json").exists():
            ap.error(f"--update needs a saved table in {data}/ (make one with the whole run first)")
    data.mkdir(parents=True, exist_ok=True)
    if a.rematch:
        saved = json.loads((data / "emulator.json").read_text())
        fl, pa, runs = rematch(pd.read_csv(data / "runs.csv"), pd.read_csv(data / "paths.csv"), saved)
        saved = {**saved, "runs": runs, "rematched": time.strftime("%Y-%m-%d", time.gmtime())}
        fl.to_csv(data / "runs.csv", index=False)
        pa.to_csv(data / "paths.csv", index=False)
        (data / "emulator.json").write_text(json.dumps(saved, indent=1, default=str))
    if a.render_only or a.rematch:
        saved = json.loads((data / "emulator.json").read_text())
        fl, pa = pd.read_csv(data / "runs.csv"), pd.read_csv(data / "paths.csv")
        if a.add_file_runs:
            fl, pa = add_file_runs(fl, pa)
            fl.to_csv(data / "runs.csv", index=False)
            pa.to_csv(data / "paths.csv", index=False)
        out.write_text(render(fl, pa, saved["runs"], saved["accuracy"], saved.get("info", {}),
                              int(fl.repeat.max()) + 1, saved.get("took_s", float("nan")), saved.get("changed"),
                              saved.get("updated"), saved.get("rematched")))
        print(f"wrote {out}")
        return 0
    started = time.time()
    acc = [] if a.update else [accuracy("10Mbps", "20ms"), accuracy("10Mbps", "20ms"), accuracy("50Mbps", "5ms")]
    flows, paths, runs = [], [], []
    changed: dict[str, list[dict]] = {}
    info: dict = {}
    for name in (a.update or a.scenarios).split(","):
        for cc in controllers(name):
            res = compare(ROOT / "scenarios" / "kernel" / f"{name}.toml", repeat=a.repeat,
                          overrides={"flow.*.cc": cc}, progress=True)
            info = res.info
            changed[f"{name}/{cc}"] = res.changed
            res.plot(data / f"{name}_{cc}.png")
            for df, acc_ in ((res.flows, flows), (res.paths, paths)):
                df = df.copy()
                df.insert(0, "cc", cc)
                df.insert(0, "scenario", name)
                acc_.append(df)
            for r in res.runs:
                runs.append({"scenario": name, "cc": cc, **{k: v for k, v in r.items() if k != "emulator_paths"},
                             "paths": r["emulator_paths"]})
    fl = pd.concat(flows, ignore_index=True)
    pa = pd.concat(paths, ignore_index=True)
    took = time.time() - started
    saved = {"accuracy": acc, "runs": runs, "info": info, "took_s": took, "changed": changed}
    if a.update:
        old = json.loads((data / "emulator.json").read_text())
        fl, pa, saved = update_rows(pd.read_csv(data / "runs.csv"), pd.read_csv(data / "paths.csv"), old, fl, pa, saved)
    fl.to_csv(data / "runs.csv", index=False)
    pa.to_csv(data / "paths.csv", index=False)
    (data / "emulator.json").write_text(json.dumps(saved, indent=1, default=str))
    out.write_text(render(fl, pa, saved["runs"], saved["accuracy"], saved["info"], a.repeat, saved["took_s"],
                          saved["changed"], saved.get("updated"), saved.get("rematched")))
    print(f"wrote {out} and {data}/")
    return 0


def update_rows(fl: pd.DataFrame, pa: pd.DataFrame, saved: dict, new_fl: pd.DataFrame, new_pa: pd.DataFrame,
                new: dict) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """The saved table with the scenarios measured in ``new_fl``, ``new_pa`` and ``new`` (runs,
    settings changed, the time taken) in place of their saved rows, or added; the rows in the
    order of :data:`SCENARIOS`. The emulator's accuracy and the whole table's time stay as
    saved; ``updated`` names each scenario measured this way, with the date."""
    names = set(new_fl.scenario)
    order = {n: i for i, n in enumerate(SCENARIOS)}

    def merged(old: pd.DataFrame, add: pd.DataFrame) -> pd.DataFrame:
        df = pd.concat([old[~old.scenario.isin(names)], add], ignore_index=True)
        return df.sort_values("scenario", key=lambda c: c.map(order), kind="stable", ignore_index=True)

    runs = sorted([r for r in saved["runs"] if r["scenario"] not in names] + new["runs"],
                  key=lambda r: order[r["scenario"]])
    changed = {k: v for k, v in (saved.get("changed") or {}).items() if k.split("/")[0] not in names}
    changed = dict(sorted({**changed, **new["changed"]}.items(), key=lambda kv: order[kv[0].split("/")[0]]))
    day = time.strftime("%Y-%m-%d", time.gmtime())
    updated = {**{k: v for k, v in (saved.get("updated") or {}).items() if k not in names},
               **{n: {"date": day, "took_s": new["took_s"]} for n in sorted(names, key=order.__getitem__)}}
    return merged(fl, new_fl), merged(pa, new_pa), {**saved, "runs": runs, "changed": changed, "updated": updated}


def matched_overrides(changed: list[dict], repeat: int) -> dict:
    """The settings one repeat's matched mpsim run took from its kernel run, as saved (the
    values are saved as text; a number, `tcp.window_scale`, goes back as one)."""
    ov = {}
    for c in changed:
        v = c["used"][repeat] if len(c["used"]) > repeat else c["used"][0]
        ov[c["setting"]] = int(v) if isinstance(v, str) and v.isdigit() else v
    return ov


def rematch(fl: pd.DataFrame, pa: pd.DataFrame, saved: dict) -> tuple[pd.DataFrame, pd.DataFrame, list[dict]]:
    """The saved table with every mpsim_* figure of the matched runs measured again: each
    repeat of each row run as ``compare`` ran it (the row's controller, the repeat's seed,
    the settings taken from that kernel run). The kernel's figures are kept."""
    from ..scenario import load
    from .testbed import _run_mpsim

    fl, pa = fl.copy(), pa.copy()
    runs = [dict(r) for r in saved["runs"]]
    for (sc, cc, rep), g in fl.groupby(["scenario", "cc", "repeat"], sort=False):
        d, _origin = load(ROOT / "scenarios" / "kernel" / f"{sc}.toml")
        ov = {"flow.*.cc": cc, **matched_overrides((saved.get("changed") or {}).get(f"{sc}/{cc}", []), int(rep))}
        m = _run_mpsim(d, ov, int(g.seed.iloc[0]))
        sel = (fl.scenario == sc) & (fl.cc == cc) & (fl.repeat == rep)
        for r in m["flows"]:
            i = sel & (fl.flow == r["flow"])
            fl.loc[i, ["mpsim_goodput_bps", "mpsim_throughput_bps", "mpsim_retransmits", "mpsim_timeouts"]] = (
                r["goodput_bps"], r["throughput_bps"], r["retransmits"], r["timeouts"])
            fl.loc[i, "ratio_mpsim_kernel"] = r["goodput_bps"] / fl.loc[i, "kernel_goodput_bps"]
        selp = (pa.scenario == sc) & (pa.cc == cc) & (pa.repeat == rep)
        for r in m["paths"]:
            i = selp & (pa.flow == r["flow"]) & (pa.path == r["path"])
            pa.loc[i, ["mpsim_goodput_bps", "mpsim_rtt_mean_ms", "mpsim_retransmits", "mpsim_timeouts"]] = (
                r["goodput_bps"], r["rtt_mean_ms"], r["retransmits"], r["timeouts"])
            pa.loc[i, "ratio_mpsim_kernel"] = r["goodput_bps"] / pa.loc[i, "kernel_goodput_bps"]
        for r in runs:
            if (r["scenario"], r["cc"], r["repeat"]) == (sc, cc, rep) and "aqm" in r:
                r["aqm"] = {**r["aqm"], "mpsim": m["aqm"]}
    return fl, pa, runs


def add_file_runs(fl: pd.DataFrame, pa: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fills ``mpsim_file_goodput_bps`` (mpsim as the scenario file stands, with the row's
    controller and seed: what ``compare`` records beside the matched run) where it is missing."""
    from ..scenario import load
    from .testbed import _run_mpsim

    fl, pa = fl.copy(), pa.copy()
    for col, df in (("mpsim_file_goodput_bps", fl), ("mpsim_file_goodput_bps", pa)):
        if col not in df:
            df.insert(df.columns.get_loc("mpsim_goodput_bps") + 1, col, float("nan"))
    for (sc, cc, seed), _ in fl[fl.mpsim_file_goodput_bps.isna()].groupby(["scenario", "cc", "seed"], sort=False):
        d, _origin = load(ROOT / "scenarios" / "kernel" / f"{sc}.toml")
        m = _run_mpsim(d, {"flow.*.cc": cc}, int(seed), series=False)
        for r in m["flows"]:
            fl.loc[(fl.scenario == sc) & (fl.cc == cc) & (fl.seed == seed) & (fl.flow == r["flow"]), "mpsim_file_goodput_bps"] = r["goodput_bps"]
        for r in m["paths"]:
            sel = (pa.scenario == sc) & (pa.cc == cc) & (pa.seed == seed) & (pa.flow == r["flow"]) & (pa.path == r["path"])
            pa.loc[sel, "mpsim_file_goodput_bps"] = r["goodput_bps"]
    return fl, pa


def _mbps(x: float | None) -> str:
    return "n/a" if x is None or x != x else f"{x / 1e6:.2f}"


def _median(g: pd.DataFrame, col: str) -> float | None:
    """The median of a column, None where the saved data predates it."""
    return float(g[col].median()) if col in g and g[col].notna().any() else None


def _count(g: pd.DataFrame, col: str) -> str:
    v = _median(g, col)
    return "n/a" if v is None else f"{v:.0f}"


def render(fl: pd.DataFrame, pa: pd.DataFrame, runs: list[dict], acc: list[dict], info: dict, repeat: int,
           took: float, changed: dict[str, list[dict]] | None = None, updated: dict[str, dict] | None = None,
           rematched: str | None = None) -> str:
    lines = [
        "# Linux kernel beside mpsim: the measured table",
        "",
        "Generated by `make kernel-table` (`python -m mpsim.kernel.report`); do not edit by hand.",
        "What the numbers mean and why they differ: [kernel.md](../kernel.md).",
        "",
        f"Machine: kernel {info.get('kernel')}, {os.cpu_count()} CPUs, {platform.machine()}; MPTCP scheduler "
        f"'{info.get('mptcp_scheduler')}', path manager '{info.get('mptcp_path_manager')}'. "
        f"{repeat} kernel repeats per row (seeds 1..{repeat}; mpsim with the same seeds); goodput over "
        f"[warmup, duration] of each scenario; took {took / 60:.0f} min. Every run: `kernel-results/runs.csv`, "
        "`paths.csv`; one goodput figure per row in `kernel-results/`."
        + ("" if not updated else " Measured after the rest (`--update`), on the same machine: "
           + ", ".join(f"{n} ({u['date']}, {u['took_s'] / 60:.0f} min)" for n, u in updated.items()) + ".")
        + ("" if not rematched else f" mpsim's matched side run again on {rematched} from the saved kernel runs "
           "(`--rematch`, after a change to the model); the kernel side and the figures are as measured."),
        "",
        "## Aggregate goodput",
        "",
        "Kernel: median of the repeats (min-max) and, labelled, their mean. mpsim: the median of its runs matched "
        "to each kernel run; 'mpsim as the file': `mpsim run` of the scenario file with the same seeds. Ratio: "
        "mpsim / kernel, of the medians. Target: within 10 % of the kernel on loss-free scenarios, 20 % with loss, "
        "i.e. |mpsim / kernel - 1| at most 0.1 or 0.2. Stalled repeats (nothing delivered for "
        f"{STALL_SILENCE_S:g} s, goodput below {STALL_SHARE:.0%} of the other repeats' median, or a failed "
        "connection, docs/kernel.md) are named and included in the median.",
        "",
        "| scenario | cc | flow | kernel median (min-max) | kernel mean | mpsim matched | mpsim as the file | ratio mpsim/kernel "
        "| target | kernel split per path | mpsim split per path | retransmissions kernel / mpsim | timeouts kernel / mpsim "
        "| stalled repeats |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    fl = flag_stalls(fl, by=("scenario", "cc", "flow"))
    for (sc, cc, flow), g in fl.groupby(["scenario", "cc", "flow"], sort=False):
        k, m = g.kernel_goodput_bps.median(), g.mpsim_goodput_bps.median()
        tol = 0.2 if sc in LOSSY else 0.1
        ok = abs(m / k - 1) <= tol if k else False
        p = pa[(pa.scenario == sc) & (pa.cc == cc) & (pa.flow == flow)].groupby("path", sort=False)
        ks = " / ".join(_mbps(v.kernel_goodput_bps.median()) for _, v in p)
        ms = " / ".join(_mbps(v.mpsim_goodput_bps.median()) for _, v in p)
        st = ", ".join(f"{r.repeat} ({r.stall_reason})" for r in g.itertuples() if r.stalled) or "none"
        lines.append(
            f"| {sc} | {cc} | {flow} | {_mbps(k)} ({_mbps(g.kernel_goodput_bps.min())}-{_mbps(g.kernel_goodput_bps.max())}) | "
            f"{_mbps(g.kernel_goodput_bps.mean())} | {_mbps(m)} | {_mbps(_median(g, 'mpsim_file_goodput_bps'))} | "
            f"{m / k if k else float('nan'):.3f} | {'within' if ok else 'OUTSIDE'} {tol:.0%} | {ks} | {ms} | "
            f"{_count(g, 'kernel_retransmits')} / {_count(g, 'mpsim_retransmits')} | "
            f"{_count(g, 'kernel_timeouts')} / {_count(g, 'mpsim_timeouts')} | {st} |")
    lines += ["", "## Per path", "",
              "Medians of the repeats; retransmissions and timeouts over the whole run.", "",
              "| scenario | cc | flow | path | kernel goodput | mpsim goodput | ratio mpsim/kernel | retransmissions kernel / mpsim "
              "| timeouts kernel / mpsim | kernel RTT mean / min (ms) | mpsim RTT mean (ms) | kernel wire throughput (path) |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (sc, cc, flow, path), g in pa.groupby(["scenario", "cc", "flow", "path"], sort=False):
        k, m = g.kernel_goodput_bps.median(), g.mpsim_goodput_bps.median()
        lines.append(f"| {sc} | {cc} | {flow} | {path} | {_mbps(k)} | {_mbps(m)} | {m / k if k else float('nan'):.3f} | "
                     f"{_count(g, 'kernel_retransmits')} / {_count(g, 'mpsim_retransmits')} | "
                     f"{_count(g, 'kernel_timeouts')} / {_count(g, 'mpsim_timeouts')} | "
                     f"{g.kernel_rtt_mean_ms.median():.1f} / {g.kernel_rtt_min_ms.min():.1f} | {g.mpsim_rtt_mean_ms.median():.1f} | "
                     f"{_mbps(g.kernel_throughput_bps.median())} |")
    lines += ["", "## Settings the matched mpsim runs took from the kernel runs", ""]
    if changed:
        lines += ["Per scenario and controller: the setting, the file's value, the values used (one per repeat where "
                  "they differ) and why (docs/kernel.md).", "",
                  "| scenario / cc | setting | file | used | why |", "|---|---|---|---|---|"]
        for row, cs in changed.items():
            for c in cs:
                used = c["used"][0] if len(set(c["used"])) == 1 else ", ".join(c["used"])
                lines.append(f"| {row} | {c['setting']} | {c['file']} | {used} | {c['why']} |")
    else:
        lines.append("Not recorded when this table was measured; docs/kernel.md lists them and `mpsim kernel` prints them.")
    lines += ["", "Receive windows the kernel advertised (largest seen by `ss`, used as mpsim's `tcp.rcv_buf`):", ""]
    for (sc, cc), g in fl.groupby(["scenario", "cc"], sort=False):
        if sc.startswith("mptcp_rcvbuf") and g.kernel_max_window_bytes.notna().any():
            lines.append(f"- {sc} / {cc}: {g.kernel_max_window_bytes.median():.0f} B")
    lines += ["", "## The link emulator on this machine", "",
              "Measured from the end hosts (`mpsim.kernel.accuracy`): a flood 20 % above the rate for 4 s "
              "(rate error: IP bytes received per second against the rate, after the queue has filled) and "
              "150 probes of 228 B, 20 ms apart (delay error: one-way delay from kernel socket timestamps "
              "minus the link's delay and the probe's serialisation time). Lateness: how late the emulator "
              "wrote each packet after its due time, from its own clock.", "",
              "| rate | delay | rate error | delay error mean / p50 / p99 / max (ms) | lateness mean / p99 / max (us) | emulator CPU (% of a core) | real-time priority |",
              "|---|---|---|---|---|---|---|"]
    for a in acc:
        d, l = a["delay_error_ms"], a["lateness"]
        lines.append(f"| {a['rate']} | {a['delay']} | {a['rate_error']:+.4%} | {d['mean']:.3f} / {d['p50']:.3f} / {d['p99']:.3f} / {d['max']:.3f} | "
                     f"{l['mean_us']:.0f} / {l['p99_us']:.0f} / {l['max_us']:.0f} | {100 * a['emulator_cpu_s'] / a['emulator_wall_s']:.1f} | {a['emulator_realtime']} |")
    lat = [r["lateness"] for r in runs if r.get("lateness")]
    cnt = sum(x["count"] for x in lat)
    mean = sum(x["mean_us"] * x["count"] for x in lat) / cnt if cnt else float("nan")
    p99s = sorted(x["p99_us"] for x in lat)
    cpu = [100 * r["emulator_cpu_s"] / r["emulator_wall_s"] for r in runs if r.get("emulator_wall_s")]
    lines += ["",
              f"Over all {len(runs)} kernel runs of the table: {cnt} deliveries, lateness mean {mean:.0f} us, "
              f"p99 per run median {p99s[len(p99s) // 2]:.0f} us (worst run {p99s[-1]:.0f} us), "
              f"max {max(x['max_us'] for x in lat) / 1e3:.1f} ms; emulator CPU {min(cpu):.1f}-{max(cpu):.1f} % of a core "
              "(including the 3 s of set-up and the grace period)." if lat else "", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
