"""Seed 004: Lu et al., "PO-MPTCP: Priorities-Oriented Data Scheduler for Multimedia
Multipathing Services" against standard MPTCP, for a prioritised video stream over two lossy
wireless paths with background traffic.

The paper's Figs. 4-8 (throughput, delay, delay over time, jitter over time, PSNR) and the
per-class delay that is the point of the scheme. The paper ran the ns-2 MPTCP patch, whose
scheduler fills subflows in index order (``in_order``); lowest RTT (``lowest_rtt``, Linux
MPTCP v0.9x) is run beside it. PO-MPTCP runs over each of them for its ordinary data, with the
priority dequeue (the paper's scheme) and without it (``_fifo``, to separate the dequeue's
effect from the path choice). Every case runs with both path orders (the faster path first,
and the slower path first), since an index-order scheduler depends on the order.

Every verdict in the report is decided by the shared rule of :mod:`mpsim.reproduce.claims`
(paired differences over seeds against the baseline each names, with controls and
perturbations).
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

from .. import api
from . import claims, common
from ..shipped import scenario_file

NAME = "po-mptcp"
DEFAULT_SEEDS = 20
TITLE = "Seed 004: PO-MPTCP (priority-aware scheduling of streaming media) against standard MPTCP"
SCENARIO = scenario_file("po_mptcp/wifi_wimax.toml")
LOSSES = ("0%", "1%", "2%", "5%")
QUICK_LOSSES = ("0%", "2%")
SCHEDULERS = ("in_order", "po_mptcp_in_order", "po_mptcp_in_order_fifo", "lowest_rtt", "po_mptcp", "po_mptcp_fifo")
LABELS = {
    "in_order": "MPTCP (in order)",
    "po_mptcp_in_order": "PO-MPTCP (in order)",
    "po_mptcp_in_order_fifo": "PO-MPTCP FIFO (in order)",
    "lowest_rtt": "MPTCP (lowest RTT)",
    "po_mptcp": "PO-MPTCP (lowest RTT)",
    "po_mptcp_fifo": "PO-MPTCP FIFO (lowest RTT)",
}
#: path order: the flow's `paths` list (path_a: 11 Mbit/s, 15 ms; path_b: 10 Mbit/s, 35 ms)
ORDERS = {"fast_first": ["path_a", "path_b"], "slow_first": ["path_b", "path_a"]}
#: (scheme, baseline) pairs compared
PAPER_GAIN = {"0%": 2.28, "1%": 8.18, "2%": 2.69, "5%": 8.04}
CLASSES = ("I", "P", "B")


def scenario(loss: str, scheduler: str, quick: bool = False, order: str = "fast_first") -> dict[str, Any]:
    d = copy.deepcopy(common.base(SCENARIO))
    for link in d["link"]:
        if link["name"] in ("router_a", "router_b"):
            link["loss"] = loss
    d["flow"][0]["scheduler"] = scheduler
    d["flow"][0]["paths"] = list(ORDERS[order])
    if quick:
        d["duration"] = "20s"
    return d


# ------------------------------------------------------------------------------------------
# the claims, decided by the shared rule (mpsim.reproduce.claims)

#: (scheme, baseline, path order) of each comparison; lowest RTT does not depend on the order
COMPARISONS = (("po_mptcp_in_order", "in_order", "fast_first"), ("po_mptcp_in_order", "in_order", "slow_first"), ("po_mptcp", "lowest_rtt", "fast_first"))
FIFO = {"po_mptcp_in_order": "po_mptcp_in_order_fifo", "po_mptcp": "po_mptcp_fifo"}
CLAIM_METRICS = (
    ("throughput", "throughput higher (paper: +2.28, +8.18, +2.69, +8.04% at 0, 1, 2, 5% loss)", "goodput_bps", "higher", True, ""),
    ("delay", "mean frame delay lower (Figs. 5-6)", "delay_mean_ms", "lower", True, ""),
    ("jitter", "jitter lower (Fig. 7)", "jitter_ms", "lower", True, ""),
    ("psnr", "PSNR higher (paper: +3.7%)", "psnr_db", "higher", True, ""),
    ("i_delay", "prioritised (I) frames delivered sooner", "class_I_delay_mean_ms", "lower", True, ""),
    ("i_refused", "fewer I frames discarded at the sender", "class_I_refused_pct", "lower", False, "pt"),
)
PRIORITY = "the priorities: prioritised data first out of the send buffer, on the best path"
#: the stream rates of the search made before the rate was fixed (see the scenario's header),
#: and the mean capacity the background leaves (21 Mbit/s less 30%): each a perturbation
STREAM_RATES = (3.8e6, 11.4e6, 14.7e6)


def _arm(scheme: str, order: str, unmarked: bool = False) -> str:
    return f"{scheme}@{order}" + ("+unmarked" if unmarked else "")


def arm_scenario(arm: str, point: str, quick: bool) -> dict[str, Any]:
    """"<scheduler>@<order>[+unmarked]" at a loss rate; unmarked: no class has a priority (the
    application marks nothing, so PO-MPTCP has nothing to put first)."""
    spec, _, flag = arm.partition("+")
    sched, order = spec.split("@")
    d = scenario(point, sched, quick, order)
    if flag == "unmarked":
        for c in d["flow"][0]["app"]["classes"].values():
            c.pop("priority", None)
    return d


def scale_stream(factor: float) -> Any:
    """An edit of the scenario dict: every frame size scaled by `factor` (the GOP and its byte
    split kept)."""

    def edit(d: dict[str, Any]) -> dict[str, Any]:
        for c in d["flow"][0]["app"]["classes"].values():
            c["size"] = claims.scale_value(c["size"], factor)
        return d

    return edit


def perturbations() -> tuple[claims.Perturbation, ...]:
    base = stream_rate_bps()
    return claims.PERTURBATIONS + tuple(claims.Perturbation(f"stream {r / 1e6:.1f} Mbit/s", edit=scale_stream(r / base)) for r in STREAM_RATES)


def measure(rows: Any) -> dict[str, float]:
    v = rows[rows["flow"] == "video"].iloc[0]
    out = {k: float(v[k]) for k in ("goodput_bps", "delay_mean_ms", "jitter_ms", "psnr_db", "class_I_delay_mean_ms")}
    gen = float(v["class_I_generated"])
    out["class_I_refused_pct"] = 100 * float(v["class_I_refused"]) / gen if gen else math.nan
    return out


def claim_list(losses: tuple[str, ...]) -> list[claims.Claim]:
    out = []
    for scheme, base, order in COMPARISONS:
        for key, text, metric, better, relative, unit in CLAIM_METRICS:
            out.append(
                claims.Claim(
                    f"{key}|{base}|{order}", text, metric, better, _arm(scheme, order), _arm(base, order), tuple(losses), mechanism=PRIORITY,
                    controls=(_arm(FIFO[scheme], order), _arm(scheme, order, unmarked=True)), relative=relative, unit=unit,
                )
            )
    return out


ARM_TEXT = {
    "in_order@fast_first": "the paper's standard MPTCP: the ns-2 patch's index-order scheduler, LIA, path A (15 ms) listed first",
    "in_order@slow_first": "the same with path B (35 ms) listed first",
    "lowest_rtt@fast_first": "Linux MPTCP v0.9x's lowest RTT (not the paper's baseline; the order does not matter)",
    "po_mptcp_in_order@…": "PO-MPTCP as the paper ran it: prioritised data first and on the best path, ordinary data in index order",
    "po_mptcp@fast_first": "PO-MPTCP over lowest RTT",
    "…_fifo@…": "control: the same PO-MPTCP without the priority dequeue (send buffer handed out in byte order)",
    "…+unmarked": "control: the same PO-MPTCP with a stream whose frames carry no priority: the scheduler has nothing to put first, "
    "and the sender's priority drop no longer protects I frames either (it drops the newest frame)",
}


def study(losses: tuple[str, ...], quick: bool) -> claims.Study:
    return claims.Study(lambda arm, point, seed: arm_scenario(arm, point, quick), measure, claim_list(losses), ARM_TEXT)


def stream_rate_bps() -> float:
    """The video's mean bit rate, from the scenario's frame rate, GOP and frame sizes."""
    app = common.base(SCENARIO)["flow"][0]["app"]
    units = {"B": 1, "KB": 1000, "MB": 1000_000}

    def size(text: str) -> float:
        num = text.rstrip("KMB")
        return float(num) * units[text[len(num):]]

    gop = app["gop"]
    per_gop = sum(size(app["classes"][c]["size"]) for c in gop)
    return 8 * per_gop * app["fps"] / len(gop)


def _video(frame: Any) -> Any:
    return frame[frame["flow"] == "video"].copy()


def _add_class_rates(video: Any) -> None:
    """Per-class shares (%) of generated frames refused, lost and late."""
    for c in CLASSES:
        gen = video[f"class_{c}_generated"].where(video[f"class_{c}_generated"] > 0)
        video[f"class_{c}_refused_pct"] = 100 * video[f"class_{c}_refused"] / gen
        video[f"class_{c}_lost_pct"] = 100 * video[f"class_{c}_lost"] / gen
        video[f"class_{c}_late_pct"] = 100 * video[f"class_{c}_late"] / gen


def run(out_dir: Path, seeds: int = DEFAULT_SEEDS, quick: bool = False, processes: int | None = None) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    losses = QUICK_LOSSES if quick else LOSSES
    cases = [(f"{s}|{o}|{loss}", scenario(loss, s, quick, o)) for s in SCHEDULERS for o in ORDERS for loss in losses]
    data = common.run_cases(cases, seeds, processes)
    parts = data["case"].str.split("|", expand=True)
    data["scheduler"] = parts[0]
    data.insert(1, "order", parts[1])
    data.insert(2, "loss", parts[2])
    _add_class_rates(data)
    data.to_csv(out_dir / "data.csv", index=False)
    video = _video(data)
    agg = aggregate(video)
    queue = sender_queue_table(video, losses, seeds, quick, processes)
    _plot_vs_loss(agg, losses, "goodput_bps", 1e6, "throughput (Mbit/s)", "Fig. 4: average throughput", out_dir / "fig4_throughput.png")
    _plot_vs_loss(agg, losses, "delay_mean_ms", 1, "mean frame delay (ms)", "Fig. 5: average delay", out_dir / "fig5_delay.png")
    _plot_vs_loss(agg, losses, "psnr_db", 1, "PSNR (dB)", "Fig. 8: PSNR from throughput", out_dir / "fig8_psnr.png")
    _plot_priority(agg, losses, out_dir / "fig_priority_delay.png")
    for loss, col, fig, title, ylabel in (
        ("1%", "delay_ms", "fig6_delay_time", "Fig. 6: frame delay over time, 1% loss, slower path first", "delay (ms)"),
        ("2%", "jitter_ms", "fig7_jitter_time", "Fig. 7: jitter over time, 2% loss, slower path first", "jitter (ms)"),
    ):
        if loss not in losses:
            continue
        series = {}
        for s in ("in_order", "po_mptcp_in_order", "lowest_rtt", "po_mptcp"):
            fs = api.run(scenario(loss, s, quick, "slow_first"), progress=False).flow_series
            v = fs[fs["flow"] == "video"]
            series[LABELS[s]] = (v["time_s"], v[col])
        common.plot_series(series, out_dir / f"{fig}.png", title, ylabel=ylabel)
    st = study(losses, quick)
    results = claims.evaluate(st.claims, claims.run(st, seeds, processes, perturbations()))
    claims.write(results, out_dir, NAME)
    path = out_dir / "report.md"
    path.write_text(_report(video, agg, losses, seeds, quick, results, queue))
    return path


# ------------------------------------------------------------------------------------------
# statistics and verdicts


METRICS = ("goodput_bps", "delay_mean_ms", "jitter_ms", "psnr_db") + tuple(
    f"class_{c}_{m}" for c in CLASSES for m in ("delay_mean_ms", "refused_pct", "lost_pct", "late_pct")
)


def aggregate(video: Any) -> dict[tuple[str, str, str, str], tuple[float, float]]:
    """(scheduler, order, loss, metric) -> (mean, 95% CI half-width) over seeds."""
    agg = {}
    for (s, o, loss), g in video.groupby(["scheduler", "order", "loss"], sort=False):
        for m in METRICS:
            xs = g[m].dropna()
            agg[(s, o, loss, m)] = common.mean_ci(xs) if len(xs) else (math.nan, math.nan)
    return agg


# ------------------------------------------------------------------------------------------
# figures


def _plot_vs_loss(agg: dict, losses: tuple, metric: str, scale: float, ylabel: str, title: str, path: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), constrained_layout=True, sharey=True)
    width = 0.8 / len(SCHEDULERS)
    for ax, order in zip(axes, ORDERS):
        for k, s in enumerate(SCHEDULERS):
            xs = [i + (k - (len(SCHEDULERS) - 1) / 2) * width for i in range(len(losses))]
            m = [agg[(s, order, loss, metric)][0] / scale for loss in losses]
            ci = [0 if math.isnan(agg[(s, order, loss, metric)][1]) else agg[(s, order, loss, metric)][1] / scale for loss in losses]
            ax.bar(xs, m, width, yerr=ci, capsize=2, label=LABELS[s])
        ax.set_xticks(range(len(losses)), [f"loss {loss}" for loss in losses])
        ax.set_title(order.replace("_", " "))
        ax.grid(alpha=0.3, axis="y")
    axes[0].set_ylabel(ylabel)
    axes[0].legend(fontsize="x-small")
    fig.suptitle(f"{title} (mean, 95% CI)")
    return common.save_figure(fig, path)


def _plot_priority(agg: dict, losses: tuple, path: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = ("in_order", "po_mptcp_in_order", "po_mptcp_in_order_fifo")
    fig, axes = plt.subplots(1, len(shown), figsize=(12, 4), constrained_layout=True, sharey=True)
    for ax, s in zip(axes, shown):
        for cls in CLASSES:
            ax.plot(list(losses), [agg[(s, "slow_first", loss, f"class_{cls}_delay_mean_ms")][0] for loss in losses], marker="o", label=f"{cls} frames")
        ax.set_title(LABELS[s])
        ax.set_xlabel("loss rate")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean delay of delivered frames (ms)")
    axes[0].legend(fontsize="small")
    fig.suptitle("Delay by frame type, slower path first (I frames are the prioritised ones; refused frames not counted)")
    return common.save_figure(fig, path)


# ------------------------------------------------------------------------------------------
# report


#: the schedulers of the before/after table of the sender's queue (faster path first)
QUEUE_TABLE = ("in_order", "po_mptcp_in_order")


def sender_queue_table(video: Any, losses: tuple, seeds: int, quick: bool, processes: int | None) -> list[list[str]]:
    """Per loss and scheduler (faster path first): the shares of I, P and B frames discarded
    at the sender and delivered late, without the application's queue (``backlog = "0B"``:
    a frame the send buffer cannot take is refused at once, the sender before the queue) and
    with it (the scenario's default, the runs of the report)."""
    cases = []
    for loss in losses:
        for s in QUEUE_TABLE:
            d = scenario(loss, s, quick, "fast_first")
            d["flow"][0]["app"]["backlog"] = "0B"
            cases.append((f"{s}|{loss}", d))
    before = _video(common.run_cases(cases, seeds, processes))
    parts = before["case"].str.split("|", expand=True)
    before = before.assign(scheduler=parts[0], order="fast_first", loss=parts[1])
    _add_class_rates(before)
    rows = []
    for loss in losses:
        for s in QUEUE_TABLE:
            cells = [loss, LABELS[s]]
            for frame in (before, video):
                g = frame[(frame["scheduler"] == s) & (frame["order"] == "fast_first") & (frame["loss"] == loss)]
                for m in ("refused", "late"):
                    cells.append("/".join(f"{g[f'class_{c}_{m}_pct'].mean():.1f}" for c in CLASSES))
            rows.append(cells)
    return rows


def _report(video: Any, agg: dict, losses: tuple, seeds: int, quick: bool, results: list[claims.Result], queue: list[list[str]]) -> str:
    cmd, prov = common.provenance(NAME, seeds, quick, DEFAULT_SEEDS)
    a = lambda s, o, loss, m: agg[(s, o, loss, m)]  # noqa: E731
    L = [
        f"# {TITLE}",
        "",
        prov,
        "",
        f"Produced by `{cmd}`: {seeds} seeds per point, mean ± 95% confidence interval (Student t over",
        "seeds). Scenario: `scenarios/po_mptcp/wifi_wimax.toml` (its comments list every assumption:",
        "path A 11 Mbit/s and 15 ms, path B 10 Mbit/s and 35 ms, 50-packet router queues, background",
        "load 30% per path on average redrawn every 5 s between 0 and 60% with an 80/20 TCP/UDP byte",
        f"mix, a {stream_rate_bps() / 1e6:.1f} Mbit/s video with a 12-frame GOP and high-priority I frames, LIA, 256 KB buffers).",
        "",
        "Schedulers: the paper's standard MPTCP is the ns-2 MPTCP patch, which fills subflows in index",
        "order (`in_order`); lowest RTT (`lowest_rtt`, Linux MPTCP v0.9x) is the other baseline.",
        "PO-MPTCP sends prioritised data on the best path of its ranking (ascending RTT, then larger",
        "window) and takes it out of the send buffer ahead of older ordinary data (the priority",
        "dequeue); its ordinary data goes to the standard scheduler named in brackets. The FIFO forms",
        "keep the ranking but hand the send buffer out in byte order. Path orders: `fast_first` lists",
        "path A (15 ms) first, `slow_first` path B (35 ms) first; lowest RTT does not depend on it.",
        "",
        "Verdicts: the section \"Verdicts\" below, by the rule it states.",
        "",
    ]
    # application-limited check
    rate = stream_rate_bps()
    L += ["## Is the stream application-limited at 0% loss?", ""]
    if "0%" in losses:
        rows = []
        limited_any = False
        for o in ORDERS:
            for s in SCHEDULERS:
                g = video[(video["scheduler"] == s) & (video["order"] == o) & (video["loss"] == "0%")]
                refused = float((g[[f"class_{c}_refused" for c in CLASSES]].sum(axis=1)).mean())
                gp = a(s, o, "0%", "goodput_bps")
                limited = refused == 0
                limited_any |= limited
                rows.append([o, LABELS[s], common.fmt_ci(*gp, digits=3), f"{refused:.1f}", "yes" if limited else "no"])
        L += common.md_table(["order", "scheduler", "throughput (Mbit/s)", "frames discarded per run", "application-limited"], rows)
        L += [
            "",
            f"Stream rate {rate / 1e6:.1f} Mbit/s. A run is application-limited here if the sender discarded no frame (frames that only waited in its queue are not counted).",
            f"Check: {'some runs are application-limited; throughput differences at 0% loss are not testable there' if limited_any else 'no case is application-limited at 0% loss, so throughput can differ'}.",
            "",
        ]
    L += ["## Throughput, delay, jitter and PSNR against loss (Figs. 4, 5 and 8)", ""]
    rows = []
    for loss in losses:
        for o in ORDERS:
            for s in SCHEDULERS:
                rows.append(
                    [
                        loss,
                        o,
                        LABELS[s],
                        common.fmt_ci(*a(s, o, loss, "goodput_bps"), digits=3),
                        common.fmt_ci(*a(s, o, loss, "delay_mean_ms"), scale=1, digits=0),
                        common.fmt_ci(*a(s, o, loss, "jitter_ms"), scale=1, digits=1),
                        common.fmt_ci(*a(s, o, loss, "psnr_db"), scale=1, digits=2),
                    ]
                )
    L += common.md_table(["loss", "order", "scheduler", "throughput (Mbit/s)", "delay (ms)", "jitter (ms)", "PSNR (dB)"], rows)
    L += [
        "",
        "Delay and jitter are those of delivered frames; refused frames never enter the send buffer",
        "and are counted in the next table, not here.",
        "",
        "## Per frame type: delay, refusals, losses and late frames",
        "",
        "Shares of the frames the application generated: refused (discarded at the sender, by the priority",
        "drop of the application's queue or a full send buffer), lost (accepted but not delivered by the end of the run) and late",
        "(delivered after the 1 s playback deadline). I frames are the prioritised class.",
        "",
    ]
    rows = []
    for loss in losses:
        for o in ORDERS:
            for s in SCHEDULERS:
                row = [loss, o, LABELS[s]]
                row += [common.fmt_ci(*a(s, o, loss, f"class_{c}_delay_mean_ms"), scale=1, digits=0) for c in CLASSES]
                row += ["/".join(f"{a(s, o, loss, f'class_{c}_refused_pct')[0]:.0f}" for c in CLASSES)]
                row += ["/".join(f"{a(s, o, loss, f'class_{c}_lost_pct')[0]:.1f}" for c in CLASSES)]
                row += ["/".join(f"{a(s, o, loss, f'class_{c}_late_pct')[0]:.1f}" for c in CLASSES)]
                rows.append(row)
    L += common.md_table(
        ["loss", "order", "scheduler", "I delay (ms)", "P delay (ms)", "B delay (ms)", "refused % I/P/B", "lost % I/P/B", "late % I/P/B"], rows
    )
    L += [
        "",
        "## The sender's queue: discarded and late frames without it and with it",
        "",
        "Shares (%) of the I/P/B frames generated, faster path first, over the same seeds: without the",
        "application's queue (`backlog = \"0B\"`: a frame the send buffer cannot take is refused at once,",
        "as the sender was before it had a queue) and with it (the scenario's default, the runs above).",
        "",
    ]
    L += common.md_table(["loss", "scheduler", "discarded I/P/B, no queue", "late I/P/B, no queue", "discarded I/P/B, queue", "late I/P/B, queue"], queue)
    L += [""] + claims.markdown(results, ARM_TEXT, perturbations())
    L += [
        "The controls isolate what PO-MPTCP credits: the FIFO form keeps the path choice and drops the",
        "priority dequeue; the unmarked stream keeps the scheduler and gives it nothing to prioritise. The",
        "stream-rate perturbations are the rates tried before 9.5 Mbit/s was fixed (3.8 and 11.4 Mbit/s,",
        "see the scenario's header) and the mean capacity the background leaves on the two paths",
        "(21 Mbit/s less 30%: 14.7 Mbit/s), frame sizes scaled with the GOP's byte split kept.",
        "",
        "## Notes",
        "",
        "- The sender discards frames as a streaming sender does (priority drop): frames wait in the",
        "  application's queue while the send buffer is full, and when that queue is over its bound the",
        "  lowest-priority frame goes first, the newest among equals; an I frame is never discarded while",
        "  a B or P frame is held. With in-order, faster path first, the sender discarded "
        + "; ".join(
            f"at {loss} loss {a('in_order', 'fast_first', loss, 'class_I_refused_pct')[0]:.1f}% of I frames,"
            f" {a('in_order', 'fast_first', loss, 'class_P_refused_pct')[0]:.0f}% of P and {a('in_order', 'fast_first', loss, 'class_B_refused_pct')[0]:.0f}% of B frames"
            for loss in losses
        )
        + ". The mean delay of a class is over its delivered frames only; read the delay and the",
        "  discard columns together.",
        "- PO-MPTCP over lowest RTT and lowest RTT choose the same path for every chunk on paths with",
        "  distinct RTTs (MDPS ranks by RTT first), so between them only the priority dequeue can",
        "  make a difference; over in-order the path choice differs too when the slower path is first.",
        "- The paper's stack (ns-2 with the MPTCP patch), its video source and its background load are",
        "  unknown beyond what the scenario comments say; the differences above are what this model",
        "  gives for the stated assumptions, not tuned toward the paper's numbers.",
        "",
        "Figures: `fig4_throughput.png`, `fig5_delay.png`, `fig6_delay_time.png` (1% loss), `fig7_jitter_time.png`",
        "(2% loss), `fig8_psnr.png`, `fig_priority_delay.png`. Data: `data.csv` (one row per scheduler,",
        "path order, loss, seed and flow; per-class `class_X_generated`, `_refused`, `_lost`, `_late`",
        "counts and `_pct` shares).",
        "",
    ]
    return "\n".join(L)
