"""Memory that grows with the data in flight, not with configured buffers or flow counts.

Each run goes in its own Python process, so its peak resident memory (getrusage) is its own.
"""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = """
import json, resource, sys, mpsim
d = json.loads(sys.stdin.read())
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
res = mpsim.run(d, progress=False, memory_check=False)
print(json.dumps({"before": before, "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "delivered": sum(f["bytes_delivered"] for f in res.summary["flows"])}))
"""


def dumbbell(flows: int, duration: str, **tcp) -> dict:
    return {
        "name": "memory",
        "duration": duration,
        "tcp": tcp,
        "metrics": {"interval": False},
        "link": [{"name": "l", "rate": "1Gbps", "delay": "10ms", "queue": "1000pkt"}],
        "path": [{"name": "p", "links": ["l"]}],
        "flow": [{"name": f"f{i}", "path": "p"} for i in range(flows)],
    }


def measure(d: dict) -> dict:
    p = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps(d), capture_output=True, text=True, check=True,
                       timeout=300)
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_a_100_gb_send_buffer_costs_what_is_in_flight():
    # 100 GB is 68 million segments: a record per segment took 1.6 GB; a record per write and
    # the window in flight (a few thousand segments) take a few MB
    m = measure(dumbbell(1, "1s", snd_buf="100GB"))
    assert m["delivered"] > 50_000_000, m
    assert m["peak"] - m["before"] < 100 << 20, f"the run added {(m['peak'] - m['before']) >> 20} MB"


def test_many_bulk_flows_cost_a_few_kilobytes_each():
    # each flow's 4 MB send buffer took a record per segment (about 100 KB a flow) and its
    # delay histogram 16 KB; what is left is its connection, its records and its summary
    flows = 5_000
    m = measure(dumbbell(flows, "300ms"))
    assert m["delivered"] > 10_000_000, m
    per_flow = (m["peak"] - m["before"]) / flows
    assert per_flow < 20_000, f"{per_flow:.0f} bytes per flow"
