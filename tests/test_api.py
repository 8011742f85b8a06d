"""Tests of the Python API: loading, overrides, run, Result, save, sweep."""

from __future__ import annotations

import copy
import inspect
import json
import pickle
import re
import tomllib
from pathlib import Path

import pandas as pd
import pytest

import mpsim
from mpsim import ScenarioError, apply_overrides, load
from mpsim import _core


def without_wall(summary: dict) -> dict:
    s = copy.deepcopy(summary)
    s.pop("wall_s", None)
    return s


def flow(res: mpsim.Result, name: str) -> dict:
    return next(f for f in res.summary["flows"] if f["flow"] == name)


def link(res: mpsim.Result, name: str, direction: str = "forward") -> dict:
    return next(l for l in res.summary["links"] if l["link"] == name and l["direction"] == direction)


# ---------------------------------------------------------------------------------------
# ScenarioError


def test_scenario_error_format_and_pickle():
    e = ScenarioError("a.toml", "link[0].rate", "must be greater than zero")
    assert str(e) == "a.toml: link[0].rate: must be greater than zero"
    assert (e.origin, e.key, e.message) == ("a.toml", "link[0].rate", "must be greater than zero")
    assert isinstance(e, ValueError)
    assert str(ScenarioError("a.toml", "", "no such file")) == "a.toml: no such file"
    e2 = pickle.loads(pickle.dumps(e))
    assert (e2.origin, e2.key, e2.message) == (e.origin, e.key, e.message)


def test_core_errors_are_converted(small_text):
    with pytest.raises(ScenarioError) as ei:
        mpsim.check(small_text.replace('"10Mbps"', '"-5Mbps"'))
    e = ei.value
    assert not isinstance(e, _core.ScenarioError)
    assert (e.origin, e.key) == ("<string>", "link[1].rate")
    assert "negative" in e.message


# ---------------------------------------------------------------------------------------
# load


def test_load_forms(small_path, small_text):
    d_path, o_path = load(small_path)
    d_str, o_str = load(str(small_path))
    d_text, o_text = load(small_text)
    assert d_path == d_str == d_text
    assert (o_path, o_str, o_text) == (str(small_path), str(small_path), "<string>")
    src = tomllib.loads(small_text)
    d_dict, o_dict = load(src)
    assert d_dict == src and d_dict is not src and o_dict == "<dict>"
    d_dict["link"][0]["rate"] = "1Mbps"
    assert src["link"][0]["rate"] == "100Mbps"  # deep copy
    assert load('duration = "1s"')[0] == {"duration": "1s"}  # '=' without newline is TOML


@pytest.mark.parametrize(
    "content, expect",
    [
        (None, "no such file"),
        ("DIR", "is a directory"),
        (b"\x00\x01\x02\x03binary", "not a text file"),
        (b"name = \"caf\xe9\"\n", "not a text file"),
        ("", "empty"),
        ("  \n\n", "empty"),
        ('duration = "1s"\n[[link]\nname = "x"\n', "line 2"),
    ],
    ids=["missing", "directory", "binary", "latin1", "empty", "blank", "toml-syntax"],
)
def test_load_errors_name_the_file(tmp_path, content, expect):
    p = tmp_path / "s.toml"
    if content == "DIR":
        p.mkdir()
    elif isinstance(content, bytes):
        p.write_bytes(content)
    elif content is not None:
        p.write_text(content)
    with pytest.raises(ScenarioError) as ei:
        load(p)
    assert ei.value.origin == str(p)
    assert ei.value.key == ""
    assert expect in ei.value.message
    assert str(ei.value).startswith(f"{p}: ")


def test_load_rejects_other_types():
    with pytest.raises(TypeError):
        load(42)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------
# apply_overrides


def test_overrides_by_name_index_and_wildcard(small_path):
    d, _ = load(small_path)
    apply_overrides(
        d,
        {
            "duration": "2s",
            "seed": 9,
            "tcp.min_rto": "300ms",
            "metrics.interval": "50ms",
            "link.bottleneck.loss": "2%",
            "link.0.delay": "3ms",
            "flow.*.tcp.min_rto": "1s",  # creates the missing tcp tables
            "flow.f2.cc": "reno",
        },
    )
    assert d["duration"] == "2s" and d["seed"] == 9
    assert d["tcp"] == {"min_rto": "300ms"}
    assert d["metrics"]["interval"] == "50ms" and d["metrics"]["warmup"] == "500ms"
    assert d["link"][1]["loss"] == "2%"
    assert d["link"][0]["delay"] == "3ms"
    assert [f["tcp"] for f in d["flow"]] == [{"min_rto": "1s"}, {"min_rto": "1s"}]
    assert d["flow"][1]["cc"] == "reno"
    mpsim.check(d)


def test_overrides_values_used_as_given(small_path):
    d, _ = load(small_path)
    model = {"model": "gilbert", "mean": "1%", "burst": 4}
    apply_overrides(d, {"link.bottleneck.loss": model, "path.p.links": ["bottleneck"], "link.-1.delay": 0.02})
    assert d["link"][1]["loss"] == model and d["link"][1]["loss"] is not model
    assert d["path"][0]["links"] == ["bottleneck"]
    assert d["link"][1]["delay"] == 0.02
    mpsim.check(d)


def test_default_flow_names_are_addressable(small_text):
    d, _ = load(small_text.replace('name = "f1"\n', ""))
    apply_overrides(d, {"flow.flow0.cc": "reno"})
    assert d["flow"][0]["cc"] == "reno"


@pytest.mark.parametrize(
    "key, fragment",
    [
        ("link.nope.loss", "no link named 'nope' (links: access, bottleneck)"),
        ("link.7.loss", "index 7 is out of range"),
        ("flow.f9.tcp.mss", "no flow named 'f9'"),
        ("tcp.*.mss", "'*' picks every element"),
        ("duration.x", "not a table"),
        ("link..loss", "malformed key"),
        ("", "malformed key"),
    ],
)
def test_bad_override_keys(small_path, key, fragment):
    d, origin = load(small_path)
    before = copy.deepcopy(d)
    with pytest.raises(ScenarioError) as ei:
        apply_overrides(d, {"seed": 5, key: 1}, origin=origin)
    assert ei.value.key == key
    assert ei.value.origin == origin
    assert fragment in ei.value.message
    assert d == before  # all or nothing


def test_bad_override_values_are_attributed(small_path):
    with pytest.raises(ScenarioError) as ei:
        mpsim.run(small_path, link__bottleneck__rate="-1Mbps", progress=False)
    e = ei.value
    assert e.key == "link[1].rate"
    assert "link.bottleneck.rate" in str(e)
    with pytest.raises(ScenarioError) as ei:
        mpsim.check(small_path, overrides={"link.bottleneck.lossy": "1%"})
    assert ei.value.key == "link[1].lossy" and "did you mean 'loss'" in ei.value.message
    with pytest.raises(ScenarioError) as ei:
        mpsim.check(small_path, bogus=1)
    assert ei.value.key == "bogus" and ei.value.origin == str(small_path)


# ---------------------------------------------------------------------------------------
# run and Result


@pytest.fixture(scope="module")
def result() -> mpsim.Result:
    return mpsim.run(Path(__file__).parent / "data" / "small.toml", progress=False)


def test_run_from_path_string_and_dict(small_path, small_text, result):
    from_text = mpsim.run(small_text, progress=False)
    src = tomllib.loads(small_text)
    from_dict = mpsim.run(src, progress=False)
    from_str_path = mpsim.run(str(small_path), progress=False)
    expected = without_wall(result.summary)
    for r in (from_text, from_dict, from_str_path):
        assert without_wall(r.summary) == expected
    assert src == tomllib.loads(small_text)  # the caller's dict is left alone
    assert result.origin == str(small_path) and from_text.origin == "<string>"


def test_summary_contents(result):
    s = result.summary
    assert s["scenario"] == "small" and s["seed"] == 1 and s["duration_s"] == 3.0
    assert [f["flow"] for f in s["flows"]] == ["f1", "f2"]
    for f in s["flows"]:
        assert f["goodput_bps"] > 0 and f["path"] == "p" and f["cc"] == "reno"
    assert 0 < s["jain_index"] <= 1
    assert s["events"] > 0 and s["packets_delivered"] > 0


def test_result_frames(result):
    flows = result.flows
    assert flows.shape[0] == 2
    for col in ("flow", "path", "cc", "goodput_bps", "throughput_bps", "retransmits", "timeouts",
                "rtt_mean_ms", "delay_mean_ms", "jitter_ms"):
        assert col in flows.columns
    assert list(flows["flow"]) == ["f1", "f2"]
    links = result.links
    assert links.shape[0] == 4  # two links, two directions
    assert {"link", "direction", "utilization", "queue_drops", "loss_drops"} <= set(links.columns)
    fs = result.flow_series
    assert {"time_s", "flow", "cwnd_bytes", "goodput_bps"} <= set(fs.columns)
    assert set(fs["flow"]) == {"f1", "f2"}
    assert len(fs) == 2 * fs["time_s"].nunique()
    assert fs["time_s"].max() <= 3.0
    ls = result.link_series
    assert {"time_s", "link", "queue_packets", "queue_bytes", "drops"} <= set(ls.columns)
    assert result.trace is None
    assert result.scenario["name"] == "small"
    assert json.loads(result.to_json()) == result.summary
    assert "small" in repr(result)


def test_trace_and_overrides_in_result(small_path):
    res = mpsim.run(small_path, overrides={"metrics.trace": True}, duration="1s", progress=False)
    assert res.scenario["metrics"]["trace"] is True and res.scenario["duration"] == "1s"
    tr = res.trace
    assert isinstance(tr, pd.DataFrame) and len(tr) > 0
    assert {"time_s", "flow", "event", "seq", "len"} <= set(tr.columns)
    assert res.summary["duration_s"] == 1.0


def test_override_forms_agree(small_path):
    by_name = mpsim.run(small_path, overrides={"link.bottleneck.loss": "3%"}, progress=False)
    by_index = mpsim.run(small_path, overrides={"link.1.loss": "3%"}, progress=False)
    by_kwargs = mpsim.run(small_path, link__bottleneck__loss="3%", progress=False)
    assert without_wall(by_name.summary) == without_wall(by_index.summary) == without_wall(by_kwargs.summary)
    lossless = mpsim.run(small_path, link__bottleneck__loss="0%", progress=False)
    assert link(lossless, "bottleneck")["loss_drops"] == 0
    assert link(by_name, "bottleneck")["loss_drops"] > link(lossless, "bottleneck")["loss_drops"]
    # keyword overrides win over the overrides dict
    res = mpsim.run(small_path, overrides={"seed": 4}, seed=5, progress=False)
    assert res.summary["seed"] == 5


def test_wildcard_override_changes_every_flow(small_path):
    res = mpsim.run(small_path, overrides={"flow.*.app": {"kind": "bulk", "bytes": "100KB"}}, progress=False)
    for f in res.summary["flows"]:
        assert f["complete"] is True and f["completion_time_s"] > 0
        assert f["bytes_delivered"] == 100_000


def test_determinism(small_path):
    a = mpsim.run(small_path, seed=11, progress=False)
    b = mpsim.run(small_path, seed=11, progress=False)
    c = mpsim.run(small_path, seed=12, progress=False)
    assert without_wall(a.summary) == without_wall(b.summary)
    pd.testing.assert_frame_equal(a.flow_series, b.flow_series)
    assert without_wall(a.summary)["flows"] != without_wall(c.summary)["flows"]


def test_progress_callback(small_path):
    seen: list[float] = []
    mpsim.run(small_path, progress=seen.append)
    assert seen and seen[-1] == 1.0 and all(0 <= x <= 1 for x in seen)

    class Stop(Exception):
        pass

    def boom(frac: float) -> None:
        raise Stop

    with pytest.raises(Stop):
        mpsim.run(small_path, progress=boom)


def test_forced_progress_bar_goes_to_stderr(small_path, capsys):
    mpsim.run(small_path, progress=True)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "small:" in captured.err  # the bar, labelled with the scenario name


def _progress_doc(function) -> str:
    """The text of the ``progress`` entry of a function's Args, on one line."""
    doc = inspect.getdoc(function)
    m = re.search(r"^    progress: (.*?)\n    \S", doc, flags=re.S | re.M)
    assert m, function
    return " ".join(m.group(1).split())


def test_run_and_sweep_document_progress_in_the_same_words():
    assert _progress_doc(mpsim.run) == _progress_doc(mpsim.sweep)
    assert "None (the default)" in _progress_doc(mpsim.run) and "last with 1.0" in _progress_doc(mpsim.run)


@pytest.mark.parametrize("what", ["run", "sweep"])
def test_run_and_sweep_take_each_form_of_progress(small_path, capsys, what):
    def work(progress):
        if what == "run":
            return mpsim.run(small_path, duration="1s", progress=progress)
        return mpsim.sweep(small_path, {"link.bottleneck.loss": ["1%", "2%"]}, seeds=2, processes=1,
                           overrides={"duration": "1s"}, progress=progress)

    for quiet in (None, False):  # None: automatic, and stderr is no terminal here
        work(quiet)
        assert capsys.readouterr().err == "", quiet
    work(True)
    assert ("small:" if what == "run" else "sweep:") in capsys.readouterr().err  # the bar, labelled
    seen: list[float] = []
    work(seen.append)
    assert seen and seen[-1] == 1.0 and seen == sorted(seen) and all(0 <= x <= 1 for x in seen), seen
    if what == "sweep":
        assert seen == [0.25, 0.5, 0.75, 1.0]  # runs finished of 4
    assert capsys.readouterr().err == ""

    class Stop(Exception):
        pass

    def boom(frac: float) -> None:
        raise Stop

    with pytest.raises(Stop):  # the work stops, the exception propagates
        work(boom)
    with pytest.raises(TypeError, match="progress must be None, True, False or a callable"):
        work("yes")


def test_a_sweep_with_every_run_stored_still_ends_its_progress_at_one(small_path, tmp_path):
    mpsim.sweep(small_path, seeds=1, processes=1, overrides={"duration": "1s"}, out=tmp_path / "s", progress=False)
    seen: list[float] = []
    mpsim.sweep(small_path, seeds=1, processes=1, overrides={"duration": "1s"}, out=tmp_path / "s", progress=seen.append)
    assert seen == [1.0]


def test_check(small_path):
    info = mpsim.check(small_path)
    assert info["name"] == "small" and info["duration_s"] == 3.0
    assert info["links"] == ["access", "bottleneck"] and info["paths"] == ["p"] and info["flows"] == ["f1", "f2"]


def test_components():
    kinds = {k for k, _, _ in mpsim.components()}
    assert {"cc", "scheduler", "receiver", "sctp_cc", "sctp_scheduler", "rtx_policy", "loss", "app"} <= kinds
    # `mpsim list` titles every kind the core's tables give
    from mpsim.cli import _KIND_TITLES

    assert kinds <= set(_KIND_TITLES)
    assert ("mptcp_rec" in [n for _, n, _ in mpsim.components("receiver")])
    assert ("reno" in [n for _, n, _ in mpsim.components("cc")])


# ---------------------------------------------------------------------------------------
# save


def test_save_all_formats(result, tmp_path):
    out = tmp_path / "nested" / "run"
    paths = result.save(out, formats=("json", "csv", "parquet"))
    names = sorted(p.name for p in paths)
    assert names == sorted(
        ["summary.json", "scenario.json", "run_info.json"]
        + [f"{t}.{ext}" for t in ("flows", "subflows", "classes", "links", "flow_series", "subflow_series", "link_series") for ext in ("csv", "parquet")]
    )
    assert all(p.exists() and p.parent == out for p in paths)
    assert json.loads((out / "summary.json").read_text()) == result.summary
    assert json.loads((out / "scenario.json").read_text()) == result.scenario
    flows_csv = pd.read_csv(out / "flows.csv")
    assert list(flows_csv["flow"]) == ["f1", "f2"]
    assert flows_csv["goodput_bps"].tolist() == pytest.approx(result.flows["goodput_bps"].tolist())
    pq = pd.read_parquet(out / "flow_series.parquet")
    assert pq.shape == result.flow_series.shape
    assert pq["cwnd_bytes"].tolist() == result.flow_series["cwnd_bytes"].tolist()


def test_save_default_and_trace(small_path, tmp_path):
    res = mpsim.run(small_path, metrics__trace=True, duration="1s", progress=False)
    paths = res.save(tmp_path)
    names = {p.name for p in paths}
    assert {"summary.json", "flows.csv", "links.csv", "flow_series.csv", "link_series.csv", "trace.csv"} <= names
    assert not any(n.endswith(".parquet") for n in names)
    with pytest.raises(ValueError, match="unknown output format 'xml'"):
        res.save(tmp_path, formats="csv,xml")


# ---------------------------------------------------------------------------------------
# sweep

GRID = {"link.bottleneck.loss": ["0.5%", "2%"], "flow.*.tcp.min_rto": ["200ms", "1s"]}


def test_sweep_parallel_equals_serial(small_path):
    par = mpsim.sweep(small_path, GRID, seeds=2, processes=2, progress=False).frame
    ser = mpsim.sweep(small_path, GRID, seeds=2, processes=1, progress=False).frame
    assert len(par) == 2 * 2 * 2 * 2  # grid points x seeds x flows
    assert list(par.columns[:5]) == ["link.bottleneck.loss", "flow.*.tcp.min_rto", "seed", "run", "flow"]
    assert {"goodput_bps", "retransmits", "jain_index", "wall_s"} <= set(par.columns)
    assert (par["wall_s"] > 0).all() and (ser["wall_s"] > 0).all(), "each run's wall time, measured by its worker"
    assert "name" not in par.columns
    assert par["run"].tolist() == [r for r in range(8) for _ in range(2)]
    assert par["seed"].tolist() == [1, 1, 2, 2] * 4
    assert par["flow"].tolist() == ["f1", "f2"] * 8
    assert par["link.bottleneck.loss"].tolist() == ["0.5%"] * 8 + ["2%"] * 8
    pd.testing.assert_frame_equal(par.drop(columns="wall_s"), ser.drop(columns="wall_s"))
    # each row matches a single run with the same settings
    one = mpsim.run(small_path, overrides={"link.bottleneck.loss": "2%", "flow.*.tcp.min_rto": "1s"}, seed=2,
                    progress=False)
    row = par[(par["run"] == 7) & (par["flow"] == "f2")].iloc[0]
    assert row["goodput_bps"] == flow(one, "f2")["goodput_bps"]
    assert row["jain_index"] == one.summary["jain_index"]
    # more loss, less goodput (on average over flows and seeds)
    mean = par.groupby("link.bottleneck.loss")["goodput_bps"].mean()
    assert mean["0.5%"] > mean["2%"]


def test_sweep_fails_fast_on_bad_grid_value(small_path, monkeypatch):
    import mpsim.sweeping.engine

    def never(*a, **k):
        raise AssertionError("a run was started")

    monkeypatch.setattr(mpsim.sweeping.engine, "_execute", never)
    with pytest.raises(ScenarioError) as ei:
        mpsim.sweep(small_path, {"link.bottleneck.loss": ["1%", "-3%"]},
                    seeds=3, processes=2, progress=False)
    assert ei.value.key == "link[1].loss"
    assert "link.bottleneck.loss" in str(ei.value) and "-3%" in str(ei.value)
    with pytest.raises(ScenarioError) as ei:
        mpsim.sweep(small_path, {"link.nope.loss": ["1%"]}, progress=False)
    assert ei.value.key == "link.nope.loss"
    with pytest.raises(ScenarioError) as ei:
        mpsim.sweep(small_path, {"duration": ["2s", "400ms"]}, progress=False)  # warm-up now too long
    assert ei.value.key == "metrics.warmup" and "duration" in ei.value.message
    with pytest.raises(ValueError):
        mpsim.sweep(small_path, {"seed": [1, 2]}, progress=False)
    with pytest.raises(ValueError):
        mpsim.sweep(small_path, seeds=0, progress=False)
    with pytest.raises(ValueError):
        mpsim.sweep(small_path, out="x.txt", progress=False)


def test_the_sweeping_modules_never_import_the_api():
    """api re-exports sweep, SweepReport, load_sweep and query; the sweep engine and the sweep
    folder never import api back, at module level or inside a function: no import circle."""
    import ast

    import mpsim.sweeping.engine
    import mpsim.sweeping.store

    for module in (mpsim.sweeping.engine, mpsim.sweeping.store):
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                names = [(node.module or "") + "." + a.name for a in node.names]
                assert node.module not in ("api", "mpsim.api") and "api" not in {a.name for a in node.names}, (
                    module.__name__, node.lineno, names)
            elif isinstance(node, ast.Import):
                assert "mpsim.api" not in {a.name for a in node.names}, (module.__name__, node.lineno)


def test_sweep_out_files_and_aggregate(small_path, tmp_path):
    pq = tmp_path / "s.parquet"
    rep = mpsim.sweep(small_path, {"link.bottleneck.loss": ["1%", 0.02]}, seeds=[3, 4, 5], processes=1,
                      progress=False, out=pq)
    assert isinstance(rep, mpsim.SweepReport) and rep.folder is None
    assert (rep.total, rep.done, rep.skipped, rep.failed, rep.retried) == (6, 6, 0, 0, 0) and rep.wall_s > 0
    df = rep.frame
    assert df["seed"].tolist() == [3, 3, 4, 4, 5, 5] * 2
    back = pd.read_parquet(pq)
    assert back.shape == df.shape
    assert back["goodput_bps"].tolist() == df["goodput_bps"].tolist()
    with pytest.raises(ValueError, match="no folder"):
        rep.load()
    csv = tmp_path / "s.csv"
    assert len(mpsim.sweep(small_path, seeds=2, processes=1, progress=False, out=csv).frame) == 4
    assert len(pd.read_csv(csv)) == 4
    agg = mpsim.aggregate(df)
    assert list(agg.columns) == ["link.bottleneck.loss", "flow", "n", "mean", "ci95", "min", "max"]
    assert len(agg) == 4 and (agg["n"] == 3).all()
    assert (agg["ci95"] > 0).all() and (agg["min"] <= agg["mean"]).all()


# ---------------------------------------------------------------------------------------
# property: an override changes exactly the addressed value

from hypothesis import given, settings, strategies as st  # noqa: E402

_values = st.one_of(st.integers(-5, 5), st.text("0123456789.%msMbps", min_size=1, max_size=6), st.booleans())


@settings(max_examples=60, deadline=None)
@given(index=st.integers(0, 1), by_name=st.booleans(), field=st.sampled_from(["loss", "delay", "queue", "new"]),
       value=_values)
def test_override_touches_only_its_target(index, by_name, field, value):
    d = {
        "duration": "1s",
        "link": [{"name": "a", "rate": "1Mbps"}, {"name": "b", "rate": "2Mbps", "loss": "1%"}],
        "flow": [{"path": "p"}, {"path": "p", "tcp": {"mss": 1000}}],
    }
    before = copy.deepcopy(d)
    sel = ["a", "b"][index] if by_name else str(index)
    applied = mpsim.scenario._apply(d, {f"link.{sel}.{field}": value}, "<t>")
    assert applied == [(f"link[{index}].{field}", f"link.{sel}.{field}", value)]
    assert d["link"][index][field] == value
    d["link"][index].pop(field)
    before["link"][index].pop(field, None)
    assert d == before


def test_media_frame_trace_file_is_read_relative_to_the_scenario(tmp_path):
    (tmp_path / "video.trace").write_text("# type size\nI 30000\nP 6000\nP 6000\n\nB,3000\n")
    (tmp_path / "s.toml").write_text(
        'duration = "4s"\n[[link]]\nname = "l"\nrate = "10Mbps"\ndelay = "5ms"\n[[path]]\nname = "p"\nlinks = ["l"]\n'
        '[[flow]]\nname = "v"\npath = "p"\n'
        'app = { kind = "media", fps = 25, trace = "video.trace", classes = { I = { size = "1B", priority = 1 }, P = { size = "1B" }, B = { size = "1B" } } }\n'
    )
    res = mpsim.run(tmp_path / "s.toml", progress=False)
    cls = res.classes.set_index("class")
    # 101 frames (0..4 s inclusive) cycling I P P B: 26 I, 50 P, 25 B
    assert list(cls.loc[["I", "P", "B"], "frames"]) == [26, 50, 25]
    assert res.scenario["flow"][0]["app"]["frames"][0] == ["I", 30000]
    (tmp_path / "bad.trace").write_text("I thirty\n")
    text = (tmp_path / "s.toml").read_text().replace("video.trace", "bad.trace")
    (tmp_path / "b.toml").write_text(text)
    with pytest.raises(mpsim.ScenarioError) as e:
        mpsim.run(tmp_path / "b.toml", progress=False)
    assert e.value.key == "flow[0].app.trace" and "line 1" in e.value.message
