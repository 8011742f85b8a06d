"""The one exception users of mpsim need to know about.

Every problem with a scenario -- a file that cannot be read, TOML that does not parse, a key
that does not exist, a value with the wrong unit -- is reported as :class:`ScenarioError`.
It tells *where* (the file or other source), *which key* (such as ``link[1].rate``) and
*what* is wrong, so that a command-line tool can print it as a single line.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ScenarioError"]


class ScenarioError(ValueError):
    """A scenario is invalid or cannot be read.

    Attributes:
        origin: where the scenario came from: a file name, ``"<string>"`` or ``"<dict>"``.
        key: the offending key path, e.g. ``"link[1].rate"`` or ``"flow.f1.cc"``; empty when
            the problem concerns the whole source (missing file, not TOML, ...).
        message: what is wrong, in plain words.

    ``str(error)`` is ``"origin: key: message"``, or ``"origin: message"`` without a key.
    Being a :class:`ValueError`, it is caught by code that handles bad values generally.
    """

    origin: str
    key: str
    message: str

    def __init__(self, origin: str, key: str, message: str) -> None:
        super().__init__(origin, key, message)
        self.origin = str(origin)
        self.key = str(key)
        self.message = str(message)

    def __str__(self) -> str:
        if self.key:
            return f"{self.origin}: {self.key}: {self.message}"
        return f"{self.origin}: {self.message}"

    def __repr__(self) -> str:
        return f"ScenarioError({self.origin!r}, {self.key!r}, {self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Explicit, so errors raised in worker processes survive the trip back.
        return (type(self), (self.origin, self.key, self.message))

    def with_message(self, message: str) -> "ScenarioError":
        """A copy of this error with another message (same origin and key)."""
        return ScenarioError(self.origin, self.key, message)


def from_core(exc: BaseException) -> ScenarioError:
    """Converts a ``mpsim._core.ScenarioError`` (args ``(origin, key, message)``)."""
    args = tuple(getattr(exc, "args", ()))
    if len(args) == 3:
        return ScenarioError(*(str(a) for a in args))
    # Defensive: an unexpected shape still becomes a readable error.
    return ScenarioError("<scenario>", "", " ".join(str(a) for a in args) or repr(exc))
