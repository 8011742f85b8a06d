"""CMT scheduling through the schedulers of `sched/` (`scheduler` on an SCTP CMT flow)."""

from __future__ import annotations

import pytest

import mpsim
from mpsim.validate import sctp as v

SMALL_BUFFER = 'paths = ["a", "b"]\ntransport = "sctp"\ncmt = true\nsctp = { rcv_buf = "128KB" }\n'


def run(flow: str) -> dict:
    return mpsim.run(v.two_paths(flow, duration="20s"), progress=False, seed=1).summary


def share_b(f: dict) -> float:
    return f["subflows"][1]["bytes_sent"] / sum(s["bytes_sent"] for s in f["subflows"])


def test_round_robin_by_name_is_the_default_bit_for_bit():
    text = open("scenarios/sctp/cmt_two_paths.toml").read()
    a = mpsim.run(text, progress=False, overrides={"duration": "15s"})
    b = mpsim.run(text.replace("cmt = true\n", 'cmt = true\nscheduler = "round_robin"\n'), progress=False, overrides={"duration": "15s"})
    sa, sb = dict(a.summary), dict(b.summary)
    sa.pop("wall_s", None), sb.pop("wall_s", None)
    assert sa == sb
    assert a.flow_series.equals(b.flow_series) and a.subflow_series.equals(b.subflow_series)


def test_the_scheduler_decides_where_new_data_goes():
    rr = run(SMALL_BUFFER)["flows"][0]
    low = run(SMALL_BUFFER + 'scheduler = "lowest_rtt"\n')["flows"][0]
    blest = run(SMALL_BUFFER + 'scheduler = "blest"\n')["flows"][0]
    assert (rr["scheduler"], low["scheduler"], blest["scheduler"]) == ("round_robin", "lowest_rtt", "blest")
    # round-robin splits evenly; lowest-RTT fills the fast path first, so with a small receive
    # window little goes to the slow one; BLEST holds back even more
    assert share_b(rr) > 0.4
    assert share_b(low) < 0.15
    assert share_b(blest) < share_b(low)


@pytest.mark.parametrize("name", ["redundant", "otias"])
def test_an_unsupported_scheduler_is_one_clear_error(name):
    with pytest.raises(mpsim.ScenarioError, match=r"flow\[0\]\.scheduler.*supported: round_robin, lowest_rtt, blest, ecf"):
        run(SMALL_BUFFER + f'scheduler = "{name}"\n')


def test_the_validation_table_has_every_supported_scheduler():
    rows = v.sched_check(seeds=1, duration="15s", bufs=("128KB",))
    assert [r["scheduler"] for r in rows if r["loss"] == "0%"] == ["round_robin", "lowest_rtt", "blest", "ecf"]
    assert all(r["goodput_mbps"] > 5 for r in rows)
