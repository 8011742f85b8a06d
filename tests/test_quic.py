"""QUIC flows from Python and the command line: the `transport = "quic"` key, the summary's
`quic` record, the result tables, the series, and refused settings."""

from __future__ import annotations

import pytest

import mpsim
from mpsim.cli import main

SCENARIO = {
    "duration": "8s",
    "metrics": {"interval": "500ms", "warmup": "1s"},
    "link": [{"name": "l", "rate": "10Mbps", "delay": "10ms", "queue": "100pkt", "loss": "1%"}],
    "path": [{"name": "p", "links": ["l"]}],
    "flow": [{"name": "q", "path": "p", "transport": "quic", "cc": "cubic"}, {"name": "t", "path": "p", "cc": "cubic"}],
}


def test_a_quic_flow_beside_a_tcp_flow():
    res = mpsim.run(SCENARIO, progress=False)
    q, t = res.summary["flows"]
    assert (q["transport"], t["transport"]) == ("quic", "tcp")
    assert q["cc"] == "cubic" and q["goodput_bps"] > 1e6
    rec = q["quic"]
    assert rec["max_datagram"] == 1472
    assert rec["packets_lost"][0] > 0 and rec["acks_sent"][0] > 0
    assert q["retransmits"] >= rec["packets_lost"][0] > 0
    assert "quic" not in t
    flows = res.flows
    assert flows.set_index("flow").loc["q", "transport"] == "quic"
    subs = res.subflows
    assert list(subs[subs["flow"] == "q"]["path"]) == ["p"]
    ss = res.subflow_series
    rows = ss[ss["flow"] == "q"]
    assert len(rows) > 10 and (rows["cwnd_bytes"] > 0).all()
    fs = res.flow_series
    assert (fs[fs["flow"] == "q"]["delivered_bytes"].diff().dropna() >= 0).all()


@pytest.mark.parametrize(
    ("flow", "message"),
    [
        ({"paths": ["p"], "transport": "quic"}, "one path"),
        ({"path": "p", "transport": "quic", "cc": "bbr"}, "delivery-rate samples"),
        ({"path": "p", "transport": "quic", "tcp": {"mss": "1100B"}}, "at least 1228"),
        ({"path": "p", "transport": "quick"}, "tcp, udp, sctp or quic"),
    ],
)
def test_refused_settings_say_why(flow, message):
    d = {**SCENARIO, "flow": [{"name": "q", **flow}]}
    with pytest.raises(mpsim.ScenarioError, match=message):
        mpsim.check(d)


def test_the_command_line_prints_a_quic_flow(tmp_path, capsys):
    toml = tmp_path / "q.toml"
    toml.write_text(
        'duration = "5s"\n[[link]]\nname = "l"\nrate = "10Mbps"\ndelay = "10ms"\nqueue = "100pkt"\n'
        '[[path]]\nname = "p"\nlinks = ["l"]\n[[flow]]\nname = "q"\npath = "p"\ntransport = "quic"\n'
    )
    assert main(["run", str(toml)]) == 0
    out = capsys.readouterr().out
    assert "q " in out and "reno" in out
    assert main(["run", str(toml), "--pcap", str(tmp_path / "caps")]) == 2
    assert "runs QUIC, whose packets are not captured" in capsys.readouterr().err
