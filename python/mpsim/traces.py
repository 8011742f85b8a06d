"""Link capacity traces in Mahimahi's format: make, read, summarise and draw them.

A trace file has one line per delivery opportunity, the time in whole milliseconds from the
start of the trace; each opportunity lets 1500 bytes leave the link's queue, several in one
millisecond repeat the timestamp, and the trace repeats with its last timestamp as period. A
``[[link]]`` follows one with ``trace = "FILE"`` (the data direction) and ``reverse_trace``
(see docs/traces.md for how the simulator applies it).

* :func:`generate` writes a synthetic trace: a constant rate, or a rate that jumps between a
  few states (a Markov chain with exponential holding times), from a seed;
* :func:`load` reads a trace's timestamps with the simulator's own reader (same checks,
  same messages);
* :func:`summary` gives its opportunities, length and mean capacity;
* :func:`capacity` bins it into capacity over time, and :func:`plot` draws that.

The command line has the same as ``mpsim trace-gen`` and ``mpsim trace-summary``.
"""

from __future__ import annotations

import math
import os
import random
import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, Union

from . import _core

__all__ = ["OPPORTUNITY_BYTES", "generate", "load", "summary", "capacity", "plot", "parse_rate", "parse_duration"]

#: Bytes one delivery opportunity lets through.
OPPORTUNITY_BYTES = 1500
_OPPORTUNITY_BITS = OPPORTUNITY_BYTES * 8

#: The longest trace :func:`generate` writes (the longest scenario duration).
MAX_GENERATED_S = 1_000_000

PathLike = Union[str, "os.PathLike[str]"]

_NUMBER = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_RATE = re.compile(rf"^\s*{_NUMBER}\s*(bps|kbps|mbps|gbps|bit/s|kbit/s|mbit/s|gbit/s)?\s*$", re.IGNORECASE)
_RATE_UNITS = {"bps": 1, "bit/s": 1, "kbps": 1e3, "kbit/s": 1e3, "mbps": 1e6, "mbit/s": 1e6, "gbps": 1e9, "gbit/s": 1e9}
_DURATION = re.compile(rf"^\s*{_NUMBER}\s*(s|ms|min)?\s*$", re.IGNORECASE)
_DURATION_UNITS = {"s": 1.0, "ms": 1e-3, "min": 60.0}


def parse_rate(value: str | float | int, what: str = "rate") -> int:
    """A rate in bit/s from a number (bit/s) or a string such as ``"12Mbps"``, rounded."""
    if isinstance(value, bool):
        raise ValueError(f"{what}: expected a rate like '12Mbps', found {value!r}")
    if isinstance(value, (int, float)):
        x = float(value)
    else:
        m = _RATE.match(str(value))
        if not m:
            raise ValueError(f"{what}: expected a rate like '12Mbps' or '500kbps', found {value!r}")
        x = float(m.group(1)) * _RATE_UNITS[(m.group(2) or "bps").lower()]
    if not math.isfinite(x) or x < 0 or x > 1e12:
        raise ValueError(f"{what}: must be from 0 to 1 Tbit/s, found {value!r}")
    return round(x)


def parse_duration(value: str | float | int, what: str = "duration") -> float:
    """A duration in seconds from a number (seconds) or a string such as ``"500ms"``."""
    if isinstance(value, bool):
        raise ValueError(f"{what}: expected a duration like '60s', found {value!r}")
    if isinstance(value, (int, float)):
        x = float(value)
    else:
        m = _DURATION.match(str(value))
        if not m:
            raise ValueError(f"{what}: expected a duration like '60s' or '500ms', found {value!r}")
        x = float(m.group(1)) * _DURATION_UNITS[(m.group(2) or "s").lower()]
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"{what}: must be a duration of zero or more, found {value!r}")
    return x


def _states(states: Iterable[Mapping[str, Any]]) -> list[tuple[int, float]]:
    out = []
    for i, st in enumerate(states):
        if not isinstance(st, Mapping):
            raise ValueError(f"states[{i}]: expected a dict like {{'rate': '10Mbps', 'hold': '2s'}}")
        unknown = set(st) - {"rate", "hold"}
        if unknown:
            raise ValueError(f"states[{i}]: unknown key {sorted(unknown)[0]!r}; expected rate and hold")
        if "rate" not in st or "hold" not in st:
            raise ValueError(f"states[{i}]: give both rate and hold (the mean holding time)")
        hold = parse_duration(st["hold"], f"states[{i}].hold")
        if hold <= 0:
            raise ValueError(f"states[{i}].hold: must be longer than zero")
        out.append((parse_rate(st["rate"], f"states[{i}].rate"), hold))
    if not out:
        raise ValueError("states: give at least one state")
    return out


def _hold_ms(rng: random.Random, mean_s: float) -> int:
    """An exponential holding time of mean *mean_s*, in whole milliseconds (at least 1)."""
    return max(1, round(rng.expovariate(1.0 / mean_s) * 1000))


def _rate_per_ms(duration_ms: int, rate: Any, states: Any, seed: int) -> Iterable[int]:
    """The rate (bit/s) in each millisecond of the trace, in order."""
    if states is None:
        r = parse_rate(rate)
        for _ in range(duration_ms):
            yield r
        return
    chain = _states(states)
    rng = random.Random(seed)
    state = 0
    left = _hold_ms(rng, chain[0][1])
    for _ in range(duration_ms):
        yield chain[state][0]
        left -= 1
        if left == 0:
            if len(chain) > 1:
                # on to one of the other states, each as likely
                state = (state + 1 + rng.randrange(len(chain) - 1)) % len(chain)
            left = _hold_ms(rng, chain[state][1])


def generate(
    path: PathLike,
    duration: str | float = "60s",
    *,
    rate: str | float | None = None,
    states: Sequence[Mapping[str, Any]] | None = None,
    seed: int = 1,
) -> dict[str, Any]:
    """Writes a synthetic trace to *path* and returns its :func:`summary`.

    Give either *rate* (a constant rate: ``"12Mbps"`` or bit/s) or *states*, a list of
    ``{"rate": ..., "hold": ...}``: the rate starts in the first state, stays for an
    exponentially distributed time of mean ``hold`` (``"2s"`` or seconds; drawn in whole
    milliseconds, at least one), then moves to one of the other states, each as likely. The
    draws come from Python's ``random.Random(seed)``: the same arguments write the same file.

    Each millisecond m = 1, 2, ..., duration adds its rate's bits to a credit; every 12,000
    bits (one 1500-byte opportunity) of credit become a line ``m``. The mean capacity is
    therefore the rate (or the states' time-weighted rates) up to one opportunity. As in any
    Mahimahi trace the period is the last timestamp, so a trace that ends in a silent state
    repeats without that silence.

    Raises:
        ValueError: a bad rate, duration or state, or a trace without any opportunity.
    """
    if (rate is None) == (states is None):
        raise ValueError("give either rate (a constant rate) or states (a Markov-modulated rate), not both")
    seconds = parse_duration(duration)
    if seconds > MAX_GENERATED_S:
        raise ValueError(f"duration: at most {MAX_GENERATED_S} s")
    duration_ms = round(seconds * 1000)
    if duration_ms < 1:
        raise ValueError("duration: at least 1 ms")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed: expected a whole number, found {seed!r}")
    lines: list[str] = []
    credit = 0  # in millibits: one millisecond at r bit/s adds r
    per_opportunity = _OPPORTUNITY_BITS * 1000
    for m, r in enumerate(_rate_per_ms(duration_ms, rate, states, seed), 1):
        credit += r
        if credit >= per_opportunity:
            k, credit = divmod(credit, per_opportunity)
            lines.extend([f"{m}\n"] * k)
    if not lines:
        raise ValueError("the trace would have no delivery opportunity: raise the rate or the duration")
    Path(path).write_text("".join(lines), encoding="ascii")
    return summary(path)


def load(path: PathLike) -> list[int]:
    """The trace's timestamps in milliseconds, one per delivery opportunity, checked as the
    simulator checks a link's trace (raises ValueError naming the file and line)."""
    return _core.read_link_trace(os.fspath(path))


def _figures(name: str, ms: Sequence[int]) -> dict[str, Any]:
    n, last = len(ms), ms[-1]
    return {
        "file": name,
        "opportunities": n,
        "length_s": last / 1000,
        "mean_mbps": n * _OPPORTUNITY_BITS / (last / 1000) / 1e6,
    }


def summary(path: PathLike) -> dict[str, Any]:
    """``{"file", "opportunities", "length_s", "mean_mbps"}``: the opportunities in one
    period, its length (the last timestamp) and the mean capacity, every opportunity's 1500
    bytes over the length (the figures of the table in the traces' README)."""
    return _figures(Path(path).name, load(path))


def capacity(path: PathLike, bin: str | float = "1s") -> tuple[list[float], list[float]]:
    """Capacity over one period of the trace: the start of each bin (s) and the capacity
    its opportunities give, in Mbit/s."""
    width = parse_duration(bin, "bin")
    if width <= 0:
        raise ValueError("bin: must be longer than zero")
    ms = load(path)
    bins = max(1, math.ceil(ms[-1] / 1000 / width))
    counts = [0] * bins
    for t in ms:
        # an opportunity at the very end of the period belongs to the last bin
        counts[min(int(t / 1000 / width), bins - 1)] += 1
    return [i * width for i in range(bins)], [c * _OPPORTUNITY_BITS / width / 1e6 for c in counts]


def plot(path: PathLike, *, bin: str | float = "1s", ax: Any = None, out: PathLike | None = None, label: str | None = None) -> Any:
    """Draws the trace's capacity over time (Mbit/s per *bin*) with its mean, on *ax* (a new
    figure if None); saves the figure to *out* if given. Returns the axes."""
    import matplotlib

    if ax is None and out is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    starts, mbps = capacity(path, bin)
    info = summary(path)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3))
    width = starts[1] - starts[0] if len(starts) > 1 else info["length_s"]
    ax.step([*starts, starts[-1] + width], [*mbps, mbps[-1]], where="post", label=label or info["file"], linewidth=1)
    ax.axhline(info["mean_mbps"], linestyle="--", linewidth=1, color="gray")
    ax.set_xlabel("time (s)")
    ax.set_ylabel(f"capacity (Mbit/s per {parse_duration(bin, 'bin'):g} s)")
    ax.set_title(f"{info['file']}: mean {info['mean_mbps']:.2f} Mbit/s over {info['length_s']:.1f} s")
    ax.set_xlim(0, starts[-1] + width)
    ax.set_ylim(bottom=0)
    if out is not None:
        ax.figure.tight_layout()
        ax.figure.savefig(out)
    return ax


def plot_goodput(result: Any, link: str, *, bin: str | float = "1s", ax: Any = None, out: PathLike | None = None) -> Any:
    """Draws a run's goodput through a trace-driven link beside the capacity the link's trace
    offered: the trace's capacity per *bin* over the run (repeated as the link repeats it),
    each flow's goodput on the paths that cross *link* (from the subflow series), and their
    total. *result* is what ``mpsim.run`` returned, with time series on (``metrics.interval``).
    Saves to *out* if given; returns the axes."""
    import matplotlib

    if ax is None and out is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    links = {lk.get("name"): lk for lk in result.scenario.get("link", [])}
    if link not in links:
        raise ValueError(f"no link named {link!r} in the run (links: {', '.join(sorted(map(str, links)))})")
    trace = links[link].get("trace")
    if not trace:
        raise ValueError(f"link {link!r} has a fixed rate, not a trace")
    path = Path(trace)
    if not path.is_absolute() and result.origin and Path(str(result.origin)).suffix in (".toml", ".json"):
        path = Path(str(result.origin)).parent / path
    series = result.subflow_series
    if series is None or len(series) == 0:
        raise ValueError("the run has no time series: run it with metrics.interval set (e.g. \"1s\")")
    crossing = {p.get("name") for p in result.scenario.get("path", []) if link in p.get("links", [])}
    duration = float(result.summary["duration_s"])
    starts, mbps = capacity(path, bin)
    width = parse_duration(bin, "bin")
    period = summary(path)["length_s"]
    times, caps = [], []
    k = 0
    while k * period < duration:
        for t0, c in zip(starts, mbps):
            if k * period + t0 < duration:
                times.append(k * period + t0)
                caps.append(c)
        k += 1
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.5))
    ax.step([*times, times[-1] + width], [*caps, caps[-1]], where="post", color="lightgray", linewidth=1.5,
            label=f"capacity of {link} ({path.name})")
    mine = series[series["path"].isin(crossing)]
    total = None
    for flow, g in mine.groupby("flow", sort=False):
        per_t = g.groupby("time_s")["goodput_bps"].sum() / 1e6
        ax.plot(per_t.index, per_t.values, linewidth=1, label=f"{flow} goodput")
        total = per_t if total is None else total.add(per_t, fill_value=0.0)
    if total is not None and mine["flow"].nunique() > 1:
        ax.plot(total.index, total.values, color="black", linewidth=1, linestyle="--", label="total goodput")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("Mbit/s")
    ax.set_title(f"goodput through {link} beside its capacity")
    ax.set_xlim(0, duration)
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper right", fontsize="small")
    if out is not None:
        ax.figure.tight_layout()
        ax.figure.savefig(out)
    return ax
