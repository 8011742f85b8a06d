"""The link key `jitter`: random extra delay per packet, FIFO kept, its own random stream."""

from __future__ import annotations

import pytest

import mpsim

SCEN = """
duration = "4s"
seed = 3
[metrics]
warmup = "1s"
[[link]]
name = "a"
rate = "10Mbps"
delay = "10ms"
queue = "20pkt"
{extra}
[[path]]
name = "p"
links = ["a"]
[[flow]]
name = "f1"
path = "p"
[[flow]]
name = "f2"
path = "p"
"""


def _run(tmp_path, extra: str, seed: int = 3, **ov):
    f = tmp_path / "s.toml"
    f.write_text(SCEN.format(extra=extra))
    return mpsim.run(f, overrides={"seed": seed, **{k.replace("__", "."): v for k, v in ov.items()}}, progress=False)


def test_jitter_varies_runs_with_the_seed_and_delays_packets(tmp_path):
    plain = [_run(tmp_path, "", s).flows.goodput_bps.tolist() for s in (1, 2)]
    assert plain[0] == plain[1], "no jitter, no loss: nothing random"
    jit = [_run(tmp_path, 'jitter = "1ms"', s) for s in (1, 2)]
    assert jit[0].flows.goodput_bps.tolist() != jit[1].flows.goodput_bps.tolist()
    # the same seed gives the same run
    assert _run(tmp_path, 'jitter = "1ms"', 1).flows.equals(jit[0].flows)
    # up to 1 ms more each way: the mean RTT grows, by at most 2 ms (queueing may change too)
    base = _run(tmp_path, "", 1).flows.rtt_min_ms.min()
    assert jit[0].flows.rtt_min_ms.min() >= base
    # packets never overtake each other on a link: with jitter far above the packet spacing
    # a reordering link would cause duplicate ACKs and retransmissions without any loss
    wild = _run(tmp_path, 'jitter = "20ms"', 1, link__a__queue="100000pkt")
    assert wild.flows.retransmits.sum() == 0
    assert (wild.flows.out_of_order_segments == 0).all()


def test_bad_jitter_is_refused_with_the_key(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(SCEN.format(extra='jitter = "fast"'))
    with pytest.raises(mpsim.ScenarioError) as e:
        mpsim.check(f)
    assert "link[0].jitter" in str(e.value) or "jitter" in str(e.value)
