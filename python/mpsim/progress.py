"""The ``progress`` argument, with one meaning for :func:`mpsim.run` and :func:`mpsim.sweep`.

* ``None`` (the default): a progress bar on stderr, only when stderr is a terminal and the
  work has taken longer than :data:`AUTO_PROGRESS_AFTER_S`;
* ``True``: always a bar on stderr; ``False``: never;
* a callable: called now and then with the fraction done (0..1), last with 1.0 when the
  work is complete; an exception it raises stops the work and propagates.

A run reports the fraction of its simulated time (the core calls :meth:`Progress.callback`'s
function); a sweep the fraction of its runs finished (:meth:`Progress.item` per run). Both
:mod:`mpsim.api` and :mod:`mpsim.sweeping.engine` use this module, which imports neither;
tqdm is imported only when a bar is shown.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Union

__all__ = ["ProgressArg", "AUTO_PROGRESS_AFTER_S", "Progress", "check", "stderr_is_tty"]

#: ``progress`` argument: None (automatic), a bool, or a callable taking the fraction done.
ProgressArg = Union[None, bool, Callable[[float], Any]]

#: The automatic progress bar appears only once the work has taken this many wall seconds.
AUTO_PROGRESS_AFTER_S = 2.0


def check(mode: Any) -> None:
    """Raises TypeError unless *mode* is a ``progress`` argument: None, a bool or a callable."""
    if not (mode is None or isinstance(mode, bool) or callable(mode)):
        raise TypeError(f"progress must be None, True, False or a callable taking the fraction done, not {type(mode).__name__}")


def stderr_is_tty() -> bool:
    """Whether stderr is a terminal (False when there is no stderr or it cannot tell)."""
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """Reports the progress of a run or a sweep as the ``progress`` argument asks.

    Args:
        mode: the ``progress`` argument (see the module documentation).
        desc: the bar's label.
        total: the number of items (a sweep's runs); None for a run, whose progress is the
            fraction the core reports.
        unit: what an item is called on the bar (``"run"``).

    Raises:
        TypeError: *mode* is neither None, a bool nor a callable.
    """

    def __init__(self, mode: ProgressArg, desc: str, total: int | None = None, unit: str = "it") -> None:
        check(mode)
        self.desc = desc
        self.total = total
        self.unit = unit
        #: the caller's function of the fraction done, or None
        self.user: Callable[[float], Any] | None = mode if callable(mode) and not isinstance(mode, bool) else None
        self.auto = mode is None and stderr_is_tty()
        self.bar: Any = None
        self.start = time.monotonic()
        self.shown = 0  # percent on the bar (a run)
        self.done = 0  # items finished (a sweep)
        self.failed = 0
        self.told: float | None = None  # the last fraction handed to self.user
        if mode is True:
            self._open()

    # -- a run: fractions from the core --

    def callback(self) -> Callable[[float], Any] | None:
        """The function for the core, called with the fraction of the simulated time done
        (last with 1.0), or None when nothing is to be reported."""
        if self.user is not None:
            return self.user
        if self.bar is not None or self.auto:
            return self._fraction
        return None

    def _fraction(self, frac: float) -> None:
        if self.bar is None and self._due():
            self._open()
        if self.bar is not None:
            pct = max(0, min(100, int(frac * 100)))
            if pct > self.shown:
                self.bar.update(pct - self.shown)
                self.shown = pct

    # -- a sweep: items (runs) finished --

    def item(self, ok: bool = True) -> None:
        """One item finished (*ok* False: it failed, which the bar counts apart)."""
        self.done += 1
        if not ok:
            self.failed += 1
        if self.user is not None:
            self._tell(self.done / self.total if self.total else 1.0)
        if self.bar is not None:
            if not ok:
                self.bar.set_postfix_str(f"{self.failed} failed", refresh=False)
            self.bar.update(1)
        elif self._due():
            self._open()  # showing the items done so far

    def finish(self) -> None:
        """The work is complete: a callable hears 1.0 if it has not already."""
        if self.user is not None and self.told != 1.0:
            self._tell(1.0)

    def _tell(self, frac: float) -> None:
        assert self.user is not None
        self.told = frac
        self.user(frac)

    # -- the bar --

    def _due(self) -> bool:
        return self.auto and time.monotonic() - self.start >= AUTO_PROGRESS_AFTER_S

    def _open(self) -> None:
        from tqdm.auto import tqdm

        if self.total is None:  # a run: percent of its simulated time
            self.bar = tqdm(
                total=100,
                desc=self.desc,
                file=sys.stderr,
                leave=False,
                smoothing=0,  # average speed since the start: updates come in uneven steps
                bar_format="{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]",
                delay=1e9,  # no display yet: first make the clock count from the start of the work
            )
        else:  # a sweep: items done, failed, rate and time left
            self.bar = tqdm(total=self.total, desc=self.desc, unit=self.unit, file=sys.stderr, smoothing=0.05,
                            dynamic_ncols=True, delay=1e9)
        self.bar.start_t -= time.monotonic() - self.start
        self.bar.delay = 0
        if self.total is not None and self.done:
            if self.failed:
                self.bar.set_postfix_str(f"{self.failed} failed", refresh=False)
            self.bar.update(self.done)
        else:
            self.bar.refresh()  # show it at once

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
