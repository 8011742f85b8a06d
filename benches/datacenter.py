"""Fat trees at scale: a permutation traffic matrix with 1, 2, 4 and 8 subflows, each run in a
fresh process to report its wall time and peak memory, with the hosts' throughput as a share
of their access links (optimal: every host at its access rate, which a full-bisection fat
tree allows for a permutation; goodput cannot pass 1460/1500 = 97.3% of it with 40 bytes of
headers per 1,500-byte packet).

    .venv/bin/python benches/datacenter.py --k 8 --duration 5s --subflows 1 2 4 8
    .venv/bin/python benches/datacenter.py --k 16 --duration 1s --subflows 1 8
    .venv/bin/python benches/datacenter.py --example      # the k = 4 table of docs/datacenter.md
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time
import mpsim
from mpsim import datacenter as dc
d = json.loads(sys.argv[1])
t = time.perf_counter()
mpsim.check(d)
check_s = time.perf_counter() - t
t = time.perf_counter()
r = mpsim.run(d, progress=False, memory_check=False, event_check=False)
h = dc.host_throughput(r)
tiers = dc.tiers(r)
print(json.dumps({
    "check_s": check_s,
    "run_s": time.perf_counter() - t,
    "wall_s": r.run_info["wall_s"],
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "mean": float(h["fraction"].mean()),
    "p10": float(h["fraction"].quantile(0.1)),
    "min": float(h["fraction"].min()),
    "jain": dc.jain(h["sent_bps"]),
    "packets": r.summary["packets_delivered"],
    "events": r.summary["events"],
    "tiers": {f"{t.tier} {t.direction}": t.utilization_mean for t in tiers.itertuples()},
}))
"""


def scenario(k: int, subflows: int, duration: str, warmup: str, seed: int, cc: str) -> dict:
    return {
        "name": f"fat_tree_k{k}_{subflows}",
        "duration": duration,
        "seed": seed,
        "metrics": {"warmup": warmup, "interval": 0},
        "topology": {"kind": "fat_tree", "k": k, "rate": "100Mbps", "delay": "20us", "queue": "100pkt"},
        "traffic": {"matrix": "permutation", "subflows": subflows, **({"cc": cc} if subflows > 1 else {})},
    }


def run(d: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(d)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--duration", default="5s")
    ap.add_argument("--warmup", default="1s")
    ap.add_argument("--subflows", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--cc", default="lia")
    ap.add_argument("--example", action="store_true", help="the k = 4 example: TCP, MPTCP 4 and 8, per tier")
    a = ap.parse_args()
    if a.example:
        a.k, a.duration, a.warmup, a.subflows, a.seeds = 4, "5s", "1s", [1, 4, 8], [1, 2, 3]
    print(f"k = {a.k} fat tree, permutation, 100 Mbit/s links, 20 us per link, 100-packet queues, "
          f"{a.duration} ({a.warmup} warm-up), subflows with {a.cc}; seeds {a.seeds}")
    print()
    print("| subflows | seed | host throughput mean / 10th pct / min (% of access) | Jain | "
          "util edge / aggr / core (up, %) | check s | run s | peak RSS MB | packets |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in a.subflows:
        for seed in a.seeds:
            r = run(scenario(a.k, n, a.duration, a.warmup, seed, a.cc))
            u = r["tiers"]
            print(f"| {n} | {seed} | {r['mean'] * 100:.1f} / {r['p10'] * 100:.1f} / {r['min'] * 100:.1f} | {r['jain']:.3f} | "
                  f"{u['edge up'] * 100:.1f} / {u['aggregation up'] * 100:.1f} / {u['core up'] * 100:.1f} | "
                  f"{r['check_s']:.3f} | {r['run_s']:.1f} | {r['peak_rss_mb']:.0f} | {r['packets']:,} |", flush=True)


if __name__ == "__main__":
    main()
