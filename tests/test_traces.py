"""Link capacity traces: mpsim.traces (generate, load, summary, capacity, plot), the CLI's
trace-gen and trace-summary, and links that follow a trace in scenarios."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mpsim
from mpsim import traces
from mpsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
#: The cellular traces beside the checkout (shared test data, never shipped).
SHARED = ROOT.parent / "shared" / "traces"
needs_shared = pytest.mark.skipif(
    not (SHARED / "Verizon-LTE-short.down").is_file(),
    reason="the cellular traces are not in ../shared/traces beside the checkout",
)

#: The README table of the shared traces: opportunities, length (s), mean capacity (Mbit/s).
SHARED_TABLE = {
    "ATT-LTE-driving-2016.down": (45_604, 120.0, 4.56),
    "ATT-LTE-driving-2016.up": (19_101, 120.0, 1.91),
    "TMobile-LTE-short.down": (194_846, 140.0, 16.70),
    "TMobile-LTE-short.up": (155_381, 140.0, 13.32),
    "TMobile-UMTS-driving.down": (156_262, 928.4, 2.02),
    "TMobile-UMTS-driving.up": (73_197, 931.2, 0.94),
    "Verizon-EVDO-driving.down": (46_065, 1062.0, 0.52),
    "Verizon-EVDO-driving.up": (74_768, 1064.7, 0.84),
    "Verizon-LTE-short.down": (58_655, 140.0, 5.03),
    "Verizon-LTE-short.up": (69_367, 140.0, 5.95),
}

STATES = [{"rate": "10Mbps", "hold": "2s"}, {"rate": "1Mbps", "hold": "500ms"}, {"rate": 0, "hold": 0.2}]


def scenario(link: dict, duration: str = "20s") -> dict:
    return {
        "duration": duration,
        "metrics": {"warmup": "2s"},
        "link": [{"name": "cell", "delay": "20ms", "queue": "60pkt", **link}],
        "path": [{"name": "p", "links": ["cell"]}],
        "flow": [{"name": "f", "path": "p", "cc": "cubic"}],
    }


def test_a_constant_trace_has_one_opportunity_per_1500_bytes(tmp_path):
    info = traces.generate(tmp_path / "c.down", "10s", rate="12Mbps")
    assert info == {"file": "c.down", "opportunities": 10_000, "length_s": 10.0, "mean_mbps": 12.0}
    assert traces.load(tmp_path / "c.down")[:3] == [1, 2, 3]
    # 3 Mbit/s: one opportunity every 4 ms; 24 Mbit/s: two each millisecond
    traces.generate(tmp_path / "slow", "1s", rate=3e6)
    traces.generate(tmp_path / "fast", "1s", rate="24Mbps")
    assert traces.load(tmp_path / "slow")[:3] == [4, 8, 12]
    assert traces.load(tmp_path / "fast")[:4] == [1, 1, 2, 2]


def test_a_markov_trace_is_the_same_for_the_same_seed(tmp_path):
    a = traces.generate(tmp_path / "a", "120s", states=STATES, seed=5)
    b = traces.generate(tmp_path / "b", "120s", states=STATES, seed=5)
    traces.generate(tmp_path / "c", "120s", states=STATES, seed=6)
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
    assert {**a, "file": ""} == {**b, "file": ""}
    assert (tmp_path / "a").read_bytes() != (tmp_path / "c").read_bytes()
    # the time-weighted mean of the states' rates, within what 120 s of draws allow
    mean = (10 * 2 + 1 * 0.5 + 0) / (2 + 0.5 + 0.2)
    assert 0.6 * mean < a["mean_mbps"] < 1.4 * mean
    # no 1 s bin holds more than the fastest state's rate, give or take one opportunity
    starts, mbps = traces.capacity(tmp_path / "a", "1s")
    assert len(starts) == round(a["length_s"]) and max(mbps) <= 10.0 + 0.012 + 1e-9


def test_generate_refuses_bad_arguments(tmp_path):
    out = tmp_path / "t"
    for kwargs, msg in [
        ({}, "either rate"),
        ({"rate": "1Mbps", "states": STATES}, "either rate"),
        ({"rate": "fast"}, "expected a rate"),
        ({"rate": "-1Mbps"}, "expected a rate"),
        ({"states": [{"rate": "1Mbps"}]}, "give both rate and hold"),
        ({"states": [{"rate": "1Mbps", "hold": "0s"}]}, "longer than zero"),
        ({"states": [{"rate": "1Mbps", "hold": "1s", "p": 1}]}, "unknown key 'p'"),
        ({"rate": "1kbps"}, "no delivery opportunity"),
    ]:
        with pytest.raises(ValueError, match=msg):
            traces.generate(out, "1s", **kwargs)
    assert not out.exists()


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "is empty"),
        ("1\n3\n2\n", "line 3: timestamp 2 ms is earlier than the one before"),
        ("1\n2.5\n", "line 2: expected a whole number of milliseconds, found '2.5'"),
        ("0\n0\n", "line 2: the last timestamp is 0 ms"),
        ("1\n\n2\n", "line 2: empty line"),
    ],
)
def test_load_names_the_file_and_line(tmp_path, text, message):
    (tmp_path / "bad").write_text(text)
    with pytest.raises(ValueError, match=message):
        traces.load(tmp_path / "bad")


def test_a_link_trace_is_relative_to_the_scenario_file(tmp_path):
    sub = tmp_path / "study"
    sub.mkdir()
    traces.generate(sub / "c12.down", "1s", rate="12Mbps")
    (sub / "s.toml").write_text(
        'duration = "10s"\n[metrics]\nwarmup = "2s"\n[[link]]\nname = "cell"\ntrace = "c12.down"\nrate = "12Mbps"\n'
        'delay = "20ms"\nqueue = "60pkt"\n[[path]]\nname = "p"\nlinks = ["cell"]\n[[flow]]\npath = "p"\n'
    )
    res = mpsim.run(sub / "s.toml", progress=False)
    assert 0.9 * 12e6 * 1460 / 1500 < res.summary["flows"][0]["goodput_bps"] < 12e6
    # the estimate goes by the trace's mean rate, as for the same link given as a rate
    fixed = mpsim.check((sub / "s.toml").read_text().replace('trace = "c12.down"\n', ""))
    assert mpsim.check(sub / "s.toml")["estimate"]["events"] == fixed["estimate"]["events"]


def test_a_dict_or_text_names_traces_from_the_current_directory(tmp_path, monkeypatch):
    traces.generate(tmp_path / "c12.down", "1s", rate="12Mbps")
    monkeypatch.chdir(tmp_path)
    res = mpsim.run(scenario({"trace": "c12.down", "rate": "12Mbps"}), progress=False)
    assert res.summary["flows"][0]["goodput_bps"] > 10e6
    with pytest.raises(mpsim.ScenarioError) as e:
        mpsim.check(scenario({"trace": "nothere.down", "rate": "12Mbps"}))
    assert e.value.key == "link[0].trace" and "nothere.down: cannot read the file: no such file" in str(e.value)


def test_a_constant_trace_gives_tcp_what_the_same_rate_gives(tmp_path, monkeypatch):
    traces.generate(tmp_path / "c8.down", "1s", rate="8Mbps")
    monkeypatch.chdir(tmp_path)
    traced = mpsim.run(scenario({"trace": "c8.down", "rate": "8Mbps"}), progress=False)
    fixed = mpsim.run(scenario({"rate": "8Mbps"}), progress=False)
    t, f = traced.summary["flows"][0]["goodput_bps"], fixed.summary["flows"][0]["goodput_bps"]
    assert abs(t / f - 1) < 0.03, (t, f)


def test_runs_over_a_markov_trace_are_repeatable(tmp_path, monkeypatch):
    traces.generate(tmp_path / "m.down", "60s", states=STATES, seed=2)
    monkeypatch.chdir(tmp_path)
    d = scenario({"trace": "m.down", "rate": "50Mbps"}, duration="30s")
    a, b = mpsim.run(d, progress=False), mpsim.run(d, progress=False)
    sa, sb = dict(a.summary), dict(b.summary)
    sa.pop("wall_s", None)
    sb.pop("wall_s", None)
    assert json.dumps(sa, sort_keys=True) == json.dumps(sb, sort_keys=True)
    assert a.flow_series.equals(b.flow_series)


def test_rate_with_traces_on_both_sides_is_refused(tmp_path, monkeypatch):
    traces.generate(tmp_path / "t", "1s", rate="12Mbps")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(mpsim.ScenarioError, match="both directions follow traces"):
        mpsim.check(scenario({"trace": "t", "reverse_trace": "t", "rate": "1Mbps"}))
    with pytest.raises(mpsim.ScenarioError, match="the reverse direction has no trace"):
        mpsim.check(scenario({"trace": "t"}))
    assert mpsim.check(scenario({"trace": "t", "reverse_trace": "t"}))["links"] == ["cell"]


def test_cli_trace_gen_and_summary(tmp_path, capsys):
    out = tmp_path / "cell.down"
    assert main(["trace-gen", str(out), "--duration", "30s", "--state", "10Mbps:2s", "--state", "1Mbps:1s", "--seed", "4"]) == 0
    first = capsys.readouterr().out.split("\n")
    assert first[0].split()[:2] == ["file", "opportunities"] and first[2].startswith("cell.down")
    again = tmp_path / "again.down"
    assert main(["trace-gen", str(again), "--duration", "30s", "--state", "10Mbps:2s", "--state", "1Mbps:1s", "--seed", "4"]) == 0
    assert out.read_bytes() == again.read_bytes()
    capsys.readouterr()
    assert main(["trace-gen", str(tmp_path / "c"), "--rate", "12Mbps", "--duration", "2s"]) == 0
    assert capsys.readouterr().out.split("\n")[2].split() == ["c", "2,000", "2.0", "12.00"]
    png = tmp_path / "cap.png"
    assert main(["trace-summary", str(out), str(tmp_path / "c"), "--plot", str(png)]) == 0
    assert png.stat().st_size > 1000
    # usage errors: exit 2, one line on stderr
    assert main(["trace-gen", str(tmp_path / "x")]) == 2
    assert main(["trace-gen", str(tmp_path / "x"), "--state", "10Mbps"]) == 2
    (tmp_path / "bad").write_text("5\n4\n")
    assert main(["trace-summary", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err
    assert "line 2: timestamp 4 ms is earlier" in err


def test_plot_draws_capacity_over_time(tmp_path):
    traces.generate(tmp_path / "m", "20s", states=STATES, seed=1)
    ax = traces.plot(tmp_path / "m", bin="500ms", out=tmp_path / "m.png")
    assert (tmp_path / "m.png").stat().st_size > 1000
    assert ax.get_xlabel() == "time (s)"


@needs_shared
def test_the_shared_traces_match_their_readme_table():
    for name, (n, length, mean) in SHARED_TABLE.items():
        info = traces.summary(SHARED / name)
        assert info["opportunities"] == n, name
        assert round(info["length_s"], 1) == length, name
        assert round(info["mean_mbps"], 2) == mean, name


@needs_shared
def test_tcp_over_a_real_trace_gets_between_half_and_all_of_its_capacity():
    d = scenario(
        {"trace": str(SHARED / "ATT-LTE-driving-2016.down"), "reverse_trace": str(SHARED / "ATT-LTE-driving-2016.up")},
        duration="120s",
    )
    d["metrics"]["warmup"] = "0s"
    res = mpsim.run(d, progress=False)
    goodput = res.summary["flows"][0]["goodput_bps"]
    mean = traces.summary(SHARED / "ATT-LTE-driving-2016.down")["mean_mbps"] * 1e6
    assert 0.5 * mean < goodput < mean


def test_plot_goodput_draws_a_run_beside_its_link_capacity(tmp_path):
    traces.generate(tmp_path / "c.down", "5s", rate="8Mbps")
    d = scenario({"trace": str(tmp_path / "c.down"), "rate": "8Mbps"}, duration="12s")
    d["link"].append({"name": "fixed", "rate": "5Mbps", "delay": "10ms"})
    d["path"].append({"name": "q", "links": ["fixed"]})
    d["metrics"]["interval"] = "500ms"
    res = mpsim.run(d, progress=False)
    ax = traces.plot_goodput(res, "cell", out=tmp_path / "g.png")
    assert (tmp_path / "g.png").stat().st_size > 0
    cap = ax.lines[0]
    # the 5 s trace repeats over the 12 s run
    assert max(cap.get_xdata()) >= 12 and all(abs(y - 8) < 0.02 for y in cap.get_ydata())
    labels = [ln.get_label() for ln in ax.lines]
    assert labels[0].startswith("capacity of cell") and "f goodput" in labels
    with pytest.raises(ValueError, match="fixed rate"):
        traces.plot_goodput(res, "fixed")
    with pytest.raises(ValueError, match="no link named 'wifi'"):
        traces.plot_goodput(res, "wifi")
