"""Seed 002's experiment 2 under the stack options: the verdict rule can fail, the report's
stack section is computed from the runs, and the directions the report states are asserted."""

import math

import pytest

from mpsim.reproduce import buffer_size as b
from mpsim.reproduce import common


def test_the_verdict_rule_can_say_each_of_its_three_answers():
    assert b.less((1.0, 0.1), (2.0, 0.1)) == "holds"
    assert b.less((2.0, 0.1), (1.0, 0.1)) == "does not hold"
    assert b.less((1.0, 0.6), (2.0, 0.6)) == "undecided"
    # zero-width intervals (identical runs) compare exactly; equal is not below
    assert b.less((2.0, 0.0), (2.0, 0.0)) == "does not hold"
    assert b.less((1.0, math.nan), (2.0, math.nan)) == "holds"


def test_path_1_bandwidth_delay_product_includes_serialisation():
    rtt, bdp = b.path1_bdp()
    assert rtt == pytest.approx(3.232e-3, rel=1e-3)
    assert bdp == pytest.approx(4040, rel=1e-3)


def test_every_combination_of_the_options_is_run_once():
    assert len(b.STACKS) == 2 ** len(b.STACK_OPTIONS) == len(set(b.STACKS))
    assert b.STACKS[0] == ()
    assert b.LINUX_DEFAULTS in b.STACKS
    d = b._with_stack(b._scenario("100ms", "5KB", "20s", "mptcp"), ("nosack", "delack", "cubic", "join"))
    assert d["tcp"]["sack"] is False and d["tcp"]["delayed_ack"] == "linux"
    assert d["flow"][0]["join_delay"] == "linux" and d["flow"][0]["cc"] == "olia"
    d = b._with_stack(b._scenario("100ms", "5KB", "20s", "path1"), ("cubic", "join"))
    assert d["flow"][0]["cc"] == "cubic" and "join_delay" not in d["flow"][0]


def test_only_the_stack_without_sack_and_with_delayed_acks_turns_experiment_2_the_papers_way():
    """The report's finding, asserted: over 20 s, MPTCP stays above single-path TCP on path 1
    with the SACK stack and with Linux's defaults, and falls below it with SACK off and
    Linux's delayed ACKs; path 1 alone never falls behind path 2."""
    stacks = ((), b.LINUX_DEFAULTS, ("nosack", "delack"))
    frame = common.run_cases(b.stack_cases("20s", stacks), 1, 1, progress=False)
    t = b.stack_table(frame)
    assert t[()]["mp_below_p1"] == "does not hold"
    assert t[b.LINUX_DEFAULTS]["mp_below_p1"] == "does not hold"
    assert t[("nosack", "delack")]["mp_below_p1"] == "holds"
    # it is path 1 that MPTCP loses, more than path 2 adds
    v = t[("nosack", "delack")]
    assert v["path1"][0] - v["sub1"] > v["sub2"] > 0
    for v in t.values():
        assert v["p1_below_p2"] == "does not hold"


def test_the_report_has_the_stack_section_with_a_verdict_per_stack(tmp_path):
    path = b.run(tmp_path, seeds=2, quick=True, processes=1)
    text = path.read_text()
    assert "## Experiment 2 under Linux's stack options" in text
    section = text.split("## Experiment 2 under Linux's stack options")[1]
    rows = [ln for ln in section.splitlines() if ln.startswith("| ") and ("hold" in ln or "undecided" in ln)]
    assert len(rows) == len(b.STACKS)
    assert "about 4.0 KB" in text and "3.2 ms round trip" in text
    assert "### Does the direction survive a different router 1 buffer?" in text
    assert (tmp_path / "fig3_stacks_20s.png").stat().st_size > 0
    import pandas as pd

    data = pd.read_csv(tmp_path / "data.csv")
    assert set(data["experiment"]) >= {"exp1", "exp2", "buffer sweep", "exp2 stacks", "exp2 stacks, router 1 buffer"}
