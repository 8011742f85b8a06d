"""`mpsim kernel`: the link emulator's accuracy and short runs through the Linux kernel.

The tests that need the kernel side run only where the machine allows it (root,
/dev/net/tun, Multipath TCP enabled, iproute2 and the emulator built) and are skipped with the
reason otherwise. The refusal of unmappable scenarios needs only the emulator binary.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import mpsim
from mpsim.kernel import result
from mpsim.kernel import testbed as K

ROOT = Path(__file__).resolve().parents[1]
SCEN = ROOT / "scenarios" / "kernel"

ok, why = K.available(multipath=True)
needs_kernel = pytest.mark.skipif(not ok, reason=f"the kernel side {why}")
needs_emulator = pytest.mark.skipif(K.find_emulator() is None, reason="the link emulator is not built")


def _named_by(pid: int) -> re.Pattern[str]:
    """Names of the namespaces (mpk...) and TUN devices (mk...) the testbeds of process `pid`
    make: its pid and two digits of the clock, then c or s (and a path index for devices)."""
    return re.compile(rf"mp?k{pid % 100000}\d\d[cs]\d*$")


def _ours(pid: int | None = None) -> set[str]:
    """Namespaces and devices left by the testbeds of process `pid` (this one by default). The testbed
    names them after its pid and two digits of the clock, so other runs on the machine are not counted."""
    own = _named_by(os.getpid() if pid is None else pid)
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return {w for w in ns + [x.rstrip(":").split("@")[0] for x in links.split()] if own.match(w)}


def _processes_of(pid: int) -> list[str]:
    """Command lines of the processes left by the testbeds of process `pid`: those naming its
    namespaces, and link emulators holding its TUN devices (a TUN descriptor's fdinfo names the
    device), so emulators of other runs on the machine are not counted."""
    own = _named_by(pid)
    left = []
    for d in Path("/proc").iterdir():
        try:
            c = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if any(own.match(w) for w in c.split()):
                left.append(c)
            elif "mpsim-linkemu --config" in c:
                devices = [line.split()[-1] for f in (d / "fdinfo").iterdir()
                           for line in f.read_text().splitlines() if line.startswith("iff:")]
                if any(own.match(dev) for dev in devices):
                    left.append(c)
        except OSError:
            continue
    return left


@needs_emulator
def test_unmappable_features_are_refused_in_one_message(tmp_path):
    text = (SCEN / "mptcp_2x10m.toml").read_text()
    text = text.replace('cc = "cubic"', 'cc = "lia"\nscheduler = "round_robin"')
    text += '\n[[flow]]\nname = "u"\npath = "p0"\ntransport = "udp"\napp = { kind = "cbr", rate = "1Mbps" }\n'
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(mpsim.ScenarioError) as e:
        K.compare(f)
    msg = str(e.value)
    assert msg.startswith(f"{f}: cannot run on the Linux kernel: ")
    for part in ("cc lia", "scheduler round_robin", "flow 'u': transport udp", "app cbr"):
        assert part in msg, msg
    # and on the command line: one line, exit status 2, no traceback
    r = subprocess.run([sys.executable, "-m", "mpsim", "kernel", str(f)], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@needs_emulator
def test_the_emulator_reads_a_traced_link_from_the_scenarios_folder(tmp_path):
    from mpsim import traces
    from mpsim.scenario import load

    (tmp_path / "study").mkdir()
    traces.generate(tmp_path / "study" / "c6.down", "2s", rate="6Mbps")
    text = (SCEN / "mptcp_2x10m.toml").read_text()
    f = tmp_path / "study" / "traced.toml"
    f.write_text(text.replace('name = "l0"', 'name = "l0"\ntrace = "c6.down"', 1))
    d, origin = load(f)
    desc = K.describe(d, origin)
    l0 = next(lk for lk in desc["links"] if lk["name"] == "l0")
    assert l0["trace"] == {"file": str(tmp_path / "study" / "c6.down"), "opportunities": 1000, "period_s": 2.0}
    assert l0["rate_bps"] == 6_000_000 and l0["reverse_trace"] is None
    assert not K.unmappable(desc)
    # the emulator's --describe reads a TOML file's traces from its folder too
    r = subprocess.run([str(K.find_emulator()), "--describe", str(f)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert '"file":"c6.down"' in r.stdout


def test_the_emulators_time_zero_is_the_runs_start(monkeypatch, tmp_path, recorded_testbed):
    """Traces and schedules begin with the run, as a simulation's links begin at its time 0:
    the emulator's time zero is the t0 at which both endpoints start, not its own start some
    seconds before (a cellular trace's first seconds differ from its later ones)."""
    from mpsim.scenario import load

    d, origin = load(SCEN / "mptcp_2x10m.toml")
    desc = K.describe(d, origin)
    Testbed, seen = recorded_testbed

    class Started(Exception):
        pass

    class Recorded(Testbed):
        def spawn(self, side, args):
            seen["endpoint"] = json.loads(Path(args[1]).read_text())
            raise Started

    monkeypatch.setattr(K, "Testbed", Recorded)
    with pytest.raises(Started):
        K._run_kernel_once(d, desc, 1, tmp_path)
    assert seen["emulator"]["origin_ns"] == seen["endpoint"]["t0_ns"]
    assert seen["endpoint"]["t0_ns"] > time.monotonic_ns()


@needs_emulator
def test_mpsim_side_is_configured_as_the_kernel():
    from mpsim.scenario import apply_overrides, load

    d, origin = load(SCEN / "mptcp_tcp_shared.toml")
    desc = K.describe(d, origin)
    ov = K.mpsim_overrides(desc, {"mptcp": 126562.0}, {"mptcp": 0.0203, "tcp": 0.0411})
    assert ov["flow.mptcp.scheduler"] == "linux_upstream"
    assert ov["flow.mptcp.join_delay"] == "linux"
    assert "flow.tcp.scheduler" not in ov and "flow.tcp.join_delay" not in ov
    assert ov["flow.mptcp.tcp.delayed_ack"] == ov["flow.tcp.tcp.delayed_ack"] == "linux"
    assert ov["flow.mptcp.tcp.ssthresh"] == ov["flow.tcp.tcp.ssthresh"] == "cwnd"
    assert ov["flow.mptcp.tcp.rcv_buf"] == "126562B"
    assert (ov["flow.mptcp.start"], ov["flow.tcp.start"]) == ("20300us", "41100us")
    assert ov["link.l0.jitter"] == ov["link.l1.jitter"] == f"{round(K.KERNEL_JITTER * 1e9)}ns"
    # the overrides make a valid scenario, and its runs now differ from seed to seed
    short = {**ov, "duration": "3s", "metrics.warmup": "1s"}
    runs = [mpsim.run(apply_overrides(d, short, origin=origin), overrides={"seed": s}, progress=False) for s in (1, 2)]
    a, b = (r.flows.set_index("flow").goodput_bps for r in runs)
    assert not a.equals(b)


def test_linux_window_scale_follows_the_buffer():
    # the scales the kernel's sockets showed (`ss`: wscale:_,2 for 256,000 B; largest windows
    # 262,140 and 4,194,240 B = 65,535 << 2 and << 6)
    assert [K.linux_window_scale(b) for b in (60_000, 100_000, 256_000, 2_000_000, 4_000_000, 1 << 40)] == [0, 1, 2, 5, 6, 14]


@needs_emulator
def test_a_window_at_the_field_limit_gets_the_buffer_behind_it():
    """A kernel window that reached 65535 << wscale was limited by the window field, not by
    memory: mpsim gets the buffer's share offered as window and Linux's window scale; a window
    below the limit stays the buffer, as before."""
    from mpsim.scenario import load

    d, origin = load(SCEN / "mptcp_rcvbuf_256k.toml")
    desc = K.describe(d, origin)
    assert desc["flows"][0]["tcp"]["window_scale"] is None
    ov = K.mpsim_overrides(desc, {"mptcp": 262140.0})
    assert ov["flow.mptcp.tcp.window_scale"] == 2
    assert ov["flow.mptcp.tcp.rcv_buf"] == f"{int(2 * 256_000 * K.KERNEL_RCV_SCALING)}B" == "324096B"
    ov = K.mpsim_overrides(desc, {"mptcp": 250000.0})
    assert ov["flow.mptcp.tcp.rcv_buf"] == "250000B" and "flow.mptcp.tcp.window_scale" not in ov
    # a scenario that sets its own window scale cannot run on the kernel, which picks its own
    d["tcp"]["window_scale"] = 3
    assert any("tcp.window_scale" in p for p in K.unmappable(K.describe(d, origin)))


def test_the_receive_memory_ratio_is_one_figure_in_rust_and_python():
    """Linux's measured share of receive memory offered as window lives twice: the testbed's
    `KERNEL_RCV_SCALING` (which buffer mpsim is given) and the core's
    `WindowGrowth::MEASURED_RATIO` in 256ths (where the receiver's window growth starts). They
    must be the same measurement."""
    src = (ROOT / "crates" / "mpsim-core" / "src" / "transport" / "tcp" / "delack.rs").read_text()
    m = re.search(r"pub const MEASURED_RATIO: u64 = (\d+);", src)
    assert m, "WindowGrowth::MEASURED_RATIO not found in delack.rs"
    assert int(m.group(1)) == round(K.KERNEL_RCV_SCALING * 256)


@needs_kernel
def test_emulator_rate_and_delay_on_one_path():
    """Measured from the end hosts: rate within 1 %, delay within 1 ms (mean and median of
    probes 20 ms apart; the p99, which the shared machine's scheduling spreads, is reported)."""
    a = K.accuracy("10Mbps", "20ms", probe_s=2.0, flood_s=3.0)
    d = a["delay_error_ms"]
    print(f"rate error {a['rate_error']:+.4%}, delay error mean {d['mean']:.3f} ms p50 {d['p50']:.3f} "
          f"p99 {d['p99']:.3f} ms, lateness {a['lateness']}")
    assert abs(a["rate_error"]) < 0.01
    assert abs(d["mean"]) < 1.0 and abs(d["p50"]) < 1.0
    assert a["probes"] >= 90
    assert not _ours()


def _kernel_run(name: str, **ov):
    return K.compare(SCEN / name, duration="5s", metrics__warmup="1s", **ov)


@needs_kernel
def test_single_path_kernel_run_within_the_emulated_rate():
    res = _kernel_run("tcp_10m.toml")
    f = res.flows.iloc[0]
    # the payload share of a 1512 B packet at 10 Mbit/s is the most TCP can deliver
    ceiling = 10e6 * 1460 / 1512
    assert 0.6 * ceiling < f.kernel_goodput_bps <= ceiling * 1.01, f.kernel_goodput_bps
    assert f.kernel_cc == "cubic" and f.kernel_mss == 1460
    # payload sent (retransmissions included) is at least what arrived, at most the wire rate
    assert f.kernel_goodput_bps * 0.99 <= f.kernel_throughput_bps <= 10e6
    # beside the matched mpsim run, the file's own; one ratio direction: mpsim / kernel
    assert f.mpsim_file_goodput_bps > 0 and f.ratio_mpsim_kernel == pytest.approx(f.mpsim_goodput_bps / f.kernel_goodput_bps)
    assert f.kernel_timeouts is not None and not f.stalled and f.kernel_longest_silence_s < 1.0
    assert {c["setting"] for c in res.changed} >= {"flow.tcp.tcp.header", "flow.tcp.tcp.delayed_ack", "flow.tcp.start"}
    p = res.paths.iloc[0]
    assert p.kernel_throughput_bps <= 10e6 * 1.01
    assert p.kernel_rtt_min_ms >= 40.0
    lat = res.runs[0]["lateness"]
    assert lat["count"] > 1000
    assert res.info["kernel"] == os.uname().release
    assert not _ours()


@needs_kernel
def test_two_path_kernel_run_within_the_emulated_rates():
    res = _kernel_run("mptcp_2x10m.toml", flow__mptcp__cc="reno")
    f = res.flows.iloc[0]
    # 1540 B packets; Linux puts the DSS mapping only on the first segment of each mapping,
    # so a segment carries at most 1488 B of payload (timestamps only)
    ceiling = 2 * 10e6 * 1488 / 1540
    assert 0.6 * ceiling < f.kernel_goodput_bps <= ceiling * 1.01, f.kernel_goodput_bps
    assert f.kernel_cc == "reno"
    for p in res.paths.itertuples():
        # both paths carry the flow, each within its own rate
        assert 0.2 * 10e6 < p.kernel_goodput_bps <= 10e6 * 1488 / 1540 * 1.01, p
        assert p.kernel_throughput_bps <= 10e6 * 1.01
    assert res.info["mptcp_scheduler"] != "n/a"
    # the kernel's timeouts per subflow (tcpi_total_rto) add up to what the flow row says
    assert res.paths.kernel_timeouts.notna().all()
    assert res.paths.kernel_timeouts.sum() == res.flows.kernel_timeouts.sum()
    sched = next(c for c in res.changed if c["setting"] == "flow.mptcp.scheduler")
    assert (sched["file"], sched["used"]) == ("lowest_rtt", ["linux_upstream"]) and "upstream" in sched["why"]
    # the counters kept are this run's, read in each side's own namespace: Reno has no
    # HyStart, and data arriving over two paths waits out of order at the connection level
    nst = res.runs[0]["nstat"]
    assert set(nst["client"]) == set(K.NSTAT_KEPT["client"]) and set(nst["server"]) == set(K.NSTAT_KEPT["server"])
    assert nst["client"]["TcpExtTCPHystartTrainDetect"] + nst["client"]["TcpExtTCPHystartDelayDetect"] == 0
    assert nst["server"]["MPTcpExtOFOQueue"] > 0
    assert not _ours()


@needs_kernel
def test_kernel_json_on_the_command_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "mpsim", "kernel", str(SCEN / "tcp_10m_loss1.toml"), "--set", "duration=4s",
                        "--set", "metrics.warmup=1s", "--set", "link.l0.loss=25%", "--repeat", "2", "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert (d["schema"], d["ratio"], d["scenario"]) == (result.SCHEMA, "mpsim/kernel", "tcp_10m_loss1")
    (f,) = d["flows"]
    assert f["repeats"] == 2 and len(d["repeats"]["flows"]) == 2 and len(d["runs"]) == 2
    k = [x["kernel_goodput_bps"] for x in d["repeats"]["flows"]]
    assert f["kernel_goodput_bps"]["median"] == pytest.approx(sum(k) / 2)
    assert f["ratio_mpsim_kernel"] == pytest.approx(f["mpsim_goodput_bps"] / f["kernel_goodput_bps"]["median"])
    # a quarter of the packets lost: Linux times out, and its count per subflow (tcpi_total_rto)
    # is the namespace's (nstat) when the flow is the only connection
    assert [x["kernel_timeouts"] for x in d["repeats"]["flows"]] == [r_["timeouts"] for r_ in d["runs"]]
    assert f["kernel_timeouts"] > 0 and f["mpsim_timeouts"] > 0
    (p,) = d["paths"]
    assert p["kernel_rtt_min_ms"] >= 40.0 and p["kernel_timeouts"] == f["kernel_timeouts"]
    assert {c["setting"] for c in d["settings_changed"]} >= {"flow.tcp.tcp.header", "link.l0.jitter"}
    assert not _ours()


@needs_kernel
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_removes_namespaces_devices_and_processes(sig):
    code = ("import mpsim.kernel.testbed as K\n"
            f"K.compare({str(SCEN / 'mptcp_2x10m.toml')!r}, duration='30s')\n")
    # Ctrl-C semantics even where this test runs with SIGINT ignored (a background job)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    tag = f"mpk{p.pid % 100000}"
    deadline = time.time() + 20
    while time.time() < deadline:
        if tag in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout:
            break
        time.sleep(0.2)
    else:
        pytest.fail(p.communicate()[1])
    time.sleep(5)  # the emulator and the transfer are running
    p.send_signal(sig)
    p.wait(timeout=30)
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert tag not in ns
    assert not _ours(p.pid)
    assert not _processes_of(p.pid)


SS_SAMPLE = """\
ESTAB 0      0      10.201.0.1:45678 10.201.0.2:5201
\t cubic wscale:7,7 rto:244 rtt:43.2/2.1 ato:40 mss:1460 pmtu:1512 rcvmss:536 advmss:1460 cwnd:36 ssthresh:28 bytes_sent:123 bytes_retrans:2920 bytes_acked:120000 segs_out:100 send 9.7Mbps retrans:0/2 minrtt:40.3 snd_wnd:126464 tcp-ulp-mptcp flags:Jec
ESTAB 0      0      10.201.1.1:40001 10.201.1.2:5201
\t reno wscale:7,7 rto:300 rtt:81.5/5 mss:1460 cwnd:10 bytes_acked:5000 minrtt:80.1
"""


def test_ss_output_is_parsed_per_subflow():
    a, b = K.parse_ss(SS_SAMPLE)
    assert (a["peer"], a["pport"], a["cc"], a["rtt_ms"], a["minrtt_ms"]) == ("10.201.0.2", 5201, "cubic", 43.2, 40.3)
    assert (a["bytes_acked"], a["retrans"], a["snd_wnd"], a["mss"], a["mptcp"]) == (120000, 2, 126464, 1460, True)
    assert (a["bytes_sent"], b["bytes_sent"]) == (123, 0)
    assert (b["cc"], b["retrans"], b["snd_wnd"], b["mptcp"]) == ("reno", 0, None, False)


# two BBR sockets as ss (iproute2 6.1, Linux 6.18) printed them: a sender, and a receiver whose
# BBR has no bandwidth sample yet (no gains printed)
SS_BBR = """\
0      0      127.0.0.1:51590 127.0.0.1:5999
\t bbr wscale:10,10 rto:204 rtt:0.119/0.129 mss:65483 pmtu:65535 rcvmss:536 advmss:65483 cwnd:18 ssthresh:8 bytes_sent:227596288 bytes_retrans:120832 bytes_acked:227475457 segs_out:3710 segs_in:1574 data_segs_out:3708 bbr:(bw:61631055144bps,mrtt:0.004,pacing_gain:1.25,cwnd_gain:2) send 79239932773bps lastsnd:56 lastrcv:560 lastack:56 pacing_rate 76268430744bps delivery_rate 1114604248bps delivered:3709 busy:356ms retrans:0/2 minrtt:0.004 snd_wnd:1799168
0      0      127.0.0.1:5999  127.0.0.1:51590
\t bbr wscale:10,10 rto:204 rtt:0.018/0.009 ato:40 mss:32768 pmtu:65535 rcvmss:65483 advmss:65483 cwnd:10 bytes_received:227475456 bbr:(bw:0bps,mrtt:0.018) send 145635555556bps pacing_rate 416204775192bps minrtt:0.018
"""


def test_bbr_model_is_parsed_from_ss():
    snd, rcv = K.parse_ss(SS_BBR)
    assert (snd["cc"], snd["pport"], snd["cwnd"], snd["retrans"]) == ("bbr", 5999, 18, 2)
    assert [snd[k] for k in K.BBR_COLUMNS] == [61631055144.0, 0.004, 1.25, 2.0]
    assert [rcv[k] for k in K.BBR_COLUMNS] == [0.0, 0.018, None, None]
    # SI prefixes, as other ss versions print the rate; no BBR block: all None
    assert K.parse_bbr("bbr:(bw:9.72Mbps,mrtt:40.2,pacing_gain:2.88672,cwnd_gain:2.88672)") == {
        "bbr_bw_bps": 9.72e6, "bbr_min_rtt_ms": 40.2, "bbr_pacing_gain": 2.88672, "bbr_cwnd_gain": 2.88672}
    assert set(K.parse_bbr("cubic wscale:7,7 rtt:43.2/2.1").values()) == {None}
    assert all(K.parse_ss(SS_SAMPLE)[0][k] is None for k in K.BBR_COLUMNS)


def test_kernel_command_is_documented():
    r = subprocess.run([sys.executable, "-m", "mpsim", "kernel", "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    for word in ("--repeat", "--out", "--json", "signal", "refused", "MPSIM_LINKEMU", "ratio mpsim/kernel", "stalled"):
        assert word in r.stdout, word
    assert mpsim.kernel.compare is K.compare and not callable(mpsim.kernel)


def test_a_missing_emulator_is_explained(monkeypatch, tmp_path):
    from mpsim.kernel import testbed

    monkeypatch.setenv("MPSIM_LINKEMU", str(tmp_path / "nowhere"))
    assert testbed.find_emulator() is None
    assert "MPSIM_LINKEMU names" in testbed.emulator_missing() and "nowhere" in testbed.emulator_missing()
    monkeypatch.delenv("MPSIM_LINKEMU")
    msg = testbed.emulator_missing()
    assert "MPSIM_LINKEMU" in msg and "cargo build --release -p mpsim-linkemu" in msg and "make wheel" in msg


def test_an_emulator_that_cannot_run_is_explained(tmp_path):
    f = tmp_path / "mpsim-linkemu"
    f.write_text("#!/bin/sh\necho 'wrong machine' >&2\nexit 126\n")
    assert "not executable" in K.emulator_problem(f)
    # on the command line: exit status 2 and the reason, before anything is set up
    env = {**os.environ, "MPSIM_LINKEMU": str(f)}
    r = subprocess.run([sys.executable, "-m", "mpsim", "kernel", str(SCEN / "tcp_10m.toml")], capture_output=True, text=True, env=env)
    assert r.returncode == 2 and r.stderr.strip() == f"error: {K.emulator_problem(f)}"
    f.chmod(0o755)
    assert "wrong machine" in K.emulator_problem(f)
    r = subprocess.run([sys.executable, "-m", "mpsim", "kernel", str(SCEN / "tcp_10m.toml")], capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "wrong machine" in r.stderr and "Traceback" not in r.stderr


@needs_emulator
def test_the_built_emulator_runs():
    assert K.emulator_problem(K.find_emulator()) is None


def test_longest_silence_counts_empty_bins_between_start_and_end():
    bins = [5, 0, 0, 3, 0, 0, 0, 0, 2]  # 100 ms each
    assert K.longest_silence(bins, 0.0, 0.9) == pytest.approx(0.4)
    assert K.longest_silence(bins, 0.0, 0.4) == pytest.approx(0.2)
    # bins the receiver never reached count as silence
    assert K.longest_silence(bins, 0.8, 1.5) == pytest.approx(0.6)


def _synthetic(goodputs, silences, errors=None, timeouts=None):
    import pandas as pd

    n = len(goodputs)
    flows = pd.DataFrame({"repeat": range(n), "seed": range(1, n + 1), "flow": "f",
                          "kernel_goodput_bps": goodputs, "mpsim_goodput_bps": [9e6] * n, "mpsim_file_goodput_bps": [10e6] * n,
                          "kernel_retransmits": [10] * n, "mpsim_retransmits": [12] * n,
                          "kernel_timeouts": timeouts or [1] * n, "mpsim_timeouts": [0] * n,
                          "kernel_longest_silence_s": silences, "error": errors or [None] * n})
    paths = pd.DataFrame({"repeat": range(n), "flow": "f", "path": "p0", "kernel_goodput_bps": goodputs,
                          "mpsim_goodput_bps": [9e6] * n, "mpsim_file_goodput_bps": [10e6] * n,
                          "kernel_retransmits": [10] * n, "mpsim_retransmits": [12] * n,
                          "kernel_timeouts": timeouts or [1] * n, "mpsim_timeouts": [0] * n,
                          "kernel_rtt_mean_ms": [45.0] * n, "kernel_rtt_min_ms": [40.1] * n, "mpsim_rtt_mean_ms": [44.0] * n,
                          "kernel_throughput_bps": [9.9e6] * n})
    return result.KernelResult("syn", flows, paths, pd.DataFrame(), [], {"cc_used": "reno"}, changed=[
        {"setting": "flow.f.tcp.header", "file": "40B", "used": ["52B"] * n, "why": "the kernel's bytes per packet"}])


def test_stalled_repeats_are_flagged_and_the_median_reported():
    res = _synthetic([8e6, 8.4e6, 3e6, 7.6e6, 8.2e6], [0.2, 0.3, 0.4, result.STALL_SILENCE_S, 0.1],
                     errors=[None, None, None, None, None])
    assert res.flows.stalled.tolist() == [False, False, True, True, False]
    assert "goodput 37% of the other repeats' median" == res.flows.stall_reason[2]
    assert res.flows.stall_reason[3] == f"nothing delivered for {result.STALL_SILENCE_S:.1f} s"
    (s,) = res.flow_summary()
    assert s["kernel_goodput_bps"]["median"] == 8e6 and s["kernel_goodput_bps"]["mean"] == pytest.approx(7.04e6)
    assert [x["repeat"] for x in s["stalled_repeats"]] == [2, 3]
    # one ratio direction: mpsim / kernel, of the medians
    assert s["ratio_mpsim_kernel"] == pytest.approx(9e6 / 8e6)
    table = res.report()
    assert "ratio mpsim/kernel" in table and "kernel/mpsim" not in table
    assert "| f | 8.00 (3.00-8.40) | 7.04 | 9.00 | 10.00 | 1.125 | 10 / 12 | 1 / 0 | 2 (goodput" in table
    assert "| f | p0 | 8.00 | 9.00 | 10.00 | 1.125 | 10 / 12 | 1 / 0 | 45.0 / 44.0 | 40.1 |" in table
    assert "| flow.f.tcp.header | 40B | 52B | the kernel's bytes per packet |" in table
    # a failed connection is stalled whatever its figures
    res = _synthetic([8e6, 8e6], [0.0, 0.0], errors=[None, "timed out"])
    assert res.flows.stalled.tolist() == [False, True] and res.flows.stall_reason[1] == "connection failed: timed out"


def test_the_json_document_has_the_documented_keys(tmp_path):
    res = _synthetic([8e6, 8.4e6, 7.9e6], [0.2, 0.3, 0.4])
    d = res.to_json()
    assert list(d) == ["schema", "scenario", "ratio", "info", "stall_rule", "settings_changed", "flows", "paths", "repeats", "runs"]
    assert d["schema"] == result.SCHEMA and d["ratio"] == "mpsim/kernel"
    assert set(d["flows"][0]) == {"flow", "repeats", "kernel_goodput_bps", "mpsim_goodput_bps", "mpsim_file_goodput_bps",
                                  "ratio_mpsim_kernel", "kernel_retransmits", "mpsim_retransmits", "kernel_timeouts",
                                  "mpsim_timeouts", "stalled_repeats"}
    assert set(d["paths"][0]) >= {"path", "ratio_mpsim_kernel", "kernel_timeouts", "kernel_rtt_mean_ms", "mpsim_rtt_mean_ms"}
    assert d["repeats"]["flows"][0]["stalled"] is False
    # the documented keys are the ones produced
    doc = (ROOT / "docs" / "kernel.md").read_text()
    for key in [*d, *d["flows"][0], *d["paths"][0], "stalled", "stall_reason", "kernel_longest_silence_s"]:
        assert f"`{key}`" in doc, key
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    # a figure that could not be measured is null, not NaN
    res.paths.loc[0, "kernel_rtt_min_ms"] = float("nan")
    res.paths["kernel_rtt_mean_ms"] = float("nan")
    res.runs.append({"repeat": 0, "lateness": {"mean_us": float("nan")}})
    d = res.to_json()
    assert d["paths"][0]["kernel_rtt_mean_ms"] is None and d["runs"][0]["lateness"]["mean_us"] is None
    json.dumps(d, allow_nan=False)


@needs_emulator
def test_settings_changed_name_the_files_value_the_used_one_and_why():
    from mpsim.scenario import apply_overrides, load

    d, origin = load(SCEN / "mptcp_tcp_shared.toml")
    d = apply_overrides(d, {"flow.tcp.tcp.delayed_ack": "linux"}, origin=origin)
    desc = K.describe(d, origin)
    used = [K.mpsim_overrides(desc, {"mptcp": 126562.0}, {"mptcp": 0.0203, "tcp": 0.0411}),
            K.mpsim_overrides(desc, {"mptcp": 126000.0}, {"mptcp": 0.0211, "tcp": 0.0411})]
    ch = {c["setting"]: c for c in result.settings_changed(d, desc, used)}
    assert (ch["flow.mptcp.scheduler"]["file"], ch["flow.mptcp.scheduler"]["used"]) == ("lowest_rtt", ["linux_upstream"] * 2)
    assert ch["flow.mptcp.start"]["used"] == ["20300us", "21100us"] and ch["flow.mptcp.start"]["file"] == "0us"
    assert ch["flow.mptcp.tcp.delayed_ack"]["file"] == "false"
    assert (ch["flow.tcp.tcp.ssthresh"]["file"], ch["flow.tcp.tcp.ssthresh"]["used"]) == ("flight", ["cwnd", "cwnd"])
    # a setting the file already has is not a change
    assert "flow.tcp.tcp.delayed_ack" not in ch
    assert ch["link.l0.jitter"]["used"] == [f"{round(K.KERNEL_JITTER * 1e9)}ns"] * 2
    assert (ch["metrics.interval"]["file"], ch["metrics.interval"]["used"]) == ("100ms", ["1s", "1s"])
    assert all(c["why"] for c in ch.values())
    # a file that already counts per second and starts its flows when the kernel did
    d = apply_overrides(d, {"metrics.interval": "1s", "flow.tcp.start": "41100us"}, origin=origin)
    ch = {c["setting"] for c in result.settings_changed(d, K.describe(d, origin), used)}
    assert "metrics.interval" not in ch and "flow.tcp.start" not in ch and "flow.mptcp.start" in ch


def test_the_table_generator_replaces_only_the_rows_it_measures_again(tmp_path):
    import pandas as pd

    from mpsim.kernel import report

    def rows(names, gp):
        return pd.DataFrame({"scenario": names, "cc": ["cubic"] * len(names), "repeat": [0] * len(names),
                             "flow": ["f"] * len(names), "kernel_goodput_bps": [gp] * len(names)})

    fl = rows(["tcp_10m", "mptcp_asym", "bbr_2x10m"], 1.0)
    saved = {"accuracy": ["acc"], "info": {"kernel": "k"}, "took_s": 2100.0,
             "runs": [{"scenario": n, "cc": "cubic"} for n in fl.scenario],
             "changed": {f"{n}/cubic": [n] for n in fl.scenario}}
    new_fl = rows(["mptcp_rtt_20_50", "mptcp_asym"], 2.0)
    new = {"runs": [{"scenario": n, "cc": "cubic", "new": True} for n in new_fl.scenario], "took_s": 120.0,
           "changed": {f"{n}/cubic": ["new"] for n in new_fl.scenario}, "accuracy": [], "info": {}}
    fl2, pa2, s2 = report.update_rows(fl, fl, saved, new_fl, new_fl, new)
    # every other row as saved, the measured ones replaced or added, in the table's order
    assert list(fl2.scenario) == ["tcp_10m", "mptcp_asym", "bbr_2x10m", "mptcp_rtt_20_50"] == list(pa2.scenario)
    assert list(fl2.kernel_goodput_bps) == [1.0, 2.0, 1.0, 2.0]
    assert [r.get("new", False) for r in s2["runs"]] == [False, True, False, True]
    assert s2["changed"]["mptcp_asym/cubic"] == ["new"] and s2["changed"]["tcp_10m/cubic"] == ["tcp_10m"]
    assert (s2["accuracy"], s2["info"], s2["took_s"]) == (["acc"], {"kernel": "k"}, 2100.0)
    assert list(s2["updated"]) == ["mptcp_asym", "mptcp_rtt_20_50"]
    # a name outside the table, or no saved table, is refused before anything runs
    with pytest.raises(SystemExit):
        report.main(["--update", "nope", "--out", str(tmp_path / "t.md")])
    with pytest.raises(SystemExit):
        report.main(["--update", "mptcp_rtt_20_50", "--out", str(tmp_path / "t.md")])


def test_the_table_generator_adds_the_files_own_runs_to_saved_data():
    import pandas as pd

    from mpsim.kernel import report

    fl = pd.DataFrame({"scenario": ["tcp_10m"] * 2, "cc": ["reno", "cubic"], "repeat": [0, 0], "seed": [2, 2],
                       "flow": ["tcp"] * 2, "kernel_goodput_bps": [9.6e6] * 2, "mpsim_goodput_bps": [9.6e6] * 2})
    pa = fl.assign(path="p0")
    fl2, pa2 = report.add_file_runs(fl, pa)
    for cc in ("reno", "cubic"):
        want = mpsim.run(SCEN / "tcp_10m.toml", overrides={"flow.*.cc": cc, "seed": 2}, progress=False).flows.goodput_bps[0]
        assert fl2[fl2.cc == cc].mpsim_file_goodput_bps.item() == want == pa2[pa2.cc == cc].mpsim_file_goodput_bps.item()
    assert list(fl2.columns).index("mpsim_file_goodput_bps") == list(fl2.columns).index("mpsim_goodput_bps") + 1


def test_the_table_generator_runs_the_matched_side_again_from_the_saved_kernel_runs(tmp_path):
    """--rematch: each saved repeat run again with its seed and the settings its kernel run
    gave; with the model unchanged the saved figures come back, and the kernel's stay."""
    import json
    import shutil

    import pandas as pd

    from mpsim.kernel import report

    src = ROOT / "docs" / "reports" / "kernel-results"
    data = tmp_path / "t"
    data.mkdir()
    saved = json.loads((src / "emulator.json").read_text())
    keep = [r for r in saved["runs"] if r["scenario"] == "tcp_10m"]
    (data / "emulator.json").write_text(json.dumps({**saved, "runs": keep}))
    fl, pa = (pd.read_csv(src / f).query("scenario == 'tcp_10m'") for f in ("runs.csv", "paths.csv"))
    for df, f in ((fl, "runs.csv"), (pa, "paths.csv")):
        df.assign(mpsim_goodput_bps=1.0, mpsim_retransmits=-1).to_csv(data / f, index=False)
    shutil.copy(src.with_suffix(".md"), tmp_path / "t.md")
    assert report.main(["--rematch", "--out", str(tmp_path / "t.md")]) == 0
    fl2, pa2 = pd.read_csv(data / "runs.csv"), pd.read_csv(data / "paths.csv")
    assert list(fl2.mpsim_goodput_bps) == list(fl.mpsim_goodput_bps)
    assert list(fl2.mpsim_retransmits) == list(fl.mpsim_retransmits)
    assert list(pa2.mpsim_goodput_bps) == list(pa.mpsim_goodput_bps)
    assert list(fl2.kernel_goodput_bps) == list(fl.kernel_goodput_bps)
    assert list(fl2.ratio_mpsim_kernel) == pytest.approx(list(fl.mpsim_goodput_bps / fl.kernel_goodput_bps))
    assert "run again on" in (tmp_path / "t.md").read_text()
    with pytest.raises(SystemExit):
        report.main(["--rematch", "--update", "tcp_10m", "--out", str(tmp_path / "t.md")])
    with pytest.raises(SystemExit):
        report.main(["--rematch", "--out", str(tmp_path / "none.md")])


@needs_emulator
def test_sack_off_maps_to_the_namespaces_only_when_every_flow_agrees():
    from mpsim.scenario import apply_overrides, load

    d, origin = load(SCEN / "mptcp_tcp_shared.toml")
    assert not K.unmappable(K.describe(apply_overrides(d, {"tcp.sack": False}), origin))
    d, origin = load(SCEN / "mptcp_tcp_shared.toml")
    mixed = apply_overrides(d, {"flow.mptcp.tcp.sack": False})
    assert any("different tcp.sack per flow" in m for m in K.unmappable(K.describe(mixed, origin)))


def test_a_kernel_flow_starts_at_its_first_write():
    # the sender samples `ss` before its first write: the matched mpsim flow starts when the
    # kernel's data did, not at the handshake's end (on a trace-driven link the milliseconds
    # between them move the flow to other delivery opportunities)
    assert K.flow_start_s({"established_s": 0.0479, "first_write_s": 0.0545}) == 0.0545
    assert K.flow_start_s({"established_s": 0.0479, "first_write_s": None}) == 0.0479
    assert K.flow_start_s({"established_s": None}) is None
