"""Schedulers and congestion controllers written in Python.

A **scheduler** is a class whose instances have ``pick(ctx)``: ``ctx`` is a
:class:`~mpsim.SchedContext` and ``ctx.subflows`` a tuple of :class:`~mpsim.SubflowView`,
with the fields of the core's ``SchedContext`` and ``SubflowView`` under the same names and
in the same units (bytes; times and durations as integer nanoseconds; ``None`` before the
first RTT sample). ``pick`` returns the index of the subflow for the next chunk, or None to
wait. Optional methods: ``copies(ctx, chosen)`` returns a bit mask of subflows that also get
a copy of the chunk just sent (0 or None for none); ``on_window_blocked(ctx)`` returns None
or a pair ``(reinject_on, penalize)`` of subflow indexes or None. One instance is made per
connection.

A **congestion controller** is a class with ``on_ack(w, ctx)`` and
``on_congestion(w, event, ctx)``, each returning the new :class:`~mpsim.Window` (``w`` may
be changed in place and returned); ``event`` is ``"fast_retransmit"`` or ``"timeout"``,
``ctx`` an :class:`~mpsim.AckContext` or :class:`~mpsim.LossContext` whose ``subflows``
are the read-only :class:`~mpsim.SubflowState` of every subflow of the connection (the
caller at index ``ctx.me``), as coupled controllers need. Optional methods:
``on_rtt_sample(rtt, now)``, ``on_delivery(ctx)`` (every ACK), ``on_recovery_exit(w)`` and ``inter_loss_bytes()``. One
instance is made per subflow. Leave out the optional methods you do not need: each one
defined costs a call into Python every time the core asks.

**Receiver-side logic** (a flow's ``receiver = "module:Class"``, multipath flows only) runs
at the receiver, as MPTCP-rec's rate estimator does, and replaces it if the flow has one. Its
instances have ``on_data(now, path, seq, length, dsn, echo)``, called for every data segment
(``echo``: the feedback stamp the sender echoes), returning True to send an ACK carrying
feedback at once; and ``feedback(now, path)``, called for every ACK the receiver sends on
``path``, returning None (a plain ACK) or the rate in bit/s it asks for on that path (the
flow's scheduler gets it, with the ACK's stamp and path id, in ``on_ack_info``). Optional:
``deadline(path)`` (when ``on_timer`` must next run for that path, integer ns, or None),
``on_timer(now, path)`` (True: send an ACK with feedback now) and ``on_window(now, room)``
(after each data segment: bytes the receive window leaves above the highest byte received).
One instance is made per connection. A scheduler may define ``on_ack_info(now, sub, window,
feedback)`` (every ACK: the subflow it came on, the advertised window in bytes, and None or
``(stamp, path, rate_bps)``) and ``wake_at()`` (integer ns or None: when to be asked again
without an ACK; a scheduler with it is paced, asked again as soon as its chunk has left).

A scenario names a Python implementation like a built-in one, by a registered name or as
``"module:Class"``. **Naming Python code in a scenario runs it**, as running a Python file
would: its module is imported (executing its top level) and the class is instantiated. Run
only scenarios whose code you trust. A ``"module:Class"`` name must be a class with the
protocol's methods, checked before anything of it is called (a function such as
``os:system`` is refused); factories that are not classes can be registered from Python::

    [[flow]]
    paths = ["p1", "p2"]
    scheduler = "my_scheds:Greedy"   # my_scheds.py on sys.path, beside the scenario or in the working folder
    cc = "my_reno"                    # registered with mpsim.register_controller

Names are looked up in this order: the built-ins, names registered in this process
(:func:`register_scheduler`, :func:`register_controller`), names that installed packages
declare in the entry-point groups ``mpsim.schedulers`` and ``mpsim.controllers``, then
``"module:Class"`` paths. Sweep workers resolve ``"module:Class"`` and entry-point names
themselves; a name registered only in the parent process is unknown to them.

If user code raises, the run stops and that exception propagates with its traceback (a note
says which hook, and at what simulated time). A return value the simulator cannot use stops
the run with :class:`~mpsim.PluginError` naming the implementation, the hook, the time and the
value.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, TypeVar

from . import _core
from .errors import ScenarioError

__all__ = [
    "register_scheduler",
    "register_controller",
    "register_receiver",
    "registered",
    "resolve",
    "for_scenario",
    "run_json",
    "SCHEDULER_GROUP",
    "CONTROLLER_GROUP",
]

#: Entry-point groups in which installed packages declare their schedulers and controllers.
SCHEDULER_GROUP = "mpsim.schedulers"
CONTROLLER_GROUP = "mpsim.controllers"
RECEIVER_GROUP = "mpsim.receivers"

_KINDS = {
    "scheduler": ("scheduler", SCHEDULER_GROUP),
    "cc": ("congestion controller", CONTROLLER_GROUP),
    "receiver": ("receiver logic", RECEIVER_GROUP),
}
_REQUIRED = {"scheduler": ("pick",), "cc": ("on_ack", "on_congestion"), "receiver": ("on_data", "feedback")}
_registry: dict[str, dict[str, Callable[[], Any]]] = {"scheduler": {}, "cc": {}, "receiver": {}}

T = TypeVar("T")


def _builtin(kind: str) -> set[str]:
    return {name for k, name, _ in _core.components() if k == kind}


def _check_class(kind: str, name: str, cls: Any) -> None:
    if not callable(cls):
        raise TypeError(f"{_KINDS[kind][0]} '{name}': expected a class (or a callable making an instance), got {cls!r}")
    if isinstance(cls, type):
        missing = [m for m in _REQUIRED[kind] if not callable(getattr(cls, m, None))]
        if missing:
            raise TypeError(f"{_KINDS[kind][0]} '{name}' ({cls.__qualname__}) has no {', '.join(m + '()' for m in missing)} method")


def _register(kind: str, name: str, cls: Any) -> Any:
    def add(c: T) -> T:
        if not isinstance(name, str) or not name or ":" in name:
            raise ValueError(f"a {_KINDS[kind][0]} name is a non-empty string without ':', not {name!r}")
        if name in _builtin(kind):
            raise ValueError(f"'{name}' is a built-in {_KINDS[kind][0]}; choose another name")
        _check_class(kind, name, c)
        _registry[kind][name] = c  # type: ignore[assignment]
        return c

    return add if cls is None else add(cls)


def register_scheduler(name: str, cls: Any = None) -> Any:
    """Makes a scheduler class usable as ``scheduler = name`` in scenarios.

    ``register_scheduler("mine", Mine)``, or as a decorator::

        @mpsim.register_scheduler("mine")
        class Mine:
            def pick(self, ctx): ...

    Re-registering a name replaces the class. Raises ValueError for a built-in name or one
    containing ':', TypeError for a class without ``pick``.
    """
    return _register("scheduler", name, cls)


def register_controller(name: str, cls: Any = None) -> Any:
    """Makes a congestion-controller class usable as ``cc = name``; like
    :func:`register_scheduler` (the class needs ``on_ack`` and ``on_congestion``)."""
    return _register("cc", name, cls)


def register_receiver(name: str, cls: Any = None) -> Any:
    """Makes a receiver-logic class usable as ``receiver = name``; like
    :func:`register_scheduler` (the class needs ``on_data`` and ``feedback``)."""
    return _register("receiver", name, cls)


def registered(kind: str) -> dict[str, str]:
    """Names of the Python implementations available for *kind* (``"scheduler"`` or
    ``"cc"``) without a module path: registered ones and installed entry points, with
    where each comes from."""
    out = {n: f"{getattr(c, '__module__', '?')}:{getattr(c, '__qualname__', repr(c))}" for n, c in _registry[kind].items()}
    for ep in entry_points(group=_KINDS[kind][1]):
        out.setdefault(ep.name, f"{ep.value} (entry point of {ep.dist.name if ep.dist else '?'})")
    return out


def _import(module: str, search: Iterable[Path]) -> Any:
    """Imports *module*; when it is not on sys.path, from ``<dir>/<module>.py`` for the first
    of *search* that has it (registered in sys.modules, so pickling and workers agree)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module.split(".")[0] and e.name != module:
            raise  # the module exists but one of its own imports is missing
        if "." not in module:
            for d in search:
                f = d / f"{module}.py"
                if f.is_file():
                    spec = importlib.util.spec_from_file_location(module, f)
                    assert spec is not None and spec.loader is not None
                    mod = importlib.util.module_from_spec(spec)
                    sys.modules[module] = mod
                    try:
                        spec.loader.exec_module(mod)
                    except BaseException:
                        del sys.modules[module]
                        raise
                    return mod
        raise


def resolve(kind: str, name: str, *, search: Iterable[str | os.PathLike[str]] = ()) -> Callable[[], Any] | None:
    """The class (factory) for a scheduler (*kind* ``"scheduler"``) or controller (``"cc"``)
    named *name*; None for a built-in one.

    Raises:
        LookupError: the name is not known (with the reason); errors raised while importing
            the user's module propagate unchanged.
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be 'scheduler', 'cc' or 'receiver', not {kind!r}")
    what, group = _KINDS[kind]
    if name in _builtin(kind):
        return None
    if name in _registry[kind]:
        return _registry[kind][name]
    eps = [ep for ep in entry_points(group=group) if ep.name == name]
    if eps:
        cls = eps[0].load()
        _check_class(kind, name, cls)
        return cls  # type: ignore[no-any-return]
    if ":" not in name:
        known = sorted(_builtin(kind) | set(registered(kind)))
        raise LookupError(f"unknown {what} '{name}'; expected one of: {', '.join(known)}, or \"module:Class\"")
    module, _, qual = name.partition(":")
    # importlib raises ValueError or TypeError, not ModuleNotFoundError, for an empty or
    # relative name ("", "..", ".mod"): refuse what is no dotted module name before importing
    if not all(part.isidentifier() for part in module.strip().split(".")):
        raise LookupError(f"{what} '{name}': '{module}' is no module name; \"module:Class\" takes a dotted "
                          "module name such as my_scheds or pkg.mod")
    dirs = [Path(p) for p in search] + [Path.cwd()]
    try:
        mod = _import(module.strip(), dirs)
    except ModuleNotFoundError as e:
        if e.name not in (module, module.split(".")[0]):
            raise
        raise LookupError(f"cannot import module '{module}' for {what} '{name}': not on the Python path, "
                          f"nor a {module}.py beside the scenario or in the working folder") from None
    obj: Any = mod
    for part in qual.strip().split("."):
        if not hasattr(obj, part):
            raise LookupError(f"module '{module}' has no '{qual}' (for {what} '{name}')")
        obj = getattr(obj, part)
    # a name in a scenario must be a class implementing the protocol, checked here before
    # anything of it is called (a function such as os:system is never called as a factory)
    if not isinstance(obj, type):
        raise LookupError(
            f"{what} '{name}' is {_describe(obj)}, not a class: a scenario names a class with "
            + ", ".join(m + "()" for m in _REQUIRED[kind])
            + " (factories can be registered in Python with register_"
            + {"scheduler": "scheduler", "cc": "controller", "receiver": "receiver"}[kind]
            + ")"
        )
    try:
        _check_class(kind, name, obj)
    except TypeError as e:
        raise LookupError(str(e)) from None
    return obj  # type: ignore[no-any-return]


def _describe(obj: Any) -> str:
    """What an object is, in a few words, for an error message."""
    import inspect

    if inspect.isbuiltin(obj):
        return "a built-in function"
    if inspect.isfunction(obj):
        return "a function"
    if inspect.ismodule(obj):
        return "a module"
    return f"a {type(obj).__name__}"


def for_scenario(d: Mapping[str, Any], origin: str) -> tuple[list[tuple[str, str, str, Callable[[], Any]]], list[tuple[str, str]]]:
    """The Python implementations a scenario dict names, resolved.

    Returns ``(plugins, renames)``: *plugins* are ``(flow, kind, name, factory)`` tuples for
    the core; *renames* are ``(key, token)`` pairs: a registered or entry-point name must be
    given to the core's validator as ``"module:Class"`` (it accepts those as external names),
    so the caller puts *token* at *key* in the dict it serialises.

    Raises:
        ScenarioError: a name cannot be resolved (naming *origin* and the key, such as
            ``flow[0].scheduler``).
    """
    flows = d.get("flow")
    if not isinstance(flows, list):
        return [], []
    search = []
    if origin and not origin.startswith("<"):
        search.append(Path(origin).resolve().parent)
    plugins: list[tuple[str, str, str, Callable[[], Any]]] = []
    renames: list[tuple[str, str]] = []
    for i, f in enumerate(flows):
        if not isinstance(f, Mapping):
            continue
        fname = f.get("name") if isinstance(f.get("name"), str) else f"flow{i}"
        for kind in ("scheduler", "cc", "receiver"):
            name = f.get(kind)
            if not isinstance(name, str):
                continue
            if f.get("transport") == "sctp":
                # an SCTP flow runs the core's SCTP controllers (checked by the core); Python
                # plug-ins serve TCP subflows only
                continue
            key = f"flow[{i}].{kind}"
            try:
                cls = resolve(kind, name, search=search)
            except LookupError as e:
                raise ScenarioError(origin, key, str(e)) from None
            if cls is None:
                continue
            plugins.append((fname, kind, name, cls))
            if ":" not in name:
                token = f"{getattr(cls, '__module__', 'python')}:{getattr(cls, '__qualname__', name)}"
                renames.append((key, token if ":" in token and not token.startswith(":") else f"python:{name}"))
    return plugins, renames


def apply_renames(d: dict[str, Any], renames: list[tuple[str, str]]) -> dict[str, Any]:
    """A shallow copy of scenario dict *d* with each ``flow[i].kind`` set to its token."""
    if not renames:
        return d
    out = dict(d)
    flows = [dict(f) for f in d["flow"]]
    for key, token in renames:
        head, kind = key.split(".")
        flows[int(head[len("flow["):-1])][kind] = token
    out["flow"] = flows
    return out


def run_json(scenario_json: str, origin: str, progress: Callable[[float], Any] | None = None) -> Any:
    """``_core.run`` for a scenario given as JSON, with the Python implementations it names
    resolved and installed (what sweep workers call).

    Raises:
        ScenarioError: a name cannot be resolved.
    """
    import json

    d = json.loads(scenario_json)
    found, renames = for_scenario(d, origin)
    if renames:
        scenario_json = json.dumps(apply_renames(d, renames))
    return _core.run(scenario_json, origin, progress, found or None)
