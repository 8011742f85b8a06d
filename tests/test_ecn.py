"""ECN from Python: `tcp.ecn` and a discipline's `ecn` as keys, the marks and the flows'
ECN counters in the summary, the CLI's column of marks, and errors that name the key."""

import mpsim
import pytest
from mpsim.cli import main


def scenario(aqm, tcp: dict | None = None, duration: str = "20s") -> dict:
    s = {
        "duration": duration,
        "metrics": {"warmup": "5s"},
        "link": [{"name": "b", "rate": "10Mbps", "delay": "20ms", "queue": "1000pkt", "aqm": aqm}],
        "path": [{"name": "p", "links": ["b"]}],
        "flow": [{"name": "f", "path": "p", "cc": "cubic"}],
    }
    if tcp is not None:
        s["tcp"] = tcp
    return s


def test_marks_replace_drops_for_an_ecn_flow_and_the_summary_counts_them():
    aqm = {"kind": "codel", "ecn": True}
    off = mpsim.run(scenario(aqm), progress=False).summary
    on = mpsim.run(scenario(aqm, {"ecn": True}), progress=False).summary
    assert off["links"][0]["aqm_marks"] == 0 and off["links"][0]["aqm_drops"] > 0
    assert "ecn_ce_received" not in off["flows"][0] and "ecn_reductions" not in off["flows"][0]
    link, flow = on["links"][0], on["flows"][0]
    assert link["aqm_marks"] > 0 and link["aqm_drops"] == 0
    assert flow["retransmits"] == 0
    assert 0 < flow["ecn_reductions"] <= flow["ecn_ce_received"] <= link["aqm_marks"]
    assert flow["subflows"][0]["ecn_ce_received"] == flow["ecn_ce_received"]
    assert flow["goodput_bps"] > 0.97 * off["flows"][0]["goodput_bps"]


def test_fq_codel_marks_by_default_and_codel_does_not():
    tcp = {"ecn": True}
    fq = mpsim.run(scenario("fq_codel", tcp, "10s"), progress=False).summary["links"][0]
    codel = mpsim.run(scenario("codel", tcp, "10s"), progress=False).summary["links"][0]
    assert fq["aqm_marks"] > 0 and fq["aqm_drops"] == 0
    assert codel["aqm_marks"] == 0 and codel["aqm_drops"] > 0


def test_bad_ecn_values_name_their_key():
    with pytest.raises(mpsim.ScenarioError, match=r"tcp\.ecn"):
        mpsim.check(scenario("codel", {"ecn": "yes"}))
    with pytest.raises(mpsim.ScenarioError, match=r"link\[0\]\.aqm\.ecn"):
        mpsim.check(scenario({"kind": "pie", "ecn": 1}))


def test_run_prints_the_marks(capsys, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(
        'duration = "5s"\n[tcp]\necn = true\n[[link]]\nname = "b"\nrate = "10Mbps"\ndelay = "10ms"\naqm = "fq_codel"\n'
        '[[path]]\nname = "p"\nlinks = ["b"]\n[[flow]]\npath = "p"\n'
    )
    assert main(["run", str(f), "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "AQM marks" in out
