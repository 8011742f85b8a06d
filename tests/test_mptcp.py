"""Multipath TCP against its design goals (RFC 6356) and the behaviours the papers study:
receive-buffer blocking, path failure, backup subflows. Scenarios in scenarios/mptcp."""

from pathlib import Path

import pytest

import mpsim

SC = Path(__file__).resolve().parents[1] / "scenarios" / "mptcp"
COUPLED = ["lia", "olia", "balia"]


def goodput(res, flow):
    return next(f["goodput_bps"] for f in res.summary["flows"] if f["flow"] == flow)


def shares(cc, seeds=range(1, 5)):
    """MPTCP goodput / TCP goodput on the shared bottleneck, mean over seeds."""
    ratios = []
    for seed in seeds:
        r = mpsim.run(SC / "shared_bottleneck.toml", seed=seed, overrides={"flow.mptcp.cc": cc}, progress=False)
        ratios.append(goodput(r, "mptcp") / goodput(r, "tcp"))
    return sum(ratios) / len(ratios)


@pytest.mark.parametrize("cc", COUPLED)
def test_rfc6356_do_no_harm_coupled_takes_about_one_tcp_share(cc):
    ratio = shares(cc)
    assert 1 / 1.3 <= ratio <= 1.3, f"{cc}: MPTCP/TCP = {ratio:.2f}"


def test_rfc6356_uncoupled_reno_takes_about_twice():
    ratio = shares("reno")
    assert 1.6 <= ratio <= 2.8, f"reno: MPTCP/TCP = {ratio:.2f}"


@pytest.mark.parametrize("cc", COUPLED)
def test_rfc6356_improve_throughput_over_the_best_path(cc):
    seeds = range(1, 4)
    single = {}
    for path in ("p_wifi", "p_cell"):
        single[path] = sum(
            goodput(mpsim.run(SC / "disjoint_paths.toml", seed=s, overrides={"flow.mptcp.paths": [path]}, progress=False), "mptcp")
            for s in seeds
        ) / len(seeds)
    multi = sum(
        goodput(mpsim.run(SC / "disjoint_paths.toml", seed=s, overrides={"flow.mptcp.cc": cc}, progress=False), "mptcp")
        for s in seeds
    ) / len(seeds)
    # at least the best path's TCP, within 3%: MPTCP's 16-byte DSS option already costs about
    # 1% of goodput per byte on the wire, and a coupled controller that moves nearly all its
    # traffic to the best path (OLIA does) ends up within noise of that path's TCP
    best = max(single.values())
    assert multi >= 0.97 * best, f"{cc}: {multi / 1e6:.2f} < best path {best / 1e6:.2f} Mbit/s"


def run_blocking(buf, sched):
    return mpsim.run(SC / "rcvbuf_blocking.toml", overrides={"tcp.rcv_buf": buf, "flow.mp.scheduler": sched}, progress=False)


def test_small_receive_buffer_punishes_round_robin_not_lowest_rtt():
    rr = run_blocking("64KB", "round_robin").summary["flows"][0]
    lrtt = run_blocking("64KB", "lowest_rtt").summary["flows"][0]
    # round-robin puts every other chunk on the 100 ms path: the head of line waits there
    assert rr["goodput_bps"] < 0.4 * lrtt["goodput_bps"]
    assert rr["o3_max_bytes"] > 0 and rr["rcv_blocked_s"] > 50
    assert rr["max_receive_buffer_bytes"] <= 64_000


def test_large_receive_buffer_aggregates_both_paths():
    f = run_blocking("4MB", "lowest_rtt").summary["flows"][0]
    both = 2 * 10e6 * 1460 / (1500 + 16)  # two 10 Mbit/s links less headers and the DSS option
    assert f["goodput_bps"] > 0.9 * both
    assert all(s["goodput_bps"] > 0.3 * both / 2 for s in f["subflows"])


def test_a_failed_path_is_routed_around_and_nothing_is_lost():
    r = mpsim.run(
        SC / "disjoint_paths.toml",
        overrides={"link.wifi.down": [{"at": "10s", "until": "40s"}], "flow.mptcp.app": {"kind": "bulk", "bytes": "40MB"}},
        progress=False,
    )
    f = r.summary["flows"][0]
    assert f["complete"] and f["bytes_delivered"] == 40_000_000
    assert f["reinjections"] > 0
    wifi, cell = f["subflows"]
    assert wifi["timeouts"] >= 2  # backing off while the link is down
    series = r.subflow_series
    during = series[(series.time_s > 15) & (series.time_s < 35)]
    assert during[during.path == "p_cell"].goodput_bps.mean() > 3e6
    assert during[during.path == "p_wifi"].goodput_bps.max() == 0


def test_backup_subflow_is_used_only_when_the_regular_one_fails():
    over = {"flow.mptcp.backup": ["p_cell"]}
    quiet = mpsim.run(SC / "disjoint_paths.toml", overrides=over, progress=False).summary["flows"][0]
    assert quiet["subflows"][1]["bytes_sent"] == 0
    failed = mpsim.run(
        SC / "disjoint_paths.toml", overrides={**over, "link.wifi.down": [{"at": "30s"}]}, progress=False
    ).summary["flows"][0]
    assert failed["subflows"][1]["bytes_sent"] > 10_000_000


def test_multipath_runs_are_deterministic():
    a = run_blocking("64KB", "round_robin").summary
    b = run_blocking("64KB", "round_robin").summary
    assert "wall_s" not in a  # wall-clock time is in run_info, not in the summary
    assert a == b


def test_linux_upstream_sizes_the_connection_buffer_as_linux():
    # a 10 Mbit/s path beside a 1 Mbit/s one of 100 ms RTT: what the slow subflow holds
    # (its window and the data queued behind it) reaches the receiver late, and nothing after
    # it is acknowledged at the connection level (DATA_ACK) until it arrives. With Linux's
    # connection buffer (tcp_wmem[0] plus the subflows' autotuned buffers, a few hundred KB
    # here) the application cannot write more meanwhile and the fast path idles;
    # lowest_rtt_plain keeps the flow's own 4 MB buffer and the fast path runs at its rate.
    sc = {
        "name": "sndbuf",
        "duration": "20s",
        "seed": 1,
        "metrics": {"warmup": "5s"},
        "tcp": {"snd_buf": "4MB", "rcv_buf": "8MB"},
        "link": [
            {"name": "fast", "rate": "10Mbps", "delay": "10ms", "queue": "20pkt"},
            {"name": "slow", "rate": "1Mbps", "delay": "50ms", "queue": "10pkt"},
        ],
        "path": [{"name": "pf", "links": ["fast"]}, {"name": "ps", "links": ["slow"]}],
        "flow": [{"name": "mp", "paths": ["pf", "ps"], "cc": "reno"}],
    }

    def fast_path(scheduler):
        sc["flow"][0]["scheduler"] = scheduler
        return mpsim.run(sc).subflows.set_index("path").loc["pf", "goodput_bps"]

    # 9.6 Mbit/s is the link's rate less headers
    assert fast_path("lowest_rtt_plain") > 9.4e6
    assert fast_path("linux_upstream") < 8.0e6
