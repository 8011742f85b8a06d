"""QUIC flows from Python and the command line: the `transport = "quic"` key, the summary's
`quic` record, the result tables, the series, and refused settings."""

from __future__ import annotations

import json

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
        ({"paths": ["p"], "transport": "quic", "scheduler": "mptcp_rec"}, "cannot use it"),
        ({"paths": ["p"], "transport": "quic", "backup": ["p"]}, "backup"),
        ({"path": "p", "transport": "quic", "cc": "bbr"}, "delivery-rate samples"),
        ({"path": "p", "transport": "quic", "tcp": {"mss": "1100B"}}, "at least 1228"),
        ({"path": "p", "transport": "quick"}, "tcp, udp, sctp or quic"),
        ({"path": "p", "transport": "quic", "tcp": {"ecn": True}}, "not a `tcp` key"),
        ({"path": "p", "transport": "quic", "quic": {"ecn": "yes"}}, "expected true or false"),
        ({"path": "p", "quic": {"ecn": True}}, "only a QUIC flow"),
        ({"path": "p", "transport": "quic", "quic": {"priorities": "on"}}, "quic.priorities: expected true or false"),
        ({"path": "p", "transport": "quic", "quic": {"priority": True}}, "priority"),
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


def test_qlog_traces_read_back_with_their_schema_fields(tmp_path):
    res = mpsim.run(SCENARIO, progress=False, qlog=tmp_path)
    assert [p.name for p in res.qlog_files] == ["q.sqlog"]  # the TCP flow writes none
    text = (tmp_path / "q.sqlog").read_text()
    assert text.startswith("\x1e")
    records = [json.loads(r) for r in text.split("\x1e")[1:]]
    head = records[0]
    assert head["file_schema"] == "urn:ietf:params:qlog:file:sequential"
    assert head["serialization_format"] == "application/qlog+json-seq"
    assert head["trace"]["vantage_point"]["type"] == "client"
    events = records[1:]
    names = {e["name"] for e in events}
    assert {"quic:packet_sent", "quic:packet_received", "quic:packet_lost", "quic:recovery_metrics_updated"} <= names
    times = [e["time"] for e in events]
    assert times == sorted(times) and times[-1] <= 8000.0
    sent = [e["data"] for e in events if e["name"] == "quic:packet_sent"]
    assert all(d["header"]["packet_type"] == "1RTT" and d["path_id"] == 0 for d in sent)
    # packet numbers rise one by one, and the packets' sizes are the summary's
    assert [d["header"]["packet_number"] for d in sent] == list(range(len(sent)))
    assert max(d["raw"]["length"] for d in sent) == 1472
    q = res.summary["flows"][0]
    assert len(sent) == q["segments_sent"]
    lost = [e for e in events if e["name"] == "quic:packet_lost"]
    assert len(lost) == q["quic"]["packets_lost"][0]
    m = [e["data"] for e in events if e["name"] == "quic:recovery_metrics_updated"]
    assert all({"congestion_window", "smoothed_rtt", "latest_rtt", "bytes_in_flight"} <= d.keys() for d in m)
    assert m[-1]["smoothed_rtt"] == pytest.approx(q["srtt_final_ms"], rel=0.2)
    acks = [e["data"] for e in events if e["name"] == "quic:packet_received"]
    assert all(d["frames"][0]["frame_type"] == "ack" for d in acks)


def test_qlog_from_the_command_line(tmp_path, capsys):
    toml = tmp_path / "q.toml"
    toml.write_text(
        'duration = "2s"\n[[link]]\nname = "l"\nrate = "10Mbps"\ndelay = "10ms"\nqueue = "100pkt"\n'
        '[[path]]\nname = "p"\nlinks = ["l"]\n[[flow]]\nname = "q"\npath = "p"\ntransport = "quic"\n'
    )
    assert main(["run", str(toml), "--qlog", str(tmp_path / "ql")]) == 0
    assert "wrote 1 qlog trace" in capsys.readouterr().err
    assert (tmp_path / "ql" / "q.sqlog").stat().st_size > 1000


TWO_PATHS = {
    "duration": "6s",
    "link": [
        {"name": "l0", "rate": "10Mbps", "delay": "10ms", "queue": "50pkt"},
        {"name": "l1", "rate": "10Mbps", "delay": "30ms", "queue": "50pkt", "loss": "0.5%"},
    ],
    "path": [{"name": "p0", "links": ["l0"]}, {"name": "p1", "links": ["l1"]}],
    "flow": [{"name": "mq", "paths": ["p0", "p1"], "transport": "quic", "scheduler": "lowest_rtt", "cc": "lia"}],
}


def test_multipath_quic_has_a_row_per_path():
    res = mpsim.run(TWO_PATHS, progress=False)
    (f,) = res.summary["flows"]
    assert f["transport"] == "quic" and f["path"] == "p0+p1"
    subs = res.subflows
    rows = subs[subs["flow"] == "mq"]
    assert list(rows["path"]) == ["p0", "p1"]
    # LIA moves traffic off the lossy path, which still carries some
    assert (rows["goodput_bps"] > 1e5).all() and rows["goodput_bps"].sum() > 9e6
    assert abs(rows["goodput_bps"].sum() - f["goodput_bps"]) < 0.02 * f["goodput_bps"]
    rec = f["quic"]
    assert len(rec["packets_lost"]) == 2 and rec["packets_lost"][1] > 0
    assert all(a > 0 for a in rec["acks_sent"])


def test_a_python_scheduler_picks_multipath_quic_paths():
    picks = []

    class SecondPathFirst:
        def pick(self, ctx):
            ok = [i for i, s in enumerate(ctx.subflows) if s.available()]
            picks.append(ok)
            return max(ok) if ok else None

    mpsim.register_scheduler("second_path_first_quic", SecondPathFirst)
    d = {**TWO_PATHS, "flow": [{**TWO_PATHS["flow"][0], "scheduler": "second_path_first_quic"}]}
    res = mpsim.run(d, progress=False)
    subs = res.subflows
    assert any(ok == [0] for ok in picks), "only the first path is usable before the second is validated"
    assert any(1 in ok for ok in picks)
    rows = subs[subs["flow"] == "mq"].set_index("path")
    assert rows.loc["p1", "bytes_sent"] > 0
    assert res.summary["flows"][0]["scheduler"] == "second_path_first_quic"


def test_the_command_line_prints_multipath_quic_paths(tmp_path, capsys):
    toml = tmp_path / "mq.toml"
    toml.write_text(
        'duration = "4s"\n[[link]]\nname = "l0"\nrate = "10Mbps"\ndelay = "10ms"\nqueue = "100pkt"\n'
        '[[link]]\nname = "l1"\nrate = "5Mbps"\ndelay = "20ms"\nqueue = "100pkt"\n'
        '[[path]]\nname = "a"\nlinks = ["l0"]\n[[path]]\nname = "b"\nlinks = ["l1"]\n'
        '[[flow]]\nname = "mq"\npaths = ["a", "b"]\ntransport = "quic"\ncc = "olia"\n'
    )
    assert main(["run", str(toml)]) == 0
    out = capsys.readouterr().out
    assert "olia" in out and "subflow path" in out
    rows = [ln.split() for ln in out.splitlines() if ln.split()[:1] == ["mq"]]
    assert ["a", "b"] == [r[1] for r in rows if r[1] in ("a", "b")], out


def test_quic_ecn_through_a_marking_queue_in_the_summary_and_the_qlog(tmp_path):
    scen = {
        "duration": "6s",
        "link": [{"name": "l", "rate": "10Mbps", "delay": "10ms", "queue": "1000pkt", "aqm": {"kind": "codel", "ecn": True}}],
        "path": [{"name": "p", "links": ["l"]}],
        "flow": [{"name": "q", "path": "p", "transport": "quic", "cc": "cubic", "quic": {"ecn": True}}],
    }
    res = mpsim.run(scen, progress=False, qlog=tmp_path)
    q = res.summary["flows"][0]
    link = res.summary["links"][0]
    assert q["retransmits"] == 0 and link["aqm_drops"] == 0
    assert 0 < q["ecn_reductions"] <= q["ecn_ce_received"] <= link["aqm_marks"]
    assert q["quic"]["ecn_state"] == ["capable"]
    records = [json.loads(r) for r in (tmp_path / "q.sqlog").read_text().split("\x1e")[1:]]
    acks = [f for r in records if r.get("name") == "quic:packet_received" for f in r["data"]["frames"] if f["frame_type"] == "ack"]
    assert acks and all({"ect0", "ect1", "ce"} <= set(a) for a in acks)
    assert acks[-1]["ce"] == q["ecn_ce_received"]
    states = [r["data"] for r in records if r.get("name") == "quic:ecn_state_updated"]
    assert states == [{"path_id": 0, "old": "unknown", "new": "capable"}]
    # without the key: no ECN anywhere
    scen["flow"][0]["quic"] = {"ecn": False}
    off = mpsim.run(scen, progress=False).summary["flows"][0]
    assert "ecn_ce_received" not in off and "ecn_state" not in off["quic"] and off["retransmits"] > 0


def test_a_backup_path_takes_over_from_an_abandoned_primary_in_the_summary_and_the_qlog(tmp_path):
    scen = {
        "duration": "6s",
        "link": [
            {"name": "l0", "rate": "10Mbps", "delay": "10ms", "queue": "50pkt", "down": [{"at": "2s", "until": "6s"}]},
            {"name": "l1", "rate": "10Mbps", "delay": "10ms", "queue": "50pkt"},
        ],
        "path": [{"name": "p0", "links": ["l0"]}, {"name": "p1", "links": ["l1"]}],
        "flow": [{"name": "mq", "paths": ["p0", "p1"], "transport": "quic", "backup": ["p1"]}],
    }
    res = mpsim.run(scen, progress=False, qlog=tmp_path)
    (f,) = res.summary["flows"]
    assert [s["backup"] for s in f["subflows"]] == [False, True]
    at, never = f["quic"]["abandoned_s"]
    assert 2.0 < at < 4.0 and never is None
    assert f["subflows"][1]["bytes_sent"] > 1e6
    records = [json.loads(r) for r in (tmp_path / "mq.sqlog").read_text().split("\x1e")[1:]]
    sent = [r["data"] for r in records if r.get("name") == "quic:packet_sent"]
    frames = [(d["path_id"], fr) for d in sent for fr in d["frames"]]
    assert (1, {"frame_type": "path_status_backup", "path_id": 1, "sequence_number": 0}) in frames
    abandons = [(p, fr) for p, fr in frames if fr["frame_type"] == "path_abandon"]
    assert abandons == [(1, {"frame_type": "path_abandon", "path_id": 0, "error_code": "path_unstable_or_poor"})]


VIDEO = {
    "kind": "media",
    "fps": 25,
    "gop": "IBBPBBPBBPBB",
    "deadline": "1s",
    "classes": {"I": {"size": "150KB", "priority": 1}, "P": {"size": "60KB"}, "B": {"size": "30KB"}},
}


def _video_run(quic: dict, qlog=None, app: dict = VIDEO) -> mpsim.Result:
    """A 9.5 Mbit/s video over a 6 Mbit/s link, written at once into a large send buffer, with
    the flow's `quic` table."""
    flow = {"name": "v", "path": "p", "transport": "quic", "app": app, "quic": quic, "tcp": {"snd_buf": "64MB"}}
    d = {
        "duration": "10s",
        "link": [{"name": "l", "rate": "6Mbps", "delay": "10ms", "queue": "100pkt"}],
        "path": [{"name": "p", "links": ["l"]}],
        "flow": [flow],
    }
    return mpsim.run(d, progress=False, qlog=qlog)


def _video_over_quic(priorities: bool, qlog=None):
    """Mean delay per frame class of the video with priorities on or off."""
    (f,) = _video_run({"priorities": priorities}, qlog).summary["flows"]
    return {c["class"]: c["delay_mean_ms"] for c in f["classes"]}


def test_quic_priorities_put_a_media_streams_urgent_frames_first_and_can_be_turned_off(tmp_path):
    on = _video_over_quic(True, qlog=tmp_path)
    off = _video_over_quic(False)
    assert on["I"] < 0.8 * min(on["P"], on["B"]), on
    assert off["I"] > 0.9 * min(off["P"], off["B"]), off
    # each frame on a unidirectional stream of its own (IDs 2, 6, 10, ...), closed by FIN
    records = [json.loads(r) for r in (tmp_path / "v.sqlog").read_text().split("\x1e")[1:]]
    frames = [f for r in records if r.get("name") == "quic:packet_sent" for f in r["data"]["frames"] if f["frame_type"] == "stream"]
    ids = {f["stream_id"] for f in frames}
    assert len(ids) > 50 and all(i % 4 == 2 for i in ids)
    fins = {f["stream_id"] for f in frames if f.get("fin")}
    assert len(fins) > 50 and fins <= ids  # the streams sent to their end by the end of the run
    assert all(f["offset"] < 150_000 for f in frames)


def test_a_media_packet_carries_the_end_of_one_frame_and_the_start_of_the_next(tmp_path):
    _video_over_quic(False, qlog=tmp_path)
    records = [json.loads(r) for r in (tmp_path / "v.sqlog").read_text().split("\x1e")[1:]]
    sent = [r["data"] for r in records if r.get("name") == "quic:packet_sent"]
    multi = [(d, [f for f in d["frames"] if f["frame_type"] == "stream"]) for d in sent]
    multi = [(d, fs) for d, fs in multi if len(fs) > 1]
    for d, fs in multi:
        assert sum(f["length"] for f in fs) < d["raw"]["length"] <= 1472
    # new data in the order written: the end of one frame (FIN), then the start of the next
    # (other packets carry lost ranges again, of one stream or several)
    nxt = [fs for _, fs in multi if fs[0].get("fin") and fs[1]["stream_id"] == fs[0]["stream_id"] + 4 and fs[1]["offset"] == 0]
    assert len(nxt) > 50


def test_path_status_changes_reach_the_summary_and_the_qlog(tmp_path):
    scen = {
        "duration": "6s",
        "link": [
            {"name": "l0", "rate": "10Mbps", "delay": "10ms", "queue": "50pkt"},
            {"name": "l1", "rate": "10Mbps", "delay": "10ms", "queue": "50pkt"},
        ],
        "path": [{"name": "p0", "links": ["l0"]}, {"name": "p1", "links": ["l1"]}],
        "flow": [
            {
                "name": "mq",
                "paths": ["p0", "p1"],
                "transport": "quic",
                "backup": ["p1"],
                "quic": {
                    "path_status": [
                        {"at": "2s", "path": "p1", "status": "available"},
                        {"at": "4s", "path": "p0", "status": "backup"},
                    ]
                },
            }
        ],
    }
    res = mpsim.run(scen, progress=False, qlog=tmp_path)
    (f,) = res.summary["flows"]
    assert f["quic"]["path_status"] == [
        {"at_s": 2.0, "path": "p1", "status": "available"},
        {"at_s": 4.0, "path": "p0", "status": "backup"},
    ]
    assert [s["backup"] for s in f["subflows"]] == [True, False]
    records = [json.loads(r) for r in (tmp_path / "mq.sqlog").read_text().split("\x1e")[1:]]
    sent = [(r["time"], r["data"]) for r in records if r.get("name") == "quic:packet_sent"]
    frames = [(d["path_id"], fr) for _, d in sent for fr in d["frames"]]
    # p1 announced itself backup (sequence number 0) beside its PATH_CHALLENGE, then available
    # (1) on itself; p0 went backup with its first status frame (0)
    assert (1, {"frame_type": "path_status_backup", "path_id": 1, "sequence_number": 0}) in frames
    assert (1, {"frame_type": "path_status_available", "path_id": 1, "sequence_number": 1}) in frames
    assert (0, {"frame_type": "path_status_backup", "path_id": 0, "sequence_number": 0}) in frames
    # stream data follows the status: none on p1 before 2 s, none on p0 after 4 s
    stream = [(t, d["path_id"]) for t, d in sent if any(fr["frame_type"] == "stream" for fr in d["frames"])]
    assert not [t for t, p in stream if p == 1 and t < 2000]
    assert not [t for t, p in stream if p == 0 and t > 4001]
    assert any(p == 1 for _, p in stream) and any(p == 0 for _, p in stream)


def test_reset_late_frames_in_the_summary_and_the_qlog(tmp_path):
    res = _video_run({"reset_late": True}, tmp_path)
    (f,) = res.summary["flows"]
    q = f["quic"]
    assert 0 < q["streams_reset"] <= q["reset_stream_frames"]
    records = [json.loads(r) for r in (tmp_path / "v.sqlog").read_text().split("\x1e")[1:]]
    resets = [f for r in records if r.get("name") == "quic:packet_sent" for f in r["data"]["frames"] if f["frame_type"] == "reset_stream"]
    assert len(resets) == q["reset_stream_frames"]
    assert all(r["error_code"] == 2 and r["stream_id"] % 4 == 2 and r["final_size"] <= 150_000 for r in resets)
    # without the key the summary has no such counts; without a deadline the key is refused
    assert "streams_reset" not in _video_run({}).summary["flows"][0]["quic"]
    no_deadline = {k: v for k, v in VIDEO.items() if k != "deadline"}
    with pytest.raises(mpsim.ScenarioError, match=r"flow\[0\]\.quic\.reset_late"):
        _video_run({"reset_late": True}, app=no_deadline)
