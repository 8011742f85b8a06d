"""What a run will cost, and whether this machine can afford it.

The core estimates a run from its scenario (events, and its own peak memory: flow state,
send buffers, time series, trace; see ``crates/mpsim-core/src/estimate.rs``). This module
adds what Python pays for the tables the run returns, compares the total with the memory
this machine has available, and warns, or refuses the run, before it starts:

* more than :data:`WARN_FRACTION` of the available memory: a :class:`MemoryWarning`;
* more than all of it: a :class:`~mpsim.ScenarioError` saying what to change, unless the
  check is turned off (``mpsim run --no-memory-check``, ``mpsim.run(..., memory_check=False)``).

The available memory is the smallest of the kernel's MemAvailable, what this process's
cgroup may still take (``memory.max`` less ``memory.current``: containers, batch schedulers)
and what its address-space limit (``ulimit -v``, RLIMIT_AS) leaves. The environment variable
``MPSIM_MEMORY_LIMIT`` (bytes, or a size such as ``"8GB"``) replaces it in this comparison,
e.g. to keep runs on a shared machine within a budget.

The events a run will process are its time: the core handles a few million a second (see
``benches/results/speed.md``). A source that ticks far faster than its path carries (an
on/off source with nanosecond periods, 1-byte writes at 1 Tbit/s) can make a short scenario
take hours, so the estimated events are checked too, and the flow, link or sampling interval
that costs the most of them is named:

* more than :data:`EVENT_WARN`: a :class:`SlowRunWarning`;
* more than :data:`EVENT_LIMIT` (or ``MPSIM_EVENT_LIMIT``): a :class:`~mpsim.ScenarioError`,
  unless the check is turned off (``mpsim run --no-event-check``,
  ``mpsim.run(..., event_check=False)``).
"""

from __future__ import annotations

import os
import platform
import re
import sys
from typing import Any, Mapping

from .errors import ScenarioError

__all__ = [
    "MemoryWarning",
    "SlowRunWarning",
    "EVENT_WARN",
    "EVENT_LIMIT",
    "event_limit",
    "check_events",
    "WARN_FRACTION",
    "available_memory",
    "total_bytes",
    "check_memory",
    "table_bytes",
    "describe",
    "peak_rss_bytes",
    "host_info",
]

#: Warn when a run is estimated to need more than this share of the available memory.
WARN_FRACTION = 0.5

#: Python's cost per value of a series or trace table handed over by the core (its 8 bytes
#: in the Arrow buffer the core hands over, then in the DataFrame column), and per row (the
#: name's bytes and offset, in the buffer and in the DataFrame).
PY_BYTES_PER_VALUE = 16
PY_BYTES_PER_ROW = 24
#: The interpreter with pandas loaded, before any run.
PY_BASE_BYTES = 150 << 20

_SIZE = re.compile(r"^\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*([kmgt]i?b?|b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
          "ki": 1024, "kib": 1024, "mi": 1024**2, "mib": 1024**2, "gi": 1024**3, "gib": 1024**3}


#: Warn when a run is estimated to process more events than this (a few minutes).
EVENT_WARN = 1_000_000_000
#: Refuse a run estimated to process more events than this (about an hour or more), unless
#: ``MPSIM_EVENT_LIMIT`` says otherwise or the check is off.
EVENT_LIMIT = 20_000_000_000


class MemoryWarning(UserWarning):
    """A run is estimated to need a large share of this machine's memory."""


class SlowRunWarning(UserWarning):
    """A run is estimated to process so many events that it will take minutes or more."""


def available_memory() -> int | None:
    """Bytes of memory available for a run: ``MPSIM_MEMORY_LIMIT`` if set, else the
    kernel's MemAvailable (Linux), else the physical memory; None if unknown.

    Raises:
        ScenarioError: ``MPSIM_MEMORY_LIMIT`` is set to something that is not a size.
    """
    env = os.environ.get("MPSIM_MEMORY_LIMIT")
    if env:
        m = _SIZE.match(env)
        unit = (m.group(2) or "").lower() if m else ""
        if not m or unit not in _UNITS:
            raise ScenarioError("MPSIM_MEMORY_LIMIT", "", f"{env!r} is not a size like 8GB or 8000000000")
        return int(float(m.group(1)) * _UNITS[unit])
    limits = [x for x in (_mem_available(), _cgroup_room(), _address_space_room()) if x is not None]
    return min(limits) if limits else None


def _mem_available() -> int | None:
    """The kernel's MemAvailable (Linux), else the physical memory."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as f:
            text = f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None  # "max" (no limit) and garbage: None


def _cgroup_room(root: str = "/sys/fs/cgroup", membership: str = "/proc/self/cgroup") -> int | None:
    """What this process's cgroup (v2, else v1) may still take: its limit less its usage;
    None without a limit."""
    try:
        with open(membership, encoding="ascii") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":  # v2: one hierarchy; a limit may sit on any ancestor
            rooms = []
            p = path
            while True:
                d = os.path.join(root, p.lstrip("/"))
                limit, used = _read_int(os.path.join(d, "memory.max")), _read_int(os.path.join(d, "memory.current"))
                if limit is not None:
                    rooms.append(max(limit - (used or 0), 0))
                if p in ("/", ""):
                    break
                p = os.path.dirname(p)
            if rooms:
                return min(rooms)
        elif "memory" in controllers.split(","):
            for d in (os.path.join(root, "memory", path.lstrip("/")), os.path.join(root, "memory")):
                limit = _read_int(os.path.join(d, "memory.limit_in_bytes"))
                if limit is not None and limit < 1 << 60:  # v1 says "no limit" with a huge number
                    used = _read_int(os.path.join(d, "memory.usage_in_bytes")) or 0
                    return max(limit - used, 0)
    return None


def _address_space_room() -> int | None:
    """What RLIMIT_AS (ulimit -v) leaves of this process's address space; None without one."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        size = 0
    return max(soft - size, 0)


def total_bytes(estimate: Mapping[str, Any]) -> int:
    """The estimated peak memory of a run from Python: the core's estimate, plus the
    Python tables built from the series and the trace, plus the interpreter."""
    values = int(estimate.get("series_values", 0)) + int(estimate.get("trace_values", 0))
    rows = int(estimate.get("series_rows", 0)) + int(estimate.get("trace_rows", 0))
    return int(estimate.get("memory_bytes", 0)) + values * PY_BYTES_PER_VALUE + rows * PY_BYTES_PER_ROW + PY_BASE_BYTES


def _gb(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.0f} MB"


def describe(estimate: Mapping[str, Any]) -> str:
    """One line: events and the peak memory with its largest parts."""
    parts = [("flow state and buffers", estimate.get("state_bytes", 0)),
             ("time series", estimate.get("series_bytes", 0)),
             ("packet trace", estimate.get("trace_bytes", 0))]
    big = ", ".join(f"{name} {_gb(b)}" for name, b in parts if b >= 50e6)
    return (f"about {int(estimate.get('events', 0)):,} events and {_gb(total_bytes(estimate))} of memory"
            + (f" ({big})" if big else ""))


def table_bytes(estimate: Mapping[str, Any]) -> int:
    """Of :func:`total_bytes`: the series and the trace, in the core and in Python."""
    values = int(estimate.get("series_values", 0)) + int(estimate.get("trace_values", 0))
    rows = int(estimate.get("series_rows", 0)) + int(estimate.get("trace_rows", 0))
    core = int(estimate.get("series_bytes", 0)) + int(estimate.get("trace_bytes", 0))
    return core + values * PY_BYTES_PER_VALUE + rows * PY_BYTES_PER_ROW


def check_memory(estimate: Mapping[str, Any], origin: str) -> str | None:
    """Compares a run's estimate with the available memory.

    Returns:
        a warning text when the run needs more than :data:`WARN_FRACTION` of it, else None.

    Raises:
        ScenarioError: the run would need more memory than is available.
    """
    avail = available_memory()
    if avail is None:
        return None
    need = total_bytes(estimate)
    if need > avail:
        # when the series and the trace are most of it, streaming them to disk is the fix
        stream = ""
        if not estimate.get("stream") and table_bytes(estimate) > need / 2:
            stream = ("stream the series and the trace to disk (mpsim run --out DIR --stream; "
                      "stream=DIR in Python), ")
        raise ScenarioError(
            origin, "",
            f"this run would need {describe(estimate)}, more than the {_gb(avail)} available; {stream}shorten "
            "`duration`, lengthen `metrics.interval` (or set it to 0), turn `metrics.trace` off or "
            "lower `snd_buf`, or run anyway with --no-memory-check (memory_check=False in Python)",
        )
    if need > WARN_FRACTION * avail:
        return f"{origin}: this run may need {describe(estimate)}, over half of the {_gb(avail)} available"
    return None


def event_limit() -> int:
    """Estimated events above which a run is refused: ``MPSIM_EVENT_LIMIT`` if set, else
    :data:`EVENT_LIMIT`.

    Raises:
        ScenarioError: ``MPSIM_EVENT_LIMIT`` is not a positive whole number.
    """
    env = os.environ.get("MPSIM_EVENT_LIMIT")
    if not env:
        return EVENT_LIMIT
    try:
        n = int(float(env))
    except ValueError:
        n = 0
    if n <= 0:
        raise ScenarioError("MPSIM_EVENT_LIMIT", "", f"{env!r} is not a positive number of events like 5e9")
    return n


def events_cause(estimate: Mapping[str, Any]) -> str:
    """What costs the most of a run's estimated events: a flow, a link or the sampling."""
    causes = [
        (int(estimate.get("top_flow_events", 0)), f"flow '{estimate.get('top_flow', '')}'"),
        (int(estimate.get("top_link_events", 0)), f"link '{estimate.get('top_link', '')}'"),
        (int(estimate.get("sample_events", 0)), "metrics.interval"),
    ]
    n, what = max(causes, key=lambda c: c[0])
    return f"{what} ({n:,} of them)" if n > 0 else ""


def check_events(estimate: Mapping[str, Any], origin: str) -> str | None:
    """Compares a run's estimated events with :data:`EVENT_WARN` and :func:`event_limit`.

    Returns:
        a warning text above :data:`EVENT_WARN`, else None.

    Raises:
        ScenarioError: the run is estimated above the limit.
    """
    events = int(estimate.get("events", 0))
    limit = event_limit()
    if events <= min(EVENT_WARN, limit):
        return None
    cause = events_cause(estimate)
    text = f"this run is estimated at {events:,} events" + (f", most from {cause}" if cause else "")
    if events > limit:
        raise ScenarioError(
            origin, "",
            f"{text}: more than the limit of {limit:,}; slow the sources that tick far "
            "faster than their paths carry (rates, packet sizes, on/off periods), shorten `duration` or "
            "lengthen `metrics.interval`, or run anyway with --no-event-check (event_check=False in Python; "
            "MPSIM_EVENT_LIMIT sets the limit)",
        )
    return f"{origin}: {text}; at a few million events a second it will take minutes or more"


def peak_rss_bytes() -> int | None:
    """The peak resident memory of this process so far, in bytes (None if unknown)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def host_info() -> dict[str, Any]:
    """What the machine, not the scenario, determines: for the run-info record."""
    from . import __version__

    return {
        "mpsim_version": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }
