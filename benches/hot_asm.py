"""Where a function's instructions go, instruction by instruction.

Reads a callgrind profile taken with `--dump-instr=yes`, keeps the cost each instruction of the
functions matching a pattern executed itself (functions inlined into them included, calls to
others not), and prints them against the binary's disassembly (`objdump -d -l`), per delivered
packet, followed by the totals per source line. This is how the spills and hoisted
computations of benches/results/hot_path.md were found: a source-level profile shows a line's
cost, not that the compiler moved loop-invariant work ahead of a loop that mostly runs once.

    valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file=CG \\
        target/release/examples/speed scenarios/speed/mptcp_2path.toml 1
    python benches/hot_asm.py CG 'TcpSender::on_ack_coupled$' --packets 296176 --min 1

Needs valgrind's callgrind and binutils' objdump.
"""

import argparse
import re
import subprocess
import sys
from collections import Counter


def costs(path: str, pattern: str) -> tuple[Counter, str]:
    """Self cost per instruction address of the functions whose name matches `pattern`, and
    the profiled binary."""
    names: dict[str, str] = {}
    cost: Counter = Counter()
    binary = ""
    current = ""
    after_call = False
    last = 0
    want = re.compile(pattern)
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("cmd:") and not binary:
                binary = line.split()[1]
            m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
            if m:
                if m.group(3):
                    names[m.group(2)] = m.group(3)
                if m.group(1) == "fn":
                    current = names.get(m.group(2), "")
                    after_call = False
                continue
            if line.startswith("calls="):
                after_call = True  # the next cost line is the call's inclusive cost
                continue
            m = re.match(r"^(0x[0-9a-f]+|[+-]\d+|\*)\s", line)
            if not m:
                continue
            a = m.group(1)
            if a.startswith("0x"):
                last = int(a, 16)
            elif a != "*":
                last += int(a)
            if after_call:
                after_call = False
                continue
            if current and want.search(current):
                cost[last] += int(line.split()[-1])
    return cost, binary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("profile", help="callgrind output written with --dump-instr=yes")
    ap.add_argument("function", help="regular expression on the function's name")
    ap.add_argument("--packets", type=float, default=1.0, help="divide every cost by this (packets delivered)")
    ap.add_argument("--min", type=float, default=0.5, help="list instructions costing at least this")
    ap.add_argument("--lines", type=int, default=30, help="source lines to list by total cost")
    args = ap.parse_args()
    cost, binary = costs(args.profile, args.function)
    if not cost:
        print(f"no instruction of a function matching {args.function!r} in {args.profile}", file=sys.stderr)
        return 1
    lo, hi = min(cost), max(cost)
    out = subprocess.run(
        ["objdump", "-d", "-l", "-C", "--no-show-raw-insn", f"--start-address={lo}", f"--stop-address={hi + 16}", binary],
        capture_output=True, text=True, check=True,
    ).stdout
    source = ""
    per_line: Counter = Counter()
    total = 0.0
    for line in out.splitlines():
        m = re.match(r"^\s*([0-9a-f]+):\s+(.*)$", line)
        if m:
            c = cost.get(int(m.group(1), 16), 0) / args.packets
            total += c
            per_line[source] += c
            if c >= args.min:
                print(f"{c:8.2f} {m.group(1)} {m.group(2)[:60]:60s} {source}")
        elif line.startswith("/"):
            source = line.rsplit("/", 1)[-1].split(" ")[0]
    print(f"\n{total:,.1f} in all; by source line:")
    for src, c in per_line.most_common(args.lines):
        print(f"{c:8.1f} {src}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
