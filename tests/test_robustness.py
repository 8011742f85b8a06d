"""Robust under any input: oversized values, files that are not files, repeatable summaries,
memory estimates checked before a run, and the first steps of a newcomer."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

import mpsim
from mpsim import ScenarioError
from mpsim.cli import build_parser, main
from mpsim.resources import MemoryWarning, total_bytes

ROOT = Path(__file__).resolve().parents[1]

SCENARIO = """
name = "r"
duration = "2s"
[[link]]
name = "bottleneck"
rate = "10Mbps"
delay = "10ms"
loss = "1%"
[[path]]
name = "p"
links = ["bottleneck"]
[[flow]]
name = "bulk"
path = "p"
"""

MEDIA = """
duration = "2s"
[[link]]
name = "l"
rate = "10Mbps"
delay = "10ms"
[[path]]
name = "p"
links = ["l"]
[[flow]]
path = "p"
app = { kind = "media", trace = "TRACE" }
"""


def check_error(capsys, write, text: str) -> str:
    path = write("s.toml", text)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


# ----- units and limits -----


@pytest.mark.parametrize(
    "change, key, limit",
    [
        ('[tcp]\nsnd_buf = "999999999999999GB"\n', "tcp.snd_buf", "at most 1 TB"),
        ('[tcp]\nsnd_buf = "5TB"\n', "tcp.snd_buf", "at most 1 TB"),
        ('[tcp]\nrcv_buf = "2GB"\n', "tcp.rcv_buf", "at most 1 GB"),
    ],
)
def test_oversized_buffers_fail_at_check_naming_key_and_limit(capsys, write, change, key, limit):
    text = SCENARIO + change
    err = check_error(capsys, write, text)
    assert f"s.toml: {key}: " in err and limit in err, err


@pytest.mark.parametrize("rate", ["99999999999999999999999999Gbps", "1e30Gbps", "1.1e12"])
def test_rates_beyond_the_limit_are_refused_the_same_way(capsys, write, rate):
    err = check_error(capsys, write, SCENARIO.replace('"10Mbps"', f'"{rate}"'))
    assert "link[0].rate: must be at most 1 Tbit/s" in err, err


def test_scientific_notation_is_accepted_in_strings_and_numbers(write):
    for rate in ('"1e7"', '"1E7bps"', '"0.01e3Mbps"', "1e7", "10000000"):
        info = mpsim.check(SCENARIO.replace('"10Mbps"', rate))
        assert info["links"] == ["bottleneck"]
    res = mpsim.run(SCENARIO.replace('"10Mbps"', '"1e7"'), progress=False)
    ref = mpsim.run(SCENARIO, progress=False)
    assert res.summary == ref.summary


# ----- files a scenario reads -----


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/stdin", "/dev/urandom"])
def test_device_traces_are_refused_without_reading(write, device):
    if not os.path.exists(device):
        pytest.skip(f"{device} does not exist here")
    p = write("s.toml", MEDIA.replace("TRACE", device))
    with pytest.raises(ScenarioError) as ei:
        mpsim.check(p)
    assert ei.value.key == "flow[0].app.trace"
    assert "regular file" in ei.value.message


def test_a_fifo_trace_is_refused_without_blocking(write, tmp_path):
    fifo = tmp_path / "frames.fifo"
    os.mkfifo(fifo)
    p = write("s.toml", MEDIA.replace("TRACE", fifo.name))
    with pytest.raises(ScenarioError, match="a pipe"):
        mpsim.check(p)


def test_a_huge_trace_is_refused_by_size(write, tmp_path):
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.truncate(64 * 1024 * 1024)  # sparse: costs no disk
    p = write("s.toml", MEDIA.replace("TRACE", big.name))
    with pytest.raises(ScenarioError, match=r"too large to be a frame-size trace .*limit is 16\.8 MB"):
        mpsim.check(p)


def test_a_regular_trace_still_works(write, tmp_path):
    (tmp_path / "frames.txt").write_text("I 24000\nP 8000\n")
    p = write("s.toml", MEDIA.replace("TRACE", "frames.txt"))
    assert mpsim.check(p)["flows"] == ["flow0"]


def test_device_scenario_files_are_refused(capsys):
    assert main(["check", "/dev/zero"]) == 2
    err = capsys.readouterr().err
    assert "error: /dev/zero: is not a regular file (a device)" in err


# ----- summaries free of wall-clock values -----


def test_same_scenario_and_seed_give_byte_identical_summary_files(tmp_path, write):
    p = write("s.toml", SCENARIO)
    for name in ("a", "b"):
        assert main(["run", str(p), "--quiet", "--out", str(tmp_path / name), "--format", "json"]) == 0
    a, b = (tmp_path / "a" / "summary.json").read_bytes(), (tmp_path / "b" / "summary.json").read_bytes()
    assert a == b
    assert b"wall" not in a
    infos = [json.loads((tmp_path / n / "run_info.json").read_text()) for n in ("a", "b")]
    for info in infos:
        assert info["wall_s"] > 0 and info["peak_rss_bytes"] > 0
        assert info["estimate"]["events"] > 0 and info["mpsim_version"] == mpsim.__version__


def test_result_keeps_wall_time_in_run_info():
    res = mpsim.run(SCENARIO, progress=False)
    assert "wall_s" not in res.summary
    assert res.run_info["wall_s"] > 0
    assert set(res.run_info) >= {"wall_s", "started_utc", "peak_rss_bytes", "estimate", "python", "platform"}


# ----- memory estimated before a run -----


def test_a_run_beyond_the_memory_limit_is_refused_before_it_starts(monkeypatch, write, capsys):
    monkeypatch.setenv("MPSIM_MEMORY_LIMIT", "1GB")
    # an hour of series sampled every millisecond: 10.8 million rows
    text = SCENARIO.replace('duration = "2s"', 'duration = "3600s"') + '[metrics]\ninterval = "1ms"\n'
    with pytest.raises(ScenarioError, match=r"would need about .* of memory .*more than the 1\.0 GB available"):
        mpsim.run(text, progress=False)
    p = write("big.toml", text)
    assert main(["run", str(p)]) == 2
    err = capsys.readouterr().err
    assert "--no-memory-check" in err and "Traceback" not in err
    # check warns but still validates the file
    assert main(["check", str(p)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(f"ok: {p}") and "warning:" in captured.err


def test_a_large_run_warns_and_the_check_can_be_turned_off(monkeypatch, write, capsys):
    need = total_bytes(mpsim.check(SCENARIO)["estimate"])
    monkeypatch.setenv("MPSIM_MEMORY_LIMIT", str(int(need * 1.5)))
    with pytest.warns(MemoryWarning, match="over half"):
        mpsim.run(SCENARIO, progress=False)
    monkeypatch.setenv("MPSIM_MEMORY_LIMIT", str(need // 2))
    with pytest.raises(ScenarioError):
        mpsim.run(SCENARIO, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = mpsim.run(SCENARIO, progress=False, memory_check=False)
    assert res.summary["flows"][0]["bytes_delivered"] > 0
    p = write("s.toml", SCENARIO)
    assert main(["run", str(p), "--quiet", "--no-memory-check"]) == 0


def test_check_prints_the_estimate(write, capsys):
    p = write("s.toml", SCENARIO)
    assert main(["check", "--estimate", str(p)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"estimate: about [\d,]+ events and [\d.]+ [MG]B of memory", out), out


# ----- events estimated before a run -----

BLINKER = SCENARIO.split("[[flow]]")[0] + """[[flow]]
name = "quiet"
path = "p"
[[flow]]
name = "blinker"
path = "p"
app = { kind = "onoff", rate = "1Mbps", packet = "1000B", on = "1ns", off = "1ns" }
"""


def test_a_source_ticking_every_nanosecond_is_estimated_and_named():
    # 2 s of 1 ns on/off periods: about 2e9 ticks (1.7e9 counted by the core), once estimated
    # at 4,022 events
    est = mpsim.check(BLINKER)["estimate"]
    assert 1.9e9 < est["events"] < 2.2e9
    assert est["top_flow"] == "blinker" and est["top_flow_events"] > 0.99 * est["events"]
    assert est["top_link"] == "bottleneck"


def test_a_run_beyond_the_event_limit_is_refused_naming_the_flow(monkeypatch, write, capsys):
    from mpsim.resources import SlowRunWarning

    monkeypatch.setenv("MPSIM_EVENT_LIMIT", "1e8")
    with pytest.raises(ScenarioError, match=r"estimated at [\d,]+ events, most from flow 'blinker' .*limit of 100,000,000"):
        mpsim.run(BLINKER, progress=False)
    p = write("blink.toml", BLINKER)
    assert main(["run", str(p)]) == 2
    err = capsys.readouterr().err
    assert "--no-event-check" in err and "Traceback" not in err and err.count("\n") == 1
    # check says so and still validates the file
    assert main(["check", str(p)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(f"ok: {p}") and "flow 'blinker'" in captured.err
    # between the warning threshold and the limit: a warning; off: neither
    monkeypatch.setenv("MPSIM_EVENT_LIMIT", "1e11")
    short = BLINKER.replace('duration = "2s"', 'duration = "1ms"')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mpsim.run(short, progress=False)  # 1e6 events: nothing said
    monkeypatch.setattr("mpsim.resources.EVENT_WARN", 100_000)
    with pytest.warns(SlowRunWarning, match="flow 'blinker'"):
        mpsim.run(short, progress=False)
    monkeypatch.setenv("MPSIM_EVENT_LIMIT", "1000")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = mpsim.run(short, progress=False, event_check=False)
    assert res.summary["events"] > 800_000
    assert main(["run", str(write("short.toml", short)), "--quiet", "--no-event-check"]) == 0


def test_a_bad_event_limit_is_a_one_line_error(monkeypatch, write, capsys):
    monkeypatch.setenv("MPSIM_EVENT_LIMIT", "many")
    assert main(["run", str(write("s.toml", SCENARIO))]) == 2
    assert capsys.readouterr().err.strip() == "error: MPSIM_EVENT_LIMIT: 'many' is not a positive number of events like 5e9"


def test_the_memory_budget_is_the_smallest_of_free_cgroup_and_address_space(tmp_path, monkeypatch):
    from mpsim import resources

    # a cgroup v2 limit on an ancestor of the process's group
    (tmp_path / "proc").write_text("0::/batch/job7\n")
    for d, limit, used in (("batch", "3000000000", "1000000000"), ("batch/job7", "max", "500000000")):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
        (tmp_path / d / "memory.max").write_text(limit + "\n")
        (tmp_path / d / "memory.current").write_text(used + "\n")
    assert resources._cgroup_room(str(tmp_path), str(tmp_path / "proc")) == 2_000_000_000
    # cgroup v1, and no limit at all
    (tmp_path / "proc").write_text("5:cpu,cpuacct:/x\n4:memory:/x\n")
    (tmp_path / "memory" / "x").mkdir(parents=True)
    (tmp_path / "memory" / "x" / "memory.limit_in_bytes").write_text("1000000000\n")
    (tmp_path / "memory" / "x" / "memory.usage_in_bytes").write_text("250000000\n")
    assert resources._cgroup_room(str(tmp_path), str(tmp_path / "proc")) == 750_000_000
    (tmp_path / "memory" / "x" / "memory.limit_in_bytes").write_text(str(2**63 - 4096) + "\n")
    assert resources._cgroup_room(str(tmp_path), str(tmp_path / "proc")) is None
    # the smallest of the three wins
    monkeypatch.delenv("MPSIM_MEMORY_LIMIT", raising=False)
    monkeypatch.setattr(resources, "_mem_available", lambda: 8_000_000_000)
    monkeypatch.setattr(resources, "_cgroup_room", lambda: 2_000_000_000)
    monkeypatch.setattr(resources, "_address_space_room", lambda: None)
    assert resources.available_memory() == 2_000_000_000
    monkeypatch.setattr(resources, "_address_space_room", lambda: 1_000_000_000)
    assert resources.available_memory() == 1_000_000_000


def test_an_address_space_limit_bounds_the_budget_in_a_child():
    # ulimit -v 3 GB: what is left of it, not the machine's memory
    code = ("import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, resource.RLIM_INFINITY)); "
            "from mpsim import resources; print(resources._address_space_room(), resources.available_memory())")
    room, avail = map(int, subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                          check=True).stdout.split())
    assert 0 < room < 3 << 30 and avail <= room


# ----- the newcomer's first steps -----


def test_help_lists_every_command_and_names_files_that_exist(capsys):
    parser = build_parser()
    texts = [parser.format_help()]
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    assert {"run", "sweep", "check", "list", "reproduce"} <= set(sub.choices)
    texts += [p.format_help() for p in sub.choices.values()]
    listed = re.search(r"commands: (.*)", texts[0])
    assert listed, "the main help lists no commands"
    assert set(listed.group(1).split(", ")) == set(sub.choices), "the main help's list of commands is not the parser's"
    named = {m for t in texts for m in re.findall(r"([\w./-]+\.toml)\b", t) if "*" not in m}
    assert named, "the examples name no scenario file"
    for name in named:
        assert (ROOT / name).is_file(), f"the help names {name}, which does not exist"
    assert main([]) == 2
    assert "choose run, sweep, query, check, list, reproduce, kernel, trace-gen or trace-summary" in capsys.readouterr().err


def test_stated_python_version_is_the_one_required_and_tested():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    m = re.fullmatch(r">=\s*3\.(\d+)", pyproject["project"]["requires-python"])
    assert m, pyproject["project"]["requires-python"]
    minor = int(m.group(1))
    readme = (ROOT / "README.md").read_text()
    assert f"Python 3.{minor}+" in readme
    assert f"abi3-py3{minor}" in (ROOT / "crates" / "mpsim-py" / "Cargo.toml").read_text()
    assert f"sys.version_info < (3, {minor})" in (ROOT / "Makefile").read_text()
    # the suite runs on the interpreter CI has, which must satisfy what is stated
    assert sys.version_info >= (3, minor)


def test_readme_says_how_to_put_mpsim_on_the_path():
    readme = (ROOT / "README.md").read_text()
    assert ". .venv/bin/activate" in readme
    # the console script is installed beside the interpreter of the virtualenv
    script = Path(sys.executable).parent / "mpsim"
    assert script.exists(), script
    r = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("mpsim ")


def test_automatic_progress_bar_only_on_terminals(monkeypatch):
    import io

    from mpsim import progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress.Progress(None, "x").callback() is None
    sweep = progress.Progress(None, "sweep", total=3, unit="run")
    monkeypatch.setattr(progress, "AUTO_PROGRESS_AFTER_S", 0.0)
    sweep.item()
    assert sweep.bar is None and sys.stderr.getvalue() == ""
    monkeypatch.setattr(sys, "stderr", Tty())
    assert progress.Progress(None, "x").callback() is not None
    # a sweep's bar appears once the work has taken AUTO_PROGRESS_AFTER_S, with what is done
    monkeypatch.setattr(progress, "AUTO_PROGRESS_AFTER_S", 3600.0)
    sweep = progress.Progress(None, "sweep", total=3, unit="run")
    sweep.item()
    assert sweep.bar is None
    monkeypatch.setattr(progress, "AUTO_PROGRESS_AFTER_S", 0.0)
    sweep.item(ok=False)
    assert sweep.bar is not None and sweep.bar.n == 2
    sweep.close()
    assert "sweep" in sys.stderr.getvalue() and "1 failed" in sys.stderr.getvalue()


def test_progress_is_reported_by_simulated_time_whatever_the_event_rate():
    seen: list[float] = []
    # 2 s at 1 Mbit/s: a few thousand events, far fewer than 2^20
    mpsim.run(SCENARIO.replace('"10Mbps"', '"1Mbps"'), progress=seen.append, memory_check=False)
    assert len(seen) >= 100, f"{len(seen)} progress reports"
    assert seen == sorted(seen) and seen[-1] == 1.0


def test_a_bad_memory_limit_is_a_one_line_error(monkeypatch, write, capsys):
    monkeypatch.setenv("MPSIM_MEMORY_LIMIT", "lots")
    assert main(["run", str(write("s.toml", SCENARIO))]) == 2
    assert capsys.readouterr().err.strip() == "error: MPSIM_MEMORY_LIMIT: 'lots' is not a size like 8GB or 8000000000"
