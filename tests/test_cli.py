"""Tests of the ``mpsim`` command, in-process through ``main`` and as ``python -m mpsim``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from mpsim import cli
from mpsim.cli import main, parse_grid, parse_sets, split_values
from mpsim.scenario import parse_value


def mpsim_subprocess(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONWARNINGS="ignore", COLUMNS="100")
    return subprocess.run(
        [sys.executable, "-m", "mpsim", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=cwd,
    )


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


# ---------------------------------------------------------------------------------------
# value parsing


def test_parse_value():
    assert parse_value("3") == 3
    assert parse_value("2.5") == 2.5
    assert parse_value("true") is True
    assert parse_value('"2%"') == "2%"
    assert parse_value("2%") == "2%"
    assert parse_value("20ms") == "20ms"
    assert parse_value("[1, 2]") == [1, 2]
    assert parse_value('{ model = "gilbert", mean = "1%", burst = 4 }') == {"model": "gilbert", "mean": "1%", "burst": 4}


def test_parse_sets_and_grid():
    assert parse_sets(["seed=3", "link.bn.loss=2%", "x = 'a=b'"]) == {"seed": 3, "link.bn.loss": "2%", "x": "a=b"}
    assert split_values('1%,2%, [1, 2],{ a = 1, b = 2 },"x,y"') == ["1%", "2%", "[1, 2]", "{ a = 1, b = 2 }", '"x,y"']
    assert parse_grid(["link.bn.loss=1%,2%", "seed_x=1,2"]) == {"link.bn.loss": ["1%", "2%"], "seed_x": [1, 2]}
    with pytest.raises(cli.UsageError):
        parse_sets(["novalue"])
    with pytest.raises(cli.UsageError):
        parse_grid(["k=1,,2"])


# ---------------------------------------------------------------------------------------
# run


def test_run_prints_table(small_path, capsys):
    assert main(["run", str(small_path), "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    assert main(["run", str(small_path)]) == 0
    out = capsys.readouterr().out
    for text in ("f1", "f2", "reno", "goodput Mbit/s", "retx", "RTT ms", "jitter ms", "bottleneck",
                 "Jain's fairness index", "events", "wall time", "packets per wall-clock second"):
        assert text in out, text


def test_run_json_with_overrides(small_path, capsys):
    rc = main(["run", str(small_path), "--json", "--seed", "3", "--duration", "2s",
               "--set", "link.bottleneck.loss=0%", "--set", "flow.f1.cc=\"reno\""])
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    assert s["seed"] == 3 and s["duration_s"] == 2.0
    bn = [l for l in s["links"] if l["link"] == "bottleneck" and l["direction"] == "forward"][0]
    assert bn["loss_drops"] == 0


def test_run_duration_shorter_than_warmup_names_the_option(small_path, capsys):
    # small.toml has metrics.warmup = 500ms: the option the user gave is what is wrong
    for given in ("300ms", "0.5s"):
        assert main(["run", str(small_path), "--duration", given]) == 2
        assert one_error_line(capsys.readouterr().err) == (
            f"error: {small_path}: --duration {given} is not longer than metrics.warmup = 500ms")
    assert main(["run", str(small_path), "--duration", "2s", "--set", "metrics.warmup=2500ms"]) == 2
    assert one_error_line(capsys.readouterr().err) == (
        f"error: {small_path}: --duration 2s is not longer than metrics.warmup = 2.5s")
    # without --duration the scenario's own key is still the one named
    assert main(["run", str(small_path), "--set", "metrics.warmup=5s"]) == 2
    assert "metrics.warmup: must be shorter than the duration" in one_error_line(capsys.readouterr().err)


def test_run_seed_via_set_is_an_int(small_path, capsys):
    assert main(["run", str(small_path), "--json", "--set", "seed=4"]) == 0
    assert json.loads(capsys.readouterr().out)["seed"] == 4


def test_run_out_formats(small_path, tmp_path, capsys):
    out = tmp_path / "res"
    assert main(["run", str(small_path), "--quiet", "--trace", "--duration", "1s", "--out", str(out),
                 "--format", "json,csv,parquet"]) == 0
    names = {p.name for p in out.iterdir()}
    assert {"summary.json", "scenario.json", "flows.csv", "flows.parquet", "links.csv", "flow_series.parquet",
            "link_series.csv", "trace.csv", "trace.parquet"} <= names
    assert json.loads((out / "summary.json").read_text())["duration_s"] == 1.0
    assert main(["run", str(small_path), "--out", str(tmp_path / "d")]) == 0
    assert {p.suffix for p in (tmp_path / "d").iterdir()} == {".json", ".csv"}


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--format", "xml", "--out", "OUT"], "unknown output format 'xml'"),
        (["--format", "csv"], "--format only applies with --out"),
        (["--seed", "x"], "invalid int value"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--set", "noequals"], "--set expects KEY=VALUE"),
        (["--set", "link.nope.rate=1Mbps"], "link.nope.rate: no link named 'nope'"),
        (["--set", "link.bottleneck.rate=fast"], "link[1].rate"),
    ],
)
def test_run_usage_errors(small_path, tmp_path, capsys, args, fragment):
    args = [str(tmp_path / "o") if a == "OUT" else a for a in args]
    assert main(["run", str(small_path), *args]) == 2
    captured = capsys.readouterr()
    assert fragment in one_error_line(captured.err)
    assert not (tmp_path / "o").exists()


def test_keyboard_interrupt_exits_130(small_path, monkeypatch, capsys):
    import mpsim.api

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(mpsim.api, "run", interrupted)
    assert main(["run", str(small_path)]) == 130
    assert capsys.readouterr().err.strip() == "interrupted"


# ---------------------------------------------------------------------------------------
# check and list


def test_check(small_path, write, capsys):
    bad = write("bad.toml", small_path.read_text().replace('"10Mbps"', '"-1Mbps"'))
    assert main(["check", str(small_path)]) == 0
    assert capsys.readouterr().out.strip() == f"ok: {small_path}: 2 links, 1 path, 2 flows, 3 s"
    assert main(["check", str(small_path), str(bad)]) == 2
    captured = capsys.readouterr()
    assert captured.out.startswith(f"ok: {small_path}")
    assert one_error_line(captured.err).startswith(f"error: {bad}: link[1].rate: ")


def test_names_that_would_escape_the_output_folder_are_refused_by_check(small_path, write, capsys, tmp_path):
    # a flow's capture is <flow>.pcap in the folder given: a name with '/' or a newline is
    # refused before anything runs, in one line naming the key
    text = small_path.read_text()
    for name, why in (('"../escaped"', "'/'"), ('"two\\nlines"', "control character")):
        bad = write("names.toml", text.replace('name = "f1"', f"name = {name}", 1))
        for argv in (["check", str(bad)], ["run", str(bad), "--pcap", str(tmp_path / "caps"), "-q"]):
            assert main(argv) == 2
            line = one_error_line(capsys.readouterr().err)
            assert line.startswith(f"error: {bad}: flow[0].name: ") and why in line, line
    assert not (tmp_path / "escaped.pcap").exists()
    assert not (tmp_path / "caps").exists() or not any((tmp_path / "caps").iterdir())


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "congestion controllers" in out and "reno" in out and "gilbert" in out and "cbr" in out
    assert main(["list", "loss"]) == 0
    out = capsys.readouterr().out
    assert "uniform" in out and "reno" not in out
    assert main(["list", "nope"]) == 2
    assert "invalid choice" in one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("command", [[], ["run"], ["sweep"], ["check"], ["list"]])
def test_help_texts(command, capsys):
    assert main([*command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: mpsim" in out and "example" in out


def test_no_command_and_unknown_command(capsys):
    assert main([]) == 2
    assert "no command given" in one_error_line(capsys.readouterr().err)
    assert main(["frobnicate"]) == 2
    assert "invalid choice" in one_error_line(capsys.readouterr().err)


# ---------------------------------------------------------------------------------------
# sweep


def test_sweep(small_path, tmp_path, capsys):
    out = tmp_path / "sw.csv"
    rc = main(["sweep", str(small_path), "--grid", "link.bottleneck.loss=0.5%,2%", "--grid", "flow.f1.cc=reno",
               "--set", "duration=2s", "--seeds", "3", "--processes", "1", "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "goodput Mbit/s" in text and "95% CI" in text and "±" in text
    assert "wrote 12 rows (6 runs)" in text
    df = pd.read_csv(out)
    assert len(df) == 12 and set(df["seed"]) == {1, 2, 3}
    assert list(df.columns[:5]) == ["link.bottleneck.loss", "flow.f1.cc", "seed", "run", "flow"]


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--grid", "link.bottleneck.loss=1%,-2%", "--out", "x.parquet"], "link[1].loss"),
        (["--grid", "link.nope.loss=1%", "--out", "x.parquet"], "link.nope.loss: no link named 'nope'"),
        (["--grid", "link.bottleneck.loss=1%", "--out", "x.txt"], "must end in .parquet or .csv"),
        (["--grid", "link.bottleneck.loss=1%"], "required: --out"),
        (["--seeds", "0", "--out", "x.csv"], "--seeds must be at least 1"),
    ],
)
def test_sweep_usage_errors(small_path, tmp_path, capsys, args, fragment):
    args = [str(tmp_path / a) if a.startswith("x.") else a for a in args]
    assert main(["sweep", str(small_path), *args]) == 2
    assert fragment in one_error_line(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------
# python -m mpsim: exit codes and one-line errors for bad input

GOOD_LINE = 'rate = "10Mbps"'


@pytest.mark.parametrize(
    "case, key, fragment",
    [
        ("unknown-key", "link[0].qeue", "did you mean 'queue'"),
        ("bad-unit", "link[1].rate", "unknown rate unit"),
        ("negative-rate", "link[1].rate", "negative"),
        ("missing-link", "path[0].links[1]", "no link named 'bottlenek'"),
        ("empty", "", "empty"),
        ("binary", "", "not a text file"),
        ("missing", "", "no such file"),
        ("directory", "", "is a directory"),
    ],
)
def test_bad_input_subprocess(case, key, fragment, small_text, tmp_path):
    target = tmp_path / f"{case}.toml"
    if case == "unknown-key":
        target.write_text(small_text.replace('queue = "1000pkt"', 'qeue = "1000pkt"'))
    elif case == "bad-unit":
        target.write_text(small_text.replace(GOOD_LINE, 'rate = "10Mbpz"'))
    elif case == "negative-rate":
        target.write_text(small_text.replace(GOOD_LINE, 'rate = "-10Mbps"'))
    elif case == "missing-link":
        target.write_text(small_text.replace('links = ["access", "bottleneck"]', 'links = ["access", "bottlenek"]'))
    elif case == "empty":
        target.write_text("")
    elif case == "binary":
        target.write_bytes(bytes(range(256)) * 4)
    elif case == "directory":
        target.mkdir()
    for command in ("run", "check"):
        proc = mpsim_subprocess(command, target)
        assert proc.returncode == 2, proc.stderr
        line = one_error_line(proc.stderr)
        prefix = f"error: {target}: {key}: " if key else f"error: {target}: "
        assert line.startswith(prefix), line
        assert fragment in line
        assert proc.stdout == ""


def test_subprocess_success_and_usage_error(small_path, tmp_path):
    proc = mpsim_subprocess("run", small_path, "--set", "duration=1s")
    assert proc.returncode == 0, proc.stderr
    assert "Jain's fairness index" in proc.stdout and proc.stderr == ""
    proc = mpsim_subprocess("run", small_path, "--no-such-option")
    assert proc.returncode == 2
    assert "unrecognized arguments" in one_error_line(proc.stderr)
    proc = mpsim_subprocess("sweep", small_path, "--grid", "link.bottleneck.loss=1%,2%", "--processes", "2",
                            "--out", tmp_path / "s.parquet", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert len(pd.read_parquet(tmp_path / "s.parquet")) == 4


def test_scenario_argument_is_always_a_file_reported_as_typed(small_text, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.toml").write_text(small_text.replace(GOOD_LINE, 'rate = "0Mbps"'))
    assert main(["check", "./bad.toml"]) == 2
    assert one_error_line(capsys.readouterr().err).startswith("error: ./bad.toml: link[1].rate: ")
    assert main(["run", 'duration = "1s"']) == 2  # not taken as TOML text on the command line
    assert one_error_line(capsys.readouterr().err) == 'error: duration = "1s": no such file'
