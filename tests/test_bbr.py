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
