"""Packet captures read by tshark: no malformed packets, valid checksums, one MPTCP
connection with two subflows, and the bytes and retransmissions mpsim reports.

tshark is installed with apt-get when missing (as root). In CI (CI=true) a missing tshark
fails the test; elsewhere the test is skipped.
"""

from __future__ import annotations

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

SCTP = HEAD.format(name="sctp").replace("duration = \"2s\"", "duration = \"4s\"") + LINKS.format(loss="1%").replace(
    'name = "l2"', 'name = "l2"\ndown = [{ at = "1s", until = "2s" }]') + """
[[flow]]
name = "assoc"
paths = ["p1", "p2"]
transport = "sctp"
cmt = true
sctp = { timestamps = true, cmt_pf = true, rto_min = "200ms", rto_initial = "1s" }
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
    cmd = [tshark, "-r", str(path), "-n", "-o", "tcp.check_checksum:TRUE", "-o", "sctp.checksum:CRC-32C",
           "-o", "sctp.relative_tsns:FALSE", "-o", "ip.check_checksum:TRUE",
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


def test_two_path_sctp_cmt_capture(tshark, tmp_path):
    """DATA, SACK, HEARTBEAT/ACK and the timestamp chunks of a CMT association with losses
    and an outage (CMT-PF heartbeats), every CRC32c verified, counts equal to the summary's."""
    res, path = capture(tmp_path, SCTP)
    check_clean(tshark, path, "sctp")
    f = res.summary["flows"][0]
    sc = f["sctp"]
    # one address pair per destination, SCTP ports and verification tags
    pairs = {tuple(r) for r in fields(tshark, path, "sctp", "ip.src", "ip.dst", "sctp.srcport", "sctp.dstport")}
    assert pairs == {("10.0.0.1", "10.0.0.2", "49152", "5001"), ("10.0.0.2", "10.0.0.1", "5001", "49152"),
                     ("10.0.0.3", "10.0.0.4", "49152", "5001"), ("10.0.0.4", "10.0.0.3", "5001", "49152")}
    assert len({r[0] for r in fields(tshark, path, "sctp.data_tsn_raw", "sctp.verification_tag")}) == 1
    # DATA: one chunk per packet, stream 0, SSN from the TSN; the retransmissions repeat TSNs
    data = fields(tshark, path, "sctp.chunk_type == 0", "sctp.data_tsn_raw", "sctp.data_sid", "sctp.data_ssn",
                  "sctp.chunk_length", "ip.src")
    assert len(data) == f["segments_sent"] > 100
    assert f["retransmits"] > 0
    tsns = [int(r[0]) for r in data]
    assert len(tsns) - len(set(tsns)) == f["retransmits"]
    assert max(tsns) - min(tsns) + 1 == len(set(tsns))
    assert {int(r[1], 0) for r in data} == {0}
    assert all(int(r[2], 0) == (t - min(tsns)) % 65536 for r, t in zip(data, tsns))
    sent = sum(int(r[3].split(",")[-1]) - 16 for r in data)
    assert sent == sum(s["bytes_sent"] for s in f["subflows"])
    for k, s in enumerate(f["subflows"]):
        assert sum(1 for r in data if r[4] == f"10.0.0.{2 * k + 1}") == s["segments_sent"]
    # every DATA packet carries the timestamp chunk (type 0xBF) first
    assert count(tshark, path, "sctp.chunk_type == 191") == len(data)
    # SACKs as they reach the sender, with their gap blocks, duplicate TSNs and echoes
    sacks = fields(tshark, path, "sctp.chunk_type == 3", "sctp.sack_number_of_gap_blocks",
                   "sctp.sack_number_of_duplicated_tsns", "sctp.sack_cumulative_tsn_ack_raw")
    assert len(sacks) == sc["sacks_received"]
    # the sender skips a SACK whose cumulative TSN ack is below one it has seen (RFC 4960
    # §6.2.1 D i; common under CMT, where SACKs come back on both paths): its blocks are not
    # counted in the summary
    gaps = dups = top = 0
    for g, d, cum in sacks:
        if int(cum) >= top:
            top = int(cum)
            gaps += int(g)
            dups += int(d)
    assert gaps > 0 and gaps == sc["gap_blocks_received"]
    assert dups == sc["dup_tsns_reported"]
    assert int(sacks[-1][2]) <= max(tsns)
    assert count(tshark, path, "sctp.chunk_type == 190") == len(sacks)
    # CMT-PF probes the destination behind the outage and the answer comes back
    hb = count(tshark, path, "sctp.chunk_type == 4")
    assert hb == sc["heartbeats"] > 0
    assert 0 < count(tshark, path, "sctp.chunk_type == 5") <= hb
    res2 = mpsim.run(SCTP, pcap=tmp_path / "again", progress=False)
    assert res2.pcap_files[0].read_bytes() == path.read_bytes()
