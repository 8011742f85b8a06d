#!/usr/bin/env python3
"""Snapshots of every shipped scenario's output, to show that a change leaves results alone.

    python benches/snapshot.py --out DIR            # record
    python benches/snapshot.py --compare DIR        # record again and compare with DIR
    python benches/snapshot.py --light --out DIR    # summaries and series only (minutes, not
                                                    # half an hour; compare with --light too)

For each scenario under scenarios/ it records the summary (without the wall-clock field),
a SHA-256 of each time-series table, and, on a 5-second traced run of the same scenario, a
SHA-256 of the per-packet trace; on scenarios with a multipath flow, the same for every
built-in scheduler x controller. A refactoring that claims "results unchanged" must leave
every file identical; `--compare` prints the first differences and exits 1 if any. A
scheduler or controller added since the earlier snapshot adds matrix entries that the
earlier one cannot have: those are listed as added, not as differences, as long as every
earlier entry is unchanged. So are the digests of columns added since (`subflow_model`:
BBR's model in the subflow series, recorded apart from the older columns, and only where a
controller has one).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
from pathlib import Path

import mpsim

ROOT = Path(__file__).resolve().parents[1]


def digest(df) -> str | None:
    if df is None:
        return None
    return hashlib.sha256(df.to_csv(index=False, float_format="%.17g").encode()).hexdigest()


#: Keys of a snapshot that came after earlier snapshots were taken: one only the new snapshot
#: has is listed as added.
ADDED_KEYS = ("subflow_model",)


def series(res) -> dict:
    """Digests of the time series; the subflow series' model columns (`bbr_*`) apart, and
    only if some controller filled them."""
    sub = res.subflow_series
    model = [c for c in sub.columns if c.startswith("bbr_")]
    out = {"flow_series": digest(res.flow_series), "subflow_series": digest(sub.drop(columns=model)),
           "link_series": digest(res.link_series)}
    if len(sub) and sub[model].notna().any().any():
        out["subflow_model"] = digest(sub[model])
    return out


def snapshot(path: Path, light: bool = False) -> dict:
    res = mpsim.run(path, progress=False)
    summary = dict(res.summary)
    summary.pop("wall_s", None)
    if light:
        return {"summary": summary, **series(res)}
    traced = mpsim.run(path, progress=False, overrides={"duration": "5s", "metrics.warmup": "0s", "metrics.trace": True})
    return {
        "summary": summary,
        **series(res),
        "trace_5s": digest(traced.trace),
        "matrix": matrix(path),
    }


def matrix(path: Path) -> dict:
    """Every scheduler x controller on a scenario's multipath flows: 5 s traced runs."""
    base, _ = mpsim.scenario.load(path)
    # SCTP associations take their own controllers and schedulers (tested in their own suites)
    mp = lambda f: "paths" in f and f.get("transport") != "sctp"  # noqa: E731
    if not any(mp(f) for f in base.get("flow", [])):
        return {}
    out = {}
    for _, sched, _ in mpsim.components("scheduler"):
        for _, cc, _ in mpsim.components("cc"):
            d = copy.deepcopy(base)
            for f in d["flow"]:
                if mp(f):
                    f["scheduler"], f["cc"] = sched, cc
            d["duration"] = "5s"
            d.setdefault("metrics", {}).update({"warmup": "0s", "trace": True})
            res = mpsim.run(d, progress=False)
            summary = dict(res.summary)
            summary.pop("wall_s", None)
            key = f"{sched}/{cc}"
            out[key] = hashlib.sha256(json.dumps(summary, sort_keys=True).encode()).hexdigest()
            out[key + "/trace"] = digest(res.trace)
    return out


def only_added(old: dict, new: dict) -> list[str] | None:
    """The matrix keys and `ADDED_KEYS` only `new` has, if everything else (every key of
    `old`) is equal; None if anything of `old` changed."""
    fresh = [k for k in ADDED_KEYS if k in new and k not in old]
    if {k: v for k, v in old.items() if k != "matrix"} != {k: v for k, v in new.items() if k != "matrix" and k not in fresh}:
        return None
    om, nm = old.get("matrix", {}), new.get("matrix", {})
    if any(nm.get(k) != v for k, v in om.items()):
        return None
    return fresh + [k for k in nm if k not in om and not k.endswith("/trace")]


def new_components(old: dict, added: list[str]) -> list[str]:
    """The schedulers and controllers that appear in `added` matrix keys and nowhere in `old`."""
    known = {part for k in old.get("matrix", {}) for part in k.split("/")[:2]}
    return sorted({part for k in added for part in k.split("/")[:2]} - known)


def scenarios() -> list[Path]:
    return sorted(p for p in (ROOT / "scenarios").rglob("*.toml"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--out", type=Path, help="folder to record the snapshots into")
    g.add_argument("--compare", type=Path, help="folder of earlier snapshots to compare with")
    ap.add_argument("--light", action="store_true", help="summaries and series only: no traced runs, no scheduler x controller matrix")
    args = ap.parse_args(argv)
    differ = 0
    for path in scenarios():
        name = str(path.relative_to(ROOT / "scenarios")).replace("/", "__").removesuffix(".toml") + ".json"
        try:
            text = json.dumps(snapshot(path, args.light), indent=1, sort_keys=True) + "\n"
        except mpsim.ScenarioError as e:
            # a scenario this build cannot read (keys newer than it): nothing to compare
            print(f"SKIPPED  {name}: {e}")
            continue
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / name).write_text(text)
            print(f"recorded {name}")
            continue
        old = args.compare / name
        if not old.exists():
            print(f"NEW      {name} (no earlier snapshot)")
            continue
        if old.read_text() == text:
            print(f"same     {name}")
            continue
        added = only_added(json.loads(old.read_text()), json.loads(text))
        if added is not None:
            fresh = [k for k in added if k in ADDED_KEYS]
            entries = [k for k in added if k not in ADDED_KEYS]
            notes = [f"+{', '.join(fresh)}"] if fresh else []
            if entries:
                notes.append(f"+{len(entries)} matrix entries for components added since: "
                             f"{', '.join(new_components(json.loads(old.read_text()), entries))}")
            print(f"same     {name} ({'; '.join(notes)})")
            continue
        differ += 1
        print(f"DIFFERS  {name}")
        a, b = old.read_text().splitlines(), text.splitlines()
        shown = 0
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y and shown < 8:
                print(f"    line {i + 1}: {x.strip()}  ->  {y.strip()}")
                shown += 1
    if args.compare:
        print(f"{differ} of {len(scenarios())} scenarios differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
