"""mpsim: a fast, faithful packet-level simulator of multipath transport.

Quick start::

    import mpsim
    res = mpsim.run("dumbbell.toml", link__bottleneck__loss="2%")   # or a TOML string or a dict
    print(res.flows[["flow", "goodput_bps", "retransmits"]])
    df = mpsim.sweep("dumbbell.toml", {"link.bottleneck.loss": ["0.5%", "1%", "2%"]}, seeds=5).frame
    report = mpsim.sweep("dumbbell.toml", {"link.bottleneck.loss": ["0.5%", "1%"]}, seeds=100, out="study")
    df = mpsim.load_sweep("study")       # or report.frame, or mpsim.query("study", "SELECT ... FROM flows")
    side = mpsim.kernel.compare("scenario.toml", repeat=3)   # as root: the same scenario on Linux

:func:`mpsim.sweep` returns a :class:`SweepReport` whatever ``out`` is: the runs done,
skipped, failed and retried, and the rows (one per run and flow) as the DataFrame
``report.frame``, held in memory or, with ``out=FOLDER``, read back from the folder.

``progress`` means the same to :func:`mpsim.run` and :func:`mpsim.sweep`: None (the default)
shows a bar on stderr only when stderr is a terminal and the work takes longer than about
2 s, True always, False never, and a callable is called with the fraction done (0..1),
last with 1.0.

Every problem with a scenario is raised as :class:`mpsim.ScenarioError` (a ``ValueError``)
naming the source, the key and what is wrong.
"""

import os

from ._core import AckContext, LossContext, PluginError, SchedContext, SubflowState, SubflowView, Window, __version__
from .api import FORMATS, Result, SweepReport, aggregate, check, components, load_sweep, query, run, sweep
from . import kernel
from .errors import ScenarioError
from .plugins import register_controller, register_receiver, register_scheduler
from .scenario import apply_overrides, load, parse_value



def scenario_file(name: str) -> "os.PathLike[str]":
    """The path of a scenario shipped with mpsim, relative to ``scenarios/``, e.g.
    ``mpsim.scenario_file("mptcp/rcvbuf_blocking.toml")`` (see :mod:`mpsim.shipped`)."""
    from .shipped import scenario_file as find

    return find(name)


__all__ = [
    "__version__",
    "ScenarioError",
    "Result",
    "FORMATS",
    "run",
    "check",
    "sweep",
    "SweepReport",
    "load_sweep",
    "query",
    "aggregate",
    "components",
    "load",
    "apply_overrides",
    "parse_value",
    "scenario_file",
    "register_scheduler",
    "register_controller",
    "register_receiver",
    "PluginError",
    "SchedContext",
    "SubflowView",
    "Window",
    "AckContext",
    "LossContext",
    "SubflowState",
    "kernel",
]
