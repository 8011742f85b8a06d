"""Shared fixtures for the Python API and CLI tests."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture
def small_path() -> Path:
    """A lossy two-flow scenario of 3 simulated seconds (runs in milliseconds)."""
    return DATA / "small.toml"


@pytest.fixture
def small_text(small_path: Path) -> str:
    return small_path.read_text(encoding="utf-8")


@pytest.fixture
def write(tmp_path: Path):
    """``write(name, content)`` writes text (str) or bytes into tmp_path and returns the path."""

    def _write(name: str, content: str | bytes) -> Path:
        p = tmp_path / name
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
        return p

    return _write


@pytest.fixture
def recorded_testbed():
    """``(Testbed, seen)``: a kernel testbed that makes no namespaces and starts no emulator,
    recording the configuration its emulator would get in ``seen["emulator"]``."""
    from mpsim.kernel import testbed as K

    seen: dict = {}

    class Recorded(K.Testbed):
        def _setup(self):
            seen["emulator"] = self.emulator_config()

        def close(self):
            pass

    return Recorded, seen
