"""mpsim: a fast, faithful packet-level simulator of multipath transport.

Quick start::

    import mpsim
    res = mpsim.run("dumbbell.toml", link__bottleneck__loss="2%")   # or a TOML string or a dict
    print(res.flows[["flow", "goodput_bps", "retransmits"]])
    df = mpsim.sweep("dumbbell.toml", {"link.bottleneck.loss": ["0.5%", "1%", "2%"]}, seeds=5)
    side = mpsim.kernel("scenario.toml", repeat=3)   # as root: the same scenario on Linux

Every problem with a scenario is raised as :class:`mpsim.ScenarioError` (a ``ValueError``)
naming the source, the key and what is wrong.
"""

from ._core import __version__
from .api import FORMATS, Result, aggregate, check, components, run, sweep
from . import kernel
from .errors import ScenarioError
from .scenario import apply_overrides, load, parse_value

__all__ = [
    "__version__",
    "ScenarioError",
    "Result",
    "FORMATS",
    "run",
    "check",
    "sweep",
    "aggregate",
    "components",
    "load",
    "apply_overrides",
    "parse_value",
    "kernel",
]
