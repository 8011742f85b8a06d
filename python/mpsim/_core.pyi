"""Type stubs for the compiled core, ``mpsim._core`` (crates/mpsim-py).

Use the ``mpsim`` package instead of calling these directly: it reads TOML files, applies
overrides, converts errors to :class:`mpsim.ScenarioError` and builds DataFrames.
"""

from typing import Any, Callable, TypedDict, final

__all__ = [
    "parse", "check", "run", "components", "Scenario", "RunSummary", "read_link_trace", "ScenarioError", "PluginError", "SubflowView", "SchedContext", "Window",
    "SubflowState", "AckContext", "LossContext", "CHUNK_ROWS", "__version__",
]

__version__: str
CHUNK_ROWS: int
"""Rows of a streamed table's chunk (see ``run(..., sink=...)``)."""

class ScenarioError(ValueError):
    """A scenario is invalid: ``args == (origin, key, message)``."""

    args: tuple[str, str, str]  # type: ignore[assignment]

class Estimate(TypedDict):
    """The estimated cost of a run (crates/mpsim-core/src/estimate.rs): upper estimates.
    The series and trace figures are those held in memory at once: one chunk of each when
    the run streams."""

    events: int
    packets: int
    memory_bytes: int
    """Peak memory of the core; the Python tables built from its output come on top."""
    state_bytes: int
    series_bytes: int
    trace_bytes: int
    series_rows: int
    trace_rows: int
    series_values: int
    trace_values: int
    top_flow: str
    """The flow that costs the most events ("" without flows), and its events."""
    top_flow_events: int
    top_link: str
    """The link that carries the most packet events ("" without links), and its events."""
    top_link_events: int
    sample_events: int
    """Events of the time series' samples (``metrics.interval``)."""

class CheckInfo(TypedDict):
    name: str
    duration_s: float
    seed: int
    links: list[str]
    paths: list[str]
    flows: list[str]
    estimate: Estimate

class RunInfo(TypedDict):
    wall_s: float
    """Wall-clock seconds the simulation took."""

Columns = dict[str, tuple[str, bytes, bytes | None]]
"""A table as Arrow buffers: column name to (kind, values, offsets); kinds "f64", "u64",
"str" (int32 offsets) and "large_str" (int64 offsets); see ``mpsim.stream.arrow_table``."""

@final
class Scenario:
    """A scenario the core has read and validated (:func:`parse`); :func:`check` and
    :func:`run` take it in place of the JSON text, so the scenario is read once for both."""

@final
class RunSummary:
    """The summary of a run, kept in the core: each form is made when asked for."""

    def json(self) -> str:
        """The run summary as JSON text: only what the scenario and seed determine."""
    def brief(self) -> str | None:
        """With more than 1,000 flows: the summary as JSON text with the first 1,000 and
        ``flows_omitted``; None with fewer."""
    def flows_columns(self) -> list[tuple[str, tuple[Any, ...]]]:
        """The summary's flows as Arrow columns: (name, (kind, rows, validity, ...)); see
        ``mpsim.stream.arrow_column``."""
    def __len__(self) -> int:
        """The number of flows."""

class RunOutput(TypedDict):
    summary: RunSummary
    run_info: RunInfo
    flow_series: Columns | None
    """Per flow per sampling interval: columns time_s, flow, cwnd_bytes, ... (see the README)."""
    subflow_series: Columns | None
    """Per subflow per sampling interval: columns time_s, flow, path, cwnd_bytes, ..."""
    link_series: Columns | None
    """Per link (forward direction) per sampling interval."""
    trace: Columns | None
    streamed: bool
    """True when the series and the trace went to the sink: they are then None here."""
    pcap: list[tuple[str, bytes, int, int]]
    """One capture per flow if the scenario asked for them: (flow, pcap file bytes, packets
    written, packets left out beyond ``metrics.pcap_limit``)."""

def parse(scenario_json: str, origin: str) -> Scenario:
    """Reads and validates a scenario given as JSON; *origin* names it in errors.

    Raises ScenarioError.
    """

def check(scenario: str | Scenario, origin: str, stream: bool = False) -> CheckInfo:
    """Validates a scenario given as JSON (or made by :func:`parse`); *origin* names it in errors. The estimate is that
    of a run streaming its series and trace if *stream*.

    Raises ScenarioError.
    """

def run(
    scenario: str | Scenario,
    origin: str,
    progress: Callable[[float], Any] | None = None,
    plugins: list[tuple[str, str, str, Callable[[], Any]]] | None = None,
    sink: Callable[[str, Columns], Any] | None = None,
    chunk_rows: int = ...,
) -> RunOutput:
    """Runs a scenario given as JSON (or made by :func:`parse`).

    *progress*, if given, is called now and then with the fraction done (0..1); if it
    raises, the run stops and the exception propagates. Ctrl-C raises KeyboardInterrupt.
    *plugins* are ``(flow, "scheduler" | "cc", name, factory)``: Python implementations
    installed before the run (see :mod:`mpsim.plugins`); an exception they raise stops the
    run and propagates, a value the core cannot use raises PluginError.
    *sink*, if given, receives the series and the trace while the run goes on, as
    ``sink(table, columns)`` (table: "flow_series", "subflow_series", "link_series" or
    "trace"; columns: Arrow buffers, see ``Columns``) in chunks
    of *chunk_rows* rows or more (default CHUNK_ROWS), every table at least once; an exception
    it raises stops the run and propagates (see :mod:`mpsim.stream`).
    Raises ScenarioError for an invalid scenario.
    """

def read_link_trace(path: str) -> list[int]:
    """A Mahimahi delivery trace's timestamps in milliseconds, read by the simulator's own
    reader. Raises ValueError naming the file and, for a bad line, its number."""

def components() -> list[tuple[str, str, str]]:
    """The built-in components as ``(kind, name, description)``; kind is "cc", "scheduler", "loss" or "app"."""

class PluginError(RuntimeError):
    """A Python scheduler or controller returned a value the simulator cannot use."""

@final
class SubflowView:
    """One subflow as a scheduler sees it (sizes in bytes, times in integer ns)."""

    srtt: int | None
    latest_rtt: int | None
    rtt_samples: int
    rttvar: int
    min_rtt: int | None
    rto: int
    cwnd: int
    ssthresh: int
    mss: int
    in_flight: int
    queued: int
    ca_state: str
    """"open", "cwr" (reducing after an ECN echo), "recovery" or "loss"."""
    backup: bool
    usable: bool
    segments_sent: int
    retransmits: int
    def has_cwnd_room(self) -> bool: ...
    def available(self) -> bool: ...
    def eligible(self, backups: bool) -> bool: ...
    def srtt_or_max(self) -> int: ...
    def loss_estimate(self) -> float: ...

@final
class SchedContext:
    """What a scheduler sees of the connection."""

    now: int
    subflows: tuple[SubflowView, ...]
    unscheduled: int
    window_room: int
    next_len: int
    next_priority: int
    hol_subflow: int | None
    hol_sent_on: int
    send_window: int
    def backups_in_use(self) -> bool: ...

@final
class Window:
    """Congestion window, slow-start threshold and segment size, bytes."""

    cwnd: int
    ssthresh: int
    mss: int
    def __new__(cls, cwnd: int, ssthresh: int, mss: int) -> Window: ...
    def in_slow_start(self) -> bool: ...

@final
class SubflowState:
    """One subflow of the connection as a controller sees it."""

    cwnd: int
    ssthresh: int
    mss: int
    srtt: int | None
    active: bool
    in_recovery: bool
    inter_loss_bytes: int

@final
class AckContext:
    now: int
    bytes_acked: int
    in_flight: int
    srtt: int | None
    min_rtt: int | None
    me: int
    subflows: tuple[SubflowState, ...]
    received_at: int
    cw_echo: bool

@final
class LossContext:
    now: int
    in_flight: int
    srtt: int | None
    min_rtt: int | None
    me: int
    subflows: tuple[SubflowState, ...]
    cw_echo: bool
