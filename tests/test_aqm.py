"""Queue disciplines on links from Python: the same keys as in TOML, the summary's fields,
`mpsim list aqm`, and errors that name the key."""

import mpsim
import pytest
from mpsim.cli import main


def scenario(link: dict, duration: str = "20s") -> dict:
    return {
        "duration": duration,
        "metrics": {"warmup": "5s"},
        "link": [{"name": "b", "rate": "10Mbps", "delay": "20ms", "queue": "1000pkt", **link}],
        "path": [{"name": "p", "links": ["b"]}],
        "flow": [{"name": "f", "path": "p", "cc": "cubic"}],
    }


def test_codel_from_a_dict_keeps_the_queue_short_where_drop_tail_fills_it():
    dt = mpsim.run(scenario({}), progress=False)
    codel = mpsim.run(scenario({"aqm": {"kind": "codel", "target": "5ms", "interval": "100ms"}}), progress=False)
    fwd = codel.summary["links"][0]
    assert fwd["aqm"] == "codel" and fwd["aqm_drops"] > 0
    assert fwd["queue_delay_mean_ms"] < 15 and fwd["queue_delay_p95_ms"] >= fwd["queue_delay_mean_ms"]
    assert "aqm" not in dt.summary["links"][0]
    assert codel.summary["flows"][0]["rtt_mean_ms"] < dt.summary["flows"][0]["rtt_mean_ms"] / 3
    assert codel.summary["flows"][0]["goodput_bps"] > 0.9 * dt.summary["flows"][0]["goodput_bps"]
    # the frame of links carries the same columns
    assert "queue_delay_p95_ms" in codel.links.columns


@pytest.mark.parametrize("aqm", ["fq_codel", "red", "pie"])
def test_every_discipline_runs_from_its_name_and_both_directions(aqm):
    res = mpsim.run(scenario({"aqm": aqm, "reverse_aqm": aqm}, duration="8s"), progress=False)
    assert [l["aqm"] for l in res.summary["links"]] == [aqm, aqm]


def test_a_bad_discipline_names_the_key_and_the_choices():
    with pytest.raises(mpsim.ScenarioError) as e:
        mpsim.check(scenario({"aqm": "sfq"}))
    assert "link[0].aqm" in str(e.value) and "codel, fq_codel, red, pie" in str(e.value)
    with pytest.raises(mpsim.ScenarioError, match="not a parameter of red"):
        mpsim.check(scenario({"aqm": {"kind": "red", "interval": "100ms"}}))


def test_list_and_run_show_the_disciplines(capsys, tmp_path):
    assert main(["list", "aqm"]) == 0
    out = capsys.readouterr().out
    for name in ("codel", "fq_codel", "red", "pie"):
        assert f"  {name} " in out
    assert [c[1] for c in mpsim.components("aqm")] == ["codel", "fq_codel", "red", "pie"]
    f = tmp_path / "s.toml"
    f.write_text(
        'duration = "5s"\n[[link]]\nname = "b"\nrate = "10Mbps"\ndelay = "10ms"\naqm = "fq_codel"\n'
        '[[path]]\nname = "p"\nlinks = ["b"]\n[[flow]]\npath = "p"\n'
    )
    assert main(["run", str(f), "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "queue delay ms (mean / p95)" in out and "fq_codel" in out and "drop-tail" in out
