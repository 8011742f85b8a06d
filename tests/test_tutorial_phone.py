"""docs/phone.md, the tutorial "a phone with WiFi and LTE", runs as written: its shell
commands, its scenario, and its sweep, whose printed table must match the document's."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "phone.md"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.fixture()
def phone_dir(tmp_path):
    for block in blocks("sh"):
        for line in block.splitlines():
            if line.startswith("mpsim "):
                r = subprocess.run([sys.executable, "-m", "mpsim", *shlex.split(line)[1:]], capture_output=True, text=True,
                                   timeout=120, cwd=tmp_path)
                assert r.returncode == 0, f"{line}\n{r.stderr}"
        if "trace-summary" in block:
            (tmp_path / "phone.toml").write_text(blocks("toml")[0])
    return tmp_path


def test_the_tutorial_runs_and_prints_what_it_shows(phone_dir):
    assert (phone_dir / "phone" / "summary.json").exists() and (phone_dir / "phone.png").exists()
    script = phone_dir / "compare.py"
    script.write_text(blocks("python")[0])
    r = subprocess.run([sys.executable, script.name], capture_output=True, text=True, timeout=300, cwd=phone_dir)
    assert r.returncode == 0, r.stderr
    shown = blocks("text")[0].split()
    printed = r.stdout.split()
    assert printed == shown, f"the sweep printed:\n{r.stdout}"
    # the document's reading: fq_codel lowers the phone's RTT for every scheduler
    rows = [ln.split() for ln in r.stdout.splitlines()[1:]]
    rtt = {(s, q): float(x) for s, q, _, x in rows}
    for s in {s for s, _ in rtt}:
        assert rtt[(s, "fq_codel")] < rtt[(s, "none")] / 2.5
