"""Time series and traces streamed to Parquet files while a run goes on.

``mpsim.run(..., stream=DIR)`` (``mpsim run --out DIR --stream``) has the core hand over
``flow_series``, ``subflow_series``, ``link_series`` and, if recorded, ``trace`` in chunks of
:data:`CHUNK_ROWS` rows as the run produces them; :class:`ParquetSink` appends each chunk as
one row group to ``DIR/<table>.parquet``. Memory then stays bounded whatever the run's
length, and the files hold exactly the rows the tables hold when the run does not stream.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Mapping

from . import _core
from .scenario import format_value

__all__ = ["CHUNK_ROWS", "TABLES", "StreamError", "ParquetSink", "arrow_column", "arrow_table", "parquet_safe", "prepare_dir", "write_frame"]

#: Rows per chunk (and Parquet row group): a chunk is written once a table holds this many
#: (a sample adds one row per flow at once, so a chunk may hold a few more).
CHUNK_ROWS: int = _core.CHUNK_ROWS

#: The tables that stream, in the order of the output.
TABLES = ("flow_series", "subflow_series", "link_series", "trace")


class StreamError(ValueError):
    """The folder given to stream into cannot be used."""


def prepare_dir(path: str | os.PathLike[str]) -> Path:
    """Creates *path* (with its parents) for a streamed run, or checks that it is empty, and
    that files can be written there.

    Raises:
        StreamError: *path* is a file, a folder that is not empty, or cannot be written.
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise StreamError(f"{p}: not a folder; streamed tables go into a new or empty folder")
    if p.is_dir() and any(p.iterdir()):
        raise StreamError(f"{p}: folder not empty; streamed tables go into a new or empty folder "
                          "(give another one, or empty this one)")
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe = p / ".mpsim-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise StreamError(f"{p}: cannot write there ({e.strerror or e})") from None
    return p


def arrow_table(columns: Mapping[str, tuple[str, bytes, bytes | None]] | None) -> Any:
    """A pyarrow table of a table the core hands over as Arrow buffers (``{name: (kind,
    values, offsets)}``, see ``crates/mpsim-py``), without copying them or making a Python
    object per value: ``f64`` as double, ``u64`` as int64 (the type pandas gives integers),
    ``str`` as string (``large_str``: large_string, for more than 2 GiB of text)."""
    import pyarrow as pa

    arrays, names = [], []
    for name, (kind, values, offsets) in (columns or {}).items():
        if kind in ("f64", "u64"):
            typ = pa.float64() if kind == "f64" else pa.int64()
            arrays.append(pa.Array.from_buffers(typ, len(values) // 8, [None, pa.py_buffer(values)]))
        elif kind in ("str", "large_str"):
            typ, width = (pa.string(), 4) if kind == "str" else (pa.large_string(), 8)
            assert offsets is not None
            arrays.append(pa.Array.from_buffers(typ, len(offsets) // width - 1,
                                                [None, pa.py_buffer(offsets), pa.py_buffer(values)]))
        else:  # pragma: no cover - a core newer than this package
            raise ValueError(f"column {name!r}: unknown kind {kind!r}")
        names.append(name)
    return pa.Table.from_arrays(arrays, names=names)


def arrow_column(column: tuple[Any, ...]) -> Any:
    """A pyarrow array of a column the core hands over as Arrow buffers (``(kind, rows,
    validity, ...)``, the flows of a summary, see ``crates/mpsim-py/src/columns.rs``):
    ``null``, ``bool``, ``i64`` (int64), ``f64`` (double), ``str`` (string), ``list`` (a list
    of the column that follows) or ``struct`` (its fields as ``[(name, column), ...]``)."""
    import pyarrow as pa

    kind, n = column[0], column[1]
    if kind == "null":
        return pa.nulls(n)
    validity = None if column[2] is None else pa.py_buffer(column[2])
    if kind in ("bool", "i64", "f64"):
        typ = {"bool": pa.bool_(), "i64": pa.int64(), "f64": pa.float64()}[kind]
        return pa.Array.from_buffers(typ, n, [validity, pa.py_buffer(column[3])])
    if kind == "str":
        return pa.Array.from_buffers(pa.string(), n, [validity, pa.py_buffer(column[4]), pa.py_buffer(column[3])])
    if kind == "list":
        items = arrow_column(column[4])
        return pa.Array.from_buffers(pa.list_(items.type), n, [validity, pa.py_buffer(column[3])], children=[items])
    if kind == "struct":
        names = [name for name, _ in column[3]]
        children = [arrow_column(c) for _, c in column[3]]
        typ = pa.struct([pa.field(name, c.type) for name, c in zip(names, children)])
        return pa.Array.from_buffers(typ, n, [validity], children=children)
    raise ValueError(f"unknown kind of column {kind!r}")  # pragma: no cover - a core newer than this package


def write_frame(frame: Any, path: str | os.PathLike[str]) -> None:
    """Writes a DataFrame to the Parquet file *path* with the types the streamed tables have:
    text columns as Arrow ``string`` (pandas' own conversion gives ``large_string`` for its
    ``str`` columns), so a table has one schema whether it was streamed or held in memory.

    The column is converted in slices of :data:`CHUNK_ROWS` rows, so that no slice holds more
    text than a ``string`` array can (2 GiB)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    schema = pa.schema([f.with_type(pa.string()) if pa.types.is_large_string(f.type) else f for f in table.schema],
                       metadata=table.schema.metadata)
    if schema != table.schema:
        table = pa.Table.from_batches(table.to_batches(max_chunksize=CHUNK_ROWS), schema=table.schema).cast(schema)
    pq.write_table(table, path)


class ParquetSink:
    """Receives the chunks of a streamed run (``sink(table, columns)``, see
    ``mpsim._core.run``) and writes each as a row group of ``folder/<table>.parquet``.

    Use it as a context manager, or call :meth:`close`: the files are complete only once
    closed (a Parquet file's index is written at its end).
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self._writers: dict[str, Any] = {}
        self.rows: dict[str, int] = {}
        self.chunks: dict[str, int] = {}

    def path(self, table: str) -> Path:
        return self.folder / f"{table}.parquet"

    def __call__(self, table: str, columns: Mapping[str, tuple[str, bytes, bytes | None]]) -> None:
        import pyarrow.parquet as pq

        batch = arrow_table(columns)
        w = self._writers.get(table)
        if w is None:
            w = pq.ParquetWriter(self.path(table), batch.schema)
            self._writers[table] = w
        if batch.schema != w.schema:  # a chunk's text beyond 2 GiB came as large_string
            batch = batch.cast(w.schema)
        w.write_table(batch)
        self.rows[table] = self.rows.get(table, 0) + batch.num_rows
        self.chunks[table] = self.chunks.get(table, 0) + 1

    @property
    def files(self) -> list[Path]:
        """The files written (or being written), in the order of :data:`TABLES`."""
        return [self.path(t) for t in TABLES if t in self._writers]

    def close(self) -> None:
        errors = []
        for w in self._writers.values():
            try:
                w.close()
            except OSError as e:  # pragma: no cover - a full disk at the very end
                errors.append(e)
        if errors:
            raise errors[0]

    def __enter__(self) -> "ParquetSink":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def parquet_safe(df: Any) -> Any:
    """Columns mixing value types (e.g. ``0.01`` and ``"2%"`` in a grid column) become
    text, which Parquet can store."""
    out = df
    for col in df.columns:
        if df[col].dtype != object:
            continue
        kinds = {type(v) for v in df[col] if v is not None and not (isinstance(v, float) and math.isnan(v))}
        if len(kinds) > 1 or (kinds and not kinds <= {str, int, float, bool}):
            if out is df:
                out = df.copy()
            out[col] = df[col].map(lambda v: v if isinstance(v, str) or v is None else format_value(v))
    return out
