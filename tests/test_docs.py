"""The README's examples are executed: its scenario, its shell commands, its Python and its
error message must all work as written."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README.read_text(), flags=re.S)


@pytest.fixture()
def tutorial_dir(tmp_path, monkeypatch):
    (tmp_path / "tutorial.toml").write_text(blocks("toml")[0])
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_readme_starts_with_the_two_commands():
    first = blocks("sh")[0].splitlines()
    assert first[0].startswith("make demo") and first[1].startswith("make test")


def test_tutorial_shell_commands(tutorial_dir):
    lines = [ln for ln in blocks("sh")[1].splitlines() if ln.startswith("mpsim ")]
    assert len(lines) >= 3
    for line in lines:
        args = shlex.split(line)[1:]
        r = subprocess.run([sys.executable, "-m", "mpsim", *args], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"{line}\n{r.stderr}"
    assert (tutorial_dir / "results" / "summary.json").exists()
    assert (tutorial_dir / "results" / "run.png").exists()


def test_tutorial_python(tutorial_dir):
    ns = {"__name__": "__main__"}
    for code in blocks("python"):
        exec(compile(code, "README.md", "exec"), ns)
    assert (tutorial_dir / "loss.parquet").exists()


def test_documented_error_message(tutorial_dir):
    text = blocks("text")[0]
    cmd, expected = [ln for ln in text.splitlines() if ln.strip()][:2]
    broken = blocks("toml")[0].replace('rate = "11Mbps"', 'rate = "-5Mbps"')
    Path("broken.toml").write_text(broken)
    args = shlex.split(cmd.lstrip("$ "))[1:]
    r = subprocess.run([sys.executable, "-m", "mpsim", *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip() == expected.strip()
    assert "Traceback" not in r.stderr


def tutorial_python() -> list[str]:
    """The Python snippets of the README's tutorial section."""
    text = README.read_text()
    start = text.index("## Five-minute tutorial")
    section = text[start:text.index("\n## ", start + 1)]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def run_script(path: Path, code: str) -> str:
    path.write_text(code)
    r = subprocess.run([sys.executable, path.name], capture_output=True, text=True, timeout=300, cwd=path.parent)
    assert r.returncode == 0, f"{path.name} failed:\n{r.stderr}"
    return r.stdout


def test_tutorial_python_snippets_alone_and_together(tutorial_dir):
    # Run as scripts (not exec) so that sweep workers import them again, as they do for users.
    first, second = tutorial_python()
    out = run_script(tutorial_dir / "first.py", first)
    assert out.count("goodput_bps") == 2  # the flows table and the series, once each
    assert "cwnd_bytes" in out and "srtt_ms" in out and "..." not in out
    out = run_script(tutorial_dir / "second.py", second)
    assert (tutorial_dir / "loss.parquet").exists()
    assert "..." not in out
    for column in ("link.wifi.loss", "flow", "n", "mean", "ci95", "min", "max"):
        assert column in out.splitlines()[0].split()
    both = run_script(tutorial_dir / "both.py", first + "\n" + second)
    assert both.count("rtt_mean_ms") == 1  # sweep workers do not run the first snippet again
    assert both.count("ci95") == 1 and "..." not in both


def test_sctp_sack_counters_say_what_they_count():
    # gap_blocks_received and dup_tsns_reported leave out the SACKs the sender ignores as stale
    # (tests/test_pcap.py checks the rule against tshark); both the README and the core's doc
    # comment must say so, since a capture counts more gap blocks than the summary.
    root = README.parent
    readme = " ".join(README.read_text().split())
    summary = root / "crates/mpsim-core/src/metrics/summary.rs"  # where SctpSummary is defined
    doc = " ".join(ln.strip().removeprefix("///").strip() for ln in summary.read_text().splitlines())
    for text in (readme, doc):
        for field in ("sacks_received", "gap_blocks_received", "dup_tsns_reported"):
            assert f"`{field}`" in text or f"pub {field}" in text, field
        assert "stale" in text and "below the sender's cumulative" in text
        assert "6.2.1" in text
        assert "repeats a block of an earlier SACK" in text


# subpackages the layout describes as a collection ("one module per paper", "Python ports of
# built-ins") instead of module by module
COLLECTIONS = ("reproduce", "examples")


def test_readme_layout_names_every_top_level_module():
    """The README's repository layout and docs/ARCHITECTURE.md name every module of the
    Python package (and of its subpackages but the collections), every module and folder of
    the core, and every transport."""
    text = README.read_text(encoding="utf-8")
    layout = text[text.index("## Repository layout"):]
    layout = layout[:layout.index("```", layout.index("```") + 3)]
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", layout))
    pkg = ROOT / "python" / "mpsim"
    python = {p.stem for p in pkg.glob("*.py") if not p.stem.startswith("_")}
    python |= {p.name for p in pkg.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    for sub in pkg.iterdir():
        if (sub / "__init__.py").is_file() and sub.name not in COLLECTIONS:
            python |= {p.stem for p in sub.glob("*.py") if not p.stem.startswith("_")}
    core = ROOT / "crates" / "mpsim-core" / "src"
    rust = {p.stem for p in core.glob("*.rs") if p.stem not in ("lib", "main")}
    rust |= {p.name for p in core.iterdir() if p.is_dir()}
    transports = {p.stem for p in (core / "transport").iterdir() if p.stem != "mod"}
    missing = sorted((python | rust | transports) - words)
    assert not missing, f"the README's layout does not name: {missing}"
    arch = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert not sorted(t for t in transports if t not in arch), "docs/ARCHITECTURE.md misses a transport module"
