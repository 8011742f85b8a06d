"""Validation of the TCP model against the Padhye and Mathis formulas, a loss-free link and
fairness (scenarios/validation). Shorter runs and fewer seeds than `make validate`."""

import math

import pytest

from mpsim.validate import tcp as v

pytestmark = pytest.mark.slow


def test_formulas_match_the_textbook_example():
    # ALGORITHMS.md §11: MSS 1460 B, RTT 100 ms, p = 1%: Mathis 1.43 Mbit/s, Padhye (T0 = 4 RTT) 1.31
    assert v.mathis_bps(0.01, 0.1) == pytest.approx(1.43e6, rel=0.01)
    assert v.padhye_bps(0.01, 0.1, 0.4) == pytest.approx(1.31e6, rel=0.01)
    # the window limit caps it
    assert v.padhye_bps(1e-6, 0.1, 0.4, wmax=10) == pytest.approx(10 / 0.1 * 1460 * 8)


def test_goodput_within_20_percent_of_padhye_at_every_point():
    grid = v.summarize_grid(v.tcp_loss_grid(seeds=2, duration="300s", progress=False))
    assert len(grid) == len(v.LOSS_RATES) * len(v.DELAYS)
    bad = grid[~grid["within"]]
    assert bad.empty, bad.to_string()
    # at 1% loss and 20 ms, sound simulators land at 0.90-0.96 of Mathis
    row = grid[(grid["rtt_nominal_ms"] == 20) & (grid["loss"] == "1%")].iloc[0]
    assert 0.88 <= row["vs_mathis"] <= 1.0
    assert not math.isnan(row["vs_padhye_ind_ci95"])


def test_loss_free_link_is_filled_when_the_queue_holds_a_bdp():
    assert v.lossfree_check(seeds=2)["fraction"] >= v.LOSSFREE_TARGET


def test_equal_rtt_flows_share_fairly():
    assert v.fairness_check(seeds=2)["jain_min"] > v.JAIN_TARGET


def test_report_renders(tmp_path):
    runs = v.tcp_loss_grid(seeds=1, duration="60s", progress=False)
    text = v.report(v.summarize_grid(runs), {"goodput_bps": 1, "ceiling_bps": 1, "fraction": 1}, {"jain_min": 1, "jain_mean": 1, "total_bps_mean": 1}, "cmd")
    assert "| 20 | 1% |" in text and "Padhye" in text
