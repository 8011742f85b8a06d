"""Figures of a run: goodput and congestion window per flow, queue per link, over time."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def save_figure(fig: Any, path: str | os.PathLike[str]) -> list[Path]:
    """Writes a matplotlib figure to ``path`` (PNG, 120 dpi) and beside it as SVG, creating
    the folder; closes the figure and returns both paths."""
    import matplotlib.pyplot as plt

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    svg = out.with_suffix(".svg")
    fig.savefig(out, dpi=120)
    fig.savefig(svg)
    plt.close(fig)
    return [out, svg]


def plot_run(result: Any, path: str | os.PathLike[str], title: str | None = None) -> list[Path]:
    """Draws a run's time series into ``path`` (PNG) and the same name with ``.svg``.

    Three panels share the time axis: goodput per flow (Mbit/s, per sampling interval),
    congestion window per flow (KB), and queue occupancy per forward link (packets). Returns
    the files written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fs, ls = result.flow_series, result.link_series
    if fs is None or len(fs) == 0:
        raise ValueError("the run recorded no time series (metrics.interval is off)")
    fig, axes = plt.subplots(3, 1, figsize=(8, 8), sharex=True, constrained_layout=True)
    for name, g in fs.groupby("flow", sort=False):
        axes[0].plot(g["time_s"], g["goodput_bps"] / 1e6, label=name, lw=1)
        axes[1].plot(g["time_s"], g["cwnd_bytes"] / 1e3, label=name, lw=1)
    busy = [n for n, g in ls.groupby("link", sort=False) if g["queue_packets"].max() > 0]
    for name in busy:
        g = ls[ls["link"] == name]
        axes[2].plot(g["time_s"], g["queue_packets"], label=name, lw=1)
    axes[0].set_ylabel("goodput (Mbit/s)")
    axes[1].set_ylabel("cwnd (KB)")
    axes[2].set_ylabel("queue (packets)")
    axes[2].set_xlabel("time (s)")
    for ax in axes:
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small", ncol=min(5, len(ax.get_legend_handles_labels()[0])), loc="upper right")
    s = result.summary
    fig.suptitle(title or f"{s['scenario']} (seed {s['seed']})")
    return save_figure(fig, path)
