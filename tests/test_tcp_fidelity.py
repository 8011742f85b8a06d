"""TCP on long, deep-buffered paths: loss-free Reno against the sawtooth model, LIA and OLIA
over two such paths, and the two-path case of 10 and 50 ms (python/mpsim/validate/tcp_fidelity.py).
Fewer cells and shorter runs than `make tcp-fidelity`, which writes docs/reports/tcp_fidelity.md."""

import pytest

from mpsim.validate import tcp_fidelity as t

pytestmark = pytest.mark.slow

RTTS = [50, 200, 400]
BUFFERS = [0.25, 0.5, 1, 4]


def test_sawtooth_model():
    # no buffer: the classic 3/4; one BDP or more: the link is always busy
    assert t.sawtooth_utilisation(0) == pytest.approx(0.75)
    assert t.sawtooth_utilisation(1) == 1.0
    assert t.sawtooth_utilisation(4) == 1.0
    assert t.sawtooth_utilisation(0.5) == pytest.approx(0.964, abs=1e-3)
    us = [t.sawtooth_utilisation(b / 20) for b in range(21)]
    assert us == sorted(us)


@pytest.fixture(scope="module")
def single():
    return t.single_table(RTTS, BUFFERS, cycles=3)


def test_one_reno_flow_follows_the_sawtooth_without_a_timeout(single):
    bad = [r for r in single if not t.within(r)]
    assert not bad, bad


def test_lia_and_olia_over_two_paths_get_the_sum_of_single_flows(single):
    rows = t.multipath_table([r for r in single if r["rtt_ms"] == 200 and r["buffer_bdp"] in (0.5, 4)], cycles=3)
    for r in rows:
        assert r["timeouts"] == 0, r
        assert r["vs_singles"] >= 0.97, r


def test_two_paths_of_10_and_50_ms_are_both_filled():
    for r in t.two_path_case():
        assert (r["timeouts1"], r["timeouts2"]) == (0, 0), r
        assert r["path1_mbps"] > 9.4 and r["path2_mbps"] > 9.4, r


def test_rfc6298_timer_is_selectable():
    # the same long fat cell with the 1 s floor: the RTT (up to 2 s with a 4-BDP queue)
    # outgrows the RFC timer, which then fires at the peaks of the sawtooth
    linux = t.run_cell(400, 4, 1)
    rfc = t.run_cell(400, 4, 1, tcp={"rto": "rfc6298"})
    assert linux["timeouts"] == 0
    assert rfc["timeouts"] > 0
