"""The command-line mutation fuzzer (benches/fuzz_cli.py) on a few files: no traceback, no
panic, nothing written outside the output folders."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _harness():
    spec = importlib.util.spec_from_file_location("fuzz_cli", ROOT / "benches" / "fuzz_cli.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_cli"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_mutations_are_repeatable_and_the_writer_round_trips():
    import tomllib

    fz = _harness()
    a, b = fz.generate(7, 40), fz.generate(7, 40)
    assert [x[1] for x in a] == [x[1] for x in b]
    assert [x[1] for x in a] != [x[1] for x in fz.generate(8, 40)]
    d = {"name": 'a"b\\c\nd\x00', "n": 3, "x": 1e30, "t": {"k k": [1, {"z": True}]}, "flow": [{"name": "f"}, {"name": "g"}]}
    assert tomllib.loads(fz.to_toml(d)) == d


def test_thirty_mutated_files_through_the_cli(tmp_path):
    fz = _harness()
    # the cases run in a folder outside /tmp, so that each gets a private /tmp (as root) and
    # other processes writing to the machine's /tmp are not taken for the case's own files
    base = fz._default_work_root()
    work = Path(tempfile.mkdtemp(prefix="mpsim_fuzz_test_", dir=base)) if not str(base.resolve()).startswith("/tmp") else tmp_path
    try:
        res = fz.main(["--seed", "1", "--files", "30", "--sweeps", "3", "--timeout", "20", "--keep", str(tmp_path / "keep"),
                       "--out", str(tmp_path / "fuzz.md"), "--work-root", str(work)])
    finally:
        if work != tmp_path:
            shutil.rmtree(work, ignore_errors=True)
    classes = {**{f"file {k}": v for k, v in res["file_classes"].items()}, **{f"sweep {k}": v for k, v in res["sweep_classes"].items()}}
    assert sum(res["file_classes"].values()) == 30
    for bad in ("traceback", "panic", "written outside"):
        assert res["file_classes"].get(bad, 0) == 0, (bad, classes, (tmp_path / "fuzz.md").read_text())
        assert res["sweep_classes"].get(bad, 0) == 0, (bad, classes, (tmp_path / "fuzz.md").read_text())
    report = (tmp_path / "fuzz.md").read_text()
    assert "| traceback | 0 |" in report and "| panic | 0 |" in report


@pytest.mark.parametrize("name", [":", "..:x", ".mod:X", "a..b:X", " : "])
def test_a_plugin_name_without_a_module_is_one_error_line(write, name):
    # found by the fuzzer: importlib raised ValueError / TypeError for these module names
    f = write("s.toml", f'duration = "1s"\n[[link]]\nname = "l"\nrate = "1Mbps"\n[[path]]\nname = "p"\nlinks = ["l"]\n'
                        f'[[flow]]\nname = "f"\npaths = ["p"]\nscheduler = "{name}"\n')
    p = subprocess.run([sys.executable, "-m", "mpsim", "check", str(f)], capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and p.stderr.startswith("error: ") and p.stderr.count("\n") == 1, p.stderr


_NET = 'duration = "1s"\n[[link]]\nname = "l"\nrate = "1Mbps"\n[[path]]\nname = "p"\nlinks = ["l"]\n'


def _check(*args):
    p = subprocess.run([sys.executable, "-m", "mpsim", "check", *map(str, args)], capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and p.stderr.startswith("error: ") and p.stderr.count("\n") == 1, p.stderr[-2000:]
    return p.stderr


def test_numbers_too_long_for_int_and_deep_nesting_are_one_error_line(write):
    # found by the fuzzer: tomllib raises ValueError (not TOMLDecodeError) for an integer of more
    # than 4,300 digits, and RecursionError for deep nesting
    assert "more than 4,300 digits" in _check(write("big.toml", _NET + '[[flow]]\nname = "f"\npath = ' + "9" * 5000 + "\n"))
    assert "nested too deeply" in _check(write("deep.toml", "a = " + "[" * 100_000 + "\n"))
    ok = write("ok.toml", _NET + '[[flow]]\nname = "f"\npath = "p"\n')
    _check(ok, "--set", "seed=" + "9" * 5000)
    _check(ok, "--set", "seed=" + "[" * 5000)


@pytest.mark.parametrize("size", ["\u00b2", "9" * 5000])
def test_a_frame_trace_size_int_refuses_is_one_error_line(write, size):
    write("v.trace", f"I {size}\n")
    f = write("m.toml", _NET + '[[flow]]\nname = "f"\npath = "p"\napp = { kind = "media", fps = 25, trace = "v.trace" }\n')
    assert "v.trace line 1" in _check(f)
