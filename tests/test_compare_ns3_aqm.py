"""The ns-3 AQM comparison (benches/compare_ns3_aqm.py): its mpsim side with and without ECN,
and a short ECN case against ns-3 itself when the `ns3` wheel and a C++ compiler are there."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benches" / "ns3"))
_spec = importlib.util.spec_from_file_location("compare_ns3_aqm", ROOT / "benches" / "compare_ns3_aqm.py")
assert _spec and _spec.loader
cmp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cmp)


def _ns3_missing() -> str | None:
    try:
        importlib.metadata.version("ns3")
    except importlib.metadata.PackageNotFoundError:
        return "the ns3 wheel is not installed (pip install --no-deps 'ns3==3.44.*', or make bench-aqm once)"
    if shutil.which(os.environ.get("CXX", "g++")) is None:
        return "no C++ compiler to build benches/ns3/dumbbell.cc"
    return None


def test_the_ecn_scenario_asks_for_ecn_in_tcp_and_the_discipline():
    for aqm in cmp.DISCIPLINES:
        on = cmp.scenario(2, 10_000_000, aqm, 5.0, ecn=True)
        off = cmp.scenario(2, 10_000_000, aqm, 5.0)
        bottleneck = on["link"][0]
        assert on["tcp"]["ecn"] is True and bottleneck["aqm"]["ecn"] is True
        assert bottleneck["aqm"]["kind"] == aqm
        assert off["tcp"]["ecn"] is False and off["link"][0]["aqm"]["ecn"] is False
        assert (bottleneck["aqm"].get("derandomize") is True) == (aqm == "pie")


def test_mpsim_marks_with_ecn_and_drops_without():
    on = cmp.run_mpsim(2, 10_000_000, "codel", 5.0, ecn=True)
    off = cmp.run_mpsim(2, 10_000_000, "codel", 5.0)
    assert on["marks"] > 0 and on["aqm_drops"] == 0
    assert off["marks"] == 0 and off["aqm_drops"] > 0


@pytest.mark.skipif(_ns3_missing() is not None, reason=str(_ns3_missing()))
def test_a_short_ecn_case_against_ns3():
    """CoDel with ECN, 2 flows over 10 Mbit/s for 10 s: both mark and neither drops, and
    goodput and marks agree within the margins the full comparison shows."""
    ns = cmp.run_ns3_case(2, 10_000_000, "codel", 10.0, ecn=True)
    mp = cmp.run_mpsim(2, 10_000_000, "codel", 10.0, ecn=True)
    assert ns["marks"] > 0 and mp["marks"] > 0
    assert set(ns["mark_reasons"]) == {"Target exceeded mark"}
    assert ns["aqm_drops"] == 0 and mp["aqm_drops"] == 0
    assert 0.9 < sum(mp["goodputs"]) / sum(ns["goodputs"]) < 1.1
    assert 0.75 < mp["marks"] / ns["marks"] < 1.33
