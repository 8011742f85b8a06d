"""Probes behind the explanations in docs/kernel.md (the rows one by one).

    sudo .venv/bin/python benches/kernel_probe.py capture SCENARIO CC OUT
        one kernel run of scenarios/kernel/SCENARIO.toml with congestion control CC; while it
        runs, the client's sockets are sampled with `ss` every 50 ms (OUT/ss.txt) and what the
        client writes into each path's TUN device is captured (OUT/<path>.pcap, needs dumpcap)
    .venv/bin/python benches/kernel_probe.py ss OUT
        per subflow, from 2 s on: mean cwnd, segments unacknowledged, bytes not yet sent, the
        window offered (mean, min, max), and how many samples had fewer unacknowledged than cwnd
    .venv/bin/python benches/kernel_probe.py pcap OUT/<path>.pcap
        per TCP connection: data packets, retransmissions (by tshark), retransmission
        episodes, packets per back-to-back burst (gaps < 100 us), ACKs per data packet
    .venv/bin/python benches/kernel_probe.py starts SCENARIO CC N
        mpsim as `mpsim kernel` configures it, N runs with seeds 1..N, the second and later
        flows starting at a uniform draw in [0, 50 ms): each flow's goodput range and mean
    .venv/bin/python benches/kernel_probe.py slowstart CC
        single-path tcp_10m: the window at which slow start ended and the retransmissions,
        with delayed ACKs every second segment and with Linux's
"""

from __future__ import annotations

import collections
import random
import re
import statistics as st
import subprocess
import sys
import time
from pathlib import Path

from mpsim import kernel as K
from mpsim.api import run
from mpsim.scenario import apply_overrides, load

SCEN = Path(__file__).resolve().parents[1] / "scenarios" / "kernel"


def _load(name: str, cc: str):
    d, origin = load(SCEN / f"{name}.toml")
    d = apply_overrides(d, {"flow.*.cc": cc}, origin=origin)
    return d, K.describe(d, origin)


def capture(name: str, cc: str, out: str) -> None:
    o = Path(out)
    o.mkdir(parents=True, exist_ok=True)
    setup, close = K.Testbed._setup, K.Testbed.close
    procs: list[subprocess.Popen] = []

    def _setup(tb):
        setup(tb)
        ns = tb.ns["client"]
        with open(o / "ss.txt", "w") as f:
            procs.append(subprocess.Popen(["ip", "netns", "exec", ns, "sh", "-c",
                "while true; do echo T $(date +%s.%N); ss -tinH state established; sleep 0.05; done"], stdout=f))
        for p, (client_tun, _) in tb.tuns.items():
            procs.append(subprocess.Popen(["ip", "netns", "exec", ns, "dumpcap", "-q", "-i", client_tun, "-s", "128",
                                           "-w", str(o / f"{p}.pcap")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(1.0)

    def _close(tb):
        for p in procs:
            p.terminate()
            p.wait()
        close(tb)

    K.Testbed._setup, K.Testbed.close = _setup, _close
    r = K.kernel(SCEN / f"{name}.toml", repeat=1, overrides={"flow.*.cc": cc})
    print(r.paths.to_string())


def ss(out: str) -> None:
    t0, subs, i = None, collections.defaultdict(list), 0
    lines = (Path(out) / "ss.txt").read_text().splitlines()
    while i < len(lines):
        if lines[i].startswith("T "):
            t = float(lines[i].split()[1])
            t0 = t0 or t
        else:
            m = re.search(r"(\S+):\d+\s+(\S+):(\d+)", lines[i])
            if m and i + 1 < len(lines) and t0 is not None:
                d = lines[i + 1]
                g = lambda k: int(x.group(1)) if (x := re.search(k + r":(\d+)", d)) else 0  # noqa: E731
                if t - t0 >= 2:
                    subs[(m.group(1), m.group(3))].append((g("cwnd"), g("unacked"), g("notsent"), g("snd_wnd")))
                i += 1
        i += 1
    for k, s in subs.items():
        print(f"{k[0]} -> port {k[1]}: {len(s)} samples, cwnd {st.mean(x[0] for x in s):.1f}, "
              f"unacked {st.mean(x[1] for x in s):.1f}, not sent {st.mean(x[2] for x in s):.0f} B, "
              f"window mean {st.mean(x[3] for x in s):.0f} min {min(x[3] for x in s)} max {max(x[3] for x in s)} B, "
              f"unacked < cwnd in {sum(x[1] < x[0] for x in s)}")


def pcap(file: str) -> None:
    rows = subprocess.run(["tshark", "-r", file, "-T", "fields", "-e", "frame.time_epoch", "-e", "tcp.srcport",
                           "-e", "tcp.dstport", "-e", "tcp.len", "-e", "tcp.analysis.retransmission", "-E", "separator=,"],
                          capture_output=True, text=True).stdout.splitlines()
    data, acks = collections.defaultdict(list), collections.Counter()
    for r in (x.split(",") for x in rows):
        if len(r) < 5 or not r[3]:
            continue
        if int(r[3]) >= 100:
            data[(r[1], r[2])].append((float(r[0]), r[4] != ""))
        elif int(r[3]) == 0:
            acks[(r[2], r[1])] += 1
    for k, v in data.items():
        t = [a for a, _ in v]
        rtx = [a for a, b in v if b]
        episodes = sum(1 for j, a in enumerate(rtx) if j == 0 or a - rtx[j - 1] > 0.3)
        bursts = 1 + sum(1 for j in range(1, len(t)) if t[j] - t[j - 1] >= 100e-6)
        print(f"port {k[0]} -> {k[1]}: {len(t)} data packets, {len(rtx)} retransmissions in {episodes} episodes "
              f"(first at {rtx[0] - t[0]:.2f} s: {sum(1 for a in rtx if a - rtx[0] < 0.3)} of them), "
              f"{len(t) / bursts:.2f} packets per burst, {acks[k] / len(t):.2f} ACKs per data packet" if rtx else
              f"port {k[0]} -> {k[1]}: {len(t)} data packets, no retransmission")


def starts(name: str, cc: str, n: int) -> None:
    d, desc = _load(name, cc)
    got = collections.defaultdict(list)
    for seed in range(1, n + 1):
        rnd = random.Random(seed)
        first = desc["flows"][0]["name"]
        st_ = {f["name"]: (0.0 if f["name"] == first else rnd.uniform(0, 0.05)) for f in desc["flows"]}
        r = run(d, overrides={**K.mpsim_overrides(desc, None, st_), "seed": seed}, progress=False)
        for x in r.flows.itertuples():
            got[x.flow].append(x.goodput_bps / 1e6)
    for f, v in got.items():
        print(f"{f}: {min(v):.2f} to {max(v):.2f} Mbit/s, mean {st.mean(v):.2f}")


def slowstart(cc: str) -> None:
    d, desc = _load("tcp_10m", cc)
    for mode in (True, "linux"):
        ov = {**K.mpsim_overrides(desc), "flow.tcp.tcp.delayed_ack": mode, "metrics.interval": "10ms",
              "duration": "2s", "metrics.warmup": "0s"}
        r = run(d, overrides=ov, progress=False)
        s = r.subflow_series
        exit_at = s[s.ssthresh_bytes < float("inf")].head(1)
        print(f"delayed_ack = {mode!r}: slow start ended at {exit_at.time_s.iloc[0]:.2f} s with ssthresh "
              f"{exit_at.ssthresh_bytes.iloc[0] / 1e3:.0f} KB; {int(r.flows.retransmits.iloc[0])} retransmissions in 2 s")


if __name__ == "__main__":
    cmd, *args = sys.argv[1:] or ["-h"]
    fns = {"capture": capture, "ss": ss, "pcap": pcap, "starts": lambda a, b, c: starts(a, b, int(c)), "slowstart": slowstart}
    if cmd not in fns:
        print(__doc__)
        sys.exit(2)
    fns[cmd](*args)
