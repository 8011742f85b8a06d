"""Time-varying links (``schedule`` on a [[link]]): goodput follows the rate steps, the same
keys from a dict, TOML or a CSV file give the same run, errors name the key, the shipped
handover scenario, and the link emulator's description."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import mpsim
from mpsim.cli import main
from mpsim.kernel import testbed as K

ROOT = Path(__file__).resolve().parents[1]
HANDOVER = ROOT / "scenarios" / "links" / "wifi_handover.toml"

#: 20 Mbit/s for 10 s, 4 Mbit/s for 10 s, 12 Mbit/s to the end, the delay up during the slow part.
STEPS = [
    {"at": "0s", "rate": "20Mbps"},
    {"at": "10s", "rate": "4Mbps", "delay": "60ms"},
    {"at": "20s", "rate": "12Mbps", "delay": "20ms"},
]
CSV = "at,rate,delay\n0s,20Mbps,\n10s,4Mbps,60ms\n20s,12Mbps,20ms\n"


def scenario(schedule: object, **link: object) -> dict:
    return {
        "duration": "30s",
        "metrics": {"warmup": "1s", "interval": "1s"},
        "link": [{"name": "l", "delay": "20ms", "queue": "100pkt", "schedule": schedule, **link}],
        "path": [{"name": "p", "links": ["l"]}],
        "flow": [{"name": "f", "path": "p", "cc": "cubic"}],
    }


def plain(summary: dict) -> str:
    s = dict(summary)
    s.pop("wall_s", None)
    return json.dumps(s, sort_keys=True)


def test_goodput_follows_the_rate_steps():
    res = mpsim.run(scenario(STEPS), progress=False)
    fs = res.flow_series
    payload = 1460 / 1500  # goodput is payload; the rate carries headers too
    for lo, hi, rate in [(3, 10, 20e6), (13, 20, 4e6), (23, 30, 12e6)]:
        part = fs[(fs.time_s > lo) & (fs.time_s <= hi)]
        got = part.goodput_bps.mean()
        # within 10% of the step's payload rate, and never above it (2 s after each step to settle)
        assert 0.9 * rate * payload < got <= rate * payload * 1.001, (lo, hi, got)
    # the RTT follows the delay steps: 2 x 60 ms plus queueing in the slow part
    srtt = fs[(fs.time_s > 13) & (fs.time_s <= 20)].srtt_ms.min()
    assert srtt > 120, srtt
    # the link's figures go by the mean rate: (10 x 20 + 10 x 4 + 10 x 12) / 30 = 12 Mbit/s
    fwd = next(lk for lk in res.summary["links"] if lk["direction"] == "forward")
    assert 0.85 < fwd["utilization"] <= 1.0, fwd


def test_a_fixed_schedule_is_the_fixed_link():
    # one step at the link's own rate changes nothing: every figure is the same
    fixed = scenario(None, rate="10Mbps")
    del fixed["link"][0]["schedule"]
    one = scenario([{"at": "0s", "rate": "10Mbps"}])
    assert plain(mpsim.run(one, progress=False).summary) == plain(mpsim.run(fixed, progress=False).summary)


def test_dict_toml_and_csv_give_the_same_run(tmp_path, monkeypatch):
    by_dict = plain(mpsim.run(scenario(STEPS), progress=False).summary)
    # TOML text with an inline list
    toml = (
        'duration = "30s"\n[metrics]\nwarmup = "1s"\ninterval = "1s"\n[[link]]\nname = "l"\ndelay = "20ms"\nqueue = "100pkt"\n'
        'schedule = [{at = "0s", rate = "20Mbps"}, {at = "10s", rate = "4Mbps", delay = "60ms"}, '
        '{at = "20s", rate = "12Mbps", delay = "20ms"}]\n'
        '[[path]]\nname = "p"\nlinks = ["l"]\n[[flow]]\nname = "f"\npath = "p"\ncc = "cubic"\n'
    )
    assert plain(mpsim.run(toml, progress=False).summary) == by_dict
    # a CSV file named relative to the scenario file's folder, run from elsewhere
    study = tmp_path / "study"
    (study / "steps").mkdir(parents=True)
    (study / "steps" / "wifi.csv").write_text(CSV)
    lines = toml.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("schedule"))
    lines[i] = 'schedule = "steps/wifi.csv"'
    (study / "s.toml").write_text("\n".join(lines) + "\n")
    monkeypatch.chdir(tmp_path)
    assert plain(mpsim.run(study / "s.toml", progress=False).summary) == by_dict
    # a dict names the file relative to the current directory
    assert plain(mpsim.run(scenario("study/steps/wifi.csv"), progress=False).summary) == by_dict


@pytest.mark.parametrize(
    ("schedule", "link", "key", "message"),
    [
        ([{"at": "5s", "rate": "1Mbps"}, {"at": "2s", "rate": "2Mbps"}], {"rate": "1Mbps"}, "link[0].schedule[1]", "increasing time"),
        ([{"at": "0s", "speed": "1Mbps"}], {}, "link[0].schedule[0].speed", "expected one of: at, rate, delay, loss"),
        ([{"at": "1s", "rate": "-2Mbps"}], {"rate": "1Mbps"}, "link[0].schedule[0].rate", "must not be negative"),
        ([{"at": "1s", "rate": 0}], {"rate": "1Mbps"}, "link[0].schedule", "the last rate given is 0"),
        ([{"at": "1s", "loss": "3%"}], {"rate": "1Mbps", "loss": {"model": "gilbert", "mean": "1%", "burst": 3}},
         "link[0].schedule", "loss steps set a uniform loss rate"),
        ("nothere.csv", {"rate": "1Mbps"}, "link[0].schedule", "nothere.csv: cannot read the file: no such file"),
        ({"at": "1s"}, {"rate": "1Mbps"}, "link[0].schedule", "expected a schedule file name or a list of steps"),
    ],
)
def test_bad_schedules_are_refused_naming_the_key(schedule, link, key, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(mpsim.ScenarioError) as e:
        mpsim.check(scenario(schedule, **link))
    assert e.value.key == key and message in str(e.value), str(e.value)


def test_cli_check_names_the_file_line_and_column(tmp_path, capsys):
    (tmp_path / "bad.csv").write_text("at,rate\n0s,10Mbps\n5s,fast\n")
    d = scenario("bad.csv")
    text = (
        'duration = "30s"\n[[link]]\nname = "l"\nschedule = "bad.csv"\n'
        '[[path]]\nname = "p"\nlinks = ["l"]\n[[flow]]\npath = "p"\n'
    )
    (tmp_path / "s.toml").write_text(text)
    assert main(["check", str(tmp_path / "s.toml")]) == 2
    err = capsys.readouterr().err.strip()
    # (the file as the Python package names it: the scenario's folder joined in front)
    shown = tmp_path / "bad.csv"
    assert err == f"error: {tmp_path / 's.toml'}: link[0].schedule: {shown}: line 3, column rate: no number (got 'fast')", err
    (tmp_path / "bad.csv").write_text("at,speed\n0s,10Mbps\n")
    assert main(["check", str(tmp_path / "s.toml")]) == 2
    assert "line 1: unknown column 'speed'; the columns are at, rate, delay, loss" in capsys.readouterr().err
    assert d["link"][0]["schedule"] == "bad.csv", "the dict is not changed"


def test_the_handover_shifts_the_connection_to_lte_and_back():
    res = mpsim.run(HANDOVER, progress=False)
    ss = res.subflow_series
    wifi = ss[ss.path == "p_wifi"]
    lte = ss[ss.path == "p_lte"]

    def mean(s, lo, hi):
        return s[(s.time_s > lo) & (s.time_s <= hi)].goodput_bps.mean()

    # WiFi carries what its steps allow, never more: 20, then 6, then 1 Mbit/s (2% loss), then 20
    assert mean(wifi, 3, 10) > 12e6
    assert mean(wifi, 11, 14) < 6e6
    assert mean(wifi, 15, 22) < 1e6
    assert mean(wifi, 25, 30) > 12e6
    # LTE stays, and carries most of the connection while WiFi is at 1 Mbit/s
    assert mean(lte, 15, 22) > 6e6
    assert mean(lte, 15, 22) > 5 * mean(wifi, 15, 22)
    wifi_fwd = next(lk for lk in res.summary["links"] if lk["link"] == "wifi" and lk["direction"] == "forward")
    assert wifi_fwd["loss_drops"] > 0, "the 2% loss step drops packets"
    # the same scenario and seed: the same run
    assert plain(mpsim.run(HANDOVER, progress=False).summary) == plain(res.summary)


@pytest.mark.skipif(K.find_emulator() is None, reason="the link emulator is not built")
def test_the_emulator_describes_a_scheduled_link(tmp_path):
    (tmp_path / "steps.csv").write_text(CSV)
    text = HANDOVER.read_text()
    start, end = text.index("schedule = ["), text.index("]\n", text.index("schedule = [")) + 2
    # (cubic: the kernel has no LIA)
    (tmp_path / "h.toml").write_text((text[:start] + 'schedule = "steps.csv"\n' + text[end:]).replace('cc = "lia"', 'cc = "cubic"'))
    r = subprocess.run([str(K.find_emulator()), "--describe", str(tmp_path / "h.toml")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    wifi = next(lk for lk in json.loads(r.stdout)["links"] if lk["name"] == "wifi")
    assert wifi["schedule"] == {"file": "steps.csv", "steps": 3}
    assert wifi["rate_bps"] == (10 * 20 + 10 * 4 + 10 * 12) * 1_000_000 // 30
    assert not K.unmappable(json.loads(r.stdout)), "the kernel runner takes a scheduled link as it is"
