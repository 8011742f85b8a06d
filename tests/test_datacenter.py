"""Topologies and traffic from Python: the keys from dicts, their errors, the figures of
mpsim.datacenter and the per-tier summary of mpsim run."""

from __future__ import annotations

import subprocess
import sys

import pytest

import mpsim
from mpsim import datacenter as dc
from mpsim.errors import ScenarioError


def fat_tree(**traffic):
    return {
        "name": "ft",
        "duration": "2s",
        "seed": 3,
        "metrics": {"warmup": "500ms", "interval": 0},
        "topology": {"kind": "fat_tree", "k": 4, "rate": "100Mbps", "delay": "20us", "queue": "100pkt"},
        "traffic": {"matrix": "permutation", **traffic},
    }


@pytest.fixture(scope="module")
def runs():
    return {
        "TCP": mpsim.run(fat_tree(), progress=False),
        "MPTCP 8": mpsim.run(fat_tree(subflows=8, cc="lia"), progress=False),
    }


def test_a_permutation_names_its_flows_by_hosts(runs):
    names = list(runs["TCP"].flows["flow"])
    assert len(names) == 16
    pairs = [n.split("->") for n in names]
    assert sorted(s for s, _ in pairs) == sorted(d for _, d in pairs) == sorted(f"h{i}" for i in range(16))
    assert all(s != d for s, d in pairs)
    assert len(runs["TCP"].links) == 2 * 2 * 48, "two links per cable, two directions each"


def test_host_throughput_is_a_fraction_of_the_access_link(runs):
    h = dc.host_throughput(runs["MPTCP 8"])
    assert list(h["host"]) == [f"h{i}" for i in range(16)]
    assert (h["fraction"] <= 1.0).all() and (h["fraction"] > 0.3).all()
    assert h["sent_bps"].sum() == pytest.approx(runs["MPTCP 8"].flows["goodput_bps"].sum())
    assert h["sent_bps"].sum() == pytest.approx(h["received_bps"].sum())
    # more subflows, more of the fat tree used
    tcp = dc.host_throughput(runs["TCP"])["fraction"].mean()
    assert h["fraction"].mean() > tcp + 0.1


def test_tiers_count_every_link_once(runs):
    t = dc.tiers(runs["MPTCP 8"])
    assert list(zip(t["tier"], t["direction"])) == [
        (tier, way) for tier in ("edge", "aggregation", "core") for way in ("up", "down")
    ]
    assert (t["links"] == 16).all()
    fwd = runs["MPTCP 8"].links
    fwd = fwd[fwd["direction"] == "forward"]
    assert t["packets"].sum() == fwd["packets_delivered"].sum()
    assert t["queue_drops"].sum() == fwd["queue_drops"].sum()
    # every packet crosses an edge link up first and one down last
    edge = t[t["tier"] == "edge"].set_index("direction")
    assert edge.loc["down", "packets"] <= edge.loc["up", "packets"]


def test_tiers_and_directions_by_name():
    assert [dc.tier_of("fat_tree", n) for n in ("h0>e0_0", "e0_0>h0", "a1_0>e1_1", "c2>a3_1")] == [
        "edge", "edge", "aggregation", "core"]
    assert [dc.direction_of("fat_tree", n) for n in ("h0>e0_0", "c2>a3_1")] == ["up", "down"]
    assert dc.tier_of("leaf_spine", "s1>l0") == "spine"
    assert dc.tier_of("dumbbell", "h2>r1") == "access"
    assert (dc.tier_of("dumbbell", "r0>r1"), dc.direction_of("dumbbell", "r0>r1")) == ("bottleneck", "up")


def test_the_tier_names_are_the_cores(tmp_path):
    for kind, extra in [("fat_tree", {"k": 2}), ("leaf_spine", {"leaves": 2, "spines": 1, "hosts_per_leaf": 1}),
                        ("vl2", {"tors": 2, "aggregations": 2, "intermediates": 1, "hosts_per_tor": 1}), ("dumbbell", {"hosts": 1})]:
        d = fat_tree()
        d["topology"] = {"kind": kind, "rate": "1Gbps", "tier": {"nope": {"rate": "1Gbps"}}, **extra}
        with pytest.raises(ScenarioError) as e:
            mpsim.check(d)
        assert e.value.key == "topology.tier.nope"
        assert "expected one of: " + ", ".join(dc.TIERS[kind]) in e.value.message
    assert {n for _, n, _ in mpsim.components("topology")} == set(dc.TIERS)
    assert {n for _, n, _ in mpsim.components("matrix")} == {"permutation", "random", "all_to_all", "incast"}


def test_ranked_throughput_and_its_plot(runs, tmp_path):
    ranked = dc.ranked_throughput(runs["TCP"])
    assert ranked == sorted(ranked) and len(ranked) == 16
    files = dc.plot_ranked(runs, tmp_path / "ranked.png")
    assert [f.suffix for f in files] == [".png", ".svg"] and all(f.stat().st_size > 1000 for f in files)


def test_jain():
    assert dc.jain([1, 1, 1]) == pytest.approx(1.0)
    assert dc.jain([1, 0, 0, 0]) == pytest.approx(0.25)
    assert dc.jain([]) is None and dc.jain([0, 0]) is None


def test_completion_times_by_size():
    d = fat_tree(size={"dist": "pareto", "mean": "50KB", "shape": 1.5}, load=0.2)
    d["duration"] = "1s"
    d["metrics"]["warmup"] = "0s"
    res = mpsim.run(d, progress=False)
    fct = dc.completion_times(res, edges=(1e4, 1e5))
    assert fct["flows"].sum() == len(res.flows)
    assert list(fct["size_from"]) == sorted(fct["size_from"])
    small, large = fct.iloc[0], fct.iloc[-1]
    assert small["completed"] > 0 and small["fct_mean_s"] < large["fct_mean_s"]
    assert (fct["completed"] <= fct["flows"]).all()
    # bulk flows without end have no completion time to bin
    d = fat_tree()
    d["flow"] = [{"name": "sized", "from": "h0", "to": "h1", "app": {"kind": "bulk", "bytes": "20KB"}}]
    res = mpsim.run(d, overrides={"duration": "300ms", "metrics.warmup": "0s"}, progress=False)
    fct = dc.completion_times(res)
    assert list(fct["flows"]) == [1] and list(fct["completed"]) == [1] and fct["size_from"][0] == 1e4


def test_hand_written_flows_name_hosts():
    d = fat_tree()
    del d["traffic"]
    d["flow"] = [{"name": "one", "from": "h0", "to": "h12", "subflows": 2, "cc": "olia"}]
    res = mpsim.run(d, progress=False)
    assert list(res.subflows["path"]) == ["one.0", "one.1"]
    assert dc.flow_hosts(res) == {"one": ("h0", "h12")}
    h = dc.host_throughput(res).set_index("host")
    assert h.loc["h0", "sent_bps"] > 0 and h.loc["h12", "received_bps"] > 0 and h.loc["h5", "sent_bps"] == 0


@pytest.mark.parametrize(
    "change, key, words",
    [
        ({"topology": {"kind": "fat_tree", "k": 3, "rate": "1Gbps"}}, "topology.k", "must be even"),
        ({"topology": {"kind": "torus", "rate": "1Gbps"}}, "topology.kind", "expected one of: fat_tree, leaf_spine, vl2, dumbbell"),
        ({"topology": {"kind": "fat_tree", "k": 4}}, "topology.rate", "missing"),
        ({"traffic": {"matrix": "incast", "senders": 99}}, "traffic.senders", "from 1 to 15"),
        ({"traffic": {"matrix": "incast", "senders": 2, "receiver": "h42"}}, "traffic.receiver", "no host named"),
        ({"traffic": {"matrix": "permutation", "scheduler": "fastest", "subflows": 2}}, "traffic.scheduler", "unknown scheduler"),
        ({"traffic": {"matrix": "permutation", "size": {"dist": "pareto", "mean": "1MB", "shape": 1}}}, "traffic.size.shape",
         "above 1"),
        ({"link": [{"name": "x", "rate": "1Mbps"}]}, "link", "leave out [[link]]"),
    ],
)
def test_bad_keys_are_refused_naming_the_key(change, key, words):
    d = fat_tree()
    d.update(change)
    with pytest.raises(ScenarioError) as e:
        mpsim.check(d)
    assert e.value.key == key
    assert words in e.value.message


def test_overrides_reach_the_traffic():
    res = mpsim.run(fat_tree(), overrides={"traffic.subflows": 3, "traffic.cc": "lia", "duration": "300ms",
                                           "metrics.warmup": "0s"}, progress=False)
    assert len(res.subflows) == 48 and set(res.flows["cc"]) == {"lia"}


def test_mpsim_run_prints_the_tiers():
    out = subprocess.run([sys.executable, "-m", "mpsim", "run", "scenarios/datacenter/fat_tree_permutation.toml",
                          "--set", "duration=1s", "--set", "metrics.warmup=0s"],
                         capture_output=True, text=True, check=True).stdout
    assert "aggregation  up" in out and "core         down" in out
    assert "of the access link on average" in out
    assert "h0>e0_0" not in out, "no table of every link"
