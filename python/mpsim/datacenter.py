"""Figures of runs over a ``[topology]``: per-host throughput, the ranked-throughput plot,
Jain's index, flow completion times by size, and utilisation, loss and queueing per tier.

A topology's links are named ``"<from>><to>"`` (``h0>e0_0``) and each cable belongs to a tier
named after the layer it climbs to (see docs/datacenter.md)::

    >>> tier_of("fat_tree", "e0_1>a0_0"), tier_of("fat_tree", "c3>a1_1")
    ('aggregation', 'core')
    >>> tier_of("leaf_spine", "h4>l1"), tier_of("dumbbell", "r1>r0")
    ('leaf', 'bottleneck')
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "TIERS",
    "tier_of",
    "direction_of",
    "flow_hosts",
    "access_rate_bps",
    "host_throughput",
    "ranked_throughput",
    "plot_ranked",
    "jain",
    "completion_times",
    "tiers",
    "tier_lines",
]

#: The tiers of each kind of topology, from the hosts up (as the core's ``TOPOLOGIES``).
TIERS: dict[str, tuple[str, ...]] = {
    "fat_tree": ("edge", "aggregation", "core"),
    "leaf_spine": ("leaf", "spine"),
    "vl2": ("tor", "aggregation", "intermediate"),
    "dumbbell": ("access", "bottleneck"),
}

#: Each node's level by the first letter of its name: hosts 0, then the switch layers.
_LEVEL: dict[str, dict[str, int]] = {
    "fat_tree": {"h": 0, "e": 1, "a": 2, "c": 3},
    "leaf_spine": {"h": 0, "l": 1, "s": 2},
    "vl2": {"h": 0, "t": 1, "a": 2, "i": 3},
    "dumbbell": {"h": 0, "r": 1},
}

_FLOW_NAME = re.compile(r"^(h\d+)->(h\d+)(#\d+)?$")


def _kind(scenario: Mapping[str, Any]) -> str:
    top = scenario.get("topology")
    if not isinstance(top, Mapping) or top.get("kind") not in TIERS:
        raise ValueError("the scenario has no [topology]")
    return str(top["kind"])


def _ends(link: str) -> tuple[str, str]:
    a, _, b = link.partition(">")
    return a, b


def tier_of(kind: str, link: str) -> str:
    """The tier of a topology's link (either direction of a cable)."""
    a, b = _ends(link)
    if kind == "dumbbell":
        return "bottleneck" if a[0] == b[0] == "r" else "access"
    level = _LEVEL[kind]
    return TIERS[kind][max(level[a[0]], level[b[0]]) - 1]


def direction_of(kind: str, link: str) -> str:
    """"up" for a link carrying data away from the hosts, "down" towards them (a dumbbell's
    bottleneck: "up" from r0 to r1)."""
    a, b = _ends(link)
    if a[0] == b[0]:
        return "up" if a < b else "down"
    level = _LEVEL[kind]
    return "up" if level[a[0]] < level[b[0]] else "down"


def flow_hosts(result: Any) -> dict[str, tuple[str, str]]:
    """Each flow's (sending host, receiving host): from the generated flows' names
    (``h3->h17``, ``h3->h17#2``) and the ``from``/``to`` of hand-written ones."""
    out: dict[str, tuple[str, str]] = {}
    for i, f in enumerate(result.scenario.get("flow") or []):
        if isinstance(f, Mapping) and "from" in f and "to" in f:
            out[str(f.get("name", f"flow{i}"))] = (str(f["from"]), str(f["to"]))
    for name in result.flows["flow"]:
        m = _FLOW_NAME.match(name)
        if m and name not in out:
            out[name] = (m.group(1), m.group(2))
    return out


def access_rate_bps(scenario: Mapping[str, Any]) -> int:
    """The rate of a host's link into the network (the first tier's)."""
    from .traces import parse_rate

    kind = _kind(scenario)
    top = scenario["topology"]
    own = (top.get("tier") or {}).get(TIERS[kind][0]) or {}
    return parse_rate(own.get("rate", top["rate"]), "topology.rate")


def host_throughput(result: Any) -> "pd.DataFrame":
    """One row per host: ``host``, ``sent_bps`` (goodput of the flows it sends),
    ``received_bps`` and ``fraction`` (sent as a fraction of its access link's rate). Hosts
    that send nothing have 0."""
    import pandas as pd

    kind = _kind(result.scenario)
    rate = access_rate_bps(result.scenario)
    hosts = flow_hosts(result)
    hosts_all = sorted({a for link in result.links["link"] for a in _ends(link) if a.startswith("h")}, key=lambda h: int(h[1:]))
    sent = dict.fromkeys(hosts_all, 0.0)
    received = dict.fromkeys(hosts_all, 0.0)
    for name, goodput in zip(result.flows["flow"], result.flows["goodput_bps"]):
        if name in hosts:
            s, d = hosts[name]
            sent[s] += float(goodput)
            received[d] += float(goodput)
    del kind
    return pd.DataFrame(
        {
            "host": hosts_all,
            "sent_bps": [sent[h] for h in hosts_all],
            "received_bps": [received[h] for h in hosts_all],
            "fraction": [sent[h] / rate for h in hosts_all],
        }
    )


def ranked_throughput(result: Any) -> list[float]:
    """The flows' goodputs in Mbit/s, lowest first (the paper's ranked-throughput curve)."""
    return sorted(float(g) / 1e6 for g in result.flows["goodput_bps"])


def plot_ranked(results: Mapping[str, Any], path: str | os.PathLike[str], title: str | None = None) -> list[Path]:
    """Draws each run's ranked flow throughput (label -> result) as a fraction of the access
    rate into ``path`` (PNG, and SVG beside it); returns the files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .plots import save_figure

    fig, ax = plt.subplots(figsize=(7, 4), constrained_layout=True)
    for label, res in results.items():
        rate = access_rate_bps(res.scenario) / 1e6
        ranked = ranked_throughput(res)
        ax.plot(range(len(ranked)), [r / rate * 100 for r in ranked], label=label, lw=1.5)
    ax.set_xlabel("flow rank")
    ax.set_ylabel("throughput (% of access link)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(title or "ranked flow throughput")
    return save_figure(fig, path)


def jain(values: Iterable[float]) -> float | None:
    """Jain's fairness index (sum x)^2 / (n sum x^2); None for no values or all zero."""
    xs = [float(x) for x in values]
    sq = sum(x * x for x in xs)
    return None if not xs or sq == 0 else sum(xs) ** 2 / (len(xs) * sq)


def completion_times(result: Any, edges: Sequence[float] = (1e4, 1e5, 1e6, 1e7)) -> "pd.DataFrame":
    """Flow completion times by flow size: one row per size bin (bytes, bins cut at
    ``edges``) with ``flows``, ``completed``, ``fct_mean_s``, ``fct_p50_s``, ``fct_p99_s``
    (of the completed flows). Flows without a size (bulk without end) are left out. A flow is
    binned by the bytes its application wrote: its size once it completed, for one still
    running at the end what the send buffer had taken of it."""
    import pandas as pd

    f = result.flows
    sized = f[[name in _sized(result) for name in f["flow"]]]
    bounds = [0.0, *edges, math.inf]
    rows = []
    for lo, hi in zip(bounds, bounds[1:]):
        g = sized[(sized["bytes_written"] >= lo) & (sized["bytes_written"] < hi)]
        if len(g) == 0:
            continue
        done = g[g["complete"]]["completion_time_s"].astype(float)
        rows.append(
            {
                "size_from": lo,
                "size_to": hi,
                "flows": len(g),
                "completed": len(done),
                "fct_mean_s": done.mean() if len(done) else math.nan,
                "fct_p50_s": done.quantile(0.5) if len(done) else math.nan,
                "fct_p99_s": done.quantile(0.99) if len(done) else math.nan,
            }
        )
    return pd.DataFrame(rows)


def _sized(result: Any) -> set[str]:
    """The flows with a size: those of a ``[traffic]`` with ``size``, and hand-written ones
    whose application is a bulk transfer of ``bytes``."""
    sc = result.scenario
    names: set[str] = set()
    if isinstance(sc.get("traffic"), Mapping) and "size" in sc["traffic"]:
        names.update(n for n in result.flows["flow"] if _FLOW_NAME.match(n))
    for i, fl in enumerate(sc.get("flow") or []):
        app = fl.get("app") if isinstance(fl, Mapping) else None
        if isinstance(app, Mapping) and app.get("kind") == "bulk" and "bytes" in app:
            names.add(str(fl.get("name", f"flow{i}")))
    return names


def tiers(result: Any) -> "pd.DataFrame":
    """One row per tier and data direction (up, away from the hosts; down, towards them):
    ``links``, ``utilization_mean``, ``utilization_max``, ``packets``, ``queue_drops``,
    ``loss_drops``, ``drop_rate`` (drops / offered), and ``queue_delay_mean_ms`` where the
    links manage their queue. Only the links' data directions count (ACKs travel the reverse
    ones)."""
    import pandas as pd

    kind = _kind(result.scenario)
    links = result.links
    links = links[links["direction"] == "forward"].copy()
    links["tier"] = [tier_of(kind, n) for n in links["link"]]
    links["updown"] = [direction_of(kind, n) for n in links["link"]]
    rows = []
    for tier in TIERS[kind]:
        for way in ("up", "down"):
            g = links[(links["tier"] == tier) & (links["updown"] == way)]
            if len(g) == 0:
                continue
            offered = int(g["packets_offered"].sum())
            drops = int(g["queue_drops"].sum() + g["loss_drops"].sum())
            row = {
                "tier": tier,
                "direction": way,
                "links": len(g),
                "utilization_mean": float(g["utilization"].mean()),
                "utilization_max": float(g["utilization"].max()),
                "packets": int(g["packets_delivered"].sum()),
                "queue_drops": int(g["queue_drops"].sum()),
                "loss_drops": int(g["loss_drops"].sum()),
                "drop_rate": drops / offered if offered else 0.0,
            }
            if "queue_delay_mean_ms" in g:
                row["queue_delay_mean_ms"] = float(g["queue_delay_mean_ms"].mean())
            rows.append(row)
    return pd.DataFrame(rows)


def tier_lines(result: Any) -> list[str]:
    """The short per-tier summary ``mpsim run`` prints for a topology scenario."""
    t = tiers(result)
    lines = ["tier         dir    links  util mean  util max   drops    drop rate"]
    for r in t.itertuples():
        lines.append(
            f"{r.tier:<12} {r.direction:<5} {r.links:>6}  {r.utilization_mean * 100:8.1f}%  {r.utilization_max * 100:7.1f}%"
            f"  {r.queue_drops + r.loss_drops:>7}  {r.drop_rate * 100:8.3f}%"
        )
    h = host_throughput(result)
    senders = h[h["sent_bps"] > 0]
    if len(senders):
        lines.append(
            f"hosts sending {len(senders)}: throughput {senders['fraction'].mean() * 100:.1f}% of the access link on average"
            f" (lowest {senders['fraction'].min() * 100:.1f}%); Jain's index over hosts {jain(senders['sent_bps']) or 0:.3f}"
        )
    return lines
