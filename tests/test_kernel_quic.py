"""`mpsim kernel` with a QUIC flow: the real Multipath QUIC peer (noq) beside mpsim's QUIC.

The mapping and the refusals need only the link emulator (it describes the scenario); the
side-by-side runs need root, /dev/net/tun, iproute2, the emulator and the peer
(`make quicpeer`), and are skipped with the reason where the machine lacks one.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import mpsim
from mpsim.kernel import quic as Q
from mpsim.kernel import testbed as K
from mpsim.scenario import apply_overrides, load

ROOT = Path(__file__).resolve().parents[1]
SCEN = ROOT / "scenarios" / "kernel_quic"

ok, why = Q.available()
needs_quic = pytest.mark.skipif(not ok, reason=f"the QUIC side {why}")
needs_emulator = pytest.mark.skipif(K.find_emulator() is None, reason="the link emulator is not built")


def _desc(name: str, **ov: object) -> dict:
    d, origin = load(SCEN / name)
    if ov:
        d = apply_overrides(d, {k.replace("__", "."): v for k, v in ov.items()}, origin=origin)
    return Q.with_schedulers(d, K.describe(d, origin))


@needs_emulator
def test_every_shipped_quic_scenario_maps():
    names = sorted(p.name for p in SCEN.glob("*.toml"))
    assert names == ["mpquic_2x10m.toml", "mpquic_asym.toml", "quic_10m.toml", "quic_10m_loss1.toml"]
    for n in names:
        assert Q.unmappable(_desc(n)) == [], n


@needs_emulator
def test_unmappable_quic_features_are_refused_in_one_message(tmp_path):
    text = (SCEN / "mpquic_2x10m.toml").read_text().replace('cc = "cubic"', 'cc = "lia"\nstop = "5s"')
    text = text.replace('scheduler = "in_order"', 'scheduler = "round_robin"')
    text = text.replace(
        'transport = "quic"',
        'transport = "quic"\nquic = { path_status = [{ at = "2s", path = "p1", status = "backup" }], ack_frequency = { threshold = 10 }, pacing = false }\nbackup = ["p1"]',
    )
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(mpsim.ScenarioError) as e:
        K.compare(f)
    msg = str(e.value)
    assert msg.startswith(f"{f}: cannot run on the real QUIC peer: "), msg
    for part in (
        "cc lia (the QUIC peer, noq, has reno, cubic",
        "scheduler round_robin",
        "stop",
        "quic.path_status",
        "quic.ack_frequency",
        "quic.pacing = false",
        "backup paths",
    ):
        assert part in msg, msg
    # and on the command line: one line, exit status 2, no traceback
    r = subprocess.run([sys.executable, "-m", "mpsim", "kernel", str(f)], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@needs_emulator
def test_a_second_flow_beside_the_quic_one_is_refused():
    d = _desc("quic_10m.toml")
    tcp = dict(d["flows"][0], name="t", transport="tcp")
    bad = Q.unmappable({**d, "flows": d["flows"] + [tcp]})
    assert any("2 flows" in b for b in bad) and any("flow 't': transport tcp" in b for b in bad)


@needs_emulator
def test_the_peer_is_configured_as_mpsims_quic():
    d = _desc("quic_10m.toml")
    f = d["flows"][0]
    # 1460 + 40 - 28: the UDP payload mpsim's QUIC packets have (docs/quic.md)
    assert Q.max_datagram(f) == 1472
    assert Q.initial_window(f) == 14_720
    args = Q.peer_args(f, 21.0)
    assert args[args.index("--cc") + 1] == "cubic" and args[args.index("--duration") + 1] == "21"
    assert args[args.index("--max-datagram") + 1] == "1472"
    assert args[args.index("--rcv-buf") + 1] == str(f["tcp"]["rcv_buf"])
    # a bigger initial window in packets is capped as RFC 9002 caps it
    assert Q.initial_window(_desc("quic_10m.toml", flow__quic__tcp__initial_window=4)["flows"][0]) == 4 * 1472
    assert Q.PEER_CCS == {"reno": "NewReno", "cubic": "Cubic"}


@needs_emulator
def test_matched_mpsim_run_schedules_as_noq_and_starts_with_the_real_handshake():
    d = _desc("mpquic_asym.toml")
    ov = Q.mpsim_overrides(d, {"mpquic": 0.0123})
    assert "flow.mpquic.scheduler" not in ov and Q.SCHEDULER == "in_order"
    assert ov["flow.mpquic.start"] == "12300us"
    assert ov["link.fast.jitter"] == ov["link.slow.jitter"] == "200000ns"
    ch = {c["setting"]: c for c in Q.settings_changed(d, [ov])}
    # the file already says in_order: not a change
    assert "flow.mpquic.scheduler" not in ch
    assert ch["flow.mpquic.start"]["file"] == "0us" and "handshake" in ch["flow.mpquic.start"]["why"]
    one = Q.mpsim_overrides(_desc("quic_10m.toml"))
    assert "flow.quic.scheduler" not in one
    # a multipath flow that names no scheduler runs mpsim's default, lowest_rtt: changed to noq's
    ov = Q.mpsim_overrides(_desc("mpquic_asym.toml", flow__mpquic__scheduler="lowest_rtt"))
    assert ov["flow.mpquic.scheduler"] == "in_order"


def test_a_missing_peer_is_explained(monkeypatch, tmp_path):
    monkeypatch.setenv("MPSIM_QUICPEER", str(tmp_path / "nope"))
    assert Q.find_peer() is None
    assert "MPSIM_QUICPEER names" in Q.peer_missing()
    okq, reason = Q.available()
    assert not okq and reason


def _summary_of(client_paths: dict, server_paths: dict, bins: list[int]) -> dict:
    run = {"client": {"bins": bins, "read_bytes": sum(bins), "established_s": 0.05, "multipath": True,
                      "paths": client_paths},
           "server": {"paths": server_paths}, "emulator": {},
           "path_of_addr": {"10.201.0.1": "a", "10.201.1.1": "b", "10.201.0.2": "a", "10.201.1.2": "b"}}
    desc = {"duration_s": 2.0, "warmup_s": 1.0,
            "flows": [{"name": "f", "paths": ["a", "b"]}]}
    return Q.summarise(run, desc)


def test_real_goodput_is_split_by_the_udp_bytes_each_path_delivered():
    rec = lambda t, rx, remote: {"t": t, "udp_rx_bytes": rx, "remote": remote}  # noqa: E731
    srv = lambda t, lost, remote: {"t": t, "rtt_ms": 40.0, "cwnd": 1, "lost_packets": lost,  # noqa: E731
                                   "congestion_events": lost, "remote": remote}
    cl = {"0": [rec(0.0, 0, "10.201.0.1"), rec(1.0, 100, "10.201.0.1"), rec(2.0, 400, "10.201.0.1")],
          "1": [rec(0.0, 0, "10.201.1.1"), rec(1.0, 100, "10.201.1.1"), rec(2.0, 200, "10.201.1.1")]}
    sv = {"0": [srv(1.5, 3, "10.201.0.2")], "1": [srv(1.5, 1, "10.201.1.2")]}
    s = _summary_of(cl, sv, [0] * 10 + [1000] * 10)
    (f,) = s["flows"]
    assert f["goodput_bps"] == pytest.approx(10_000 * 8 / 1.0)
    a, b = s["paths"]
    # 300 and 100 UDP bytes in [1 s, 2 s]: three quarters and one quarter of the goodput
    assert a["goodput_bps"] == pytest.approx(0.75 * f["goodput_bps"])
    assert b["goodput_bps"] == pytest.approx(0.25 * f["goodput_bps"])
    assert (a["lost_packets"], b["lost_packets"], f["lost_packets"]) == (3, 1, 4)
    assert f["error"] is None
    # a path the client never opened is an error of the repeat
    s = _summary_of({"0": cl["0"]}, sv, [0] * 10 + [1000] * 10)
    assert s["flows"][0]["error"] == "1 of 2 paths opened"


def _short(name: str) -> list[str]:
    return [str(SCEN / name), "--set", "duration=4s", "--set", "metrics.warmup=1s"]


@needs_quic
def test_quic_side_by_side_on_one_path(tmp_path):
    res = K.compare(SCEN / "quic_10m.toml", overrides={"duration": "4s", "metrics.warmup": "1s"}, out=tmp_path)
    (f,) = res.flows
    # at most the payload share of 1500 B packets at 10 Mbit/s (1440 stream bytes a packet)
    ceiling = 10e6 * 1440 / 1500
    assert 0.5 * ceiling < f["real_goodput_bps"] <= ceiling * 1.01, f
    assert f["mpsim_goodput_bps"] > 0 and f["error"] is None
    assert f["ratio_mpsim_real"] == pytest.approx(f["mpsim_goodput_bps"] / f["real_goodput_bps"])
    (p,) = res.paths
    assert p["real_rtt_min_ms"] >= 40.0 and p["real_goodput_bps"] == pytest.approx(f["real_goodput_bps"])
    assert res.info["peer"].startswith("mpsim-quicpeer") and res.info["peer_cc"] == "Cubic"
    q = sorted(x.name for x in (tmp_path / "qlog" / "repeat0").iterdir())
    assert any(n.startswith("server") for n in q) and any(n.startswith("client") for n in q)
    assert "mpsim-quic.sqlog" in q
    assert "ratio mpsim/real" in res.report()
    # losses counted alike on both sides: packets declared lost (slow start overshoots the queue)
    assert f["real_lost_packets"] > 0 and f["mpsim_lost_packets"] > 0


@needs_quic
def test_multipath_quic_json_on_the_command_line():
    r = subprocess.run([sys.executable, "-m", "mpsim", "kernel", *_short("mpquic_2x10m.toml"), "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert (d["schema"], d["ratio"], d["scenario"]) == (Q.SCHEMA, "mpsim/real", "mpquic_2x10m")
    (f,) = d["flows"]
    assert f["errors"] == [] and d["repeats"]["flows"][0]["multipath"] is True
    ps = d["paths"]
    assert [p["path"] for p in ps] == ["p0", "p1"]
    # both paths carry data, and their parts add up to the flow's goodput
    assert all(p["real_goodput_bps"] > 0 for p in ps)
    assert sum(p["real_goodput_bps"] for p in ps) == pytest.approx(f["real_goodput_bps"]["median"])


@needs_emulator
def test_without_the_peer_the_command_says_why_in_one_line(tmp_path):
    import os

    env = {**os.environ, "MPSIM_QUICPEER": str(tmp_path / "nope")}
    r = subprocess.run([sys.executable, "-m", "mpsim", "kernel", str(SCEN / "quic_10m.toml")], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("error: the QUIC side ") and len(r.stderr.strip().splitlines()) == 1, r.stderr
    h = subprocess.run([sys.executable, "-m", "mpsim", "kernel", "--help"], capture_output=True, text=True).stdout
    assert "mpsim-quicpeer" in h and "mpsim/real" in h


def test_the_client_starts_at_the_emulators_time_zero(monkeypatch, tmp_path, recorded_testbed):
    """Traces and schedules begin with the run, as in mpsim: the emulator's time zero is a t0
    after the testbed's setup, and the client (which starts sending at once) is started then."""
    d, origin = load(SCEN / "quic_10m.toml")
    desc = Q.with_schedulers(d, K.describe(d, origin))
    Recorded, seen = recorded_testbed
    seen["slept"] = 0.0

    class Started(Exception):
        pass

    class Listening:
        stdout = io.StringIO("listening\n")

    def spawn(tb, side, args):
        if args[0] == "server":
            return Listening()
        seen["client_at"] = time.monotonic_ns() + int(seen["slept"] * 1e9)
        raise Started

    monkeypatch.setattr(Q, "Testbed", Recorded)
    monkeypatch.setattr(Q, "_spawn", spawn)
    monkeypatch.setattr(Q.time, "sleep", lambda s: seen.update(slept=seen["slept"] + s))
    with pytest.raises(Started):
        Q.run_once(d, desc, 1, tmp_path)
    t0 = seen["emulator"]["origin_ns"]
    assert t0 <= seen["client_at"] < t0 + int(0.1e9)
