#!/usr/bin/env python3
"""The installed-wheel check: builds the wheel with maturin, installs it into a fresh virtual
environment in a temporary folder outside the checkout, and runs there, with nothing of the
checkout on the path:

* ``mpsim reproduce --list``;
* the shortest reproduction in its quick mode (``mpsim reproduce dqs --quick --seeds 1``);
* the README's tutorial "Prototype a scheduler in Python" (its files and its commands);
* ``mpsim kernel`` with the link emulator the wheel carries (a 3 s run as root).

    python tests/wheel_check.py [--out docs/reports/wheel_check.md] [--keep]

Prints (and with --out writes) a table of each step's command, exit status and wall time;
exits with 1 if any step failed. ``tests/test_wheel.py`` runs it in CI.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TUTORIAL = "## Prototype a scheduler in Python"
#: Where ``make wheel`` puts the link emulator for maturin to pack (pyproject.toml's include).
STAGED = ROOT / "python" / "mpsim" / "kernel" / "bin" / "mpsim-linkemu"


def tutorial(readme: Path = README) -> tuple[dict[str, str], list[str]]:
    """The README tutorial's files (``py`` blocks, each named by its first comment line,
    ``# my_sched.py: ...``) and its shell commands (``sh`` blocks), in order."""
    text = readme.read_text(encoding="utf-8")
    start = text.index(TUTORIAL)
    end = text.find("\n## ", start + len(TUTORIAL))
    part = text[start:end if end >= 0 else None]
    files = {}
    for code in re.findall(r"```py\n(.*?)```", part, flags=re.S):
        m = re.match(r"#\s*([\w.]+\.py)\b", code)
        if not m:
            raise ValueError(f"a py block of the tutorial does not start with '# NAME.py': {code[:60]!r}")
        files[m.group(1)] = code
    cmds = [ln for block in re.findall(r"```sh\n(.*?)```", part, flags=re.S)
            for ln in block.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return files, cmds


def run_tutorial(workdir: Path, env: dict[str, str], timeout: float = 300) -> list[tuple[str, int, float, str]]:
    """Writes the tutorial's files into *workdir* and runs its commands there with bash
    (the ``python`` and ``mpsim`` of *env*'s PATH). Returns (command, exit status, seconds,
    last lines of output) per command."""
    files, cmds = tutorial()
    for name, code in files.items():
        (workdir / name).write_text(code, encoding="utf-8")
    return [step(["bash", "-c", c], workdir, env, timeout, label=c) for c in cmds]


def step(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float, label: str | None = None) -> tuple[str, int, float, str]:
    t = time.monotonic()
    try:
        r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        rc, out = r.returncode, (r.stdout + r.stderr)
    except subprocess.TimeoutExpired as e:
        rc, out = -1, f"timed out after {timeout:.0f} s\n{e.stdout or ''}{e.stderr or ''}"
    tail = "\n".join(str(out).strip().splitlines()[-15:])
    return (label or " ".join(cmd), rc, time.monotonic() - t, tail)


def kernel_steps(work: Path, env: dict[str, str]) -> list[tuple[str, int, float, str]]:
    """``mpsim kernel`` from the wheel: the emulator it finds is the wheel's, its help names
    MPSIM_LINKEMU, and a short run works as root (elsewhere it stops with exit status 2 and
    a one-line reason)."""
    find = ("import sys; from mpsim.kernel import find_emulator; e = find_emulator(); "
            "assert e and str(e).startswith(sys.prefix), e; print(e)")
    scen = '"$(python -m mpsim.shipped kernel/tcp_10m.toml)"'
    run = f"mpsim kernel {scen} --set duration=3s --set metrics.warmup=1s --json > kernel.json"
    if os.geteuid() == 0:
        run += " && python -c 'import json; d = json.load(open(\"kernel.json\")); assert d[\"flows\"][0][\"kernel_goodput_bps\"][\"median\"] > 0'"
    else:
        run = f"{run}; test $? -eq 2"
    return [step(["python", "-c", find], work, env, 60, label="python -c 'find_emulator()' (the wheel's)"),
            step(["bash", "-c", "mpsim kernel --help | grep -q MPSIM_LINKEMU"], work, env, 60, label="mpsim kernel --help | grep MPSIM_LINKEMU"),
            step(["bash", "-c", run], work, env, 300, label="mpsim kernel scenarios/kernel/tcp_10m.toml (3 s) --json"
                 + ("" if os.geteuid() == 0 else ", not root: exit status 2"))]


def clean_env(venv: Path) -> dict[str, str]:
    """The environment of a shell in which *venv* is activated and nothing points into the
    checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", "MPSIM_LINKEMU")}
    env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["MPLBACKEND"] = "Agg"
    return env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="write the table here (Markdown)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="mpsim-wheel-"))
    assert not tmp.resolve().is_relative_to(ROOT), "the check must run outside the checkout"
    maturin = shutil.which("maturin", path=str(Path(sys.executable).parent)) or shutil.which("maturin") or "maturin"
    venv, work = tmp / "venv", tmp / "work"
    work.mkdir()
    env = clean_env(venv)
    py = str(venv / "bin" / "python")
    steps = []
    try:
        # as `make wheel` does: the link emulator of `mpsim kernel` goes into the wheel
        steps.append(step(["cargo", "build", "--release", "--quiet", "-p", "mpsim-linkemu"], ROOT, dict(os.environ), 900))
        steps.append(step(["install", "-D", "-m", "755", "target/release/mpsim-linkemu", str(STAGED.relative_to(ROOT))],
                          ROOT, dict(os.environ), 60))
        steps.append(step([maturin, "build", "--release", "--quiet", "-o", str(tmp / "dist")], ROOT, dict(os.environ), 900,
                          label="maturin build --release -o DIST"))
        wheels = sorted((tmp / "dist").glob("mpsim-*.whl"))
        steps.append(step([sys.executable, "-m", "venv", str(venv)], tmp, env, 300, label="python -m venv VENV"))
        steps.append(step([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *map(str, wheels)], tmp, env, 900,
                          label=f"pip install {wheels[0].name if wheels else '(no wheel built)'}"))
        steps.append(step([py, "-c", "import mpsim, sys; assert mpsim.__file__.startswith(sys.prefix), mpsim.__file__; print(mpsim.__file__)"],
                          work, env, 120, label="python -c 'import mpsim' (from the venv)"))
        steps.append(step(["mpsim", "reproduce", "--list"], work, env, 120))
        steps.append(step(["mpsim", "reproduce", "dqs", "--quick", "--seeds", "1", "--processes", "2", "--out", "out"], work, env, 600))
        steps += run_tutorial(work, env)
        steps += kernel_steps(work, env)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    ok = all(rc == 0 for _, rc, _, _ in steps)
    lines = [
        "# The installed wheel, outside the checkout",
        "",
        f"Produced by `python tests/wheel_check.py` ({platform.machine()}, Python {platform.python_version()}): the wheel "
        "built by maturin, installed with pip into a fresh virtual environment in a temporary folder, each command run "
        "there with the environment activated. " + ("Every step succeeded." if ok else "**A step failed.**"),
        "",
        "| command | exit status | wall (s) |",
        "|---|---|---|",
    ]
    bar = "\\|"  # a | inside a table cell
    lines += [f"| `{c.replace('|', bar)}` | {rc} | {s:.1f} |" for c, rc, s, _ in steps]
    text = "\n".join(lines) + "\n"
    print(text)
    for c, rc, _, tail in steps:
        if rc != 0:
            print(f"--- {c} (exit status {rc}):\n{tail}\n", file=sys.stderr)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
