"""Sweeps at scale: a sweep folder (Parquet dataset), resume, failures, Dask, queries.

The runs here last a fraction of a second each so that a worker or the sweep itself can be
killed while runs are in flight; the whole file takes well under a minute on two cores.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import mpsim
from mpsim.cli import main
from mpsim.sweeping.store import SweepFolderError

DATA = Path(__file__).parent / "data"
distributed = pytest.importorskip("distributed")  # installed by the Makefile's setup step

# A run of about 0.2 s: long enough to kill things while runs are in flight.
SLOW = {
    "duration": "12s",
    "link.bottleneck.rate": "1Gbps",
    "link.access.rate": "10Gbps",
    "link.bottleneck.queue": "5000pkt",
}
# 3 x 2 grid points x 2 seeds = 12 runs of 2 flows each.
GRID = {"link.bottleneck.loss": ["0.001%", "0.002%", "0.004%"], "flow.*.tcp.min_rto": ["200ms", "1s"]}
RUNS, FLOWS = 12, 2
# Columns that differ between two identical sweeps: the wall time of each run.
VARYING = ["wall_s"]


def stored_runs(folder: Path) -> int:
    """Runs whose rows are in the folder's flows table (read as the files appear)."""
    n = 0
    for p in sorted((folder / "flows").glob("point=*/*.parquet")):
        n += pq.read_metadata(p).num_rows
    return n // FLOWS


def comparable(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in VARYING if c in frame.columns]).reset_index(drop=True)


def assert_complete(folder: Path, reference: pd.DataFrame) -> pd.DataFrame:
    """The folder holds every run exactly once and its rows equal *reference*'s."""
    got = mpsim.load_sweep(folder)
    assert len(got) == RUNS * FLOWS
    assert got[["run_id", "flow"]].drop_duplicates().shape[0] == len(got)  # nothing written twice
    assert got["run_id"].nunique() == RUNS
    assert got["run"].tolist() == [r for r in range(RUNS) for _ in range(FLOWS)]
    pd.testing.assert_frame_equal(comparable(got), comparable(reference))
    assert not list(folder.rglob("*.tmp"))
    return got


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> pd.DataFrame:
    """The 12-run sweep, uninterrupted, on local processes, read back from its folder."""
    folder = tmp_path_factory.mktemp("ref") / "sweep"
    rep = mpsim.sweep(DATA / "small.toml", GRID, seeds=2, overrides=SLOW, processes=2, progress=False, out=folder)
    assert (rep.total, rep.done, rep.skipped, rep.failed) == (RUNS, RUNS, 0, 0)
    assert isinstance(rep, mpsim.SweepReport) and rep.folder == folder
    got = mpsim.load_sweep(folder)
    pd.testing.assert_frame_equal(rep.frame, got)  # the report's rows are read from the folder
    return got


@pytest.fixture(scope="module")
def cluster():
    """A Dask LocalCluster of 2 worker processes, 1 thread each."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        yield c


def kill_when_stored(folder: Path, at_least: int, kill, timeout: float = 60.0) -> threading.Thread:
    """Starts a thread that calls kill() once *at_least* runs are stored in *folder*."""
    state = {"killed": False, "stored": None}

    def watch() -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if (folder / "flows").is_dir() and stored_runs(folder) >= at_least:
                state["stored"] = stored_runs(folder)
                kill()
                state["killed"] = True
                return
            time.sleep(0.01)

    t = threading.Thread(target=watch, daemon=True)
    t.state = state  # type: ignore[attr-defined]
    t.start()
    return t


# ---------------------------------------------------------------------------------------
# Dask and local processes give the same rows


def test_dask_local_cluster_rows_equal_local_processes(small_path, tmp_path, reference):
    rep = mpsim.sweep(small_path, GRID, seeds=2, overrides=SLOW, dask="local:2", progress=False,
                      out=tmp_path / "dask")
    assert (rep.total, rep.done, rep.skipped, rep.failed) == (RUNS, RUNS, 0, 0)
    got = assert_complete(tmp_path / "dask", reference)
    # ... and the rows of the in-memory frame of a serial sweep
    mem = mpsim.sweep(small_path, GRID, seeds=2, overrides=SLOW, processes=1, progress=False).frame
    pd.testing.assert_frame_equal(comparable(got.drop(columns=["run_id", "point"])), comparable(mem))
    assert got.attrs["grid"] == list(GRID)


# ---------------------------------------------------------------------------------------
# An interrupted sweep resumes


SCRIPT = """\
import sys
import mpsim

if __name__ == "__main__":
    mpsim.sweep(sys.argv[1], {grid!r}, seeds=2, overrides={slow!r}, processes=2, progress=False,
                out=sys.argv[2], flush_every=0)
"""


def test_sweep_killed_then_resumed_gives_the_rows_of_an_uninterrupted_one(small_path, tmp_path, reference, capsys):
    script = tmp_path / "sweep.py"
    script.write_text(SCRIPT.format(grid=GRID, slow=SLOW))
    folder = tmp_path / "study"
    proc = subprocess.Popen([sys.executable, str(script), str(small_path), str(folder)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    psutil = pytest.importorskip("psutil")
    parent = psutil.Process(proc.pid)
    workers: list = []

    def kill() -> None:
        for child in parent.children(recursive=True):
            try:
                if child.status() != psutil.STATUS_ZOMBIE:
                    workers.append(child)
            except psutil.NoSuchProcess:
                pass
        os.kill(proc.pid, signal.SIGKILL)

    watcher = kill_when_stored(folder, RUNS // 2, kill)
    proc.wait(timeout=120)
    watcher.join()
    assert watcher.state["killed"], "the sweep finished before it could be killed: " + proc.stderr.read().decode()
    assert proc.returncode == -signal.SIGKILL
    # its worker processes do not outlive it
    _, alive = psutil.wait_procs(workers, timeout=10)
    alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    for p in alive:
        p.kill()
    assert not alive
    before = stored_runs(folder)
    assert RUNS // 2 <= before < RUNS
    # Resuming runs the rest only: 'mpsim sweep' into the same folder (resume is the default).
    args = ["sweep", str(small_path), "--out", str(folder), "--seeds", "2", "--processes", "2"]
    for key, values in GRID.items():
        args += ["--grid", f"{key}={','.join(values)}"]
    for key, value in SLOW.items():
        args += ["--set", f"{key}={value}"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"{RUNS} runs: {RUNS - before} done, {before} already stored, 0 failed" in out
    assert f"holds {RUNS * FLOWS} rows ({RUNS} runs)" in out
    assert_complete(folder, reference)
    # Once more: everything is stored, nothing runs.
    rep = mpsim.sweep(small_path, GRID, seeds=2, overrides=SLOW, progress=False, out=folder)
    assert (rep.done, rep.skipped, rep.failed) == (0, RUNS, 0)
    assert_complete(folder, reference)


# ---------------------------------------------------------------------------------------
# A worker killed mid-sweep


def test_local_worker_killed_mid_sweep_is_replaced_and_its_runs_rerun(small_path, tmp_path, reference):
    folder = tmp_path / "study"
    killed: list[int] = []

    def kill() -> None:
        workers = multiprocessing.active_children()
        assert workers
        killed.append(workers[0].pid)
        os.kill(workers[0].pid, signal.SIGKILL)

    watcher = kill_when_stored(folder, 2, kill)
    rep = mpsim.sweep(small_path, GRID, seeds=2, overrides=SLOW, processes=2, progress=False, out=folder,
                      flush_every=0)
    watcher.join()
    assert killed and watcher.state["stored"] < RUNS
    assert (rep.done + rep.skipped, rep.failed) == (RUNS, 0)
    assert rep.retried >= 1  # the runs the dead worker had were run again
    assert_complete(folder, reference)


def test_dask_worker_killed_mid_sweep_is_rescheduled(small_path, tmp_path, reference, cluster):
    from distributed import Client

    folder = tmp_path / "study"
    with Client(cluster) as client:
        pids = client.run(os.getpid)
    victim = sorted(pids.values())[0]
    watcher = kill_when_stored(folder, 2, lambda: os.kill(victim, signal.SIGKILL))
    rep = mpsim.sweep(small_path, GRID, seeds=2, overrides=SLOW, dask=cluster.scheduler_address, progress=False,
                      out=folder, flush_every=0)
    watcher.join()
    assert watcher.state["killed"] and watcher.state["stored"] < RUNS
    assert (rep.done, rep.failed) == (RUNS, 0)
    assert_complete(folder, reference)
    with Client(cluster) as client:
        client.wait_for_workers(2, timeout=30)
        assert victim not in client.run(os.getpid).values()  # the nanny started a new worker


# ---------------------------------------------------------------------------------------
# A failing grid point


@pytest.mark.parametrize("backend", ["local", "dask"])
def test_failing_grid_point_is_recorded_and_the_sweep_goes_on(small_path, tmp_path, backend, cluster, capsys):
    grid = {"link.bottleneck.loss": ["1%", "-3%", "2%"]}
    where = {"processes": 2} if backend == "local" else {"dask": cluster}
    folder = tmp_path / "study"
    capsys.readouterr()
    rep = mpsim.sweep(small_path, grid, seeds=3, validate=False, progress=True, out=folder, **where)
    assert (rep.total, rep.done, rep.skipped, rep.failed) == (9, 6, 0, 3)
    bar = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
    assert "9/9" in bar and "3 failed" in bar, bar  # runs done, failed, and the time left
    flows = mpsim.load_sweep(folder)
    assert len(flows) == 6 * 2 and set(flows["link.bottleneck.loss"]) == {"1%", "2%"}
    failed = mpsim.load_sweep(folder, "failed")
    assert len(failed) == 3
    assert failed["link.bottleneck.loss"].tolist() == ["-3%"] * 3 and failed["seed"].tolist() == [1, 2, 3]
    assert failed["run"].tolist() == [3, 4, 5]  # numbered in grid order among all runs
    assert (failed["error_type"] == "ScenarioError").all()
    assert failed["error"].str.contains("link[1].loss: a probability must not be negative", regex=False).all()
    # Resuming runs the failed runs again (here they fail again) and records them once.
    rep = mpsim.sweep(small_path, grid, seeds=3, validate=False, progress=False, out=folder, **where)
    assert (rep.done, rep.skipped, rep.failed) == (0, 6, 3)
    assert len(mpsim.load_sweep(folder, "failed")) == 3
    assert len(mpsim.load_sweep(folder)) == 12


def test_failing_grid_point_without_a_folder_warns_and_lists_failures(small_path):
    grid = {"link.bottleneck.loss": ["1%", "-3%"]}
    with pytest.warns(RuntimeWarning, match="2 of 4 sweep runs failed"):
        frame = mpsim.sweep(small_path, grid, seeds=2, validate=False, processes=1, progress=False).frame
    assert frame["run"].tolist() == [0, 0, 1, 1]
    assert [f["run"] for f in frame.attrs["failed"]] == [2, 3]
    assert "must not be negative" in frame.attrs["failed"][0]["error"]


def test_script_without_main_guard_gets_a_clear_error(small_path, tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(f"import mpsim\nmpsim.sweep({str(small_path)!r}, seeds=4, processes=2, progress=False)\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1].startswith("concurrent.futures.process.BrokenProcessPool: "
                                                           "the local worker processes died while starting")


def test_cli_sweep_with_failed_runs_exits_1(small_path, tmp_path, capsys):
    folder = tmp_path / "study"
    rc = main(["sweep", str(small_path), "--grid", "link.bottleneck.loss=1%,-3%", "--no-validate", "--processes", "1",
               "--out", str(folder)])
    assert rc == 1
    io = capsys.readouterr()
    assert "2 runs: 1 done, 0 already stored, 1 failed" in io.out
    assert "1 run failed" in io.err and "must not be negative" in io.err


# ---------------------------------------------------------------------------------------
# What resuming reuses, and what it refuses


def test_resume_reuses_only_runs_of_the_same_scenario(small_path, tmp_path):
    folder = tmp_path / "study"
    grid = {"link.bottleneck.loss": ["1%", "2%"]}
    rep = mpsim.sweep(small_path, grid, seeds=2, processes=1, progress=False, out=folder)
    assert (rep.done, rep.skipped) == (4, 0)
    # more seeds and a new grid value: only the new runs run, and runs are numbered in grid order
    grid2 = {"link.bottleneck.loss": ["1%", "2%", "3%"]}
    rep = mpsim.sweep(small_path, grid2, seeds=3, processes=1, progress=False, out=folder)
    assert (rep.total, rep.done, rep.skipped) == (9, 5, 4)
    mem = mpsim.sweep(small_path, grid2, seeds=3, processes=1, progress=False).frame
    got = mpsim.load_sweep(folder)
    pd.testing.assert_frame_equal(comparable(got.drop(columns=["run_id", "point"])), comparable(mem))
    # the lazy relation aggregates like the frame
    pd.testing.assert_frame_equal(mpsim.aggregate(mpsim.load_sweep(folder, lazy=True)), mpsim.aggregate(mem),
                                  check_dtype=False)
    # a changed scenario (fixed overrides) does not reuse the rows: refused, or started over
    with pytest.raises(SweepFolderError, match="another scenario"):
        mpsim.sweep(small_path, grid2, seeds=3, overrides={"duration": "2s"}, processes=1, progress=False,
                    out=folder)
    with pytest.raises(SweepFolderError, match="other grid keys"):
        mpsim.sweep(small_path, {"flow.*.tcp.min_rto": ["1s"]}, processes=1, progress=False, out=folder)
    rep = mpsim.sweep(small_path, grid2, seeds=3, overrides={"duration": "2s"}, processes=1, progress=False,
                      out=folder, fresh=True)
    assert (rep.done, rep.skipped) == (9, 0)
    assert len(mpsim.load_sweep(folder)) == 18
    # a changed scenario file is a changed scenario too
    changed = tmp_path / "changed.toml"
    changed.write_text(small_path.read_text().replace('rate = "10Mbps"', 'rate = "12Mbps"'))
    with pytest.raises(SweepFolderError, match="another scenario"):
        mpsim.sweep(changed, grid2, seeds=3, overrides={"duration": "2s"}, processes=1, progress=False, out=folder)
    # runs of another mpsim version are not mixed in either
    manifest = json.loads((folder / "sweep.json").read_text())
    (folder / "sweep.json").write_text(json.dumps({**manifest, "mpsim": "0.0.1"}))
    with pytest.raises(SweepFolderError, match="runs of mpsim 0.0.1"):
        mpsim.sweep(small_path, grid2, seeds=3, overrides={"duration": "2s"}, processes=1, progress=False, out=folder)
    # a folder that is not a sweep folder is left alone
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(SweepFolderError, match="not a sweep folder"):
        mpsim.sweep(small_path, processes=1, progress=False, out=tmp_path / "other")


def test_kill_leftovers_are_tidied_on_resume(small_path, tmp_path):
    folder = tmp_path / "study"
    mpsim.sweep(small_path, {"link.bottleneck.loss": ["1%", "2%"]}, seeds=2, processes=1, progress=False,
                out=folder, series=True)
    flows = sorted((folder / "flows").glob("point=*/*.parquet"))
    assert len(flows) == 2  # one batch: one file per grid point
    # a sweep killed between a batch's series files and its flows file, and mid-write
    series = folder / "flow_series" / flows[0].parent.name / flows[0].name
    flows[0].unlink()
    (folder / "flows" / flows[0].parent.name / ".part-x.parquet.0a1b.tmp").write_bytes(b"PAR1")
    assert series.exists()
    rep = mpsim.sweep(small_path, {"link.bottleneck.loss": ["1%", "2%"]}, seeds=2, processes=1, progress=False,
                      out=folder, series=True)
    assert (rep.done, rep.skipped) == (2, 2)
    assert not series.exists() and not list(folder.rglob("*.tmp"))
    fs = mpsim.load_sweep(folder, "flow_series")
    flows = mpsim.load_sweep(folder)
    assert set(fs["run_id"]) == set(flows["run_id"]) and len(fs.drop_duplicates()) == len(fs)
    assert {"time_s", "flow", "cwnd_bytes", "goodput_bps", "link.bottleneck.loss", "seed", "run"} <= set(fs.columns)
    with pytest.raises(SweepFolderError, match="runs with time series"):
        mpsim.sweep(small_path, {"link.bottleneck.loss": ["1%", "2%"]}, seeds=2, processes=1, progress=False,
                    out=folder)


MIXED = """
name = "mixed"
duration = "2s"
[[link]]
name = "l1"
rate = "10Mbps"
delay = "10ms"
[[link]]
name = "l2"
rate = "10Mbps"
delay = "30ms"
[[path]]
name = "p1"
links = ["l1"]
[[path]]
name = "p2"
links = ["l2"]
[[flow]]
name = "tcp"
path = "p1"
[[flow]]
name = "mptcp"
paths = ["p1", "p2"]
cc = "lia"
"""


def test_flows_of_different_kinds_keep_all_their_columns(tmp_path):
    """A TCP flow first, a multipath flow second: the per-subflow columns only the second
    has are kept, in the folder as in the frame."""
    folder = tmp_path / "study"
    mpsim.sweep(MIXED, {"link.l2.loss": ["0%", "1%"]}, seeds=2, processes=1, progress=False, out=folder)
    mem = mpsim.sweep(MIXED, {"link.l2.loss": ["0%", "1%"]}, seeds=2, processes=1, progress=False).frame
    got = mpsim.load_sweep(folder)
    assert {"subflow0_goodput_bps", "subflow1_goodput_bps"} <= set(got.columns)
    assert got.loc[got["flow"] == "mptcp", "subflow1_goodput_bps"].notna().all()
    assert got.loc[got["flow"] == "tcp", "subflow1_goodput_bps"].isna().all()
    pd.testing.assert_frame_equal(comparable(got.drop(columns=["run_id", "point"])), comparable(mem))


# ---------------------------------------------------------------------------------------
# Queries


def test_query_cli_and_api(small_path, tmp_path, capsys):
    folder = tmp_path / "study"
    assert main(["sweep", str(small_path), "--grid", "link.bottleneck.loss=1%,2%", "--seeds", "3",
                 "--processes", "1", "--quiet", "--out", str(folder)]) == 0
    sql = 'SELECT "link.bottleneck.loss" AS loss, count(*) AS n, avg(goodput_bps) AS goodput FROM flows ' \
          'GROUP BY ALL ORDER BY loss'
    assert main(["query", str(folder), sql]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["loss", "n", "goodput"] and lines[2].split()[:2] == ["1%", "6"]
    assert lines[-1] == "(2 rows)"
    frame = mpsim.query(folder, sql)
    flows = mpsim.load_sweep(folder)
    assert frame["goodput"].tolist() == pytest.approx(
        flows.groupby("link.bottleneck.loss")["goodput_bps"].mean().tolist())
    assert main(["query", str(folder), sql, "--csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "loss,n,goodput"
    assert main(["query", str(folder)]) == 0
    assert capsys.readouterr().out.startswith("flows: 12 rows")
    assert main(["query", str(folder), "SELECT * FROM failed"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: query: ") and "has the tables: flows" in err and "\n" not in err
    assert main(["query", str(folder), "SELEC 1"]) == 2
    assert "syntax error" in capsys.readouterr().err
    assert main(["query", str(tmp_path / "nope"), "SELECT 1"]) == 2
    assert "no such folder" in capsys.readouterr().err
    with (folder / "sweep.json").open() as f:
        assert json.load(f)["grid"] == ["link.bottleneck.loss"]


def test_sweep_folder_options_need_a_folder(small_path, tmp_path, capsys):
    assert main(["sweep", str(small_path), "--fresh", "--out", str(tmp_path / "x.csv")]) == 2
    assert "--fresh needs --out FOLDER" in capsys.readouterr().err
    with pytest.raises(ValueError, match="series=True"):
        mpsim.sweep(small_path, series=True, progress=False)
    with pytest.raises(ValueError, match="local:N"):
        mpsim.sweep(small_path, dask="local:0", progress=False)
    assert list(tmp_path.iterdir()) == []


def test_lazy_relation_and_a_folder_without_rows(small_path, tmp_path):
    folder = tmp_path / "study"
    mpsim.sweep(small_path, {"link.bottleneck.loss": ["1%", "2%"]}, seeds=2, processes=1, progress=False, out=folder)
    rel = mpsim.load_sweep(folder, lazy=True)
    assert type(rel).__name__ == "DuckDBPyRelation"
    assert rel.columns[:4] == ["link.bottleneck.loss", "seed", "run", "flow"]
    assert len(rel.filter("flow = 'f1'").df()) == 4
    empty = tmp_path / "empty"
    rep = mpsim.sweep(small_path, {"link.bottleneck.loss": ["-1%"]}, validate=False, processes=1, progress=False,
                      out=empty)
    assert (rep.done, rep.failed) == (0, 1)
    assert mpsim.load_sweep(empty).empty
    assert len(mpsim.load_sweep(empty, "failed")) == 1


def test_dask_accepts_a_client_a_cluster_or_an_address(small_path, cluster):
    """A Client and a cluster object work like an address (tested above)."""
    from distributed import Client

    with Client(cluster) as client:
        a = mpsim.sweep(small_path, {"link.bottleneck.loss": ["1%", "2%"]}, seeds=2, dask=client, progress=False).frame
    b = mpsim.sweep(small_path, {"link.bottleneck.loss": ["1%", "2%"]}, seeds=2, dask=cluster, progress=False).frame
    c = mpsim.sweep(small_path, {"link.bottleneck.loss": ["1%", "2%"]}, seeds=2, processes=1, progress=False).frame
    pd.testing.assert_frame_equal(comparable(a), comparable(c))
    pd.testing.assert_frame_equal(comparable(b), comparable(c))


# ----- runs that would not end: run_timeout, and Ctrl-C


STALL = """
name = "stall"
duration = "2s"
[[link]]
name = "l"
rate = "10Mbps"
delay = "5ms"
[[path]]
name = "p"
links = ["l"]
[[flow]]
name = "f"
path = "p"
transport = "udp"
app = { kind = "onoff", rate = "1Mbps", packet = "100B", on = "1ns", off = "1ns" }
"""


@pytest.mark.parametrize("processes", [1, 2])
def test_a_run_past_run_timeout_is_recorded_and_the_sweep_goes_on(small_path, tmp_path, processes):
    # an on/off source switching every nanosecond takes minutes for 2 simulated seconds: the
    # run is stopped after 1 s and recorded, and the other grid point finishes normally
    stall = tmp_path / "stall.toml"
    stall.write_text(STALL)
    grid = {"flow.f.app": [{"kind": "onoff", "rate": "1Mbps", "packet": "100B", "on": "1ns", "off": "1ns"}, {"kind": "cbr", "rate": "1Mbps"}]}
    t = time.monotonic()
    with pytest.warns(RuntimeWarning, match="1 of 2 sweep runs failed"):
        frame = mpsim.sweep(stall, grid, 1, processes=processes, progress=False, run_timeout=1.0).frame
    assert time.monotonic() - t < 30
    (failed,) = frame.attrs["failed"]
    assert failed["error_type"] == "RunTimeout" and "run_timeout" in failed["error"], failed
    assert len(frame) == 1 and frame["goodput_bps"].iloc[0] > 0
    rep = mpsim.sweep(stall, None, 1, processes=processes, progress=False, run_timeout=1.0, out=tmp_path / "folder")
    assert (rep.done, rep.failed) == (0, 1)
    assert mpsim.load_sweep(tmp_path / "folder", table="failed")["error_type"].tolist() == ["RunTimeout"]
    for bad in (0, -1.0, float("nan"), "10s", True):
        with pytest.raises(ValueError, match="run_timeout"):
            mpsim.sweep(small_path, None, 1, run_timeout=bad)


def test_cli_run_timeout_reads_durations_and_refuses_others(small_path, tmp_path, capsys):
    from mpsim.cli import _seconds

    assert _seconds("90", "x") == 90 and _seconds("1.5min", "x") == 90 and _seconds("500ms", "x") == 0.5
    assert main(["sweep", str(small_path), "--run-timeout", "soon", "--out", str(tmp_path / "a.csv")]) == 2
    assert "--run-timeout expects a positive duration" in capsys.readouterr().err
    stall = tmp_path / "stall.toml"
    stall.write_text(STALL)
    assert main(["sweep", str(stall), "--run-timeout", "1s", "--processes", "1", "-q", "--out", str(tmp_path / "b.csv")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "1 run failed" in err[0] and "run_timeout" in err[0], err


def test_ctrl_c_stops_a_sweep_of_long_runs_at_once(tmp_path):
    # both workers are deep in runs that take minutes; Ctrl-C ends the sweep within seconds,
    # with one line and no traceback (the workers are terminated, not left to finish)
    stall = tmp_path / "stall.toml"
    stall.write_text(STALL)
    # as from a terminal: a shell runs background jobs with SIGINT ignored, and the child
    # would inherit that (Python then installs no KeyboardInterrupt handler at all)
    p = subprocess.Popen([sys.executable, "-m", "mpsim", "sweep", str(stall), "--seeds", "4", "--processes", "2", "--out", str(tmp_path / "f")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(5)
    t = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        ps = subprocess.run(["ps", "-eo", "pid,ppid,stat,etime,args"], capture_output=True, text=True).stdout
        p.kill()
        _, err = p.communicate()
        raise AssertionError(f"the sweep did not stop within 30 s of Ctrl-C\nstderr:\n{err[-2000:]}\nprocesses:\n{ps[-4000:]}") from None
    assert time.monotonic() - t < 15
    assert p.returncode == 130 and "Traceback" not in err and err.strip().splitlines()[-1] == "interrupted", err


def test_a_bad_python_plugin_name_fails_the_sweep_before_its_first_run(tmp_path):
    # check and run refuse `cc = "os:getcwd"` (a function, not a controller class); a sweep
    # must too, before it starts any run, naming the grid value
    base = tmp_path / "s.toml"
    base.write_text('duration = "1s"\n[[link]]\nname = "l"\nrate = "10Mbps"\ndelay = "10ms"\n'
                    '[[path]]\nname = "p"\nlinks = ["l"]\n[[flow]]\nname = "f"\npath = "p"\n')
    with pytest.raises(mpsim.ScenarioError, match=r"flow\.f\.cc.*os:getcwd|os:getcwd"):
        mpsim.sweep(str(base), {"flow.f.cc": ["reno", "os:getcwd"]}, seeds=1, processes=1, progress=False)
    with pytest.raises(mpsim.ScenarioError, match="os:nothing_here|no module|nothing_here"):
        mpsim.sweep(str(base), {"flow.f.cc": ["os:nothing_here"]}, seeds=1, processes=1, progress=False)
