"""What ``mpsim kernel`` reports: :class:`KernelResult`, its tables, its JSON document, the
settings the comparison changed in mpsim and the rule that flags a stalled kernel repeat.

Every ratio here is mpsim / kernel (above 1: mpsim carries more than the kernel did).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

__all__ = ["KernelResult", "settings_changed", "flag_stalls", "STALL_SILENCE_S", "STALL_SHARE", "SCHEMA"]

#: A kernel repeat of a flow is stalled when its receiver read nothing for this long (s)
#: within [max(warmup, start), duration] ...
STALL_SILENCE_S = 2.0
#: ... or when its goodput is below this share of the median of the flow's other repeats
#: (with at least two repeats), or when its connection failed.
STALL_SHARE = 0.5
#: The ``schema`` of the JSON document (``mpsim kernel --json``, :meth:`KernelResult.to_json`).
SCHEMA = "mpsim-kernel/1"

# Why `mpsim kernel` changes each setting for the matched mpsim run (docs/kernel.md has more).
_WHY = {
    "scheduler": "the kernel schedules with upstream Linux's default scheduler; linux_upstream is mpsim's model of it",
    "join_delay": "the kernel's extra subflows join after the first path's handshake, the ADD_ADDR and their own MP_JOIN",
    "tcp.delayed_ack": "the kernel's receivers acknowledge as Linux does (quick ACKs at the start and while the offered window grows, pushed segments at once)",
    "tcp.ssthresh": "Linux's Reno sets ssthresh to half the congestion window on a loss, not half the bytes in flight "
                    "(tcp_reno_ssthresh)",
    "tcp.header": "the kernel's bytes per packet: IPv4 20 + TCP 20 + timestamps 12 (MPTCP: + the 28 B DSS option, "
                  "16 B of which mpsim adds itself)",
    "tcp.rcv_buf": "the largest receive window the kernel advertised in that repeat (Linux offers a share of the "
                   "doubled SO_RCVBUF as window), or that share itself when the window reached the most its window "
                   "field carries",
    "tcp.window_scale": "the kernel's window reached the most its window field carries (65535 << the window "
                        "scale Linux picks for the buffer); its buffer, larger, is tcp.rcv_buf",
    "start": "when that repeat's kernel connection was established (flows connect one after the other, each "
             "waiting for its handshake)",
    "jitter": "up to 0.2 ms of extra delay per packet for the testbed's timing noise (the emulator's lateness, "
              "the hosts' stacks)",
    "metrics.interval": "the kernel side is counted per second",
}


def _file_value(key: str, d: Mapping[str, Any], desc: Mapping[str, Any]) -> str:
    """The scenario's own value of an override key, written as the override writes it."""
    parts = key.split(".")
    if key == "metrics.interval":
        iv = desc.get("interval_s")
        return "none" if iv is None else f"{iv:g}s" if iv == int(iv) else f"{iv * 1e3:g}ms"
    if parts[0] == "link":
        lk = next(x for x in desc["links"] if x["name"] == parts[1])
        return f"{round(lk.get('jitter_s', 0.0) * 1e9)}ns"
    f = next(x for x in desc["flows"] if x["name"] == parts[1])
    rest = ".".join(parts[2:])
    if rest == "scheduler":
        return str(f["scheduler"])
    if rest == "join_delay":
        raw = next((x for x in d.get("flow", []) if x.get("name", "") == f["name"]), {})
        return str(raw.get("join_delay", raw.get("join_at", "none")))
    if rest == "start":
        return f"{round(f['start_s'] * 1e6)}us"
    if rest == "tcp.window_scale":
        return "none" if f["tcp"].get("window_scale") is None else str(f["tcp"]["window_scale"])
    if rest in ("tcp.rcv_buf", "tcp.header"):
        return f"{f['tcp'][parts[3]]}B"
    return str(f["tcp"][parts[3]]) if parts[2] == "tcp" else str(f.get(parts[2]))


def settings_changed(d: Mapping[str, Any], desc: Mapping[str, Any], used: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every setting the matched mpsim run took from the kernel run instead of the scenario:
    ``setting``, the file's ``file`` value, ``used`` (one value per repeat) and ``why``.
    *used* holds the overrides of each repeat (:func:`mpsim.kernel.testbed.mpsim_overrides`)."""
    keys: list[str] = []
    for ov in used:
        keys += [k for k in ov if k not in keys]
    out = []
    for k in keys:
        file = _file_value(k, d, desc)
        vals = [str(ov.get(k, file)) for ov in used]
        if any(v != file for v in vals):
            kind = next(w for w in _WHY if k.endswith(w))
            out.append({"setting": k, "file": file, "used": vals, "why": _WHY[kind]})
    return out


def flag_stalls(flows: Any, by: Sequence[str] = ("flow",)) -> Any:
    """Adds ``stalled`` and ``stall_reason`` to a per-repeat flow table (see ``STALL_*``);
    the repeats of one flow are the rows with the same *by* columns."""
    flows = flows.copy()
    silence = flows["kernel_longest_silence_s"] if "kernel_longest_silence_s" in flows else [None] * len(flows)
    reasons: list[str | None] = []
    for (i, r), quiet in zip(flows.iterrows(), silence):
        same = (flows[list(by)] == r[list(by)]).all(axis=1)
        others = flows[same & (flows.index != i)].kernel_goodput_bps.dropna()
        why = None
        if isinstance(r.get("error"), str) and r["error"]:
            why = f"connection failed: {r['error']}"
        elif quiet is not None and not math.isnan(quiet) and quiet >= STALL_SILENCE_S:
            why = f"nothing delivered for {quiet:.1f} s"
        elif len(others) and r.kernel_goodput_bps < STALL_SHARE * others.median():
            why = f"goodput {r.kernel_goodput_bps / others.median():.0%} of the other repeats' median"
        reasons.append(why)
    flows["stalled"] = [w is not None for w in reasons]
    flows["stall_reason"] = reasons
    return flows


def _no_nan(x: Any) -> Any:
    """*x* with every NaN float as None (JSON has no NaN)."""
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _no_nan(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_no_nan(v) for v in x]
    return x


def _med(s: Any) -> float | None:
    s = s.dropna() if s is not None else None
    return float(s.median()) if s is not None and len(s) else None


def _ratio(m: float | None, k: float | None) -> float | None:
    return m / k if m is not None and k else None


def _f(x: float | None, scale: float = 1e6, fmt: str = ".2f") -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x / scale, fmt)


class KernelResult:
    """Kernel and mpsim figures for one scenario, repeat by repeat.

    Attributes:
        flows: one row per (repeat, flow): kernel goodput; mpsim's as matched to the kernel
            run (``mpsim_goodput_bps``) and as the file stands (``mpsim_file_goodput_bps``);
            ``ratio_mpsim_kernel`` of the matched one; retransmissions, timeouts, the
            receiver's longest silence, ``stalled`` and ``stall_reason``.
        paths: one row per (repeat, flow, path): the same per path, with RTTs and the path's
            wire throughput (emulator counters).
        series: delivered bytes per second per flow, kernel and matched mpsim side by side.
        path_series: the kernel side's IP bytes per second per path (client to server), from
            the emulator.
        subflow_series: the kernel's subflows as ``ss`` saw them every second (cwnd in
            segments, RTT, bytes acknowledged, retransmissions, peer window; for BBR its
            model: ``bbr_bw_bps``, ``bbr_min_rtt_ms``, ``bbr_pacing_gain``, ``bbr_cwnd_gain``).
        runs: per repeat: the emulator's lateness, CPU use, kernel counters.
        info: kernel version, MPTCP scheduler and path manager, controllers actually used.
        changed: the settings the matched mpsim run took from the kernel run
            (:func:`settings_changed`).
    """

    def __init__(self, name: str, flows: Any, paths: Any, series: Any, runs: list[dict[str, Any]], info: dict[str, Any],
                 path_series: Any = None, subflow_series: Any = None, changed: list[dict[str, Any]] | None = None) -> None:
        self.name = name
        self.flows = flag_stalls(flows)
        self.paths = paths
        self.series = series
        self.path_series = path_series
        self.subflow_series = subflow_series
        self.runs = runs
        self.info = info
        self.changed = changed or []

    # --- summaries over the repeats -------------------------------------------------

    def flow_summary(self) -> list[dict[str, Any]]:
        """Per flow over the repeats: medians (the kernel's goodput also mean, min, max),
        the ratio mpsim / kernel of the medians, and the stalled repeats."""
        out = []
        for flow, g in self.flows.groupby("flow", sort=False):
            k = g.kernel_goodput_bps.dropna()
            km, mm = _med(k), _med(g.mpsim_goodput_bps)
            out.append({
                "flow": flow, "repeats": len(g),
                "kernel_goodput_bps": {"median": km, "mean": float(k.mean()) if len(k) else None,
                                       "min": float(k.min()) if len(k) else None, "max": float(k.max()) if len(k) else None},
                "mpsim_goodput_bps": mm, "mpsim_file_goodput_bps": _med(g.mpsim_file_goodput_bps),
                "ratio_mpsim_kernel": _ratio(mm, km),
                **{f"{who}_{what}": _med(g[f"{who}_{what}"]) for what in ("retransmits", "timeouts") for who in ("kernel", "mpsim")},
                "stalled_repeats": [{"repeat": int(r.repeat), "reason": r.stall_reason} for r in g.itertuples() if r.stalled],
            })
        return out

    def path_summary(self) -> list[dict[str, Any]]:
        """Per (flow, path) over the repeats: medians of goodput, retransmissions, timeouts
        and mean RTT, the smallest RTT the kernel saw, and the ratio mpsim / kernel."""
        out = []
        for (flow, path), g in self.paths.groupby(["flow", "path"], sort=False):
            km, mm = _med(g.kernel_goodput_bps), _med(g.mpsim_goodput_bps)
            out.append({
                "flow": flow, "path": path, "kernel_goodput_bps": km, "mpsim_goodput_bps": mm,
                "mpsim_file_goodput_bps": _med(g.mpsim_file_goodput_bps), "ratio_mpsim_kernel": _ratio(mm, km),
                **{f"{who}_{what}": _med(g[f"{who}_{what}"]) for what in ("retransmits", "timeouts") for who in ("kernel", "mpsim")},
                "kernel_rtt_mean_ms": _med(g.kernel_rtt_mean_ms),
                "kernel_rtt_min_ms": float(g.kernel_rtt_min_ms.min()) if g.kernel_rtt_min_ms.notna().any() else None,
                "mpsim_rtt_mean_ms": _med(g.mpsim_rtt_mean_ms),
                "kernel_throughput_bps": _med(g.kernel_throughput_bps),
            })
        return out

    def to_json(self) -> dict[str, Any]:
        """The whole result as one JSON-ready document (schema ``SCHEMA``, docs/kernel.md)."""
        def rows(df: Any) -> list[dict[str, Any]]:
            return json.loads(df.to_json(orient="records"))

        return _no_nan({
            "schema": SCHEMA, "scenario": self.name, "ratio": "mpsim/kernel", "info": self.info,
            "stall_rule": {"silence_s": STALL_SILENCE_S, "share_of_median": STALL_SHARE},
            "settings_changed": self.changed,
            "flows": self.flow_summary(), "paths": self.path_summary(),
            "repeats": {"flows": rows(self.flows), "paths": rows(self.paths)},
            "runs": json.loads(json.dumps(self.runs, default=str)),
        })

    # --- text -----------------------------------------------------------------------

    def table(self) -> str:
        """Markdown tables: per flow, then per path (medians over the repeats)."""
        lines = ["| flow | kernel median (min-max) | kernel mean | mpsim matched | mpsim as the file | ratio mpsim/kernel "
                 "| retransmissions kernel / mpsim | timeouts kernel / mpsim | stalled repeats |",
                 "|---|---|---|---|---|---|---|---|---|"]
        for s in self.flow_summary():
            k = s["kernel_goodput_bps"]
            spread = f" ({_f(k['min'])}-{_f(k['max'])})" if s["repeats"] > 1 else ""
            st = ", ".join(f"{x['repeat']} ({x['reason']})" for x in s["stalled_repeats"]) or "none"
            lines.append(f"| {s['flow']} | {_f(k['median'])}{spread} | {_f(k['mean'])} | {_f(s['mpsim_goodput_bps'])} | "
                         f"{_f(s['mpsim_file_goodput_bps'])} | {_f(s['ratio_mpsim_kernel'], 1, '.3f')} | "
                         f"{_f(s['kernel_retransmits'], 1, '.0f')} / {_f(s['mpsim_retransmits'], 1, '.0f')} | "
                         f"{_f(s['kernel_timeouts'], 1, '.0f')} / {_f(s['mpsim_timeouts'], 1, '.0f')} | {st} |")
        lines += ["", "| flow | path | kernel | mpsim matched | mpsim as the file | ratio mpsim/kernel | retransmissions "
                  "kernel / mpsim | timeouts kernel / mpsim | RTT mean kernel / mpsim (ms) | RTT min kernel (ms) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for p in self.path_summary():
            lines.append(f"| {p['flow']} | {p['path']} | {_f(p['kernel_goodput_bps'])} | {_f(p['mpsim_goodput_bps'])} | "
                         f"{_f(p['mpsim_file_goodput_bps'])} | {_f(p['ratio_mpsim_kernel'], 1, '.3f')} | "
                         f"{_f(p['kernel_retransmits'], 1, '.0f')} / {_f(p['mpsim_retransmits'], 1, '.0f')} | "
                         f"{_f(p['kernel_timeouts'], 1, '.0f')} / {_f(p['mpsim_timeouts'], 1, '.0f')} | "
                         f"{_f(p['kernel_rtt_mean_ms'], 1, '.1f')} / {_f(p['mpsim_rtt_mean_ms'], 1, '.1f')} | "
                         f"{_f(p['kernel_rtt_min_ms'], 1, '.1f')} |")
        return "\n".join(lines)

    def changes_table(self) -> str:
        """The settings the matched mpsim run took from the kernel run, as a Markdown table."""
        lines = ["| setting | file | used (per repeat) | why |", "|---|---|---|---|"]
        for c in self.changed:
            used = c["used"][0] if len(set(c["used"])) == 1 else ", ".join(c["used"])
            lines.append(f"| {c['setting']} | {c['file']} | {used} | {c['why']} |")
        return "\n".join(lines)

    def report(self) -> str:
        lat = [r["lateness"] for r in self.runs if r.get("lateness")]
        mean_us = sum(x["mean_us"] for x in lat) / len(lat) if lat else float("nan")
        p99_us = max(x["p99_us"] for x in lat) if lat else float("nan")
        out = [f"# {self.name}: Linux kernel beside mpsim", "",
               f"Kernel {self.info.get('kernel')}, MPTCP scheduler '{self.info.get('mptcp_scheduler')}', "
               f"congestion control used: {self.info.get('cc_used')}; {len(self.runs)} repeat(s).", "",
               "Goodput in Mbit/s over [warmup, duration], median over the repeats. 'mpsim matched' ran with "
               "the settings below taken from the kernel run; 'mpsim as the file' is `mpsim run` of the "
               "scenario with the same seed. Ratio: mpsim matched / kernel, of the medians. Retransmissions "
               "and timeouts: whole run. A repeat is stalled when its receiver read nothing for "
               f"{STALL_SILENCE_S:g} s or more, its goodput is below {STALL_SHARE:.0%} of the other repeats' "
               "median, or its connection failed; medians include it.", "",
               self.table(), "",
               "Settings the matched mpsim run took from the kernel run (docs/kernel.md):", "",
               self.changes_table() if self.changed else "none", "",
               f"Emulator: delivery lateness mean {mean_us:.0f} us, p99 (worst repeat) {p99_us:.0f} us; "
               f"per-path counters (packets, drops, lateness) per repeat in summary.json.", ""]
        return "\n".join(out)

    # --- files ----------------------------------------------------------------------

    def save(self, out: str | os.PathLike[str]) -> list[Path]:
        outd = Path(out)
        outd.mkdir(parents=True, exist_ok=True)
        files = []
        for name in ("flows", "paths", "series", "path_series", "subflow_series"):
            p = outd / f"{name}.csv"
            getattr(self, name).to_csv(p, index=False)
            files.append(p)
        p = outd / "summary.json"
        p.write_text(json.dumps(self.to_json(), indent=2))
        files.append(p)
        p = outd / "report.md"
        p.write_text(self.report())
        files.append(p)
        files += self.plot(outd / "goodput.png")
        return files

    def plot(self, path: Path, title: str | None = None) -> list[Path]:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 3.5))
        s = self.series
        for flow, g in s.groupby("flow", sort=False):
            k = g.groupby("time_s").kernel_bytes.mean() * 8 / 1e6
            m = g.groupby("time_s").mpsim_bytes.mean() * 8 / 1e6
            ax.plot(k.index, k.values, label=f"{flow} kernel", lw=1.5)
            ax.plot(m.index, m.values, "--", label=f"{flow} mpsim", lw=1.5)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("goodput (Mbit/s)")
        ax.set_title(title or f"{self.name} ({self.info.get('cc_used')})")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return [path]
