"""Where a run's instructions go, by component of the core, per delivered packet.

Reads a callgrind profile (line-level, the default) of the `speed` example and adds each cost
line's own instructions to the source file it comes from, inlined code included: callgrind
names the file of inlined lines (`fi=`/`fe=`), so code the compiler moved into a caller still
counts where it was written. Lines from the standard library (a `Vec`'s push, a `VecDeque`'s
pop) count for the core's file whose lines came last before them in the same function (most
likely the one they were inlined into, the profile does not say); standard-library functions
that were not inlined (`memcpy`, a vector's growth) are a group of their own. Files are then
grouped into components (link and queue, event heap, TCP sender, ...), so the figures add
up to the run's total.

    valgrind --tool=callgrind --callgrind-out-file=CG \\
        target/release/examples/speed scenarios/speed/mptcp_2path.toml 1
    python benches/cost_by_component.py CG --packets 296176 [--files]

`--packets` is the count the example prints (`packets_delivered`); `--files` lists the files
as well.
"""

import argparse
import re
import sys
from collections import Counter

# (component, pattern on the path inside crates/mpsim-core/src), first match wins
COMPONENTS = [
    ("event heap", r"/engine\.rs$"),
    ("event loop and packet plumbing (sim/)", r"/sim/(run|net|mod)\.rs$"),
    ("application (sim/flow.rs, app/)", r"/(sim/flow\.rs|app/)"),
    ("measurements (metrics/, sim/record.rs)", r"/(metrics/|sim/record\.rs)"),
    ("link and queue (net/, rng.rs: the loss draw)", r"/(net/|rng\.rs$)"),
    ("TCP sender (tcp/sender/, rtt, rto, rack, tlp, prr, frto)", r"/transport/tcp/(sender/|rtt|rto|rack|tlp|prr|frto|rate)"),
    ("TCP receiver (tcp/receiver.rs, delack.rs)", r"/transport/tcp/(receiver|delack)\.rs$"),
    ("TCP subflow glue (tcp/subflow.rs, conn.rs)", r"/transport/tcp/"),
    ("MPTCP scheduling loop (mptcp/schedule.rs)", r"/transport/mptcp/schedule\.rs$"),
    ("MPTCP data level (mptcp/ other)", r"/transport/mptcp/"),
    ("transport dispatch (transport/*.rs)", r"/transport/[a-z_]+\.rs$"),
    ("scheduler (sched/, view.rs)", r"/(sched/|view\.rs$)"),
    ("congestion controller (cc/)", r"/cc/"),
    ("receiver logic (feedback/)", r"/feedback/"),
    ("scenario reading and building", r"/(scenario/|sim/build\.rs|estimate\.rs)"),
]

NAME = re.compile(r"^\((\d+)\)(?: (.*))?$")


def is_ours(path: str) -> bool:
    return "mpsim-core/src/" in path


def file_costs(path: str, lines_of: str = "") -> tuple[Counter, int, Counter]:
    """Own instructions per source file (see the module's text), the run's total, and the
    own instructions per line of the files whose path ends with `lines_of`."""
    files: dict[str, str] = {}
    fns: dict[str, str] = {}
    per_file: Counter = Counter()
    per_line: Counter = Counter()
    line_no = 0
    fl = fi = ""  # the function's file, the file of the lines that follow
    last_ours = ""  # the core's file whose lines came last in this function: where inlined
    # standard-library lines were most likely inlined into
    skip_next = False
    total = 0
    events = ""
    # a profile taken with --dump-instr=yes gives each cost line an address before its line
    npos, line_at = 1, 0

    def step(line_no: int, pos: str) -> int:
        if pos[0] == "+":
            return line_no + int(pos[1:])
        if pos[0] == "-":
            return line_no - int(pos[1:])
        if pos != "*":
            return int(pos)
        return line_no

    def name(table: dict[str, str], text: str) -> str:
        m = NAME.match(text)
        if not m:
            return text
        if m.group(2) is not None:
            table[m.group(1)] = m.group(2)
        return table.get(m.group(1), "")

    with open(path) as f:
        for line in f:
            c = line[0]
            if c.isdigit() or c in "+-*":
                if skip_next:
                    # the inclusive cost of the call above: counted in the callee's own lines
                    skip_next = False
                    continue
                parts = line.split()
                if len(parts) <= npos:
                    continue
                line_no = step(line_no, parts[line_at])
                cost = int(parts[npos])
                total += cost
                where = fi if is_ours(fi) else last_ours
                per_file[where] += cost
                if lines_of and where.endswith(lines_of):
                    per_line[(where if where == fi else f"{where} (inlined {fi.rsplit('/', 1)[-1]})", line_no)] += cost
                continue
            if line.startswith("calls="):
                # (its position is the call's line: the line of the cost line after it)
                skip_next = True
                parts = line.split()
                if len(parts) > 2 + line_at:
                    line_no = step(line_no, parts[2 + line_at])
                continue
            if line.startswith("positions:"):
                kinds = line.split()[1:]
                npos, line_at = len(kinds), kinds.index("line")
                continue
            key, _, rest = line.rstrip("\n").partition("=")
            if key == "fl":
                fl = fi = name(files, rest)
            elif key in ("fi", "fe"):
                fi = name(files, rest)
                if is_ours(fi):
                    last_ours = fi
            elif key == "fn":
                name(fns, rest)
                fi = last_ours = fl
            elif key in ("cfi", "cfl"):
                name(files, rest)
            elif key == "cfn":
                name(fns, rest)
            elif key == "events":
                events = rest
    if events and events.split()[0] != "Ir":
        sys.exit(f"expected instructions (Ir) as the first event, found {events!r}")
    return per_file, total, per_line


def component(path: str) -> str:
    for comp, pattern in COMPONENTS:
        if re.search(pattern, path):
            return comp
    return "standard library, not inlined (memcpy, allocation, ...)" if not is_ours(path) else "other core code"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("profile", help="callgrind output file")
    ap.add_argument("--packets", type=int, required=True, help="data packets delivered in the run")
    ap.add_argument("--files", action="store_true", help="list the source files too")
    ap.add_argument("--lines", metavar="PATH_END", default="", help="list the lines of the files whose path ends so")
    args = ap.parse_args(argv)
    per_file, total, per_line = file_costs(args.profile, args.lines)
    per_comp: Counter = Counter()
    for path, cost in per_file.items():
        per_comp[component(path)] += cost
    n = args.packets
    print(f"total {total:,} instructions, {total / n:,.1f} per delivered packet\n")
    print("| component | instructions / packet | share |")
    print("|---|---:|---:|")
    for comp, cost in per_comp.most_common():
        print(f"| {comp} | {cost / n:,.1f} | {100 * cost / total:.1f}% |")
    if args.files:
        print("\n| file | instructions / packet |")
        print("|---|---:|")
        for path, cost in per_file.most_common():
            if cost / n >= 1:
                short = path.split("mpsim-core/src/")[-1]
                print(f"| {short} | {cost / n:,.1f} |")
    if args.lines:
        print("\n| file | line | instructions / packet |")
        print("|---|---:|---:|")
        for (path, no), cost in per_line.most_common():
            if cost / n >= 1:
                print(f"| {path.split('mpsim-core/src/')[-1]} | {no} | {cost / n:,.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
