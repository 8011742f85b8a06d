"""The mptcp-datacenter reproduction (Raiciu et al., SIGCOMM 2011) and the `ecmp` key of a
topology that its control uses."""

import pytest

import mpsim
from mpsim import datacenter, reproduce
from mpsim.reproduce import claims
from mpsim.reproduce import mptcp_datacenter as dc


def test_report_figures_and_data(tmp_path):
    (report,) = reproduce.run(dc.NAME, tmp_path, seeds=2, quick=True, processes=1)
    text = report.read_text()
    assert "## Verdicts" in text and "| claim (paper) | against |" in text
    for c in dc.claim_list():
        assert f"| {c.text} | {c.baseline} | " in text, c.key
    assert "≈ 90 (as summarised" in text  # the paper's number beside the measured one
    out = report.parent
    for name in ("fig_subflows.png", "fig_subflows.svg", "fig_ranked_fat_tree.png", "fig_ranked_vl2.svg", "data.csv", "claims.csv"):
        assert (out / name).stat().st_size > 0, name
    assert dc.NAME in reproduce.PAPERS


def _decided(keys, seeds=4):
    st = dc.study(dc.QUICK)
    st.claims = [c for c in st.claims if c.key in keys]
    return st, claims.run(st, seeds, processes=1, perturbations=(), progress=False)


def test_mptcp_beats_tcp_on_the_fat_tree_and_needs_its_subflows_spread():
    # the model's direction at the quick scale (k = 4), paired over four seeds: 8 subflows
    # above TCP in throughput and fairness, and neither holds with the subflows kept on one
    # path (ecmp = "addresses"). Goes red if `ecmp = "addresses"` stops pinning the subflows
    # (the control then holds too: "holds without it") or if ECMP stops spreading them.
    st, table = _decided({"throughput", "fairness"})
    for r in claims.evaluate(st.claims, table):
        assert r.verdict == claims.HOLDS, (r.claim.key, r.points)
        assert r.credit == claims.NEEDS, (r.claim.key, r.control_verdicts)
    # the same claim with the mechanism switched off in the scheme itself does not hold
    (c,) = [c for c in st.claims if c.key == "throughput"]
    off = claims.Claim(c.key, c.text, c.metric, c.better, "mptcp8_one_path", c.baseline, c.points)
    (r,) = claims.evaluate([off], table)
    assert r.verdict != claims.HOLDS, r.points


def test_scenario_is_the_papers_experiment():
    d = dc.scenario("fat_tree", "mptcp8", dc.FULL)
    assert d["topology"]["kind"] == "fat_tree" and d["topology"]["k"] == 8
    assert d["traffic"] == {"matrix": "permutation", "subflows": 8, "cc": "lia"}
    assert "ecmp" not in d["topology"]
    assert dc.scenario("fat_tree", "mptcp8_one_path", dc.FULL)["topology"]["ecmp"] == "addresses"
    v = dc.scenario("vl2", "tcp", dc.DEFAULT)["topology"]
    assert v["kind"] == "vl2" and v["tier"]["intermediate"]["rate"] == v["tier"]["aggregation"]["rate"] == "1000Mbps"
    with pytest.raises(ValueError, match="unknown arm"):
        dc.scenario("fat_tree", "mptcp16", dc.QUICK)
    with pytest.raises(ValueError, match="unknown topology"):
        dc.scenario("bcube", "tcp", dc.QUICK)


def test_perturbations_scale_the_generated_links():
    d = dc.scenario("vl2", "tcp", dc.DEFAULT)
    p = dc.PERTURBATIONS
    assert p["rates ×0.8"].apply(d)["topology"]["rate"] == "80Mbps"
    assert p["rates ×0.8"].apply(d)["topology"]["tier"]["intermediate"]["rate"] == "800Mbps"
    assert p["queues ×0.5"].apply(d)["topology"]["queue"] == "50pkt"
    assert p["delays ×1.2"].apply(d)["topology"]["delay"] == "24us"
    assert p["other seeds"].seed_offset == claims.DISJOINT_OFFSET
    assert d["topology"]["rate"] == "100Mbps"  # the original is left alone


def _one_flow(ecmp=None):
    top = {"kind": "fat_tree", "k": 4, "rate": "100Mbps", "delay": "20us", "queue": "100pkt"}
    if ecmp:
        top["ecmp"] = ecmp
    return {"name": "one", "duration": "200ms", "seed": 3, "topology": top,
            "flow": [{"name": "x", "from": "h0", "to": "h15", "subflows": 8, "cc": "lia"}]}


def _core_links_used(ecmp=None):
    res = mpsim.run(_one_flow(ecmp), progress=False)
    links = res.links
    used = links[(links["direction"] == "forward") & (links["packets_delivered"] > 0)]
    return {n for n in used["link"] if datacenter.tier_of("fat_tree", n) == "core" and datacenter.direction_of("fat_tree", n) == "up"}


def test_ecmp_on_addresses_keeps_a_connections_subflows_on_one_path():
    assert len(_core_links_used()) > 1
    assert len(_core_links_used("five_tuple")) > 1
    assert len(_core_links_used("addresses")) == 1


def test_an_unknown_ecmp_hash_is_refused_naming_the_key():
    with pytest.raises(mpsim.ScenarioError, match=r"topology\.ecmp.*five_tuple, addresses"):
        mpsim.check(_one_flow("ports"))


def test_vl2_topology_builds_runs_and_names_its_tiers():
    d = {"name": "vl2", "duration": "100ms", "seed": 1,
         "topology": {"kind": "vl2", "tors": 4, "aggregations": 4, "intermediates": 2, "hosts_per_tor": 2, "rate": "100Mbps",
                      "tier": {"intermediate": {"rate": "1Gbps"}}},
         "traffic": {"matrix": "permutation", "subflows": 2, "cc": "lia"}}
    info = mpsim.check(d)
    assert len(info["links"]) == 2 * (8 + 8 + 8)  # host, ToR-aggregation and aggregation-intermediate cables
    assert "t0>a0" in info["links"] and "a3>i1" in info["links"]
    res = mpsim.run(d, progress=False)
    t = datacenter.tiers(res)
    assert list(dict.fromkeys(t["tier"])) == ["tor", "aggregation", "intermediate"]
    assert datacenter.tier_of("vl2", "i1>a2") == "intermediate" and datacenter.direction_of("vl2", "i1>a2") == "down"
    bad = {**d, "topology": {**d["topology"], "k": 4}}
    with pytest.raises(mpsim.ScenarioError, match=r"topology\.k.*not a parameter of a vl2"):
        mpsim.check(bad)
    bad = {**d, "topology": {**d["topology"], "aggregations": 1}}
    with pytest.raises(mpsim.ScenarioError, match=r"topology\.aggregations"):
        mpsim.check(bad)
