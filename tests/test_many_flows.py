"""Results of many flows: the tables come from the core's Arrow columns without a Python
object per flow or per sample, and summary.json stays small."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import mpsim
from mpsim.api import Result

ROOT = Path(__file__).resolve().parents[1]

# every kind of flow the summary knows: Multipath TCP with subflows, MPTCP-rec, SCTP with
# CMT, media with classes, UDP beside TCP, Multipath QUIC
SCENARIOS = [
    ("scenarios/speed/mpquic_2path.toml", {"duration": "2s"}),
    ("scenarios/po_mptcp/wifi_wimax.toml", {"duration": "4s"}),
    ("scenarios/mptcp_rec/three_paths.toml", {"duration": "3s"}),
    ("scenarios/sctp/cmt_two_paths.toml", {"duration": "7s", "metrics__warmup": "1s"}),
    ("scenarios/mptcp/shared_bottleneck.toml", {"duration": "3s", "metrics__warmup": "1s"}),
]


def _records(frame: pd.DataFrame) -> list[dict]:
    """Rows as plain values, missing ones as None, for a comparison blind to dtypes."""
    out = []
    for row in frame.astype(object).to_dict("records"):
        out.append({k: (None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else v)
                    for k, v in row.items()})
    return out


def _from_dicts(res: Result, field: str | None) -> pd.DataFrame:
    """The table as it was built before: from the summary's dicts."""
    flows = res.summary["flows"]
    if field is None:
        return pd.DataFrame([{k: v for k, v in f.items() if k not in ("subflows", "classes")} for f in flows])
    return pd.DataFrame([{"flow": f["flow"], **x} for f in flows for x in f.get(field, [])])


@pytest.mark.parametrize("path,overrides", SCENARIOS, ids=[Path(p).stem for p, _ in SCENARIOS])
def test_flows_columns_are_the_table_arrow_reads_from_the_flows_as_json_lines(path, overrides):
    import pyarrow as pa
    import pyarrow.json as pj

    res = mpsim.run(str(ROOT / path), progress=False, **overrides)
    lines = b"".join(json.dumps(f).encode() + b"\n" for f in json.loads(res._core_summary.json())["flows"])
    theirs = pj.read_json(pa.BufferReader(lines), read_options=pj.ReadOptions(block_size=max(len(lines), 1 << 20)))
    ours = res._flows_arrow
    assert ours.schema == theirs.schema
    assert ours.equals(theirs)
    assert ours.num_rows == len(res.summary["flows"]) > 0


@pytest.mark.parametrize("path,overrides", SCENARIOS, ids=[Path(p).stem for p, _ in SCENARIOS])
def test_tables_from_the_core_hold_what_the_summary_holds(path, overrides):
    res = mpsim.run(str(ROOT / path), progress=False, **overrides)
    for table, field in (("flows", None), ("subflows", "subflows"), ("classes", "classes")):
        ours, theirs = getattr(res, table), _from_dicts(res, field)
        assert list(ours.columns) == list(theirs.columns), table
        assert _records(ours) == _records(theirs), table
        # an integer column stays integer, with <NA> where a flow lacks the field
        for col in ours.columns:
            if pd.api.types.is_float_dtype(ours[col]) and ours[col].notna().any():
                values = theirs[col].dropna()
                assert not all(isinstance(v, int) and not isinstance(v, bool) for v in values), (table, col)
    assert len(res.classes) > 0 or "po_mptcp" not in path


def test_series_and_trace_come_as_columns_with_the_usual_types():
    res = mpsim.run(str(ROOT / "scenarios/mptcp/shared_bottleneck.toml"), progress=False, duration="2s", metrics__warmup="0s",
                    metrics__trace=True)
    fs = res.flow_series
    assert len(fs) > 4 and fs["time_s"].dtype == "float64" and fs["cwnd_bytes"].dtype == "int64"
    assert pd.api.types.is_string_dtype(fs["flow"])
    tr = res.trace
    assert len(tr) > 1000 and pd.api.types.is_string_dtype(tr["event"])
    assert set(tr["flow"]) == set(res.flows["flow"])


def many(n: int) -> dict:
    return {
        "name": "many",
        "duration": "300ms",
        "metrics": {"interval": "100ms"},
        "link": [{"name": "l", "rate": "1Gbps", "delay": "5ms", "queue": "1000pkt"}],
        "path": [{"name": "p", "links": ["l"]}],
        "flow": [{"name": f"f{i}", "path": "p"} for i in range(n)],
    }


def test_summary_file_of_many_flows_keeps_the_first_thousand_beside_the_table(tmp_path):
    res = mpsim.run(many(1500), progress=False)
    assert len(res.flows) == 1500 and len(res.summary["flows"]) == 1500  # in memory: all of them
    res.save(tmp_path / "csv", "json,csv")
    brief = json.loads((tmp_path / "csv" / "summary.json").read_text())
    assert len(brief["flows"]) == 1000 and brief["flows_omitted"] == 500
    assert brief["flows"] == res.summary["flows"][:1000]
    assert {k: v for k, v in brief.items() if k not in ("flows", "flows_omitted")} == \
        {k: v for k, v in res.summary.items() if k != "flows"}
    assert len(pd.read_csv(tmp_path / "csv" / "flows.csv")) == 1500
    # without a table beside it, summary.json holds every flow
    res.save(tmp_path / "json", "json")
    assert len(json.loads((tmp_path / "json" / "summary.json").read_text())["flows"]) == 1500
    # at most 1,000 flows: the whole summary, as always
    small = mpsim.run(many(10), progress=False)
    small.save(tmp_path / "small", "json,csv")
    assert (tmp_path / "small" / "summary.json").read_text() == small.to_json() + "\n"


def test_a_run_of_many_flows_builds_no_python_object_per_flow(tmp_path):
    # the summary is parsed only if asked for: saving tables and the short summary do not
    res = mpsim.run(many(2000), progress=False)
    res.save(tmp_path, "json,parquet")
    assert "summary" not in res.__dict__
    assert len(pd.read_parquet(tmp_path / "flows.parquet")) == 2000
    assert len(res.links) == 2 and "summary" not in res.__dict__


class _Asked:
    """The core's summary of a run, with the forms asked of it noted."""

    def __init__(self, summary):
        self.summary, self.asked = summary, []

    def __getattr__(self, name):
        self.asked.append(name)
        return getattr(self.summary, name)


def test_a_run_of_many_flows_makes_only_the_summary_forms_its_output_needs(tmp_path):
    res = mpsim.run(many(1500), progress=False)
    res._core_summary = spy = _Asked(res._core_summary)
    res.save(tmp_path / "tables", "json,parquet")  # the short summary and the flows table: no full text
    assert sorted(spy.asked) == ["brief", "flows_columns"]
    brief = json.loads((tmp_path / "tables" / "summary.json").read_text())
    assert brief["flows_omitted"] == 500 and len(brief["flows"]) == 1000
    res = mpsim.run(many(1500), progress=False)
    res._core_summary = spy = _Asked(res._core_summary)
    res.save(tmp_path / "json", "json")  # every flow in summary.json: the text, and no columns
    assert spy.asked == ["json"]
    assert len(json.loads((tmp_path / "json" / "summary.json").read_text())["flows"]) == 1500
    # a small run has no short summary; each form of the summary holds the same flows
    small = mpsim.run(many(10), progress=False)
    assert small._core_summary.brief() is None and len(small._core_summary) == 10
    assert [f["flow"] for f in json.loads(small._core_summary.json())["flows"]] == list(small.flows["flow"])


def test_a_result_of_many_flows_pickles_with_its_summary_and_tables(tmp_path):
    import pickle

    res = mpsim.run(many(1200), progress=False)
    back = pickle.loads(pickle.dumps(res))
    assert back.summary == res.summary and back.flows.equals(res.flows)
    res.save(tmp_path / "a", "json,parquet")
    back.save(tmp_path / "b", "json,parquet")
    for name in ("summary.json", "flows.parquet", "links.parquet"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_run_reads_the_scenario_once_for_the_check_and_the_run(monkeypatch):
    from mpsim import _core

    calls = []

    def noted(name, f):
        def wrap(*args, **kw):
            calls.append((name, type(args[0]).__name__))
            return f(*args, **kw)

        return wrap

    for name in ("parse", "check", "run"):
        monkeypatch.setattr(_core, name, noted(name, getattr(_core, name)))
    res = mpsim.run(many(3), progress=False)
    assert calls == [("parse", "str"), ("check", "Scenario"), ("run", "Scenario")]
    assert len(res.flows) == 3 and res.run_info["estimate"]["events"] > 0
    calls.clear()
    mpsim.run(many(3), progress=False, memory_check=False, event_check=False)
    assert calls == [("parse", "str"), ("run", "Scenario")]


def test_a_parsed_scenario_runs_as_its_text_does():
    from mpsim import _core
    from mpsim.scenario import to_json

    js = to_json(many(20), "<dict>")
    parsed = _core.parse(js, "<dict>")
    assert _core.check(parsed, "<dict>") == _core.check(js, "<dict>")
    assert _core.run(parsed, "<dict>")["summary"].json() == _core.run(js, "<dict>")["summary"].json()
    with pytest.raises(_core.ScenarioError) as e:
        _core.parse(js.replace('"1Gbps"', '"fast"'), "x.toml")
    assert e.value.args[0] == "x.toml" and "rate" in e.value.args[1]
    with pytest.raises(TypeError):
        _core.check(3, "<dict>")


def test_files_of_many_flows_hold_one_flow_a_line_and_the_series_as_through_pandas(tmp_path):
    res = mpsim.run(many(1500), progress=False)
    res.save(tmp_path, "json,parquet")
    lines = (tmp_path / "scenario.json").read_text().splitlines()
    assert json.loads("\n".join(lines)) == res.scenario
    assert '    {"name": "f1499", "path": "p"}' in lines
    res.save(tmp_path / "all", "json")
    text = (tmp_path / "all" / "summary.json").read_text()
    assert json.loads(text) == res.summary and len(text.splitlines()) < 1600
    # the series go to Parquet from the core's buffers: the file a DataFrame gives (NaN as null)
    from mpsim.stream import parquet_safe, write_frame

    for table in ("flow_series", "subflow_series", "link_series"):
        write_frame(parquet_safe(getattr(res, table)), tmp_path / "frame.parquet")
        ours, theirs = pq.read_table(tmp_path / f"{table}.parquet"), pq.read_table(tmp_path / "frame.parquet")
        assert ours.equals(theirs) and ours.num_rows > 0, table
    assert pq.read_table(tmp_path / "flow_series.parquet")["psnr_db"].null_count == len(res.flow_series)


def test_the_run_table_prints_the_first_flows_and_says_where_the_rest_are(tmp_path, capsys):
    from mpsim.cli import PRINT_FLOWS, main

    p = tmp_path / "many.toml"
    d = many(PRINT_FLOWS + 10)
    p.write_text('duration = "300ms"\n[[link]]\nname = "l"\nrate = "1Gbps"\n[[path]]\nname = "p"\nlinks = ["l"]\n'
                 + "".join(f'[[flow]]\nname = "{f["name"]}"\npath = "p"\n' for f in d["flow"]))
    assert main(["run", str(p)]) == 0
    out = capsys.readouterr().out
    assert f"(the first {PRINT_FLOWS} of {PRINT_FLOWS + 10} flows;" in out
    names = [line.split()[0] for line in out.splitlines() if line.startswith("f")]
    assert "f49" in names and "f50" not in names and "f59" not in names
