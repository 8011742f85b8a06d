"""Sweeps: one scenario over a grid of overrides and seeds, on local processes or Dask.

A sweep is planned in the calling process (every grid point applied and, by default,
validated before the first run), then its runs go to a back end:

* local worker processes (:mod:`concurrent.futures`, 'spawn' start method); a worker
  process that dies is replaced and the runs it had are run again, alone, so a run that
  kills its worker every time is found and recorded as failed after ``LOCAL_RETRIES``
  retries without taking other runs with it; short runs travel in chunks of about
  ``LOCAL_TASK_S`` seconds of work;
* a Dask cluster (``dask=`` a ``distributed.Client``, a cluster object, a scheduler address
  or ``"local:N"`` for a LocalCluster of N worker processes); Dask reschedules the runs of a
  lost worker itself (``distributed.scheduler.allowed-failures`` times, then the run is
  recorded as failed); short runs travel in chunks of about ``DASK_TASK_S`` seconds of work.
  Chunks are sized from the runs timed so far, so the cost of a task is shared by its runs.

Results go to a sink as runs finish: in memory (the frame of the :class:`SweepReport`
:func:`sweep` returns) or, with ``out=FOLDER``, to the Parquet dataset of
:mod:`mpsim.sweeping.store`, in small batches, so the parent's memory does not grow with the
number of runs. A run that raises is recorded with its error; the sweep goes on.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import operator
import os
import time
import warnings
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from .. import _core
from ..errors import ScenarioError, from_core
from ..plugins import run_json
from ..progress import Progress, ProgressArg
from ..progress import check as check_progress
from ..scenario import ScenarioLike, _apply, annotate, format_value, load, to_json
from .store import SERIES_TABLES, Store

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["sweep", "SweepReport", "LOCAL_RETRIES", "FLUSH_EVERY_S"]

#: How many times a local run whose worker process died is run again before it is
#: recorded as failed.
LOCAL_RETRIES = 2
#: A sweep folder gets the finished runs at least this often (seconds) ...
FLUSH_EVERY_S = 1.0
#: ... or whenever this many finished runs wait to be written ...
FLUSH_RUNS = 256
#: ... or this many rows of time series.
FLUSH_SERIES_ROWS = 200_000
#: Short runs go to local workers in chunks of about this many seconds of work ...
LOCAL_TASK_S = 0.05
#: ... and to Dask workers in chunks of about this many ...
DASK_TASK_S = 0.1
#: ... and at most this many runs per chunk.
MAX_CHUNK = 64


# -------------------------------------------------------------------------------------
# Planning


def _seed_list(seeds: int | Iterable[int]) -> list[int]:
    if isinstance(seeds, bool):
        raise TypeError("seeds must be a number of seeds or an iterable of seeds")
    if isinstance(seeds, int):
        if seeds < 1:
            raise ValueError(f"seeds must be at least 1, got {seeds}")
        return list(range(1, seeds + 1))
    out = []
    for s in seeds:
        try:
            if isinstance(s, bool):
                raise TypeError
            n = operator.index(s)  # ints, NumPy integers
        except TypeError:
            raise TypeError(f"seeds must be integers, got {s!r}") from None
        if n < 0:
            raise ValueError(f"seeds must not be negative, got {n}")
        out.append(n)
    if not out:
        raise ValueError("no seeds given")
    return out


def _grid_values(key: str, values: Any) -> list[Any]:
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        return [values]
    vals = list(values)
    if not vals:
        raise ValueError(f"grid key '{key}' has no values")
    return vals


def _hashable(v: Any) -> Any:
    """Grid values go into DataFrame columns; dicts and lists become their JSON text so
    the frame can be grouped and saved."""
    if isinstance(v, (dict, list, tuple)):
        return format_value(v)
    return v


def _stored_values(values: list[Any]) -> list[Any]:
    """A grid key's values as stored in a sweep folder: one type per column, so every
    Parquet file of the folder agrees (numbers stay numbers unless mixed with text)."""
    vals = [_hashable(v) for v in values]
    kinds = {type(v) for v in vals if v is not None}
    if kinds <= {int} or kinds <= {float} or kinds <= {str} or kinds <= {bool}:
        return vals
    if kinds <= {int, float}:
        return [float(v) if v is not None else None for v in vals]
    return [v if isinstance(v, str) or v is None else format_value(v) for v in vals]


def _digest(obj: Any, n: int) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


@dataclass(frozen=True)
class _Run:
    index: int  # position in grid order (first key slowest, seeds fastest)
    point: int  # index into _Plan.points
    seed: int
    run_id: str  # hash of the scenario as run, seed included


class _Plan:
    """The runs of a sweep: grid points (scenario dicts) and, per point, the seeds."""

    def __init__(
        self,
        scenario: ScenarioLike,
        grid: Mapping[str, Any],
        seeds: list[int],
        overrides: Mapping[str, Any] | None,
        validate: bool,
    ) -> None:
        base, origin = load(scenario)
        base_applied = _apply(base, overrides, origin)
        self.origin = origin
        self.name = base.get("name") if isinstance(base.get("name"), str) else None
        self.base_id = _digest({k: v for k, v in json.loads(to_json(base, origin)).items() if k != "seed"}, 20)
        self.keys = list(grid)
        value_lists = [_grid_values(k, grid[k]) for k in self.keys]
        stored_lists = [_stored_values(v) for v in value_lists]
        self.points: list[dict[str, Any]] = []  # each point's scenario as plain JSON values
        self.combos: list[tuple[Any, ...]] = []  # grid values as given (in-memory frame)
        self.labels: list[dict[str, Any]] = []  # grid values as stored in a folder
        self.point_ids: list[str] = []
        self.runs: list[_Run] = []
        stored_combos = itertools.product(*stored_lists)
        for combo in itertools.product(*value_lists):
            stored = next(stored_combos)
            d = copy.deepcopy(base)
            applied = base_applied + _apply(d, dict(zip(self.keys, combo)), origin)
            js = to_json(d, origin)
            if validate:
                self._check(js, applied, base_applied, combo)
                self._check_plugins(d, applied, base_applied)
            p = len(self.points)
            plain = json.loads(js)
            self.point_ids.append(_digest({k: v for k, v in plain.items() if k != "seed"}, 16))
            self.points.append(plain)
            self.combos.append(combo)
            self.labels.append(dict(zip(self.keys, stored)))
            for seed in seeds:
                plain["seed"] = seed
                self.runs.append(_Run(len(self.runs), p, seed, _digest(plain, 24)))

    def _check(self, js: str, applied: list[Any], base_applied: list[Any], combo: tuple[Any, ...]) -> None:
        try:
            _core.check(js, self.origin)
        except _core.ScenarioError as e:
            err = from_core(e)
            marked = annotate(err, applied[len(base_applied):], "grid value")
            if marked is err:
                marked = annotate(err, base_applied)
            if marked is err and self.keys:
                point = ", ".join(f"{k} = {format_value(v)}" for k, v in zip(self.keys, combo))
                marked = err.with_message(f"{err.message} (at grid point {point})")
            raise marked from None

    def _check_plugins(self, d: dict[str, Any], applied: list[Any], base_applied: list[Any]) -> None:
        """The schedulers and controllers written in Python that the point names resolve to
        classes with the protocol's methods (as mpsim.run checks before a run)."""
        from .. import plugins

        try:
            plugins.for_scenario(d, self.origin)
        except ScenarioError as e:
            marked = annotate(e, applied[len(base_applied):], "grid value")
            raise (annotate(e, base_applied) if marked is e else marked) from None

    def scenario_json(self, run: _Run) -> str:
        """The run's scenario as JSON text for the core (the point's, with the run's seed)."""
        plain = self.points[run.point]
        plain["seed"] = run.seed
        return json.dumps(plain, allow_nan=False)


# -------------------------------------------------------------------------------------
# The task a worker runs


class RunTimeout(Exception):
    """A sweep run went past ``run_timeout`` seconds of wall time and was stopped."""


def _deadline(timeout: float | None, start: float) -> Callable[[float], None] | None:
    """A progress callback that stops the run once *timeout* seconds have passed since
    *start* (the core calls it at every thousandth of the simulated time)."""
    if timeout is None:
        return None

    def check(frac: float) -> None:
        if time.perf_counter() - start > timeout:
            raise RunTimeout(f"stopped after {timeout:g} s of wall time (run_timeout), at {frac:.1%} of its simulated time")

    return check


def _run_task(scenario_json: str, origin: str, series: bool, timeout: float | None = None) -> dict[str, Any]:
    """Runs one sweep run (in a worker) and returns ``{"summary": JSON text, "series":
    {table: columns} or None}``, or ``{"error_type", "error"}`` if the run raised (a run past
    *timeout* seconds is stopped and recorded as a ``RunTimeout``)."""
    start = time.perf_counter()
    try:
        raw = run_json(scenario_json, origin, _deadline(timeout, start))  # imports the schedulers and controllers written in Python
    except (KeyboardInterrupt, SystemExit):
        raise
    except _core.ScenarioError as e:  # the core's class does not pickle; keep its text
        return {"error_type": "ScenarioError", "error": str(from_core(e))}
    except BaseException as e:  # noqa: BLE001 - a panic in the core is a BaseException
        return {"error_type": type(e).__name__, "error": str(e) or repr(e)}
    out: dict[str, Any] = {"summary": raw["summary"].json(), "series": None, "wall_s": time.perf_counter() - start}
    if series:  # Arrow tables: compact to send back and to hold until written
        from ..stream import arrow_table

        out["series"] = {t: arrow_table(raw.get(t)) for t in SERIES_TABLES}
    return out


def _init_worker(parent: int) -> None:
    """Local worker initialiser: Ctrl-C is handled by the parent, which stops the workers;
    a worker whose parent died (killed with SIGKILL, say) exits instead of waiting forever."""
    import signal
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="mpsim-parent-watch", daemon=True).start()


def _worker_version() -> str:
    import mpsim

    return str(mpsim.__version__)


def _flow_rows(summary: Mapping[str, Any], wall_s: float | None = None) -> list[dict[str, Any]]:
    """One dict per flow: ``flow``, the flow's summary fields, per-class and per-subflow
    figures, ``jain_index`` and ``wall_s`` of the run (wall-clock seconds the worker took;
    the summary itself holds no wall-clock value)."""
    rows = []
    for f in summary.get("flows", []):
        row: dict[str, Any] = {"flow": f.get("flow")}
        row.update((k, v) for k, v in f.items() if k not in ("flow", "subflows", "classes"))
        for c in f.get("classes", []):
            row[f"class_{c['class']}_delay_mean_ms"] = c.get("delay_mean_ms")
            row[f"class_{c['class']}_late"] = c.get("late")
            # frames the application generated: written to the socket (``frames``), discarded
            # at the sender (``refused``: refused by a full send buffer or dropped from the
            # application's queue) or still in that queue at the end (``queued``); written
            # frames not delivered by the end of the run are ``lost``
            frames, refused, delivered = c.get("frames", 0), c.get("refused", 0), c.get("delivered", 0)
            queued = c.get("queued", 0)
            row[f"class_{c['class']}_generated"] = frames + refused + queued
            row[f"class_{c['class']}_refused"] = refused
            row[f"class_{c['class']}_queued"] = queued
            row[f"class_{c['class']}_lost"] = frames - delivered
        for i, sf in enumerate(f.get("subflows", [])):
            if len(f["subflows"]) > 1:
                row[f"subflow{i}_goodput_bps"] = sf.get("goodput_bps")
            if sf.get("dsr_mean_bps") is not None:
                # MPTCP-rec: the rate the receiver advertised for the path, averaged
                row[f"subflow{i}_dsr_mean_bps"] = sf.get("dsr_mean_bps")
                row[f"subflow{i}_rec_reductions"] = sf.get("rec_reductions")
                row[f"subflow{i}_rec_timeouts"] = sf.get("rec_timeouts")
                row[f"subflow{i}_rec_window_holds"] = sf.get("rec_window_holds")
        row["jain_index"] = summary.get("jain_index")
        row["wall_s"] = wall_s
        rows.append(row)
    return rows


# -------------------------------------------------------------------------------------
# Sinks: where finished runs go


class _MemorySink:
    """Collects the rows of the report's frame (in grid order) for a sweep without a folder."""

    def __init__(self, plan: _Plan) -> None:
        self.plan = plan
        self.rows: dict[int, list[dict[str, Any]]] = {}
        self.failures: list[dict[str, Any]] = []

    def add(self, run: _Run, out: Mapping[str, Any]) -> None:
        lead = {k: _hashable(v) for k, v in zip(self.plan.keys, self.plan.combos[run.point])}
        if "error" in out:
            self.failures.append({**lead, "seed": run.seed, "run": run.index, "error_type": out["error_type"],
                                  "error": out["error"]})
            return
        rows = []
        for r in _flow_rows(json.loads(out["summary"]), out.get("wall_s")):
            rows.append({**lead, "seed": run.seed, "run": run.index, **r})
        self.rows[run.index] = rows

    def flush(self) -> None:
        pass

    def frame(self) -> "pd.DataFrame":
        import pandas as pd

        frame = pd.DataFrame([r for i in sorted(self.rows) for r in self.rows[i]])
        frame.attrs["grid"] = list(self.plan.keys)
        if self.failures:
            frame.attrs["failed"] = sorted(self.failures, key=lambda f: f["run"])
        return frame


class _FolderSink:
    """Writes finished runs to a sweep folder in small batches (one file per grid point per
    batch): when ``FLUSH_RUNS`` runs or ``FLUSH_SERIES_ROWS`` rows of series wait, and by a
    background thread once the oldest waiting run is ``flush_every`` seconds old, so a
    finished run is on disk within about ``flush_every`` seconds however long the next
    run takes."""

    def __init__(self, plan: _Plan, store: Store, series: bool, flush_every: float) -> None:
        import threading

        self.plan = plan
        self.store = store
        self.series = series
        self.flush_every = flush_every
        self.buffer: list[tuple[_Run, Mapping[str, Any]]] = []
        self.series_rows = 0
        self.oldest = 0.0
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.error: BaseException | None = None
        self.thread = None
        if flush_every > 0:
            self.thread = threading.Thread(target=self._flush_when_due, name="mpsim-sweep-writer", daemon=True)
            self.thread.start()

    def _flush_when_due(self) -> None:
        while not self.stopped.wait(min(self.flush_every, 0.25)):
            try:
                with self.lock:
                    if self.buffer and time.monotonic() - self.oldest >= self.flush_every:
                        self._flush()
            except BaseException as e:  # noqa: BLE001 - reported by the next add() or close()
                self.error = e
                return

    def add(self, run: _Run, out: Mapping[str, Any]) -> None:
        if self.error is not None:
            raise self.error
        with self.lock:
            if "error" in out:
                self._write_failure(run, out)
                return
            if not self.buffer:
                self.oldest = time.monotonic()
            self.buffer.append((run, out))
            if self.series and out.get("series"):
                self.series_rows += sum(t.num_rows for t in out["series"].values())
            if (
                len(self.buffer) >= FLUSH_RUNS
                or self.series_rows >= FLUSH_SERIES_ROWS
                or time.monotonic() - self.oldest >= self.flush_every
            ):
                self._flush()

    def flush(self) -> None:
        """Writes what waits and stops the background writer (the sweep is over)."""
        self.stopped.set()
        if self.thread is not None:
            self.thread.join()
        with self.lock:
            self._flush()
        if self.error is not None:
            raise self.error

    def _lead(self, run: _Run) -> dict[str, Any]:
        # No run index: it is numbered when the folder is read (see store.py), so runs
        # added by a later sweep with more seeds or grid values fall into grid order.
        return {**self.plan.labels[run.point], "seed": run.seed}

    def _write_failure(self, run: _Run, out: Mapping[str, Any]) -> None:
        import pyarrow as pa

        row = {**self._lead(run), "run_id": run.run_id, "error_type": out["error_type"], "error": out["error"]}
        self.store.write_failure(self.plan.point_ids[run.point], run.run_id, pa.Table.from_pylist([row]))

    def _flush(self) -> None:
        if not self.buffer:
            return
        import pyarrow as pa

        by_point: dict[str, dict[str, list[Any]]] = {}
        for run, out in self.buffer:
            point = self.plan.point_ids[run.point]
            parts = by_point.setdefault(point, {"flows": [], **{t: [] for t in SERIES_TABLES}})
            lead = self._lead(run)
            for r in _flow_rows(json.loads(out["summary"]), out.get("wall_s")):
                parts["flows"].append({**lead, **r, "run_id": run.run_id})
            if self.series and out.get("series"):
                for t in SERIES_TABLES:
                    parts[t].append(_with_lead(out["series"][t], lead, run.run_id))
        batches: dict[str, dict[str, Any]] = {}
        for point, parts in by_point.items():
            tables: dict[str, Any] = {"flows": _rows_to_table(parts["flows"])}
            if self.series:
                for t in SERIES_TABLES:
                    tables[t] = pa.concat_tables(parts[t], promote_options="permissive") if parts[t] else None
            batches[point] = tables
        self.store.write_batch(batches)
        self.buffer.clear()
        self.series_rows = 0


def _rows_to_table(rows: list[dict[str, Any]]) -> Any:
    """An Arrow table of row dicts whose keys may differ (a multipath flow has per-subflow
    columns a TCP flow lacks): every key of every row, in first-seen order."""
    import pyarrow as pa

    names: dict[str, None] = {}
    for r in rows:
        names.update(dict.fromkeys(r))
    return pa.table({k: [r.get(k) for r in rows] for k in names})


def _with_lead(table: Any, lead: Mapping[str, Any], run_id: str) -> Any:
    """A run's series table with its grid values and seed in front and ``run_id`` last."""
    import pyarrow as pa

    n = table.num_rows
    cols = {k: pa.repeat(pa.scalar(v), n) for k, v in lead.items()}
    cols.update({name: table.column(name) for name in table.column_names})
    cols["run_id"] = pa.repeat(pa.scalar(run_id), n)
    return pa.table(cols)


# -------------------------------------------------------------------------------------
# Back ends


@dataclass
class _Counts:
    done: int = 0
    failed: int = 0
    retried: int = 0


def _deliver(sink: Any, prog: Progress, counts: _Counts, run: _Run, out: Mapping[str, Any]) -> None:
    sink.add(run, out)
    ok = "error" not in out
    if ok:
        counts.done += 1
    else:
        counts.failed += 1
    prog.item(ok)


def _execute(
    plan: _Plan, runs: list[_Run], sink: Any, *, processes: int, dask: Any, series: bool, progress: ProgressArg,
    timeout: float | None = None
) -> _Counts:
    """Runs *runs* on the chosen back end, handing each outcome to *sink* as it comes and
    reporting progress over runs (see :mod:`mpsim.progress`)."""
    counts = _Counts()
    prog = Progress(progress, "sweep", total=len(runs), unit="run")
    emit = lambda run, out: _deliver(sink, prog, counts, run, out)  # noqa: E731
    try:
        if not runs:
            pass
        elif dask is not None:
            _execute_dask(plan, runs, dask, series, emit, timeout)
        elif processes == 1 or len(runs) == 1:
            for run in runs:
                emit(run, _run_task(plan.scenario_json(run), plan.origin, series, timeout))
        else:
            counts.retried = _execute_local(plan, runs, min(processes, len(runs)), series, emit, timeout)
    finally:
        prog.close()
        sink.flush()  # whatever finished is kept, also on Ctrl-C or an error
    prog.finish()
    return counts


def _run_chunk(payloads: list[str], origin: str, series: bool, timeout: float | None = None) -> list[dict[str, Any]]:
    """Runs several sweep runs in one task of a back end (see :func:`_chunk_size`)."""
    return [_run_task(p, origin, series, timeout) for p in payloads]


def _chunk_size(mean_run_s: float | None, target_s: float) -> int:
    """Runs per task: enough short runs to fill about *target_s* seconds, so the cost of a
    task (a round trip to a worker process or through the Dask scheduler) does not
    dominate; one run per task until a run was timed."""
    if mean_run_s is None:
        return 1
    return max(1, min(MAX_CHUNK, int(target_s / max(mean_run_s, 1e-6))))


class _Timing:
    """The mean wall time of the runs finished so far."""

    def __init__(self) -> None:
        self.runs = 0
        self.wall = 0.0

    def add(self, out: Mapping[str, Any]) -> None:
        if "wall_s" in out:
            self.runs += 1
            self.wall += out["wall_s"]

    def mean(self) -> float | None:
        return self.wall / self.runs if self.runs else None


def _execute_local(plan: _Plan, runs: list[_Run], processes: int, series: bool, emit: Callable[..., None], timeout: float | None = None) -> int:
    """Local worker processes; returns how many runs were run again after a worker died."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    ctx = multiprocessing.get_context("spawn")

    def new_pool() -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=processes, mp_context=ctx, initializer=_init_worker,
                                   initargs=(os.getpid(),))

    def stop(pool: ProcessPoolExecutor) -> None:
        # the processes are taken first: shutdown forgets them, and a worker left in a long
        # run would go on to its end (and the interpreter would wait for it at exit)
        procs = list((getattr(pool, "_processes", None) or {}).values())
        for proc in procs:
            proc.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            proc.join(5)
            if proc.is_alive():
                proc.kill()

    pool = new_pool()
    try:  # workers that cannot even start (an unguarded script, say) are an error, not failed runs
        pool.submit(_worker_version).result()
    except BaseException as e:
        stop(pool)  # also on Ctrl-C while the workers start: none may be left running
        if not isinstance(e, BrokenProcessPool):
            raise
        raise BrokenProcessPool(
            "the local worker processes died while starting; a script calling mpsim.sweep must guard its "
            "top level with 'if __name__ == \"__main__\":' (see the traceback above them)"
        ) from None
    queue = deque(runs)
    suspects: deque[_Run] = deque()  # runs whose worker died: each is run again alone
    deaths: Counter[str] = Counter()
    inflight: dict[Any, list[_Run]] = {}  # future -> the runs of its chunk
    timing = _Timing()
    retried = 0

    def submit(chunk: list[_Run], source: deque[_Run]) -> None:
        payloads = [plan.scenario_json(r) for r in chunk]
        try:
            fut = pool.submit(_run_chunk, payloads, plan.origin, series, timeout)
        except BrokenProcessPool:
            source.extendleft(reversed(chunk))  # a pool that broke meanwhile takes nothing: run them later
            raise
        inflight[fut] = chunk

    def deliver(chunk: list[_Run], outs: list[dict[str, Any]]) -> None:
        for run, out in zip(chunk, outs):
            timing.add(out)
            emit(run, out)

    try:
        while queue or suspects or inflight:
            broken = False
            try:
                if suspects:
                    if not inflight:
                        submit([suspects.popleft()], suspects)
                else:
                    while queue and len(inflight) < 2 * processes:
                        n = min(_chunk_size(timing.mean(), LOCAL_TASK_S), len(queue))
                        submit([queue.popleft() for _ in range(n)], queue)
            except BrokenProcessPool:
                broken = True
            lost: list[_Run] = []
            if not broken:
                done, _ = wait(inflight, return_when=FIRST_COMPLETED)
                for fut in done:
                    chunk = inflight.pop(fut)
                    try:
                        outs = fut.result()
                    except BrokenProcessPool:
                        broken = True
                        lost.extend(chunk)
                        continue
                    deliver(chunk, outs)
            if not broken:
                continue
            # A worker died: every run still in flight is lost with the pool.
            wait(inflight)
            for fut, chunk in inflight.items():
                if fut.exception() is None:
                    deliver(chunk, fut.result())
                else:
                    lost.extend(chunk)
            alone = len(lost) == 1 and len(inflight) <= 1
            inflight.clear()
            stop(pool)
            pool = new_pool()
            for run in lost:
                if alone:  # it ran alone, so it is the one that took its worker down
                    deaths[run.run_id] += 1
                if deaths[run.run_id] > LOCAL_RETRIES:
                    emit(run, {"error_type": "WorkerDied",
                               "error": f"the worker process died while running it ({deaths[run.run_id]} times)"})
                else:
                    suspects.append(run)
                    retried += 1
    except BaseException:
        stop(pool)  # queued runs are cancelled; running ones would otherwise go on to the end
        raise
    else:
        pool.shutdown(wait=True)
    return retried


def _distributed() -> tuple[Any, Any]:
    """``(Client, as_completed)`` from dask.distributed, imported only when Dask is used."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise ImportError("running on Dask needs dask.distributed: pip install 'mpsim[dask]'") from None
    return Client, as_completed


def _parse_local(address: str) -> int | None:
    """``"local:N"`` -> N; any other text -> None."""
    if not address.startswith("local:"):
        return None
    text = address[len("local:"):]
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"dask='local:N' needs a positive number of workers N, got '{address}'")
    return n


def _dask_client(dask: Any) -> tuple[Any, Callable[[], None]]:
    """A Client for the ``dask`` argument, and what to call when done with it."""
    Client, _ = _distributed()
    if isinstance(dask, str):
        n = _parse_local(dask)
        if n is not None:
            import logging

            from distributed import LocalCluster

            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                   silence_logs=logging.ERROR)
            client = Client(cluster)

            def close() -> None:
                client.close()
                cluster.close()

            return client, close
        client = Client(dask)
        return client, client.close
    if isinstance(dask, Client):
        return dask, lambda: None
    if hasattr(dask, "scheduler_address"):  # a cluster object (LocalCluster, SLURMCluster, ...)
        client = Client(dask)
        return client, client.close
    raise TypeError(f"dask must be a scheduler address, 'local:N', a Client or a cluster, not {type(dask).__name__}")


def _check_workers(client: Any) -> None:
    """Every worker must run the same mpsim as this process, or results would differ."""
    from .. import __version__

    try:
        versions = client.run(_worker_version)
    except ImportError as e:
        raise ImportError(f"the Dask workers cannot import mpsim ({e}); install mpsim on every worker") from None
    other = {w: v for w, v in versions.items() if v != __version__}
    if other:
        w, v = next(iter(other.items()))
        raise ImportError(f"Dask worker {w} runs mpsim {v}, this process {__version__}; install the same version")


def _execute_dask(plan: _Plan, runs: list[_Run], dask: Any, series: bool, emit: Callable[..., None], timeout: float | None = None) -> None:
    from distributed import KilledWorker

    _, as_completed = _distributed()
    client, close = _dask_client(dask)
    try:
        _check_workers(client)
        # Keep a bounded number of tasks on the cluster: the parent holds neither every
        # scenario nor every result at once.
        window = max(8, 2 * sum(client.nthreads().values()))
        todo = deque(runs)
        pending: dict[str, list[_Run]] = {}
        live: dict[str, Any] = {}  # key -> future, cancelled if the sweep is interrupted
        futures = as_completed()
        timing = _Timing()

        def submit_next() -> None:
            chunk = [todo.popleft() for _ in range(min(_chunk_size(timing.mean(), DASK_TASK_S), len(todo)))]
            if chunk:
                payloads = [plan.scenario_json(r) for r in chunk]
                fut = client.submit(_run_chunk, payloads, plan.origin, series, timeout, pure=False)
                pending[fut.key] = chunk
                live[fut.key] = fut
                futures.add(fut)

        for _ in range(window):
            submit_next()
        for fut in futures:
            chunk = pending.pop(fut.key)
            live.pop(fut.key, None)
            try:
                outs = fut.result()
            except KilledWorker as e:  # the workers running it died allowed-failures times
                outs = [{"error_type": "KilledWorker", "error": f"the Dask workers running it died: {e}"}] * len(chunk)
            fut.release()
            for run, out in zip(chunk, outs):
                timing.add(out)
                emit(run, out)
            submit_next()
    except BaseException:
        # Ctrl-C or an error: what the cluster still runs for this sweep is cancelled
        try:
            client.cancel(list(live.values()))
        except Exception:  # noqa: BLE001 - the sweep is stopping anyway
            pass
        raise
    finally:
        close()


# -------------------------------------------------------------------------------------
# The entry point


@dataclass
class SweepReport:
    """What a sweep did, and its rows: :func:`sweep` returns one whatever ``out`` is.

    Attributes:
        folder: the sweep folder (``out=FOLDER``), or None when the rows are held in memory
            (no ``out``, or a ``.parquet`` or ``.csv`` file written at the end).
        total: runs in the sweep (grid points x seeds).
        done: runs finished now (with a folder: and stored there).
        skipped: runs already stored by an earlier sweep into the folder (not run again);
            0 without a folder.
        failed: runs that raised; their errors are in ``frame.attrs["failed"]`` or, with a
            folder, in its ``failed`` table.
        retried: runs started again after their local worker process died.
        wall_s: wall time of the sweep in seconds.

    The rows, one per run and flow, are :attr:`frame`.
    """

    folder: Path | None
    total: int
    done: int
    skipped: int
    failed: int
    retried: int = 0
    wall_s: float = 0.0
    _rows: "pd.DataFrame | None" = field(default=None, repr=False, compare=False)

    @property
    def frame(self) -> "pd.DataFrame":
        """One row per (run, flow) as a DataFrame (see :func:`sweep`, Returns). Without a
        folder the rows held in memory; with a folder the folder's ``flows`` table, read
        from disk at each access (:func:`mpsim.load_sweep`, which adds ``run_id`` and
        ``point``): for a folder larger than memory, query it instead."""
        if self.folder is None:
            assert self._rows is not None
            return self._rows
        return self.load()

    def load(self, table: str = "flows", *, lazy: bool = False) -> Any:
        """:func:`mpsim.load_sweep` of this sweep's folder.

        Raises:
            ValueError: the sweep wrote no folder (its rows are in :attr:`frame`).
        """
        from .store import load_sweep

        if self.folder is None:
            raise ValueError("this sweep wrote no folder (out=FOLDER): its rows are in .frame")
        return load_sweep(self.folder, table, lazy=lazy)


def _out_kind(out: str | os.PathLike[str] | None) -> str | None:
    """``None``, ``"csv"`` or ``"parquet"`` (one file) or ``"folder"``."""
    if out is None:
        return None
    text = os.fspath(out)
    path = Path(text)
    if text.endswith(("/", os.sep)) or path.is_dir():
        return "folder"
    suffix = path.suffix.lower()
    if suffix in (".csv", ".parquet"):
        return suffix[1:]
    if suffix == "":
        return "folder"
    raise ValueError(
        f"{text}: give a folder (no suffix) for a Parquet dataset; a file name must end in .parquet or .csv"
    )


def sweep(
    scenario: ScenarioLike,
    grid: Mapping[str, Sequence[Any]] | None = None,
    seeds: int | Iterable[int] = 1,
    *,
    processes: int | None = None,
    progress: ProgressArg = None,
    dask: Any = None,
    out: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    fresh: bool = False,
    series: bool = False,
    validate: bool = True,
    flush_every: float = FLUSH_EVERY_S,
    run_timeout: float | None = None,
) -> SweepReport:
    """Runs a scenario over the Cartesian product of a parameter grid and seeds.

    Args:
        scenario: a TOML file path, TOML text or a dict.
        grid: ``{override_key: [value, ...]}``, keys as in :func:`mpsim.apply_overrides`,
            e.g. ``{"link.bottleneck.loss": ["0.5%", "1%"], "flow.*.tcp.min_rto": ["200ms", "1s"]}``.
        seeds: an int *n* for seeds 1..n, or an iterable of seeds. The seed of each run
            replaces the scenario's own ``seed``.
        processes: local worker processes (default: ``os.cpu_count()``); 1 runs everything
            in this process.
        progress: None (the default) shows a progress bar on stderr only when stderr is a
            terminal and the work takes longer than about 2 s; True always shows one, False
            never; a callable is called now and then with the fraction done (0..1: of the
            simulated time in a run, of the runs in a sweep), last with 1.0 when the work
            is complete -- if it raises, the work stops and the exception propagates.
        dask: run on a Dask cluster instead of local processes: a scheduler address
            (``"tcp://host:8786"``), ``"local:N"`` (a LocalCluster of N worker processes on
            this machine, closed at the end), a ``distributed.Client`` or a cluster object
            (``LocalCluster``, dask-jobqueue's ``SLURMCluster``, ...). The workers need the
            same mpsim installed.
        out: where the rows go besides the returned report:

            * a folder (a path without suffix, or ending in ``/``, or an existing folder):
              a Parquet dataset written as runs finish (see :mod:`mpsim.sweeping.store`);
              running the same sweep into it again skips the runs already stored, so an
              interrupted sweep resumes; read it with :func:`mpsim.load_sweep` or
              :func:`mpsim.query`;
            * a ``.parquet`` or ``.csv`` file: the report's frame, written at the end.
        overrides: fixed overrides applied to every run before the grid values.
        fresh: with a folder, delete what it holds and run everything again.
        series: with a folder, also keep every run's time series (``flow_series``,
            ``subflow_series``, ``link_series`` tables).
        validate: check every grid point before the first run and raise on the first bad
            one (default). With False a bad point fails like any run that raises: it is
            recorded as failed and the sweep goes on.
        flush_every: with a folder, write finished runs at least this often (seconds; 0
            writes each run as it finishes). A killed sweep loses at most this much work.
        run_timeout: stop any run after this many seconds of wall time and record it as
            failed (``error_type`` ``"RunTimeout"``); the sweep goes on. None: no limit.

    Returns:
        a :class:`SweepReport`, whatever ``out`` is: runs done, skipped, failed and retried,
        the wall time, and the rows as :attr:`SweepReport.frame`, a DataFrame of one row per
        (run, flow): a column per grid key, ``seed``, ``run`` (0-based run index), ``flow``
        (flow name), the other flow summary fields (``goodput_bps``, ...), then
        ``jain_index`` and ``wall_s`` of the run. Rows come in grid order (the first grid
        key varies slowest, seeds fastest) whatever order runs finish in, so the same sweep
        gives the same frame (except ``wall_s``). Grid values that are tables or lists
        appear as JSON text.

        Without a folder the rows are held in memory; runs that raised have none, they are
        listed in ``report.frame.attrs["failed"]`` and a ``RuntimeWarning`` says how many.
        With a folder the rows are in the folder (``report.frame`` reads them back, as
        :func:`mpsim.load_sweep` does), so the sweep's memory stays flat however many runs
        there are; failed runs are in its ``failed`` table.

    Raises:
        ScenarioError: the scenario or a grid point is invalid (with ``validate=True``);
            everything is checked before the first run starts, and the error names the
            offending key.
        SweepFolderError: the folder holds a sweep of another scenario, other grid keys or
            another ``series`` choice (use ``fresh=True`` or another folder).
        ValueError: bad ``seeds``, ``processes``, ``dask``, ``out`` or ``run_timeout``.

    A run that raises does not stop the sweep; it is recorded with its error. A local
    worker process that dies is replaced and its runs are run again (a run that kills its
    worker ``LOCAL_RETRIES + 1`` times running alone is recorded as failed); Dask
    reschedules the runs of a lost worker itself. Local workers are started with the
    'spawn' method, so a script calling ``sweep`` must guard its top level with
    ``if __name__ == "__main__":``.
    """
    grid = dict(grid or {})
    if "seed" in grid:
        raise ValueError("sweep over seeds with seeds=..., not with a 'seed' grid key")
    seed_list = _seed_list(seeds)
    check_progress(progress)
    if processes is None:
        processes = os.cpu_count() or 1
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise ValueError(f"processes must be a positive integer, got {processes!r}")
    kind = _out_kind(out)
    if series and kind != "folder":
        raise ValueError("series=True keeps time series in a sweep folder: give out=FOLDER")
    if fresh and kind != "folder":
        raise ValueError("fresh=True applies to a sweep folder: give out=FOLDER")
    if flush_every < 0 or not math.isfinite(flush_every):
        raise ValueError(f"flush_every must be a non-negative number of seconds, got {flush_every!r}")
    if run_timeout is not None and (isinstance(run_timeout, bool) or not isinstance(run_timeout, (int, float)) or not run_timeout > 0 or not math.isfinite(run_timeout)):
        raise ValueError(f"run_timeout must be a positive number of seconds (or None), got {run_timeout!r}")
    if isinstance(dask, str):
        _parse_local(dask)
    if dask is not None:
        _distributed()  # fail before validating and running anything

    plan = _Plan(scenario, grid, seed_list, overrides, validate)
    start = time.monotonic()

    if kind != "folder":
        if out is not None:
            Path(out).parent.mkdir(parents=True, exist_ok=True)
        mem = _MemorySink(plan)
        counts = _execute(plan, plan.runs, mem, processes=processes, dask=dask, series=False, progress=progress, timeout=run_timeout)
        frame = mem.frame()
        if counts.failed:
            first = frame.attrs["failed"][0]
            warnings.warn(f"{counts.failed} of {len(plan.runs)} sweep runs failed (their errors are in "
                          f"report.frame.attrs['failed']); the first: {first['error']}", RuntimeWarning, stacklevel=3)
        if out is not None:
            _write_frame(frame, Path(out), kind or "parquet")
        return SweepReport(
            folder=None,
            total=len(plan.runs),
            done=counts.done,
            skipped=0,
            failed=counts.failed,
            retried=counts.retried,
            wall_s=time.monotonic() - start,
            _rows=frame,
        )

    from .. import __version__

    assert out is not None
    store = Store.open(out, base=plan.base_id, grid=plan.keys, points=plan.point_ids, series=series,
                       scenario=plan.name, fresh=fresh, version=__version__)
    stored = store.stored_runs()
    todo: list[_Run] = []
    seen: set[str] = set()
    for run in plan.runs:
        if run.run_id in stored or run.run_id in seen:  # a grid point repeating another is run once
            continue
        seen.add(run.run_id)
        todo.append(run)
    store.forget_failures(r.run_id for r in todo)
    sink = _FolderSink(plan, store, series, flush_every)
    counts = _execute(plan, todo, sink, processes=processes, dask=dask, series=series, progress=progress, timeout=run_timeout)
    return SweepReport(
        folder=Path(out),
        total=len(plan.runs),
        done=counts.done,
        skipped=len(plan.runs) - len(todo),
        failed=counts.failed,
        retried=counts.retried,
        wall_s=time.monotonic() - start,
    )


def _write_frame(frame: "pd.DataFrame", path: Path, kind: str) -> None:
    from ..stream import parquet_safe

    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "csv":
        frame.to_csv(path, index=False)
    else:
        parquet_safe(frame).to_parquet(path, index=False)
