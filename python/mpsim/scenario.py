"""Reading scenarios and changing them with dotted-key overrides.

A scenario reaches mpsim in one of three forms:

* a path to a ``.toml`` file (``str`` or :class:`pathlib.Path`),
* TOML text (a ``str`` that is not an existing file and contains a newline or ``=``),
* a ``dict`` with the same structure as the TOML file.

:func:`load` turns any of them into a plain dict plus an *origin* (the file name, or
``"<string>"`` / ``"<dict>"``) used in error messages. :func:`apply_overrides` changes
single values by dotted keys such as ``link.bottleneck.loss`` before a run; the simulator
core then validates the result and reports problems as :class:`~mpsim.ScenarioError`.

Override keys
-------------
A key is a dotted path through the scenario:

* ``duration``, ``seed``, ``name``: top-level values;
* ``tcp.min_rto``, ``metrics.interval``: keys of the top-level tables;
* ``link.bottleneck.loss``, ``link.1.loss``: an element of an array of tables
  (``[[link]]``, ``[[path]]``, ``[[flow]]``) picked by its ``name`` or by its 0-based index;
  flows without a name are called ``flow0``, ``flow1``, ... as in the simulator;
* ``flow.*.tcp.min_rto``: ``*`` picks every element.

Missing intermediate tables are created (``flow.f1.tcp.mss`` works when flow ``f1`` has no
``tcp`` table yet); a key naming an element that does not exist is an error naming the key.
Values are used as given: strings with units (``"2%"``, ``"20ms"``), numbers, booleans,
lists and dicts.
"""

from __future__ import annotations

import copy
import datetime as _dt
import json
import math
import os
import re
import stat
import sys
import tomllib
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterable, Mapping, Union

from .errors import ScenarioError

__all__ = [
    "ScenarioLike",
    "load",
    "load_file",
    "apply_overrides",
    "kwargs_to_overrides",
    "parse_value",
    "to_json",
]

#: Anything :func:`load` accepts.
ScenarioLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]

#: The top-level keys holding arrays of tables, addressed by element name or index.
ARRAY_TABLES = ("link", "path", "flow")

#: Scenario files are small; anything larger is almost certainly the wrong file.
_MAX_FILE_BYTES = 16 * 1024 * 1024

#: The largest frame-size trace a media flow may read (``trace = "FILE"``), and the most
#: frames it may list (the core's limit on a media pattern).
MAX_TRACE_BYTES = 16 * 1024 * 1024
MAX_TRACE_FRAMES = 1_000_000

_TOML_POSITION = re.compile(r"\s*\(at (line \d+, column \d+|end of document)\)\s*$")


# -------------------------------------------------------------------------------------
# Loading


def load(scenario: ScenarioLike) -> tuple[dict[str, Any], str]:
    """Reads a scenario into a dict.

    Args:
        scenario: a path to a TOML file (``str`` or ``os.PathLike``), TOML text, or a
            mapping (deep-copied, so the caller's object is never changed).

    Returns:
        ``(scenario_dict, origin)`` where *origin* names the source in error messages:
        the path as given, ``"<string>"`` for TOML text, ``"<dict>"`` for a mapping.

    Raises:
        ScenarioError: the file is missing, is a directory, is not a text file, is empty
            or is not valid TOML (the message then gives the line number).
        TypeError: *scenario* is of none of the accepted types.

    The content is *not* validated here; :func:`mpsim.check` does that.
    """
    if isinstance(scenario, Mapping):
        d = copy.deepcopy(dict(scenario))
        expand_frame_traces(d, Path.cwd(), "<dict>")
        return d, "<dict>"
    if isinstance(scenario, os.PathLike):
        return _load_file(Path(scenario), os.fspath(scenario))
    if isinstance(scenario, str):
        if _looks_like_file(scenario):
            return _load_file(Path(scenario), scenario)
        if "\n" in scenario or "=" in scenario:
            d = _parse_toml(scenario, "<string>")
            expand_frame_traces(d, Path.cwd(), "<string>")
            return d, "<string>"
        if not scenario.strip():
            raise ScenarioError("<string>", "", "the scenario is empty: give a file name, TOML text or a dict")
        return _load_file(Path(scenario), scenario)  # reports the missing file
    raise TypeError(
        f"a scenario is a path, TOML text or a dict, not {type(scenario).__name__}"
    )


def _looks_like_file(s: str) -> bool:
    try:
        return "\n" not in s and os.path.exists(s)
    except (OSError, ValueError):  # e.g. embedded NUL, name too long
        return False


def load_file(path: str | os.PathLike[str]) -> tuple[dict[str, Any], str]:
    """Like :func:`load`, but *path* is always taken as a file name (never as TOML text);
    the origin is the name exactly as given."""
    return _load_file(Path(path), os.fspath(path))


def read_regular_file(path: Path, limit: int, what: str) -> bytes:
    """Reads a regular file of at most *limit* bytes.

    Devices (``/dev/zero``), pipes and terminals (``/dev/stdin``), sockets and directories
    are refused without being read, so reading can neither block nor run without end.

    Raises:
        ValueError: the message says what is wrong, naming *what* the file should be.
        FileNotFoundError, PermissionError, OSError: the file cannot be opened.
    """
    # O_NONBLOCK: opening a FIFO must not wait for a writer before it can be refused
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ValueError(f"is a directory, not {what}")
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"is not a regular file ({_file_kind(st.st_mode)}); {what} must be a regular file")
        if st.st_size > limit:
            raise ValueError(f"is too large to be {what} ({st.st_size / 1e6:.1f} MB; the limit is {limit / 1e6:.1f} MB)")
        chunks = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:  # the file grew while being read
            raise ValueError(f"is too large to be {what} (the limit is {limit / 1e6:.1f} MB)")
        return data
    finally:
        os.close(fd)


def _file_kind(mode: int) -> str:
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"


def _load_file(path: Path, origin: str) -> tuple[dict[str, Any], str]:
    try:
        data = read_regular_file(path, _MAX_FILE_BYTES, "a scenario file")
    except ValueError as e:
        raise ScenarioError(origin, "", str(e)) from None
    except FileNotFoundError:
        raise ScenarioError(origin, "", "no such file") from None
    except PermissionError:
        raise ScenarioError(origin, "", "cannot read the file: permission denied") from None
    except IsADirectoryError:
        raise ScenarioError(origin, "", "is a directory, not a scenario file") from None
    except OSError as e:
        raise ScenarioError(origin, "", f"cannot read the file: {e.strerror or e}") from None
    if b"\x00" in data:
        raise ScenarioError(origin, "", "not a text file (a scenario is a TOML text file)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ScenarioError(origin, "", "not a text file (a scenario is UTF-8 encoded TOML)") from None
    d = _parse_toml(text, origin, "the file")
    expand_frame_traces(d, path.parent, origin)
    resolve_link_traces(d, path.parent)
    return d, origin


#: The link keys that name a file: capacity traces and a schedule (``schedule`` may also be
#: a list of steps, which is left as it is).
LINK_TRACE_KEYS = ("trace", "reverse_trace", "schedule")


def resolve_link_traces(d: dict[str, Any], base_dir: Path) -> None:
    """Makes each link's ``trace``, ``reverse_trace`` and ``schedule`` file name, relative to
    the scenario file's folder, a name the simulator can open from the current directory (the
    folder joined in front, as the scenario's own path is given). Absolute names stay as they
    are; the core reads and checks the files. A dict or TOML text is not changed: its names
    are relative to the current directory."""
    links = d.get("link")
    if not isinstance(links, list):
        return
    for link in links:
        if not isinstance(link, dict):
            continue
        for k in LINK_TRACE_KEYS:
            name = link.get(k)
            if isinstance(name, str) and name and not os.path.isabs(name):
                link[k] = os.path.join(base_dir, name) if str(base_dir) not in ("", ".") else name


def expand_frame_traces(d: dict[str, Any], base_dir: Path, origin: str) -> None:
    """Replaces ``trace = "FILE"`` in a media application by the ``frames`` it lists.

    The file (relative to the scenario's folder) has one frame per line: its type and its size
    in bytes, separated by a space, tab or comma (``I 24000``); blank lines and lines starting
    with ``#`` are skipped. The frames repeat cyclically, as a GOP does. It must be a regular
    file of at most :data:`MAX_TRACE_BYTES` listing at most :data:`MAX_TRACE_FRAMES` frames.
    """
    flows = d.get("flow")
    if not isinstance(flows, list):
        return
    for i, flow in enumerate(flows):
        app = flow.get("app") if isinstance(flow, dict) else None
        if not isinstance(app, dict) or "trace" not in app:
            continue
        key = f"flow[{i}].app.trace"
        if "frames" in app or "gop" in app:
            raise ScenarioError(origin, key, "give one of `trace`, `frames` or `gop`")
        name = app.pop("trace")
        if not isinstance(name, str):
            raise ScenarioError(origin, key, "expected a file name")
        path = base_dir / name
        try:
            text = read_regular_file(path, MAX_TRACE_BYTES, "a frame-size trace").decode("utf-8")
        except ValueError as e:  # includes UnicodeDecodeError
            msg = "is not a text file" if isinstance(e, UnicodeDecodeError) else str(e)
            raise ScenarioError(origin, key, f"{name} {msg}") from None
        except OSError as e:
            raise ScenarioError(origin, key, f"cannot read {name}: {e.strerror or e}") from None
        frames = []
        for n, line in enumerate(text.splitlines(), 1):
            if len(frames) >= MAX_TRACE_FRAMES:
                raise ScenarioError(origin, key, f"{name} lists more than {MAX_TRACE_FRAMES} frames")
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.replace(",", " ").split()
            # ASCII digits only: str.isdigit also takes '²' and other digits int() refuses
            if len(parts) != 2 or not (parts[1].isascii() and parts[1].isdigit()):
                raise ScenarioError(origin, key, f"{name} line {n}: expected a frame type and a size in bytes, like 'I 24000'")
            if len(parts[1]) > 20:  # int() refuses more than 4,300 digits; any such size is far too large
                raise ScenarioError(origin, key, f"{name} line {n}: a frame size of {len(parts[1]):,} digits is far too large")
            frames.append([parts[0], int(parts[1])])
        if not frames:
            raise ScenarioError(origin, key, f"{name} lists no frames")
        app["frames"] = frames


def _parse_toml(text: str, origin: str, what: str = "the scenario") -> dict[str, Any]:
    if not text.strip():
        raise ScenarioError(
            origin, "", f"{what} is empty; a scenario needs at least `duration`, a [[link]], a [[path]] and a [[flow]]"
        )
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = _TOML_POSITION.search(msg)
        if m:
            msg = msg[: m.start()]
            where = m.group(1)
            raise ScenarioError(origin, "", f"not valid TOML ({where}): {msg}") from None
        raise ScenarioError(origin, "", f"not valid TOML: {msg}") from None
    except RecursionError:
        raise ScenarioError(origin, "", "not valid TOML: arrays or inline tables nested too deeply") from None
    except ValueError as e:  # an integer of more than sys.get_int_max_str_digits() digits
        if "digits" not in str(e):
            raise
        raise ScenarioError(origin, "", f"not valid TOML: a number with more than {sys.get_int_max_str_digits():,} digits") from None


# -------------------------------------------------------------------------------------
# Overrides


def kwargs_to_overrides(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Turns Python keyword arguments into override keys: ``__`` stands for ``.``.

    >>> kwargs_to_overrides({"link__bottleneck__loss": "2%", "seed": 3})
    {'link.bottleneck.loss': '2%', 'seed': 3}
    """
    return {k.replace("__", "."): v for k, v in kwargs.items()}


def apply_overrides(
    d: dict[str, Any], overrides: Mapping[str, Any] | None, *, origin: str = "<overrides>"
) -> dict[str, Any]:
    """Sets values in scenario dict *d* by dotted keys; changes *d* in place and returns it.

    See the module documentation for the key syntax. Either every override is applied or,
    on error, *d* is left unchanged.

    Args:
        d: a scenario dict, as returned by :func:`load`.
        overrides: ``{dotted_key: value}``; values are deep-copied into *d*.
        origin: names the scenario in error messages.

    Raises:
        ScenarioError: a key is malformed or names an element that does not exist; the
            error's ``key`` is the override key.

    >>> d = {"link": [{"name": "bn", "rate": "10Mbps"}]}
    >>> apply_overrides(d, {"link.bn.rate": "20Mbps"})["link"][0]["rate"]
    '20Mbps'
    """
    _apply(d, overrides, origin)
    return d


def _apply(d: dict[str, Any], overrides: Mapping[str, Any] | None, origin: str) -> list[tuple[str, str, Any]]:
    """Applies overrides atomically; returns ``(concrete_key, override_key, value)`` per
    element set, where *concrete_key* is spelt like the core's error keys (``link[1].loss``).
    """
    if not overrides:
        return []
    work = copy.deepcopy(d)
    applied: list[tuple[str, str, Any]] = []
    for key, value in overrides.items():
        applied.extend(_apply_one(work, key, value, origin))
    d.clear()
    d.update(work)
    return applied


def _apply_one(d: dict[str, Any], key: str, value: Any, origin: str) -> list[tuple[str, str, Any]]:
    if not isinstance(key, str):
        raise ScenarioError(origin, str(key), "an override key must be a string like 'link.bottleneck.loss'")
    segs = key.split(".")
    if not key or any(not s.strip() for s in segs):
        raise ScenarioError(origin, key, "malformed key: write dotted names like 'link.bottleneck.loss'")

    def fail(msg: str) -> ScenarioError:
        return ScenarioError(origin, key, msg)

    # Each target is (container, concrete key of the container, dotted key walked so far).
    targets: list[tuple[Any, str, str]] = [(d, "", "")]
    for depth, seg in enumerate(segs[:-1]):
        nxt: list[tuple[Any, str, str]] = []
        for node, concrete, walked in targets:
            if isinstance(node, list):
                for i in _select(node, seg, walked, fail):
                    nxt.append((node[i], f"{concrete}[{i}]", _join(walked, seg)))
                continue
            if seg == "*":
                raise fail(f"'*' picks every element of a list of tables such as [[flow]]; '{walked or 'the scenario'}' is a table")
            if seg not in node:
                if depth == 0 and seg in ARRAY_TABLES:
                    raise fail(f"the scenario has no [[{seg}]] entries")
                node[seg] = {}
            child = node[seg]
            here = _join(walked, seg)
            if not isinstance(child, (dict, list)):
                raise fail(f"'{here}' is {_kind(child)}, not a table, so it has no key '{segs[depth + 1]}'")
            if isinstance(child, list) and not all(isinstance(x, dict) for x in child):
                raise fail(f"'{here}' is a list of values, not a list of tables")
            nxt.append((child, _join(concrete, seg), here))
        targets = nxt

    last = segs[-1]
    applied: list[tuple[str, str, Any]] = []
    for node, concrete, walked in targets:
        if isinstance(node, list):
            for i in _select(node, last, walked, fail):
                node[i] = copy.deepcopy(value)
                applied.append((f"{concrete}[{i}]", key, value))
        else:
            if last == "*":
                raise fail(f"'*' picks every element of a list of tables such as [[flow]]; '{walked or 'the scenario'}' is a table")
            node[last] = copy.deepcopy(value)
            applied.append((_join(concrete, last), key, value))
    return applied


def _select(items: list[Any], seg: str, table: str, fail: Any) -> list[int]:
    """Indices of the elements of an array of tables that *seg* picks: ``*``, a name or an
    index (names win over indices, so an element named "2" is found by name)."""
    what = table.rsplit(".", 1)[-1] or "element"
    if seg == "*":
        if not items:
            raise fail(f"'*' matches nothing: there are no [[{what}]] entries")
        return list(range(len(items)))
    named = [i for i, el in enumerate(items) if _element_name(el, i, table) == seg]
    if named:
        return named
    try:
        idx = int(seg)
    except ValueError:
        names = [n for n in (_element_name(el, i, table) for i, el in enumerate(items)) if n is not None]
        listing = f" ({what}s: {', '.join(names)})" if names else f" (there are no [[{what}]] entries)"
        raise fail(f"no {what} named '{seg}'{listing}") from None
    if -len(items) <= idx < len(items):
        return [idx % len(items)]
    raise fail(f"index {idx} is out of range: there are {len(items)} [[{what}]] entries (indices start at 0)")


def _element_name(el: Any, i: int, table: str) -> str | None:
    if not isinstance(el, dict):
        return None
    name = el.get("name")
    if isinstance(name, str):
        return name
    if table == "flow" and name is None:  # the simulator's default flow names
        return f"flow{i}"
    return None


def _join(a: str, b: str) -> str:
    return f"{a}.{b}" if a else b


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "a table"
    return f"a {type(v).__name__}"


def format_value(v: Any) -> str:
    """A short TOML-like rendering of an override value for messages and tables."""
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    try:
        return json.dumps(_plain(v, "", "<value>"))
    except ScenarioError:
        return repr(v)


def annotate(err: ScenarioError, applied: Iterable[tuple[str, str, Any]], what: str = "override") -> ScenarioError:
    """Adds "(set by override KEY = VALUE)" to a core error whose key lies at or below a
    value an override set; returns *err* unchanged otherwise."""
    for concrete, okey, value in applied:
        if err.key == concrete or err.key.startswith((concrete + ".", concrete + "[")):
            return err.with_message(f"{err.message} (set by {what} {okey} = {format_value(value)})")
    return err


def parse_value(text: str) -> Any:
    """Reads a command-line value as a TOML value if it is one, else keeps the raw string.

    ``"3"`` gives ``3``, ``"true"`` gives ``True``, ``'"2%"'`` and ``"2%"`` both give
    ``"2%"``, ``"[1, 2]"`` gives a list and ``"{ model = 'gilbert', mean = '1%', burst = 4 }"``
    a dict.
    """
    try:
        return tomllib.loads(f"v = {text}")["v"]
    # ValueError: also an integer of more than 4,300 digits; RecursionError: "[[[[..."
    except (tomllib.TOMLDecodeError, KeyError, ValueError, RecursionError):
        return text


# -------------------------------------------------------------------------------------
# Conversion for the core


def to_json(d: Mapping[str, Any], origin: str = "<dict>") -> str:
    """Serialises a scenario dict for ``mpsim._core``.

    Beyond JSON's own types this accepts tuples, NumPy scalars and arrays, ``Decimal``,
    ``pathlib`` paths and TOML dates/times (as ISO text).

    Raises:
        ScenarioError: a value cannot be represented (naming its key), e.g. NaN.
    """
    return json.dumps(_plain(d, "", origin), allow_nan=False)


def _plain(v: Any, key: str, origin: str) -> Any:
    if v is None or isinstance(v, (bool, str, int)):
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ScenarioError(origin, key, f"must be a finite number, not {v}")
        return v
    if isinstance(v, Mapping):
        out = {}
        for k, x in v.items():
            if not isinstance(k, str):
                raise ScenarioError(origin, _join(key, str(k)), f"keys must be strings, not {type(k).__name__}")
            out[k] = _plain(x, _join(key, k), origin)
        return out
    if isinstance(v, (list, tuple)):
        return [_plain(x, f"{key}[{i}]", origin) for i, x in enumerate(v)]
    if isinstance(v, Decimal):
        return _plain(float(v), key, origin)
    if isinstance(v, (_dt.datetime, _dt.date, _dt.time)):
        return v.isoformat()
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    tolist = getattr(v, "tolist", None)  # NumPy scalars and arrays, without importing NumPy
    if callable(tolist) and type(v).__module__.startswith("numpy"):
        return _plain(tolist(), key, origin)
    raise ScenarioError(origin, key, f"a value of type {type(v).__name__} cannot be used in a scenario")
