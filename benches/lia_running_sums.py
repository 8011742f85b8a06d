"""Whether LIA's coupled sum could be kept as a running sum with the same bits.

LIA's threshold (crates/mpsim-core/src/cc/lia.rs) adds `cwnd_k / rtt_k` over the coupled
paths in subflow order, starting from 0.0, on every ACK that may reach it. A running sum
updated on change (`S - old + new` for the path that changed) would spare the pass over the
paths, but floating-point addition is not associative: this replays random ACKs (a window grows
by a segment or, one time in a hundred, is halved; the RTT moves by up to 1 %) on `--paths`
paths and counts the updates after which the running sum's bits differ from the sum recomputed
in order, and those after which the threshold in bytes (`ceil(S^2 / max_k cwnd_k / rtt_k^2)`)
differs.

    python benches/lia_running_sums.py [--updates 1000000] [--paths 8] [--seed 32]
"""

import argparse
import math
import random

MSS = 1448


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--updates", type=int, default=1_000_000)
    ap.add_argument("--paths", type=int, default=8)
    ap.add_argument("--seed", type=int, default=32)
    a = ap.parse_args()
    if a.paths < 2 or a.updates < 1:
        ap.error("--paths must be at least 2 and --updates at least 1")
    rng = random.Random(a.seed)
    cwnd = [10 * MSS] * a.paths
    rtt = [rng.randrange(10_000_000, 100_000_000) * 1e-9 for _ in range(a.paths)]
    terms = [c / r for c, r in zip(cwnd, rtt)]
    running = 0.0
    for x in terms:
        running += x
    sum_differs = threshold_differs = 0
    worst = 0.0
    for _ in range(a.updates):
        j = rng.randrange(a.paths)
        cwnd[j] = max(2 * MSS, cwnd[j] // 2) if rng.random() < 0.01 else cwnd[j] + MSS
        rtt[j] = max(1e-3, rtt[j] * (1 + rng.uniform(-0.01, 0.01)))
        new = cwnd[j] / rtt[j]
        running = running - terms[j] + new
        terms[j] = new
        in_order = 0.0
        for x in terms:
            in_order += x
        max_ratio = max(c / (r * r) for c, r in zip(cwnd, rtt))
        sum_differs += running != in_order
        threshold_differs += math.ceil(running * running / max_ratio) != math.ceil(in_order * in_order / max_ratio)
        worst = max(worst, abs(running - in_order) / in_order)
    print(
        f"{a.updates} updates on {a.paths} paths (seed {a.seed}): the running sum's bits differ after "
        f"{sum_differs} ({100 * sum_differs / a.updates:.1f} %), the threshold in bytes after {threshold_differs}; "
        f"largest relative difference {worst:.1e}"
    )


if __name__ == "__main__":
    main()
