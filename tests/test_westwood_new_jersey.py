"""Westwood+ and TCP New Jersey against Reno on one lossy path, and New Jersey's loss
classification with the congestion warning (python/mpsim/validate/westwood_new_jersey.py). Fewer seeds
and shorter runs than the report in docs/reports/westwood_new_jersey.md."""

import math

import pytest

from mpsim.validate import westwood_new_jersey as w

SEEDS, SECONDS = 2, 24


@pytest.fixture(scope="module")
def loss_rows():
    return w.random_loss_rows(SEEDS, SECONDS)


@pytest.fixture(scope="module")
def cls_rows():
    return w.classification_rows(SEEDS, SECONDS)


def test_both_hold_up_better_than_reno_under_random_loss(loss_rows):
    for r in loss_rows:
        if r["loss"] == "0.1%":
            continue
        reno = r["reno"][0]
        assert r["westwood"][0] > 1.2 * reno, r
        assert r["new_jersey"][0] > 1.2 * reno, r
        assert r["new_jersey_cw"][0] > 1.2 * reno, r
        # no warning on the path: New Jersey takes every fast retransmit for random loss
        assert r["new_jersey_congestion"] == 0 and r["new_jersey_random"] > 0, r
        assert r["new_jersey_marked"] == 0, r
        # with it, some are taken for congestion (the link marks)
        assert r["new_jersey_cw_congestion"] > 0 and r["new_jersey_cw_marked"] > 0, r


def test_no_controller_exceeds_the_link(loss_rows):
    for r in loss_rows:
        for key in ("reno", "westwood", "new_jersey", "new_jersey_cw"):
            assert 0 < r[key][0] <= w.RATE_BPS, r


def test_with_the_warning_congestion_losses_are_taken_for_congestion(cls_rows):
    on, off, mixed = cls_rows
    assert on["cw"] and on["marks"] > 0 and on["queue_drops"] > 0
    assert on["congestion_share"] >= 0.9, on
    assert off["congestion"] == 0 and off["random"] > 0, off
    assert mixed["congestion"] > 0 and mixed["random"] > 0, mixed


def test_the_report_renders(loss_rows, cls_rows):
    text = w.render(loss_rows, cls_rows, SEEDS, SECONDS)
    assert text.count("| 20 ms |") == 3 and text.count("| 100 ms |") == 3
    assert "congestion only, CW on" in text
    assert not any(math.isnan(r["congestion_share"]) for r in cls_rows)
