"""Per-destination time series of SCTP associations (`subflow_series`)."""

from __future__ import annotations

import numpy as np

import mpsim

CMT = "scenarios/sctp/cmt_two_paths.toml"


def run(**over):
    return mpsim.run(CMT, progress=False, overrides={"duration": "12s", "metrics.interval": "500ms", **over})


def test_one_row_per_destination_and_interval():
    res = run()
    fs, ss = res.flow_series, res.subflow_series
    assert set(ss["path"]) == {"a", "b"}
    for path in ("a", "b"):
        rows = ss[ss["path"] == path]
        assert list(rows["time_s"]) == list(fs["time_s"])
        assert (rows["cwnd_bytes"] > 0).all()
        assert rows["rto_ms"].min() >= 1000.0  # RTO.Min
        assert rows[["dsr_bps", "in_path_list", "rec_window_pkts"]].isna().all().all()
    a = ss[ss["path"] == "a"].reset_index(drop=True)
    b = ss[ss["path"] == "b"].reset_index(drop=True)
    # the flow's window is the destinations' windows added up, and so is its flight
    assert (a["cwnd_bytes"] + b["cwnd_bytes"] == fs["cwnd_bytes"]).all()
    assert (a["in_flight_bytes"] + b["in_flight_bytes"] == fs["in_flight_bytes"]).all()
    # every byte that reached the receiver came by one destination: delivered in order or
    # waiting in the receive buffer
    assert (a["delivered_bytes"] + b["delivered_bytes"] == fs["delivered_bytes"] + fs["rcv_buffer_bytes"]).all()
    # goodput per interval from the destination's bytes
    for d in (a, b):
        gp = np.diff(d["delivered_bytes"].to_numpy()) * 8 / 0.5
        assert np.allclose(d["goodput_bps"].to_numpy()[1:], gp)
    # the 30 ms path has the longer smoothed RTT; both carry data under CMT
    late = slice(len(a) // 2, None)
    assert a["srtt_ms"][late].mean() < b["srtt_ms"][late].mean()
    assert a["goodput_bps"][late].mean() > 0 and b["goodput_bps"][late].mean() > 0
    # a loss on path a sets its ssthresh below the initial (the peer's window)
    assert a["ssthresh_bytes"].min() < a["ssthresh_bytes"].iloc[0]


def test_single_homed_association_has_one_destination_row():
    text = """
name = "one"
duration = "3s"
[metrics]
interval = "1s"
[[link]]
name = "l"
rate = "10Mbps"
delay = "10ms"
queue = "50pkt"
[[path]]
name = "p"
links = ["l"]
[[flow]]
name = "s"
path = "p"
transport = "sctp"
"""
    res = mpsim.run(text, progress=False)
    ss = res.subflow_series
    assert len(ss) == len(res.flow_series) == 4
    assert set(ss["path"]) == {"p"} and set(ss["flow"]) == {"s"}
    assert ss["delivered_bytes"].iloc[-1] >= res.flow_series["delivered_bytes"].iloc[-1] > 0
