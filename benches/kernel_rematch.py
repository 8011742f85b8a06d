"""The matched mpsim side of the saved kernel table, run again with settings added.

    .venv/bin/python benches/kernel_rematch.py "tcp.ssthresh=cwnd" [SCENARIO/CC ...]
    .venv/bin/python benches/kernel_rematch.py - [SCENARIO/CC ...]     # no settings added
    .venv/bin/python benches/kernel_rematch.py --seeds N SETTINGS [SCENARIO/CC ...]

For every row of docs/reports/kernel-results/ (or the rows named), mpsim runs as the table's
matched runs did (each repeat's seed and the settings `mpsim kernel` took from that kernel
run, saved in emulator.json), once as saved and once with the settings given (KEY=VALUE,
comma-separated; a `tcp.` key is applied to every flow; `-` for none). Prints a Markdown
table: the kernel's median, the matched mpsim median the table saved, mpsim's median both
ways now and the ratios mpsim / kernel. No root needed: the kernel
side is the saved one. benches/results/reno_ssthresh.md was made with it.

With `--seeds N`, each row's first repeat is run with seeds 1..N instead (its settings; for
a row whose outcome depends on the seed more than three repeats show): per flow, mpsim's
median, range and number of seeds below 0.9 of the kernel's median, both ways.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

import mpsim
from mpsim.kernel.report import matched_overrides
from mpsim.scenario import parse_value

DATA = Path(__file__).resolve().parents[1] / "docs" / "reports" / "kernel-results"
SCEN = Path(__file__).resolve().parents[1] / "scenarios" / "kernel"


def matched(row: str, repeat: int, seed: int, changed: dict, extra: dict[str, object], flows: list[str]) -> dict[str, float]:
    """Goodput per flow (Mbit/s) of the matched mpsim run of one repeat of a row."""
    sc, cc = row.split("/")
    ov: dict[str, object] = {"flow.*.cc": cc, "seed": seed}
    ov.update(matched_overrides(changed[row], repeat))
    for k, v in extra.items():
        if k.startswith("tcp."):
            for f in flows:
                ov[f"flow.{f}.{k}"] = v
        ov[k] = v
    r = mpsim.run(SCEN / f"{sc}.toml", overrides=ov, progress=False)
    return {f: g / 1e6 for f, g in zip(r.flows.flow, r.flows.goodput_bps)}


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    seeds = 0
    if argv[0] == "--seeds":
        seeds, argv = int(argv[1]), argv[2:]
    extra = {k: parse_value(v) for k, v in (kv.split("=", 1) for kv in argv[0].split(","))} if argv[0] != "-" else {}
    changed = json.loads((DATA / "emulator.json").read_text())["changed"]
    runs = pd.read_csv(DATA / "runs.csv")
    rows = argv[1:] or list(changed)
    if seeds:
        return by_seed(rows, seeds, extra, argv[0], changed, runs)
    print(f"| scenario / cc | flow | kernel median | mpsim matched, saved | ratio | mpsim matched | ratio | mpsim matched + {argv[0]} | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        sc, cc = row.split("/")
        rr = runs[(runs.scenario == sc) & (runs.cc == cc)]
        flows = list(rr.flow.unique())
        pairs = [(int(rep), int(rr[rr.repeat == rep].seed.iloc[0])) for rep in sorted(rr.repeat.unique())]
        base, new = goodputs(row, pairs, changed, extra, flows)
        for f in flows:
            k = rr[rr.flow == f].kernel_goodput_bps.median() / 1e6
            saved = rr[rr.flow == f].mpsim_goodput_bps.median() / 1e6
            b, n = pd.Series(base[f]).median(), pd.Series(new[f]).median()
            print(f"| {row} | {f} | {k:.2f} | {saved:.2f} | {saved / k:.3f} | {b:.2f} | {b / k:.3f} | {n:.2f} | {n / k:.3f} |")
    return 0


def goodputs(row: str, pairs: list[tuple[int, int]], changed: dict, extra: dict[str, object],
             flows: list[str]) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Per flow, the matched runs' goodputs (Mbit/s) for each (repeat, seed) pair: as saved,
    and with `extra`."""
    base: dict[str, list[float]] = {}
    new: dict[str, list[float]] = {}
    for rep, seed in pairs:
        for out, ex in ((base, {}), (new, extra)):
            for f, g in matched(row, rep, seed, changed, ex, flows).items():
                out.setdefault(f, []).append(g)
    return base, new


def by_seed(rows: list[str], seeds: int, extra: dict[str, object], label: str, changed: dict, runs: pd.DataFrame) -> int:
    """Each row's first repeat with seeds 1..`seeds`, as saved and with `extra`."""
    print(f"| scenario / cc | flow | kernel median | mpsim, seeds 1-{seeds}: median (min-max), below 0.9 | ratio | + {label}: median (min-max), below 0.9 | ratio |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        sc, cc = row.split("/")
        rr = runs[(runs.scenario == sc) & (runs.cc == cc)]
        flows = list(rr.flow.unique())
        rep = int(sorted(rr.repeat.unique())[0])
        got = goodputs(row, [(rep, seed) for seed in range(1, seeds + 1)], changed, extra, flows)
        for f in flows:
            k = rr[rr.flow == f].kernel_goodput_bps.median() / 1e6
            cells = []
            for out in got:
                v = pd.Series(out[f])
                cells.append(f"{v.median():.2f} ({v.min():.2f}-{v.max():.2f}), {int((v < 0.9 * k).sum())} | {v.median() / k:.3f}")
            print(f"| {row} | {f} | {k:.2f} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
