"""Helpers shared by the reproductions: running labelled cases over seeds, aggregating with
confidence intervals, drawing time series, writing tables."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any, Iterable

from .. import api
from ..plots import save_figure
from ..progress import stderr_is_tty
from ..scenario import load


def base(path: Path) -> dict[str, Any]:
    return load(path)[0]


def variant(d: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A deep copy of scenario dict ``d`` with top-level keys replaced."""
    out = copy.deepcopy(d)
    out.update(copy.deepcopy(changes))
    return out


def run_cases(cases: Iterable[tuple[str, dict[str, Any]]], seeds: int, processes: int | None, progress: bool = True) -> Any:
    """Runs every (label, scenario) over seeds 1..seeds; one row per (case, seed, flow)."""
    import pandas as pd
    from tqdm import tqdm

    cases = list(cases)
    frames = []
    for label, scen in tqdm(cases, desc="cases", unit="case", disable=not progress or not stderr_is_tty(), leave=False):
        df = api.sweep(scen, None, seeds, processes=processes, progress=False).frame
        df.insert(0, "case", label)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def mean_ci(values: Any) -> tuple[float, float]:
    """Mean and 95% confidence half-width (Student t) of a sequence."""
    xs = [float(v) for v in values]
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, math.nan
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    return m, api.t95(n - 1) * sd / math.sqrt(n)


def fmt_ci(m: float, ci: float, scale: float = 1e6, digits: int = 2) -> str:
    if math.isnan(ci):
        return f"{m / scale:.{digits}f}"
    return f"{m / scale:.{digits}f} ± {ci / scale:.{digits}f}"


def plot_series(series: dict[str, Any], path: Path, title: str, ylabel: str = "throughput (Mbit/s)") -> list[Path]:
    """Draws one line per label from (time_s, value) frames; writes PNG and SVG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), constrained_layout=True)
    for label, (t, y) in series.items():
        ax.plot(t, y, label=label, lw=1.3)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return save_figure(fig, path)


def md_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


PROVENANCE = "<!-- mpsim reproduce "


def provenance(name: str, seeds: int, quick: bool, default_seeds: int) -> tuple[str, str]:
    """The command that wrote a report, and a machine-readable line with its parameters (the
    tests compare the committed reports' parameters with the defaults)."""
    cmd = f"mpsim reproduce {name}" + (f" --seeds {seeds}" if seeds != default_seeds else "") + (" --quick" if quick else "")
    line = PROVENANCE + json.dumps({"paper": name, "seeds": seeds, "quick": quick}, sort_keys=True) + " -->"
    return cmd, line


def read_provenance(report_text: str) -> dict[str, Any] | None:
    """The parameters a report was written with, from its provenance line."""
    for ln in report_text.splitlines():
        if ln.startswith(PROVENANCE) and ln.endswith("-->"):
            return json.loads(ln[len(PROVENANCE):-3])
    return None
