"""The wheel works on its own: built, installed into a fresh virtual environment outside the
checkout, `mpsim reproduce --list`, the shortest reproduction, the README's Python tutorial
and `mpsim kernel` with the wheel's link emulator run there (tests/wheel_check.py; about 3
minutes, most of it pip installing the dependencies)."""

import pytest

import wheel_check


@pytest.mark.slow
def test_the_installed_wheel_runs_the_reproductions_and_the_tutorial(tmp_path, capsys):
    rc = wheel_check.main(["--out", str(tmp_path / "wheel_check.md")])
    out = capsys.readouterr()
    assert rc == 0, out.out + out.err
    report = (tmp_path / "wheel_check.md").read_text()
    for cmd in ("mpsim reproduce --list", "mpsim reproduce dqs --quick", "python my_sched.py", "python my_cc.py", "mpsim kernel --help",
                "mpsim kernel scenarios/kernel/tcp_10m.toml"):
        assert cmd in report
