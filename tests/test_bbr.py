"""BBR through the Python API and the command line: listed, and run per subflow under
Multipath TCP (uncoupled, paced, the upstream scheduler reading its pacing rate)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import mpsim


def test_bbr_is_a_listed_controller():
    assert "bbr" in {n for _, n, _ in mpsim.components("cc")}
    out = subprocess.run([sys.executable, "-m", "mpsim", "list"], capture_output=True, text=True, check=True).stdout
    assert any(line.split()[:1] == ["bbr"] for line in out.splitlines())


@pytest.mark.parametrize("scheduler", ["linux_upstream", "lowest_rtt"])
def test_multipath_bbr_fills_both_paths(scheduler):
    sc = {
        "name": "bbr_mptcp",
        "duration": "20s",
        "seed": 1,
        "metrics": {"warmup": "5s"},
        "link": [
            {"name": "a", "rate": "10Mbps", "delay": "10ms", "queue": "200pkt"},
            {"name": "b", "rate": "5Mbps", "delay": "30ms", "queue": "200pkt"},
        ],
        "path": [{"name": "pa", "links": ["a"]}, {"name": "pb", "links": ["b"]}],
        "flow": [{"name": "mp", "paths": ["pa", "pb"], "cc": "bbr", "scheduler": scheduler}],
    }
    f = mpsim.run(sc).summary["flows"][0]
    assert f["cc"] == "bbr"
    goodput = {s["path"]: s["goodput_bps"] for s in f["subflows"]}
    # each subflow near its path's rate less headers (0.97 of it)
    assert goodput["pa"] > 0.9 * 10e6 and goodput["pb"] > 0.9 * 5e6, goodput
    assert f["timeouts"] == 0


def test_the_subflow_series_carries_bbrs_model():
    # two paths of different rates and RTTs (10 Mbit/s, 20 ms; 5 Mbit/s, 60 ms), 100 ms samples
    sc = {
        "name": "bbr_model",
        "duration": "14s",
        "seed": 2,
        "metrics": {"warmup": "0s", "interval": "100ms"},
        "link": [
            {"name": "a", "rate": "10Mbps", "delay": "10ms", "queue": "200pkt"},
            {"name": "b", "rate": "5Mbps", "delay": "30ms", "queue": "200pkt"},
        ],
        "path": [{"name": "pa", "links": ["a"]}, {"name": "pb", "links": ["b"]}],
        "flow": [{"name": "mp", "paths": ["pa", "pb"], "cc": "bbr", "scheduler": "linux_upstream"}],
    }
    s = mpsim.run(sc).subflow_series
    cols = ["bbr_bw_bps", "bbr_min_rtt_ms", "bbr_pacing_gain", "bbr_cwnd_gain"]
    for path, rate, prop_rtt_ms in (("pa", 10e6, 20.0), ("pb", 5e6, 60.0)):
        g = s[s["path"] == path].sort_values("time_s")
        after = g[g["time_s"] >= 3.0]  # STARTUP and DRAIN are over within 3 s
        assert after[cols].notna().all().all()
        # the estimate counts full segments per second: at most the link's rate x 5/4, and
        # near the goodput the path carries
        assert (after["bbr_bw_bps"] <= 1.25 * rate).all() and after["bbr_bw_bps"].median() > 0.9 * rate
        assert (after["bbr_min_rtt_ms"] >= prop_rtt_ms).all() and after["bbr_min_rtt_ms"].median() < 1.2 * prop_rtt_ms
        assert set(after["bbr_pacing_gain"].round(2)) <= {0.75, 1.0, 1.25}
        assert g["bbr_pacing_gain"].iloc[0] > 2.8  # STARTUP's 2/ln 2
        # PROBE_RTT (both gains 1) once the min RTT is 10 s old
        assert ((after["bbr_cwnd_gain"] == 1.0) & (after["time_s"] > 10)).any()
    # other controllers have no model: NaN
    sc["flow"][0]["cc"] = "cubic"
    assert mpsim.run(sc).subflow_series[cols].isna().all().all()
