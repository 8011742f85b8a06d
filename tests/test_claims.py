"""The shared claim machinery: one rule decides every reproduction's verdicts."""

import math

import pandas as pd
import pytest

from mpsim.reproduce import claims as C


def test_decide_follows_the_interval():
    assert C.decide([1.0, 2.0, 1.5, 1.2], "higher").verdict == C.HOLDS
    assert C.decide([1.0, 2.0, 1.5, 1.2], "lower").verdict == C.FAILS
    assert C.decide([-1.0, 2.0, 0.5], "higher").verdict == C.OPEN
    k = C.decide([0.0, 0.0, 0.0], "lower")
    assert k.verdict == C.FAILS and k.identical
    assert C.decide([3.0], "higher").verdict == C.OPEN
    assert C.decide([], "higher").n == 0
    k = C.decide([1.0, 3.0], "higher")
    # two pairs: t(1) = 12.706, sd = sqrt(2), half = 12.706
    assert k.mean == 2.0 and math.isclose(k.half, 12.706, rel_tol=1e-3) and k.verdict == C.OPEN
    # nan pairs are left out
    assert C.decide([1.0, float("nan"), 1.1, 1.2], "higher").n == 3


def test_combine_and_credit():
    assert C.combine([C.HOLDS, C.HOLDS]) == C.HOLDS
    assert C.combine([C.HOLDS, C.OPEN]) == C.OPEN
    assert C.combine([C.HOLDS, C.FAILS, C.OPEN]) == C.FAILS
    assert C.combine([]) == C.OPEN
    assert C.credit(C.HOLDS, {"off": C.OPEN}) == C.NEEDS
    assert C.credit(C.HOLDS, {"off": C.FAILS, "other": C.HOLDS}) == C.WITHOUT
    assert C.credit(C.HOLDS, {}) == C.NO_CONTROL
    assert C.credit(C.OPEN, {"off": C.HOLDS}) == C.OPEN


def test_the_printed_rule_is_the_rule_applied():
    text = "\n".join(C.rule_markdown())
    for word in (C.HOLDS, C.FAILS, C.OPEN, C.WITHOUT, "95%", "exactly zero", "fewer than two seeds", "every point", "+ 1000"):
        assert word in text, word
    for p in C.PERTURBATIONS:
        assert p.name in text
    # what the text says, applied: a single seed is not resolved, identical runs do not hold
    assert C.decide([5.0], "higher").verdict == C.OPEN
    assert C.decide([0.0, 0.0], "higher").verdict == C.FAILS


def test_scale_value_keeps_units_and_whole_queues():
    assert C.scale_value("10Mbps", 1.2) == "12Mbps"
    assert C.scale_value("384kbps", 0.8) == "307.2kbps"
    assert C.scale_value("17.5ms", 2) == "35ms"
    assert C.scale_value("50pkt", 0.5, whole=True) == "25pkt"
    assert C.scale_value("1pkt", 0.5, whole=True) == "1pkt"
    assert C.scale_value("45KB", 2, whole=True) == "90KB"
    assert C.scale_value(3, 0.5, whole=True) == 2
    with pytest.raises(ValueError):
        C.scale_value("fast", 2)


def test_perturbations_scale_links_only():
    d = {"link": [{"name": "a", "rate": "10Mbps", "delay": "10ms", "queue": "100pkt", "loss": "1%"}], "flow": [{"app": {"kind": "cbr", "rate": "1Mbps"}}]}
    out = C.Perturbation("x", rate=0.8, delay=1.2, queue=0.5).apply(d)
    assert out["link"][0] == {"name": "a", "rate": "8Mbps", "delay": "12ms", "queue": "50pkt", "loss": "1%"}
    assert out["flow"] == d["flow"] and d["link"][0]["rate"] == "10Mbps"


def _table(effect, control_effect, seeds=5, perturbed=None):
    """A fake run table: metric m of the baseline is 10 + noise; scheme adds `effect`, the
    control `control_effect`; under `perturbed` perturbation names the scheme adds the given
    effect instead."""
    rows = []
    noise = [0.01, -0.02, 0.015, -0.005, 0.0, 0.02, -0.01]
    for pert, eff in [(C.BASE, effect)] + list((perturbed or {}).items()):
        for p in ("p1", "p2"):
            for s in range(1, seeds + 1):
                base = 10 + s
                rows.append({"arm": "base", "point": p, "perturbation": pert, "seed": s, "m": base})
                rows.append({"arm": "scheme", "point": p, "perturbation": pert, "seed": s, "m": base + eff + noise[s % 7]})
                if pert == C.BASE:
                    rows.append({"arm": "off", "point": p, "perturbation": pert, "seed": s, "m": base + control_effect + noise[(s + 3) % 7]})
    return pd.DataFrame(rows)


CLAIM = C.Claim("k", "scheme raises m", "m", "higher", "scheme", "base", ("p1", "p2"), mechanism="the trick", controls=("off",), relative=False)


def test_evaluate_credits_the_mechanism_only_when_the_control_fails():
    (r,) = C.evaluate([CLAIM], _table(1.0, 0.0))
    assert r.verdict == C.HOLDS and r.credit == C.NEEDS
    assert r.control_verdicts == {"off": C.OPEN}
    assert r.mechanism_effect["off"]["p1"].verdict == C.HOLDS
    (r,) = C.evaluate([CLAIM], _table(1.0, 1.0))
    assert r.verdict == C.HOLDS and r.credit == C.WITHOUT
    (r,) = C.evaluate([CLAIM], _table(-1.0, 0.0))
    assert r.verdict == C.FAILS and r.credit == C.FAILS


def test_evaluate_marks_fragile_verdicts_with_the_perturbations_that_flip_them():
    (r,) = C.evaluate([CLAIM], _table(1.0, 0.0, perturbed={"rates ×0.8": 1.0, "queues ×2": -1.0}))
    assert not r.robust
    assert r.flips == [f"queues ×2: {C.FAILS}"]
    assert r.robustness().startswith("fragile")
    (r,) = C.evaluate([CLAIM], _table(1.0, 0.0, perturbed={"rates ×0.8": 1.0}))
    assert r.robust and r.robustness() == "robust"
    (r,) = C.evaluate([CLAIM], _table(1.0, 0.0))
    assert r.robustness() == "not tested"


def test_relative_differences_are_in_percent_of_the_baseline():
    c = C.Claim("k", "t", "m", "higher", "scheme", "base", ("p1",))
    t = pd.DataFrame([{"arm": a, "point": "p1", "perturbation": C.BASE, "seed": 1, "m": v} for a, v in (("scheme", 11.0), ("base", 10.0))])
    assert C.paired(t, c, "scheme", "p1") == [pytest.approx(10.0)]


def test_markdown_and_frame_carry_every_check():
    (r,) = results = C.evaluate([CLAIM], _table(1.0, 0.0, perturbed={"other seeds": 1.0}))
    text = "\n".join(C.markdown(results, {"scheme": "the scheme", "off": "the scheme without the trick"}))
    assert "| scheme raises m | base | holds (2 of 2 points hold) | the trick | holds and needs the mechanism | vs off: better at 2 of 2 | robust |" in text
    assert "How every verdict is decided" in text and "control off − base" in text
    n, decided, chance = C.counts(results)
    assert (n, decided) == (2, 2) and math.isclose(chance, 0.1)
    f = C.to_frame(results, "paper")
    assert len(f) == 2 + 2 + 2 + 2
    assert set(f["perturbation"]) == {C.BASE, "other seeds"}


def test_claims_refuse_incomplete_declarations():
    with pytest.raises(ValueError):
        C.Claim("k", "t", "m", "bigger", "a", "b", ("p",))
    with pytest.raises(ValueError):
        C.Claim("k", "t", "m", "higher", "a", "b", ())
    with pytest.raises(ValueError):
        C.Claim("k", "t", "m", "higher", "a", "b", ("p",), controls=("c",))


def test_run_pairs_seeds_and_perturbs_only_scheme_and_baseline():
    scen = lambda arm, point, seed: {"link": [{"name": "l", "rate": "10Mbps", "delay": "5ms", "queue": "10pkt"}], "arm": arm, "point": point, "seed": seed}
    study = C.Study(scen, lambda rows: {}, [CLAIM])
    jobs = C._jobs(study, 2, C.PERTURBATIONS)
    keys = [k for k, _, _ in jobs]
    assert len(keys) == len(set(keys))
    base = [k for k in keys if k[2] == C.BASE]
    assert {k[0] for k in base} == {"scheme", "base", "off"}
    assert {k[0] for k in keys if k[2] != C.BASE} == {"scheme", "base"}
    other = [(k, scen, seed) for k, scen, seed in jobs if k[2] == "other seeds"]
    assert all(seed == scen["seed"] == k[3] + C.DISJOINT_OFFSET for k, scen, seed in other)
    slow = next(s for k, s, _ in jobs if k[2] == "rates ×0.8")
    assert slow["link"][0]["rate"] == "8Mbps"


def test_summary_reports_the_mechanism_where_the_claim_holds_only_in_part():
    t = _table(1.0, 0.0)
    t.loc[(t["arm"] == "scheme") & (t["point"] == "p2"), "m"] -= 1.0  # no effect at p2
    (r,) = C.evaluate([CLAIM], t)
    assert r.verdict == C.OPEN and r.points["p1"].verdict == C.HOLDS
    (row,) = C.summary_rows([r])
    assert row[4] == "where it holds (1 of 2 points): needs it at 1, holds without it at 0"
    assert row[5] == "vs off: better at 1 of 2"


def test_the_index_gathers_every_papers_summary(tmp_path):
    (r,) = results = C.evaluate([CLAIM], _table(1.0, 0.0))
    for paper in ("a", "b"):
        (tmp_path / paper).mkdir()
        C.write(results, tmp_path / paper, paper)
    text = "\n".join(C.index_markdown(tmp_path, ["a", "b", "missing"]))
    assert "Verdicts: holds 2, does not hold 0, not resolved 0 of 2 claims." in text
    assert text.count("| scheme raises m | base | holds (2 of 2 points hold) |") == 2
    assert C.index_markdown(tmp_path, ["missing"]) == []
