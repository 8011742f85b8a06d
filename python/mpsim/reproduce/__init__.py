"""Reproductions of the seed papers' experiments: one module per paper.

Each module exposes ``NAME`` (the name used by ``mpsim reproduce``), ``TITLE`` and
``DEFAULT_SEEDS`` (the seeds per point of its committed report) and
``run(out_dir, seeds, quick, processes) -> Path`` which writes figures (PNG and SVG), the data
(CSV) and ``report.md`` (each claim of the paper beside the measured figure) into ``out_dir``
and returns the report's path. Verdicts go through :mod:`mpsim.reproduce.claims`, one rule for
every paper.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from . import buffer_size, dqs, jsctp, mptcp_datacenter, mptcp_rec, po_mptcp

PAPERS: dict[str, ModuleType] = {m.NAME: m for m in (buffer_size, dqs, po_mptcp, mptcp_rec, jsctp, mptcp_datacenter)}


def run(name: str, out_root: str | Path = "results", seeds: int | None = None, quick: bool = False, processes: int | None = None) -> list[Path]:
    """Runs one reproduction (or ``"all"``) into ``out_root/<name>/``; returns the reports.
    ``seeds``: per point (default: each paper's ``DEFAULT_SEEDS``)."""
    names = list(PAPERS) if name == "all" else [name]
    unknown = [n for n in names if n not in PAPERS]
    if unknown:
        raise KeyError(f"unknown paper {unknown[0]!r}; expected one of: {', '.join(PAPERS)} or all")
    reports = [PAPERS[n].run(Path(out_root) / n, seeds=seeds or PAPERS[n].DEFAULT_SEEDS, quick=quick, processes=processes) for n in names]
    if name == "all":
        from .claims import index_markdown

        (Path(out_root) / "README.md").write_text("\n".join(index_markdown(Path(out_root), names)))
    return reports
