"""Probes behind the explanations in docs/kernel.md (the rows one by one).

    sudo .venv/bin/python benches/kernel_probe.py capture SCENARIO CC OUT [SS_EVERY] [yes|no]
        one kernel run of scenarios/kernel/SCENARIO.toml (or of the file SCENARIO if it ends in
        .toml) with congestion control CC; while it
        runs, the client's sockets are sampled with `ss` every SS_EVERY s (default 0.05; 0:
        none; OUT/ss.txt) and, unless `no`, what the client writes into each path's TUN device
        is captured (OUT/<path>.pcap, needs dumpcap), and what the server's side of the path
        receives and sends (OUT/<path>-server.pcap). Both disturb the run: they take CPU from
        the receiving program, which the kernel's ACKs depend on (docs/kernel.md)
    sudo .venv/bin/python benches/kernel_probe.py rcvmem SCENARIO CC OUT [EVERY]
        one kernel run; the receiving side's sockets, the Multipath TCP connection's included,
        are sampled with `ss -tinmM` every EVERY s (default 0.1) in `server` (OUT/ss_server.txt):
        receive memory held (skmem r), receive buffer (rb), window offered (rcv_space,
        rcv_wnd); then summarised (`rcvmem OUT` alone summarises again)
    sudo .venv/bin/python benches/kernel_probe.py sndmem SCENARIO CC OUT [EVERY]
        one kernel run; the sending side's sockets, the Multipath TCP connection's included,
        are sampled with `ss -tinmM` every EVERY s (default 0.05) in `client`
        (OUT/ss_client.txt): per socket from 5 s on, its send buffer (skmem tb), the bytes
        charged to it (w) and how often at least 2/3 of it was charged (a writer waiting
        for room is woken only below that); `sndmem OUT` alone summarises again
    .venv/bin/python benches/kernel_probe.py ss OUT
        per subflow, from 2 s on: mean cwnd, segments unacknowledged, bytes not yet sent, the
        window offered (mean, min, max), how many samples had fewer unacknowledged than cwnd;
        cwnd growth per smoothed RTT in congestion avoidance and new ssthresh / cwnd at cuts
    .venv/bin/python benches/kernel_probe.py pcap OUT/<path>.pcap
        per TCP connection: data packets, retransmissions (by tshark), retransmission
        episodes, packets per back-to-back burst (gaps < 100 us), ACKs per data packet
    sudo .venv/bin/python benches/kernel_probe.py trace SCENARIO CC OUT [FLOW=BYTES]
        one kernel run with the kernel's own tracepoints recorded in a tracing instance of its
        own (OUT/trace.txt, CLOCK_MONOTONIC): every ACK the client's sockets take in (tcp_probe:
        cwnd, ssthresh, srtt, snd_una, snd_nxt), congestion-state changes, retransmissions,
        every packet written into the TUN devices (net_dev_xmit, with the process that wrote
        it) and the endpoints' read and write sizes; no sampling process, no capture, so the
        run is not disturbed. FLOW=BYTES sets SO_RCVLOWAT on that flow's receiving socket
    .venv/bin/python benches/kernel_probe.py acks OUT
        from OUT/trace.txt, per client socket from 2 s on: goodput, ACKs per segment, segments
        acknowledged per ACK, mean cwnd, how often in flight reached cwnd, recovery episodes,
        retransmissions; per receiving device, which process wrote the ACKs (the receiving
        program, from its read; or whichever process the packet's arrival interrupted)
    .venv/bin/python benches/kernel_probe.py stalls OUT
        from OUT/trace.txt, per client socket: when slow start ended and the largest cwnd; from
        5 s on, entries into CWR (ECN) and into Recovery or Loss, time spent in CWR, mean and
        largest cwnd; per client device (path),
        the gaps over 50 ms between data packets written to it, and the application's writes
        that fell inside them
    .venv/bin/python benches/kernel_probe.py mpsim-phase SCENARIO CC OFFSET_MS [SEEDS]
        mpsim as `mpsim kernel` configures it with every trace started OFFSET_MS into itself
        (rotated copies beside the scenario), seeds 1..SEEDS (default 3): goodput per path,
        each subflow's first ssthresh (slow start's end) and largest window, the connection
        send buffer `linux_upstream` sizes from them
    sudo .venv/bin/python benches/kernel_probe.py lowat SCENARIO CC N FLOW=BYTES
        N kernel runs (with mpsim beside) with SO_RCVLOWAT on FLOW's receiving socket: a reader
        that waits for BYTES never empties the socket after a lone pushed segment
    .venv/bin/python benches/kernel_probe.py psh OUT/<path>.pcap
        per TCP connection: back-to-back bursts by length, how often each ends with or holds a
        PSH segment, and the spacing of PSH segments
    .venv/bin/python benches/kernel_probe.py bursts OUT/<path>.pcap
        per TCP connection, from 2 s after its first data packet: back-to-back bursts of data
        packets (gaps < 100 us) as written to the path, the share of packets in bursts of 1,
        2-3, 4-7, ... 64+, mean and largest
    .venv/bin/python benches/kernel_probe.py mpsim-bursts SCENARIO CC PATH [SEED]
        the same for mpsim's sends on PATH as `mpsim kernel` configures it (from 2 s), with its
        drops at the queue, and the mean cwnd, flight and srtt per subflow
    .venv/bin/python benches/kernel_probe.py mpsim-acks SCENARIO CC
        the same ACK statistics for mpsim as `mpsim kernel` configures it (seed 1, 20 s)
    .venv/bin/python benches/kernel_probe.py windows SCENARIO CC BYTES...
        mpsim as `mpsim kernel` configures it with each receive window in turn (seeds 1..3):
        goodput per path and in all
    .venv/bin/python benches/kernel_probe.py starts SCENARIO CC N
        mpsim as `mpsim kernel` configures it, N runs with seeds 1..N, the second and later
        flows starting at a uniform draw in [0, 50 ms): each flow's goodput range and mean
    .venv/bin/python benches/kernel_probe.py slowstart CC
        single-path tcp_10m: the window at which slow start ended and the retransmissions,
        with delayed ACKs every second segment and with Linux's
    .venv/bin/python benches/kernel_probe.py ssexit OUT
        per subflow of a `capture` run (OUT/ss.txt): when the first ssthresh appeared (slow
        start's end), the window then and the largest before it, retransmissions by 5 s
    .venv/bin/python benches/kernel_probe.py ssexit-mpsim SCENARIO CC [SEEDS] [KEY=VALUE...]
        the same from mpsim's series (10 ms) as `mpsim kernel` configures it, seeds 1..SEEDS
        (default 3), with each link's queue drops; KEY=VALUE changes the configuration further
        (e.g. flow.mptcp.tcp.delayed_ack=false)
"""

from __future__ import annotations

import collections
import json
import random
import re
import shutil
import statistics as st
import subprocess
import sys
import time
from pathlib import Path

from mpsim.kernel import testbed as K
from mpsim.api import run
from mpsim.scenario import apply_overrides, load, parse_value

SCEN = Path(__file__).resolve().parents[1] / "scenarios" / "kernel"


def _path(name: str) -> Path:
    """A scenario named under scenarios/kernel, or a path to a scenario file (NAME.toml)."""
    return Path(name) if name.endswith(".toml") else SCEN / f"{name}.toml"


def _load(name: str, cc: str):
    d, origin = load(_path(name))
    d = apply_overrides(d, {"flow.*.cc": cc}, origin=origin)
    return d, K.describe(d, origin)


def _run_with(name: str, cc: str, start) -> None:
    """One kernel run of scenario `name` with controller `cc`, with `start(tb)` called once the
    testbed is up to start probe processes (it returns them); they are stopped before the
    testbed is taken down."""
    setup, close = K.Testbed._setup, K.Testbed.close
    procs: list[subprocess.Popen] = []

    def _setup(tb):
        setup(tb)
        procs.extend(start(tb))
        time.sleep(1.0)

    def _close(tb):
        for p in procs:
            p.terminate()
            p.wait()
        close(tb)

    K.Testbed._setup, K.Testbed.close = _setup, _close
    r = K.compare(_path(name), repeat=1, overrides={"flow.*.cc": cc})
    print(r.paths.to_string())


def capture(name: str, cc: str, out: str, ss_every: str = "0.05", pcap: str = "yes") -> None:
    o = Path(out)
    o.mkdir(parents=True, exist_ok=True)

    def start(tb):
        ns, procs = tb.ns["client"], []
        if float(ss_every) > 0:
            with open(o / "ss.txt", "w") as f:
                procs.append(subprocess.Popen(["ip", "netns", "exec", ns, "sh", "-c",
                    f"while true; do echo T $(date +%s.%N); ss -tinH state established; sleep {ss_every}; done"], stdout=f))
        for p, tuns in (tb.tuns.items() if pcap == "yes" else ()):
            for side, tun, suffix in zip(("client", "server"), tuns, ("", "-server")):
                procs.append(subprocess.Popen(["ip", "netns", "exec", tb.ns[side], "dumpcap", "-q", "-i", tun, "-s", "128",
                                               "-w", str(o / f"{p}{suffix}.pcap")],
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        return procs

    _run_with(name, cc, start)


def _ss_memory(name: str, cc: str | None, out: str | None, every: str, side: str, skip_s: float):
    """Runs NAME with CC sampling `ss -tinmMH` every EVERY s in SIDE's namespace into
    OUT/ss_SIDE.txt (with CC None, NAME is the OUT of a run already made), then yields
    (socket (local, peer, ...), its detail line) for every sample from SKIP_S s on."""
    if out is None:  # summarise a run already made
        out, cc = name, None
    o = Path(out)
    if cc is not None:
        o.mkdir(parents=True, exist_ok=True)

        def start(tb):
            with open(o / f"ss_{side}.txt", "w") as f:
                return [subprocess.Popen(["ip", "netns", "exec", tb.ns[side], "sh", "-c",
                        f"while true; do echo T $(date +%s.%N); ss -tinmMH; sleep {every}; done"], stdout=f)]

        _run_with(name, cc, start)
    t0, t, key = None, 0.0, None
    for line in (o / f"ss_{side}.txt").read_text().splitlines():
        if line.startswith("T "):
            t = float(line.split()[1])
            t0 = t0 or t
            continue
        m = re.match(r"(\S+)\s+ESTAB\s+\d+\s+\d+\s+(\S+)\s+(\S+)", line)
        if m:
            key = (m.group(1), m.group(2), m.group(3))
            continue
        if key is not None and t0 is not None and t - t0 >= skip_s:
            yield key, line
        key = None


def _field(pattern: str, line: str) -> int | None:
    return int(x.group(1)) if (x := re.search(pattern, line)) else None


def rcvmem(name: str, cc: str | None = None, out: str | None = None, every: str = "0.1") -> None:
    # per socket (local address:port), from 2 s on: skmem r (memory held), rb, rcv_wnd
    rows = collections.defaultdict(list)
    for key, line in _ss_memory(name, cc, out, every, "server", 2):
        r_, rb, ooo = _field(r"skmem:\(r(\d+)", line), _field(r",rb(\d+)", line), _field(r"rcv_ooopack:(\d+)", line)
        if r_ is not None:
            rows[key].append((r_, rb, _field(r"rcv_ssthresh:(\d+)", line), ooo))
    for k, v in rows.items():
        rs = sorted(x[0] for x in v)
        ssth = [x[2] for x in v if x[2] is not None]
        print(f"{k[0]} {k[1]} <- {k[2]}: {len(v)} samples, memory held (skmem r) mean {st.mean(rs):.0f}, "
              f"p90 {rs[len(rs) * 9 // 10]}, max {rs[-1]} B of rb {v[0][1]} B"
              + (f"; rcv_ssthresh min {min(ssth)} max {max(ssth)} B" if ssth else ""))


def sndmem(name: str, cc: str | None = None, out: str | None = None, every: str = "0.05") -> None:
    # per socket (the MPTCP one and each subflow), from 5 s on: skmem tb (the send buffer) and
    # w (bytes charged to it)
    rows = collections.defaultdict(list)
    for key, line in _ss_memory(name, cc, out, every, "client", 5):
        tb, w = _field(r",tb(\d+)", line), _field(r",w(\d+)", line)
        if tb is not None:
            rows[key].append((tb, w))
    for k, v in rows.items():
        tbs = [x[0] for x in v]
        full = sum(1 for tb, w in v if w * 3 >= 2 * tb)
        print(f"{k[0]} {k[1]} -> {k[2]}: {len(v)} samples, send buffer (tb) mean {st.mean(tbs):.0f} min {min(tbs)} max {max(tbs)} B, "
              f"charged (w) mean {st.mean(x[1] for x in v):.0f} B; charged at least 2/3 of it (a writer waits) in {full / len(v):.2f}")


TRACEFS = Path("/sys/kernel/tracing")
TRACE_EVENTS = ("tcp/tcp_probe", "tcp/tcp_cong_state_set", "tcp/tcp_retransmit_skb", "net/net_dev_xmit",
                "sock/sock_send_length", "sock/sock_recv_length")


def _with_rcvlowat(lowat: dict[str, int]):
    """Has the receiving program set SO_RCVLOWAT on the named flows' sockets (the receiver
    endpoint reads the `rcvlowat` entry of its configuration)."""
    spawn = K.Testbed.spawn

    def _spawn(tb, side, args):
        if args[0] == "receiver" and lowat:
            cfg = json.loads(Path(args[1]).read_text())
            cfg["rcvlowat"] = lowat
            Path(args[1]).write_text(json.dumps(cfg))
        return spawn(tb, side, args)

    K.Testbed.spawn = _spawn


def _lowat_args(args) -> dict[str, int]:
    return {k: int(v) for k, v in (a.split("=", 1) for a in args)}


def trace(name: str, cc: str, out: str, *lowat: str) -> None:
    o = Path(out)
    o.mkdir(parents=True, exist_ok=True)
    if not (TRACEFS / "events").exists():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=True)
    inst = TRACEFS / "instances" / "mpsim_probe"
    if not inst.exists():
        inst.mkdir()
    d, desc = _load(name, cc)
    ports = " || ".join(f"dport == {5201 + k}" for k in range(len(desc["flows"])))
    (inst / "tracing_on").write_text("0")
    (inst / "trace_clock").write_text("mono")
    (inst / "buffer_size_kb").write_text("65536")
    (inst / "trace").write_text("")
    for ev in TRACE_EVENTS:
        # every packet either side hands to its TUN devices (named mk<tag>c<path>, mk<tag>s<path>)
        flt = {"net/net_dev_xmit": 'name ~ "mk*"', "sock/sock_send_length": "family == 2 && ret > 0",
               "sock/sock_recv_length": "family == 2 && ret > 0"}.get(ev, ports)
        (inst / "events" / ev / "filter").write_text(flt)
        (inst / "events" / ev / "enable").write_text("1")
    (inst / "tracing_on").write_text("1")
    _with_rcvlowat(_lowat_args(lowat))
    try:
        r = K.compare(_path(name), repeat=1, overrides={"flow.*.cc": cc})
    finally:
        (inst / "tracing_on").write_text("0")
        for ev in TRACE_EVENTS:
            (inst / "events" / ev / "enable").write_text("0")
        with open(o / "trace.txt", "w") as f, open(inst / "trace") as src:
            shutil.copyfileobj(src, f)
        inst.rmdir()
    r.save(o)
    print(r.paths.to_string())


_TRACE_LINE = re.compile(r"^\s*(\S+)-\d+\s+\[\d+\]\s+\S+\s+([\d.]+): (\w+): (.*)$")


def _trace_events(out: str):
    for line in (Path(out) / "trace.txt").read_text().splitlines():
        m = _TRACE_LINE.match(line)
        if m:
            yield m.group(1), float(m.group(2)), m.group(3), m.group(4)


def acks(out: str) -> None:
    socks: dict[str, list] = collections.defaultdict(list)
    states: dict[str, list] = collections.defaultdict(list)
    rtx: collections.Counter = collections.Counter()
    xmit: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    t0 = None
    for comm, t, kind, rest in _trace_events(out):
        kv = dict(x.split("=", 1) for x in rest.split() if "=" in x)
        if kind == "tcp_probe":
            t0 = t0 if t0 is not None else t
            key = f"{kv['src'].rsplit(':', 1)[0]} -> {kv['dest']}"
            socks[key].append((t, int(kv["snd_una"], 16), int(kv["snd_cwnd"]), int(kv["snd_nxt"], 16)))
        elif kind == "tcp_cong_state_set":
            states[f"{kv['saddr']} -> {kv['daddr']}:{kv['dport']}"].append((t, int(kv["cong_state"])))
        elif kind == "tcp_retransmit_skb":
            rtx[f"{kv['saddr']} -> {kv['daddr']}:{kv['dport']}"] += (t0 is not None and t - t0 >= 2)
        elif kind == "net_dev_xmit" and int(kv["len"]) < 200 and "s" in kv["dev"][-3:]:
            xmit[kv["dev"][-2:]][(int(kv["len"]), comm)] += 1
    for key, v in sorted(socks.items()):
        v = [x for x in v if x[0] - t0 >= 2]
        mss = 1460 if key.endswith(":5202") or ":520" not in key else 1464
        acked = (v[-1][1] - v[0][1]) % 2**32
        per = collections.Counter(min(round(((b[1] - a[1]) % 2**32) / mss), 3) for a, b in zip(v, v[1:]))
        n = sum(per.values())
        rec = sum(1 for t, s in states.get(key, []) if s in (3, 4) and t - t0 >= 2)
        print(f"{key}: {acked * 8 / (v[-1][0] - v[0][0]) / 1e6:.2f} Mbit/s, {len(v) / (acked / mss):.2f} ACKs per segment, "
              f"segments per ACK " + ", ".join(f"{k}{'+' if k == 3 else ''}: {c / n:.3f}" for k, c in sorted(per.items())) +
              f"; mean cwnd {st.mean(x[2] for x in v):.1f}, in flight at least cwnd at "
              f"{sum(((x[3] - x[1]) % 2**32) / mss >= x[2] - 0.5 for x in v) / len(v):.0%} of ACKs; "
              f"{rec} recoveries, {rtx[key]} retransmissions")
    for dev, c in sorted(xmit.items()):
        print(f"ACKs written into the receiver's device {dev}: " +
              ", ".join(f"{ln} B by {comm}: {k}" for (ln, comm), k in sorted(c.items(), key=lambda x: -x[1]) if k >= 20))


def stalls(out: str, skip_s: float = 5.0) -> None:
    probes: dict[str, list] = collections.defaultdict(list)
    states: dict[str, list] = collections.defaultdict(list)
    xmit: dict[str, list[float]] = collections.defaultdict(list)
    writes: list[float] = []
    t0 = None
    for _, t, kind, rest in _trace_events(out):
        kv = dict(x.split("=", 1) for x in rest.split() if "=" in x)
        if kind == "tcp_probe":
            t0 = t0 if t0 is not None else t
            ssthresh = int(kv["ssthresh"])
            probes[kv["src"].rsplit(":", 1)[0]].append((t, int(kv["snd_cwnd"]), ssthresh if ssthresh < 2**31 - 1 else None,
                                                          int(kv["srtt"]) / 1e3))
        elif kind == "tcp_cong_state_set":
            states[kv["saddr"]].append((t, int(kv["cong_state"])))
        elif kind == "net_dev_xmit" and int(kv["len"]) >= 1000 and "c" in kv["dev"][-2:]:
            xmit[kv["dev"]].append(t)  # data the client wrote into a path's device
        elif kind == "sock_send_length" and ("IPPROTO_MPTCP" in rest or "IPPROTO_TCP" in rest):
            writes.append(t)
    if t0 is None:
        return
    for addr, v in sorted(probes.items()):
        first = next((x for x in v if x[2] is not None), None)
        print(f"{addr}: first ACK at {v[0][0] - t0:.3f} s (smoothed RTT {v[0][3]:.1f} ms), "
              + (f"slow start ended {(first[0] - v[0][0]) * 1e3:.0f} ms later with cwnd {first[1]} "
                 f"(smoothed RTT {first[3]:.1f} ms)" if first else "slow start never ended")
              + f", largest cwnd {max(x[1] for x in v)}")
        v = [x for x in v if x[0] - t0 >= skip_s]
        s = [x for x in states[addr] if x[0] - t0 >= skip_s]
        in_cwr, since = 0.0, None
        for t, c in s:  # tcp_ca_state: 0 Open, 1 Disorder, 2 CWR, 3 Recovery, 4 Loss
            if c == 2 and since is None:
                since = t
            elif c != 2 and since is not None:
                in_cwr, since = in_cwr + t - since, None
        print(f"  from {skip_s:g} s: cwnd mean {st.mean(x[1] for x in v):.1f}, largest {max(x[1] for x in v)}; "
              f"{sum(c == 2 for _, c in s)} entries into CWR ({in_cwr:.2f} s in it), "
              f"{sum(c in (3, 4) for _, c in s)} into Recovery or Loss")
    for dev, ts in sorted(xmit.items()):
        ts = [t for t in ts if t - t0 >= skip_s]
        gaps = [(a, b) for a, b in zip(ts, ts[1:]) if b - a > 0.05]
        inside = sum(1 for w in writes if any(a < w < b for a, b in gaps))
        print(f"device {dev}: {len(ts)} data packets, {len(gaps)} gaps over 50 ms "
              f"({sum(b - a for a, b in gaps):.2f} s, the longest {max((b - a for a, b in gaps), default=0) * 1e3:.0f} ms); "
              f"application writes inside them: {inside}")


def _rotate(src: Path, dst: Path, offset_ms: int) -> None:
    """A Mahimahi trace started OFFSET_MS into itself: the opportunities from there on, then
    those before it one period later (the period is the last timestamp)."""
    ts = [int(x) for x in src.read_text().split()]
    period = ts[-1]
    dst.write_text("".join(f"{t - offset_ms}\n" for t in ts if t >= offset_ms) +
                   "".join(f"{t + period - offset_ms}\n" for t in ts if t < offset_ms))


def mpsim_phase(name: str, cc: str, offset_ms: str, seeds: str = "3") -> None:
    src = _path(name)
    work = src.parent / f"phase{int(offset_ms)}ms"
    work.mkdir(exist_ok=True)
    d, _ = _load(name, cc)
    for lk in d["link"]:
        for key in ("trace", "reverse_trace"):
            if key in lk:
                _rotate(src.parent / lk[key], work / Path(lk[key]).name, int(offset_ms))
    (work / src.name).write_text(src.read_text())
    d, desc = _load(str(work / src.name), cc)
    mss = desc["flows"][0]["tcp"]["mss"]
    for seed in range(1, int(seeds) + 1):
        r = run(d, overrides={**K.mpsim_overrides(desc), "seed": seed, "metrics.interval": "10ms", "metrics.trace": True},
                progress=False)
        s, t = r.subflow_series, r.trace
        parts = []
        for p, g in s.groupby("path"):
            first = g[g.ssthresh_bytes < float("inf")].head(1)
            exit_ = (f"slow start ended at {first.time_s.iloc[0]:.2f} s with cwnd {first.cwnd_bytes.iloc[0] / mss:.0f}"
                     if len(first) else "slow start never ended")
            ts = sorted(t[t.event.isin(["send", "retx"]) & (t.path == p) & (t.time_s >= 5)].time_s)
            gaps = [b - a for a, b in zip(ts, ts[1:]) if b - a > 0.05]
            parts.append(f"{p} {exit_}, largest {g.cwnd_bytes.max() / mss:.0f}, "
                         f"{len(gaps)} gaps over 50 ms from 5 s ({sum(gaps):.2f} s)")
        buf = linux_sndbuf(int(g.cwnd_bytes.max()) for _, g in s.groupby("path"))
        gp = ", ".join(f"{x.path} {x.goodput_bps / 1e6:.2f}" for x in r.subflows.itertuples())
        print(f"seed {seed}: {gp} Mbit/s; " + "; ".join(parts) + f"; connection send buffer {buf} B")


def linux_sndbuf(peak_cwnds, mss: int = 1460) -> int:
    """`linux_upstream`'s connection send buffer for subflows whose largest windows (bytes) are
    given: 4,096 B plus 2 · max(10, segments) · 2,304 B each (sched/linux_upstream.rs)."""
    return 4096 + sum(2 * max(10, c // mss) * 2304 for c in peak_cwnds)


def lowat(name: str, cc: str, n: str, *flows: str) -> None:
    _with_rcvlowat(_lowat_args(flows))
    r = K.compare(_path(name), repeat=int(n), overrides={"flow.*.cc": cc})
    p = r.paths
    print(p[["repeat", "flow", "path", "kernel_goodput_bps", "mpsim_goodput_bps", "kernel_retransmits"]].to_string())
    print((p.groupby(["flow", "path"])[["kernel_goodput_bps", "mpsim_goodput_bps"]].mean() / 1e6).round(2).to_string())


def psh(file: str) -> None:
    rows = subprocess.run(["tshark", "-r", file, "-T", "fields", "-e", "frame.time_epoch", "-e", "tcp.dstport",
                           "-e", "tcp.flags.push", "-Y", "tcp.len>=100", "-E", "separator=,"],
                          capture_output=True, text=True).stdout.splitlines()
    conns: dict[str, list] = collections.defaultdict(list)
    for r in (x.split(",") for x in rows):
        conns[r[1]].append((float(r[0]), r[2] == "1"))
    for port, v in conns.items():
        bursts, cur = [], [v[0]]
        for a, b in zip(v, v[1:]):
            if b[0] - a[0] >= 100e-6:
                bursts.append(cur)
                cur = []
            cur.append(b)
        by = collections.defaultdict(list)
        for b in bursts:
            by[min(len(b), 4)].append(b)
        gaps, k = collections.Counter(), 0
        for _, p in v:
            k += 1
            if p:
                gaps[min(k, 4)] += 1
                k = 0
        ng = sum(gaps.values())
        print(f"port {port}: {len(v)} data packets, PSH spacing " + ", ".join(f"{g}{'+' if g == 4 else ''}: {c / ng:.2f}" for g, c in sorted(gaps.items())))
        for L, bs in sorted(by.items()):
            print(f"  bursts of {L}{'+' if L == 4 else ''}: {len(bs)}, ending with PSH {sum(b[-1][1] for b in bs) / len(bs):.2f}, "
                  f"PSH before the end {sum(any(x[1] for x in b[:-1]) for b in bs) / len(bs):.2f}")


BURST_BINS = (1, 2, 4, 8, 16, 32, 64)


def _burst_table(label: str, times: list[float], drops: int | None = None) -> None:
    """Back-to-back bursts (gaps < 100 us) of data packets sent at *times*: the share of the
    packets in bursts of each size, the mean and the largest burst."""
    times = sorted(times)
    sizes, n = [], 1
    for a, b in zip(times, times[1:]):
        if b - a < 100e-6:
            n += 1
        else:
            sizes.append(n)
            n = 1
    sizes.append(n)
    total = sum(sizes)
    shares, lo = [], 1
    for hi in BURST_BINS[1:] + (10**9,):
        k = sum(x for x in sizes if lo <= x < hi)
        shares.append(f"{lo}+: {k / total:.2f}" if hi == 10**9 else f"{lo}{'-' + str(hi - 1) if hi - 1 > lo else ''}: {k / total:.2f}")
        lo = hi
    extra = f", {drops} dropped at the queue" if drops is not None else ""
    print(f"{label}: {total} data packets in {len(sizes)} bursts, mean {total / len(sizes):.2f}, largest {max(sizes)}{extra}; "
          "share of packets in bursts of " + ", ".join(shares))


def bursts(file: str) -> None:
    rows = subprocess.run(["tshark", "-r", file, "-T", "fields", "-e", "frame.time_epoch", "-e", "tcp.srcport",
                           "-e", "tcp.dstport", "-Y", "tcp.len>=100", "-E", "separator=,"],
                          capture_output=True, text=True).stdout.splitlines()
    conns: dict[str, list[float]] = collections.defaultdict(list)
    for r in (x.split(",") for x in rows):
        conns[f"port {r[1]} -> {r[2]}"].append(float(r[0]))
    for k, v in conns.items():
        t0 = min(v)
        _burst_table(k, [t for t in v if t - t0 >= 2])


def mpsim_bursts(name: str, cc: str, path: str, seed: str = "1") -> None:
    d, desc = _load(name, cc)
    r = run(d, overrides={**K.mpsim_overrides(desc), "seed": int(seed), "metrics.trace": True}, progress=False)
    t = r.trace
    sent = t[t.event.isin(["send", "retx"]) & (t.path == path) & (t.time_s >= 2)]
    drops = t[(t.event == "drop_queue") & (t.path == path) & (t.time_s >= 2)]
    for f, g in sent.groupby("flow"):
        _burst_table(f"{f} on {path}", g.time_s.tolist(), len(drops[drops.flow == f]))
    ss = r.subflow_series
    for p, g in ss[ss.time_s >= 2].groupby("path"):
        print(f"{p}: cwnd mean {g.cwnd_bytes.mean() / 1448:.1f} segments (of 1448 B), "
              f"in flight mean {g.in_flight_bytes.mean() / 1448:.1f}, srtt mean {g.srtt_ms.mean():.1f} ms")


def mpsim_acks(name: str, cc: str) -> None:
    d, desc = _load(name, cc)
    ov = {**K.mpsim_overrides(desc), "seed": 1, "metrics.trace": True}
    r = run(d, overrides=ov, progress=False)
    t = r.trace
    for (f, p), g in t[(t.event == "ack") & (t.time_s >= 2)].groupby(["flow", "path"]):
        a = g.seq.values
        mss = int(t[(t.event == "send") & (t.flow == f)].len.max())
        per = collections.Counter(min(round((y - x) / mss), 3) for x, y in zip(a, a[1:]))
        n = sum(per.values())
        print(f"{f} on {p}: segments per ACK " + ", ".join(f"{k}{'+' if k == 3 else ''}: {c / n:.3f}" for k, c in sorted(per.items())))
    print(r.subflows[["flow", "path", "goodput_bps"]].to_string())


def windows(name: str, cc: str, *sizes: str) -> None:
    d, desc = _load(name, cc)
    flow = next(f["name"] for f in desc["flows"] if f["multipath"])
    for w in sizes:
        got = collections.defaultdict(list)
        for seed in (1, 2, 3):
            r = run(d, overrides={**K.mpsim_overrides(desc, {flow: int(w)}), "seed": seed}, progress=False)
            for x in r.subflows.itertuples():
                got[x.path].append(x.goodput_bps / 1e6)
        per = {p: st.mean(v) for p, v in got.items()}
        print(f"window {int(w)} B: " + ", ".join(f"{p} {v:.2f}" for p, v in per.items()) + f", in all {sum(per.values()):.2f} Mbit/s")


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
                g = lambda k: int(x.group(1)) if (x := re.search(k + r":(\d+)", d)) else 0  # noqa: E731, B023 (used in this iteration)
                if t - t0 >= 2:
                    rtt = re.search(r"\brtt:([\d.]+)", d)
                    retr = int(x.group(1)) if (x := re.search(r"\bretrans:\d+/(\d+)", d)) else 0
                    subs[(m.group(1), m.group(3))].append((g("cwnd"), g("unacked"), g("notsent"), g("snd_wnd"),
                                                           g("ssthresh"), retr, t,
                                                           float(rtt.group(1)) if rtt else 0.0))
                i += 1
        i += 1
    for k, s in subs.items():
        print(f"{k[0]} -> port {k[1]}: {len(s)} samples, cwnd {st.mean(x[0] for x in s):.1f}, "
              f"unacked {st.mean(x[1] for x in s):.1f}, not sent {st.mean(x[2] for x in s):.0f} B, "
              f"window mean {st.mean(x[3] for x in s):.0f} min {min(x[3] for x in s)} max {max(x[3] for x in s)} B, "
              f"unacked < cwnd in {sum(x[1] < x[0] for x in s)}")
        # congestion avoidance between consecutive samples with no reduction and no
        # retransmission: cwnd growth per smoothed RTT; and the ratio of each reduction
        grow = [(b[0] - a[0]) / (b[6] - a[6]) * a[7] / 1e3 for a, b in zip(s, s[1:])
                if a[4] and a[0] >= a[4] and b[4] == a[4] and b[5] == a[5] and b[0] >= a[0]]
        cuts = [b[4] / a[0] for a, b in zip(s, s[1:]) if b[4] != a[4] or (b[5] > a[5] and b[0] < 0.75 * a[0])]
        if grow:
            print(f"  congestion avoidance: {st.mean(grow):.2f} segments per smoothed RTT ({len(grow)} intervals); "
                  f"{len(cuts)} reductions, new ssthresh / cwnd before: mean {st.mean(cuts) if cuts else float('nan'):.2f}")


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


def _exits(rows) -> str:
    """`rows`: (time from the subflow's start s, cwnd, ssthresh or None, retransmitted or None)
    per sample. When the first ssthresh appeared, the largest window before it, and the
    retransmissions by 5 s and by the end."""
    first = next((r for r in rows if r[2] is not None), None)
    peak = max((r[1] for r in rows if first is None or r[0] < first[0]), default=0)
    text = (f"slow start ended at {first[0]:.2f} s, ssthresh {first[2]}, cwnd {first[1]} (peak before {peak})"
            if first else f"slow start never ended (peak cwnd {peak})")
    if rows[-1][3] is None:
        return text
    return text + f"; retransmitted {max(r[3] for r in rows if r[0] <= 5)} by 5 s, {rows[-1][3]} in all"


def ssexit(out: str) -> None:
    """Per subflow of a `capture` run (OUT/ss.txt, sampled every 50 ms): slow start's end."""
    t, subs, lines = 0.0, collections.defaultdict(list), (Path(out) / "ss.txt").read_text().splitlines()
    for a, b in zip(lines, lines[1:]):
        if a.startswith("T "):
            t = float(a.split()[1])
            continue
        m = K._SS_ADDR.search(a)
        if not m or b.startswith("T ") or K._SS_ADDR.search(b):
            continue
        g = lambda k: int(x.group(1)) if (x := re.search(r"\b" + k + r":(\d+)", b)) else None  # noqa: E731, B023
        retr = int(x.group(1)) if (x := re.search(r"\bretrans:\d+/(\d+)", b)) else 0
        minrtt = float(x.group(1)) if (x := re.search(r"\bminrtt:([\d.]+)", b)) else 0.0
        subs[(f"{m.group(1)}:{m.group(2)}", m.group(3))].append((t, g("cwnd") or 0, g("ssthresh"), retr, minrtt))
    for k, rows in subs.items():
        t0 = rows[0][0]
        print(f"{k[0]} -> {k[1]} (min RTT {min(r[4] for r in rows):.1f} ms, from {t0:.2f}): "
              + _exits([(r[0] - t0, r[1], r[2], r[3]) for r in rows]))


def ssexit_mpsim(name: str, cc: str, seeds: str = "3", *sets: str) -> None:
    """The same for mpsim as `mpsim kernel` configures it (seeds 1..SEEDS, 10 ms samples),
    with each link's queue drops; KEY=VALUE arguments change the configuration further."""
    d, desc = _load(name, cc)
    extra = {k: parse_value(v) for k, v in (a.split("=", 1) for a in sets)}
    for seed in range(1, int(seeds) + 1):
        ov = {**K.mpsim_overrides(desc), "seed": seed, "metrics.interval": "10ms", **extra}
        r = run(d, overrides=ov, progress=False)
        s = r.subflow_series
        lk = r.links
        print(f"seed {seed}: queue drops " + ", ".join(f"{x.link} {int(x.queue_drops)}" for x in lk.itertuples()
                                                      if x.direction == "forward"))
        for path, g in s.groupby("path"):
            g = g[g.cwnd_bytes > 0]
            t0 = g.time_s.iloc[0]
            mss = desc["flows"][0]["tcp"]["mss"]
            rows = [(x.time_s - t0, int(x.cwnd_bytes // mss),
                     int(x.ssthresh_bytes // mss) if x.ssthresh_bytes < float("inf") else None,
                     None) for x in g.itertuples()]
            print(f"  {path} (from {t0:.2f} s): " + _exits(rows))


if __name__ == "__main__":
    cmd, *args = sys.argv[1:] or ["-h"]
    fns = {"capture": capture, "trace": trace, "acks": acks, "lowat": lowat, "psh": psh, "bursts": bursts, "mpsim-bursts": mpsim_bursts, "mpsim-acks": mpsim_acks, "windows": windows, "ss": ss, "rcvmem": rcvmem, "sndmem": sndmem, "pcap": pcap, "starts": lambda a, b, c: starts(a, b, int(c)), "slowstart": slowstart, "ssexit": ssexit, "ssexit-mpsim": ssexit_mpsim, "stalls": stalls, "mpsim-phase": mpsim_phase}
    if cmd not in fns:
        print(__doc__)
        sys.exit(2)
    fns[cmd](*args)
