#!/usr/bin/env python3
"""ns-3 side of the mpsim dumbbell benchmark.

Builds ``dumbbell.cc`` against the ns-3 headers and shared libraries shipped
in the ``ns3`` wheel from PyPI, runs it, and returns the JSON it prints.

Use as a module::

    from ns3_dumbbell import run_ns3
    res = run_ns3(n_flows=2, bottleneck_rate_bps=10_000_000, loss=0.01, duration_s=60)

or from the command line::

    python3 benches/ns3/ns3_dumbbell.py --flows 2 --rate 10000000 --loss 0.01 --duration 60
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "dumbbell.cc"
BUILD_DIR = HERE / "build"

# Version pinned for the benchmark. PyPI publishes it as a post-release
# (3.44.post0), so the specifier must be "==3.44.*": a plain "==3.44" does not
# match post-releases.
NS3_REQUIREMENT = "ns3==3.44.*"

# ns-3 modules the program links against.
NS3_MODULES = ["core", "network", "internet", "traffic-control", "point-to-point", "applications"]

# The wheel's libraries were built with these definitions (see the wheel's
# lib64/cmake/ns3/ns3Targets.cmake); use the same ones so the headers are
# seen exactly as the libraries saw them.
NS3_DEFINES = ["NS3_BUILD_PROFILE_RELEASE", "NS3_LOG_ENABLE", "NS3_ASSERT_ENABLE"]

CXXFLAGS = ["-std=c++20", "-O2"]


def ensure_ns3() -> str:
    """Make sure the ns3 wheel is installed; return its version string."""
    try:
        return importlib.metadata.version("ns3")
    except importlib.metadata.PackageNotFoundError:
        pass
    # --no-deps: only the C++ headers and libraries inside the wheel are used;
    # its Python-binding dependency (cppyy, several hundred MB) is not needed.
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", NS3_REQUIREMENT],
        check=True,
        stdout=sys.stderr,
    )
    importlib.invalidate_caches()
    return importlib.metadata.version("ns3")


def ns3_paths() -> tuple[Path, Path, str]:
    """Return (include dir, library dir, library name prefix e.g. 'ns3.44')."""
    root = Path(importlib.metadata.distribution("ns3").locate_file("ns3"))
    include = root / "include"
    for libdir in (root / "lib64", root / "lib"):
        cores = sorted(libdir.glob("libns3*-core.so")) if libdir.is_dir() else []
        if cores:
            # libns3.44-core.so -> "ns3.44"
            prefix = cores[0].name[len("lib") : -len("-core.so")]
            break
    else:
        raise RuntimeError(f"no libns3*-core.so found under {root}")
    if not (include / "ns3" / "core-module.h").is_file():
        raise RuntimeError(f"ns-3 headers not found under {include}")
    return include, libdir, prefix


def build(force: bool = False) -> Path:
    """Compile dumbbell.cc (cached under build/) and return the binary path."""
    version = ensure_ns3()
    include, libdir, prefix = ns3_paths()
    cxx = os.environ.get("CXX", "g++")

    compile_flags = (
        CXXFLAGS
        + [f"-D{d}" for d in NS3_DEFINES]
        + [f'-DNS3_WHEEL_VERSION="{version}"', f"-I{include}"]
    )
    # The rpath points at the wheel's library directory, so the binary runs
    # without LD_LIBRARY_PATH. The wheel's own libraries carry $ORIGIN
    # runpaths for their bundled dependencies (gsl, sqlite, libxml2).
    link_flags = [f"-L{libdir}", f"-Wl,-rpath,{libdir}"] + [f"-l{prefix}-{m}" for m in NS3_MODULES]

    # Cache key: source text, flags, compiler and ns-3 install location.
    key = hashlib.sha256()
    key.update(SOURCE.read_bytes())
    key.update(repr((cxx, compile_flags, link_flags)).encode())
    key.update(subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.encode())
    binary = BUILD_DIR / f"dumbbell-{key.hexdigest()[:16]}"
    if binary.is_file() and not force:
        return binary

    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=BUILD_DIR, prefix=".dumbbell-tmp-")
    os.close(fd)
    cmd = [cxx, *compile_flags, str(SOURCE), "-o", tmp, *link_flags]
    try:
        subprocess.run(cmd, check=True, stdout=sys.stderr)
        os.replace(tmp, binary)  # atomic: concurrent builders never see half a file
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return binary


def run_ns3(
    n_flows: int,
    bottleneck_rate_bps: int,
    loss: float,
    duration_s: float,
    seed: int = 1,
    min_rto_s: float = 0.2,
    stagger_ms: float = 0.0,
    qdisc: str = "none",
    queue_pkts: int = 100,
    derandomize: bool = True,
    ecn: bool = False,
) -> dict:
    """Run the dumbbell scenario in ns-3 and return its results.

    The result holds ``flows`` (one dict per flow with ``goodput_bps`` in
    bit/s, plus ``rx_bytes``, ``retransmissions``, ``fast_recoveries``, ``cwr_entries``,
    ``timeouts``), ``wall_s`` (wall time of Simulator::Run only, measured by
    the C++ program), ``process_wall_s`` (wall time of the whole simulator
    process, measured here), ``delivered_packets`` (received bytes / 1460,
    summed over flows), ``ns3_version`` and drop/queue counters.

    ``qdisc`` ("codel", "fq_codel", "red", "pie") installs that queue disc on
    the bottleneck (limit ``queue_pkts``, over a 1-packet device queue) and
    adds a ``qdisc`` entry with its drops by reason and queueing delays;
    "none" keeps the drop-tail device queue of ``queue_pkts`` packets.
    ``derandomize`` is PIE's ``UseDerandomization``. ``ecn`` turns on RFC 3168
    ECN in every TCP socket (``TcpSocketBase::UseEcn`` "On") and in the queue
    disc (its ``UseEcn``); the ``qdisc`` entry counts marks by reason.
    """
    binary = build()
    cmd = [
        str(binary),
        f"--flows={int(n_flows)}",
        f"--rate={int(bottleneck_rate_bps)}",
        f"--loss={float(loss)!r}",
        f"--duration={float(duration_s)!r}",
        f"--seed={int(seed)}",
        f"--minRto={float(min_rto_s)!r}",
        f"--staggerMs={float(stagger_ms)!r}",
        f"--qdisc={qdisc}",
        f"--queue={int(queue_pkts)}",
        f"--derandomize={'true' if derandomize else 'false'}",
        f"--ecn={'true' if ecn else 'false'}",
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    process_wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(
            f"ns-3 run failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stderr}{proc.stdout}"
        )
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("{")]
    if not lines:
        raise RuntimeError(f"no JSON in ns-3 output:\n{proc.stdout}\n{proc.stderr}")
    result = json.loads(lines[-1])
    result["process_wall_s"] = process_wall
    return result


def _rate(text: str) -> int:
    """Parse a rate in bit/s; accepts 10000000, 1e7, 10M, 100Mbps."""
    t = text.strip().lower().removesuffix("bps")
    mult = {"k": 1e3, "m": 1e6, "g": 1e9}.get(t[-1:], 1)
    if mult != 1:
        t = t[:-1]
    return int(float(t) * mult)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--flows", type=int, default=2, help="number of TCP flows (default 2)")
    p.add_argument("--rate", type=_rate, default=10_000_000, help="bottleneck rate, bit/s (default 10M)")
    p.add_argument("--loss", type=float, default=0.0, help="random loss rate on the bottleneck (default 0)")
    p.add_argument("--duration", type=float, default=60.0, help="simulated seconds (default 60)")
    p.add_argument("--seed", type=int, default=1, help="RNG seed (default 1)")
    p.add_argument("--min-rto", type=float, default=0.2, help="TCP minimum RTO, seconds (default 0.2)")
    p.add_argument("--stagger-ms", type=float, default=0.0, help="start offset between flows, ms (default 0)")
    p.add_argument(
        "--qdisc",
        default="none",
        choices=["none", "codel", "fq_codel", "red", "pie"],
        help="bottleneck queue disc (default none: drop-tail device queue)",
    )
    p.add_argument("--queue", type=int, default=100, help="bottleneck buffer, packets (default 100)")
    p.add_argument(
        "--no-derandomize",
        dest="derandomize",
        action="store_false",
        help="PIE: random drops (UseDerandomization false; default true, as mpsim)",
    )
    p.add_argument("--ecn", action="store_true", help="ECN in TCP and the queue disc (default off)")
    p.add_argument("--rebuild", action="store_true", help="force recompilation of dumbbell.cc")
    p.add_argument("--build-only", action="store_true", help="compile and print the binary path")
    args = p.parse_args(argv)

    if args.rebuild or args.build_only:
        binary = build(force=args.rebuild)
        if args.build_only:
            print(binary)
            return 0
    res = run_ns3(
        args.flows,
        args.rate,
        args.loss,
        args.duration,
        args.seed,
        args.min_rto,
        args.stagger_ms,
        args.qdisc,
        args.queue,
        args.derandomize,
        args.ecn,
    )
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
