"""Series and traces streamed to Parquet while a run goes on (mpsim.run(..., stream=DIR),
mpsim run --out DIR --stream)."""

from __future__ import annotations

import json
import os

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import mpsim
from mpsim import _core
from mpsim.cli import main
from mpsim.resources import check_memory
from mpsim.stream import CHUNK_ROWS, TABLES, StreamError

# a multipath flow and a TCP flow over two lossy paths, traced: about 175,000 trace rows,
# three row groups of the trace, in about a second
SCENARIO = """
name = "streamed"
duration = "20s"
seed = 4
[metrics]
trace = true
interval = "20ms"
warmup = "1s"
[[link]]
name = "a"
rate = "50Mbps"
delay = "10ms"
loss = "0.3%"
[[link]]
name = "b"
rate = "20Mbps"
delay = "25ms"
queue = "60pkt"
[[path]]
name = "pa"
links = ["a"]
[[path]]
name = "pb"
links = ["b"]
[[flow]]
name = "m"
paths = ["pa", "pb"]
[[flow]]
name = "t"
path = "pb"
start = "300ms"
"""


@pytest.fixture(scope="module")
def in_memory() -> mpsim.Result:
    return mpsim.run(SCENARIO, progress=False)


def test_streamed_files_hold_the_tables_row_for_row(in_memory, tmp_path):
    out = tmp_path / "s"
    res = mpsim.run(SCENARIO, progress=False, stream=out)
    assert res.stream_dir == out and in_memory.stream_dir is None
    assert res.summary == in_memory.summary
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{t}.parquet" for t in TABLES)
    assert len(in_memory.trace) > 2 * CHUNK_ROWS  # the trace streams in several chunks
    for table in TABLES:
        f = pq.ParquetFile(out / f"{table}.parquet")
        expected = getattr(in_memory, table)
        assert f.metadata.num_rows == len(expected) > 0
        # one row group per chunk: a full chunk each but the last
        sizes = [f.metadata.row_group(i).num_rows for i in range(f.metadata.num_row_groups)]
        assert all(CHUNK_ROWS <= n < CHUNK_ROWS + 3 for n in sizes[:-1]) and sizes[-1] <= CHUNK_ROWS + 3, sizes
        # the file, read back, is the table of the run that did not stream; so is the
        # result's own table, read from that file
        pd.testing.assert_frame_equal(pd.read_parquet(out / f"{table}.parquet"), expected)
        pd.testing.assert_frame_equal(getattr(res, table), expected)
    assert pq.ParquetFile(out / "trace.parquet").metadata.num_row_groups >= 3


def test_saved_tables_are_the_same_streamed_or_not(in_memory, tmp_path):
    res = mpsim.run(SCENARIO, progress=False, stream=tmp_path / "s")
    a = in_memory.save(tmp_path / "a", ["json", "csv", "parquet"])
    b = res.save(tmp_path / "b", ["json", "csv", "parquet"])
    assert [p.name for p in a] == [p.name for p in b]
    for pa_, pb_ in zip(a, b):
        if pa_.suffix == ".csv" or pa_.name == "summary.json":
            # CSV written a row group at a time is the same text
            assert pa_.read_bytes() == pb_.read_bytes(), pa_.name
        elif pa_.suffix == ".parquet":
            pd.testing.assert_frame_equal(pd.read_parquet(pa_), pd.read_parquet(pb_))


def test_parquet_schemas_are_the_same_streamed_or_not(in_memory, tmp_path):
    # one Arrow schema per table whichever way it was written: names are plain `string`
    # (pandas alone would write the in-memory tables' names as `large_string`)
    out = tmp_path / "s"
    res = mpsim.run(SCENARIO, progress=False, stream=out)
    a = {p.stem: p for p in in_memory.save(tmp_path / "a", ["parquet"])}
    b = {p.stem: p for p in res.save(tmp_path / "b", ["parquet"])}
    assert a.keys() == b.keys() and set(TABLES) <= a.keys()
    for table in a:
        schema = pq.read_schema(a[table]).remove_metadata()
        assert schema == pq.read_schema(b[table]).remove_metadata(), table
        if table in TABLES:
            assert schema == pq.read_schema(out / f"{table}.parquet").remove_metadata(), table
        assert not [f.name for f in schema if pa.types.is_large_string(f.type)], table
    for table, names in [("flow_series", ["flow"]), ("subflow_series", ["flow", "path"]), ("link_series", ["link"]),
                         ("trace", ["flow", "path", "event", "link"]), ("flows", ["flow", "path", "cc"])]:
        schema = pq.read_schema(a[table])
        assert [schema.field(n).type for n in names] == [pa.string()] * len(names), table
    # the tables read back are the same, from either file
    for table in a:
        pd.testing.assert_frame_equal(pd.read_parquet(a[table]), pd.read_parquet(b[table]))


def test_chunks_are_written_while_the_run_goes_on(tmp_path):
    out = tmp_path / "s"
    seen: list[tuple[float, int]] = []

    def progress(frac: float) -> None:
        f = out / "trace.parquet"
        seen.append((frac, f.stat().st_size if f.exists() else 0))

    mpsim.run(SCENARIO, progress=progress, stream=out)
    early = [size for frac, size in seen if 0.5 <= frac <= 0.9]
    # half-way through, a chunk of the trace (several MB of rows) is on disk already
    assert early and early[0] > 100_000, seen[::50]
    assert max(size for _, size in seen) < (out / "trace.parquet").stat().st_size


def test_a_failing_sink_stops_the_run_with_its_error(tmp_path):
    calls = []

    def sink(table, columns):
        calls.append(table)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")

    js = json.dumps(mpsim.scenario.load(SCENARIO)[0])
    with pytest.raises(OSError, match="No space left"):
        _core.run(js, "<string>", None, None, sink, 1000)
    assert len(calls) == 3  # nothing more was handed over after the error


def test_a_run_without_trace_or_series_streams_empty_series(tmp_path):
    res = mpsim.run(SCENARIO, progress=False, stream=tmp_path / "s", metrics__trace=False, metrics__interval=0)
    assert res.trace is None
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["flow_series.parquet", "link_series.parquet",
                                                                 "subflow_series.parquet"]
    assert len(res.flow_series) == 0 and "goodput_bps" in res.flow_series.columns


def test_stream_needs_a_new_or_empty_folder(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "old.csv").write_text("x\n")
    with pytest.raises(StreamError, match=r"full: folder not empty; streamed tables go into a new or empty folder"):
        mpsim.run(SCENARIO, progress=False, stream=tmp_path / "full")
    (tmp_path / "file").write_text("")
    with pytest.raises(StreamError, match=r"file/sub: cannot write there \(Not a directory\)"):
        mpsim.run(SCENARIO, progress=False, stream=tmp_path / "file" / "sub")
    # an empty folder will do
    (tmp_path / "empty").mkdir()
    mpsim.run(SCENARIO, progress=False, stream=tmp_path / "empty", duration="2s")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders; covered by the other cases")
def test_stream_into_a_read_only_folder(tmp_path):  # pragma: no cover - CI runs as root
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    with pytest.raises(StreamError, match="cannot write there"):
        mpsim.run(SCENARIO, progress=False, stream=ro)


def test_cli_stream(tmp_path, write, capsys):
    scenario = write("s.toml", SCENARIO)
    out = tmp_path / "out"
    assert main(["run", str(scenario), "--out", str(out), "--stream", "-q"]) == 0
    names = sorted(p.name for p in out.iterdir())
    # json and parquet by default: the streamed tables are Parquet already
    assert names == sorted(["summary.json", "scenario.json", "run_info.json", "flows.parquet", "links.parquet",
                            "subflows.parquet", "classes.parquet", *(f"{t}.parquet" for t in TABLES)])
    plain = tmp_path / "plain"
    assert main(["run", str(scenario), "--out", str(plain), "--format", "json,parquet", "-q"]) == 0
    assert (out / "summary.json").read_bytes() == (plain / "summary.json").read_bytes()
    for t in TABLES:
        pd.testing.assert_frame_equal(pd.read_parquet(out / f"{t}.parquet"), pd.read_parquet(plain / f"{t}.parquet"))
    capsys.readouterr()


@pytest.mark.parametrize(
    "make, args, message",
    [
        (lambda d: (d / "x.txt").write_text("x"), [], r"^error: --out .*: folder not empty; streamed tables go into "
                                                     r"a new or empty folder \(give another one, or empty this one\)$"),
        (lambda d: None, ["sub"], r"^error: --out .*/sub: cannot write there \(Not a directory\)$"),
        (lambda d: None, None, r"^error: --stream needs --out DIR"),
    ],
)
def test_cli_stream_errors_are_one_line(tmp_path, write, capsys, make, args, message):
    import re

    scenario = write("s.toml", SCENARIO)
    d = tmp_path / "d"
    d.mkdir()
    make(d)
    if args == ["sub"]:
        target = ["--out", str(scenario / "sub")]  # below a file
    elif args is None:
        target = []
    else:
        target = ["--out", str(d)]
    assert main(["run", str(scenario), *target, "--stream", "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert re.search(message, err), err


def test_streamed_estimate_counts_a_chunk_and_the_refusal_suggests_streaming(monkeypatch):
    long = {"duration": "3600s"}
    whole = mpsim.check(SCENARIO, **long)["estimate"]
    streamed = mpsim.check(SCENARIO, stream=True, **long)["estimate"]
    assert streamed["stream"] and not whole["stream"]
    assert streamed["trace_rows"] == CHUNK_ROWS < whole["trace_rows"]
    assert streamed["state_bytes"] == whole["state_bytes"]
    monkeypatch.setenv("MPSIM_MEMORY_LIMIT", "2GB")
    with pytest.raises(mpsim.ScenarioError, match=r"stream the series and the trace to disk \(mpsim run --out DIR "
                                                  r"--stream; stream=DIR in Python\)"):
        check_memory(whole, "s.toml")
    # streamed, the same hour fits
    assert check_memory(streamed, "s.toml") is None


def test_cli_check_estimate_with_stream(write, capsys):
    scenario = write("s.toml", SCENARIO)
    assert main(["check", "--estimate", "--set", "duration=3600s", str(scenario)]) == 0
    whole = capsys.readouterr().out
    assert main(["check", "--estimate", "--stream", "--set", "duration=3600s", str(scenario)]) == 0
    streamed = capsys.readouterr().out

    def gb(text: str) -> float:
        import re

        m = re.search(r"and ([0-9.]+) (GB|MB) of memory", text)
        assert m, text
        return float(m.group(1)) * (1 if m.group(2) == "GB" else 1e-3)

    assert gb(streamed) < 0.5 < 5 < gb(whole)

