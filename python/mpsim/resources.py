"""What a run will cost, and whether this machine can afford it.

The core estimates a run from its scenario (events, and its own peak memory: flow state,
send buffers, time series, trace; see ``crates/mpsim-core/src/estimate.rs``). This module
adds what Python pays for the tables the run returns, compares the total with the memory
this machine has available, and warns, or refuses the run, before it starts:

* more than :data:`WARN_FRACTION` of the available memory: a :class:`MemoryWarning`;
* more than all of it: a :class:`~mpsim.ScenarioError` saying what to change, unless the
  check is turned off (``mpsim run --no-memory-check``, ``mpsim.run(..., memory_check=False)``).

The environment variable ``MPSIM_MEMORY_LIMIT`` (bytes, or a size such as ``"8GB"``)
replaces the machine's available memory in this comparison, e.g. to keep runs on a shared
machine within a budget.
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

#: Python's cost per value of a series or trace table handed over by the core (a float or
#: int object and its list slot, then the DataFrame column), and per row (the name string).
PY_BYTES_PER_VALUE = 48
PY_BYTES_PER_ROW = 64
#: The interpreter with pandas loaded, before any run.
PY_BASE_BYTES = 150 << 20

_SIZE = re.compile(r"^\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*([kmgt]i?b?|b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
          "ki": 1024, "kib": 1024, "mi": 1024**2, "mib": 1024**2, "gi": 1024**3, "gib": 1024**3}


class MemoryWarning(UserWarning):
    """A run is estimated to need a large share of this machine's memory."""


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
