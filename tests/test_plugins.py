"""Schedulers and congestion controllers written in Python (mpsim.plugins, the bridge in
crates/mpsim-py/src/bridge.rs): faithfulness against the built-ins, errors in user code,
registration by name, by "module:Class" and by entry point, sweeps."""

import json
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

import pytest

import mpsim
from mpsim import plugins

ROOT = Path(__file__).resolve().parents[1]
MPTCP = ROOT / "scenarios" / "mptcp"
# three shipped multipath scenarios, each with the name of its multipath flow
MULTIPATH = [("disjoint_paths.toml", "mptcp"), ("shared_bottleneck.toml", "mptcp"), ("rcvbuf_blocking.toml", "mp")]
# bit-identity holds for any length; 30 s keeps the cost of these tests low
DURATION = "30s"


def flow_name(scenario: str) -> str:
    return dict(MULTIPATH)[scenario]


def summary(res: mpsim.Result) -> dict:
    """The summary without the names of the scheduler and controller (which differ)."""
    s = json.loads(res.to_json())
    s = s.get("summary", s)
    for f in s["flows"]:
        f.pop("scheduler", None)
        f.pop("cc", None)
    return s


def names(res: mpsim.Result) -> tuple:
    f = res.flows.iloc[0]
    return f.get("scheduler"), f["cc"]


@pytest.mark.parametrize("scenario", [m[0] for m in MULTIPATH])
@pytest.mark.parametrize(
    "builtin, port",
    [("round_robin", "mpsim.examples.round_robin:RoundRobin"), ("lowest_rtt_plain", "mpsim.examples.lowest_rtt:LowestRtt"),
     # the optional hooks: on_window_blocked (reinjection, penalisation) and copies
     ("lowest_rtt", "mpsim.examples.lowest_rtt_rbuf:LowestRttRbuf"), ("redundant", "mpsim.examples.redundant:Redundant")],
)
def test_python_scheduler_ports_are_bit_identical(scenario, builtin, port):
    key = f"flow.{flow_name(scenario)}.scheduler"
    base = {"duration": DURATION, key: builtin}
    rust = mpsim.run(MPTCP / scenario, overrides=base, progress=False)
    py = mpsim.run(MPTCP / scenario, overrides={**base, key: port}, progress=False)
    assert names(py)[0] == port and names(rust)[0] == builtin
    assert summary(py) == summary(rust)
    # the per-interval series too
    assert py.flow_series.equals(rust.flow_series)


@pytest.mark.parametrize("scenario", [m[0] for m in MULTIPATH] + ["../validation/dumbbell_2x10m_loss1.toml"])
def test_python_reno_port_is_bit_identical(scenario):
    multipath = scenario in dict(MULTIPATH)
    key = f"flow.{flow_name(scenario)}.cc" if multipath else "flow.*.cc"
    base = {"duration": DURATION, key: "reno"}
    rust = mpsim.run(MPTCP / scenario, overrides=base, progress=False)
    py = mpsim.run(MPTCP / scenario, overrides={**base, key: "mpsim.examples.reno:Reno"}, progress=False)
    ccs = py.flows.set_index("flow")["cc"]
    assert ccs[flow_name(scenario)] == "mpsim.examples.reno:Reno" if multipath else set(ccs) == {"mpsim.examples.reno:Reno"}
    assert summary(py) == summary(rust)
    assert py.flow_series.equals(rust.flow_series)


def test_a_different_python_scheduler_gives_a_different_result():
    """The bit-identity test can fail: the port with its order of preference reversed differs."""

    class Slowest:
        def pick(self, ctx):
            ok = [i for i, s in enumerate(ctx.subflows) if s.available()]
            return max(ok, key=lambda i: (ctx.subflows[i].srtt or 0, i)) if ok else None

    mpsim.register_scheduler("slowest_first", Slowest)
    o = {"duration": "10s"}
    rust = mpsim.run(MPTCP / "rcvbuf_blocking.toml", overrides={**o, "flow.mp.scheduler": "lowest_rtt_plain"}, progress=False)
    py = mpsim.run(MPTCP / "rcvbuf_blocking.toml", overrides={**o, "flow.mp.scheduler": "slowest_first"}, progress=False)
    assert summary(py) != summary(rust)
    assert names(py)[0] == "slowest_first"


# -------------------------------------------------------------------------------------
# what user code sees


def test_views_have_the_fields_and_units_of_the_core():
    seen = {}

    class Probe:
        def __init__(self):
            self.calls = 0

        def pick(self, ctx):
            self.calls += 1
            if self.calls == 200:
                seen["ctx"] = {k: getattr(ctx, k) for k in ("now", "unscheduled", "window_room", "next_len",
                                                             "next_priority", "hol_subflow", "hol_sent_on", "send_window")}
                seen["subs"] = [{k: getattr(s, k) for k in ("srtt", "latest_rtt", "rtt_samples", "rttvar", "min_rtt", "rto", "cwnd",
                                                           "ssthresh", "mss", "in_flight", "queued", "ca_state", "backup",
                                                           "usable", "segments_sent", "retransmits")} for s in ctx.subflows]
            for i, s in enumerate(ctx.subflows):
                if s.available():
                    return i
            return None

    class Coupled:
        def on_ack(self, w, ctx):
            if "ack" not in seen and ctx.srtt is not None:
                seen["ack"] = (ctx.me, len(ctx.subflows), [s.mss for s in ctx.subflows], w.mss)
            w.cwnd += ctx.bytes_acked if w.in_slow_start() else 0
            return w

        def on_congestion(self, w, event, ctx):
            seen.setdefault("events", set()).add(event)
            return mpsim.Window(max(ctx.in_flight // 2, 2 * w.mss), max(ctx.in_flight // 2, 2 * w.mss), w.mss)

    made = []

    class CountedProbe(Probe):
        def __init__(self):
            super().__init__()
            made.append("scheduler")

    class CountedCoupled(Coupled):
        def __init__(self):
            made.append("cc")

    mpsim.register_scheduler("probe", CountedProbe)
    mpsim.register_controller("coupled_probe", CountedCoupled)
    mpsim.run(MPTCP / "rcvbuf_blocking.toml", overrides={"duration": "8s", "flow.mp.scheduler": "probe", "flow.mp.cc": "coupled_probe"},
              progress=False)
    assert sorted(made) == ["cc", "cc", "scheduler"]  # one scheduler per connection, one controller per subflow
    c, subs = seen["ctx"], seen["subs"]
    assert isinstance(c["now"], int) and 0 < c["now"] < 5_000_000_000  # nanoseconds
    assert c["hol_subflow"] is None and c["next_len"] <= 1500
    assert len(subs) == 2 and all(s["mss"] > 500 and s["ca_state"] in ("open", "recovery", "loss") for s in subs)
    fast = subs[0]
    # 10 ms one way: an RTT of at least 20 ms, in integer nanoseconds
    assert isinstance(fast["srtt"], int) and fast["srtt"] >= 20_000_000
    assert fast["rto"] >= 200_000_000
    me, n, msss, mss = seen["ack"]
    assert n == 2 and me in (0, 1) and msss[me] == mss


# -------------------------------------------------------------------------------------
# errors in user code


@pytest.fixture()
def user_module(tmp_path, monkeypatch):
    """Writes a module of user schedulers/controllers into tmp_path and makes it the working
    folder (where "module:Class" names are also looked up)."""

    def write(name: str, code: str) -> Path:
        p = tmp_path / f"{name}.py"
        p.write_text(textwrap.dedent(code))
        sys.modules.pop(name, None)
        return p

    monkeypatch.chdir(tmp_path)
    yield write


def test_exception_in_a_scheduler_surfaces_with_its_traceback(user_module):
    path = user_module("buggy_sched", """
        class Buggy:
            def __init__(self):
                self.n = 0
            def pick(self, ctx):
                self.n += 1
                if self.n == 50:
                    return {}["no such key"]
                return 0 if ctx.subflows[0].available() else None
    """)
    with pytest.raises(KeyError) as ei:
        mpsim.run(MPTCP / "rcvbuf_blocking.toml", overrides={"duration": "8s", "flow.mp.scheduler": "buggy_sched:Buggy"}, progress=False)
    frames = traceback.extract_tb(ei.value.__traceback__)
    assert frames[-1].filename == str(path) and "no such key" in frames[-1].line
    notes = " ".join(getattr(ei.value, "__notes__", []))
    assert "scheduler 'buggy_sched:Buggy', pick() at t=" in notes


def test_exception_in_a_controller_surfaces_with_its_traceback(user_module):
    path = user_module("buggy_cc", """
        class Buggy:
            def on_ack(self, w, ctx):
                if ctx.now > 1_000_000_000:
                    raise ZeroDivisionError("boom")
                return w
            def on_congestion(self, w, event, ctx):
                return w
    """)
    with pytest.raises(ZeroDivisionError) as ei:
        mpsim.run(MPTCP / "rcvbuf_blocking.toml", overrides={"duration": "8s", "flow.mp.cc": "buggy_cc:Buggy"}, progress=False)
    assert traceback.extract_tb(ei.value.__traceback__)[-1].filename == str(path)
    assert "congestion controller 'buggy_cc:Buggy', on_ack() at t=" in " ".join(ei.value.__notes__)


@pytest.mark.parametrize(
    "ret, expected",
    [("7", "returned 7: expected a subflow index from 0 to 1 or None"),
     ("-1", "returned -1: expected a subflow index from 0 to 1 or None"),
     ("True", "returned True: expected a subflow index"),
     ("'0'", "returned '0': expected a subflow index")],
)
def test_a_wrong_index_is_a_clear_error(ret, expected):
    class Wrong:
        def __init__(self):
            self.n = 0

        def pick(self, ctx):
            self.n += 1
            return eval(ret) if self.n > 10 else None if not ctx.subflows[0].available() else 0

    mpsim.register_scheduler("wrong", Wrong)
    with pytest.raises(mpsim.PluginError) as ei:
        mpsim.run(MPTCP / "rcvbuf_blocking.toml", overrides={"duration": "8s", "flow.mp.scheduler": "wrong"}, progress=False)
    msg = str(ei.value)
    assert msg.startswith("scheduler 'wrong', pick() at t=") and expected in msg, msg


def test_wrong_windows_are_clear_errors():
    class Shrinks:
        def on_ack(self, w, ctx):
            return mpsim.Window(0, w.ssthresh, w.mss)

        def on_congestion(self, w, event, ctx):
            return w

    class NotAWindow(Shrinks):
        def on_ack(self, w, ctx):
            return (w.cwnd, w.ssthresh)

    class Negative(Shrinks):
        def on_ack(self, w, ctx):
            w.cwnd = w.cwnd - 10**9
            return w

    for name, cls in [("shrinks", Shrinks), ("not_a_window", NotAWindow)]:
        mpsim.register_controller(name, cls)
        with pytest.raises(mpsim.PluginError) as ei:
            mpsim.run(MPTCP / "rcvbuf_blocking.toml", overrides={"duration": "8s", "flow.mp.cc": name}, progress=False)
        msg = str(ei.value)
        assert msg.startswith(f"congestion controller '{name}', on_ack() at t=") and "cwnd >= 1 MSS" in msg, msg
    mpsim.register_controller("negative", Negative)
    with pytest.raises(ValueError, match="Window.cwnd must be a whole number of bytes >= 0, got -") as ei:
        mpsim.run(MPTCP / "rcvbuf_blocking.toml", overrides={"duration": "8s", "flow.mp.cc": "negative"}, progress=False)
    assert "on_ack() at t=" in " ".join(ei.value.__notes__)


def test_an_error_stops_the_run_at_once():
    calls = []

    class Once:
        def pick(self, ctx):
            calls.append(ctx.now)
            raise RuntimeError("stop")

    mpsim.register_scheduler("once", Once)
    with pytest.raises(RuntimeError, match="stop"):
        mpsim.run(MPTCP / "rcvbuf_blocking.toml", overrides={"duration": "60s", "flow.mp.scheduler": "once"}, progress=False)
    assert len(calls) == 1  # no call into Python after the first error


# -------------------------------------------------------------------------------------
# names


def test_registration_by_name_and_decorator():
    @mpsim.register_scheduler("decorated_rr")
    class Rr:
        def __init__(self):
            self.next = 0

        def pick(self, ctx):
            from mpsim.examples.round_robin import RoundRobin

            return RoundRobin.pick(self, ctx)

    assert plugins.resolve("scheduler", "decorated_rr") is Rr
    assert plugins.resolve("scheduler", "round_robin") is None  # built-in
    with pytest.raises(ValueError, match="built-in"):
        mpsim.register_scheduler("lowest_rtt", Rr)
    with pytest.raises(TypeError, match="no pick"):
        mpsim.register_scheduler("nothing", object)
    with pytest.raises(TypeError, match="on_congestion"):
        mpsim.register_controller("half", type("Half", (), {"on_ack": lambda self, w, c: w}))
    a = mpsim.run(MPTCP / "rcvbuf_blocking.toml", overrides={"duration": "8s", "flow.mp.scheduler": "decorated_rr"}, progress=False)
    b = mpsim.run(MPTCP / "rcvbuf_blocking.toml", overrides={"duration": "8s", "flow.mp.scheduler": "round_robin"}, progress=False)
    assert summary(a) == summary(b)


def test_unresolvable_names_are_scenario_errors_naming_file_and_key(tmp_path):
    text = (MPTCP / "rcvbuf_blocking.toml").read_text()
    cases = [
        ('scheduler = "lowest_rtt"', 'scheduler = "no_such_module_xyz:Greedy"', "flow[0].scheduler", "cannot import module 'no_such_module_xyz'"),
        ('scheduler = "lowest_rtt"', 'scheduler = "mpsim.examples.round_robin:Nope"', "flow[0].scheduler", "has no 'Nope'"),
        ('scheduler = "lowest_rtt"', 'scheduler = "greedy"', "flow[0].scheduler", "unknown scheduler 'greedy'"),
        ('cc = "lia"', 'cc = "mpsim.examples.round_robin:RoundRobin"', "flow[0].cc", "has no on_ack(), on_congestion() method"),
        # a function is no class: it is refused before it is ever called
        ('cc = "lia"', 'cc = "os:getcwd"', "flow[0].cc", "'os:getcwd' is a built-in function, not a class"),
        ('cc = "lia"', 'cc = "math:sqrt"', "flow[0].cc", "not a class"),
        ('scheduler = "lowest_rtt"', 'scheduler = "os:system"', "flow[0].scheduler", "'os:system' is a built-in function, not a class"),
        ('scheduler = "lowest_rtt"', 'scheduler = "json:dumps"', "flow[0].scheduler", "'json:dumps' is a function, not a class"),
    ]
    for old, new, key, msg in cases:
        f = tmp_path / "bad.toml"
        f.write_text(text.replace(old, new))
        for call in (mpsim.check, mpsim.run):
            with pytest.raises(mpsim.ScenarioError) as ei:
                call(f)
            e = ei.value
            assert (e.origin, e.key) == (str(f), key) and msg in e.message, str(e)
    # from the command line: one line, exit status 2, no traceback
    r = subprocess.run([sys.executable, "-m", "mpsim", "check", str(f)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and key in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_module_beside_the_scenario_file_is_found_by_the_cli(tmp_path):
    (tmp_path / "near_scheds.py").write_text("from mpsim.examples.lowest_rtt import LowestRtt as Near\n")
    f = tmp_path / "s.toml"
    f.write_text((MPTCP / "rcvbuf_blocking.toml").read_text().replace('scheduler = "lowest_rtt"', 'scheduler = "near_scheds:Near"')
                 .replace('duration = "60s"', 'duration = "8s"'))
    r = subprocess.run([sys.executable, "-m", "mpsim", "run", str(f), "--out", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    s = s.get("summary", s)
    assert s["flows"][0]["scheduler"] == "near_scheds:Near"


def test_entry_points_of_installed_packages(tmp_path, monkeypatch):
    """A package declaring `[project.entry-points."mpsim.schedulers"] greedy = "pkg.mod:Greedy"`."""
    pkg = tmp_path / "greedy_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from mpsim.examples.lowest_rtt import LowestRtt as Greedy\n"
                                     "from mpsim.examples.reno import Reno as EpReno\n")
    dist = tmp_path / "greedy_pkg-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: greedy-pkg\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[mpsim.schedulers]\ngreedy = greedy_pkg:Greedy\n\n"
                                          "[mpsim.controllers]\nep_reno = greedy_pkg:EpReno\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "greedy" in plugins.registered("scheduler")
    o = {"duration": "8s"}
    py = mpsim.run(MPTCP / "rcvbuf_blocking.toml", overrides={**o, "flow.mp.scheduler": "greedy", "flow.mp.cc": "ep_reno"}, progress=False)
    rust = mpsim.run(MPTCP / "rcvbuf_blocking.toml", overrides={**o, "flow.mp.scheduler": "lowest_rtt_plain", "flow.mp.cc": "reno"},
                     progress=False)
    assert names(py) == ("greedy", "ep_reno")
    assert summary(py) == summary(rust)


def test_sweep_over_a_module_class_scheduler_in_local_processes(user_module):
    user_module("sweep_scheds", """
        from mpsim.examples.round_robin import RoundRobin

        class Rr(RoundRobin):
            pass
    """)
    grid = {"flow.mp.scheduler": ["sweep_scheds:Rr", "round_robin"]}
    df = mpsim.sweep(MPTCP / "rcvbuf_blocking.toml", grid, seeds=2, processes=2, progress=False, overrides={"duration": "8s"}).frame
    assert len(df) == 4 and df["error"].isna().all() if "error" in df else len(df) == 4
    col = "flow.mp.scheduler"
    by = df.set_index([col, "seed"])["goodput_bps"]
    for seed in (1, 2):
        assert by[("sweep_scheds:Rr", seed)] == by[("round_robin", seed)]


def test_the_core_refuses_a_python_name_it_was_not_given():
    """Calling the core directly with a "module:Class" name and no implementation must not run
    the default in its place."""
    from mpsim import _core
    from mpsim.scenario import load, to_json

    d, origin = load(MPTCP / "rcvbuf_blocking.toml")
    d["flow"][0]["scheduler"] = "mpsim.examples.round_robin:RoundRobin"
    with pytest.raises(_core.ScenarioError) as ei:
        _core.run(to_json(d, origin), origin)
    assert ei.value.args[1] == "flow[0].scheduler"


def test_readme_python_tutorial_runs(tmp_path):
    """The README's "Prototype a scheduler in Python": its files and commands, as written."""
    import os

    import wheel_check

    files, cmds = wheel_check.tutorial()
    assert set(files) == {"my_sched.py", "my_cc.py"} and len(cmds) >= 3
    venv = Path(sys.executable).parent.parent
    env = wheel_check.clean_env(venv)
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")  # as the tests run
    results = wheel_check.run_tutorial(tmp_path, env)
    for cmd, rc, _, tail in results:
        assert rc == 0, f"{cmd}\n{tail}"
    assert (tmp_path / "my_sched.png").exists() and (tmp_path / "my_cc.png").exists()
    assert "window_aware" in results[0][3] and "coupled_reno" in results[2][3]
    assert (tmp_path / "ws" / "summary.json").exists()


def test_an_erratic_python_scheduler_loses_no_data():
    """The core's rules hold whatever a user scheduler answers: random subflows (with or
    without window room), random copies and random answers to a blocked window still deliver
    every byte once, in order, within the receive buffer."""
    import random

    class Erratic:
        def __init__(self):
            self.rng = random.Random(7)

        def pick(self, ctx):
            ok = [i for i, s in enumerate(ctx.subflows) if s.usable]
            return self.rng.choice(ok + [None]) if ok else None

        def copies(self, ctx, chosen):
            return self.rng.randrange(1 << len(ctx.subflows))

        def on_window_blocked(self, ctx):
            ok = [i for i, s in enumerate(ctx.subflows) if s.usable] + [None]
            return self.rng.choice(ok), self.rng.choice(ok)

    mpsim.register_scheduler("erratic", Erratic)
    o = {"duration": "60s", "flow.mp.scheduler": "erratic", "flow.mp.app": {"kind": "bulk", "bytes": "1MB"},
         "link.slow.loss": "1%", "link.fast.loss": "0.5%"}
    f = mpsim.run(MPTCP / "rcvbuf_blocking.toml", overrides=o, progress=False).flows.iloc[0]
    assert f["complete"] and f["bytes_delivered"] == f["bytes_written"] == 1_000_000
    assert f["max_receive_buffer_bytes"] <= 64_000


def test_cli_reports_user_code_errors(user_module):
    user_module("cli_scheds", """
        class Bad:
            def pick(self, ctx):
                return 9

        class Buggy:
            def pick(self, ctx):
                return ctx.subflows[5]
    """)
    scen = str(MPTCP / "rcvbuf_blocking.toml")

    def mpsim_run(cls):
        return subprocess.run([sys.executable, "-m", "mpsim", "run", scen, "--set", f"flow.mp.scheduler=cli_scheds:{cls}"],
                              capture_output=True, text=True, timeout=120)

    r = mpsim_run("Bad")  # a wrong value: one line, exit status 2
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == ("error: scheduler 'cli_scheds:Bad', pick() at t=0ns returned 9: "
                                "expected a subflow index from 0 to 1 or None")
    r = mpsim_run("Buggy")  # an exception: the user's traceback
    assert r.returncode == 1 and "cli_scheds.py\", line 8, in pick" in r.stderr and "IndexError" in r.stderr
    assert "raised in scheduler 'cli_scheds:Buggy', pick() at t=0ns" in r.stderr


def test_a_python_controller_sees_every_delivery_with_the_receiver_timestamp_and_the_echo():
    seen = {"delivery": 0, "ack": 0, "echo": 0, "loss_echo": set(), "late": 0}

    class Probe:
        def on_ack(self, w, ctx):
            seen["ack"] += 1
            w.cwnd += ctx.bytes_acked if w.in_slow_start() else ctx.bytes_acked * w.mss // w.cwnd
            return w

        def on_delivery(self, ctx):
            seen["delivery"] += 1
            seen["echo"] += ctx.cw_echo
            # the receiver got the data before its ACK reached the sender (20 ms RTT)
            seen["late"] += not (isinstance(ctx.received_at, int) and 0 < ctx.received_at < ctx.now)

        def on_congestion(self, w, event, ctx):
            seen["loss_echo"].add(ctx.cw_echo)
            s = max(ctx.in_flight // 2, 2 * w.mss)
            return mpsim.Window(s, s, w.mss)

    mpsim.register_controller("delivery_probe", Probe)
    scenario = {
        "duration": "10s",
        "link": [{"name": "l", "rate": "10Mbps", "delay": "10ms", "queue": "30pkt", "congestion_warning": {"threshold": "5pkt"}}],
        "path": [{"name": "p", "links": ["l"]}],
        "flow": [{"name": "f", "path": "p", "cc": "delivery_probe"}],
    }
    res = mpsim.run(scenario, progress=False)
    assert res.summary["links"][0]["cw_marks"] > 0
    assert seen["delivery"] > seen["ack"] > 0 and seen["late"] == 0
    assert seen["echo"] > 0 and True in seen["loss_echo"]


# -------------------------------------------------------------------------------------
# receiver-side logic and the scheduler's ACK hooks in Python


def _two_fast_paths(**flow) -> dict:
    links = [{"name": n, "rate": "100Mbps", "delay": "20ms", "queue": "1000pkt"} for n in ("a", "b")]
    return {
        "name": "rx",
        "duration": "10s",
        "tcp": {"rcv_buf": "4MB"},
        "link": links,
        "path": [{"name": n, "links": [n]} for n in ("a", "b")],
        "flow": [{"name": "mp", "paths": ["a", "b"], **flow}],
    }


RECEIVER = """
    RATES = {0: 2e6, 1: 1e6}

    class FixedRate:
        '''Asks for a fixed rate per path in the feedback of every fourth packet of that path.'''
        def __init__(self):
            self.seen = {}
            self.due = set()
            self.windows = []

        def on_data(self, now, path, seq, length, dsn, echo):
            self.seen[path] = self.seen.get(path, 0) + 1
            if self.seen[path] % 4 == 1:
                self.due.add(path)
                return True
            return False

        def feedback(self, now, path):
            if path in self.due:
                self.due.discard(path)
                return RATES[path]
            return None

        def on_window(self, now, room):
            self.windows.append(room)

    class Recorder:
        '''Lowest index that has room; keeps every on_ack_info call.'''
        calls = []

        def pick(self, ctx):
            for i, s in enumerate(ctx.subflows):
                if s.available():
                    return i
            return None

        def on_ack_info(self, now, sub, window, feedback):
            Recorder.calls.append((now, sub, window, feedback))

    class Late:
        '''Sends nothing before 1 s; only wake_at() brings the connection back to it.'''
        START = 1_000_000_000

        def pick(self, ctx):
            if ctx.now < self.START:
                return None
            for i, s in enumerate(ctx.subflows):
                if s.available():
                    return i
            return None

        def wake_at(self):
            return self.START
"""


def test_python_receiver_logic_drives_the_paced_mptcp_rec_sender(user_module):
    user_module("rx_logic", RECEIVER)
    res = mpsim.run(_two_fast_paths(scheduler="mptcp_rec", receiver="rx_logic:FixedRate"), progress=False)
    f = json.loads(res.to_json())
    f = f.get("summary", f)["flows"][0]
    # each path carries the payload rate the Python receiver asked for
    got = [s["goodput_bps"] for s in f["subflows"]]
    assert abs(got[0] / 2e6 - 1) < 0.05 and abs(got[1] / 1e6 - 1) < 0.05, got
    # without the receiver logic MPTCP-rec's own estimate runs and the rates differ
    own = json.loads(mpsim.run(_two_fast_paths(scheduler="mptcp_rec"), progress=False).to_json())
    own = own.get("summary", own)["flows"][0]
    assert abs(own["subflows"][1]["goodput_bps"] / 1e6 - 1) > 0.2


def test_python_scheduler_sees_the_receivers_feedback(user_module):
    mod = user_module("rx_logic", RECEIVER)
    assert mod.exists()
    mpsim.run(_two_fast_paths(scheduler="rx_logic:Recorder", receiver="rx_logic:FixedRate"), progress=False)
    import rx_logic

    calls = rx_logic.Recorder.calls
    fb = [c[3] for c in calls if c[3] is not None]
    assert calls and all(c[2] > 0 for c in calls), "every ACK advertises the window"
    assert {(p, r) for _, p, r in fb} == {(0, 2e6), (1, 1e6)}
    stamps = [s for s, _, _ in fb]
    assert stamps == sorted(stamps) and all(s <= c[0] for c, s in zip([c for c in calls if c[3]], stamps))


def test_python_scheduler_wake_at_brings_the_connection_back(user_module):
    user_module("rx_logic", RECEIVER)
    res = mpsim.run(_two_fast_paths(scheduler="rx_logic:Late"), progress=False)
    assert res.flows.iloc[0]["goodput_bps"] > 1e6


@pytest.mark.parametrize(
    "flow, key, fragment",
    [
        ({"scheduler": "mptcp_rec", "receiver": "fixed"}, "flow[0].receiver", "unknown receiver logic 'fixed'"),
        ({"scheduler": "mptcp_rec", "receiver": "rx_logic:Nope"}, "flow[0].receiver", "has no 'Nope'"),
        ({"scheduler": "mptcp_rec", "receiver": "rx_logic:Recorder"}, "flow[0].receiver", "no on_data(), feedback() method"),
    ],
)
def test_bad_receiver_names_are_scenario_errors(user_module, flow, key, fragment):
    user_module("rx_logic", RECEIVER)
    with pytest.raises(mpsim.ScenarioError) as ei:
        mpsim.run(_two_fast_paths(**flow), progress=False)
    assert ei.value.key == key and fragment in str(ei.value), str(ei.value)


def test_a_bad_feedback_value_is_a_plugin_error(user_module):
    user_module("bad_rx", """
        class Bad:
            def on_data(self, now, path, seq, length, dsn, echo):
                return True
            def feedback(self, now, path):
                return "fast"
    """)
    with pytest.raises(mpsim.PluginError) as ei:
        mpsim.run(_two_fast_paths(scheduler="mptcp_rec", receiver="bad_rx:Bad"), progress=False)
    assert "receiver logic 'bad_rx:Bad', feedback()" in str(ei.value) and "'fast'" in str(ei.value)


def test_receiver_logic_only_on_multipath_flows():
    d = _two_fast_paths()
    d["flow"] = [{"name": "tcp", "path": "a", "receiver": "m:C"}]
    with pytest.raises(mpsim.ScenarioError) as ei:
        mpsim.run(d, progress=False)
    assert ei.value.key == "flow[0].receiver"
