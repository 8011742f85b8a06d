"""The ``mpsim`` command: run, sweep, check, list and reproduce.

Every user error (unreadable file, bad key or value, bad option) is printed as one line
``error: ...`` on stderr with exit status 2; Ctrl-C exits with status 130; a sweep some of
whose runs failed exits with status 1.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, NoReturn, Sequence

from ._core import PluginError
from .errors import ScenarioError
from .scenario import parse_value

__all__ = ["main", "build_parser"]

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_RUNS_FAILED = 1  # a sweep finished, but some of its runs raised


class UsageError(Exception):
    """A mistake on the command line or in the files it names; printed as one line."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that reports mistakes as a one-line :class:`UsageError`."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=30, width=min(100, shutil.get_terminal_size().columns))


# -------------------------------------------------------------------------------------
# The parser

_MAIN_DESCRIPTION = """\
mpsim simulates TCP and multipath transport packet by packet over links described in a
scenario file (TOML): links with a rate, delay, queue and loss; paths made of links; flows
that send over a path with a congestion controller.
"""

# The examples name scenarios shipped in the repository (run from its top folder).
_EX = "scenarios/validation/dumbbell_2x10m_loss1.toml"

_MAIN_EPILOG = f"""\
commands: run, sweep, query, check, list, reproduce, kernel, trace-gen, trace-summary

examples:
  mpsim run {_EX}
  mpsim run {_EX} --set link.bottleneck.loss=2% --seed 3 --out results/
  mpsim sweep {_EX} --grid link.bottleneck.loss=0.5%,1%,2% --seeds 5 --out loss.parquet
  mpsim check scenarios/*/*.toml
  mpsim list cc
  mpsim reproduce --list
  mpsim kernel scenarios/kernel/mptcp_2x10m.toml --repeat 3 --out kernel/   (root: the same scenario on Linux)
  mpsim trace-gen cell.down --duration 60s --state 10Mbps:2s --state 1Mbps:500ms --seed 3

Run 'mpsim COMMAND --help' for the options of a command.
"""

_KEY_HELP = """\
override keys:
  A KEY is a dotted path into the scenario: 'duration', 'seed', 'tcp.min_rto',
  'metrics.interval'; elements of [[link]], [[path]] and [[flow]] are picked by name or by
  0-based index ('link.bottleneck.loss', 'link.1.loss'), and '*' picks all ('flow.*.cc').
  A VALUE is read as a TOML value when it is one (3, true, "2%", [1, 2],
  { model = "gilbert", mean = "1%", burst = 4 }); otherwise it is taken as text, so
  2% and 20ms need no quotes.
"""

_RUN_EPILOG = (
    _KEY_HELP
    + """
memory:
  Before it starts, a run's memory is estimated from the scenario (flows, buffers, duration
  times rates, series interval, trace). Above half of the available memory a warning is
  printed; above all of it the run is refused, unless --no-memory-check is given. The
  events it will process are estimated too (a source ticking far faster than its path
  carries can take hours): above 1e9 a warning, above 2e10 (MPSIM_EVENT_LIMIT) a refusal
  naming the flow, link or sampling interval that costs the most, unless --no-event-check.
  A long run with a short metrics.interval, or with --trace, keeps its series and trace in
  memory until the end: --stream (with --out DIR) writes them to DIR as Parquet files while
  the run goes on, in row groups of 65,536 rows, so that they take a bounded amount.

examples:
  mpsim run {_EX}
  mpsim run {_EX} --set link.bottleneck.loss=2% --set flow.*.tcp.min_rto=1s
  mpsim run {_EX} --seed 7 --duration 10s --trace --out results/ --format csv,parquet
  mpsim run {_EX} --json --quiet > summary.json
  mpsim run {_EX} --duration 600s --trace --out long/ --stream
""".format(_EX=_EX)
)

_SWEEP_EPILOG = (
    _KEY_HELP
    + """
  In --grid, values are separated by commas (commas inside [...], {{...}} or quotes do not
  split).

output:
  The results have one row per run and flow: a column per grid key, seed, run, flow,
  the flow's results (goodput_bps, throughput_bps, retransmits, rtt_mean_ms, ...),
  jain_index and wall_s. The table printed at the end gives the mean goodput per grid point
  and flow with its 95% confidence interval over seeds.

  --out FOLDER (a name without suffix) writes a Parquet dataset as runs finish. Running the
  same sweep into the same folder again skips the runs already stored (--resume, the
  default), so an interrupted sweep picks up where it stopped; a run that raises is recorded
  in the folder's 'failed' table and the sweep goes on (exit status 1 at the end). Query
  the folder with 'mpsim query FOLDER "SQL"' or mpsim.load_sweep(FOLDER).
  --out FILE.parquet or FILE.csv writes one file when the sweep is over.

examples:
  mpsim sweep {_EX} --grid link.bottleneck.loss=0.5%,1%,2% --seeds 10 --out loss.parquet
  mpsim sweep {_EX} --grid link.bottleneck.rate=5Mbps,10Mbps \\
        --grid link.bottleneck.queue=20pkt,100pkt --seeds 5 --processes 4 --out grid.csv
  mpsim sweep {_EX} --grid link.bottleneck.loss=1%,2% --dask tcp://scheduler:8786 --out d.parquet
  mpsim sweep {_EX} --grid link.bottleneck.loss=0.5%,1%,2% --seeds 100 --dask local:2 --out study
  mpsim query study 'SELECT "link.bottleneck.loss", avg(goodput_bps) FROM flows GROUP BY ALL'
""".format(_EX=_EX)
)

_QUERY_EPILOG = """\
A sweep folder (mpsim sweep --out FOLDER) is read with DuckDB. Its tables are:
  flows            one row per run and flow (grid columns, seed, run, flow, goodput_bps, ...)
  failed           one row per run that raised (grid columns, seed, run, error_type, error)
  flow_series, subflow_series, link_series    time series, for a sweep run with --series
Grid columns have dots in their names: quote them ("link.bottleneck.loss").
Without SQL, the tables, their row counts and columns are listed.

examples:
  mpsim query study
  mpsim query study 'SELECT "link.bottleneck.loss", flow, avg(goodput_bps) FROM flows GROUP BY ALL ORDER BY ALL'
  mpsim query study 'SELECT error, count(*) FROM failed GROUP BY error' --csv > errors.csv
"""

_CHECK_EPILOG = """\
Each file is read and validated as 'mpsim run' would, without simulating. A valid file
prints 'ok: FILE: N links, M paths, K flows, DURATION s'; a problem prints
'error: FILE: KEY: what is wrong' on stderr. The exit status is 2 if any file is bad.

With --estimate it also prints the estimated events and peak memory of a run; a run that
would need more than half of the available memory gets a warning either way. With --stream
the estimate is that of 'mpsim run --stream' (series and trace written to disk as they grow).

examples:
  mpsim check {_EX}
  mpsim check --estimate scenarios/*/*.toml
""".format(_EX=_EX)

_LIST_EPILOG = """\
examples:
  mpsim list          all components
  mpsim list cc       congestion controllers, for a flow's 'cc' key
  mpsim list loss     loss models, for a link's 'loss' key
  mpsim list aqm      queue disciplines, for a link's 'aqm' key
  mpsim list app      applications, for a flow's 'app' key
"""

_KIND_TITLES = {
    "cc": "congestion controllers (flow key 'cc')",
    "scheduler": "multipath schedulers (flow key 'scheduler', with 'paths')",
    "receiver": "receiver logic (run by the scheduler of the same name; flow key 'receiver' takes one written in Python)",
    "sctp_cc": "SCTP congestion controllers (flow key 'cc' with transport = \"sctp\")",
    "sctp_scheduler": "SCTP CMT schedulers (flow key 'scheduler', with cmt = true; the first is the default)",
    "rtx_policy": "SCTP CMT retransmission policies (key 'sctp.rtx_policy', with cmt = true)",
    "loss": "loss models (link keys 'loss' and 'reverse_loss')",
    "aqm": "queue disciplines (link keys 'aqm' and 'reverse_aqm'; drop-tail without)",
    "app": "applications (flow key 'app')",
    "topology": "datacenter topologies (key 'kind' of [topology])",
    "matrix": "traffic matrices (key 'matrix' of [traffic])",
    "scenario": "scenario files shipped with mpsim (give the path to run, check or sweep)",
}


def _wrap(text: str) -> str:
    return textwrap.fill(text, width=88)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``mpsim`` command."""
    from . import __version__

    p = _Parser(
        prog="mpsim",
        description=_MAIN_DESCRIPTION,
        epilog=_MAIN_EPILOG,
        formatter_class=_Formatter,
    )
    p.add_argument("--version", action="version", version=f"mpsim {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    # run
    r = sub.add_parser(
        "run",
        help="simulate one scenario and print per-flow results",
        description=_wrap("Simulate one scenario and print a table of per-flow results (goodput, "
        "retransmissions, RTT, delay, jitter), per-link drops and utilisation, Jain's "
        "fairness index and the simulator's speed. Values in the file can be changed for "
        "this run with --set, --seed and --duration; --out saves all results to a directory."),
        epilog=_RUN_EPILOG,
        formatter_class=_Formatter,
    )
    r.add_argument("scenario", metavar="SCENARIO", help="the scenario file (.toml)")
    _add_set(r)
    r.add_argument("--seed", type=int, metavar="N", help="random seed (same seed, same result); overrides 'seed'")
    r.add_argument("--duration", metavar="D", help="simulated time, e.g. 10s or 500ms; overrides 'duration'")
    r.add_argument("--trace", action="store_true", help="also record a per-packet trace (saved as trace.csv with --out)")
    r.add_argument("--pcap", metavar="DIR", help="record one packet capture per flow (pcap, readable by "
                   "Wireshark and tshark) and write them into DIR as FLOW.pcap")
    r.add_argument("--qlog", metavar="DIR", help="write a qlog trace (JSON-SEQ) of each QUIC flow into DIR "
                   "as FLOW.sqlog")
    r.add_argument("--out", metavar="DIR", help="save summary.json, scenario.json and tables (flows, links, "
                   "flow_series, link_series, trace) into DIR")
    r.add_argument("--format", metavar="FMTS", default=None,
                   help="comma-separated formats for --out: json, csv, parquet (default: json,csv; "
                   "json,parquet with --stream)")
    r.add_argument("--stream", action="store_true",
                   help="with --out DIR (new or empty): write the series and the trace to DIR/TABLE.parquet "
                   "while the run goes on instead of keeping them in memory")
    r.add_argument("--json", action="store_true", help="print the summary as JSON instead of the table")
    r.add_argument("--plot", metavar="FILE.png", help="draw goodput, cwnd and queues over time into FILE.png (and .svg)")
    r.add_argument("--no-memory-check", action="store_true",
                   help="run even if the estimated memory exceeds what the machine has available")
    r.add_argument("--no-event-check", action="store_true",
                   help="run even if the estimated events exceed the limit (MPSIM_EVENT_LIMIT, default 2e10)")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no table (errors still shown)")

    # sweep
    s = sub.add_parser(
        "sweep",
        help="simulate a scenario over a grid of parameter values and seeds",
        description=_wrap("Simulate a scenario for every combination of the --grid values and every "
        "seed, in parallel, and save one row per run and flow to --out. Everything is "
        "validated before the first run, so a bad value fails at once."),
        epilog=_SWEEP_EPILOG,
        formatter_class=_Formatter,
    )
    s.add_argument("scenario", metavar="SCENARIO", help="the scenario file (.toml)")
    s.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="a key and the values to try; repeat for more keys (all combinations are run)")
    _add_set(s, what="for every run")
    s.add_argument("--seeds", type=int, default=1, metavar="N", help="run each grid point with seeds 1..N (default: 1)")
    s.add_argument("--processes", type=int, default=None, metavar="P",
                   help=f"parallel local processes (default: the number of CPUs, {os.cpu_count()})")
    s.add_argument("--dask", metavar="ADDRESS",
                   help="run on a Dask cluster at this scheduler address (e.g. tcp://host:8786), or on a "
                   "LocalCluster of N worker processes with local:N, instead of local processes; "
                   "needs 'pip install mpsim[dask]'")
    s.add_argument("--out", required=True, metavar="FOLDER|FILE",
                   help="a folder (no suffix): a Parquet dataset written as runs finish, resumable; "
                   "or a .parquet or .csv file written at the end (required)")
    again = s.add_mutually_exclusive_group()
    again.add_argument("--resume", dest="fresh", action="store_false", default=False,
                       help="with --out FOLDER: skip the runs already stored there (the default)")
    again.add_argument("--fresh", dest="fresh", action="store_true",
                       help="with --out FOLDER: delete what the folder holds and run everything")
    s.add_argument("--series", action="store_true",
                   help="with --out FOLDER: also keep each run's time series (flow_series, ... tables)")
    s.add_argument("--run-timeout", metavar="T", default=None,
                   help="stop any run after T of wall time (seconds, or with a unit: 90s, 10min) and record it "
                   "as failed (RunTimeout); the sweep goes on")
    s.add_argument("--no-validate", dest="validate", action="store_false",
                   help="do not check every grid point first: a bad point is recorded as a failed run instead "
                   "of stopping the sweep before it starts")
    s.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no table")

    # check
    c = sub.add_parser(
        "check",
        help="validate scenario files without running them",
        description=_wrap("Validate scenario files: read each one and check every key and value, "
                          "without simulating."),
        epilog=_CHECK_EPILOG,
        formatter_class=_Formatter,
    )
    c.add_argument("scenarios", nargs="+", metavar="SCENARIO", help="scenario files (.toml)")
    c.add_argument("--estimate", action="store_true", help="also print the estimated events and memory of each run")
    c.add_argument("--stream", action="store_true",
                   help="estimate as for 'mpsim run --stream': the series and the trace streamed to disk")
    _add_set(c, what="before checking")

    # list
    ls = sub.add_parser(
        "list",
        help="show the available congestion controllers, loss models and applications",
        description=_wrap("Show the built-in components a scenario can name, with one-line descriptions."),
        epilog=_LIST_EPILOG,
        formatter_class=_Formatter,
    )
    ls.add_argument("kind", nargs="?", choices=list(_KIND_TITLES), metavar="KIND",
                    help="only this kind: cc, scheduler, loss, app or scenario (default: all)")

    # query
    q = sub.add_parser(
        "query",
        help="run SQL over a sweep folder (DuckDB)",
        description=_wrap("Run an SQL query over the results a sweep wrote to a folder and print "
                          "the result as a table (or CSV)."),
        epilog=_QUERY_EPILOG,
        formatter_class=_Formatter,
    )
    q.add_argument("folder", metavar="FOLDER", help="a folder written by 'mpsim sweep --out FOLDER'")
    q.add_argument("sql", metavar="SQL", nargs="?", help="the query; without it, the tables are listed")
    q.add_argument("--csv", action="store_true", help="print CSV instead of a table")

    rp = sub.add_parser(
        "reproduce",
        help="reproduce a seed paper's experiments: figures, data and a report",
        description="Run a seed paper's experiments with several seeds and write its figures (PNG, SVG), "
        "the data (CSV) and report.md, which puts each claim of the paper beside the measured figure.",
        epilog="examples:\n  mpsim reproduce buffer-size\n  mpsim reproduce all --seeds 3 --out results/",
        formatter_class=_Formatter,
    )
    rp.add_argument("paper", metavar="PAPER", help="a paper's name (see 'mpsim reproduce --list') or 'all'", nargs="?")
    rp.add_argument("--list", action="store_true", help="list the papers that can be reproduced")
    rp.add_argument("--seeds", type=int, default=None, metavar="N", help="seeds per case (default: each paper's own, shown by --list; the committed reports use it)")
    rp.add_argument("--out", default="results", metavar="DIR", help="output folder; each paper gets a subfolder (default: results)")
    rp.add_argument("--quick", action="store_true", help="shorter runs only, for a first look")
    rp.add_argument("--processes", type=int, default=None, metavar="P", help="worker processes (default: all cores)")

    from .kernel import testbed
    testbed.add_parser(sub, _Formatter, _add_set)

    tg = sub.add_parser(
        "trace-gen",
        help="write a synthetic link capacity trace (Mahimahi format)",
        description=_wrap("Write a link capacity trace in Mahimahi's format (one line per 1500-byte "
                          "delivery opportunity, in whole milliseconds), for a link's trace or "
                          "reverse_trace key: a constant rate (--rate) or a rate that jumps between "
                          "states (--state RATE:HOLD, repeated), each held for an exponentially "
                          "distributed time of mean HOLD, then left for one of the others. The same "
                          "arguments and --seed write the same file. Prints the trace's summary."),
        epilog="examples:\n  mpsim trace-gen const.down --rate 12Mbps --duration 10s\n"
               "  mpsim trace-gen cell.down --duration 120s --state 20Mbps:4s --state 5Mbps:2s --state 0:300ms --seed 7",
        formatter_class=_Formatter,
    )
    tg.add_argument("out", metavar="FILE", help="the trace file to write")
    tg.add_argument("--duration", default="60s", metavar="D", help="length of the trace, e.g. 60s (default 60s)")
    tg.add_argument("--rate", metavar="RATE", help="a constant rate, e.g. 12Mbps")
    tg.add_argument("--state", action="append", metavar="RATE:HOLD",
                    help="a state of the Markov-modulated rate: its rate and mean holding time, e.g. 10Mbps:2s")
    tg.add_argument("--seed", type=int, default=1, metavar="N", help="random seed of the holding times and jumps (default 1)")

    ts = sub.add_parser(
        "trace-summary",
        help="opportunities, length and mean capacity of link capacity traces",
        description=_wrap("Print, for each Mahimahi trace, its delivery opportunities, its length "
                          "(the last timestamp) and its mean capacity, after checking it as a "
                          "scenario's trace is checked; --plot draws their capacity over time."),
        formatter_class=_Formatter,
    )
    ts.add_argument("traces", metavar="FILE", nargs="+", help="trace files")
    ts.add_argument("--plot", metavar="FILE.png", help="draw each trace's capacity over time into FILE.png")
    ts.add_argument("--bin", default="1s", metavar="D", help="the plot's time bin (default 1s)")
    return p



def _add_set(p: argparse.ArgumentParser, what: str = "for this run") -> None:
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="set",
                   help=f"change a scenario value {what}, e.g. --set link.bottleneck.loss=2%% (repeatable)")


# -------------------------------------------------------------------------------------
# Helpers


class ScenarioFile(os.PathLike):  # type: ignore[type-arg]
    """A command-line SCENARIO: always a file name (never TOML text), reported as typed."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __fspath__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"ScenarioFile({self.name!r})"


def _out(text: str = "") -> None:
    print(text, file=sys.stdout)


def _err(text: str) -> None:
    print(text.replace("\n", " "), file=sys.stderr)


def _split_assignment(text: str, option: str, form: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UsageError(f"{option} expects {form}, got '{text}'")
    return key, value.strip()


def parse_sets(items: Iterable[str], option: str = "--set") -> dict[str, Any]:
    """``["a.b=1", "c=2%"]`` -> ``{"a.b": 1, "c": "2%"}`` (values as in :func:`parse_value`)."""
    out: dict[str, Any] = {}
    for item in items:
        key, value = _split_assignment(item, option, "KEY=VALUE")
        out[key] = parse_value(value)
    return out


def split_values(text: str) -> list[str]:
    """Splits ``"1%,2%,[1, 2]"`` at top-level commas (not inside brackets, braces or quotes)."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    quote: str | None = None
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur).strip())
    return parts


def parse_grid(items: Iterable[str]) -> dict[str, list[Any]]:
    """``["link.bottleneck.loss=1%,2%"]`` -> ``{"link.bottleneck.loss": ["1%", "2%"]}``."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        key, values = _split_assignment(item, "--grid", "KEY=V1,V2,...")
        parts = split_values(values)
        if any(not v for v in parts):
            raise UsageError(f"--grid {key}: empty value in '{values}'")
        if key in grid:
            raise UsageError(f"--grid {key} is given twice; list all its values in one --grid")
        grid[key] = [parse_value(v) for v in parts]
    return grid


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> list[str]:
    """Plain-text table; the first *left* columns are left-aligned, the rest right-aligned."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [fmt(headers), fmt(["-" * w for w in widths]), *(fmt(r) for r in rows)]


def _num(v: Any, digits: int = 1, scale: float = 1.0) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v / scale:,.{digits}f}"


def _int(v: Any) -> str:
    return "-" if v is None else f"{int(v):,}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _rate(n: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f}"


# -------------------------------------------------------------------------------------
# Commands


def _duration_error(e: ScenarioError, duration: str | None) -> ScenarioError:
    """*e* itself, unless it is the scenario's warmup check failing on a duration given with
    --duration: then the option is what is wrong, and the message names it with both values."""
    import re

    if duration is None or e.key != "metrics.warmup":
        return e
    m = re.search(r"warmup ([0-9.]+)([a-z]+) against duration", e.message)
    if m is None:
        return e
    warmup = (m.group(1).rstrip("0").rstrip(".") if "." in m.group(1) else m.group(1)) + m.group(2)
    return ScenarioError(e.origin, "", f"--duration {duration} is not longer than metrics.warmup = {warmup}")


def cmd_run(args: argparse.Namespace) -> int:
    from .api import parse_formats, run

    overrides = parse_sets(args.set)
    if args.seed is not None:
        overrides["seed"] = args.seed
    if args.duration is not None:
        overrides["duration"] = parse_value(args.duration)
    if args.trace:
        overrides["metrics.trace"] = True
    formats: list[str] | None = None
    if args.format is not None:
        if args.out is None:
            raise UsageError("--format only applies with --out DIR")
        try:
            formats = parse_formats(args.format)
        except ValueError as e:
            raise UsageError(f"--format: {e}") from None
    if args.stream and args.out is None:
        raise UsageError("--stream needs --out DIR: the folder the series and the trace are written to")

    # fail before running, not after
    if args.stream:
        from .stream import StreamError, prepare_dir

        try:
            prepare_dir(args.out)
        except StreamError as e:
            raise UsageError(f"--out {e}") from None
    elif args.out is not None:
        Path(args.out).mkdir(parents=True, exist_ok=True)
    import warnings

    from .api import CaptureLimitWarning
    from .resources import MemoryWarning, SlowRunWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MemoryWarning)
        warnings.simplefilter("always", SlowRunWarning)
        warnings.simplefilter("always", CaptureLimitWarning)
        try:
            res = run(ScenarioFile(args.scenario), overrides=overrides, progress=False if args.quiet else None,
                      memory_check=not args.no_memory_check, event_check=not args.no_event_check, pcap=args.pcap, stream=args.out if args.stream else None, qlog=args.qlog)
        except ScenarioError as e:
            raise _duration_error(e, args.duration) from None
    for w in caught:
        _err(f"warning: {w.message}")

    if args.json:
        _out(res.to_json())
    elif not args.quiet:
        _print_run(res)
    if args.out is not None:
        paths = res.save(args.out, formats or (("json", "parquet") if args.stream else ("json", "csv")))
        if not args.quiet:
            _err(f"wrote {_plural(len(paths), 'file')} to {args.out}")
    if args.pcap is not None and not args.quiet:
        _err(f"wrote {_plural(len(res.pcap_files), 'capture')} to {args.pcap}")
    if args.qlog is not None and not args.quiet:
        _err(f"wrote {_plural(len(res.qlog_files), 'qlog trace')} to {args.qlog}")
    if args.plot is not None:
        from .plots import plot_run

        try:
            written = plot_run(res, args.plot)
        except (OSError, ValueError) as e:
            raise UsageError(f"--plot {args.plot}: {e}") from None
        if not args.quiet:
            _err(f"wrote {', '.join(str(p) for p in written)}")
    return EXIT_OK


#: Flows the run table prints at most; the rest are in the tables (--out, or Result.flows).
PRINT_FLOWS = 50


def _print_run(res: Any) -> None:
    s = res.summary
    total = len(s.get("flows", []))
    if total > PRINT_FLOWS:
        s = {**s, "flows": s["flows"][:PRINT_FLOWS]}
    warm = s.get("warmup_s") or 0
    _out(
        f"scenario {s.get('scenario')!r} ({res.origin}): {s.get('duration_s'):g} s simulated, "
        f"seed {s.get('seed')}" + (f", measured after a {warm:g} s warm-up" if warm else "")
    )
    _out()
    headers = ["flow", "path", "cc", "goodput Mbit/s", "throughput Mbit/s", "retx", "timeouts",
               "RTT ms", "delay ms", "jitter ms"]
    rows = [
        [
            str(f.get("flow")), str(f.get("path")), str(f.get("cc")),
            _num(f.get("goodput_bps"), 3, 1e6), _num(f.get("throughput_bps"), 3, 1e6),
            _int(f.get("retransmits")), _int(f.get("timeouts")),
            _num(f.get("rtt_mean_ms"), 1), _num(f.get("delay_mean_ms"), 1), _num(f.get("jitter_ms"), 2),
        ]
        for f in s.get("flows", [])
    ]
    for line in _table(headers, rows, left=3):
        _out(line)
    multi = [f for f in s.get("flows", []) if f.get("scheduler")]
    if multi:
        _out()
        headers = ["flow", "scheduler", "rcv-window blocked s", "max O3 offset KB", "reinjections", "penalties",
                   "max rcv buffer KB"]
        rows = [
            [str(f.get("flow")), str(f.get("scheduler")), _num(f.get("rcv_blocked_s"), 2),
             _num(f.get("o3_max_bytes"), 1, 1e3), _int(f.get("reinjections")), _int(f.get("penalties")),
             _num(f.get("max_receive_buffer_bytes"), 1, 1e3)]
            for f in multi
        ]
        for line in _table(headers, rows, left=2):
            _out(line)
        _out()
        headers = ["flow", "subflow path", "backup", "goodput Mbit/s", "retx", "timeouts", "RTT ms", "final cwnd KB"]
        rows = [
            [str(f.get("flow")), str(sf.get("path")), "yes" if sf.get("backup") else "", _num(sf.get("goodput_bps"), 3, 1e6),
             _int(sf.get("retransmits")), _int(sf.get("timeouts")), _num(sf.get("rtt_mean_ms"), 1),
             _num(sf.get("cwnd_final_bytes"), 1, 1e3)]
            for f in multi for sf in f.get("subflows", [])
        ]
        for line in _table(headers, rows, left=3):
            _out(line)
    if total > PRINT_FLOWS:
        _out()
        _out(f"(the first {PRINT_FLOWS} of {total:,} flows; all of them in flows.csv with --out DIR, or --json)")
    media = [f for f in s.get("flows", []) if f.get("classes")]
    if media:
        _out()
        headers = ["flow", "frame type", "priority", "frames", "delivered", "late", "refused", "queued", "delay ms", "p95 ms",
                   "jitter ms"]
        rows = [
            [str(f.get("flow")), str(c.get("class")), str(c.get("priority")), _int(c.get("frames")), _int(c.get("delivered")),
             _int(c.get("late")), _int(c.get("refused")), _int(c.get("queued")), _num(c.get("delay_mean_ms"), 1),
             _num(c.get("delay_p95_ms"), 1), _num(c.get("jitter_ms"), 2)]
            for f in media for c in f.get("classes", [])
        ]
        for line in _table(headers, rows, left=3):
            _out(line)
        for f in media:
            _out(f"PSNR from throughput ({f.get('flow')})  {_num(f.get('psnr_db'), 1)} dB")
    links = s.get("links", [])
    if isinstance(res.scenario.get("topology"), dict):
        # a topology has too many links to list: the tiers instead (mpsim.datacenter.tiers)
        from .datacenter import tier_lines

        _out()
        for line in tier_lines(res):
            _out(line)
    elif links:
        _out()
        headers = ["link", "direction", "utilization %", "queue drops", "loss drops", "down drops"]
        rows = [
            [str(l.get("link")), str(l.get("direction")), _num((l.get("utilization") or 0) * 100, 1),
             _int(l.get("queue_drops")), _int(l.get("loss_drops")), _int(l.get("down_drops"))]
            for l in links
        ]
        if any(l.get("aqm") for l in links):
            # links with a queue discipline: what it dropped and the queueing delay it kept
            headers += ["aqm", "AQM drops", "AQM marks", "queue delay ms (mean / p95)"]
            for row, l in zip(rows, links):
                managed = bool(l.get("aqm"))
                row += [str(l.get("aqm") or "drop-tail"), _int(l.get("aqm_drops")) if managed else "-",
                        _int(l.get("aqm_marks")) if managed else "-",
                        f"{_num(l.get('queue_delay_mean_ms'), 1)} / {_num(l.get('queue_delay_p95_ms'), 1)}" if managed else "-"]
        for line in _table(headers, rows, left=2):
            _out(line)
    _out()
    wall = res.run_info.get("wall_s") or 0.0
    pkts = s.get("packets_delivered") or 0
    speed = f"{_rate(pkts / wall)} packets per wall-clock second" if wall > 0 else "-"
    _out(f"Jain's fairness index  {_num(s.get('jain_index'), 3)}")
    _out(f"events                 {_int(s.get('events'))}")
    _out(f"wall time              {wall:.3f} s")
    _out(f"simulation speed       {speed} ({_int(pkts)} packets delivered)")


def cmd_reproduce(args: argparse.Namespace) -> int:
    from . import reproduce

    if args.list or not args.paper:
        for name, mod in reproduce.PAPERS.items():
            _out(f"  {name:14s}{mod.TITLE} ({mod.DEFAULT_SEEDS} seeds by default)")
        if not args.list:
            raise UsageError("name a paper to reproduce (or 'all'); the list is above")
        return EXIT_OK
    if args.paper != "all" and args.paper not in reproduce.PAPERS:
        raise UsageError(f"unknown paper {args.paper!r}; expected one of: {', '.join(reproduce.PAPERS)} or all")
    if args.seeds is not None and args.seeds < 1:
        raise UsageError("--seeds must be at least 1")
    for report in reproduce.run(args.paper, args.out, seeds=args.seeds, quick=args.quick, processes=args.processes):
        _out(f"wrote {report} (figures and data beside it)")
    return EXIT_OK


def _seconds(text: str, option: str) -> float:
    """A positive duration in seconds from "90", "90s", "1.5min", "2h" or "500ms"."""
    import re

    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ms|s|min|h)?\s*", text)
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"{option} expects a positive duration like 90s, 10min or 500ms, got {text!r}")
    return float(m.group(1)) * {"ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0, None: 1.0}[m.group(2)]


def cmd_sweep(args: argparse.Namespace) -> int:
    from .api import aggregate, sweep
    from .sweeping.engine import _out_kind
    from .sweeping.store import SweepFolderError

    grid = parse_grid(args.grid)
    overrides = parse_sets(args.set)
    if args.seeds < 1:
        raise UsageError(f"--seeds must be at least 1, got {args.seeds}")
    if args.processes is not None and args.processes < 1:
        raise UsageError(f"--processes must be at least 1, got {args.processes}")
    try:
        kind = _out_kind(args.out)
    except ValueError as e:
        raise UsageError(f"--out {e}") from None
    if kind != "folder" and (args.fresh or args.series):
        raise UsageError(f"--{'fresh' if args.fresh else 'series'} needs --out FOLDER (a name without suffix)")
    run_timeout = None if args.run_timeout is None else _seconds(args.run_timeout, "--run-timeout")

    try:
        with warnings.catch_warnings():
            # the failed runs are reported below, in one line
            warnings.filterwarnings("ignore", message=r".* sweep runs failed", category=RuntimeWarning)
            res = sweep(
                ScenarioFile(args.scenario),
                grid,
                seeds=args.seeds,
                processes=args.processes,
                progress=False if args.quiet else None,
                dask=args.dask,
                out=args.out,
                overrides=overrides,
                validate=args.validate,
                run_timeout=run_timeout,
                **({"fresh": args.fresh, "series": args.series} if kind == "folder" else {}),
            )
    except SweepFolderError as e:
        raise UsageError(str(e)) from None
    except ValueError as e:
        if isinstance(e, ScenarioError):
            raise
        raise UsageError(str(e)) from None
    if kind == "folder":
        return _report_folder_sweep(args, list(grid), res)
    frame = res.frame
    failed = frame.attrs.get("failed") or []
    if not args.quiet and len(frame):
        _print_aggregate(aggregate(frame), list(grid))
        runs = int(frame["run"].nunique())
        _out()
        _out(f"wrote {_plural(len(frame), 'row')} ({_plural(runs, 'run')}) to {args.out}")
    if failed:
        _err(f"{_plural(len(failed), 'run')} failed (their errors are in report.frame.attrs['failed'] with the Python API; "
             f"--out FOLDER keeps them in a 'failed' table); the first: {failed[0]['error']}")
        return EXIT_RUNS_FAILED
    return EXIT_OK


def _print_aggregate(agg: Any, keys: list[str]) -> None:
    headers = [*keys, "flow", "seeds", "goodput Mbit/s", "95% CI"]
    rows = []
    for rec in agg.to_dict("records"):
        ci = rec["ci95"]
        rows.append(
            [*(str(rec[k]) for k in keys), str(rec["flow"]), str(int(rec["n"])), _num(rec["mean"], 3, 1e6),
             "-" if ci is None or not math.isfinite(ci) else "± " + _num(ci, 3, 1e6)]
        )
    for line in _table(headers, rows, left=len(keys) + 1):
        _out(line)


def _report_folder_sweep(args: argparse.Namespace, keys: list[str], rep: Any) -> int:
    """Prints what a sweep into a folder did; exit status 1 if some runs failed."""
    from .api import aggregate, load_sweep, query

    if not args.quiet:
        _out(f"{_plural(rep.total, 'run')}: {rep.done} done, {rep.skipped} already stored, {rep.failed} failed"
             + (f", {rep.retried} run again after their worker died" if rep.retried else "")
             + f" ({rep.wall_s:.1f} s)")
        rel = load_sweep(args.out, lazy=True)
        if "goodput_bps" in rel.columns:
            _out()
            _print_aggregate(aggregate(rel), keys)
        _out()
        if "run_id" in rel.columns:
            counts = query(args.out, "SELECT count(*) AS n, count(DISTINCT run_id) AS runs FROM flows")
            n, runs = int(counts["n"][0]), int(counts["runs"][0])
            _out(f"{args.out} holds {_plural(n, 'row')} ({_plural(runs, 'run')}); "
                 f"read it with mpsim.load_sweep() or 'mpsim query {args.out} \"SELECT ... FROM flows\"'")
    if rep.failed:
        first = query(args.out, "SELECT error FROM failed ORDER BY run LIMIT 1")["error"][0]
        _err(f"{_plural(rep.failed, 'run')} failed (see 'mpsim query {args.out} \"SELECT * FROM failed\"'); "
             f"the first: {first}")
        return EXIT_RUNS_FAILED
    return EXIT_OK


def cmd_query(args: argparse.Namespace) -> int:
    from .api import query
    from .sweeping.store import SweepFolderError, describe

    try:
        if args.sql is None:
            tables = describe(args.folder)
            for name, rows, cols in tables:
                _out(f"{name}: {_plural(rows, 'row')}")
                _out(textwrap.fill(", ".join(cols), width=88, initial_indent="  ", subsequent_indent="  "))
            if not tables:
                _out(f"{args.folder} holds no runs yet")
            return EXIT_OK
        frame = query(args.folder, args.sql)
    except SweepFolderError as e:
        raise UsageError(str(e)) from None
    except ValueError as e:
        raise UsageError(f"query: {e}") from None
    if args.csv:
        frame.to_csv(sys.stdout, index=False)
        return EXIT_OK
    rows = [[_cell(v) for v in rec] for rec in frame.itertuples(index=False)]
    text_cols = [i for i, c in enumerate(frame.columns) if frame[c].dtype == object]
    left = 0
    while left < len(frame.columns) and left in text_cols:
        left += 1
    for line in _table([str(c) for c in frame.columns], rows, left=max(left, 1)):
        _out(line)
    _out(f"({_plural(len(frame), 'row')})")
    return EXIT_OK


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:,.1f}" if abs(v) >= 1e5 else f"{v:.6g}"
    return str(v)


def cmd_check(args: argparse.Namespace) -> int:
    from .api import check
    from .resources import check_events, check_memory, describe

    overrides = parse_sets(args.set)
    status = EXIT_OK
    for path in args.scenarios:
        try:
            info = check(ScenarioFile(path), overrides=overrides, stream=args.stream)
        except ScenarioError as e:
            _err(f"error: {e}")
            status = EXIT_USAGE
            continue
        _out(
            f"ok: {path}: {_plural(len(info['links']), 'link')}, {_plural(len(info['paths']), 'path')}, "
            f"{_plural(len(info['flows']), 'flow')}, {info['duration_s']:g} s"
        )
        est = info.get("estimate") or {}
        if args.estimate:
            _out(f"  estimate: {describe(est)}")
        for checker in (check_memory, check_events):
            try:
                warning = checker(est, path)
            except ScenarioError as e:
                warning = str(e)
            if warning:
                _err(f"warning: {warning}")
    return status


def _python_components(kind: str | None) -> list[tuple[str, str, str]]:
    """Schedulers and controllers written in Python that installed packages declare (entry
    points), and the shipped scenario files with their paths."""
    from . import plugins, shipped

    items = []
    for k in ("cc", "scheduler"):
        if kind in (None, k):
            items += [(k, n, f"written in Python: {where}") for n, where in sorted(plugins.registered(k).items())]
    if kind in (None, "scenario"):
        items += [("scenario", n, str(shipped.scenario_file(n))) for n in shipped.scenario_names()]
    return items


def cmd_list(args: argparse.Namespace) -> int:
    from .api import components

    items = components(args.kind) if args.kind != "scenario" else []
    items += _python_components(args.kind)
    kinds = list(_KIND_TITLES)
    kinds += sorted({k for k, _, _ in items} - set(kinds))  # kinds added to the core later
    first = True
    for kind in kinds:
        group = [(n, d) for k, n, d in items if k == kind]
        if not group:
            continue
        if not first:
            _out()
        first = False
        _out(f"{_KIND_TITLES.get(kind, kind)}:")
        width = max(len(n) for n, _ in group)
        for name, desc in group:
            _out(f"  {name.ljust(width)}  {desc}")
    return EXIT_OK


def cmd_trace_gen(args: argparse.Namespace) -> int:
    from . import traces

    if (args.rate is None) == (not args.state):
        raise UsageError("give either --rate or one or more --state RATE:HOLD")
    states = None
    if args.state:
        states = []
        for st in args.state:
            rate, sep, hold = st.partition(":")
            if not sep:
                raise UsageError(f"--state expects RATE:HOLD such as 10Mbps:2s, got '{st}'")
            states.append({"rate": rate, "hold": hold})
    try:
        info = traces.generate(args.out, args.duration, rate=args.rate, states=states, seed=args.seed)
    except ValueError as e:
        raise UsageError(str(e)) from None
    _print_trace_summaries([info])
    return EXIT_OK


def _print_trace_summaries(infos: Sequence[Mapping[str, Any]]) -> None:
    rows = [[i["file"], f"{i['opportunities']:,}", f"{i['length_s']:.1f}", f"{i['mean_mbps']:.2f}"] for i in infos]
    for line in _table(["file", "opportunities", "length (s)", "mean capacity (Mbit/s)"], rows):
        _out(line)


def cmd_trace_summary(args: argparse.Namespace) -> int:
    from . import traces

    try:
        infos = [traces.summary(t) for t in args.traces]
    except ValueError as e:
        raise UsageError(str(e)) from None
    _print_trace_summaries(infos)
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(len(args.traces), 1, figsize=(8, 2.6 * len(args.traces)), squeeze=False)
        try:
            for t, ax in zip(args.traces, axes[:, 0]):
                traces.plot(t, bin=args.bin, ax=ax)
        except ValueError as e:
            raise UsageError(str(e)) from None
        fig.tight_layout()
        fig.savefig(args.plot)
        plt.close(fig)
    return EXIT_OK


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": cmd_run,
    "sweep": cmd_sweep,
    "check": cmd_check,
    "list": cmd_list,
    "reproduce": cmd_reproduce,
    "query": cmd_query,
    "kernel": lambda args: __import__("mpsim.kernel.testbed", fromlist=["cmd_kernel"]).cmd_kernel(args, parse_sets(args.set)),
    "trace-gen": cmd_trace_gen,
    "trace-summary": cmd_trace_summary,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the ``mpsim`` command with *argv* (default: ``sys.argv[1:]``); returns the exit
    status: 0 on success, 2 for any user error, 130 when interrupted."""
    try:
        parser = build_parser()
        argv = list(sys.argv[1:] if argv is None else argv)
        try:
            args = parser.parse_args(argv)
        except SystemExit as e:  # --help and --version
            return int(e.code or 0) if not isinstance(e.code, str) else EXIT_USAGE
        except UsageError as e:
            command = next((a for a in argv if a in _COMMANDS), None)
            raise UsageError(f"{e} (see 'mpsim {command + ' ' if command else ''}--help')") from None
        if args.command is None:
            raise UsageError("no command given; choose run, sweep, query, check, list, reproduce, kernel, trace-gen or trace-summary (see 'mpsim --help')")
        return _COMMANDS[args.command](args)
    except UsageError as e:
        _err(f"error: {e}")
    except ScenarioError as e:
        _err(f"error: {e}")
    except PluginError as e:  # a Python scheduler or controller answered something unusable
        _err(f"error: {e}")
    except ImportError as e:
        _err(f"error: {e}")
    except OSError as e:
        if isinstance(e, BrokenPipeError):  # e.g. 'mpsim list | head -1'
            _silence_stdout()
            return EXIT_OK
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        _err(f"error: {where}{e.strerror or e}")
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_INTERRUPTED
    return EXIT_USAGE


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
