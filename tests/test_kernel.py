"""`mpsim kernel`: the link emulator's accuracy and short runs through the Linux kernel.

The tests that need the kernel side run only where the machine allows it (root,
/dev/net/tun, Multipath TCP enabled, iproute2 and the emulator built) and are skipped with the
reason otherwise. The refusal of unmappable scenarios needs only the emulator binary.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import mpsim
from mpsim.kernel import testbed as K

ROOT = Path(__file__).resolve().parents[1]
SCEN = ROOT / "scenarios" / "kernel"

ok, why = K.available(multipath=True)
needs_kernel = pytest.mark.skipif(not ok, reason=f"the kernel side {why}")
needs_emulator = pytest.mark.skipif(K.find_emulator() is None, reason="the link emulator is not built")


def _ours() -> set[str]:
    """Namespaces and devices this module's runs may have created."""
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return {n for n in ns if n.startswith("mpk")} | {w.rstrip(":") for w in links.split() if w.startswith("mk")}


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
    assert ov["flow.mptcp.tcp.rcv_buf"] == "126562B"
    assert (ov["flow.mptcp.start"], ov["flow.tcp.start"]) == ("20300us", "41100us")
    assert ov["link.l0.jitter"] == ov["link.l1.jitter"] == f"{round(K.KERNEL_JITTER * 1e9)}ns"
    # the overrides make a valid scenario, and its runs now differ from seed to seed
    short = {**ov, "duration": "3s", "metrics.warmup": "1s"}
    runs = [mpsim.run(apply_overrides(d, short, origin=origin), overrides={"seed": s}, progress=False) for s in (1, 2)]
    a, b = (r.flows.set_index("flow").goodput_bps for r in runs)
    assert not a.equals(b)


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
    assert not _ours()
    cmdlines = []
    for d in Path("/proc").iterdir():
        try:
            cmdlines.append((d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    assert not [c for c in cmdlines if tag in c or ("mpsim-linkemu --config" in c and "mpsim-kernel-" in c)]


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


def test_kernel_command_is_documented():
    r = subprocess.run([sys.executable, "-m", "mpsim", "kernel", "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    for word in ("--repeat", "--out", "signal", "refused"):
        assert word in r.stdout, word
    assert mpsim.kernel.compare is K.compare and not callable(mpsim.kernel)


def test_a_missing_emulator_is_explained(monkeypatch, tmp_path):
    from mpsim.kernel import testbed

    monkeypatch.setenv("MPSIM_LINKEMU", str(tmp_path / "nowhere"))
    assert testbed.find_emulator() is None
    assert "MPSIM_LINKEMU names" in testbed.emulator_missing() and "nowhere" in testbed.emulator_missing()
    monkeypatch.delenv("MPSIM_LINKEMU")
    msg = testbed.emulator_missing()
    assert "MPSIM_LINKEMU" in msg and "cargo build --release -p mpsim-linkemu" in msg and "wheel" in msg


@needs_emulator
def test_sack_off_maps_to_the_namespaces_only_when_every_flow_agrees():
    from mpsim.scenario import apply_overrides, load

    d, origin = load(SCEN / "mptcp_tcp_shared.toml")
    assert not K.unmappable(K.describe(apply_overrides(d, {"tcp.sack": False}), origin))
    d, origin = load(SCEN / "mptcp_tcp_shared.toml")
    mixed = apply_overrides(d, {"flow.mptcp.tcp.sack": False})
    assert any("different tcp.sack per flow" in m for m in K.unmappable(K.describe(mixed, origin)))
