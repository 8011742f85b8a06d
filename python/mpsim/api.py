"""The Python API: check, run and sweep scenarios.

>>> import mpsim
>>> res = mpsim.run('''
... duration = "5s"
... [[link]]
... name = "bottleneck"
... rate = "10Mbps"
... delay = "10ms"
... [[path]]
... name = "p"
... links = ["bottleneck"]
... [[flow]]
... path = "p"
... ''', link__bottleneck__loss="1%", seed=3, progress=False)
>>> res.flows["flow"].tolist()
['flow0']
>>> bool(1e6 < res.flows["goodput_bps"][0] < 10e6)
True
>>> df = mpsim.sweep("dumbbell.toml", {"link.bottleneck.loss": ["0.5%", "1%"]}, seeds=5).frame  # doctest: +SKIP

pandas and tqdm are imported only when first needed, so ``import mpsim`` stays quick and
sweep worker processes start fast.
"""

from __future__ import annotations

import json
import math
import os
import time
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from . import _core
from .errors import ScenarioError, from_core
from .progress import Progress, ProgressArg
from .progress import check as check_progress
from .scenario import ScenarioLike, _apply, annotate, kwargs_to_overrides, load, to_json
from .sweeping.engine import SweepReport, sweep
from .sweeping.store import load_sweep, query

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["Result", "check", "run", "sweep", "SweepReport", "load_sweep", "query", "aggregate", "components", "FORMATS"]

#: File formats :meth:`Result.save` can write.
FORMATS = ("json", "csv", "parquet")

# -------------------------------------------------------------------------------------
# Preparing a scenario


def _prepare(
    scenario: ScenarioLike, overrides: Mapping[str, Any] | None, kw: Mapping[str, Any]
) -> tuple[dict[str, Any], str, str, list[tuple[str, str, Any]]]:
    """Loads, applies overrides (then keyword overrides), serialises.

    Returns ``(scenario_dict, origin, json_text, applied)``; see ``scenario._apply``.
    """
    d, origin = load(scenario)
    merged: dict[str, Any] = dict(overrides or {})
    merged.update(kwargs_to_overrides(kw))
    applied = _apply(d, merged, origin)
    return d, origin, to_json(d, origin), applied


def _plugins(d: dict[str, Any], origin: str, js: str, applied: Iterable[tuple[str, str, Any]]) -> tuple[str, list[Any]]:
    """Resolves the schedulers and controllers written in Python that the scenario names
    (see :mod:`mpsim.plugins`); returns the JSON for the core and the list it installs."""
    from . import plugins

    try:
        found, renames = plugins.for_scenario(d, origin)
    except ScenarioError as e:
        raise annotate(e, applied) from None
    if renames:
        js = to_json(plugins.apply_renames(d, renames), origin)
    return js, found


def _core_error(e: BaseException, applied: Iterable[tuple[str, str, Any]], what: str = "override") -> ScenarioError:
    return annotate(from_core(e), applied, what)


def check(
    scenario: ScenarioLike, *, overrides: Mapping[str, Any] | None = None, stream: bool = False, **kw: Any
) -> dict[str, Any]:
    """Validates a scenario without running it.

    Args:
        scenario: a TOML file path, TOML text or a dict (see :func:`mpsim.scenario.load`).
        overrides: ``{dotted_key: value}`` applied first (see :func:`mpsim.apply_overrides`).
        stream: estimate the run as if its series and trace were streamed to disk
            (``run(..., stream=DIR)``): they then count one chunk each.
        **kw: more overrides, with ``__`` standing for ``.`` (``link__bottleneck__loss="2%"``).

    Returns:
        ``{"name", "duration_s", "seed", "links", "paths", "flows", "estimate"}``; links,
        paths and flows are lists of names, estimate the run's estimated cost (see
        :mod:`mpsim.resources`; ``estimate["stream"]`` says whether it assumed streaming).

    Raises:
        ScenarioError: the scenario cannot be read or is invalid.
    """
    d, origin, js, applied = _prepare(scenario, overrides, kw)
    js, _ = _plugins(d, origin, js, applied)
    try:
        info = dict(_core.check(js, origin, bool(stream)))
    except _core.ScenarioError as e:
        raise _core_error(e, applied) from None
    info["estimate"] = {**info["estimate"], "stream": bool(stream)}
    return info


def components(kind: str | None = None) -> list[tuple[str, str, str]]:
    """The built-in components as ``(kind, name, description)``.

    Args:
        kind: ``"cc"`` (congestion controllers), ``"scheduler"`` (multipath schedulers),
            ``"receiver"`` (receiver logic), ``"sctp_cc"``, ``"sctp_scheduler"`` and
            ``"rtx_policy"`` (SCTP's controllers, CMT schedulers and retransmission
            policies), ``"loss"`` (loss models), ``"aqm"`` (queue disciplines), ``"app"``
            (applications), or None for all.
    """
    items = [tuple(map(str, c)) for c in _core.components()]
    if kind is not None:
        items = [c for c in items if c[0] == kind]
    return items  # type: ignore[return-value]


# -------------------------------------------------------------------------------------
# Running


def run(
    scenario: ScenarioLike,
    *,
    overrides: Mapping[str, Any] | None = None,
    progress: ProgressArg = None,
    memory_check: bool = True,
    event_check: bool = True,
    pcap: str | os.PathLike[str] | None = None,
    stream: str | os.PathLike[str] | None = None,
    qlog: str | os.PathLike[str] | None = None,
    **kw: Any,
) -> "Result":
    """Runs one simulation.

    Args:
        scenario: a TOML file path, TOML text or a dict (see :func:`mpsim.scenario.load`).
        overrides: ``{dotted_key: value}`` such as ``{"link.bottleneck.loss": "2%", "seed": 3}``,
            applied before the keyword overrides (see :func:`mpsim.apply_overrides`).
        progress: None (the default) shows a progress bar on stderr only when stderr is a
            terminal and the work takes longer than about 2 s; True always shows one, False
            never; a callable is called now and then with the fraction done (0..1: of the
            simulated time in a run, of the runs in a sweep), last with 1.0 when the work
            is complete -- if it raises, the work stops and the exception propagates.
        memory_check: estimate the run's memory before it starts (see :mod:`mpsim.resources`):
            warn (:class:`~mpsim.resources.MemoryWarning`) above half of the available
            memory and refuse above all of it; False skips the check.
        event_check: estimate the events the run will process: warn
            (:class:`~mpsim.resources.SlowRunWarning`) above
            :data:`~mpsim.resources.EVENT_WARN` and refuse above
            :func:`~mpsim.resources.event_limit`, naming the flow, link or sampling interval
            that costs the most; False skips the check.
        pcap: a directory: record one packet capture per flow (``metrics.pcap = true``) and
            write them there as ``<flow>.pcap``; a :class:`CaptureLimitWarning` tells when a
            capture reached ``metrics.pcap_limit`` and lost its later packets.
        stream: a new or empty directory: stream the time series and the trace to
            ``<table>.parquet`` files there while the run goes on (see :mod:`mpsim.stream`),
            so that their memory stays bounded whatever the run's length; the result's
            tables are then read from those files when first used.
        qlog: a directory: write a qlog trace (JSON-SEQ) of each QUIC flow there as
            ``<flow>.sqlog`` (``metrics.qlog = true``; docs/quic.md).
        **kw: more overrides, with ``__`` standing for ``.``: ``link__bottleneck__loss="2%"``.

    Returns:
        a :class:`Result`.

    Raises:
        ScenarioError: the scenario cannot be read or is invalid, or the run would need more
            memory than is available (unless ``memory_check=False``) or more events than
            the limit (unless ``event_check=False``).
        mpsim.stream.StreamError: *stream* is not a new or empty directory that can be written.
        KeyboardInterrupt: Ctrl-C stops the run.
    """
    from . import resources
    from . import stream as streaming

    check_progress(progress)
    if pcap is not None:
        overrides = {**(overrides or {}), "metrics.pcap": True}
        Path(pcap).mkdir(parents=True, exist_ok=True)  # fail before running, not after
    if qlog is not None:
        overrides = {**(overrides or {}), "metrics.qlog": True}
        Path(qlog).mkdir(parents=True, exist_ok=True)
    d, origin, js, applied = _prepare(scenario, overrides, kw)
    scenario_json = js  # the scenario as run, for scenario.json (without the plug-ins' renames)
    js, plugins = _plugins(d, origin, js, applied)
    name = d.get("name") if isinstance(d.get("name"), str) else None
    # the core reads the scenario once, for the check and the run
    try:
        parsed = _core.parse(js, origin)
    except _core.ScenarioError as e:
        raise _core_error(e, applied) from None
    estimate = None
    if memory_check or event_check:
        import warnings

        estimate = {**_core.check(parsed, origin, stream is not None)["estimate"], "stream": stream is not None}
        if memory_check and (warning := resources.check_memory(estimate, origin)):
            warnings.warn(warning, resources.MemoryWarning, stacklevel=2)
        if event_check and (warning := resources.check_events(estimate, origin)):
            warnings.warn(warning, resources.SlowRunWarning, stacklevel=2)
    # the folder is made once the scenario is known to be good, and before the run
    stream_dir = streaming.prepare_dir(stream) if stream is not None else None
    started = time.time()
    prog = Progress(progress, name or "simulating")
    sink = streaming.ParquetSink(stream_dir) if stream_dir is not None else None
    try:
        raw = _core.run(parsed, origin, prog.callback(), plugins or None, sink)
    except _core.ScenarioError as e:
        raise _core_error(e, applied) from None
    finally:
        prog.close()
        if sink is not None:
            sink.close()
    info = dict(raw.get("run_info") or {})
    info["started_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started))
    info["peak_rss_bytes"] = resources.peak_rss_bytes()
    if estimate is not None:
        info["estimate"] = estimate
    info.update(resources.host_info())
    res = Result({**raw, "run_info": info}, d, origin, stream_dir=stream_dir)
    res._scenario_json = scenario_json
    if pcap is not None:
        res.pcap_files = _write_captures(raw.get("pcap") or [], Path(pcap))
    if qlog is not None:
        res.qlog_files = _write_qlogs(raw.get("qlog") or [], Path(qlog))
    return res


def _write_qlogs(traces: Iterable[tuple[str, str]], out: Path) -> list[Path]:
    """Writes each QUIC flow's qlog trace as ``out/<flow>.sqlog``."""
    written = []
    for flow, text in traces:
        p = out / f"{flow}.sqlog"
        if p.resolve().parent != out.resolve():
            raise ValueError(f"flow name {flow!r} would put its qlog outside {out}")
        p.write_text(text)
        written.append(p)
    return written


class CaptureLimitWarning(UserWarning):
    """A packet capture reached ``metrics.pcap_limit``: its later packets are missing."""


def _write_captures(captures: Iterable[tuple[str, bytes, int, int]], out: Path) -> list[Path]:
    """Writes each flow's capture as ``out/<flow>.pcap``; warns for the truncated ones."""
    import warnings

    written = []
    for flow, data, packets, dropped in captures:
        p = out / f"{flow}.pcap"
        # the reader refuses names that are no file name; never write outside the folder
        if p.resolve().parent != out.resolve():
            raise ValueError(f"flow name {flow!r} would put its capture outside {out}")
        p.write_bytes(data)
        written.append(p)
        if dropped:
            warnings.warn(
                f"capture {p} reached metrics.pcap_limit ({len(data)} bytes): it holds the first "
                f"{packets} packets, the last {dropped} are missing (raise metrics.pcap_limit)",
                CaptureLimitWarning,
                stacklevel=3,
            )
    return written


class Result:
    """The outcome of one run.

    Attributes:
        summary: the run summary as a dict: ``scenario``, ``seed``, ``duration_s``,
            ``warmup_s``, ``flows`` (one dict per flow: ``name``, ``path``, ``cc``,
            ``goodput_bps``, ``throughput_bps``, ``retransmits``, ``timeouts``,
            ``rtt_mean_ms``, ``delay_mean_ms``, ``jitter_ms``, ...), ``links`` (one dict per
            link and direction), ``jain_index``, ``events``, ``packets_delivered``: only what
            the scenario and seed determine, so the same run gives the same summary.
        run_info: what the machine determines: ``wall_s`` (wall-clock seconds of the
            simulation), ``started_utc``, ``peak_rss_bytes`` (of this process so far),
            ``estimate`` (the pre-run estimate, see :mod:`mpsim.resources`), ``mpsim_version``,
            ``python``, ``platform``, ``cpus``.
        scenario: the scenario dict that was run, overrides included.
        origin: where the scenario came from (file name, ``"<string>"`` or ``"<dict>"``).

    The tables (:attr:`flows`, :attr:`subflows`, :attr:`links`, :attr:`flow_series`,
    :attr:`subflow_series`, :attr:`link_series`,
    :attr:`trace`) are pandas DataFrames built on first access. When the run streamed
    (``run(..., stream=DIR)``), :attr:`stream_dir` is that directory and the series and the
    trace are read from its Parquet files on first access (all at once: for tables larger
    than memory, read the files in parts, e.g. with ``pyarrow.parquet.ParquetFile`` or DuckDB).
    """

    def __init__(
        self, raw: Mapping[str, Any], scenario: dict[str, Any], origin: str, stream_dir: str | os.PathLike[str] | None = None
    ) -> None:
        summary = raw["summary"]
        # the summary stays in the core until used: its JSON text, the short summary of a run
        # of many flows and the flows as Arrow columns are each made only when asked for, so a
        # run of many flows is read, tabled and saved without a Python object per flow
        self._core_summary: _core.RunSummary | None = None
        if isinstance(summary, Mapping):
            self.summary = dict(summary)
        else:
            self._core_summary = summary
        self.run_info: dict[str, Any] = dict(raw.get("run_info") or {})
        self.scenario: dict[str, Any] = scenario
        self.origin: str = origin
        # the series and the trace as the core's Arrow buffers (see mpsim.stream.arrow_table)
        self._flow_series: Mapping[str, Any] = raw.get("flow_series") or {}
        self._subflow_series: Mapping[str, Any] = raw.get("subflow_series") or {}
        self._link_series: Mapping[str, Any] = raw.get("link_series") or {}
        self._trace: Mapping[str, Any] | None = raw.get("trace")
        #: where the series and the trace were streamed to, or None
        self.stream_dir: Path | None = Path(stream_dir) if stream_dir is not None else None
        #: the packet captures written by ``run(..., pcap=dir)``
        self.pcap_files: list[Path] = []
        #: the qlog traces written by ``run(..., qlog=dir)``
        self.qlog_files: list[Path] = []
        # the scenario as the core read it (JSON), kept by `run` so `save` need not make it again
        self._scenario_json: str | None = None

    def __getstate__(self) -> dict[str, Any]:
        # the core's summary does not pickle: a pickled result holds its forms made
        state = dict(self.__dict__)
        if self._core_summary is not None:
            state.update(summary=self.summary, _summary_brief=self._summary_brief, _flows_arrow=self._flows_arrow,
                         _core_summary=None)
        return state

    # -- tables --

    @cached_property
    def summary(self) -> dict[str, Any]:
        """The run summary as a dict (see the class documentation)."""
        return json.loads(self._core_summary.json()) if self._core_summary is not None else {}

    @cached_property
    def _summary_brief(self) -> dict[str, Any] | None:
        """With more than 1,000 flows, the summary with the first 1,000 and ``flows_omitted``
        (what ``summary.json`` holds beside a flows table); None otherwise."""
        if self._core_summary is None:
            return None
        brief = self._core_summary.brief()
        return json.loads(brief) if brief is not None else None

    @cached_property
    def _flows_arrow(self) -> Any:
        """The flows of the summary as a pyarrow table (nested subflows and classes as lists
        of structs), built from the core's Arrow buffers; None without them."""
        if self._core_summary is None:
            return None
        import pyarrow as pa

        from .stream import arrow_column

        return pa.table({name: arrow_column(col) for name, col in self._core_summary.flows_columns()})

    @cached_property
    def flows(self) -> "pd.DataFrame":
        """One row per flow, with the flow summary fields; the ``flow`` column is the flow name.
        Per-subflow figures are in :attr:`subflows`. A field some flows lack (or have null) is
        missing there: NaN in a float column, ``<NA>`` in an integer one (pandas' Int64)."""
        import pandas as pd

        nested = ("subflows", "classes")
        table = self._flows_arrow
        if table is None:
            return pd.DataFrame([{k: v for k, v in f.items() if k not in nested} for f in self.summary.get("flows", [])])
        return _to_pandas(table.drop_columns([c for c in nested if c in table.column_names]))

    def _nested(self, field: str) -> "pd.DataFrame":
        """The rows of a nested list of each flow (its subflows or media classes), each with
        its flow's name first."""
        import pandas as pd
        import pyarrow as pa
        import pyarrow.compute as pc

        table = self._flows_arrow
        if table is None:
            rows = [{"flow": f["flow"], **x} for f in self.summary.get("flows", []) for x in f.get(field, [])]
            return pd.DataFrame(rows)
        if field not in table.column_names:
            return pd.DataFrame()
        lists = table[field].combine_chunks()
        items = pc.list_flatten(lists)
        if len(items) == 0 or not pa.types.is_struct(items.type):
            return pd.DataFrame()
        parents = pc.list_parent_indices(lists)
        names = pc.take(table["flow"].combine_chunks(), parents)
        columns = {"flow": names, **{f.name: items.field(i) for i, f in enumerate(items.type)}}
        return _to_pandas(pa.table(columns))

    @cached_property
    def subflows(self) -> "pd.DataFrame":
        """One row per subflow (``flow``, ``path``, ``backup``, ``goodput_bps``,
        ``segments_sent``, ``retransmits``, ``timeouts``, ``rtt_mean_ms``, ...); a plain TCP
        flow has one subflow."""
        return self._nested("subflows")

    @cached_property
    def classes(self) -> "pd.DataFrame":
        """One row per frame type of each media flow (``flow``, ``class``, ``priority``,
        ``frames`` written to the socket, ``refused``: discarded at the sender (refused by a
        full send buffer or dropped from the application's queue), ``queued``: still in that
        queue at the end, ``delivered``, ``late``, ``delay_mean_ms``, ``delay_p95_ms``,
        ``jitter_ms``); the frames generated are ``frames + refused + queued``. Empty when no
        flow streams media."""
        return self._nested("classes")

    @cached_property
    def subflow_series(self) -> "pd.DataFrame":
        """Per-subflow samples every ``metrics.interval`` (``time_s``, ``flow``, ``path``,
        ``cwnd_bytes``, ``ssthresh_bytes``, ``srtt_ms``, ``rto_ms``, ``goodput_bps``, ...)."""
        return self._series("subflow_series", self._subflow_series)

    @cached_property
    def links(self) -> "pd.DataFrame":
        """One row per link and direction (``link``, ``direction``, ``packets_offered``,
        ``packets_delivered``, ``queue_drops``, ``loss_drops``, ``down_drops``, ``utilization``)."""
        import pandas as pd

        # the short summary of a run of many flows has every link: no need to read the rest
        head = self._summary_brief if "summary" not in self.__dict__ and self._summary_brief is not None else self.summary
        return pd.DataFrame(head.get("links", []))

    @cached_property
    def flow_series(self) -> "pd.DataFrame":
        """Per-flow samples every ``metrics.interval`` (``time_s``, ``flow``, ``cwnd_bytes``,
        ``srtt_ms``, ``goodput_bps``, ...); empty when no series was recorded."""
        return self._series("flow_series", self._flow_series)

    @cached_property
    def link_series(self) -> "pd.DataFrame":
        """Per-link samples every ``metrics.interval`` (``time_s``, ``link``, ``queue_packets``,
        ``queue_bytes``, ``drops``); empty when no series was recorded."""
        return self._series("link_series", self._link_series)

    @cached_property
    def trace(self) -> "pd.DataFrame | None":
        """The per-packet trace (``time_s``, ``flow``, ``event``, ``seq``, ``len``, ``link``)
        if ``metrics.trace = true``, else None."""
        if self.stream_dir is not None:
            return self._series("trace", {}) if self._streamed_file("trace").exists() else None
        if self._trace is None:
            return None
        return self._series("trace", self._trace)

    def _streamed_file(self, table: str) -> Path:
        assert self.stream_dir is not None
        return self.stream_dir / f"{table}.parquet"

    def _series(self, table: str, columns: Mapping[str, Any]) -> "pd.DataFrame":
        import pandas as pd

        from .stream import arrow_table

        if self.stream_dir is not None:
            return pd.read_parquet(self._streamed_file(table))
        return _to_pandas(arrow_table(columns))

    def _streamed_tables(self) -> list[str]:
        """The tables whose rows are in the stream directory's files."""
        if self.stream_dir is None:
            return []
        from .stream import TABLES

        return [t for t in TABLES if self._streamed_file(t).exists()]

    # -- output --

    def to_json(self, indent: int | None = 2) -> str:
        """The summary as JSON text."""
        return json.dumps(self.summary, indent=indent)

    def _summary_file_text(self, with_table: bool) -> str:
        """What ``summary.json`` holds: the summary; with more than 1,000 flows and a flows
        table written beside it, only the first 1,000 (``flows_omitted`` says how many more
        are in the table). More than :data:`LONG_LIST` flows are written one per line."""
        if with_table and self._summary_brief is not None:
            return _dumps(self._summary_brief)
        return _dumps(self.summary)

    def save(self, out_dir: str | os.PathLike[str], formats: str | Iterable[str] = ("json", "csv")) -> list[Path]:
        """Writes the results into directory *out_dir* (created if needed).

        Args:
            out_dir: the directory.
            formats: any of ``"json"`` (``summary.json``, ``scenario.json``, the scenario
                as run, and ``run_info.json``, wall time and host), ``"csv"`` and ``"parquet"`` (``flows``, ``subflows``, ``links``,
                ``flow_series``, ``subflow_series``, ``link_series`` and, if recorded, ``trace`` tables); a list or a
                comma-separated string. Tables streamed to disk are copied (Parquet) or
                converted (CSV) a row group at a time, never read whole; their Parquet
                files already in *out_dir* are left as they are.

        Returns:
            the paths written, in order.
        """
        import pyarrow.parquet as pq

        from .stream import arrow_table, parquet_safe, write_frame

        fmts = parse_formats(formats)
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        if "json" in fmts:
            p = out / "summary.json"
            p.write_text(self._summary_file_text(with_table=bool({"csv", "parquet"} & set(fmts))) + "\n", encoding="utf-8")
            written.append(p)
            p = out / "scenario.json"
            scenario_json = self._scenario_json or to_json(self.scenario, self.origin)
            p.write_text(_dumps(json.loads(scenario_json)) + "\n", encoding="utf-8")
            written.append(p)
            p = out / "run_info.json"
            p.write_text(json.dumps(self.run_info, indent=2) + "\n", encoding="utf-8")
            written.append(p)
        streamed = self._streamed_tables()
        tables: list[tuple[str, Callable[[], Any]]] = [
            ("flows", lambda: self.flows),
            ("links", lambda: self.links),
            ("subflows", lambda: self.subflows),
            ("classes", lambda: self.classes),
            ("flow_series", lambda: self.flow_series),
            ("subflow_series", lambda: self.subflow_series),
            ("link_series", lambda: self.link_series),
        ]
        # a series held in memory goes to Parquet from the core's Arrow buffers, without a
        # DataFrame on the way (the same file as through one: NaN written as null)
        buffers = {"flow_series": self._flow_series, "subflow_series": self._subflow_series, "link_series": self._link_series}
        if "trace" in streamed or (self.stream_dir is None and self._trace is not None):
            tables.append(("trace", lambda: self.trace))
        for fmt in ("csv", "parquet"):
            if fmt not in fmts:
                continue
            for name, table in tables:
                p = out / f"{name}.{fmt}"
                if name in streamed:
                    _copy_streamed(self._streamed_file(name), p, fmt)
                elif fmt == "csv":
                    table().to_csv(p, index=False)
                elif name in buffers and self.stream_dir is None and name not in self.__dict__:
                    pq.write_table(_nan_as_null(arrow_table(buffers[name])), p)
                else:
                    write_frame(parquet_safe(table()), p)  # names as `string`, as when streamed
                written.append(p)
        return written

    def __repr__(self) -> str:
        s = self.summary
        flows = ", ".join(f"{f.get('flow')}: {f.get('goodput_bps', 0) / 1e6:.3g} Mbit/s" for f in s.get("flows", []))
        return (
            f"<mpsim.Result {s.get('scenario')!r} seed={s.get('seed')} "
            f"duration={s.get('duration_s')}s goodput [{flows}]>"
        )


#: A list longer than this is written one entry per line in summary.json and scenario.json
#: (the flows of a run of many flows), where an indented entry would take a dozen lines and
#: Python's indenting JSON encoder most of the time of writing the file.
LONG_LIST = 1000


def _dumps(obj: Any) -> str:
    """JSON text of *obj* indented by 2, with each entry of a list longer than
    :data:`LONG_LIST` at the top level on one line of its own."""
    if not isinstance(obj, dict) or not any(isinstance(v, list) and len(v) > LONG_LIST for v in obj.values()):
        return json.dumps(obj, indent=2)
    items = []
    for k, v in obj.items():
        if isinstance(v, list) and len(v) > LONG_LIST:
            body = ",\n".join("    " + json.dumps(x) for x in v)
            items.append(f"  {json.dumps(k)}: [\n{body}\n  ]")
        else:
            items.append(f"  {json.dumps(k)}: " + json.dumps(v, indent=2).replace("\n", "\n  "))
    return "{\n" + ",\n".join(items) + "\n}"


def _nan_as_null(table: Any) -> Any:
    """*table* with NaN in its float columns as null, as pandas hands them to Arrow."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for i, col in enumerate(table.columns):
        if pa.types.is_floating(col.type) and pc.any(pc.is_nan(col)).as_py():
            table = table.set_column(i, table.field(i), pc.if_else(pc.is_nan(col), pa.scalar(None, col.type), col))
    return table


def _to_pandas(table: Any) -> "pd.DataFrame":
    """A DataFrame of a pyarrow table with the types pandas gives the same values as Python
    objects (nested records as dicts and lists), except that an integer column with missing
    values is Int64 (not float or object)."""
    import pandas as pd
    import pyarrow as pa

    frame = table.to_pandas()
    for name, col in zip(table.column_names, table.columns):
        if pa.types.is_integer(col.type) and col.null_count:
            frame[name] = pd.array(col.to_pandas(integer_object_nulls=True), dtype="Int64")
        elif pa.types.is_null(col.type):
            frame[name] = pd.Series([None] * len(frame), dtype=object)
        elif pa.types.is_nested(col.type):  # an SCTP flow's record: dicts and lists, as in the summary
            frame[name] = pd.Series(col.to_pylist(), dtype=object)
    return frame


def _copy_streamed(src: Path, dst: Path, fmt: str) -> None:
    """Writes the streamed table in *src* to *dst* as *fmt*, a row group at a time."""
    import shutil

    import pyarrow.parquet as pq

    if dst.exists() and os.path.samefile(src, dst):
        return
    if fmt == "parquet":
        shutil.copyfile(src, dst)
        return
    f = pq.ParquetFile(src)
    with open(dst, "w", encoding="utf-8", newline="") as out:
        if f.metadata.num_row_groups == 0:
            f.schema_arrow.empty_table().to_pandas().to_csv(out, index=False)
        for i in range(f.metadata.num_row_groups):
            f.read_row_group(i).to_pandas().to_csv(out, index=False, header=i == 0)


def parse_formats(formats: str | Iterable[str]) -> list[str]:
    """Normalises and validates a list of output formats (``"json,csv"`` or a list)."""
    if isinstance(formats, str):
        items = [f.strip().lower() for f in formats.split(",")]
    else:
        items = [str(f).strip().lower() for f in formats]
    items = [f for f in items if f]
    if not items:
        raise ValueError(f"no output format given; choose from {', '.join(FORMATS)}")
    bad = [f for f in items if f not in FORMATS]
    if bad:
        raise ValueError(f"unknown output format '{bad[0]}'; choose from {', '.join(FORMATS)}")
    return items


# -------------------------------------------------------------------------------------
# Aggregation

# Two-sided 95% Student-t quantiles by degrees of freedom.
_T95 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
    10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110,
    18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060,
    26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980,
}


def t95(df: int) -> float:
    """The two-sided 95% quantile of Student's t with *df* degrees of freedom (nan for 0)."""
    if df < 1:
        return math.nan
    if df in _T95:
        return _T95[df]
    lower = [k for k in _T95 if k <= df]
    return _T95[max(lower)] if df <= 120 else 1.960


def aggregate(frame: Any, value: str = "goodput_bps", by: Sequence[str] | None = None) -> "pd.DataFrame":
    """Mean and 95% confidence interval of *value* over seeds, per grid point and flow.

    Args:
        frame: the frame of a sweep (``sweep(...).frame``) or of :func:`load_sweep` (or read
            back from a sweep's output file), or a DuckDB relation from
            ``load_sweep(..., lazy=True)`` or ``query(..., lazy=True)``, which is summarised
            by DuckDB without loading it.
        value: the column to aggregate.
        by: grouping columns; default: the grid columns (those before ``seed``) and ``flow``.

    Returns:
        the grouping columns, then ``n``, ``mean``, ``ci95`` (half-width of the interval,
        Student t; nan for a single seed), ``min`` and ``max``, in first-appearance order.
    """
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        from .sweeping.store import aggregate_relation

        res, by = aggregate_relation(frame, value, by)
    else:
        if by is None:
            cols = list(frame.columns)
            grid = frame.attrs.get("grid")
            if grid is None:
                grid = cols[: cols.index("seed")] if "seed" in cols else []
            by = [*grid, "flow"]
        by = list(by)
        g = frame.groupby(by, sort=False, dropna=False)[value]
        res = g.agg(["count", "mean", "std", "min", "max"]).reset_index()
        res = res.rename(columns={"count": "n"})
    half = [t95(int(n) - 1) * sd / math.sqrt(n) if n > 1 else math.nan for n, sd in zip(res["n"], res["std"])]
    res["ci95"] = pd.Series(half, index=res.index, dtype=float)
    return res[[*by, "n", "mean", "ci95", "min", "max"]]
