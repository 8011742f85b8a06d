"""Multipath QUIC on a real implementation, side by side with mpsim's QUIC.

``mpsim kernel SCENARIO`` hands a scenario whose flow has ``transport = "quic"`` to
:func:`compare`: the same testbed as the TCP comparison (two namespaces, one pair of TUN devices
per path, the link emulator with mpsim's link model), but the endpoints are
``mpsim-quicpeer`` (crates/mpsim-quicpeer), a QUIC server and client on noq 1.4.0,
n0-computer's Multipath QUIC (draft-ietf-quic-multipath, its code cites revision 21). The
bulk sender, noq's *server*, runs in the ``client`` namespace, so that data goes the way it
goes in the TCP runs (``client`` to ``server``); noq's *client* runs in the ``server``
namespace, connects over the first path and opens one more path to each further path's
address (the namespace routes each address through its own emulated link).

The real side's figures: goodput from the bytes the client read per 0.1 s; per path, the
share of it is the path's share of the UDP bytes the client received in the same window
(noq keeps no per-path count of stream bytes); RTT (smoothed), lost packets and congestion
events per path from the server's ``PathStats`` sampled every 0.1 s. Both ends write qlog
(``--out DIR`` keeps it beside mpsim's, ``qlog/``).

mpsim runs the scenario matched to the real run (:func:`mpsim_overrides`: noq's scheduler,
the start, the testbed's jitter; each change listed) and as the file stands. Every ratio is
mpsim / real.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

from ..errors import ScenarioError
from .testbed import BIN_S, KERNEL_JITTER, Testbed, find_binary, _run_mpsim, _trap_sigterm, _untrap_sigterm, longest_silence

__all__ = ["compare", "QuicResult", "find_peer", "peer_missing", "unmappable", "mpsim_overrides", "peer_args",
           "PEER_CCS", "SCHEDULER", "SCHEMA"]

#: mpsim's controllers the peer runs, and noq's name for each (noq 1.4.0 also has BBRv3,
#: which mpsim's QUIC refuses; its controllers are per path, uncoupled).
PEER_CCS = {"reno": "NewReno", "cubic": "Cubic"}
#: noq's path choice: ``Connection::poll_transmit`` walks the paths by path ID and sends on
#: the first one whose window (and pacer) has room; mpsim's ``in_order`` does the same.
SCHEDULER = "in_order"
PORT = 4433
SCHEMA = "mpsim-kernel-quic/1"
#: The server writes this much longer than the scenario, so the pipe stays full to its end.
TAIL_S = 1.0


def find_peer() -> Path | None:
    """The ``mpsim-quicpeer`` binary: $MPSIM_QUICPEER, else the checkout's target/release,
    else PATH."""
    return find_binary("mpsim-quicpeer", "MPSIM_QUICPEER")


def peer_missing() -> str:
    """Why no peer was found, and how to get one."""
    env = os.environ.get("MPSIM_QUICPEER")
    if env:
        return f"MPSIM_QUICPEER names '{env}', which is not a file"
    return ("needs the QUIC peer mpsim-quicpeer, which is not built: 'make quicpeer' in mpsim's source "
            "(or set MPSIM_QUICPEER to its path)")


def with_schedulers(d: Mapping[str, Any], desc: dict[str, Any]) -> dict[str, Any]:
    """*desc* with each QUIC flow's ``scheduler`` as the scenario gives it (``lowest_rtt`` when
    it names none; the emulator's description names schedulers of Multipath TCP flows only),
    its ``path_status`` changes (``quic.path_status``, none when it gives none), and its
    ``ack_frequency`` and ``pacing`` (``quic.ack_frequency``: None when absent;
    ``quic.pacing``: true unless given)."""
    raw = {x.get("name"): x for x in d.get("flow", [])}

    def quic(f: Mapping[str, Any]) -> dict[str, Any]:
        r = raw.get(f["name"], {})
        q = r.get("quic") or {}
        return dict(
            f,
            scheduler=r.get("scheduler", "lowest_rtt"),
            path_status=list(q.get("path_status", [])),
            ack_frequency=q.get("ack_frequency"),
            pacing=q.get("pacing", True),
        )

    flows = [quic(f) if f["transport"] == "quic" else f for f in desc["flows"]]
    return {**desc, "flows": flows}


def unmappable(desc: Mapping[str, Any]) -> list[str]:
    """What of a described scenario (:func:`with_schedulers`) the QUIC peer cannot reproduce
    (empty: it can)."""
    out: list[str] = []
    flows = desc["flows"]
    fg = [f for f in flows if not f["background"]]
    if len(flows) != 1 or len(fg) != 1:
        out.append(f"{len(flows)} flows (a QUIC comparison runs exactly one QUIC flow)")
    for f in flows:
        n = f"flow '{f['name']}'"
        if f["transport"] != "quic":
            out.append(f"{n}: transport {f['transport']} beside a QUIC flow")
            continue
        if f["app"]["kind"] != "bulk" or f["app"].get("bytes") is not None:
            out.append(f"{n}: app {f['app']['kind']}{' with bytes' if f['app'].get('bytes') else ''} (only unlimited bulk)")
        if f["cc"] not in PEER_CCS:
            out.append(f"{n}: cc {f['cc']} (the QUIC peer, noq, has {', '.join(PEER_CCS)} per path, uncoupled)")
        if len(f["paths"]) > 1 and f["scheduler"] not in (SCHEDULER, "lowest_rtt"):
            out.append(f"{n}: scheduler {f['scheduler']} (noq sends on the lowest path ID with room: {SCHEDULER})")
        if any(f["backup"]):
            out.append(f"{n}: backup paths")
        if f.get("path_status"):
            out.append(f"{n}: path status changes (quic.path_status)")
        if f.get("ack_frequency") is not None:
            out.append(f"{n}: quic.ack_frequency (the peer sends no ACK_FREQUENCY frames)")
        if not f.get("pacing", True):
            out.append(f"{n}: quic.pacing = false (noq always paces)")
        if f["stop_s"] is not None:
            out.append(f"{n}: stop")
        if f["start_s"] != 0:
            out.append(f"{n}: start {f['start_s']:g}s (the peer starts at once)")
    for lk in desc["links"]:
        if lk["outages"]:
            out.append(f"link '{lk['name']}': down intervals")
    return out


def max_datagram(f: Mapping[str, Any]) -> int:
    """The largest QUIC packet (UDP payload), as mpsim's QUIC sizes it: the flow's IP packet
    size, ``tcp.mss + tcp.header``, less IPv4 and UDP headers (docs/quic.md)."""
    return int(f["tcp"]["mss"] + f["tcp"]["header"] - 28)


def initial_window(f: Mapping[str, Any]) -> int:
    """mpsim's QUIC initial window (RFC 9002 §7.2 with ``tcp.initial_window`` for 10)."""
    md = max_datagram(f)
    return min(f["tcp"]["initial_window"] * md, max(14_720, 2 * md))


def peer_args(f: Mapping[str, Any], duration_s: float) -> list[str]:
    """The options both ends of the peer share, from the flow as mpsim reads it."""
    return ["--cc", f["cc"], "--initial-window", str(initial_window(f)), "--max-datagram", str(max_datagram(f)),
            "--rcv-buf", str(int(f["tcp"]["rcv_buf"])), "--bin", str(BIN_S), "--duration", f"{duration_s:g}"]


def mpsim_overrides(desc: Mapping[str, Any], starts: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Overrides that make mpsim run the scenario as the real QUIC run went: a multipath flow
    schedules as noq does (:data:`SCHEDULER`), the flow starts when the real handshake ended,
    every link gets the testbed's jitter (as in the TCP comparison)."""
    ov: dict[str, Any] = {"metrics.interval": "1s"}
    for f in desc["flows"]:
        n = f["name"]
        if len(f["paths"]) > 1 and f.get("scheduler") != SCHEDULER:
            ov[f"flow.{n}.scheduler"] = SCHEDULER
        if starts and starts.get(n) is not None:
            ov[f"flow.{n}.start"] = f"{round(starts[n] * 1e6)}us"
    for lk in desc["links"]:
        ov[f"link.{lk['name']}.jitter"] = f"{round((lk.get('jitter_s', 0.0) + KERNEL_JITTER) * 1e9)}ns"
    return ov


_WHY = {
    "scheduler": "noq sends on the lowest-numbered path whose window has room (Connection::poll_transmit); "
                 "mpsim's in_order does the same",
    "start": "when that repeat's real handshake ended (mpsim's QUIC does not simulate the handshake)",
    "jitter": "up to 0.2 ms of extra delay per packet for the testbed's timing noise",
    "metrics.interval": "the real side is counted per second",
}


def settings_changed(desc: Mapping[str, Any], used: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each setting the matched run took from the real run: its file value, the values used, why."""
    out = []
    keys: list[str] = []
    for ov in used:
        keys += [k for k in ov if k not in keys]
    for k in keys:
        parts = k.split(".")
        if parts[0] == "link":
            lk = next(x for x in desc["links"] if x["name"] == parts[1])
            file = f"{round(lk.get('jitter_s', 0.0) * 1e9)}ns"
        elif k == "metrics.interval":
            iv = desc.get("interval_s")
            file = "none" if iv is None else f"{iv:g}s"
        else:
            f = next(x for x in desc["flows"] if x["name"] == parts[1])
            file = f"{round(f['start_s'] * 1e6)}us" if parts[2] == "start" else str(f.get(parts[2]))
        vals = [str(ov.get(k, file)) for ov in used]
        if any(v != file for v in vals):
            out.append({"setting": k, "file": file, "used": vals, "why": _WHY[k if k in _WHY else parts[-1]]})
    return out


# -------------------------------------------------------------------------------------
# One real run


def _spawn(tb: Testbed, side: str, args: list[str]) -> subprocess.Popen[str]:
    from .testbed import _die_with_parent

    peer = find_peer()
    assert peer is not None
    p = subprocess.Popen(["ip", "netns", "exec", tb.ns[side], str(peer), *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=_die_with_parent)
    tb.procs.append(p)
    return p


def run_once(d: dict[str, Any], desc: dict[str, Any], seed: int, workdir: Path) -> dict[str, Any]:
    """One run of the peer over the testbed: the client's and server's JSON, the emulator's
    report, and the qlog files (in ``workdir/qlog``)."""
    f = desc["flows"][0]
    dur = desc["duration_s"]
    qlog = workdir / "qlog"
    # the client starts at t0, the emulator's time zero, so that traces and schedules begin with
    # the run as in mpsim (the testbed's setup and the server's start take place before it)
    t0 = time.monotonic_ns() + int(4e9)
    with Testbed(desc, d, seed, workdir, origin_ns=t0) as tb:
        cert, sout, cout = workdir / "cert.der", workdir / "server.json", workdir / "client.json"
        server = _spawn(tb, "client", ["server", "--listen", f"0.0.0.0:{PORT}", "--cert", str(cert), "--out", str(sout),
                                       "--qlog", str(qlog), *peer_args(f, dur + TAIL_S)])
        line = server.stdout.readline() if server.stdout else ""
        if "listening" not in line:
            raise RuntimeError(f"the QUIC server did not start: {server.stderr.read() if server.stderr else ''}")
        # one --server per path: the bulk sender's address on that path, in path order
        servers = [x for p in f["paths"] for x in ("--server", f"{tb.client_addr(p)}:{PORT}")]
        time.sleep(max(0.0, (t0 - time.monotonic_ns()) / 1e9))
        client = _spawn(tb, "server", ["client", *servers, "--cert", str(cert), "--out", str(cout), "--qlog", str(qlog),
                                       *peer_args(f, dur)])
        t_start = time.monotonic_ns()
        client.wait(timeout=dur + 60)
        if client.returncode != 0:
            raise RuntimeError(f"the QUIC client failed: {client.stderr.read().strip() if client.stderr else ''}")
        server.wait(timeout=dur + 60)
        if server.returncode != 0:
            raise RuntimeError(f"the QUIC server failed: {server.stderr.read().strip() if server.stderr else ''}")
        emu = tb.stop_emulator()
        info = {"kernel": os.uname().release, "peer": _peer_version(), "emulator_realtime": tb.emu_realtime,
                "addresses": {p: [tb.client_addr(p), tb.server_addr(p)] for p in tb.paths}}
        path_of = {tb.client_addr(p): p for p in tb.paths} | {tb.server_addr(p): p for p in tb.paths}
        return {"t0_ns": t_start, "server": json.loads(sout.read_text()), "client": json.loads(cout.read_text()),
                "emulator": emu, "info": info, "path_of_addr": path_of,
                "qlog": sorted(str(q) for q in qlog.glob("*")) if qlog.is_dir() else []}


def _peer_version() -> str:
    peer = find_peer()
    if peer is None:
        return "n/a"
    p = subprocess.run([str(peer), "--version"], capture_output=True, text=True)
    return p.stdout.strip() or "n/a"


def _at(records: list[dict[str, Any]], t: float, key: str) -> float:
    """*key* of the last record at or before *t* (0 before the first)."""
    v = 0.0
    for r in records:
        if r["t"] <= t + 1e-9:
            v = float(r[key])
    return v


def summarise(run: Mapping[str, Any], desc: Mapping[str, Any]) -> dict[str, Any]:
    """Per-flow and per-path figures of one real run, over [warmup, duration]."""
    f = desc["flows"][0]
    dur, warm = desc["duration_s"], desc["warmup_s"]
    span = dur - warm
    cl, sv = run["client"], run["server"]
    bins = cl["bins"]
    got = sum(bins[int(round(warm / BIN_S)):int(round(dur / BIN_S))])
    goodput = got * 8 / span
    addr = run["path_of_addr"]

    def by_path(side: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for recs in side["paths"].values():
            p = addr.get(recs[-1].get("remote") or "", None) if recs else None
            if p is not None:
                out.setdefault(p, []).extend(recs)
        return out

    crec, srec = by_path(cl), by_path(sv)
    rx = {p: _at(crec.get(p, []), dur, "udp_rx_bytes") - _at(crec.get(p, []), warm, "udp_rx_bytes") for p in f["paths"]}
    total_rx = sum(rx.values())
    rows_p = []
    for p in f["paths"]:
        s = srec.get(p, [])
        rtts = [r["rtt_ms"] for r in s if r["t"] >= warm and r["rtt_ms"] > 0]
        rows_p.append({
            "flow": f["name"], "path": p,
            "goodput_bps": goodput * rx[p] / total_rx if total_rx else 0.0,
            "udp_rx_bps": rx[p] * 8 / span,
            "lost_packets": _at(s, dur + TAIL_S + 1, "lost_packets"),
            "congestion_events": _at(s, dur + TAIL_S + 1, "congestion_events"),
            "rtt_mean_ms": sum(rtts) / len(rtts) if rtts else None,
            "rtt_min_ms": min(rtts) if rtts else None,
            "cwnd_mean_bytes": (sum(r["cwnd"] for r in s if r["t"] >= warm) / max(1, sum(1 for r in s if r["t"] >= warm))) if s else None,
        })
    per = int(round(1 / BIN_S))
    series = [{"flow": f["name"], "time_s": float(sec), "delivered_bytes": sum(bins[sec * per:(sec + 1) * per])}
              for sec in range(int(dur))]
    flow = {"flow": f["name"], "goodput_bps": goodput, "bytes_delivered": cl["read_bytes"],
            "lost_packets": sum(r["lost_packets"] for r in rows_p), "longest_silence_s": longest_silence(bins, warm, dur),
            "established_s": cl["established_s"], "multipath": cl["multipath"],
            "error": cl.get("error") or (None if len(crec) == len(f["paths"]) else
                                         f"{len(crec)} of {len(f['paths'])} paths opened")}
    return {"flows": [flow], "paths": rows_p, "series": series,
            "lateness": run["emulator"].get("lateness")}


# -------------------------------------------------------------------------------------
# The result


def _med(xs: list[float | None]) -> float | None:
    v = sorted(x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x)))
    if not v:
        return None
    m = len(v) // 2
    return v[m] if len(v) % 2 else (v[m - 1] + v[m]) / 2


def _f(x: float | None, scale: float = 1e6, fmt: str = ".2f") -> str:
    return "n/a" if x is None else format(x / scale, fmt)


class QuicResult:
    """The real QUIC run and mpsim's, repeat by repeat (``flows``, ``paths``: lists of dicts,
    one per repeat; ``real_*`` the peer's figures, ``mpsim_*`` the matched run's,
    ``mpsim_file_*`` the file's own; ``ratio_mpsim_real`` of the matched one)."""

    def __init__(self, name: str, flows: list[dict[str, Any]], paths: list[dict[str, Any]], series: list[dict[str, Any]],
                 runs: list[dict[str, Any]], info: dict[str, Any], changed: list[dict[str, Any]]) -> None:
        self.name, self.flows, self.paths, self.series = name, flows, paths, series
        self.runs, self.info, self.changed = runs, info, changed

    def flow_summary(self) -> list[dict[str, Any]]:
        out = []
        for name in dict.fromkeys(r["flow"] for r in self.flows):
            g = [r for r in self.flows if r["flow"] == name]
            real = [r["real_goodput_bps"] for r in g]
            rm, mm = _med(real), _med([r["mpsim_goodput_bps"] for r in g])
            out.append({"flow": name, "repeats": len(g),
                        "real_goodput_bps": {"median": rm, "min": min(real), "max": max(real)},
                        "mpsim_goodput_bps": mm, "mpsim_file_goodput_bps": _med([r["mpsim_file_goodput_bps"] for r in g]),
                        "ratio_mpsim_real": mm / rm if mm is not None and rm else None,
                        **{k: _med([r[k] for r in g]) for k in ("real_lost_packets", "mpsim_lost_packets", "mpsim_retransmits")},
                        "errors": [{"repeat": r["repeat"], "error": r["error"]} for r in g if r["error"]]})
        return out

    def path_summary(self) -> list[dict[str, Any]]:
        out = []
        for key in dict.fromkeys((r["flow"], r["path"]) for r in self.paths):
            g = [r for r in self.paths if (r["flow"], r["path"]) == key]
            rm, mm = _med([r["real_goodput_bps"] for r in g]), _med([r["mpsim_goodput_bps"] for r in g])
            out.append({"flow": key[0], "path": key[1], "real_goodput_bps": rm, "mpsim_goodput_bps": mm,
                        "mpsim_file_goodput_bps": _med([r["mpsim_file_goodput_bps"] for r in g]),
                        "ratio_mpsim_real": mm / rm if mm is not None and rm else None,
                        **{f"{w}_{x}": _med([r[f"{w}_{x}"] for r in g])
                           for x in ("lost_packets", "rtt_mean_ms") for w in ("real", "mpsim")},
                        "mpsim_retransmits": _med([r["mpsim_retransmits"] for r in g]),
                        "real_rtt_min_ms": min((r["real_rtt_min_ms"] for r in g if r["real_rtt_min_ms"] is not None),
                                               default=None)})
        return out

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "scenario": self.name, "ratio": "mpsim/real", "info": self.info,
                "settings_changed": self.changed, "flows": self.flow_summary(), "paths": self.path_summary(),
                "repeats": {"flows": self.flows, "paths": self.paths}, "runs": self.runs}

    def table(self) -> str:
        lines = ["| flow | real median (min-max) | mpsim matched | mpsim as the file | ratio mpsim/real "
                 "| lost packets real / mpsim |", "|---|---|---|---|---|---|"]
        for s in self.flow_summary():
            k = s["real_goodput_bps"]
            lines.append(f"| {s['flow']} | {_f(k['median'])} ({_f(k['min'])}-{_f(k['max'])}) | {_f(s['mpsim_goodput_bps'])} | "
                         f"{_f(s['mpsim_file_goodput_bps'])} | {_f(s['ratio_mpsim_real'], 1, '.3f')} | "
                         f"{_f(s['real_lost_packets'], 1, '.0f')} / {_f(s['mpsim_lost_packets'], 1, '.0f')} |")
        lines += ["", "| flow | path | real | mpsim matched | mpsim as the file | ratio mpsim/real | lost packets "
                  "real / mpsim | RTT mean real / mpsim (ms) | RTT min real (ms) |", "|---|---|---|---|---|---|---|---|---|"]
        for p in self.path_summary():
            lines.append(f"| {p['flow']} | {p['path']} | {_f(p['real_goodput_bps'])} | {_f(p['mpsim_goodput_bps'])} | "
                         f"{_f(p['mpsim_file_goodput_bps'])} | {_f(p['ratio_mpsim_real'], 1, '.3f')} | "
                         f"{_f(p['real_lost_packets'], 1, '.0f')} / {_f(p['mpsim_lost_packets'], 1, '.0f')} | "
                         f"{_f(p['real_rtt_mean_ms'], 1, '.1f')} / {_f(p['mpsim_rtt_mean_ms'], 1, '.1f')} | "
                         f"{_f(p['real_rtt_min_ms'], 1, '.1f')} |")
        return "\n".join(lines)

    def report(self) -> str:
        ch = ["| setting | file | used (per repeat) | why |", "|---|---|---|---|"]
        for c in self.changed:
            used = c["used"][0] if len(set(c["used"])) == 1 else ", ".join(c["used"])
            ch.append(f"| {c['setting']} | {c['file']} | {used} | {c['why']} |")
        errs = [f"repeat {e['repeat']}: {e['error']}" for s in self.flow_summary() for e in s["errors"]]
        return "\n".join([
            f"# {self.name}: Multipath QUIC ({self.info.get('peer')}) beside mpsim", "",
            f"Linux {self.info.get('kernel')}, cc {self.info.get('cc')} (noq's {self.info.get('peer_cc')}); "
            f"{len(self.runs)} repeat(s).", "",
            "Goodput in Mbit/s over [warmup, duration], median over the repeats; per path, the real side's "
            "goodput is split by the UDP bytes each path delivered. Ratio: mpsim matched / real. Lost packets: "
            "packets declared lost per path, noq's and mpsim's (a lost packet's data is sent again on whichever path the scheduler picks).", "",
            self.table(), "", "Settings the matched mpsim run took from the real run:", "",
            "\n".join(ch) if self.changed else "none", "",
            "Errors: " + ("; ".join(errs) if errs else "none"), ""])

    def save(self, out: str | os.PathLike[str]) -> list[Path]:
        outd = Path(out)
        outd.mkdir(parents=True, exist_ok=True)
        files = [outd / "summary.json", outd / "report.md"]
        files[0].write_text(json.dumps(self.to_json(), indent=2))
        files[1].write_text(self.report())
        return files


# -------------------------------------------------------------------------------------
# The entry point (from mpsim.kernel.compare)


def available() -> tuple[bool, str]:
    """Whether this machine can run the QUIC comparison, and if not, why."""
    from .testbed import available as kernel_available

    ok, why = kernel_available(multipath=False)
    if not ok:
        return ok, why
    peer = find_peer()
    if peer is None:
        return False, peer_missing()
    p = subprocess.run([str(peer), "--version"], capture_output=True, text=True)
    if p.returncode != 0:
        return False, f"the QUIC peer {peer} does not run: {p.stderr.strip()}"
    return True, ""


def compare(d: dict[str, Any], desc: dict[str, Any], origin: str, *, repeat: int = 1,
            out: str | os.PathLike[str] | None = None, progress: bool = False) -> QuicResult:
    """Runs the scenario's QUIC flow on the peer ``repeat`` times and in mpsim with the same
    seeds; see the module's text. Raises ScenarioError for what cannot be mapped (every
    feature in one message) and KernelUnavailable when the machine cannot run it."""
    from .testbed import KernelUnavailable

    desc = with_schedulers(d, desc)
    bad = unmappable(desc)
    if bad:
        raise ScenarioError(origin, "", "cannot run on the real QUIC peer: " + "; ".join(bad))
    ok, why = available()
    if not ok:
        raise KernelUnavailable(f"the QUIC side {why}")
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    f0 = desc["flows"][0]
    flows, paths, series, runs, used = [], [], [], [], []
    info: dict[str, Any] = {}
    restore = _trap_sigterm()
    try:
        for k in range(repeat):
            seed = desc["seed"] + k
            if progress:
                print(f"{desc['name']}: QUIC run {k + 1}/{repeat} ({desc['duration_s']:g} s)", file=sys.stderr, flush=True)
            with tempfile.TemporaryDirectory(prefix="mpsim-quic-") as wd:
                raw = run_once(d, desc, seed, Path(wd))
                if out is not None:
                    qd = Path(out) / "qlog" / f"repeat{k}"
                    qd.mkdir(parents=True, exist_ok=True)
                    for q in raw["qlog"]:
                        shutil.copy(q, qd / Path(q).name)
                    for side in ("client", "server"):
                        (qd / f"peer-{side}.json").write_text(json.dumps(raw[side]))
            info = raw["info"]
            rs = summarise(raw, desc)
            ov = mpsim_overrides(desc, {f0["name"]: rs["flows"][0]["established_s"]})
            used.append(ov)
            ms = _run_mpsim(d, ov, seed)
            mf = _run_mpsim(d, {}, seed, series=False)
            mlost = _mpsim_lost(d, ov, seed, Path(out) / "qlog" / f"repeat{k}" if out is not None else None)
            r, m, m2 = rs["flows"][0], ms["flows"][0], mf["flows"][0]
            flows.append({"repeat": k, "seed": seed, "flow": r["flow"], "real_goodput_bps": r["goodput_bps"],
                          "mpsim_goodput_bps": m["goodput_bps"], "mpsim_file_goodput_bps": m2["goodput_bps"],
                          "ratio_mpsim_real": m["goodput_bps"] / r["goodput_bps"] if r["goodput_bps"] else None,
                          "real_lost_packets": r["lost_packets"], "mpsim_lost_packets": sum(mlost),
                          "mpsim_retransmits": m["retransmits"],
                          "real_longest_silence_s": r["longest_silence_s"], "established_s": r["established_s"],
                          "multipath": r["multipath"], "error": r["error"]})
            mp = {x["path"]: x for x in ms["paths"]}
            fp = {x["path"]: x for x in mf["paths"]}
            for p in rs["paths"]:
                q = mp.get(p["path"], {})
                paths.append({"repeat": k, "seed": seed, "flow": p["flow"], "path": p["path"],
                              "real_goodput_bps": p["goodput_bps"], "mpsim_goodput_bps": q.get("goodput_bps"),
                              "mpsim_file_goodput_bps": fp.get(p["path"], {}).get("goodput_bps"),
                              "ratio_mpsim_real": q["goodput_bps"] / p["goodput_bps"] if q and p["goodput_bps"] else None,
                              "real_lost_packets": p["lost_packets"],
                              "mpsim_lost_packets": mlost[f0["paths"].index(p["path"])],
                              "mpsim_retransmits": q.get("retransmits"),
                              "real_congestion_events": p["congestion_events"],
                              "real_rtt_mean_ms": p["rtt_mean_ms"], "mpsim_rtt_mean_ms": q.get("rtt_mean_ms"),
                              "real_rtt_min_ms": p["rtt_min_ms"], "real_cwnd_mean_bytes": p["cwnd_mean_bytes"],
                              "real_udp_rx_bps": p["udp_rx_bps"]})
            msr = {s["time_s"]: s["delivered_bytes"] for s in ms["series"]}
            series += [{"repeat": k, "flow": s["flow"], "time_s": s["time_s"], "real_bytes": s["delivered_bytes"],
                        "mpsim_bytes": msr.get(s["time_s"])} for s in rs["series"]]
            runs.append({"repeat": k, "seed": seed, "lateness": rs["lateness"]})
    finally:
        _untrap_sigterm(restore)
    info |= {"cc": f0["cc"], "peer_cc": PEER_CCS[f0["cc"]]}
    res = QuicResult(desc["name"], flows, paths, series, runs, info, settings_changed(desc, used))
    if out is not None:
        res.save(out)
    return res


def _mpsim_lost(d: dict[str, Any], ov: Mapping[str, Any], seed: int, qlog: Path | None) -> list[int]:
    """Packets the matched mpsim run declared lost, per path (its summary's ``quic`` record),
    and, with *qlog*, its qlog trace copied there as ``mpsim-<flow>.sqlog``."""
    from ..api import run

    with tempfile.TemporaryDirectory(prefix="mpsim-qlog-") as td:
        res = run(d, overrides={**ov, "seed": seed}, progress=False, qlog=td)
        if qlog is not None:
            qlog.mkdir(parents=True, exist_ok=True)
            for q in Path(td).glob("*.sqlog"):
                shutil.copy(q, qlog / f"mpsim-{q.name}")
    rec = next(f for f in res.summary["flows"] if not f.get("background"))
    return [int(x) for x in rec["quic"]["packets_lost"]]
