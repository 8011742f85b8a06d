"""MPTCP-rec (seed 000): the receiver's rate estimate against NewReno on one lossy path, the
path list at work on seed 000's three paths, its settings in the scenario file, and `mpsim
list`. Scenarios in scenarios/mptcp_rec."""

import subprocess
import sys
from pathlib import Path

import pytest

import mpsim
from mpsim.validate import mptcp_rec as rec_report

SC = Path(__file__).resolve().parents[1] / "scenarios" / "mptcp_rec"


def test_advertised_rate_and_goodput_within_20_percent_of_newreno():
    _, records = rec_report.soundness(seeds=2, processes=None)
    assert len(records) == 6
    bad = [r for r in records if not r["ok"]]
    assert not bad, bad


def test_the_path_list_in_summary_series_and_trace():
    res = mpsim.run(SC / "three_paths.toml", overrides={"duration": "20s", "metrics.trace": True}, progress=False)
    f = res.summary["flows"][0]
    assert f["scheduler"] == "mptcp_rec" and f["cc"] == "receiver_rate"
    assert f["path_removals"] > 0 and f["path_restorations"] > 0
    assert f["rb2loc_predictions"] >= f["path_removals"]
    assert all(s["dsr_mean_bps"] > 0 for s in f["subflows"])
    series = res.subflow_series
    assert {"dsr_bps", "in_path_list", "rec_window_pkts"} <= set(series.columns)
    assert set(series["in_path_list"].unique()) <= {0.0, 1.0}
    events = res.trace[res.trace["event"].isin(["path_removed", "path_restored", "rb2loc_predicted"])]
    assert (events["event"] == "path_removed").sum() == f["path_removals"]
    # a removal follows a prediction at the same instant
    removed_at = set(events[events["event"] == "path_removed"]["time_s"])
    predicted_at = set(events[events["event"] == "rb2loc_predicted"]["time_s"])
    assert removed_at <= predicted_at


def test_other_schedulers_report_no_path_list():
    res = mpsim.run(SC / "three_paths.toml", overrides={"duration": "5s", "flow.mp.scheduler": "lowest_rtt", "flow.mp.cc": "lia"}, progress=False)
    f = res.summary["flows"][0]
    assert f["path_removals"] is None and f["subflows"][0]["dsr_mean_bps"] is None


@pytest.mark.parametrize(
    "setting, key, fragment",
    [
        ("mptcp_rec = { sigma = 0 }", "flow[0].mptcp_rec.sigma", "history length"),
        ("mptcp_rec = { theta = -0.5 }", "flow[0].mptcp_rec.theta", "at least 0"),
        ("mptcp_rec = { xi = -1 }", "flow[0].mptcp_rec.xi", "at least 0"),
        ("mptcp_rec = { sigmaa = 8 }", "flow[0].mptcp_rec.sigmaa", "did you mean 'sigma'"),
        ('mptcp_rec = { window_aware_timeout = "yes" }', "flow[0].mptcp_rec.window_aware_timeout", "true or false"),
        ("mptcp_rec = { restore_after = 0 }", "flow[0].mptcp_rec.restore_after", "at least 1"),
        ('mptcp_rec = { restore_hold = "later" }', "flow[0].mptcp_rec.restore_hold", "restore_hold"),
    ],
)
def test_bad_settings_get_one_error_naming_file_and_key(setting, key, fragment, tmp_path):
    text = (SC / "three_paths.toml").read_text() + setting + "\n"
    target = tmp_path / "rec.toml"
    target.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "mpsim", "check", str(target)], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"error: {target}: {key}: "), lines[0]
    assert fragment in lines[0]


def test_listed():
    proc = subprocess.run([sys.executable, "-m", "mpsim", "list"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert "mptcp_rec" in proc.stdout and "receiver_rate" in proc.stdout
