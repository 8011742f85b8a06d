"""The files mpsim ships beside its code: the scenario files under ``scenarios/`` (and any
trace files they name), found through the package with :mod:`importlib.resources`, so they
are the same in a checkout (where ``python/mpsim/scenarios`` links to the top-level
``scenarios/`` folder) and in an installed wheel (which carries a copy).

>>> from mpsim.shipped import scenario_file, scenario_names
>>> scenario_file("mptcp/rcvbuf_blocking.toml").name
'rcvbuf_blocking.toml'
>>> "buffer_size/two_paths.toml" in scenario_names()
True
"""

from __future__ import annotations

import atexit
import sys
import contextlib
from importlib.resources import as_file, files
from pathlib import Path

__all__ = ["scenarios_dir", "scenario_file", "scenario_names"]

_extracted = contextlib.ExitStack()
atexit.register(_extracted.close)
_root: Path | None = None


def scenarios_dir() -> Path:
    """The folder of shipped scenarios, as a real path (extracted once if the package is
    imported from an archive)."""
    global _root
    if _root is None:
        res = files("mpsim").joinpath("scenarios")
        _root = res if isinstance(res, Path) else Path(_extracted.enter_context(as_file(res)))
    return _root


def scenario_file(name: str) -> Path:
    """The path of a shipped scenario, given relative to ``scenarios/`` (``"dqs/four_paths.toml"``;
    the ``.toml`` may be left out).

    Raises:
        FileNotFoundError: no such shipped scenario (the message lists them).
    """
    rel = name if name.endswith(".toml") else name + ".toml"
    p = scenarios_dir() / rel
    if not p.is_file():
        raise FileNotFoundError(f"no shipped scenario '{name}'; shipped: {', '.join(scenario_names())}")
    return p


def scenario_names() -> list[str]:
    """The shipped scenarios, relative to ``scenarios/``, sorted."""
    root = scenarios_dir()
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.toml"))


def _main(argv: list[str]) -> int:
    """``python -m mpsim.shipped [NAME ...]``: prints the path of each named shipped scenario,
    or the names of all of them."""
    try:
        for line in [str(scenario_file(n)) for n in argv] if argv else scenario_names():
            print(line)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
