"""Claims as data, decided the same way for every reproduction.

A reproduction declares its paper's claims once (:class:`Claim`: the metric, the scheme, the
baseline the paper compared with, the direction, the operating points, and the mechanism the
claim credits with the arms that switch it off) and a :class:`Study` that builds the scenario
of any arm at any operating point and reads the metrics of one run. :func:`run` runs what the
claims need, :func:`evaluate` decides them, and :func:`markdown` writes the report's verdict
section, the rule included: the text of the rule is generated here, from the same constants
and the same functions that apply it, so a report cannot state one rule and apply another.

Three questions are asked of every claim:

1. **Does it hold?** At each operating point, the per-seed paired differences scheme −
   baseline (same seed: same random draws), their mean and 95% Student-t interval
   (:func:`decide`). Across its points a claim holds only where it holds at every point.
2. **Does it need the mechanism it credits?** The same claim decided again with the scheme
   replaced by each control arm (the scheme with the mechanism switched off). A claim that
   holds is credited to the mechanism only if no control makes it hold too.
3. **Is it robust?** The scheme and baseline runs repeated under perturbed scenarios (link
   rates and delays ×0.8 and ×1.2, queues ×0.5 and ×2) and on a disjoint set of seeds; the
   verdict is robust if none of them changes it, fragile otherwise (the report names the
   perturbations that flip it).
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from .. import api
from ..progress import stderr_is_tty

#: confidence of every interval and check
CONFIDENCE = 0.95
HOLDS = "holds"
FAILS = "does not hold"
OPEN = "not resolved"
VERDICTS = (HOLDS, FAILS, OPEN)
#: what a verdict says about the mechanism the claim credits
NEEDS = "holds and needs the mechanism"
WITHOUT = "holds without it too"
NO_CONTROL = "holds (no control run)"
#: the seeds of the disjoint-seed perturbation are these plus the base seeds
DISJOINT_OFFSET = 1000
BASE = "base"


# ------------------------------------------------------------------------------------------
# declarations


@dataclass(frozen=True)
class Claim:
    """One claim of a paper.

    ``scheme`` and ``baseline`` name arms of the study; ``points`` name its operating points.
    ``relative``: differences in % of the baseline's value (seed by seed); otherwise in the
    metric's own unit (``unit``). ``mechanism`` says what the claim credits and ``controls``
    the arms that run the scheme with that mechanism off; a claim that credits nothing
    (a statement about the model, say) has neither.
    """

    key: str
    text: str
    metric: str
    better: str
    scheme: str
    baseline: str
    points: tuple[str, ...]
    mechanism: str = ""
    controls: tuple[str, ...] = ()
    relative: bool = True
    unit: str = ""

    def __post_init__(self) -> None:
        if self.better not in ("higher", "lower"):
            raise ValueError(f"claim {self.key!r}: better must be 'higher' or 'lower', not {self.better!r}")
        if not self.points:
            raise ValueError(f"claim {self.key!r}: name at least one operating point")
        if self.controls and not self.mechanism:
            raise ValueError(f"claim {self.key!r}: controls switch off a mechanism; name it")

    def arms(self) -> tuple[str, ...]:
        return (self.scheme, self.baseline, *self.controls)


@dataclass(frozen=True)
class Perturbation:
    """A change of the whole scenario: link rates, delays or queues scaled, or other seeds."""

    name: str
    rate: float = 1.0
    delay: float = 1.0
    queue: float = 1.0
    seed_offset: int = 0
    #: a study's own change of the scenario dict (e.g. another stream rate), applied after
    #: the scaling; it must return the changed dict
    edit: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def apply(self, d: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(d)
        if self.edit is not None:
            out = self.edit(out)
        for link in out.get("link", []):
            for key, factor in (("rate", self.rate), ("delay", self.delay), ("queue", self.queue)):
                if factor != 1.0 and key in link:
                    link[key] = scale_value(link[key], factor, whole=key == "queue")
        return out


PERTURBATIONS: tuple[Perturbation, ...] = (
    Perturbation("rates ×0.8", rate=0.8),
    Perturbation("rates ×1.2", rate=1.2),
    Perturbation("delays ×0.8", delay=0.8),
    Perturbation("delays ×1.2", delay=1.2),
    Perturbation("queues ×0.5", queue=0.5),
    Perturbation("queues ×2", queue=2.0),
    Perturbation("other seeds", seed_offset=DISJOINT_OFFSET),
)

_VALUE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z%]*)\s*$")


def scale_value(v: Any, factor: float, whole: bool = False) -> Any:
    """``"10Mbps"`` × 1.2 is ``"12Mbps"``: a number with a unit scaled, the unit kept. With
    ``whole``, rounded to a whole number of at least 1 (queue sizes)."""
    if isinstance(v, bool):
        raise ValueError(f"cannot scale {v!r}")
    if isinstance(v, (int, float)):
        x = v * factor
        return max(1, round(x)) if whole else x
    m = _VALUE.match(str(v))
    if not m:
        raise ValueError(f"cannot scale {v!r}: expected a number with a unit, like '10Mbps'")
    x = float(m.group(1)) * factor
    if whole:
        x = max(1, round(x))
        return f"{x}{m.group(2)}"
    return f"{x:.6g}{m.group(2)}"


@dataclass
class Study:
    """What a reproduction gives the claims: ``scenario(arm, point, seed)`` builds the scenario
    dict of an arm at an operating point for one seed (most ignore the seed; one that draws
    parameters per seed, like seed 000's delays, uses it), and ``measure(rows)`` reads one
    run's metrics from its rows of :func:`mpsim.sweep` (one row per flow) into a dict."""

    scenario: Callable[[str, str, int], dict[str, Any]]
    measure: Callable[[Any], Mapping[str, float]]
    claims: Sequence[Claim]
    #: for the report: a short description of each arm
    arms: Mapping[str, str] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------
# deciding


@dataclass(frozen=True)
class Check:
    """One decided comparison: the mean of the paired differences, the half-width of its 95%
    interval, the number of pairs and the verdict."""

    mean: float
    half: float
    n: int
    verdict: str
    identical: bool = False

    def interval(self, unit: str) -> str:
        if self.n == 0:
            return "no data"
        if math.isnan(self.half):
            return f"{self.mean:+.3g}{unit} (one seed)"
        return f"{self.mean:+.3g}{unit} [{self.mean - self.half:+.3g}, {self.mean + self.half:+.3g}]"


def t_quantile(df: int) -> float:
    """The two-sided quantile of Student's t at :data:`CONFIDENCE` (nan below one degree of
    freedom)."""
    assert CONFIDENCE == 0.95, "the table in api.t95 is for 95%"
    return api.t95(df)


def decide(diffs: Iterable[float], better: str) -> Check:
    """The verdict on paired differences (scheme − baseline) for a claim that the scheme is
    ``better`` ("higher" or "lower"): **holds** if the whole interval lies on the claimed side
    of zero; **does not hold** if it lies wholly on the other side, or if every difference is
    exactly zero (the two arms gave identical runs); **not resolved** otherwise, including
    with fewer than two pairs."""
    xs = [float(x) for x in diffs if not math.isnan(float(x))]
    n = len(xs)
    if n == 0:
        return Check(math.nan, math.nan, 0, OPEN)
    m = sum(xs) / n
    if all(x == 0 for x in xs):
        return Check(0.0, 0.0, n, FAILS, identical=True)
    if n < 2:
        return Check(m, math.nan, n, OPEN)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    half = t_quantile(n - 1) * sd / math.sqrt(n)
    sign = 1 if better == "higher" else -1
    lo, hi = sorted((sign * (m - half), sign * (m + half)))
    if lo > 0:
        return Check(m, half, n, HOLDS)
    if hi < 0:
        return Check(m, half, n, FAILS)
    return Check(m, half, n, OPEN)


def combine(verdicts: Sequence[str]) -> str:
    """A claim over several operating points: holds where it holds at every point, does not
    hold where it does not hold at one point at least, not resolved otherwise."""
    if verdicts and all(v == HOLDS for v in verdicts):
        return HOLDS
    if any(v == FAILS for v in verdicts):
        return FAILS
    return OPEN


def credit(verdict: str, control_verdicts: Mapping[str, str]) -> str:
    """What a verdict says of the mechanism: a claim that holds needs the mechanism if no
    control (the scheme with the mechanism off) makes it hold too."""
    if verdict != HOLDS:
        return verdict
    if not control_verdicts:
        return NO_CONTROL
    if any(v == HOLDS for v in control_verdicts.values()):
        return WITHOUT
    return NEEDS


# ------------------------------------------------------------------------------------------
# running


def _one(job: tuple[dict[str, Any], int]) -> Any:
    scen, seed = job
    frame = api.sweep(scen, None, [seed], processes=1, progress=False, validate=False).frame
    failed = frame.attrs.get("failed")
    if failed or frame.empty:
        raise RuntimeError(f"a claim run failed (seed {seed}): {failed[0] if failed else 'no rows'}")
    return frame


def _jobs(study: Study, seeds: int, perturbations: Sequence[Perturbation]) -> list[tuple[tuple[str, str, str, int], dict[str, Any], int]]:
    """(key, scenario, seed) of every run the claims need; key = (arm, point, perturbation,
    seed). Base runs: every arm of every claim at its points; perturbed runs: the scheme and
    the baseline."""
    want: dict[tuple[str, str, str], Perturbation | None] = {}
    for c in study.claims:
        for p in c.points:
            for arm in c.arms():
                want.setdefault((arm, p, BASE), None)
            for pert in perturbations:
                for arm in (c.scheme, c.baseline):
                    want.setdefault((arm, p, pert.name), pert)
    jobs = []
    for (arm, p, pname), pert in want.items():
        offset = pert.seed_offset if pert is not None else 0
        for s in range(1, seeds + 1):
            scen = study.scenario(arm, p, s + offset)
            if pert is not None:
                scen = pert.apply(scen)
            jobs.append(((arm, p, pname, s), scen, s + offset))
    return jobs


def run(study: Study, seeds: int, processes: int | None = 1, perturbations: Sequence[Perturbation] = PERTURBATIONS, progress: bool = True) -> Any:
    """Runs every arm, point, perturbation and seed the claims need; one row per run with
    columns arm, point, perturbation, seed (the pairing index 1..seeds; a disjoint-seed run
    keeps its pairing index, its real seed is in ``run_seed``) and the measured metrics."""
    import multiprocessing
    import os

    import pandas as pd
    from tqdm import tqdm

    jobs = _jobs(study, seeds, perturbations)
    work = [(scen, seed) for _, scen, seed in jobs]
    n = processes or os.cpu_count() or 1
    bar = tqdm(total=len(work), desc="claim runs", unit="run", disable=not progress or not stderr_is_tty(), leave=False)
    if n <= 1:
        frames = []
        for w in work:
            frames.append(_one(w))
            bar.update()
    else:
        pool = multiprocessing.get_context("spawn").Pool(n)
        try:
            frames = []
            for f in pool.imap(_one, work, chunksize=4):
                frames.append(f)
                bar.update()
        finally:
            pool.close()
            pool.join()
    bar.close()
    rows = []
    for ((arm, p, pname, s), _, seed), frame in zip(jobs, frames):
        row = {"arm": arm, "point": p, "perturbation": pname, "seed": s, "run_seed": seed}
        row.update({k: float(v) for k, v in study.measure(frame).items()})
        rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------
# evaluating


def paired(table: Any, claim: Claim, arm: str, point: str, perturbation: str = BASE) -> list[float]:
    """Per-seed differences ``arm`` − baseline of the claim's metric at ``point`` (in % of the
    baseline if the claim is relative; seeds where the baseline is 0 or either is missing are
    left out)."""
    sel = table[(table["point"] == point) & (table["perturbation"] == perturbation)]
    a = sel[sel["arm"] == arm].set_index("seed")[claim.metric]
    b = sel[sel["arm"] == claim.baseline].set_index("seed")[claim.metric]
    both = a.to_frame("a").join(b.to_frame("b"), how="inner").dropna()
    if claim.relative:
        both = both[both["b"] != 0]
        return [100.0 * (x / y - 1.0) for x, y in zip(both["a"], both["b"])]
    return [float(x - y) for x, y in zip(both["a"], both["b"])]


@dataclass
class Result:
    """Everything decided about one claim."""

    claim: Claim
    #: point -> check of scheme vs baseline (base runs)
    points: dict[str, Check]
    verdict: str
    #: control arm -> (point -> check of control vs baseline), and its combined verdict
    controls: dict[str, dict[str, Check]]
    control_verdicts: dict[str, str]
    #: control arm -> (point -> check of scheme vs control, as a relative or absolute
    #: difference like the claim's): how much the mechanism itself moves the metric
    mechanism_effect: dict[str, dict[str, Check]]
    credit: str
    #: perturbation -> (point -> check), and its combined verdict
    perturbed: dict[str, dict[str, Check]]
    perturbed_verdicts: dict[str, str]

    @property
    def robust(self) -> bool:
        return all(v == self.verdict for v in self.perturbed_verdicts.values())

    @property
    def flips(self) -> list[str]:
        return [f"{p}: {v}" for p, v in self.perturbed_verdicts.items() if v != self.verdict]

    def robustness(self) -> str:
        if not self.perturbed_verdicts:
            return "not tested"
        return "robust" if self.robust else "fragile (" + "; ".join(self.flips) + ")"


def _scheme_vs(table: Any, claim: Claim, control: str, point: str) -> Check:
    """The scheme against one of its controls, differences taken like the claim's."""
    return decide(paired(table, replace(claim, baseline=control), claim.scheme, point), claim.better)


def evaluate(claims: Sequence[Claim], table: Any) -> list[Result]:
    """Decides every claim from the table :func:`run` returns."""
    perts = [p for p in dict.fromkeys(table["perturbation"]) if p != BASE]
    out = []
    for c in claims:
        pts = {p: decide(paired(table, c, c.scheme, p), c.better) for p in c.points}
        verdict = combine([k.verdict for k in pts.values()])
        ctl = {a: {p: decide(paired(table, c, a, p), c.better) for p in c.points} for a in c.controls}
        ctl_v = {a: combine([k.verdict for k in v.values()]) for a, v in ctl.items()}
        eff = {a: {p: _scheme_vs(table, c, a, p) for p in c.points} for a in c.controls}
        per: dict[str, dict[str, Check]] = {}
        for pn in perts:
            sel = table[table["perturbation"] == pn]
            if sel.empty or not set(c.points) <= set(sel[sel["arm"] == c.scheme]["point"]):
                continue
            per[pn] = {p: decide(paired(table, c, c.scheme, p, pn), c.better) for p in c.points}
        per_v = {pn: combine([k.verdict for k in v.values()]) for pn, v in per.items()}
        out.append(Result(c, pts, verdict, ctl, ctl_v, eff, credit(verdict, ctl_v), per, per_v))
    return out


# ------------------------------------------------------------------------------------------
# writing


def rule_markdown(perturbations: Sequence[Perturbation] = PERTURBATIONS) -> list[str]:
    """The rule, in words generated from the code that applies it (checked by the tests
    against :func:`decide`, :func:`combine` and :func:`credit`)."""
    pct = f"{CONFIDENCE:.0%}"
    names = ", ".join(p.name for p in perturbations)
    return [
        "**How every verdict is decided** (one function for all reproductions, `mpsim.reproduce.claims`):",
        "",
        "- At an operating point: the per-seed paired differences scheme − baseline (same seed, so the same",
        f"  random draws; in % of the baseline where the claim is relative), their mean and {pct} Student-t",
        f"  interval. **{HOLDS}** if the interval lies wholly on the paper's side of zero; **{FAILS}** if it",
        f"  lies wholly on the other side, or if every difference is exactly zero (identical runs); **{OPEN}**",
        "  otherwise, or with fewer than two seeds.",
        f"- Over a claim's operating points: **{HOLDS}** if it holds at every point, **{FAILS}** if it does not",
        f"  hold at one point at least, **{OPEN}** otherwise.",
        "- The mechanism: the claim is decided again with the scheme replaced by each control (the scheme",
        "  with the credited mechanism switched off). A claim that holds **needs the mechanism** if no control",
        f"  holds too; if one does, it **{WITHOUT}**, and the report does not credit the mechanism.",
        f"- Robustness: the scheme and baseline runs repeated under each perturbation ({names};",
        f"  the other seeds are the base seeds + {DISJOINT_OFFSET}). **robust** if no perturbation changes the",
        "  verdict, **fragile** otherwise, with the perturbations that change it.",
        f"- Chance: with {pct} intervals, a point where the two arms do not differ at all is still decided",
        f"  either way {1 - CONFIDENCE:.0%} of the time; the report counts the decided points beside that",
        "  expectation.",
    ]


def _fmt_unit(c: Claim) -> str:
    return "%" if c.relative else (f" {c.unit}" if c.unit else "")


def point_credit(r: "Result", point: str) -> str:
    """:func:`credit` at one operating point."""
    return credit(r.points[point].verdict, {a: v[point].verdict for a, v in r.controls.items()})


def summary_rows(results: Sequence[Result], paper: str = "") -> list[list[str]]:
    """One row per claim: paper, claim, baseline, verdict (points), mechanism, needs it?,
    the mechanism's own effect (scheme against each control), robust?"""
    rows = []
    for r in results:
        c = r.claim
        held = [p for p in c.points if r.points[p].verdict == HOLDS]
        failed = sum(k.verdict == FAILS for k in r.points.values())
        verdict = f"{r.verdict} ({len(held)} of {len(c.points)} points hold" + (f", {failed} the other way" if failed else "") + ")"
        if c.mechanism and c.controls:
            if r.verdict == HOLDS:
                need = r.credit
                if r.credit == WITHOUT:
                    need += " (" + ", ".join(a for a, v in r.control_verdicts.items() if v == HOLDS) + ")"
            elif held:
                needed = sum(point_credit(r, p) == NEEDS for p in held)
                need = f"where it holds ({len(held)} of {len(c.points)} points): needs it at {needed}, holds without it at {len(held) - needed}"
            else:
                need = "—"
            effect = []
            for a, pts in r.mechanism_effect.items():
                up = sum(k.verdict == HOLDS for k in pts.values())
                down = sum(k.verdict == FAILS for k in pts.values())
                effect.append(f"vs {a}: better at {up} of {len(pts)}" + (f", worse at {down}" if down else ""))
            mech, eff = c.mechanism, "; ".join(effect)
        elif c.mechanism:
            mech, need, eff = c.mechanism, NO_CONTROL if r.verdict == HOLDS else "—", "—"
        else:
            need, mech, eff = "—", "(none credited)", "—"
        row = [c.text, c.baseline, verdict, mech, need, eff, r.robustness()]
        rows.append(([paper] if paper else []) + row)
    return rows


SUMMARY_HEADERS = ["claim (paper)", "against", "verdict", "mechanism credited", "needs the mechanism?", "the mechanism's own effect (scheme vs control, points)", "robust?"]


def counts(results: Sequence[Result]) -> tuple[int, int, float]:
    """(checks at the base points, checks decided either way, decided expected by chance)."""
    checks = [k for r in results for k in r.points.values() if k.n > 0]
    decided = [k for k in checks if k.verdict != OPEN and not k.identical]
    return len(checks), len(decided), (1 - CONFIDENCE) * len(checks)


def markdown(results: Sequence[Result], arms: Mapping[str, str] | None = None, perturbations: Sequence[Perturbation] = PERTURBATIONS) -> list[str]:
    """The report's verdict section: the summary, the rule, each claim point by point with its
    controls and perturbations, the arms."""
    from .common import md_table

    L = ["## Verdicts", ""]
    L += md_table(SUMMARY_HEADERS, summary_rows(results))
    n, decided, chance = counts(results)
    L += [
        "",
        f"{n} checks (claim × operating point); {decided} decided either way, against about {chance:.1f} expected by",
        "chance alone if no arm differed from its baseline.",
        "",
    ]
    L += rule_markdown(perturbations)
    L += ["", "### Point by point", ""]
    for r in results:
        c = r.claim
        u = _fmt_unit(c)
        L += [f"**{c.text}** — `{c.metric}` {c.better} for `{c.scheme}` than `{c.baseline}`" + (f"; credits {c.mechanism}" if c.mechanism else ""), ""]
        headers = ["point", f"{c.scheme} − {c.baseline}", "verdict"]
        for a in c.controls:
            headers += [f"control {a} − {c.baseline}", f"{c.scheme} − {a}"]
        headers += [pn for pn in r.perturbed]
        rows = []
        for p in c.points:
            k = r.points[p]
            row = [p, k.interval(u), k.verdict + (" (identical runs)" if k.identical else "")]
            for a in c.controls:
                ck = r.controls[a][p]
                row += [f"{ck.interval(u)} {ck.verdict}", f"{r.mechanism_effect[a][p].interval(u)}"]
            row += [r.perturbed[pn][p].verdict for pn in r.perturbed]
            rows.append(row)
        L += md_table(headers, rows)
        L.append("")
    if arms:
        L += ["### Arms", ""]
        L += [f"- `{a}`: {d}" for a, d in arms.items()]
        L.append("")
    return L


def to_frame(results: Sequence[Result], paper: str = "") -> Any:
    """Every check as a row: paper, claim, arm, compared with, point, perturbation, mean,
    half-width, n, verdict."""
    import pandas as pd

    rows = []
    for r in results:
        c = r.claim

        def add(arm: str, against: str, point: str, pert: str, k: Check) -> None:
            rows.append({"paper": paper, "claim": c.key, "arm": arm, "against": against, "point": point,  # noqa: B023
                         "perturbation": pert, "mean": k.mean, "half_width": k.half, "n": k.n, "verdict": k.verdict,
                         "relative": c.relative})  # noqa: B023 (called in this iteration only)

        for p, k in r.points.items():
            add(c.scheme, c.baseline, p, BASE, k)
        for a, pts in r.controls.items():
            for p, k in pts.items():
                add(a, c.baseline, p, BASE, k)
        for a, pts in r.mechanism_effect.items():
            for p, k in pts.items():
                add(c.scheme, a, p, BASE, k)
        for pn, pts in r.perturbed.items():
            for p, k in pts.items():
                add(c.scheme, c.baseline, p, pn, k)
    return pd.DataFrame(rows)


SUMMARY_CSV = "claims_summary.csv"


def write(results: Sequence[Result], out_dir: Path, paper: str) -> Path:
    """Writes ``claims.csv`` (every check) and ``claims_summary.csv`` (one row per claim, the
    report's verdict table) into ``out_dir``."""
    import pandas as pd

    path = Path(out_dir) / "claims.csv"
    to_frame(results, paper).to_csv(path, index=False)
    pd.DataFrame(summary_rows(results, paper), columns=["paper"] + SUMMARY_HEADERS).to_csv(Path(out_dir) / SUMMARY_CSV, index=False)
    return path


def index_markdown(out_root: Path, papers: Sequence[str]) -> list[str]:
    """Every paper's verdict table in one, from the ``claims_summary.csv`` each wrote."""
    import pandas as pd

    from .common import md_table

    frames = [pd.read_csv(Path(out_root) / p / SUMMARY_CSV) for p in papers if (Path(out_root) / p / SUMMARY_CSV).exists()]
    if not frames:
        return []
    f = pd.concat(frames, ignore_index=True).fillna("")
    counts = f["verdict"].map(lambda v: next(x for x in VERDICTS if str(v).startswith(x))).value_counts().reindex(list(VERDICTS), fill_value=0)
    L = [
        "# The papers' claims, reproduced",
        "",
        f"Written by `mpsim reproduce all`: every claim of the {len(frames)} reports, decided by one rule (each",
        "report states it). \"against\" names the baseline; \"needs the mechanism?\" says whether the claim",
        "still holds with the mechanism it credits switched off; \"robust?\" whether perturbed rates,",
        "delays, queues or seeds change the verdict. Each paper's folder has the report, `claims.csv`",
        "(every check) and the figures.",
        "",
        "Verdicts: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + f" of {len(f)} claims.",
        "",
    ]
    L += md_table(list(f.columns), [[str(x) for x in row] for row in f.itertuples(index=False)])
    return L + [""]
