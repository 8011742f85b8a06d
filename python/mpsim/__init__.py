"""mpsim: a fast, faithful packet-level simulator of multipath transport."""

from ._core import ScenarioError, __version__  # noqa: F401
