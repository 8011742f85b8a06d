#!/usr/bin/env python3
"""Counts that say how easy the code is to change, for a checkout or an earlier commit.

    python benches/layout_metrics.py                 # this checkout
    python benches/layout_metrics.py --commit REV    # an earlier commit (read with git show)

It prints, for the core (crates/mpsim-core/src, tests excluded) and the Python package:

- the longest files and functions, and how many functions exceed 100 lines;
- import circles: among the core's top-level modules (an arrow A -> B when a file of A names
  `crate::B`), among the files of each folder (an arrow when one names `super::x` or the
  folder's `x`), and among the Python package's modules (imports at module level);
- lines of sim/ that name a concrete transport or header variant;
- files tracked by git.

The counts are plain text scans (a function runs from its `fn` line to the closing brace at
the same indentation), good for before/after comparisons, not for proofs.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = "crates/mpsim-core/src"
PY = "python/mpsim"
FN = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))? )?(?:const )?(?:unsafe )?(?:async )?fn (\w+)")
TRANSPORT_WORDS = re.compile(r"\b(Tcp|Mptcp|Sctp|Udp|Quic)(Conn|Data|Ack|Sack|Control)?\b|\bsctp\b|\bmptcp\b|\budp\b")


def files(commit: str | None) -> dict[str, str]:
    """Path -> text of the tracked .rs and .py files of the core and the package."""
    if commit is None:
        names = subprocess.run(["git", "ls-files", CORE, PY], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
        return {n: (ROOT / n).read_text() for n in names if n.endswith((".rs", ".py")) and (ROOT / n).exists()}
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", commit, CORE, PY], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    out = {}
    for n in names:
        if n.endswith((".rs", ".py")):
            out[n] = subprocess.run(["git", "show", f"{commit}:{n}"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return out


def tracked(commit: str | None) -> int:
    args = ["git", "ls-files"] if commit is None else ["git", "ls-tree", "-r", "--name-only", commit]
    return len(subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=True).stdout.split())


def is_test_file(path: str) -> bool:
    name = Path(path).name
    return name == "tests.rs" or name.endswith("_tests.rs")


def code_lines(text: str) -> list[str]:
    """The lines of a Rust file before its `#[cfg(test)]` module."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("#[cfg(test)]"):
            return lines[:i]
    return lines


def rust_functions(path: str, text: str) -> list[tuple[int, str]]:
    out = []
    lines = code_lines(text)
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m or line.rstrip().endswith(";"):
            continue
        indent = m.group(1)
        for j in range(i + 1, len(lines)):
            if lines[j] == indent + "}" or (lines[j].startswith(indent + "}") and not lines[j].startswith(indent + "} ")):
                out.append((j - i + 1, f"{path}:{i + 1} {m.group(2)}"))
                break
    return out


def python_functions(path: str, text: str) -> list[tuple[int, str]]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    return [
        (n.end_lineno - n.lineno + 1, f"{path}:{n.lineno} {n.name}")
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno is not None
    ]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    nodes = set(edges) | {w for ws in edges.values() for w in ws}
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def rust_circles(src: dict[str, str]) -> list[str]:
    found = []
    top = {Path(p).relative_to(CORE).parts[0].removesuffix(".rs") for p in src if p.startswith(CORE) and p.endswith(".rs")}
    edges: dict[str, set[str]] = defaultdict(set)
    folders: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for p, text in src.items():
        if not p.startswith(CORE) or not p.endswith(".rs") or is_test_file(p):
            continue
        rel = Path(p).relative_to(CORE)
        me = rel.parts[0].removesuffix(".rs")
        body = "\n".join(line.split("//")[0] for line in code_lines(text))
        for m in re.finditer(r"crate::(\w+)", body):
            if m.group(1) in top and m.group(1) != me:
                edges[me].add(m.group(1))
        # files of one folder: arrows through `super::x` (x a sibling file or folder)
        folder = rel.parent
        if str(folder) == ".":
            continue
        name = rel.stem if rel.stem != "mod" else None
        if name is None:
            continue
        siblings = {q.stem if q.stem != "mod" else q.parent.name for q in (Path(x).relative_to(CORE) for x in src if x.startswith(CORE)) if q.parent == folder or q.parent.parent == folder}
        for m in re.finditer(r"super::(\w+)", body):
            if m.group(1) in siblings and m.group(1) != name:
                folders[str(folder)][name].add(m.group(1))
    for c in cycles(edges):
        found.append("core: " + " <-> ".join(c))
    for folder, e in sorted(folders.items()):
        for c in cycles(e):
            found.append(f"{folder}/: " + " <-> ".join(c))
    return found


def python_circles(src: dict[str, str]) -> list[str]:
    edges: dict[str, set[str]] = defaultdict(set)
    for p, text in src.items():
        if not p.startswith(PY) or not p.endswith(".py"):
            continue
        mod = ".".join(Path(p).relative_to("python").with_suffix("").parts).removesuffix(".__init__")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        pkg = mod if p.endswith("__init__.py") else mod.rsplit(".", 1)[0]
        for node in tree.body:  # module level only: imports inside functions run late
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = pkg.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                if base.startswith("mpsim"):
                    targets = [base] + [f"{base}.{a.name}" for a in node.names]
                    for t in targets:
                        if any(q.endswith(t.replace(".", "/") + ".py") or q.endswith(t.replace(".", "/") + "/__init__.py") for q in src):
                            if t != mod and not mod.startswith(t + ".") and t != "mpsim":
                                edges[mod].add(t)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("mpsim.") and a.name != mod:
                        edges[mod].add(a.name)
    return ["python: " + " <-> ".join(c) for c in cycles(edges)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commit", help="an earlier commit to count (default: this checkout)")
    ap.add_argument("--top", type=int, default=5, help="how many of the longest files and functions to list")
    args = ap.parse_args(argv)
    src = files(args.commit)
    rust = {p: t for p, t in src.items() if p.endswith(".rs") and not is_test_file(p)}
    py = {p: t for p, t in src.items() if p.endswith(".py")}
    rust_sizes = sorted(((len(code_lines(t)), p) for p, t in rust.items()), reverse=True)
    rust_fns = sorted((f for p, t in rust.items() for f in rust_functions(p, t)), reverse=True)
    py_sizes = sorted(((len(t.splitlines()), p) for p, t in py.items()), reverse=True)
    py_fns = sorted((f for p, t in py.items() for f in python_functions(p, t)), reverse=True)
    sim = [line for p, t in rust.items() if p.startswith(f"{CORE}/sim/") for line in code_lines(t) if TRANSPORT_WORDS.search(line) and not line.strip().startswith("//")]
    print(f"commit: {args.commit or 'this checkout'}")
    print(f"files tracked: {tracked(args.commit)}")
    print(f"core: {len(rust)} files, {sum(n for n, _ in rust_sizes)} lines outside tests")
    print("  longest files: " + ", ".join(f"{Path(p).relative_to(CORE)} {n}" for n, p in rust_sizes[: args.top]))
    print("  longest functions: " + ", ".join(f"{Path(w.split(':')[0]).relative_to(CORE)}:{w.split(' ')[1]} {n}" for n, w in rust_fns[: args.top]))
    print(f"  functions over 100 lines: {sum(1 for n, _ in rust_fns if n > 100)}")
    print(f"  lines of sim/ naming a transport: {len(sim)}")
    print(f"python: {len(py)} modules, {len([p for p in py if Path(p).parent == Path(PY)])} at the top level of the package")
    print("  longest modules: " + ", ".join(f"{Path(p).relative_to(PY)} {n}" for n, p in py_sizes[: args.top]))
    print("  longest functions: " + ", ".join(f"{Path(w.split(':')[0]).relative_to(PY)}:{w.split(' ')[1]} {n}" for n, w in py_fns[: args.top]))
    circles = rust_circles(src) + python_circles(src)
    print(f"import circles: {len(circles)}")
    for c in circles:
        print(f"  {c}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
