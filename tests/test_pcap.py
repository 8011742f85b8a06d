"""Packet captures read by tshark: no malformed packets, valid checksums, one MPTCP
connection with two subflows, and the bytes and retransmissions mpsim reports.

tshark is installed with apt-get when missing (as root). In CI (CI=true) a missing tshark
fails the test; elsewhere the test is skipped.
"""

from __future__ import annotations

import collections
import os
import shutil
import subprocess

import pytest

import mpsim

LINKS = """
[[link]]
name = "l1"
rate = "10Mbps"
delay = "10ms"
queue = "50pkt"
loss = "{loss}"

[[link]]
name = "l2"
rate = "5Mbps"
delay = "30ms"
queue = "50pkt"
loss = "{loss}"

[[path]]
name = "p1"
links = ["l1"]

[[path]]
name = "p2"
links = ["l2"]
"""

HEAD = """
name = "{name}"
duration = "2s"
seed = 5

[metrics]
interval = false
pcap_payload = true
"""

TCP = HEAD.format(name="tcp") + LINKS.format(loss="1%") + """
[[flow]]
name = "tcp"
path = "p1"
"""

MPTCP = HEAD.format(name="mptcp") + LINKS.format(loss="1%") + """
[[flow]]
name = "mptcp"
paths = ["p1", "p2"]
cc = "lia"
"""

UDP = HEAD.format(name="udp") + LINKS.format(loss="0%") + """
[[flow]]
name = "udp"
path = "p1"
transport = "udp"
app = { kind = "cbr", rate = "2Mbps", packet = "1000B" }
"""


def _tshark() -> str:
    found = shutil.which("tshark")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], env=env, check=False, capture_output=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "tshark"], env=env, check=False, capture_output=True)
        found = shutil.which("tshark")
        if found:
            return found
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("tshark is not installed and could not be installed with apt-get")
    pytest.skip("tshark is not available")


@pytest.fixture(scope="module")
def tshark() -> str:
    return _tshark()


def fields(tshark: str, path, filt: str, *names: str) -> list[list[str]]:
    cmd = [tshark, "-r", str(path), "-n", "-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE",
           "-o", "udp.check_checksum:TRUE", "-o", "mptcp.analyze_mptcp:TRUE", "-o", "mptcp.analyze_mappings:TRUE",
           "-o", "tcp.relative_sequence_numbers:FALSE",
           "-Y", filt, "-T", "fields", "-E", "separator=\t"]
    for n in names:
        cmd += ["-e", n]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines()]


def count(tshark: str, path, filt: str) -> int:
    return len(fields(tshark, path, filt, "frame.number"))


def capture(tmp_path, text: str):
    res = mpsim.run(text, pcap=tmp_path, progress=False)
    assert len(res.pcap_files) == 1
    return res, res.pcap_files[0]


def check_clean(tshark: str, path, proto: str) -> None:
    total = count(tshark, path, "frame")
    assert total > 100
    assert count(tshark, path, "_ws.malformed || _ws.expert.severity == error") == 0
    assert count(tshark, path, f"ip.checksum.status == 0 || {proto}.checksum.status == 0") == 0
    # every checksum was verified (the payload is stored) and found good
    assert count(tshark, path, f"ip.checksum.status == 1 && {proto}.checksum.status == 1") == total


def data_counts(tshark: str, path) -> tuple[int, int, int, int]:
    """(data segments, payload bytes, segments whose (stream, seq) was seen before,
    segments tshark flags as retransmissions) of the sender's data.

    tshark calls a retransmission "out-of-order" when it follows the highest segment sent
    by less than its reordering threshold (3 ms, or the handshake's round trip): a capture at
    the sender never shows new data out of order, so such a flag marks a retransmission too.
    """
    rows = fields(tshark, path, "tcp.len > 0", "tcp.stream", "tcp.seq", "tcp.len", "tcp.analysis.retransmission",
                  "tcp.analysis.fast_retransmission", "tcp.analysis.spurious_retransmission",
                  "tcp.analysis.out_of_order")
    seen: set[tuple[str, str]] = set()
    dup = flagged = nbytes = 0
    for stream, seq, ln, retx, fast, spurious, ooo in rows:
        nbytes += int(ln)
        if (stream, seq) in seen:
            dup += 1
        seen.add((stream, seq))
        flagged += bool(retx or fast or spurious or ooo)
    return len(rows), nbytes, dup, flagged


def test_plain_tcp_capture_matches_the_summary(tshark, tmp_path):
    res, path = capture(tmp_path, TCP)
    check_clean(tshark, path, "tcp")
    f = res.summary["flows"][0]
    segs, nbytes, dup, flagged = data_counts(tshark, path)
    assert f["retransmits"] > 0
    assert segs == f["segments_sent"]
    assert nbytes == sum(s["bytes_sent"] for s in f["subflows"])
    assert dup == f["retransmits"]
    assert flagged == f["retransmits"]
    # the handshake announces SACK and window scaling, and ACKs carry SACK blocks
    assert count(tshark, path, "tcp.flags.syn == 1 && tcp.options.sack_perm && tcp.options.wscale.shift") == 2
    assert count(tshark, path, "tcp.options.sack.count > 0") > 0


def test_two_path_mptcp_capture(tshark, tmp_path):
    res, path = capture(tmp_path, MPTCP)
    check_clean(tshark, path, "tcp")
    f = res.summary["flows"][0]
    rows = fields(tshark, path, "mptcp.stream", "mptcp.stream", "tcp.stream")
    assert {r[0] for r in rows} == {"0"}
    assert {r[1] for r in rows} == {"0", "1"}
    # every packet is associated with the connection but the first SYN: an MP_CAPABLE SYN of
    # version 1 carries no key, so a one-pass reader cannot tie it to the connection yet
    assert fields(tshark, path, "tcp && !mptcp.stream", "tcp.stream", "tcp.flags.syn", "tcp.flags.ack") == [["0", "1", "0"]]
    assert count(tshark, path, "tcp.options.mptcp.rawdataseqno") > 0 and count(tshark, path, "tcp.options.mptcp.rawdataack") > 0
    # every data segment is mapped: tshark derives the initial data sequence number from the
    # key, so the first mapping of the connection starts at relative DSN 1
    dsn = fields(tshark, path, "tcp.len > 0", "mptcp.dsn")
    assert all(r[0] for r in dsn) and dsn[0][0] == "1"
    segs, nbytes, dup, flagged = data_counts(tshark, path)
    assert f["retransmits"] > 0
    assert segs == f["segments_sent"]
    assert nbytes == sum(s["bytes_sent"] for s in f["subflows"])
    assert dup == f["retransmits"]
    assert flagged == f["retransmits"]
    # the capture is deterministic
    res2 = mpsim.run(MPTCP, pcap=tmp_path / "again", progress=False)
    assert res2.pcap_files[0].read_bytes() == path.read_bytes()


def test_udp_capture(tshark, tmp_path):
    res, path = capture(tmp_path, UDP)
    check_clean(tshark, path, "udp")
    f = res.summary["flows"][0]
    rows = fields(tshark, path, "udp", "udp.length")
    assert len(rows) == f["datagrams_sent"]
    # a datagram flow sends what it is given at once
    assert sum(int(r[0]) - 8 for r in rows) == f["bytes_written"]


def test_capture_limit_warns(tmp_path):
    text = MPTCP.replace("pcap_payload = true", "pcap_payload = false\npcap_limit = \"64KB\"")
    with pytest.warns(mpsim.api.CaptureLimitWarning, match="pcap_limit"):
        res = mpsim.run(text, pcap=tmp_path, progress=False)
    assert res.pcap_files[0].stat().st_size <= 64_000


def test_cli_writes_the_readme_capture(tshark, tmp_path):
    """The README's example: two subflows between distinct address pairs."""
    import sys

    r = subprocess.run([sys.executable, "-m", "mpsim", "run", "scenarios/mptcp/disjoint_paths.toml", "--duration", "40s",
                        "--pcap", str(tmp_path), "-q"], capture_output=True, text=True,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert r.returncode == 0, r.stderr
    rows = fields(tshark, tmp_path / "mptcp.pcap", "tcp.flags.syn == 1 && tcp.flags.ack == 0", "ip.src", "ip.dst")
    assert rows == [["10.0.0.1", "10.0.0.2"], ["10.0.0.3", "10.0.0.4"]]
