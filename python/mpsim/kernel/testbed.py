"""The same scenario on the real Linux kernel, side by side with the simulation.

:func:`compare` runs a scenario once in mpsim and once (or ``repeat`` times) through the
kernel's own TCP and Multipath TCP: two network namespaces, ``client`` and ``server``, joined
by one pair of TUN devices per path; between each pair, ``mpsim-linkemu`` (crates/mpsim-linkemu)
gives the path the rate, delay, drop-tail queue and loss of the scenario's links, with mpsim's
own link model. Addresses come from 10.201.0.0/16 and exist only inside the two namespaces;
nothing is sent anywhere else. Everything created (namespaces, devices, processes) is removed
at the end, also on Ctrl-C or SIGTERM.

On the kernel side: one socket per flow (``IPPROTO_MPTCP`` for a multipath flow), its
congestion control set with ``TCP_CONGESTION``, its receive buffer with ``SO_RCVBUFFORCE``,
its send buffer autotuned up to ``tcp.snd_buf`` (``tcp_wmem``), SACK as ``tcp.sack`` says (``tcp_sack``), the initial window on the route (``initcwnd``), Linux's
own delayed ACKs, MPTCP limits and one ``signal`` endpoint per extra path on the server (no
client ``subflow`` endpoints, which would open subflows across paths). A bulk sender writes
for the scenario's duration; the receiver counts what it reads. ``ss`` is sampled every
second (RTT, bytes acknowledged, retransmissions, window, congestion control), ``nstat``
read at the end.

On the mpsim side the scenario runs twice per repeat, with the same seed: matched to the
kernel run (:func:`mpsim_overrides`: Linux's delayed ACKs, the kernel's header bytes, its
advertised window, its connection times, the testbed's jitter, upstream's scheduler and
subflow joins; each change is listed in the result) and as the file stands.
:mod:`mpsim.kernel.result` holds the result, its tables and its JSON document.

The command line is ``mpsim kernel SCENARIO [--repeat N] [--out DIR] [--json]``.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..errors import ScenarioError
from ..scenario import apply_overrides, load
from .result import KernelResult, settings_changed

__all__ = ["compare", "accuracy", "KernelResult", "KernelUnavailable", "available", "unmappable", "find_emulator"]

IPPROTO_MPTCP = 262
SO_SNDBUFFORCE = 32
SO_RCVBUFFORCE = 33
SO_TIMESTAMPNS = 35
#: Kernel controllers mpsim also has (Linux has no LIA/OLIA/BALIA upstream).
KERNEL_CCS = ("reno", "cubic", "bbr")
#: Bytes of IPv4 + TCP headers + the timestamp option on every kernel data segment.
TCP_HEADER = 20 + 20 + 12
#: Bytes of the DSS option (data ACK and 64-bit mapping, padded) on Linux MPTCP data segments.
KERNEL_DSS = 28
#: What mpsim itself adds to an MPTCP data segment's header (sim/flow.rs DSS_MAPPING_BYTES).
MPSIM_DSS = 16
SUBNET = "10.201"
#: Largest extra delay mpsim gives each packet on every link (uniform, FIFO kept), for the
#: testbed's own timing noise: the emulator writes packets late by about 0.1 ms on average
#: (p99 0.4 to 0.6 ms, docs/reports/kernel-results.md), and the hosts' stacks add their own.
KERNEL_JITTER = 200e-6
#: The share of receive memory Linux offers as window on the testbed's TUN devices
#: (`scaling_ratio`, payload over true size): `rcv_ssthresh` 324,000 B of a 512,000 B
#: buffer on the receiving subflows (`benches/kernel_probe.py rcvmem`), and the largest
#: window offered with a 200,000 B buffer, 126,562 B (mptcp_rcvbuf_small), both 0.633.
KERNEL_RCV_SCALING = 0.633
BIN_S = 0.1


class KernelUnavailable(RuntimeError):
    """This machine cannot run the kernel side (not root, no TUN, MPTCP disabled, ...)."""


# -------------------------------------------------------------------------------------
# What the machine and the scenario allow


#: Where a wheel carries the emulator binary (``make wheel`` puts it there before maturin
#: packs the wheel; in a checkout the folder is empty and target/release is used).
PACKAGED_EMULATOR = Path(__file__).resolve().parent / "bin" / "mpsim-linkemu"


def find_binary(name: str, env_var: str, *, debug: bool = False, packaged: Path | None = None) -> Path | None:
    """A helper binary of `mpsim kernel`: the path in $`env_var` (None if it is not a file), else
    the checkout's target/release (and target/debug with `debug`), else `packaged`, else PATH."""
    env = os.environ.get(env_var)
    if env:
        return Path(env) if Path(env).is_file() else None
    root = Path(__file__).resolve().parents[3]
    cands = [root / "target/release" / name] + ([root / "target/debug" / name] if debug else [])
    for cand in cands + ([packaged] if packaged else []):
        if cand.is_file():
            return cand
    w = shutil.which(name)
    return Path(w) if w else None


def find_emulator() -> Path | None:
    """The ``mpsim-linkemu`` binary: $MPSIM_LINKEMU, else the checkout's target/release (or
    target/debug), else the one installed with the package (a wheel's), else PATH."""
    return find_binary("mpsim-linkemu", "MPSIM_LINKEMU", debug=True, packaged=PACKAGED_EMULATOR)


def emulator_missing() -> str:
    """Why no link emulator was found, and how to get one."""
    env = os.environ.get("MPSIM_LINKEMU")
    if env:
        return f"MPSIM_LINKEMU names '{env}', which is not a file"
    return ("needs the link emulator mpsim-linkemu, which this installation lacks (wheels built with 'make wheel' "
            "carry it; a wheel built with plain 'maturin build' does not): build it from mpsim's source "
            "(cargo build --release -p mpsim-linkemu) and set MPSIM_LINKEMU to its path or put it on PATH")


def emulator_problem(emu: Path) -> str | None:
    """Why a found emulator cannot run here (not executable, built for another machine), or None."""
    if not os.access(emu, os.X_OK):
        return f"the link emulator {emu} is not executable (chmod +x it, or set MPSIM_LINKEMU to another build)"
    try:
        p = subprocess.run([str(emu), "--version"], capture_output=True, text=True, timeout=30)
    except OSError as e:
        return f"the link emulator {emu} does not run on this machine ({e}); set MPSIM_LINKEMU to a build of your own"
    if p.returncode != 0:
        return f"the link emulator {emu} does not run: {(p.stderr or p.stdout).strip()}"
    return None


def available(multipath: bool = True) -> tuple[bool, str]:
    """Whether this machine can run the kernel side, and if not, why."""
    if not sys.platform.startswith("linux"):
        return False, "needs Linux"
    if os.geteuid() != 0:
        return False, "needs root (network namespaces and TUN devices)"
    if not os.path.exists("/dev/net/tun"):
        return False, "needs /dev/net/tun"
    for tool in ("ip", "ss", "nstat"):
        if shutil.which(tool) is None:
            return False, f"needs '{tool}' (iproute2)"
    if multipath:
        try:
            if Path("/proc/sys/net/mptcp/enabled").read_text().strip() != "1":
                return False, "needs Multipath TCP enabled (sysctl net.mptcp.enabled=1)"
        except OSError:
            return False, "needs a kernel with Multipath TCP (no /proc/sys/net/mptcp)"
    emu = find_emulator()
    if emu is None:
        return False, emulator_missing()
    problem = emulator_problem(emu)
    if problem:
        return False, problem
    return True, ""


def describe(d: Mapping[str, Any], origin: str) -> dict[str, Any]:
    """The scenario as mpsim reads it (defaults filled in, units resolved), from the emulator."""
    emu = find_emulator()
    if emu is None:
        raise KernelUnavailable(f"the kernel side {emulator_missing()}")
    problem = emulator_problem(emu)
    if problem:
        raise KernelUnavailable(problem)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(d, f)
    try:
        p = subprocess.run([str(emu), "--describe", f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if p.returncode != 0:
        # the core's own message, with the file name it was given replaced by the scenario's
        raise ScenarioError(origin, "", p.stderr.strip().replace(f.name + ": ", ""))
    return json.loads(p.stdout)


def unmappable(desc: Mapping[str, Any]) -> list[str]:
    """The features of a described scenario that the kernel runner cannot reproduce."""
    out: list[str] = []
    flows = desc["flows"]
    for f in flows:
        n = f"flow '{f['name']}'"
        if f["background"]:
            out.append(f"{n}: background traffic")
            continue
        if f["transport"] != "tcp":
            out.append(f"{n}: transport {f['transport']} (only TCP and Multipath TCP)")
        if f["app"]["kind"] != "bulk" or f["app"].get("bytes") is not None:
            out.append(f"{n}: app {f['app']['kind']}{' with bytes' if f['app'].get('bytes') else ''} (only unlimited bulk)")
        if f["cc"] not in KERNEL_CCS:
            out.append(f"{n}: cc {f['cc']} (the kernel has {', '.join(KERNEL_CCS)})")
        if f["multipath"] and f["scheduler"] not in ("lowest_rtt", "lowest_rtt_plain", "linux_upstream"):
            out.append(f"{n}: scheduler {f['scheduler']} (the kernel's is linux_upstream)")
        if any(f["backup"]):
            out.append(f"{n}: backup subflows")
        if f["stop_s"] is not None:
            out.append(f"{n}: stop")
        t = f["tcp"]
        if abs(t["min_rto_s"] - 0.2) > 1e-9:
            out.append(f"{n}: tcp.min_rto {t['min_rto_s'] * 1e3:g}ms (the kernel's is 200ms)")
        if abs(t["initial_rto_s"] - 1.0) > 1e-9:
            out.append(f"{n}: tcp.initial_rto {t['initial_rto_s']:g}s (the kernel's is 1s)")
        if t.get("window_scale") is not None:
            out.append(f"{n}: tcp.window_scale (the kernel picks its own from the receive buffer)")
    tcp = [f["tcp"] for f in flows if not f["background"]]
    for key in ("mss", "initial_window", "sack", "ecn"):
        if len({t[key] for t in tcp}) > 1:
            out.append(f"different tcp.{key} per flow (one value for the whole run)")
    mp_sets = {tuple(f["paths"]) for f in flows if f["multipath"]}
    if len(mp_sets) > 1:
        out.append("multipath flows over different path lists (the server signals every extra path to every connection)")
    for lk in desc["links"]:
        if lk["outages"]:
            out.append(f"link '{lk['name']}': down intervals")
    return out


# -------------------------------------------------------------------------------------
# The testbed: namespaces, devices, emulator


def _sh(*args: str, check: bool = True, ns: str | None = None) -> subprocess.CompletedProcess[str]:
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"'{' '.join(cmd)}' failed: {p.stderr.strip() or p.stdout.strip()}")
    return p


def _die_with_parent() -> None:
    """In a child before exec: SIGTERM it when the process that started it dies, however
    that process ends (even SIGKILL), so no endpoint process outlives a run."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Testbed:
    """Two namespaces joined by emulated paths; removes everything on exit."""

    def __init__(self, desc: Mapping[str, Any], scenario: Mapping[str, Any], seed: int, workdir: Path,
                 origin_ns: int | None = None) -> None:
        self.desc = desc
        self.scenario = scenario
        self.seed = seed
        # CLOCK_MONOTONIC time of the emulator's time zero, where its traces and schedules begin
        # (None: when it starts)
        self.origin_ns = origin_ns
        self.workdir = workdir
        tag = f"{os.getpid() % 100000}{int(time.time() * 1000) % 100}"
        self.ns = {"client": f"mpk{tag}c", "server": f"mpk{tag}s"}
        used: list[str] = []
        for f in desc["flows"]:
            for p in f["paths"]:
                if p not in used:
                    used.append(p)
        names = [p["name"] for p in desc["paths"]]
        self.paths = sorted(used, key=names.index)
        # path index in the scenario -> addresses 10.201.i.1 (client), 10.201.i.2 (server)
        self.index = {p: names.index(p) for p in self.paths}
        self.tuns = {p: (f"mk{tag}c{self.index[p]}", f"mk{tag}s{self.index[p]}") for p in self.paths}
        self.emu: subprocess.Popen[str] | None = None
        self.procs: list[subprocess.Popen[str]] = []
        self.created: list[str] = []
        self.report_file = workdir / "emulator.json"

    def client_addr(self, path: str) -> str:
        return f"{SUBNET}.{self.index[path]}.1"

    def server_addr(self, path: str) -> str:
        return f"{SUBNET}.{self.index[path]}.2"

    def __enter__(self) -> "Testbed":
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _setup(self) -> None:
        for ns in self.ns.values():
            _sh("ip", "netns", "add", ns)
            self.created.append(ns)
            snd_buf = max(f["tcp"]["snd_buf"] for f in self.desc["flows"])
            # tcp.sack = false: neither side offers SACK (one value for the run, see unmappable)
            sack = "1" if all(f["tcp"]["sack"] for f in self.desc["flows"]) else "0"
            # tcp.ecn = true: both sides ask for ECN and accept it (RFC 3168); false: neither
            ecn = "1" if all(f["tcp"]["ecn"] for f in self.desc["flows"]) else "0"
            for k, v in (("net.ipv6.conf.all.disable_ipv6", "1"), ("net.ipv6.conf.default.disable_ipv6", "1"),
                         ("net.ipv4.tcp_no_metrics_save", "1"), ("net.ipv4.tcp_wmem", f"4096 16384 {snd_buf}"),
                         ("net.ipv4.tcp_sack", sack), ("net.ipv4.tcp_ecn", ecn)):
                # /proc/sys/net shows the namespace of the process reading it (no procps needed)
                _sh("sh", "-c", f"printf '%s' '{v}' > /proc/sys/{k.replace('.', '/')}", ns=ns)
            _sh("ip", "link", "set", "lo", "up", ns=ns)
        cfg_file = self.workdir / "emulator-config.json"
        cfg_file.write_text(json.dumps(self.emulator_config()))
        emu = find_emulator()
        assert emu is not None
        self.emu = subprocess.Popen([str(emu), "--config", str(cfg_file), "--report", str(self.report_file)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.emu.stdout.readline() if self.emu.stdout else ""
        if not line.startswith("ready"):
            err = self.emu.stderr.read() if self.emu.stderr else ""
            raise RuntimeError(f"the link emulator did not start: {err.strip() or line.strip()}")
        self.emu_realtime = "realtime=true" in line
        mp = [f for f in self.desc["flows"] if f["multipath"]]
        mss = self.desc["flows"][0]["tcp"]["mss"]
        iw = self.desc["flows"][0]["tcp"]["initial_window"]
        for p, (ct, st) in self.tuns.items():
            carries_mp = any(p in f["paths"] for f in mp)
            mtu = mss + TCP_HEADER + (KERNEL_DSS if carries_mp else 0)
            for side, dev, me, peer in (("client", ct, self.client_addr(p), self.server_addr(p)),
                                        ("server", st, self.server_addr(p), self.client_addr(p))):
                ns = self.ns[side]
                _sh("ip", "link", "set", "dev", dev, "netns", ns)
                _sh("ip", "addr", "add", me, "peer", peer, "dev", dev, ns=ns)
                _sh("ip", "link", "set", "dev", dev, "mtu", str(mtu), "up", ns=ns)
                _sh("ip", "route", "replace", f"{peer}/32", "dev", dev, "src", me, "initcwnd", str(iw), ns=ns)
        if mp:
            k = max(len(f["paths"]) for f in mp) - 1
            for side in ("client", "server"):
                _sh("ip", "mptcp", "endpoint", "flush", ns=self.ns[side])
                _sh("ip", "mptcp", "limits", "set", "subflows", str(k), "add_addr_accepted", str(k), ns=self.ns[side])
            for p in mp[0]["paths"][1:]:
                _sh("ip", "mptcp", "endpoint", "add", self.server_addr(p), "dev", self.tuns[p][1], "signal",
                    ns=self.ns["server"])

    def emulator_config(self) -> dict[str, Any]:
        """The link emulator's configuration (crates/mpsim-linkemu/src/main.rs)."""
        cfg: dict[str, Any] = {
            "scenario": self.scenario,
            "seed": self.seed,
            "bin_ms": int(BIN_S * 1000),
            "paths": [{"path": p, "client_tun": c, "server_tun": s} for p, (c, s) in self.tuns.items()],
        }
        if self.origin_ns is not None:
            cfg["origin_ns"] = self.origin_ns
        return cfg

    def sysctl(self, key: str, side: str = "client") -> str:
        p = _sh("cat", f"/proc/sys/{key.replace('.', '/')}", ns=self.ns[side], check=False)
        return p.stdout.strip() if p.returncode == 0 else "n/a"

    def spawn(self, side: str, args: list[str]) -> subprocess.Popen[str]:
        code = "import sys; from mpsim.kernel.testbed import _endpoint_main; sys.exit(_endpoint_main(sys.argv[1:]))"
        cmd = ["ip", "netns", "exec", self.ns[side], sys.executable, "-c", code, *args]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")])
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             preexec_fn=_die_with_parent)
        self.procs.append(p)
        return p

    def stop_emulator(self) -> dict[str, Any]:
        if self.emu is None:
            return {}
        if self.emu.poll() is None:
            self.emu.send_signal(signal.SIGTERM)
            try:
                self.emu.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.emu.kill()
                self.emu.wait()
        self.emu = None
        return json.loads(self.report_file.read_text()) if self.report_file.exists() else {}

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs.clear()
        if self.emu is not None and self.emu.poll() is None:
            self.emu.terminate()
            try:
                self.emu.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.emu.kill()
                self.emu.wait()
        for ns in self.created:
            _sh("ip", "netns", "del", ns, check=False)
        self.created.clear()


# -------------------------------------------------------------------------------------
# The endpoint programs, each run inside its namespace (see Testbed.spawn): ROLE CONFIG OUT


def _sleep_until(t_ns: int) -> None:
    while True:
        d = t_ns - time.monotonic_ns()
        if d <= 0:
            return
        time.sleep(min(d / 1e9, 0.05))


def _endpoint_receiver(cfg: dict[str, Any]) -> dict[str, Any]:
    sel = selectors.DefaultSelector()
    flows: dict[str, dict[str, Any]] = {}
    t0 = cfg["t0_ns"]
    end = t0 + int((cfg["duration_s"] + cfg["grace_s"]) * 1e9)
    nbins = int(cfg["duration_s"] / BIN_S) + 1
    for f in cfg["flows"]:
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP if f["multipath"] else 0)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, f["rcv_buf"])
        ls.bind(("0.0.0.0", f["port"]))
        ls.listen(4)
        ls.setblocking(False)
        sel.register(ls, selectors.EVENT_READ, ("listen", f["name"]))
        flows[f["name"]] = {"bytes": 0, "bins": [0] * nbins, "conns": 0, "closed": 0,
                            "rcvbuf": ls.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)}
    # SO_RCVLOWAT per flow: only benches/kernel_probe.py sets it (a reader that waits for
    # that many bytes, to show what the kernel's ACKs of pushed segments do)
    lowat = cfg.get("rcvlowat", {})
    print("listening", flush=True)
    buf = bytearray(1 << 20)
    while time.monotonic_ns() < end:
        done = all(v["conns"] and v["closed"] == v["conns"] for v in flows.values())
        if done:
            break
        for key, _ in sel.select(timeout=0.2):
            kind, name = key.data
            if kind == "listen":
                c, _ = key.fileobj.accept()  # type: ignore[union-attr]
                c.setblocking(False)
                if name in lowat:
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, int(lowat[name]))
                sel.register(c, selectors.EVENT_READ, ("conn", name))
                flows[name]["conns"] += 1
                continue
            try:
                n = key.fileobj.recv_into(buf)  # type: ignore[union-attr]
            except (BlockingIOError, InterruptedError):
                continue
            except ConnectionError:
                n = 0
            st = flows[name]
            if n == 0:
                sel.unregister(key.fileobj)
                key.fileobj.close()
                st["closed"] += 1
                continue
            st["bytes"] += n
            b = int((time.monotonic_ns() - t0) / (BIN_S * 1e9))
            if 0 <= b < nbins:
                st["bins"][b] += n
    return {"flows": flows, "nstat": _nstat()}


_SS_ADDR = re.compile(r"(\d+\.\d+\.\d+\.\d+):(\d+)\s+(\d+\.\d+\.\d+\.\d+):(\d+)")


def _ss() -> str:
    return subprocess.run(["ss", "-tinH", "state", "established"], capture_output=True, text=True).stdout


def _endpoint_sender(cfg: dict[str, Any]) -> dict[str, Any]:
    t0 = cfg["t0_ns"]
    end = t0 + int(cfg["duration_s"] * 1e9)
    socks: dict[str, socket.socket] = {}
    info: dict[str, dict[str, Any]] = {}
    pending = sorted(cfg["flows"], key=lambda f: f["start_s"])
    multipath = {f["name"] for f in cfg["flows"] if f["multipath"]}
    samples: list[tuple[float, str]] = []
    next_sample = t0
    payload = bytes(256 * 1024)
    sel = selectors.DefaultSelector()
    while True:
        now = time.monotonic_ns()
        if now >= end:
            break
        while pending and now >= t0 + pending[0]["start_s"] * 1e9:
            f = pending.pop(0)
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP if f["multipath"] else 0)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, f["cc"].encode())
            # no SO_SNDBUF: a locked send buffer on an MPTCP socket starves the subflows that
            # join later (measured: the second path ran at 1 to 3 Mbit/s of 10 for seconds);
            # the send buffer autotunes up to tcp.snd_buf instead (tcp_wmem, set per namespace)
            if not f["multipath"]:
                # a path that also carries MPTCP has an MTU 28 B larger (the DSS option): clamp
                # plain TCP to the scenario's MSS (the clamp counts the 12 B of timestamps)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, f["mss"] + 12)
            s.settimeout(5)
            entry: dict[str, Any] = {"cc_set": f["cc"], "connect_s": (time.monotonic_ns() - t0) / 1e9}
            try:
                s.connect((f["addr"], f["port"]))
            except OSError as e:
                entry["error"] = str(e)
                info[f["name"]] = entry
                s.close()
                continue
            entry["established_s"] = (time.monotonic_ns() - t0) / 1e9
            try:
                entry["cc_read"] = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0")[0].decode()
            except OSError:
                entry["cc_read"] = None
            entry["local"] = "%s:%d" % s.getsockname()
            s.setblocking(False)
            socks[f["name"]] = s
            info[f["name"]] = entry
            sel.register(s, selectors.EVENT_WRITE, f["name"])
        if now >= next_sample:
            samples.append(((now - t0) / 1e9, _ss()))
            next_sample += int(cfg["ss_interval_s"] * 1e9)
        wait = min(end, next_sample, t0 + int(pending[0]["start_s"] * 1e9) if pending else end) - now
        if not socks:
            time.sleep(max(wait, 0) / 1e9)
            continue
        for key, _ in sel.select(timeout=max(wait, 0) / 1e9):
            info[key.data].setdefault("first_write_s", (time.monotonic_ns() - t0) / 1e9)
            try:
                info[key.data]["bytes_sent"] = info[key.data].get("bytes_sent", 0) + key.fileobj.send(payload)  # type: ignore[union-attr]
            except (BlockingIOError, InterruptedError):
                pass
    samples.append(((time.monotonic_ns() - t0) / 1e9, _ss()))
    for name, s in socks.items():
        info[name]["subflows"] = _subflow_timeouts(s, name in multipath)
    counters = _nstat()
    for s in socks.values():
        s.close()
    return {"flows": info, "ss": samples, "nstat": counters}


def _nstat() -> dict[str, int]:
    """This namespace's SNMP counters (``nstat -asz``; the namespace is new with each run)."""
    nst = subprocess.run(["nstat", "-asz", "--json"], capture_output=True, text=True,
                         env={**os.environ, "NSTAT_HISTORY": os.devnull})
    try:
        return json.loads(nst.stdout).get("kernel", {})
    except json.JSONDecodeError:
        return {}


#: The counters each kernel run keeps (``runs`` in summary.json), per side: which of HyStart's
#: tests ended slow start (and the windows summed at those exits) on the sender; receive-memory
#: pruning, collapsing and out-of-order queueing on the receiver.
NSTAT_KEPT = {
    "client": ("TcpExtTCPHystartTrainDetect", "TcpExtTCPHystartTrainCwnd", "TcpExtTCPHystartDelayDetect",
               "TcpExtTCPHystartDelayCwnd"),
    "server": ("TcpExtPruneCalled", "TcpExtRcvPruned", "TcpExtOfoPruned", "TcpExtTCPRcvCollapsed",
               "TcpExtTCPOFOQueue", "TcpExtTCPOFODrop", "TcpExtTCPOFOMerge", "TcpExtTCPRcvQDrop",
               "MPTcpExtOFOQueue", "MPTcpExtOFOMerge"),
}


SOL_MPTCP = 284
MPTCP_TCPINFO = 2
MPTCP_SUBFLOW_ADDRS = 3
#: Offset of ``tcpi_total_rto`` (u16, Linux 6.7 and later) in ``struct tcp_info``.
TCPI_TOTAL_RTO = 240


def _total_rto(info: bytes) -> int | None:
    """Retransmission timeouts a socket has had (``tcpi_total_rto``; None before Linux 6.7)."""
    return struct.unpack_from("<H", info, TCPI_TOTAL_RTO)[0] if len(info) >= TCPI_TOTAL_RTO + 2 else None


def _mptcp_subflow_data(s: socket.socket, opt: int, size_user: int, most: int = 16) -> list[bytes]:
    """The per-subflow records of an MPTCP ``getsockopt`` (``struct mptcp_subflow_data``
    followed by one record per subflow), whose header the caller fills in, hence ctypes."""
    import ctypes

    head = struct.calcsize("<IIII")
    buf = ctypes.create_string_buffer(struct.pack("<IIII", head, 0, 0, size_user), head + most * size_user)
    n = ctypes.c_uint32(len(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.getsockopt(s.fileno(), SOL_MPTCP, opt, buf, ctypes.byref(n)) != 0:
        return []
    _, count, _, size = struct.unpack_from("<IIII", buf.raw)
    return [buf.raw[head + i * size:head + (i + 1) * size] for i in range(min(count, most))]


def _subflow_timeouts(s: socket.socket, multipath: bool) -> list[dict[str, Any]]:
    """Per subflow of a connected socket: the server address it goes to and its
    retransmission timeouts so far (``tcpi_total_rto``), read just before the socket closes."""
    try:
        if not multipath:
            return [{"peer": s.getpeername()[0], "timeouts": _total_rto(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 512))}]
        infos = _mptcp_subflow_data(s, MPTCP_TCPINFO, 512)
        # struct mptcp_subflow_addrs: local then remote address, 128 B each (sockaddr_storage)
        addrs = _mptcp_subflow_data(s, MPTCP_SUBFLOW_ADDRS, 256)
    except OSError:
        return []
    return [{"peer": socket.inet_ntoa(a[128 + 4:128 + 8]), "timeouts": _total_rto(i)} for i, a in zip(infos, addrs)]


def _endpoint_udp_receiver(cfg: dict[str, Any]) -> dict[str, Any]:
    """Receives the probes and the flood of the accuracy measurement; records arrival times."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 8 << 20)
    s.bind(("0.0.0.0", cfg["port"]))
    s.settimeout(0.2)
    # the kernel's receive timestamp (CLOCK_REALTIME), so that our own wake-up is not counted
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    print("listening", flush=True)
    end = cfg["t0_ns"] + int(cfg["total_s"] * 1e9) + int(2e9)
    delays, flood = [], []
    while time.monotonic_ns() < end:
        try:
            data, anc, _, _ = s.recvmsg(65536, 1024)
        except socket.timeout:
            continue
        now = time.time_ns()
        for level, kind_, val in anc:
            if level == socket.SOL_SOCKET and kind_ == SO_TIMESTAMPNS:
                sec, nsec = int.from_bytes(val[:8], "little"), int.from_bytes(val[8:16], "little")
                now = sec * 1_000_000_000 + nsec
        kind, sent = data[0], int.from_bytes(data[1:9], "little")
        if kind == 1:
            delays.append(now - sent)
        else:
            flood.append(now)
    return {"delays_ns": delays, "flood_ns": flood}


def _endpoint_udp_sender(cfg: dict[str, Any]) -> dict[str, Any]:
    """Probes (small datagrams, apart) for the delay, then a flood above the rate."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, 8 << 20)
    dst = (cfg["addr"], cfg["port"])
    t0 = cfg["t0_ns"]
    _sleep_until(t0)
    n = int(cfg["probe_s"] / cfg["probe_gap_s"])
    for i in range(n):
        _sleep_until(t0 + int(i * cfg["probe_gap_s"] * 1e9))
        s.sendto(b"\x01" + time.time_ns().to_bytes(8, "little") + bytes(cfg["probe_bytes"] - 9), dst)
    start = t0 + int(cfg["probe_s"] * 1e9)
    _sleep_until(start)
    gap = cfg["flood_bytes"] * 8 / cfg["flood_bps"]
    sent = 0
    end = start + int(cfg["flood_s"] * 1e9)
    body = bytes(cfg["flood_bytes"] - 9)
    while True:
        now = time.monotonic_ns()
        if now >= end:
            break
        due = start + int(sent * gap * 1e9)
        if now < due:
            time.sleep(min((due - now) / 1e9, 0.001))
            continue
        try:
            s.sendto(b"\x02" + time.time_ns().to_bytes(8, "little") + body, dst)
        except BlockingIOError:
            pass
        sent += 1
    return {"flood_sent": sent}


def _endpoint_main(argv: list[str]) -> int:
    role, cfg_file, out_file = argv
    cfg = json.loads(Path(cfg_file).read_text())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    programs = {"receiver": _endpoint_receiver, "sender": _endpoint_sender,
                "udp-receiver": _endpoint_udp_receiver, "udp-sender": _endpoint_udp_sender}
    res = programs[role](cfg)
    Path(out_file).write_text(json.dumps(res))
    return 0


# -------------------------------------------------------------------------------------
# Parsing ss


def _num(pat: str, text: str) -> float | None:
    m = re.search(pat, text)
    return float(m.group(1)) if m else None


def parse_ss(text: str) -> list[dict[str, Any]]:
    """One dict per established TCP socket (subflows included) in `ss -tinH` output."""
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _SS_ADDR.search(lines[i])
        if not m:
            i += 1
            continue
        detail = lines[i + 1] if i + 1 < len(lines) and not _SS_ADDR.search(lines[i + 1]) else ""
        i += 2 if detail else 1
        cc = detail.split()[0] if detail.split() else ""
        rtt = re.search(r"\brtt:([\d.]+)/([\d.]+)", detail)
        retrans = re.search(r"\bretrans:\d+/(\d+)", detail)
        out.append({
            "local": m.group(1), "lport": int(m.group(2)), "peer": m.group(3), "pport": int(m.group(4)),
            "cc": cc if re.fullmatch(r"[a-z0-9_]+", cc) else "",
            "rtt_ms": float(rtt.group(1)) if rtt else None,
            "minrtt_ms": _num(r"\bminrtt:([\d.]+)", detail),
            "bytes_acked": _num(r"\bbytes_acked:(\d+)", detail) or 0.0,
            "bytes_sent": _num(r"\bbytes_sent:(\d+)", detail) or 0.0,
            "retrans": int(retrans.group(1)) if retrans else 0,
            "snd_wnd": _num(r"\bsnd_wnd:(\d+)", detail),
            "mss": _num(r"\bmss:(\d+)", detail),
            "cwnd": _num(r"\bcwnd:(\d+)", detail),
            "mptcp": "tcp-ulp-mptcp" in detail,
            **parse_bbr(detail),
        })
    return out


BBR_COLUMNS = ("bbr_bw_bps", "bbr_min_rtt_ms", "bbr_pacing_gain", "bbr_cwnd_gain")
_SI = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def parse_bbr(detail: str) -> dict[str, float | None]:
    """BBR's model as ``ss -ti`` prints it for a BBR socket (Linux's ``tcp_bbr_info``:
    ``bbr:(bw:9.72Mbps,mrtt:40.2,pacing_gain:1.25,cwnd_gain:2)``): the bandwidth estimate in
    bit/s (packets per second x MSS), the minimum RTT (ms) and both gains; None without it."""
    m = re.search(r"\bbbr:\(([^)]*)\)", detail)
    fields = dict(kv.split(":", 1) for kv in m.group(1).split(",") if ":" in kv) if m else {}
    bw = re.fullmatch(r"([\d.]+)([KMGT]?)bps", fields.get("bw", ""))

    def num(key: str) -> float | None:
        return float(fields[key]) if key in fields else None

    return {"bbr_bw_bps": float(bw.group(1)) * _SI[bw.group(2)] if bw else None, "bbr_min_rtt_ms": num("mrtt"),
            "bbr_pacing_gain": num("pacing_gain"), "bbr_cwnd_gain": num("cwnd_gain")}


# -------------------------------------------------------------------------------------
# One kernel run


def _run_kernel_once(d: dict[str, Any], desc: dict[str, Any], seed: int, workdir: Path, ss_interval: float = 1.0) -> dict[str, Any]:
    duration = desc["duration_s"]
    flows = desc["flows"]
    # both endpoints read CLOCK_MONOTONIC, which namespaces share: they start together at t0,
    # the emulator's time zero, so that traces and schedules begin with the run as in mpsim
    # (the testbed's setup and the endpoints' start take place in the seconds before)
    t0 = time.monotonic_ns() + int(4e9)
    with Testbed(desc, d, seed, workdir, origin_ns=t0) as tb:
        fcfg = []
        for k, f in enumerate(flows):
            fcfg.append({
                "name": f["name"], "port": 5201 + k, "addr": tb.server_addr(f["paths"][0]),
                "multipath": f["multipath"], "cc": f["cc"], "start_s": f["start_s"],
                "rcv_buf": f["tcp"]["rcv_buf"], "snd_buf": f["tcp"]["snd_buf"], "mss": f["tcp"]["mss"],
            })
        rcfg = workdir / "receiver.json"
        scfg = workdir / "sender.json"
        rout, sout = workdir / "receiver-out.json", workdir / "sender-out.json"
        base = {"flows": fcfg, "duration_s": duration, "grace_s": 3.0, "ss_interval_s": ss_interval}
        rcfg.write_text(json.dumps({**base, "t0_ns": t0}))
        recv = tb.spawn("server", ["receiver", str(rcfg), str(rout)])
        line = recv.stdout.readline() if recv.stdout else ""
        if "listening" not in line:
            raise RuntimeError(f"the receiver did not start: {recv.stderr.read() if recv.stderr else ''}")
        scfg.write_text(json.dumps({**base, "t0_ns": t0}))
        send = tb.spawn("client", ["sender", str(scfg), str(sout)])
        send.wait(timeout=duration + 60)
        if send.returncode != 0:
            raise RuntimeError(f"the sender failed: {send.stderr.read() if send.stderr else ''}")
        recv.wait(timeout=30)
        if recv.returncode != 0:
            raise RuntimeError(f"the receiver failed: {recv.stderr.read() if recv.stderr else ''}")
        emu = tb.stop_emulator()
        info = {
            "kernel": os.uname().release,
            "mptcp_scheduler": tb.sysctl("net.mptcp.scheduler"),
            "mptcp_path_manager": tb.sysctl("net.mptcp.path_manager"),
            "default_cc": tb.sysctl("net.ipv4.tcp_congestion_control"),
            "emulator_realtime": tb.emu_realtime,
            "addresses": {p: [tb.client_addr(p), tb.server_addr(p)] for p in tb.paths},
        }
        sender = json.loads(sout.read_text())
        receiver = json.loads(rout.read_text())
        return {"t0_ns": t0, "seed": seed, "sender": sender, "receiver": receiver, "emulator": emu,
                "info": info, "flows": fcfg, "path_of_addr": {tb.server_addr(p): p for p in tb.paths}}


def _summarise_kernel(run: dict[str, Any], desc: dict[str, Any]) -> dict[str, Any]:
    """Per-flow and per-path figures of one kernel run, over [warmup, duration]."""
    dur, warm = desc["duration_s"], desc["warmup_s"]
    span = dur - warm
    w0 = int(round(warm / BIN_S))
    paddr = run["path_of_addr"]
    port_flow = {f["port"]: f["name"] for f in run["flows"]}
    rows_f, rows_p = [], []
    # ss samples: the last one at or before the warmup, and the final one
    samples = [(t, parse_ss(text)) for t, text in run["sender"]["ss"]]
    before = [s for t, s in samples if t <= warm + 0.5]
    start_socks = before[-1] if before and warm > 0 else []
    final = samples[-1][1] if samples else []

    def sub_key(s: dict[str, Any]) -> tuple[str, str, int]:
        return (port_flow.get(s["pport"], "?"), paddr.get(s["peer"], "?"), s["lport"])

    acked0 = {sub_key(s): s["bytes_acked"] for s in start_socks}
    sent0 = {sub_key(s): s["bytes_sent"] for s in start_socks}
    rtts: dict[tuple[str, str], list[float]] = {}
    minrtt: dict[tuple[str, str], float] = {}
    wnd: dict[str, float] = {}
    ccs: dict[str, set[str]] = {}
    mss: dict[str, float] = {}
    for t, socks in samples:
        for s in socks:
            fl, p, _ = sub_key(s)
            if s["rtt_ms"] is not None and t >= warm:
                rtts.setdefault((fl, p), []).append(s["rtt_ms"])
            if s["minrtt_ms"] is not None:
                minrtt[(fl, p)] = min(minrtt.get((fl, p), 1e9), s["minrtt_ms"])
            if s["snd_wnd"] is not None:
                wnd[fl] = max(wnd.get(fl, 0), s["snd_wnd"])
            if s["cc"]:
                ccs.setdefault(fl, set()).add(s["cc"])
            if s["mss"]:
                mss[fl] = s["mss"]
    sub_series = [{"time_s": round(t, 3), "flow": sub_key(x)[0], "path": sub_key(x)[1],
                   **{k: x[k] for k in ("cc", "cwnd", "rtt_ms", "minrtt_ms", "bytes_acked", "retrans", "snd_wnd", "mss", *BBR_COLUMNS)}}
                  for t, socks in samples for x in socks]
    per_sub: dict[tuple[str, str], dict[str, float]] = {}
    for s in final:
        k = sub_key(s)
        e = per_sub.setdefault(k[:2], {"acked": 0.0, "retrans": 0.0, "sent": 0.0})
        e["acked"] += s["bytes_acked"] - acked0.get(k, 0.0)
        e["sent"] += s["bytes_sent"] - sent0.get(k, 0.0)
        e["retrans"] += s["retrans"]
    # retransmission timeouts per subflow, read from tcp_info as each socket closed
    tmo: dict[tuple[str, str], int] = {}
    for name, snd in run["sender"]["flows"].items():
        for sf in snd.get("subflows", []):
            if sf["timeouts"] is not None and sf["peer"] in paddr:
                key = (name, paddr[sf["peer"]])
                tmo[key] = tmo.get(key, 0) + sf["timeouts"]
    for f in desc["flows"]:
        r = run["receiver"]["flows"].get(f["name"], {"bins": [], "bytes": 0})
        got = sum(r["bins"][w0:int(round(dur / BIN_S))])
        snd = run["sender"]["flows"].get(f["name"], {})
        known = [tmo[(f["name"], p)] for p in f["paths"] if (f["name"], p) in tmo]
        rows_f.append({
            "flow": f["name"], "goodput_bps": got * 8 / span,
            "throughput_bps": sum(v["sent"] for (fl, _), v in per_sub.items() if fl == f["name"]) * 8 / span,
            "bytes_delivered": r["bytes"],
            "retransmits": sum(v["retrans"] for (fl, _), v in per_sub.items() if fl == f["name"]),
            "timeouts": sum(known) if known else None,
            "longest_silence_s": longest_silence(r["bins"], max(warm, f["start_s"]), dur),
            "cc": ",".join(sorted(ccs.get(f["name"], set()))) or snd.get("cc_read"),
            "max_window_bytes": wnd.get(f["name"]),
            "mss": mss.get(f["name"]),
            "error": snd.get("error"),
            "established_s": snd.get("established_s"),
            "first_write_s": snd.get("first_write_s"),
        })
        for p in f["paths"]:
            e = per_sub.get((f["name"], p), {"acked": 0.0, "retrans": 0.0})
            rr = rtts.get((f["name"], p), [])
            rows_p.append({
                "flow": f["name"], "path": p, "goodput_bps": e["acked"] * 8 / span,
                "retransmits": e["retrans"], "timeouts": tmo.get((f["name"], p)), "rtt_mean_ms": sum(rr) / len(rr) if rr else None,
                "rtt_min_ms": minrtt.get((f["name"], p)),
            })
    emu = run["emulator"]
    thr = {}
    path_series = []
    for p in emu.get("paths", []):
        bins = p["fwd"]["bins"]
        # emulator bins count from its own time zero; shift to the run's t0
        off = (run["t0_ns"] - emu["origin_ns"]) / 1e9
        lo, hi = int(round((off + warm) / BIN_S)), int(round((off + dur) / BIN_S))
        thr[p["name"]] = sum(bins[lo:hi]) * 8 / span
        per = int(round(1 / BIN_S))
        b0 = int(round(off / BIN_S))
        for sec in range(int(dur)):
            path_series.append({"path": p["name"], "time_s": float(sec),
                                "wire_bytes": sum(bins[b0 + sec * per:b0 + (sec + 1) * per])})
    for row in rows_p:
        row["path_throughput_bps"] = thr.get(row["path"])
    series = []
    for f in desc["flows"]:
        bins = run["receiver"]["flows"].get(f["name"], {"bins": []})["bins"]
        per = int(round(1 / BIN_S))
        for sec in range(int(dur)):
            series.append({"flow": f["name"], "time_s": float(sec), "delivered_bytes": sum(bins[sec * per:(sec + 1) * per])})
    nst = run["sender"].get("nstat", {})
    sides = {"client": nst, "server": run["receiver"].get("nstat", {})}
    # a counter this kernel lacks reads None, not 0
    kept = {side: {k: sides[side].get(k) for k in names} for side, names in NSTAT_KEPT.items()}
    return {"nstat": kept, "flows": rows_f, "paths": rows_p, "series": series, "path_series": path_series, "subflow_series": sub_series,
            "retrans_segs": nst.get("TcpRetransSegs"), "timeouts": nst.get("TcpExtTCPTimeouts"),
            "lateness": emu.get("lateness"), "emulator_cpu_s": (emu.get("cpu_user_s", 0) + emu.get("cpu_sys_s", 0)),
            "emulator_wall_s": emu.get("wall_s"), "emulator_paths": emu.get("paths", []),
            "aqm": _aqm_counts((lk["link"].rsplit("/", 1)[0], lk) for lk in emu.get("links", []))}


def longest_silence(bins: list[int], start_s: float, end_s: float) -> float:
    """The longest time (s) within [start_s, end_s) in which the receiver read nothing,
    from its byte counts per ``BIN_S``."""
    lo, hi = int(round(start_s / BIN_S)), int(round(end_s / BIN_S))
    longest = run = 0
    for b in range(lo, hi):
        run = run + 1 if b >= len(bins) or bins[b] == 0 else 0
        longest = max(longest, run)
    return round(longest * BIN_S, 6)


# -------------------------------------------------------------------------------------
# The mpsim side, configured as the kernel is


def linux_window_scale(so_rcvbuf: int) -> int:
    """The receive window scale Linux picks for a socket given ``SO_RCVBUFFORCE`` of
    *so_rcvbuf* bytes (`tcp_select_initial_window`: the space, half the doubled buffer at
    the initial scaling ratio, halved until it fits 16 bits; at most 14)."""
    space, ws = so_rcvbuf, 0
    while space > 65_535 and ws < 14:
        space >>= 1
        ws += 1
    return ws


def flow_start_s(flow: Mapping[str, Any]) -> float | None:
    """When a kernel flow began: its sender's first write to the connected socket, else (no
    write recorded) the moment the connection was established. The first write can come
    milliseconds after the handshake (the sender samples `ss` first), and on a trace-driven
    link those milliseconds move the flow to other delivery opportunities: 6.6 ms decided
    whether a cellular subflow left slow start at 28 segments or at 168
    (benches/results/kernel_aqm.md)."""
    first = flow.get("first_write_s")
    return first if first is not None else flow.get("established_s")


def mpsim_overrides(desc: Mapping[str, Any], windows: Mapping[str, float | None] | None = None,
                    starts: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Overrides that make mpsim run the scenario as the kernel side does.

    - Multipath flows run ``linux_upstream``, upstream Linux's default scheduler (lowest
      linger time, 64 KB bursts, neither opportunistic retransmission nor penalisation), and
      their extra subflows join after their own MP_JOIN exchange (``join_delay = "linux"``).
    - Receivers acknowledge as Linux's do (``tcp.delayed_ack = "linux"``: quick ACKs at the
      start and while the window they offer grows, then every second segment or 40 ms).
    - A loss sets ssthresh from half the congestion window, as Linux's Reno does
      (``tcp.ssthresh = "cwnd"``; mpsim's default halves the bytes in flight, as RFC 5681).
    - Headers are the kernel's: IPv4, TCP, timestamps, and for Multipath TCP the DSS option.
    - Every link gets up to ``KERNEL_JITTER`` of random extra delay (FIFO kept) on top of its
      own, for the timing noise of the testbed; without it mpsim's loss-free runs are the same
      for every seed, while the kernel's are not.

    *windows*: per flow, the largest receive window the kernel advertised. Linux turns a
    receive buffer into a window through its skb overhead ratio (``SO_RCVBUF`` is doubled,
    then about 0.6 of it is offered as window), so the buffer that matters, the window the
    sender was given, becomes mpsim's ``tcp.rcv_buf``. When that window is the most the
    window field carries with Linux's window scale (``65535 << wscale``), the buffer has room
    beyond it: ``tcp.rcv_buf`` becomes the buffer's share offered as window
    (``KERNEL_RCV_SCALING`` of the doubled ``SO_RCVBUF``) and ``tcp.window_scale`` Linux's
    scale, so held out-of-order data shrinks the window only once it fills that headroom.

    *starts*: per flow, the time (s) its kernel flow began (:func:`flow_start_s`: the first
    write), which becomes the flow's start in mpsim: the kernel's sender connects its flows
    one after the other, each waiting for its handshake, so a second flow starts about one
    RTT after the first.
    """
    ov: dict[str, Any] = {"metrics.interval": "1s"}
    for f in desc["flows"]:
        n = f["name"]
        if f["multipath"]:
            ov[f"flow.{n}.scheduler"] = "linux_upstream"
            ov[f"flow.{n}.join_delay"] = "linux"
        w = (windows or {}).get(n)
        if w and w < f["tcp"]["rcv_buf"] * 2:
            ws = linux_window_scale(f["tcp"]["rcv_buf"])
            memory = int(2 * f["tcp"]["rcv_buf"] * KERNEL_RCV_SCALING)
            if w >= 65_535 << ws and memory > w:
                # the window reached what the field carries: the buffer behind it is larger,
                # and out-of-order data is held in that headroom before the window shrinks
                ov[f"flow.{n}.tcp.rcv_buf"] = f"{memory}B"
                ov[f"flow.{n}.tcp.window_scale"] = ws
            else:
                ov[f"flow.{n}.tcp.rcv_buf"] = f"{int(w)}B"
        ov[f"flow.{n}.tcp.delayed_ack"] = "linux"
        ov[f"flow.{n}.tcp.ssthresh"] = "cwnd"
        # the kernel's headers: IPv4, TCP, timestamps, and for MPTCP the DSS option (mpsim
        # adds its own 16 B DSS mapping to multipath segments)
        hdr = TCP_HEADER + (KERNEL_DSS - MPSIM_DSS if f["multipath"] else 0)
        ov[f"flow.{n}.tcp.header"] = f"{hdr}B"
        if starts and starts.get(n) is not None:
            ov[f"flow.{n}.start"] = f"{round(starts[n] * 1e6)}us"
    for lk in desc["links"]:
        ov[f"link.{lk['name']}.jitter"] = f"{round((lk.get('jitter_s', 0.0) + KERNEL_JITTER) * 1e9)}ns"
    return ov


def _run_mpsim(d: dict[str, Any], overrides: Mapping[str, Any], seed: int, series: bool = True) -> dict[str, Any]:
    """One mpsim run of *d* with *overrides* and *seed*: per flow, per path and (with
    *series*, which needs ``metrics.interval = "1s"``) bytes delivered per second."""
    from ..api import run

    res = run(d, overrides={**overrides, "seed": seed}, progress=False)
    rows_f = [{"flow": r.flow, "goodput_bps": r.goodput_bps, "throughput_bps": r.throughput_bps,
               "retransmits": r.retransmits, "timeouts": r.timeouts, "cc": r.cc}
              for r in res.flows.itertuples() if not r.background]
    # the RTT as the kernel's is measured: the smoothed RTT sampled each second after the
    # warm-up (a mean over every ACK's sample weights the fast periods, which have more ACKs)
    srtt: dict[tuple[str, str], float] = {}
    ss = res.subflow_series
    if series and len(ss):
        ss = ss[ss["time_s"] >= float(res.summary.get("warmup_s") or 0.0)]
        srtt = {k: float(g["srtt_ms"].mean()) for k, g in ss.dropna(subset=["srtt_ms"]).groupby(["flow", "path"])}
    rows_p = [{"flow": r.flow, "path": r.path, "goodput_bps": r.goodput_bps, "retransmits": r.retransmits,
               "timeouts": r.timeouts, "rtt_mean_ms": srtt.get((r.flow, r.path), r.rtt_mean_ms)}
              for r in res.subflows.itertuples()]
    rows_s = []
    for name, g in res.flow_series.groupby("flow") if series else ():
        g = g.sort_values("time_s")
        prev = 0
        for r in g.itertuples():
            rows_s.append({"flow": name, "time_s": float(r.time_s) - 1.0, "delivered_bytes": r.delivered_bytes - prev})
            prev = r.delivered_bytes
    aqm = _aqm_counts((lk["link"], lk) for lk in res.summary.get("links", []))
    return {"flows": rows_f, "paths": rows_p, "series": [s for s in rows_s if s["time_s"] >= 0], "aqm": aqm}


def _aqm_counts(links: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, dict[str, int]]:
    """What each managed link's discipline dropped and marked, both directions summed, by link
    name, from (name, counters) pairs of the emulator's report or mpsim's summary."""
    out: dict[str, dict[str, int]] = {}
    for name, lk in links:
        if lk.get("aqm"):
            a = out.setdefault(name, {"drops": 0, "marks": 0})
            a["drops"] += int(lk.get("aqm_drops", 0))
            a["marks"] += int(lk.get("aqm_marks", 0))
    return out


# -------------------------------------------------------------------------------------
# The public entry point


def compare(scenario: Any, *, repeat: int = 1, out: str | os.PathLike[str] | None = None,
            overrides: Mapping[str, Any] | None = None, progress: bool = False, ss_interval: float = 1.0,
            **kw: Any) -> KernelResult:
    """Runs *scenario* through the Linux kernel ``repeat`` times and in mpsim with the same
    seeds (``seed``, ``seed + 1``, ...), and returns both side by side (``mpsim kernel`` on the
    command line).

    Args:
        scenario: a TOML file path, TOML text or a dict (see :func:`mpsim.scenario.load`).
        repeat: kernel runs, with seeds ``seed`` to ``seed + repeat - 1``.
        out: a folder: also write the tables, the summary, a report and a figure there
            (see :meth:`KernelResult.save`).
        overrides: ``{dotted_key: value}`` applied to the scenario first.
        progress: print a line on stderr as each kernel run starts.
        ss_interval: seconds between the samples of the kernel's sockets by ``ss`` (the
            ``subflow_series``, and the RTT means taken from it).
        **kw: more overrides, with ``__`` standing for ``.``.

    Raises:
        ScenarioError: the scenario is invalid, or uses features the kernel side cannot map
            (all of them named in one message).
        KernelUnavailable: the machine cannot run the kernel side (and why).
    """
    import pandas as pd

    d, origin = load(scenario)
    ov = dict(overrides or {})
    ov.update({k.replace("__", "."): v for k, v in kw.items()})
    if ov:
        d = apply_overrides(d, ov, origin=origin)
    desc = describe(d, origin)
    if any(f["transport"] == "quic" for f in desc["flows"]):
        # QUIC runs on a real Multipath QUIC implementation instead (quic.py)
        from . import quic

        return quic.compare(d, desc, origin, repeat=repeat, out=out, progress=progress)  # type: ignore[return-value]
    bad = unmappable(desc)
    if bad:
        raise ScenarioError(origin, "", "cannot run on the Linux kernel: " + "; ".join(bad))
    ok, why = available(any(f["multipath"] for f in desc["flows"]))
    if not ok:
        raise KernelUnavailable(f"the kernel side {why}")
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    if not 0.01 <= ss_interval <= desc["duration_s"]:
        raise ValueError(f"ss_interval must be between 0.01 s and the duration, not {ss_interval}")
    name = desc["name"]
    rows_f, rows_p, rows_s, rows_ps, rows_ss, runs = [], [], [], [], [], []
    used: list[dict[str, Any]] = []
    info: dict[str, Any] = {}
    cc_used: set[str] = set()
    restore = _trap_sigterm()
    try:
        for k in range(repeat):
            seed = desc["seed"] + k
            if progress:
                print(f"{name}: kernel run {k + 1}/{repeat} ({desc['duration_s']:g} s)", file=sys.stderr, flush=True)
            with tempfile.TemporaryDirectory(prefix="mpsim-kernel-") as wd:
                raw = _run_kernel_once(d, desc, seed, Path(wd), ss_interval)
            ks = _summarise_kernel(raw, desc)
            ov = mpsim_overrides(desc, {f["flow"]: f["max_window_bytes"] for f in ks["flows"]},
                                 {f["flow"]: flow_start_s(f) for f in ks["flows"]})
            used.append(ov)
            ms = _run_mpsim(d, ov, seed)
            mfile = _run_mpsim(d, {}, seed, series=False)
            info = raw["info"]
            for f in ks["flows"]:
                cc_used.update(filter(None, (f["cc"] or "").split(",")))
            mf = {r["flow"]: r for r in ms["flows"]}
            ff = {r["flow"]: r for r in mfile["flows"]}
            for f in ks["flows"]:
                m = mf.get(f["flow"], {})
                rows_f.append({"repeat": k, "seed": seed, "flow": f["flow"],
                               "kernel_goodput_bps": f["goodput_bps"], "mpsim_goodput_bps": m.get("goodput_bps"),
                               "mpsim_file_goodput_bps": ff.get(f["flow"], {}).get("goodput_bps"),
                               "ratio_mpsim_kernel": m["goodput_bps"] / f["goodput_bps"] if f["goodput_bps"] and m else None,
                               "kernel_throughput_bps": f["throughput_bps"], "mpsim_throughput_bps": m.get("throughput_bps"),
                               "kernel_retransmits": f["retransmits"], "mpsim_retransmits": m.get("retransmits"),
                               "kernel_timeouts": f["timeouts"], "mpsim_timeouts": m.get("timeouts"),
                               "kernel_longest_silence_s": f["longest_silence_s"],
                               "kernel_cc": f["cc"], "kernel_mss": f["mss"], "kernel_max_window_bytes": f["max_window_bytes"],
                               "established_s": f["established_s"], "first_write_s": f["first_write_s"],
                               "error": f["error"]})
            mp = {(r["flow"], r["path"]): r for r in ms["paths"]}
            fp = {(r["flow"], r["path"]): r for r in mfile["paths"]}
            for p in ks["paths"]:
                m = mp.get((p["flow"], p["path"]), {})
                rows_p.append({"repeat": k, "seed": seed, "flow": p["flow"], "path": p["path"],
                               "kernel_goodput_bps": p["goodput_bps"], "mpsim_goodput_bps": m.get("goodput_bps"),
                               "mpsim_file_goodput_bps": fp.get((p["flow"], p["path"]), {}).get("goodput_bps"),
                               "ratio_mpsim_kernel": m["goodput_bps"] / p["goodput_bps"] if p["goodput_bps"] and m else None,
                               "kernel_throughput_bps": p["path_throughput_bps"],
                               "kernel_rtt_mean_ms": p["rtt_mean_ms"], "mpsim_rtt_mean_ms": m.get("rtt_mean_ms"),
                               "kernel_rtt_min_ms": p["rtt_min_ms"],
                               "kernel_retransmits": p["retransmits"], "mpsim_retransmits": m.get("retransmits"),
                               "kernel_timeouts": p["timeouts"], "mpsim_timeouts": m.get("timeouts")})
            rows_ps += [{"repeat": k, **r} for r in ks["path_series"]]
            rows_ss += [{"repeat": k, **r} for r in ks["subflow_series"]]
            msr = {(s["flow"], s["time_s"]): s["delivered_bytes"] for s in ms["series"]}
            for s in ks["series"]:
                rows_s.append({"repeat": k, "flow": s["flow"], "time_s": s["time_s"], "kernel_bytes": s["delivered_bytes"],
                               "mpsim_bytes": msr.get((s["flow"], s["time_s"]))})
            runs.append({"repeat": k, "seed": seed, "lateness": ks["lateness"], "retrans_segs": ks["retrans_segs"],
                         "timeouts": ks["timeouts"], "nstat": ks["nstat"], "emulator_cpu_s": ks["emulator_cpu_s"],
                         "emulator_wall_s": ks["emulator_wall_s"], "emulator_realtime": info.get("emulator_realtime"),
                         "aqm": {"kernel": ks["aqm"], "mpsim": ms["aqm"]},
                         "emulator_paths": [{k2: v for k2, v in p.items() if k2 in ("name",)} |
                                            {d2: {x: y for x, y in p[d2].items() if x != "bins"} for d2 in ("fwd", "rev")}
                                            for p in ks["emulator_paths"]]})
    finally:
        _untrap_sigterm(restore)
    info["cc_used"] = ",".join(sorted(cc_used))
    res = KernelResult(name, pd.DataFrame(rows_f), pd.DataFrame(rows_p), pd.DataFrame(rows_s), runs, info,
                       pd.DataFrame(rows_ps), pd.DataFrame(rows_ss), settings_changed(d, desc, used))
    if out is not None:
        res.save(out)
    return res


def accuracy(rate: str = "10Mbps", delay: str = "20ms", *, probe_s: float = 3.0, flood_s: float = 4.0,
             queue: str = "100pkt") -> dict[str, Any]:
    """Measures the emulator on one path from outside it: the one-way delay of small probes
    sent 20 ms apart (expected: the delay plus their serialisation time) and the rate at which
    a flood 20 % above the link's rate arrives (expected: the rate, counted in IP bytes).

    Returns rate error (relative), delay errors (ms: mean, p50, p99, max over probes), and the
    emulator's own lateness report.
    """
    ok, why = available(multipath=False)
    if not ok:
        raise KernelUnavailable(f"the kernel side {why}")
    d, origin = load(f"""
name = "emulator-accuracy"
duration = "{probe_s + flood_s}s"
[[link]]
name = "l0"
rate = "{rate}"
delay = "{delay}"
queue = "{queue}"
[[path]]
name = "p0"
links = ["l0"]
[[flow]]
path = "p0"
""")
    desc = describe(d, origin)
    lk = desc["links"][0]
    probe_bytes, flood_bytes = 200, 1472
    cfg = {"port": 5301, "probe_s": probe_s, "probe_gap_s": 0.02, "probe_bytes": probe_bytes,
           "flood_s": flood_s, "flood_bytes": flood_bytes, "flood_bps": 1.2 * lk["rate_bps"],
           "total_s": probe_s + flood_s}
    restore = _trap_sigterm()
    try:
        with tempfile.TemporaryDirectory(prefix="mpsim-kernel-") as wd, Testbed(desc, d, 1, Path(wd)) as tb:
            w = Path(wd)
            t0 = time.monotonic_ns() + int(2e9)
            cfg.update(t0_ns=t0, addr=tb.server_addr("p0"))
            (w / "u.json").write_text(json.dumps(cfg))
            recv = tb.spawn("server", ["udp-receiver", str(w / "u.json"), str(w / "r.json")])
            if "listening" not in (recv.stdout.readline() if recv.stdout else ""):
                raise RuntimeError(f"the receiver did not start: {recv.stderr.read() if recv.stderr else ''}")
            send = tb.spawn("client", ["udp-sender", str(w / "u.json"), str(w / "s.json")])
            send.wait(timeout=probe_s + flood_s + 30)
            recv.wait(timeout=30)
            emu = tb.stop_emulator()
            r = json.loads((w / "r.json").read_text())
    finally:
        _untrap_sigterm(restore)
    wire = 28  # IPv4 + UDP
    expect_ms = lk["delay_s"] * 1e3 + (probe_bytes + wire) * 8 / lk["rate_bps"] * 1e3
    errs = sorted(x / 1e6 - expect_ms for x in r["delays_ns"])
    flood = r["flood_ns"]
    # skip the first half second of the flood (the queue fills), then count arrivals
    flood = [t for t in flood if t >= flood[0] + 5e8] if flood else []
    measured = (len(flood) - 1) * (flood_bytes + wire) * 8 / ((flood[-1] - flood[0]) / 1e9) if len(flood) > 2 else float("nan")

    def q(p: float) -> float:
        return errs[min(len(errs) - 1, int(p * len(errs)))] if errs else float("nan")

    return {
        "rate": rate, "delay": delay, "rate_bps": lk["rate_bps"], "measured_bps": measured,
        "rate_error": measured / lk["rate_bps"] - 1,
        "probes": len(errs), "expected_delay_ms": expect_ms,
        "delay_error_ms": {"mean": sum(errs) / len(errs) if errs else float("nan"), "p50": q(0.5), "p99": q(0.99),
                           "max": errs[-1] if errs else float("nan"), "min": errs[0] if errs else float("nan")},
        "lateness": emu.get("lateness"), "emulator_realtime": emu.get("realtime"),
        "emulator_cpu_s": emu.get("cpu_user_s", 0) + emu.get("cpu_sys_s", 0), "emulator_wall_s": emu.get("wall_s"),
    }


def _raise_interrupt(*_: Any) -> None:
    raise KeyboardInterrupt


def _trap_sigterm() -> Any:
    """SIGTERM becomes KeyboardInterrupt while the testbed exists, so that it is removed;
    returns what to restore (None when nothing was changed: not the main thread, or ignored)."""
    try:
        old = signal.getsignal(signal.SIGTERM)
        if old is None or old is signal.SIG_IGN:
            return None
        signal.signal(signal.SIGTERM, _raise_interrupt)
        return old
    except ValueError:  # not the main thread
        return None


def _untrap_sigterm(old: Any) -> None:
    if old is not None:
        signal.signal(signal.SIGTERM, old)


# -------------------------------------------------------------------------------------
# Command line: `mpsim kernel SCENARIO [--repeat N] [--out DIR] [--json]`

_EPILOG = """\
what it needs:
  root, /dev/net/tun, Multipath TCP enabled for multipath flows (sysctl net.mptcp.enabled=1),
  iproute2 (ip, ss, nstat) and the link emulator mpsim-linkemu. It is looked for in
  $MPSIM_LINKEMU (a path to the binary), then a checkout's target/release, then the one the
  wheel installed with mpsim (wheels built with 'make wheel'), then PATH. Without one:
  cargo build --release -p mpsim-linkemu in mpsim's source, and MPSIM_LINKEMU=path/to/it.

what it maps:
  single-path and Multipath TCP flows running unlimited bulk transfers, cc reno, cubic or bbr,
  links with rate, delay, queue (bytes or packets), loss, traces, schedules and queue
  disciplines (the emulator runs mpsim's own link code). Anything else (UDP, other
  applications, background traffic, coupled controllers, schedulers other than lowest_rtt,
  backup subflows, link outages, stop times, RTO settings other than Linux's) is refused
  with one message naming every such feature. Multipath TCP gets subflow limits and one
  'signal' endpoint per extra path on the server (no client 'subflow' endpoints).
  A flow with transport "quic" (one path or several) runs instead on a real Multipath QUIC
  implementation, mpsim-quicpeer on noq ('make quicpeer'; $MPSIM_QUICPEER names another
  build), beside mpsim's QUIC; the ratio is then mpsim/real (docs/kernel.md).

what it prints:
  per flow and per path: the kernel's goodput (median over the repeats, mean, min-max),
  mpsim matched to the kernel run, mpsim as the file stands ('mpsim run' with the same
  seed), the ratio mpsim/kernel, retransmissions, timeouts and RTTs; every setting the
  matched mpsim run took from the kernel run (name, the file's value, the value used, why);
  and the stalled kernel repeats (nothing delivered for 2 s, goodput below half the other
  repeats' median, or a failed connection). --json prints the same as one JSON document
  (schema in docs/kernel.md).

examples:
  sudo mpsim kernel scenarios/kernel/tcp_10m.toml
  sudo mpsim kernel scenarios/kernel/mptcp_2x10m.toml --repeat 3 --out kernel-2x10m/
  sudo mpsim kernel scenarios/kernel/mptcp_asym.toml --json > asym.json
"""


def add_parser(sub: Any, formatter: Any, add_set: Any) -> None:
    k = sub.add_parser(
        "kernel",
        help="run a scenario through the Linux kernel (TCP/MPTCP in namespaces) beside mpsim",
        description="Run the scenario through the real Linux TCP and Multipath TCP, in two network "
        "namespaces joined by emulated paths (rate, delay, drop-tail queue, loss, from the scenario), "
        "then in mpsim, matched to the kernel run and as the file stands; print them side by side "
        "with the ratio mpsim/kernel.",
        epilog=_EPILOG,
        formatter_class=formatter,
    )
    k.add_argument("scenario", metavar="SCENARIO", help="the scenario file (.toml)")
    add_set(k)
    k.add_argument("--repeat", type=int, default=1, metavar="N", help="kernel runs (seeds seed..seed+N-1, default: 1)")
    k.add_argument("--out", metavar="DIR", help="write flows.csv, paths.csv, series.csv, path_series.csv, subflow_series.csv, summary.json, report.md, goodput.png")
    k.add_argument("--json", action="store_true", help="print the result as one JSON document instead of tables")


def cmd_kernel(args: Any, overrides: dict[str, Any]) -> int:
    try:
        res = compare(args.scenario, repeat=args.repeat, out=args.out, overrides=overrides, progress=True)
    except KernelUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(res.to_json(), indent=1, allow_nan=False))
    else:
        print(res.report())
    if args.out:
        print(f"results in {args.out}/", file=sys.stderr if args.json else sys.stdout)
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "_endpoint":
        raise SystemExit(_endpoint_main(sys.argv[2:]))
    raise SystemExit("usage: mpsim kernel SCENARIO [--repeat N] [--out DIR] [--json]")
