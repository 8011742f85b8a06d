"""The folder a sweep writes to: a Parquet dataset that grows run by run.

Layout of a sweep folder::

    sweep.json                                  what the folder holds (see below)
    flows/point=<id>/part-<batch>.parquet       one row per run and flow
    failed/point=<id>/run-<run_id>.parquet      one row per run that raised
    flow_series/point=<id>/part-<batch>.parquet     with series=True: the time series
    subflow_series/point=<id>/part-<batch>.parquet
    link_series/point=<id>/part-<batch>.parquet

``<id>`` names a grid point (a hash of its scenario without the seed), so each grid point is
a partition (``point`` column when read with Hive partitioning). Every file is written under
a temporary name and renamed when complete, so a reader or a killed sweep never sees half a
file. A run is *stored* once its rows are in ``flows``; the series files of a batch are
written before its ``flows`` file, and series files whose ``flows`` twin is missing (the
sweep died between the two) are removed when the folder is opened again.

``sweep.json`` records the base scenario (a hash of it after the fixed overrides, before the
grid), the grid keys, whether time series are kept and the mpsim version. Resuming into a
folder whose record differs is refused, so rows of different experiments never mix.

Reading goes through DuckDB: :func:`load_sweep` and :func:`query`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal, Mapping, Sequence, overload

if TYPE_CHECKING:  # pragma: no cover
    import duckdb
    import pandas as pd

__all__ = ["TABLES", "SERIES_TABLES", "SweepFolderError", "Store", "load_sweep", "query", "describe", "is_sweep_folder"]

MANIFEST = "sweep.json"
FORMAT = 1
#: The tables of a sweep folder, each a subfolder.
TABLES = ("flows", "failed", "flow_series", "subflow_series", "link_series")
#: The time-series tables, written only with ``series=True``.
SERIES_TABLES = ("flow_series", "subflow_series", "link_series")
_TMP_SUFFIX = ".tmp"


class SweepFolderError(ValueError):
    """A sweep folder cannot be used: it holds another experiment, or is not a sweep folder."""


def is_sweep_folder(folder: str | os.PathLike[str]) -> bool:
    return (Path(folder) / MANIFEST).is_file()


def _point_dir(root: Path, table: str, point: str) -> Path:
    return root / table / f"point={point}"


def _atomic_write_table(table: Any, path: Path) -> None:
    """Writes an Arrow table to *path* via a temporary file in the same folder and a rename."""
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}{_TMP_SUFFIX}")
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _atomic_write_text(text: str, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}{_TMP_SUFFIX}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class Store:
    """An open sweep folder: what is stored, and writing more of it.

    Use :meth:`open`; then :meth:`stored_runs` for resuming and :meth:`write_batch` /
    :meth:`write_failure` as runs finish.
    """

    def __init__(self, root: Path, manifest: dict[str, Any]) -> None:
        self.root = root
        self.manifest = manifest

    @classmethod
    def open(
        cls,
        folder: str | os.PathLike[str],
        *,
        base: str,
        grid: Sequence[str],
        points: Sequence[str],
        series: bool,
        scenario: str | None,
        fresh: bool = False,
        version: str = "",
    ) -> "Store":
        """Opens (creating it if needed) *folder* for a sweep of base scenario hash *base*.

        Raises:
            SweepFolderError: the folder holds a sweep of another base scenario, other grid
                keys or another ``series`` choice (and *fresh* is false), or it is a
                non-empty folder that is not a sweep folder.
        """
        root = Path(folder)
        mpath = root / MANIFEST
        if root.exists() and not root.is_dir():
            raise SweepFolderError(f"{root}: exists and is not a folder")
        if root.is_dir() and not mpath.exists():
            foreign = [p.name for p in root.iterdir() if p.name not in TABLES]
            if foreign:
                raise SweepFolderError(
                    f"{root}: not a sweep folder (no {MANIFEST}) and not empty; choose a new or empty folder"
                )
        manifest = {
            "format": FORMAT,
            "scenario": scenario,
            "base": base,
            "grid": list(grid),
            "series": bool(series),
            "mpsim": version,
            "points": list(points),
        }
        if fresh:
            cls._clear(root)
        elif mpath.exists():
            try:
                old = json.loads(mpath.read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                raise SweepFolderError(f"{mpath}: unreadable ({e}); use fresh=True (--fresh) to start over") from None
            why = cls._mismatch(old, manifest)
            if why:
                raise SweepFolderError(
                    f"{root} holds a sweep of {why}; its rows would not mix with this sweep's. "
                    "Use another folder, or fresh=True (--fresh) to delete them and start over"
                )
            # Grid points in first-run order: points a later sweep adds go after the old ones.
            known = list(old.get("points") or [])
            seen = set(known)
            manifest["points"] = known + [p for p in points if p not in seen]
        root.mkdir(parents=True, exist_ok=True)
        _atomic_write_text(json.dumps(manifest, indent=2) + "\n", mpath)
        store = cls(root, manifest)
        store._tidy()
        return store

    @staticmethod
    def _mismatch(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
        if old.get("format") != FORMAT:
            return f"another storage format ({old.get('format')!r})"
        if old.get("base") != new["base"]:
            return "another scenario (the scenario or the fixed overrides changed)"
        if old.get("mpsim") != new["mpsim"]:
            return f"runs of mpsim {old.get('mpsim')} (this is mpsim {new['mpsim']}, whose results may differ)"
        if list(old.get("grid") or []) != list(new["grid"]):
            return f"other grid keys ({', '.join(old.get('grid') or []) or 'none'})"
        if bool(old.get("series")) != bool(new["series"]):
            return "runs with time series" if old.get("series") else "runs without time series"
        return ""

    @staticmethod
    def _clear(root: Path) -> None:
        for t in TABLES:
            shutil.rmtree(root / t, ignore_errors=True)
        (root / MANIFEST).unlink(missing_ok=True)

    def _files(self, table: str, pattern: str = "*.parquet") -> list[Path]:
        base = self.root / table
        return sorted(base.glob(f"point=*/{pattern}")) if base.is_dir() else []

    def _tidy(self) -> None:
        """Removes what a killed sweep may have left: temporary files and series files of a
        batch whose ``flows`` file was never written."""
        for t in TABLES:
            for p in self._files(t, f"*{_TMP_SUFFIX}"):
                p.unlink(missing_ok=True)
        complete = {(p.parent.name, p.name) for p in self._files("flows")}
        for t in SERIES_TABLES:
            for p in self._files(t):
                if (p.parent.name, p.name) not in complete:
                    p.unlink(missing_ok=True)

    # -- what is stored --

    def stored_runs(self) -> set[str]:
        """The ``run_id`` of every run whose rows are in ``flows``."""
        import pyarrow.parquet as pq

        ids: set[str] = set()
        for p in self._files("flows"):
            ids.update(pq.read_table(p, columns=["run_id"]).column("run_id").to_pylist())
        return ids

    def forget_failures(self, run_ids: Iterable[str]) -> int:
        """Deletes the failure records of these runs (they are about to be run again)."""
        wanted = set(run_ids)
        n = 0
        for p in self._files("failed", "run-*.parquet"):
            if p.stem[len("run-"):] in wanted:
                p.unlink(missing_ok=True)
                n += 1
        return n

    # -- writing --

    def write_batch(self, batches: Mapping[str, Mapping[str, Any]]) -> None:
        """Writes finished runs: ``{point: {"flows": Arrow table, "flow_series": ..., ...}}``.

        Series tables go first, the ``flows`` table last: a run counts as stored once its
        ``flows`` file exists.
        """
        name = f"part-{uuid.uuid4().hex}.parquet"
        for point, tables in batches.items():
            for t in SERIES_TABLES:
                if t in tables and tables[t] is not None:
                    _atomic_write_table(tables[t], _point_dir(self.root, t, point) / name)
            _atomic_write_table(tables["flows"], _point_dir(self.root, "flows", point) / name)

    def write_failure(self, point: str, run_id: str, table: Any) -> None:
        _atomic_write_table(table, _point_dir(self.root, "failed", point) / f"run-{run_id}.parquet")


# -------------------------------------------------------------------------------------
# Reading with DuckDB


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError:  # pragma: no cover - a dependency of mpsim
        raise ImportError("reading a sweep folder needs DuckDB: pip install duckdb") from None
    return duckdb


def _manifest(root: Path) -> dict[str, Any]:
    mpath = root / MANIFEST
    if not root.is_dir():
        raise FileNotFoundError(2, "no such folder", str(root))
    if not mpath.is_file():
        raise SweepFolderError(f"{root}: not a sweep folder (no {MANIFEST})")
    try:
        return json.loads(mpath.read_text(encoding="utf-8"))
    except ValueError as e:
        raise SweepFolderError(f"{mpath}: unreadable ({e})") from None


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _source(root: Path, table: str) -> str | None:
    """DuckDB's reader for one table of a sweep folder, or None if it has no file yet."""
    base = root / table
    if not base.is_dir() or not any(base.glob("point=*/*.parquet")):
        return None
    glob = str(base / "point=*" / "*.parquet")
    return (
        f"read_parquet({_sql_str(glob)}, union_by_name = true, hive_partitioning = true, "
        "hive_types = {'point': VARCHAR}, file_row_number = true)"
    )


def _connect(root: Path) -> tuple[Any, dict[str, Any], list[str]]:
    """A DuckDB connection with one view per table of the folder that has data.

    Runs are numbered here (``run``): in grid order (grid points in the order sweeps first
    ran them, then seeds), over the runs stored in ``flows`` and ``failed``, so the numbers
    agree between tables and with the frame :func:`mpsim.sweep` returns.
    """
    duckdb = _duckdb()
    import pyarrow as pa

    manifest = _manifest(root)
    grid = list(manifest.get("grid") or [])
    points = list(manifest.get("points") or [])
    con = duckdb.connect()
    sources = {t: src for t in TABLES if (src := _source(root, t)) is not None}
    runs = [f"SELECT run_id, point, seed FROM {sources[t]}" for t in ("flows", "failed") if t in sources]
    if not runs:
        return con, manifest, []
    order = pa.table({"point": pa.array(points, pa.string()), "pos": pa.array(range(len(points)), pa.int64())})
    con.register("_point_order", order)
    con.execute(
        "CREATE TEMP TABLE _runs AS SELECT r.run_id, "
        "row_number() OVER (ORDER BY coalesce(o.pos, 9223372036854775807), r.point, r.seed, r.run_id) - 1 AS run "
        f"FROM (SELECT DISTINCT run_id, point, seed FROM ({' UNION ALL '.join(runs)})) r "
        "LEFT JOIN _point_order o USING (point)"
    )
    con.unregister("_point_order")
    views = []
    for t, src in sources.items():
        cols = [c[0] for c in con.sql(f"DESCRIBE SELECT * FROM {src}").fetchall()]
        lead = [c for c in [*grid, "seed"] if c in cols]
        rest = [c for c in cols if c not in lead and c not in ("file_row_number", "run")]
        select = ", ".join([*(f"t.{_quote(c)}" for c in lead), "r.run", *(f"t.{_quote(c)}" for c in rest)])
        con.execute(
            f"CREATE VIEW {t} AS SELECT {select} FROM {src} AS t JOIN _runs AS r ON t.run_id = r.run_id "
            "ORDER BY r.run, t.file_row_number"
        )
        views.append(t)
    return con, manifest, views


# the type of the result follows from `lazy` alone: a DataFrame, or a relation with lazy=True
@overload
def load_sweep(folder: str | os.PathLike[str], table: str = ..., *, lazy: Literal[False] = ...) -> "pd.DataFrame": ...
@overload
def load_sweep(folder: str | os.PathLike[str], table: str = ..., *, lazy: Literal[True]) -> "duckdb.DuckDBPyRelation": ...
@overload
def load_sweep(folder: str | os.PathLike[str], table: str = ..., *, lazy: bool) -> "pd.DataFrame | duckdb.DuckDBPyRelation": ...
def load_sweep(folder: str | os.PathLike[str], table: str = "flows", *, lazy: bool = False) -> Any:
    """Reads a sweep folder written by :func:`mpsim.sweep` with ``out=FOLDER``.

    Args:
        folder: the sweep folder.
        table: ``"flows"`` (one row per run and flow, the default), ``"failed"`` (one row
            per run that raised: grid columns, ``seed``, ``run``, ``run_id``,
            ``error_type``, ``error``), or, for a sweep with ``series=True``,
            ``"flow_series"``, ``"subflow_series"`` or ``"link_series"``.
        lazy: return a DuckDB relation instead of a DataFrame: only the run ids are read
            up front, the rows when the relation is used (``rel.filter(...)``,
            ``rel.aggregate(...)``, ``rel.df()``), so a large folder can be summarised
            without loading it.

    Returns:
        a pandas DataFrame (``attrs["grid"]`` lists the grid keys) or a
        ``duckdb.DuckDBPyRelation``, ordered by run. Besides the columns of
        :func:`mpsim.sweep`'s frame there are ``run_id`` (a hash of the scenario as run,
        seed included) and ``point`` (the grid point's partition). A table with no rows yet
        gives an empty frame (or relation).

    Raises:
        FileNotFoundError: no such folder.
        SweepFolderError: the folder is not a sweep folder.
        ValueError: unknown table.
    """
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; choose from {', '.join(TABLES)}")
    root = Path(folder)
    con, manifest, views = _connect(root)
    grid = list(manifest.get("grid") or [])
    rel = con.sql(f"SELECT * FROM {table}") if table in views else con.sql("SELECT NULL AS run LIMIT 0")
    if lazy:
        return rel  # the relation keeps its connection open
    frame = _arrow(rel).to_pandas() if table in views else _empty_frame()
    con.close()
    frame.attrs["grid"] = grid
    return frame


def _arrow(rel: Any) -> Any:
    """The relation's rows as an Arrow table (the method's name changed in DuckDB 1.4)."""
    to_table = getattr(rel, "to_arrow_table", None) or rel.fetch_arrow_table
    return to_table()


def _empty_frame() -> "pd.DataFrame":
    import pandas as pd

    return pd.DataFrame()


@overload
def query(folder: str | os.PathLike[str], sql: str, *, lazy: Literal[False] = ...) -> "pd.DataFrame": ...
@overload
def query(folder: str | os.PathLike[str], sql: str, *, lazy: Literal[True]) -> "duckdb.DuckDBPyRelation": ...
@overload
def query(folder: str | os.PathLike[str], sql: str, *, lazy: bool) -> "pd.DataFrame | duckdb.DuckDBPyRelation": ...
def query(folder: str | os.PathLike[str], sql: str, *, lazy: bool = False) -> Any:
    """Runs SQL over a sweep folder with DuckDB.

    The tables of the folder are views named ``flows``, ``failed`` and, with time series,
    ``flow_series``, ``subflow_series`` and ``link_series``. Grid columns have dots in their
    names, so quote them: ``SELECT "link.bottleneck.loss", avg(goodput_bps) FROM flows
    GROUP BY ALL``.

    Returns:
        a DataFrame, or with ``lazy=True`` a DuckDB relation.

    Raises:
        ValueError: the SQL is wrong (DuckDB's message) or names a table the folder does not
            have yet.
    """
    root = Path(folder)
    duckdb = _duckdb()
    con, _, views = _connect(root)
    try:
        rel = con.sql(sql)
    except duckdb.Error as e:
        con.close()
        raise ValueError(_query_message(e, views)) from None
    if rel is None:
        con.close()
        raise ValueError("the SQL returns no rows (use a SELECT)")
    if lazy:
        return rel
    try:
        return _arrow(rel).to_pandas()
    except duckdb.Error as e:
        raise ValueError(_query_message(e, views)) from None
    finally:
        con.close()


def describe(folder: str | os.PathLike[str]) -> list[tuple[str, int, list[str]]]:
    """``(table, rows, columns)`` for each table of a sweep folder that has rows."""
    con, _, views = _connect(Path(folder))
    try:
        out = []
        for t in views:
            rel = con.sql(f"SELECT * FROM {t}")
            rows = con.sql(f"SELECT count(*) FROM {t}").fetchall()[0][0]
            out.append((t, int(rows), list(rel.columns)))
        return out
    finally:
        con.close()


def aggregate_relation(rel: Any, value: str, by: Sequence[str] | None) -> tuple["pd.DataFrame", list[str]]:
    """The per-group ``n``, ``mean``, ``std``, ``min``, ``max`` of *value* in a DuckDB
    relation, computed by DuckDB; groups in order of their first run (see ``aggregate``)."""
    cols = list(rel.columns)
    if by is None:
        grid = cols[: cols.index("seed")] if "seed" in cols else []
        by = [*grid, "flow"]
    by = list(by)
    missing = [c for c in [*by, value] if c not in cols]
    if missing:
        raise KeyError(missing[0])
    keys = ", ".join(_quote(c) for c in by)
    v = _quote(value)
    order = (["min(\"run\")"] if "run" in cols else []) + [_quote(c) for c in by]
    sql = (
        f"SELECT {keys}{', ' if keys else ''}count({v}) AS n, avg({v}) AS mean, stddev_samp({v}) AS std, "
        f"min({v}) AS min, max({v}) AS max FROM rel"
        + (f" GROUP BY {keys}" if keys else "")
        + (f" ORDER BY {', '.join(order)}" if keys else "")
    )
    return _arrow(rel.query("rel", sql)).to_pandas(), by


def _query_message(e: Exception, views: Sequence[str]) -> str:
    text = " ".join(str(e).split())
    if re.search(r"Table with name \w+ does not exist", text):
        text += f" (this sweep folder has the tables: {', '.join(views) or 'none yet'})"
    return text
