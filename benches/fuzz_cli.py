"""Mutation fuzzing of the command line: mutated scenario files through `mpsim check`,
`mpsim run` and `mpsim sweep`, each outcome classified, with a Markdown report.

The seeds are the shipped scenarios (scenarios/**/*.toml, python/mpsim/examples/*.toml,
benches/scenarios/**/*.toml). From them, with a fixed random seed, the harness makes --files
mutated files: textual mutations (lines deleted, duplicated or swapped, characters flipped,
truncation, junk and non-UTF-8 bytes, long strings, control characters, bad names, extreme
numbers, wrong units, duplicate, unknown and moved keys, plug-in names such as "os:system")
and structured ones (the file parsed with tomllib, a leaf changed to another type or an
extreme value, a required key removed, written back with a small TOML writer).

Each file runs in a fresh case folder of its own:

    CASE/scen/FILE.toml       the scenario
    CASE/cwd/                 the (empty) working folder of the process
    CASE/tmp/, CASE/home/     its TMPDIR and HOME
    CASE/systmp/              its /tmp: bind-mounted over /tmp in a mount namespace of the
                              process's own (as root, with unshare; else /tmp is listed before
                              and after, where other processes may show)
    CASE/res/out, CASE/res/cap, CASE/res/sweep   OUTDIR, CAPDIR and SWEEPDIR

as `mpsim check FILE`, then `mpsim run FILE --quiet --out OUTDIR --pcap CAPDIR`, under a
wall-time limit (--timeout), an address-space cap (RLIMIT_AS, --memory, 4 GiB) and
MPSIM_EVENT_LIMIT=3e8 (runs estimated beyond about a minute are refused). Some files
(--sweeps) also go through `mpsim sweep FILE --seeds 2 --out SWEEPDIR --run-timeout 10s`.

Outcome classes, per command (the most severe wins):

    written outside  a file created or changed anywhere but OUTDIR/CAPDIR/SWEEPDIR: in the
                     case folder (scenario folder, working folder, TMPDIR, HOME, /tmp, the
                     parent of OUTDIR) or the harness's folder
    panic            "panicked at" in the output (a Rust panic)
    traceback        "Traceback" in the output
    memory           killed at the memory cap (MemoryError, a failed allocation, SIGKILL)
    crash            killed by another signal
    stall            still running at the timeout
    unclean          any other exit status, or a status of 1 or 2 whose stderr is not one
                     line starting "error:" (lines starting "warning:" aside)
    clean error      exit status 1 or 2 with one line "error: ..." on stderr (for a sweep
                     also exit status 1 with its one line "N runs failed (see ...)")
    ran              exit status 0

Every case that is not clean (not "ran" or "clean error") is confirmed by running it again
and kept, with its outputs, under --keep. Usage:

    python benches/fuzz_cli.py [--seed 1] [--files 3000] [--sweeps 200] [--timeout 20]
                               [--jobs 1] [--keep DIR] [--out benches/results/fuzz_cli.md]
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import copy
import datetime as _dt
import json
import math
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

SEED_GLOBS = ("scenarios/**/*.toml", "python/mpsim/examples/*.toml", "benches/scenarios/**/*.toml")

CLEAN = ("ran", "clean error")
#: most severe first
SEVERITY = ("written outside", "panic", "traceback", "memory", "crash", "stall", "unclean", "clean error", "ran")

# ----------------------------------------------------------------------------------------
# Mutation vocabulary

#: plug-in names for cc, scheduler and receiver: functions, classes without the protocol,
#: missing modules, malformed names and a few real plug-ins
PLUGINS = [
    "os:system", "os:getcwd", "math:sqrt", "builtins:eval", "builtins:exec", "subprocess:Popen",
    "builtins:object", "builtins:dict", "collections:OrderedDict", "os.path:join", "os:path.join",
    "pathlib:Path", "fractions:Fraction", "no_such_module_xyz:Thing", "os:no_such_attr", ":", "os:",
    ":system", "os::system", " os : system ", "os:system:extra", "mpsim.examples.reno:Reno",
    "mpsim.examples.round_robin:RoundRobin", "mpsim.examples.redundant:Redundant",
    "mpsim.examples.lowest_rtt:LowestRtt", "mpsim.examples.reno:Reno.on_ack", "mpsim:run",
    "mpsim.plugins:resolve", "..:x", "/etc/passwd:x", "a/b:C", "mpsim._core:run", "reno", "lia",
    "round_robin", "mptcp_rec", "receiver_rate", "RENO", "", "fuzz_case:Cls",
]

#: names that must never become file names
BAD_NAMES = [
    "a/b", "../escape", "../../../../../../../../tmp/mpsim-fuzz-abs/escape", "..", ".", "./x",
    ".hidden", "x\\y", "..\\..\\escape", "/tmp/mpsim-fuzz-abs/abs", "/", "//", "~/mpsim-fuzz-home",
    "~", "a\nb", "a\rb", "a\tb", "a\x00b", "a\x1bb", "\x7f", "a\u202eb", "\u2028", "name with spaces",
    "x" * 101, "x" * 5000, "", " ", "CON", "nul", "flow.pcap", "*", "?", "a:b", "é", "名前", "😀" * 30,
    "%s%n", "${HOME}", "$(id)", "`id`", "a;b", "-rf", "--out", "\ufeffbom",
]

EXTREME_NUMBERS = [
    0, -1, 1, -0.0, 2**31, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**63), -(2**63) - 1, 10**30,
    -(10**30), 1e308, -1e308, 1e-308, 5e-324, float("nan"), float("inf"), float("-inf"), 0.5, 1e30, -1e-30,
]

EXTREME_NUMBER_TEXT = [
    "0", "-1", "1e30", "-1e30", "1e308", "1e309", "-1e309", "nan", "-nan", "+nan", "inf", "-inf", "+inf",
    "9223372036854775807", "9223372036854775808", "-9223372036854775809", "18446744073709551616",
    "99999999999999999999999999999999999999", "0.0", "-0.0", "1e-30", "5e-324", "0x7fffffff", "0o777",
    "0b1010", "1_000_000", "1__0", "00012", "+5", ".5", "5.", "1e", "--1", "1.2.3", "١٢", "½",
]

UNITS = [
    "Gbps", "Tbps", "Pbps", "Ebps", "bps", "kbps", "Mbps", "Kbps", "mbps", "MBPS", "Mbit/s", "MB/s", "ns",
    "us", "µs", "ps", "fs", "ms", "s", "min", "h", "d", "y", "B", "KB", "MB", "GB", "TB", "PB", "EB",
    "KiB", "GiB", "pkt", "pkts", "packets", "%", "%%", "percent", "", " ", " Mbps", "bogus", "s s", "e5",
    "Mbps/s", "\u00a0ms",
]

UNIT_VALUES = [
    "1e30Gbps", "-5ms", "1ns", "0s", "0bps", "-1Mbps", "1e-30s", "nanms", "infGbps", "-infs", "1e400s",
    "1000001s", "1.1Tbps", "1e15B", "1e16B", "2PB", "10000001pkt", "0pkt", "-1pkt", "1e7pkt", "101%",
    "-1%", "100%", "1e-300%", "0.0000001ns", "1ps", "18446744073709551616B", "9223372036854775808ns",
    "1 s", " 1s", "1s ", "1S", "1Ms", "1mS", "1e3e3s", "1..0s", "1,5s", "1_000ms", "0x10ms", "10",
    "NaN", "Infinity", "", "s", "Mbps", "1e-9s", "1e6s", "999999.999999s", "3600s", "1e12bps",
]

UNKNOWN_KEYS = ["bogus", "rte", "Rate", "delay_ms", "__class__", "__proto__", "0", "", " ", "a.b", "link", "flow",
                "duration", "path", "name", "paths", "queue", "x" * 300]

REQUIRED = [("duration",), ("link", "*", "rate"), ("link", "*", "name"), ("path", "*", "links"),
            ("path", "*", "name"), ("flow", "*", "path"), ("flow", "*", "paths"), ("link",), ("path",), ("flow",)]

TRACE_PATHS = ["/dev/zero", "/dev/stdin", "/dev/null", "/dev/urandom", "/proc/self/mem", "/etc/passwd", ".", "/",
               "../../../../../../../etc/hostname", "no_such.trace", "FILE.toml", "\x00", "a\nb", "~/x.trace",
               "/tmp/mpsim-fuzz-abs/x.trace", "\\\\server\\share\\x"]

#: snippets from the README, to reach keys the seeds do not use
SNIPPETS = [
    '[[background]]\nname = "bg"\npath = "{path}"\nload = "80%"\ntcp_flows = 4\nudp_flows = 1\n',
    '[[flow]]\nname = "media"\npath = "{path}"\napp = {{ kind = "media", fps = 25, gop = "IBBPBBPBBPBB", '
    'classes = {{ I = {{ size = "60KB", priority = 1 }}, B = {{ size = "5KB", priority = 3 }}, '
    'P = {{ size = "20KB", priority = 2 }} }}, deadline = "1s", backlog = "256KB" }}\n',
    '[[flow]]\nname = "tr"\npath = "{path}"\napp = {{ kind = "media", fps = 30, trace = "{trace}" }}\n',
    '[[flow]]\nname = "cbr"\npath = "{path}"\ntransport = "udp"\napp = {{ kind = "cbr", rate = "2Mbps", packet = "1200B" }}\n',
    '[[flow]]\nname = "vbr"\npath = "{path}"\napp = {{ kind = "vbr", rate = "5Mbps", sizes = "cmtqa", '
    'vary = {{ min = "0%", max = "200%", period = "5s" }} }}\n',
    '[[flow]]\nname = "oo"\npath = "{path}"\napp = {{ kind = "onoff", rate = "1Mbps", packet = "1000B", on = "1s", off = "1s" }}\n',
    '[[flow]]\nname = "sctp"\npaths = ["{path}"]\ntransport = "sctp"\ncmt = true\ncc = "jsctp"\n'
    'sctp = {{ path_max_retrans = 5, rto_min = "1s", rto_max = "60s" }}\n',
    '[[link]]\nname = "ge"\nrate = "10Mbps"\ndelay = "5ms"\nloss = {{ model = "gilbert", mean = "1%", burst = 4 }}\n'
    'down = [{{ at = "1s", until = "2s" }}]\ncongestion_warning = {{ threshold = "10pkt", weight = 0.02 }}\n',
    '[[link]]\nname = "scr"\nrate = "10Mbps"\nloss = {{ model = "scripted", drops = [3, 17, -1, 18446744073709551615] }}\n',
]

JUNK_BYTES = [b"\x00", b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xef\xbb\xbf",
              b"\x1b[2J", b"\r", b"\r\n", b"\x0c", b"\x7f", b"\xe2\x80\xae", b"[", b"]]", b"{", b"\"", b"'''", b"=",
              b"#", b"\\", b"\\u0000", b"\\U0010FFFF", b"\\ud800"]


# ----------------------------------------------------------------------------------------
# A small TOML writer


_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: Any) -> str:
    k = str(k)
    return k if _BARE.match(k) else _string(k)


_ESCAPE = re.compile(r'[\x00-\x1f\x7f"\\\ud800-\udfff]')
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t"}


def _escape(m: re.Match) -> str:
    ch = m.group()
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if 0xD800 <= ord(ch) <= 0xDFFF:
        return "\\uFFFD"
    return f"\\u{ord(ch):04X}"


def _string(s: str) -> str:
    return '"' + _ESCAPE.sub(_escape, s) + '"'


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        r = repr(v)
        return r if any(c in r for c in ".en") else r + ".0"
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, (_dt.datetime, _dt.date, _dt.time)):
        return v.isoformat()
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }" if v else "{}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return _string(str(v))


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def to_toml(d: dict[str, Any]) -> str:
    """TOML text for a dict: top-level values, then [tables] (their own tables inline), then
    [[arrays of tables]]."""
    lines: list[str] = []
    tables, arrays = [], []
    for k, v in d.items():
        if isinstance(v, dict):
            tables.append((k, v))
        elif _is_table_array(v):
            arrays.append((k, v))
        else:
            lines.append(f"{_key(k)} = {_value(v)}")
    for k, v in tables:
        lines += ["", f"[{_key(k)}]"] + [f"{_key(a)} = {_value(b)}" for a, b in v.items()]
    for k, v in arrays:
        for el in v:
            lines += ["", f"[[{_key(k)}]]"] + [f"{_key(a)} = {_value(b)}" for a, b in el.items()]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------
# Mutators


def _lines(b: bytes) -> list[bytes]:
    return b.split(b"\n")


_ASSIGN = re.compile(rb"^\s*([A-Za-z0-9_\"'.-]+)\s*=\s*(.*)$")
_STRING = re.compile(rb'"([^"\\\n]*)"')
_NUMBER = re.compile(rb"(?<![A-Za-z0-9_.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_QUANTITY = re.compile(rb'"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*([A-Za-z%/]*)"')
_HEADER = re.compile(rb"^\s*\[\[?[^\]]*\]\]?\s*$")


def _value_numbers(b: bytes) -> list[tuple[int, int, bytes]]:
    """(start, end, text) of the numbers in the values of `key = value` lines."""
    out = []
    for line in re.finditer(rb"^[^=\n]*=([^\n]*)$", b, re.M):
        base = line.start(1)
        out += [(base + x.start(), base + x.end(), x.group()) for x in _NUMBER.finditer(line.group(1))]
    return out


def _text_value(rng: random.Random) -> bytes:
    """A TOML value (as text), often of an unexpected kind."""
    c = rng.randrange(9)
    if c == 0:
        return rng.choice(EXTREME_NUMBER_TEXT).encode()
    if c == 1:
        return _string(rng.choice(UNIT_VALUES)).encode()
    if c == 2:
        return _string(rng.choice(BAD_NAMES)).encode("utf-8", "surrogatepass")
    if c == 3:
        return rng.choice([b"true", b"false", b"[]", b"{}", b"[[]]", b"[1, \"a\"]", b"{ a = 1 }", b"1979-05-27T07:32:00Z",
                           b"07:32:00", b"1979-05-27"])
    if c == 4:
        return _string(rng.choice(PLUGINS)).encode()
    if c == 5:
        return rng.choice(UNIT_VALUES).encode()  # unquoted: often not TOML
    if c == 6:
        return b"'" + rng.choice(UNIT_VALUES).encode() + b"'"
    if c == 7:
        return b'"""' + rng.choice(BAD_NAMES).encode("utf-8", "surrogatepass").replace(b'"', b"") + b'"""'
    return str(rng.choice(EXTREME_NUMBERS)).encode()


def t_delete_line(rng, b):
    ls = _lines(b)
    if len(ls) > 1:
        del ls[rng.randrange(len(ls))]
    return b"\n".join(ls), "delete a line"


def t_duplicate_line(rng, b):
    ls = _lines(b)
    i = rng.randrange(len(ls))
    ls.insert(i, ls[i])
    return b"\n".join(ls), "duplicate a line (duplicate key or table)"


def t_swap_lines(rng, b):
    ls = _lines(b)
    i, j = rng.randrange(len(ls)), rng.randrange(len(ls))
    ls[i], ls[j] = ls[j], ls[i]
    return b"\n".join(ls), "swap two lines"


def t_flip_chars(rng, b):
    a = bytearray(b)
    n = rng.randint(1, 6)
    for _ in range(n):
        if a:
            i = rng.randrange(len(a))
            a[i] = rng.choice([a[i] ^ (1 << rng.randrange(8)), rng.randrange(256), rng.choice(b"[]{}=\"'.,#\\\n0-9eE")])
    return bytes(a), f"flip {n} characters"


def t_truncate(rng, b):
    return b[: rng.randrange(len(b) + 1)], "truncate"


def t_junk_bytes(rng, b):
    i = rng.randrange(len(b) + 1)
    junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64))) if rng.random() < 0.5 else rng.choice(JUNK_BYTES)
    return b[:i] + junk + b[i:], "insert junk bytes"


def t_non_utf8(rng, b):
    c = rng.randrange(4)
    if c == 0:
        return b.decode("utf-8", "replace").encode("utf-16"), "encode as UTF-16"
    if c == 1:
        return b.decode("utf-8", "replace").encode("latin-1", "replace") + b"\n# caf\xe9\n", "latin-1 bytes"
    seq = rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80", b"\xc0\xaf"])
    m = list(_STRING.finditer(b))
    if m and c == 2:
        s = rng.choice(m)
        return b[: s.start(1)] + seq + b[s.start(1):], "non-UTF-8 bytes inside a string"
    i = rng.randrange(len(b) + 1)
    return b[:i] + seq + b[i:], "non-UTF-8 bytes"


def t_long_string(rng, b):
    n = rng.choice([200, 5_000, 100_000, 1_000_000])
    m = list(_STRING.finditer(b))
    s = rng.choice(m) if m else None
    fill = rng.choice([b"x", b"/", b"..", b"\\\\", b"\\n", b"9", "é".encode()]) * n
    if s is None:
        return b + b'\nname = "' + fill + b'"\n', f"very long string ({n})"
    return b[: s.start(1)] + fill + b[s.end(1):], f"very long string ({n})"


def _replace_name(rng, b, new: bytes, what: str):
    m = [x for x in re.finditer(rb'^(\s*name\s*=\s*)"([^"\n]*)"', b, re.M)]
    if not m:
        return b"name = " + new + b"\n" + b, what
    s = rng.choice(m)
    return b[: s.start(2) - 1] + new + b[s.end(2) + 1:], what


def t_control_in_name(rng, b):
    raw = rng.random() < 0.5
    ch = rng.choice(["\n", "\r", "\t", "\x00", "\x01", "\x1b", "\x7f", "\u0085", "\u2028"])
    if raw:
        new = b'"a' + ch.encode() + b'b"'
    else:
        new = _string("a" + ch + "b").encode()
    return _replace_name(rng, b, new, f"control character {ch!r} in a name ({'raw' if raw else 'escaped'})")


def t_path_name(rng, b):
    name = rng.choice(BAD_NAMES)
    return _replace_name(rng, b, _string(name).encode("utf-8"), f"name {name[:40]!r}")


def t_number_extreme(rng, b):
    m = _value_numbers(b)
    if not m:
        return b, "no number"
    s, e, _ = rng.choice(m)
    new = rng.choice(EXTREME_NUMBER_TEXT).encode()
    return b[:s] + new + b[e:], f"number -> {new.decode()}"


def t_unit(rng, b):
    m = list(_QUANTITY.finditer(b))
    if not m:
        return b, "no quantity"
    s = rng.choice(m)
    if rng.random() < 0.5:
        new = _string(rng.choice(UNIT_VALUES)).encode()
    else:
        new = b'"' + s.group(1) + rng.choice(UNITS).encode() + b'"'
    return b[: s.start()] + new + b[s.end():], f"quantity -> {new.decode(errors='replace')}"


def t_type_swap(rng, b):
    if rng.random() < 0.5:
        m = list(_QUANTITY.finditer(b))
        if m:
            s = rng.choice(m)
            new = rng.choice([s.group(1), s.group(1) + s.group(2), b"[" + s.group(1) + b"]", b"true"])
            return b[: s.start()] + new + b[s.end():], "string as number"
    m = _value_numbers(b)
    if not m:
        return b, "no number"
    s, e, t = rng.choice(m)
    return b[:s] + b'"' + t + b'"' + b[e:], "number as string"


def t_empty_table(rng, b):
    hdr = rng.choice([b"[metrics]", b"[tcp]", b"[[link]]", b"[[path]]", b"[[flow]]", b"[[background]]", b"[]", b"[[]]",
                      b"[link]", b"[flow]", b"[mptcp_rec]", b"[sctp]", b"[a.b.c]", b'["."]', b"[ duration ]"])
    ls = _lines(b)
    ls.insert(rng.randrange(len(ls) + 1), hdr)
    return b"\n".join(ls), f"empty table {hdr.decode()}"


def t_duplicate_key(rng, b):
    ls = _lines(b)
    idx = [i for i, l in enumerate(ls) if _ASSIGN.match(l)]
    if not idx:
        return b, "no key"
    i = rng.choice(idx)
    k = _ASSIGN.match(ls[i]).group(1)
    ls.insert(i + 1, k + b" = " + _text_value(rng))
    return b"\n".join(ls), f"duplicate key {k.decode(errors='replace')}"


def t_unknown_key(rng, b):
    ls = _lines(b)
    k = rng.choice(UNKNOWN_KEYS)
    ls.insert(rng.randrange(len(ls) + 1), _key(k).encode() + b" = " + _text_value(rng))
    return b"\n".join(ls), f"key {k[:30]!r} inserted"


def t_move_key(rng, b):
    ls = _lines(b)
    idx = [i for i, l in enumerate(ls) if _ASSIGN.match(l)]
    hdr = [i for i, l in enumerate(ls) if _HEADER.match(l)]
    if not idx:
        return b, "no key"
    i = rng.choice(idx)
    line = ls.pop(i)
    hdr = [h - (h > i) for h in hdr]
    j = (rng.choice(hdr) + 1) if hdr and rng.random() < 0.8 else 0
    ls.insert(j, line)
    return b"\n".join(ls), f"move line {line[:40].decode(errors='replace')!r} to another table"


def t_plugin(rng, b):
    kind = rng.choice([b"cc", b"scheduler", b"receiver"])
    name = rng.choice(PLUGINS)
    val = _string(name).encode()
    m = list(re.finditer(rb"^(\s*" + kind + rb"\s*=\s*)(.*)$", b, re.M))
    if m:
        s = rng.choice(m)
        return b[: s.start(2)] + val + b[s.end(2):], f"{kind.decode()} = {name!r}"
    ls = _lines(b)
    flows = [i for i, l in enumerate(ls) if l.strip() == b"[[flow]]"]
    at = (rng.choice(flows) + 1) if flows else len(ls)
    ls.insert(at, kind + b" = " + val)
    if kind == b"scheduler" and rng.random() < 0.5:  # a scheduler wants paths
        ls.insert(at, b'paths = ["p", "p"]')
    return b"\n".join(ls), f"{kind.decode()} = {name!r} (added)"


def t_huge_file(rng, b):
    n = rng.choice([16 * 1024 * 1024 + 1, 17 * 1024 * 1024])
    return b + b"\n#" + b"x" * n + b"\n", f"file beyond 16 MB ({n} bytes of comment)"


def t_empty_file(rng, b):
    return rng.choice([b"", b"\n", b"   ", b"# only a comment\n", b"\xef\xbb\xbf", b"\x00", b"=", b"[", b"{}", b"duration"]), "near-empty file"


def t_trace_path(rng, b):
    path = rng.choice(TRACE_PATHS)
    m = re.search(rb'^\s*name\s*=\s*"([^"\n]*)"\s*$', b[b.find(b"[[path]]"):] if b"[[path]]" in b else b"", re.M)
    p = m.group(1) if m else b"p"
    snip = ('\n[[flow]]\nname = "trace_flow"\npath = "' + p.decode(errors="replace") + '"\napp = { kind = "media", fps = 25, trace = '
            + _string(path) + " }\n")
    return b + snip.encode(), f"media trace = {path!r}"


def t_snippet(rng, b):
    m = re.search(rb'^\s*name\s*=\s*"([^"\n]*)"\s*$', b[b.find(b"[[path]]"):] if b"[[path]]" in b else b"", re.M)
    p = m.group(1).decode(errors="replace") if m else "p"
    snip = rng.choice(SNIPPETS).format(path=p, trace=rng.choice(TRACE_PATHS).replace("\\", "\\\\").replace("\n", "\\n").replace("\x00", "\\u0000"))
    return b + b"\n" + snip.encode(), "README snippet appended"


def t_table_kind(rng, b):
    if rng.random() < 0.5:
        return re.sub(rb"\[\[(\w+)\]\]", rb"[\1]", b, count=rng.randint(1, 3)), "[[array]] -> [table]"
    return re.sub(rb"^\[(\w+)\]", rb"[[\1]]", b, count=1, flags=re.M), "[table] -> [[array]]"


def t_separator(rng, b):
    c = rng.randrange(4)
    if c == 0:
        return b.replace(b" = ", b": ", rng.randint(1, 5)), "'=' -> ':'"
    if c == 1:
        return b.replace(b"\n", b"\r\n"), "CRLF line ends"
    if c == 2:
        return b.replace(b"\n", b"\r"), "CR line ends"
    return b.replace(b" ", b"\t"), "tabs"


TEXT_MUTATORS: list[Callable[[random.Random, bytes], tuple[bytes, str]]] = [
    t_delete_line, t_duplicate_line, t_swap_lines, t_flip_chars, t_truncate, t_junk_bytes, t_non_utf8, t_long_string,
    t_control_in_name, t_path_name, t_number_extreme, t_unit, t_type_swap, t_empty_table, t_duplicate_key,
    t_unknown_key, t_move_key, t_plugin, t_trace_path, t_snippet, t_table_kind, t_separator,
]
#: rare: each costs a file of 16 MB or is nearly always refused at once
RARE_TEXT_MUTATORS = [t_huge_file, t_empty_file]


# structured ------------------------------------------------------------------------------


def _leaves(d: Any, path: tuple = ()) -> list[tuple]:
    out = []
    if isinstance(d, dict):
        for k, v in d.items():
            out += _leaves(v, path + (k,)) if isinstance(v, (dict, list)) and v else [path + (k,)]
    elif isinstance(d, list):
        for i, v in enumerate(d):
            out += _leaves(v, path + (i,)) if isinstance(v, (dict, list)) and v else [path + (i,)]
    return out


def _tables(d: Any, path: tuple = ()) -> list[tuple]:
    """Paths of every dict (table) in d, the root included."""
    out = []
    if isinstance(d, dict):
        out.append(path)
        for k, v in d.items():
            out += _tables(v, path + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            out += _tables(v, path + (i,))
    return out


def _get(d: Any, path: tuple) -> Any:
    for p in path:
        d = d[p]
    return d


def _random_value(rng: random.Random, like: Any = None) -> Any:
    c = rng.randrange(10)
    if c == 0:
        return rng.choice(EXTREME_NUMBERS)
    if c == 1:
        return rng.choice(UNIT_VALUES)
    if c == 2:
        return rng.choice(BAD_NAMES)
    if c == 3:
        return rng.choice([True, False, [], {}, [[]], [1, "a"], {"a": 1}, _dt.datetime(1979, 5, 27, 7, 32), _dt.date(2000, 1, 1),
                           _dt.time(7, 32)])
    if c == 4:
        return rng.choice(PLUGINS)
    if c == 5 and isinstance(like, str):  # string as number
        m = re.match(r"-?\d+(\.\d+)?([eE][-+]?\d+)?", like)
        return (float(m.group()) if ("." in m.group() or "e" in m.group().lower()) else int(m.group())) if m else 0
    if c == 6 and isinstance(like, (int, float)) and not isinstance(like, bool):  # number as string
        return str(like)
    if c == 7:
        return [rng.choice(EXTREME_NUMBERS) for _ in range(rng.choice([1, 3, 1000]))]
    if c == 8:
        return "x" * rng.choice([101, 10_000, 1_000_000])
    return rng.choice(EXTREME_NUMBERS + UNIT_VALUES)


def s_leaf_value(rng, d):
    ls = _leaves(d)
    if not ls:
        return "no leaf"
    p = rng.choice(ls)
    parent = _get(d, p[:-1])
    old = parent[p[-1]]
    parent[p[-1]] = new = _random_value(rng, old)
    return f"{'.'.join(map(str, p))} = {str(new)[:40]!r}"


def s_remove_required(rng, d):
    req = rng.choice(REQUIRED)
    if len(req) == 1:
        d.pop(req[0], None)
        return f"remove {req[0]}"
    arr = d.get(req[0])
    if isinstance(arr, list) and arr:
        el = rng.choice(arr)
        if isinstance(el, dict):
            el.pop(req[2], None)
    return f"remove {req[0]}[].{req[2]}"


def s_unknown_key(rng, d):
    t = rng.choice(_tables(d))
    k = rng.choice(UNKNOWN_KEYS)
    _get(d, t)[k] = _random_value(rng)
    return f"unknown key {k[:30]!r} in {'.'.join(map(str, t)) or 'top level'}"


def s_move_key(rng, d):
    ls = [p for p in _leaves(d) if isinstance(_get(d, p[:-1]), dict)]
    ts = _tables(d)
    if not ls:
        return "no key"
    p = rng.choice(ls)
    v = _get(d, p[:-1]).pop(p[-1])
    t = rng.choice(ts)
    _get(d, t)[p[-1]] = v
    return f"move {'.'.join(map(str, p))} to {'.'.join(map(str, t)) or 'top level'}"


def s_empty(rng, d):
    k = rng.choice(["link", "path", "flow", "metrics", "tcp", "background"])
    c = rng.randrange(3)
    if c == 0:
        d[k] = []
    elif c == 1:
        d[k] = [{}]
    else:
        d.setdefault(k, [] if k in ("link", "path", "flow", "background") else {})
        if isinstance(d[k], list):
            d[k].append({})
        else:
            d[k] = {}
    return f"empty {k} ({c})"


def s_bad_name(rng, d):
    cands = [p for p in _leaves(d) if p and p[-1] == "name"] + [("name",)]
    p = rng.choice(cands)
    name = rng.choice(BAD_NAMES)
    _get(d, p[:-1])[p[-1]] = name
    # the paths naming a renamed link or path follow it sometimes, so the name reaches files
    return f"{'.'.join(map(str, p))} = {name[:40]!r}"


def s_plugin(rng, d):
    flows = d.get("flow")
    if not isinstance(flows, list) or not flows or not isinstance(flows[0], dict):
        d["flow"] = flows = [{"name": "f", "path": "p"}]
    f = rng.choice(flows)
    if not isinstance(f, dict):
        return "no flow"
    kind = rng.choice(["cc", "scheduler", "receiver"])
    f[kind] = name = rng.choice(PLUGINS)
    return f"flow.{kind} = {name!r}"


def s_type_swap(rng, d):
    ls = _leaves(d)
    if not ls:
        return "no leaf"
    p = rng.choice(ls)
    parent = _get(d, p[:-1])
    v = parent[p[-1]]
    if isinstance(v, str):
        m = re.match(r"-?\d+(\.\d+)?([eE][-+]?\d+)?", v)
        parent[p[-1]] = new = (float(m.group()) if m and ("." in m.group() or "e" in m.group().lower()) else int(m.group()) if m else 1)
    elif isinstance(v, bool):
        parent[p[-1]] = new = str(v).lower()
    elif isinstance(v, (int, float)):
        parent[p[-1]] = new = str(v)
    else:
        parent[p[-1]] = new = str(v)
    return f"{'.'.join(map(str, p))}: type changed to {type(new).__name__}"


def s_unit(rng, d):
    ls = [p for p in _leaves(d) if isinstance(_get(d, p), str) and re.match(r"^-?[\d.]", _get(d, p))]
    if not ls:
        return "no quantity"
    p = rng.choice(ls)
    parent = _get(d, p[:-1])
    parent[p[-1]] = new = rng.choice(UNIT_VALUES) if rng.random() < 0.6 else re.sub(r"[A-Za-z%]+$", "", parent[p[-1]]) + rng.choice(UNITS)
    return f"{'.'.join(map(str, p))} = {new!r}"


def s_duplicate_element(rng, d):
    k = rng.choice(["link", "path", "flow"])
    arr = d.get(k)
    if isinstance(arr, list) and arr:
        arr.append(json.loads(json.dumps(rng.choice(arr), default=str)))
        return f"duplicate a {k} (same name)"
    return "no element"


#: what a structured mutation that copies part of a scenario may add, about (bytes)
MAX_GROWTH = 4_000_000


def _size(x: Any) -> int:
    return len(json.dumps(x, default=str)) + 1


def s_many(rng, d):
    k = rng.choice(["flow", "link", "path"])
    arr = d.get(k)
    n = rng.choice([100, 1000, 10_000])
    if isinstance(arr, list) and arr and isinstance(arr[0], dict):
        base = arr[0]
        n = min(n, max(1, MAX_GROWTH // _size(base)))
        for i in range(n):
            el = copy.deepcopy(base)
            if "name" in el:
                el["name"] = f"{base['name']}_{i}"
            arr.append(el)
        return f"{n} more {k}s"
    return "no element"


def s_deep(rng, d):
    c = rng.randrange(3)
    if c == 0:
        v: Any = 1
        for _ in range(rng.choice([50, 200])):
            v = {"a": v}
        d["metrics"] = v
        return "deeply nested table"
    if c == 1:
        paths = d.get("path")
        if isinstance(paths, list) and paths and isinstance(paths[0], dict):
            links = paths[0].get("links")
            if isinstance(links, list) and links:
                paths[0]["links"] = links * min(rng.choice([2, 1001]), max(2, MAX_GROWTH // _size(links)))
                return "path with its links repeated"
        return "no path"
    flows = d.get("flow")
    if isinstance(flows, list) and flows and isinstance(flows[0], dict):
        pnames = [p.get("name") for p in d.get("path", []) if isinstance(p, dict)] or ["p"]
        flows[0].pop("path", None)
        flows[0]["paths"] = [pnames[0]] * min(rng.choice([2, 9, 100]), max(2, MAX_GROWTH // _size(pnames[0])))
        return "flow over the same path many times"
    return "no flow"


def s_rename_reference(rng, d):
    """Renames a link or path to a bad name and the references to it, so the name is valid
    as a reference and reaches the simulator."""
    k = rng.choice(["link", "path", "flow"])
    arr = d.get(k)
    if not (isinstance(arr, list) and arr and isinstance(arr[0], dict) and isinstance(arr[0].get("name"), str)):
        return "no element"
    old = arr[0]["name"]
    new = rng.choice(BAD_NAMES)
    arr[0]["name"] = new
    for p in d.get("path", []) if k == "link" else []:
        if isinstance(p, dict) and isinstance(p.get("links"), list):
            p["links"] = [new if x == old else x for x in p["links"]]
    for f in d.get("flow", []) if k == "path" else []:
        if isinstance(f, dict):
            if f.get("path") == old:
                f["path"] = new
            if isinstance(f.get("paths"), list):
                f["paths"] = [new if x == old else x for x in f["paths"]]
    return f"{k}[0] renamed to {new[:40]!r} with its references"


#: extreme values that keep a quantity's kind, so the file often stays valid and runs
EXTREMES_BY_UNIT = [
    (re.compile(r"^[-+.\d eE]+\s*[kMGT]?bps$"), ["0bps", "1bps", "8bps", "1kbps", "1e-3bps", "999Gbps", "1Tbps", "1e12bps", "1.0000001Tbps"]),
    (re.compile(r"^[-+.\d eE]+\s*(ns|us|ms|s|min)$"), ["0s", "1ns", "1us", "1e-9s", "1ms", "86400s", "999999s", "1000000s", "1000001s"]),
    (re.compile(r"^[-+.\d eE]+\s*[KMGTP]?B$"), ["0B", "1B", "39B", "40B", "41B", "65535B", "1TB", "1PB", "1.0000001PB"]),
    (re.compile(r"^[-+.\d eE]+\s*pkt$"), ["0pkt", "1pkt", "2pkt", "10000000pkt", "10000001pkt"]),
    (re.compile(r"^[-+.\d eE]+\s*%$"), ["0%", "1e-9%", "50%", "99.9999%", "100%", "100.0001%"]),
]
EXTREME_INTS = [0, 1, 2, 65535, 10**6, 2**31 - 1, 2**32, 2**63 - 1, -1]
EXTREME_FLOATS = [0.0, 1e-300, 0.999999, 1.0, 1.000001, 1e300]


def s_extreme_same_kind(rng, d):
    """A leaf set to an extreme value of its own kind (a rate stays a rate)."""
    cands = []
    for p in _leaves(d):
        v = _get(d, p)
        if isinstance(v, bool):
            continue
        if isinstance(v, str):
            for rx, pool in EXTREMES_BY_UNIT:
                if rx.match(v):
                    cands.append((p, pool))
                    break
        elif isinstance(v, int):
            cands.append((p, EXTREME_INTS))
        elif isinstance(v, float):
            cands.append((p, EXTREME_FLOATS))
    if not cands:
        return "no quantity"
    p, pool = rng.choice(cands)
    _get(d, p[:-1])[p[-1]] = new = rng.choice(pool)
    return f"{'.'.join(map(str, p))} = {new!r}"


STRUCT_MUTATORS: list[Callable[[random.Random, dict], str]] = [
    s_leaf_value, s_leaf_value, s_extreme_same_kind, s_extreme_same_kind, s_remove_required, s_unknown_key, s_move_key, s_empty, s_bad_name, s_plugin,
    s_type_swap, s_unit, s_unit, s_duplicate_element, s_many, s_deep, s_rename_reference, s_rename_reference,
]


def mutate(rng: random.Random, seed_text: bytes) -> tuple[bytes, list[str]]:
    """One mutated file from a seed: extreme values of the right kind (often still valid),
    structured mutations, textual ones, or structured then textual ones."""
    notes: list[str] = []
    data = seed_text
    mode = rng.random()
    if mode < 0.6:
        try:
            d = tomllib.loads(seed_text.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            d = None
        if d is not None:
            if mode < 0.15:
                for _ in range(rng.choice([1, 1, 2])):
                    notes.append(s_extreme_same_kind(rng, d))
                return to_toml(d).encode("utf-8", "surrogatepass"), ["extreme: " + "; ".join(notes)]
            for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
                notes.append(rng.choice(STRUCT_MUTATORS)(rng, d))
            data = to_toml(d).encode("utf-8", "surrogatepass")
        if mode < 0.5:
            return data, ["structured: " + "; ".join(notes)]
    text_notes = []
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
        m = rng.choice(RARE_TEXT_MUTATORS) if rng.random() < 0.004 else rng.choice(TEXT_MUTATORS)
        data, note = m(rng, data)
        text_notes.append(note)
    if notes:
        return data, ["structured+text: " + "; ".join(notes + text_notes)]
    return data, ["text: " + "; ".join(text_notes)]


# ----------------------------------------------------------------------------------------
# Running and classifying


@dataclass
class Outcome:
    command: str
    cls: str
    rc: int | None
    wall: float
    first_line: str
    stderr_tail: str
    outside: list[str] = field(default_factory=list)
    retries: int = 0


def _snapshot_tree(root: Path, skip: set[Path]) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dp = Path(dirpath)
        dirnames[:] = [n for n in dirnames if dp / n not in skip]
        for n in dirnames + filenames:
            try:
                st = os.lstat(dp / n)
            except OSError:
                continue
            out[str((dp / n).relative_to(root))] = (st.st_mode >> 12, st.st_size if n in filenames else 0, st.st_mtime_ns if n in filenames else 0)
    return out


def _listing(d: Path, exclude: set[str] = frozenset()) -> set[str]:
    try:
        return {n for n in os.listdir(d) if n not in exclude}
    except OSError:
        return set()


def _mem_limiter(limit: int) -> Callable[[], None]:
    def f() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return f


def _first_error_line(text: str) -> str:
    for line in text.split("\n"):
        if line.strip():
            return line.strip()
    return ""


#: what `mpsim sweep` says on exit 1 when runs failed (each recorded in the folder's 'failed' table)
_SWEEP_FAILED = re.compile(r"^\d+ runs? failed \(see ")


def classify(rc: int | None, timed_out: bool, out: str, err: str, command: str = "") -> tuple[str, str]:
    """(class, the line that tells it) for one command's outcome."""
    both = out + "\n" + err
    # lines as a terminal shows them: split at \n only (str.splitlines also splits at U+2028,
    # U+0085, ..., which a name may hold)
    lines = [l for l in err.split("\n") if l.strip()]
    first = _first_error_line(err) or _first_error_line(out)
    if timed_out:
        return "stall", first
    if "panicked at" in both:
        line = next((l for l in both.splitlines() if "panicked at" in l), first)
        i = both.find("panicked at")
        return "panic", (line + " " + both[i:i + 300].splitlines()[1].strip() if len(both[i:i + 300].splitlines()) > 1 else line)
    if "MemoryError" in both or "memory allocation of" in both or rc == -signal.SIGKILL:
        return "memory", next((l for l in both.splitlines() if "MemoryError" in l or "memory allocation" in l), first)
    if "Traceback" in both:
        tail = [l for l in err.split("\n") if l.strip()]
        return "traceback", tail[-1].strip() if tail else first
    if rc is not None and rc < 0:
        return "crash", f"killed by signal {signal.Signals(-rc).name}"
    if rc == 0:
        return "ran", first
    rest = [l for l in lines if not l.startswith("warning:")]
    if rc in (1, 2) and len(rest) == 1 and rest[0].startswith("error:"):
        return "clean error", rest[0]
    if command == "sweep" and rc == 1 and len(rest) == 1 and _SWEEP_FAILED.match(rest[0]):
        return "clean error", rest[0]
    return "unclean", f"exit {rc}: " + (" | ".join(rest[:3])[:300] if rest else "(no message)")


def _is_core_import_error(text: str) -> bool:
    return "_core" in text and ("ImportError" in text or "cannot import name" in text or "undefined symbol" in text)


#: runs a command with a private /tmp (the case's systmp folder bind-mounted over it, in a
#: mount namespace of its own), so whatever it writes to /tmp is seen, and nothing else is
_PRIVATE_TMP = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", 'mount --bind "$0" /tmp && exec "$@"']


def _private_tmp_works(work: Path) -> bool:
    """Whether a private /tmp can be had here (root, unshare and a work folder outside /tmp)."""
    if str(work.resolve()).startswith("/tmp/") or shutil.which("unshare") is None:
        return False
    probe = Path(tempfile.mkdtemp(prefix="probe_", dir=work))
    try:
        (probe / "here").write_text("")
        p = subprocess.run([*_PRIVATE_TMP, str(probe), "test", "-e", "/tmp/here"], capture_output=True, timeout=30)
        return p.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(probe, ignore_errors=True)


class Runner:
    def __init__(self, args: argparse.Namespace, work: Path, keep: Path) -> None:
        self.args = args
        self.work = work
        self.keep = keep
        self.mpsim = args.mpsim
        self.tmp_root = Path("/tmp")
        self.private_tmp = not args.shared_tmp and _private_tmp_works(work)
        self.exclude_tmp = {work.name, keep.name}
        self.core_retries = 0

    def _work_listing(self) -> set[str]:
        names = _listing(self.work)
        # with several jobs the other cases' folders come and go
        return {n for n in names if not n.startswith("case_")} if self.args.jobs > 1 else names

    def _exec(self, argv: list[str], cwd: Path, env: dict[str, str], timeout: float, systmp: Path) -> tuple[int | None, bool, str, str, float]:
        if self.private_tmp:
            argv = [*_PRIVATE_TMP, str(systmp), *argv]
        t = time.perf_counter()
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True, preexec_fn=_mem_limiter(self.args.memory))
        timed_out = False
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out, err = p.communicate()
        wall = time.perf_counter() - t
        return p.returncode, timed_out, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), wall

    def run_case(self, name: str, data: bytes, commands: list[str]) -> list[tuple[Outcome, str, str]]:
        """Runs *commands* ("check", "run", "sweep") on one file in a fresh case folder;
        returns each command's outcome with its stdout and stderr."""
        case = Path(tempfile.mkdtemp(prefix="case_", dir=self.work))
        results = []
        try:
            scen, cwd, tmp, res = case / "scen", case / "cwd", case / "tmp", case / "res"
            systmp, home = case / "systmp", case / "home"
            for d in (scen, cwd, tmp, res, systmp, home):
                d.mkdir()
            f = scen / f"{name}.toml"
            f.write_bytes(data)
            outdirs = {res / "out", res / "cap", res / "sweep"}
            env = {**os.environ, "MPSIM_EVENT_LIMIT": self.args.event_limit, "TMPDIR": str(tmp), "TEMP": str(tmp), "TMP": str(tmp),
                   "HOME": str(home)}
            for k in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "MPLCONFIGDIR"):
                env.pop(k, None)
            env.pop("MPSIM_MEMORY_LIMIT", None)
            rel = os.path.relpath
            for command in commands:
                if command == "check":
                    argv = [self.mpsim, "check", rel(f, cwd)]
                    timeout = self.args.timeout
                elif command == "run":
                    argv = [self.mpsim, "run", rel(f, cwd), "--quiet", "--out", rel(res / "out", cwd), "--pcap", rel(res / "cap", cwd)]
                    timeout = self.args.timeout
                else:
                    argv = [self.mpsim, "sweep", rel(f, cwd), "--seeds", "2", "--out", rel(res / "sweep", cwd), "--run-timeout",
                            f"{self.args.run_timeout:g}s", "--processes", str(self.args.sweep_processes), "--quiet"]
                    timeout = self.args.sweep_timeout
                retries = 0
                while True:
                    before = _snapshot_tree(case, outdirs)
                    tmp_before = set() if self.private_tmp else _listing(self.tmp_root, self.exclude_tmp)
                    work_before = self._work_listing()
                    rc, timed_out, out, err, wall = self._exec(argv, cwd, env, timeout, systmp)
                    after = _snapshot_tree(case, outdirs)
                    tmp_new = set() if self.private_tmp else _listing(self.tmp_root, self.exclude_tmp) - tmp_before
                    work_new = self._work_listing() - work_before
                    if _is_core_import_error(out + err) and retries < 5:
                        retries += 1
                        self.core_retries += 1
                        time.sleep(10)
                        continue
                    break
                cls, line = classify(rc, timed_out, out, err, command)
                outside = sorted(f"{k} ({'new' if k not in before else 'changed'})" for k in after if before.get(k) != after[k])
                outside += sorted(f"{k} (removed)" for k in before if k not in after)
                outside += [f"/tmp/{n}" for n in sorted(tmp_new)]
                outside += [f"<harness>/{n}" for n in sorted(work_new)]
                extra = _listing(res) - {"out", "cap", "sweep"}
                outside += [f"res/{n} (beside OUTDIR)" for n in sorted(extra) if f"res/{n} (new)" not in outside]
                o = Outcome(command, cls, rc, wall, line, err[-3000:], outside, retries)
                results.append((o, out, err))
            if any(o.cls not in CLEAN or o.outside for o, _, _ in results):
                self._keep(name, case, f, results)
        finally:
            shutil.rmtree(case, ignore_errors=True)
        return results

    def _keep(self, name: str, case: Path, f: Path, results: list[tuple[Outcome, str, str]]) -> None:
        dest = self.keep / name
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(case, dest, symlinks=True)
        for o, out, err in results:
            (dest / f"{o.command}.stdout").write_text(out, encoding="utf-8")
            (dest / f"{o.command}.stderr").write_text(err, encoding="utf-8")
        (dest / "outcome.json").write_text(json.dumps([o.__dict__ for o, _, _ in results], indent=1), encoding="utf-8")


def severity(cls: str) -> int:
    return SEVERITY.index(cls)


def file_class(outcomes: list[Outcome]) -> str:
    if any(o.outside for o in outcomes):
        return "written outside"
    return min((o.cls for o in outcomes), key=severity)


def _pattern(msg: str) -> str:
    """An error message with its file name, quoted values and numbers taken out, to group
    messages by kind."""
    msg = re.sub(r"^error: [^:]*\.toml: ", "error: FILE: ", msg)
    msg = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", msg)
    msg = re.sub(r"\[\d+\]", "[N]", msg)
    msg = re.sub(r"\d[\d,]*(\.\d+)?", "N", msg)
    return msg[:160]


def _md(s: str, n: int = 200) -> str:
    s = s.replace("|", "\\|").replace("`", "'").replace("\n", " ")
    s = "".join(c if c.isprintable() else repr(c)[1:-1] for c in s)
    return s[:n] + ("…" if len(s) > n else "")


def _default_work_root() -> Path:
    v = Path("/var/tmp")
    return v if v.is_dir() and os.access(v, os.W_OK) else Path(tempfile.gettempdir())


def seeds() -> list[Path]:
    out: set[Path] = set()
    for g in SEED_GLOBS:
        out.update(p for p in ROOT.glob(g) if p.is_file())
    return sorted(out, key=lambda p: str(p.relative_to(ROOT)))


def generate(seed: int, n: int) -> list[tuple[str, bytes, str, list[str]]]:
    """(name, bytes, seed file, mutations) for n mutated files."""
    rng = random.Random(seed)
    src = [(str(p.relative_to(ROOT)), p.read_bytes()) for p in seeds()]
    out = []
    for i in range(n):
        sname, text = rng.choice(src)
        data, notes = mutate(rng, text)
        out.append((f"fuzz_{i:05d}", data, sname, notes))
    return out


def _scrub(text: str, args: argparse.Namespace) -> str:
    """No machine paths in the report: the repository, temp and home folders are named."""
    for p, r in ((str(ROOT), "."), (str(Path(args.keep).resolve()), "<keep>"), (args.work_base, "<temp>"),
                 (tempfile.gettempdir().rstrip("/") + "/", "<temp>/"),
                 (str(Path.home()), "~")):
        text = text.replace(p, r)
    return text


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1, help="random seed of the mutations (default 1)")
    ap.add_argument("--files", type=int, default=3000, help="mutated files through check and run (default 3000)")
    ap.add_argument("--sweeps", type=int, default=200, help="of these, files also through sweep (default 200)")
    ap.add_argument("--timeout", type=float, default=20.0, help="wall-time limit of check and run, s (default 20)")
    ap.add_argument("--run-timeout", type=float, default=10.0, help="sweep --run-timeout, s (default 10)")
    ap.add_argument("--sweep-timeout", type=float, default=None, help="wall-time limit of a sweep, s (default 2 x run-timeout + timeout)")
    ap.add_argument("--sweep-processes", type=int, default=1, help="sweep --processes (default 1: the machine is shared)")
    ap.add_argument("--memory", type=int, default=4 << 30, help="address-space cap of each process, bytes (default 4 GiB)")
    ap.add_argument("--event-limit", default="3e8", help="MPSIM_EVENT_LIMIT of each process (default 3e8)")
    ap.add_argument("--jobs", type=int, default=1, help="files run at once (default 1)")
    ap.add_argument("--keep", default=None, help="folder for the non-clean cases (default: a new temp folder)")
    ap.add_argument("--out", default=str(HERE / "results" / "fuzz_cli.md"), help="Markdown report (default benches/results/fuzz_cli.md)")
    ap.add_argument("--json", default=None, help="also write every outcome as JSON to this file")
    ap.add_argument("--mpsim", default=None, help="the mpsim command (default: the one beside this Python)")
    ap.add_argument("--work-root", default=None, help="where the case folders go (default: /var/tmp, outside /tmp, else the temp folder)")
    ap.add_argument("--shared-tmp", action="store_true", help="no private /tmp: compare listings of /tmp instead (other processes may be seen)")
    ap.add_argument("--no-confirm", action="store_true", help="do not run non-clean cases a second time")
    ap.add_argument("--progress", action="store_true", help="print a line per 100 files")
    ap.add_argument("--notes", default=None, help="a Markdown file appended to the report (the triage of its cases)")
    ap.add_argument("--rerender", metavar="JSON", default=None,
                    help="run nothing: write the report again from the --json file of an earlier pass (with --notes)")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = ap.parse_args(argv)
    if args.rerender:
        return rerender(args)
    if args.sweep_timeout is None:
        args.sweep_timeout = 2 * args.run_timeout + args.timeout
    if args.mpsim is None:
        cand = Path(sys.executable).parent / "mpsim"
        args.mpsim = str(cand) if cand.exists() else (shutil.which("mpsim") or "mpsim")
    base = Path(args.work_root) if args.work_root else _default_work_root()
    if args.keep is None:
        args.keep = tempfile.mkdtemp(prefix="mpsim_fuzz_keep_", dir=base)
    keep = Path(args.keep).resolve()
    keep.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="mpsim_fuzz_work_", dir=base))
    args.work_base = str(base.resolve())
    runner = Runner(args, work, keep)

    t0 = time.perf_counter()
    files = generate(args.seed, args.files)
    gen_s = time.perf_counter() - t0
    meta = {name: (src, notes) for name, _, src, notes in files}
    outcomes: dict[str, list[Outcome]] = {}
    confirmed: dict[str, str] = {}

    def one(item: tuple[str, bytes, str, list[str]], commands: list[str]) -> tuple[str, list[Outcome]]:
        name, data = item[0], item[1]
        res = [o for o, _, _ in runner.run_case(name, data, commands)]
        return name, res

    def drive(items: list, commands: list[str], tag: str) -> dict[str, list[Outcome]]:
        got: dict[str, list[Outcome]] = {}
        done = 0
        start = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for name, res in pool.map(lambda it: one(it, commands), items):
                got[name] = res
                done += 1
                if args.progress and (done % 100 == 0 or done == len(items)):
                    counts = collections.Counter(file_class(r) for r in got.values())
                    print(f"{tag} {done}/{len(items)} {time.perf_counter() - start:.0f}s {dict(counts)}", file=sys.stderr, flush=True)
        return got

    t1 = time.perf_counter()
    outcomes = drive(files, ["check", "run"], "files")
    files_s = time.perf_counter() - t1

    # sweeps: a sample of the files, three quarters of it among those that ran
    rng = random.Random(args.seed + 1)
    ran = [it for it in files if outcomes[it[0]][-1].cls == "ran"]
    rest = [it for it in files if outcomes[it[0]][-1].cls != "ran"]
    k_ran = min(len(ran), (3 * args.sweeps) // 4)
    sample = rng.sample(ran, k_ran) + rng.sample(rest, min(len(rest), args.sweeps - k_ran))
    sample.sort(key=lambda it: it[0])
    t2 = time.perf_counter()
    sweep_out = drive(sample, ["sweep"], "sweeps")
    sweeps_s = time.perf_counter() - t2

    # a second run of every non-clean case, to tell reproducible outcomes from noise
    if not args.no_confirm:
        by_name = {it[0]: it for it in files}
        for name, res in list(outcomes.items()) + [(n + "#sweep", r) for n, r in sweep_out.items()]:
            cls = file_class(res)
            if cls in CLEAN:
                continue
            base = name.split("#")[0]
            again = [o for o, _, _ in runner.run_case(base + ("_again" if "#" not in name else "_sweep_again"), by_name[base][1],
                                                         ["sweep"] if "#" in name else ["check", "run"])]
            confirmed[name] = file_class(again)
    total_s = time.perf_counter() - t0

    run_argv = [a for a in argv if a not in ("--progress",)]
    summary = {
        "files": {n: [o.__dict__ for o in r] for n, r in outcomes.items()},
        "sweeps": {n: [o.__dict__ for o in r] for n, r in sweep_out.items()},
        "file_classes": dict(collections.Counter(file_class(r) for r in outcomes.values())),
        "sweep_classes": dict(collections.Counter(file_class(r) for r in sweep_out.values())),
        "confirmed": confirmed,
        "meta": meta,
        "seconds": {"generate": gen_s, "files": files_s, "sweeps": sweeps_s, "total": total_s},
        "keep": str(keep),
        "argv": run_argv,
        "private_tmp": runner.private_tmp,
        "core_retries": runner.core_retries,
        "date": _dt.date.today().isoformat(),
    }
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")
    _write(args, summary, outcomes, sweep_out)
    shutil.rmtree(work, ignore_errors=True)
    return summary


def _write(args: argparse.Namespace, summary: dict[str, Any], outcomes: dict[str, list[Outcome]], sweep_out: dict[str, list[Outcome]]) -> None:
    report = write_report(args, summary, outcomes, sweep_out)
    if args.notes:
        report += "\n" + Path(args.notes).read_text(encoding="utf-8")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(_scrub(report, args), encoding="utf-8")


def rerender(args: argparse.Namespace) -> dict[str, Any]:
    """The report again from an earlier pass's JSON; outcomes are classified again from the
    stderr kept there (its last 3,000 characters) where the rules allow."""
    summary = json.loads(Path(args.rerender).read_text(encoding="utf-8"))

    def load(d: dict[str, list[dict]]) -> dict[str, list[Outcome]]:
        out = {}
        for name, rs in d.items():
            os_ = [Outcome(**r) for r in rs]
            for o in os_:
                if o.cls == "unclean":  # the rules that changed: lines split at \n only, a sweep's failed runs
                    o.cls, o.first_line = classify(o.rc, False, "", o.stderr_tail, o.command)
            out[name] = os_
        return out

    outcomes, sweep_out = load(summary["files"]), load(summary["sweeps"])
    summary["file_classes"] = dict(collections.Counter(file_class(r) for r in outcomes.values()))
    summary["sweep_classes"] = dict(collections.Counter(file_class(r) for r in sweep_out.values()))
    saved = argparse.Namespace(**{**vars(args), **_args_of(summary.get("argv", []))})
    saved.out, saved.notes, saved.keep = args.out, args.notes, summary.get("keep", args.keep or "")
    saved.work_base = str(_default_work_root().resolve())
    _write(saved, summary, outcomes, sweep_out)
    return summary


def _args_of(argv: list[str]) -> dict[str, Any]:
    """The options of an earlier pass (its defaults filled in)."""
    ap = argparse.ArgumentParser(add_help=False)
    for name, kind, default in (("--seed", int, 1), ("--files", int, 3000), ("--sweeps", int, 200), ("--timeout", float, 20.0),
                                ("--run-timeout", float, 10.0), ("--sweep-timeout", float, None), ("--sweep-processes", int, 1),
                                ("--memory", int, 4 << 30), ("--event-limit", str, "3e8"), ("--jobs", int, 1)):
        ap.add_argument(name, type=kind, default=default)
    known, _ = ap.parse_known_args(argv)
    d = vars(known)
    if d["sweep_timeout"] is None:
        d["sweep_timeout"] = 2 * d["run_timeout"] + d["timeout"]
    d["argv"] = argv
    return d


def write_report(args: argparse.Namespace, summary: dict[str, Any], outcomes: dict[str, list[Outcome]],
                 sweep_out: dict[str, list[Outcome]]) -> str:
    argv, skip = [], False
    for a in summary.get("argv", []):  # the options that make the pass, not where it wrote
        if skip:
            skip = False
        elif a.split("=")[0] in ("--out", "--json", "--keep", "--notes", "--work-root", "--mpsim", "--progress"):
            skip = "=" not in a and a != "--progress"
        else:
            argv.append(a)
    cmd = "python benches/fuzz_cli.py" + ("" if not argv else " " + " ".join(argv))
    n = len(outcomes)
    meta, confirmed = summary["meta"], summary["confirmed"]
    secs = summary["seconds"]
    gen_s, files_s, sweeps_s, total_s = secs["generate"], secs["files"], secs["sweeps"], secs["total"]
    private_tmp, core_retries = summary.get("private_tmp", True), summary.get("core_retries")
    if core_retries is None:
        core_retries = sum(o.retries for r in [*outcomes.values(), *sweep_out.values()] for o in r)
    fc = collections.Counter(file_class(r) for r in outcomes.values())
    per_cmd = {c: collections.Counter(o.cls for r in outcomes.values() for o in r if o.command == c) for c in ("check", "run")}
    sc = collections.Counter(file_class(r) for r in sweep_out.values())
    walls = {c: sum(o.wall for r in outcomes.values() for o in r if o.command == c) for c in ("check", "run")}
    L = [
        "# Mutation fuzzing of the command line",
        "",
        f"Made by `{_md(cmd, 400)}` (`benches/fuzz_cli.py`): {n:,} files mutated from the shipped scenarios "
        f"(seed {args.seed}), each through `mpsim check FILE` and `mpsim run FILE --quiet --out OUTDIR --pcap CAPDIR`, "
        f"{len(sweep_out):,} of them also through `mpsim sweep FILE --seeds 2 --out SWEEPDIR --run-timeout {args.run_timeout:g}s "
        f"--processes {args.sweep_processes} --quiet`. Each process ran in a fresh empty working folder, with its own TMPDIR and HOME, "
        f"{'a private system temp folder (an empty folder bind-mounted over it in a mount namespace of its own), ' if private_tmp else 'the system temp folder listed before and after (other processes on the machine may show), '}"
        f"an address-space cap of {args.memory / 2**30:g} GiB (RLIMIT_AS), MPSIM_EVENT_LIMIT={args.event_limit} and a wall-time "
        f"limit of {args.timeout:g} s ({args.sweep_timeout:g} s for a sweep), one file at a time ({args.jobs} job).",
        "",
        f"Date: {summary.get('date', _dt.date.today().isoformat())}; seeds: {len(seeds())} scenario files; host: {os.cpu_count()} CPUs (shared).",
        "",
        "## Counts",
        "",
        "A file's class is the most severe of its commands' (order of the table); 'written outside' means a file "
        "was created or changed anywhere but OUTDIR, CAPDIR or SWEEPDIR.",
        "",
        "| class | files (check + run) | `check` | `run` | sweeps |",
        "|---|---:|---:|---:|---:|",
    ]
    for c in SEVERITY:
        L.append(f"| {c} | {fc.get(c, 0):,} | {per_cmd['check'].get(c, 0):,} | {per_cmd['run'].get(c, 0):,} | {sc.get(c, 0):,} |")
    L.append(f"| **total** | {n:,} | {sum(per_cmd['check'].values()):,} | {sum(per_cmd['run'].values()):,} | {len(sweep_out):,} |")
    L += [
        "",
        "## Time",
        "",
        f"- generating the files: {gen_s:.1f} s",
        f"- check + run of {n:,} files: {files_s:.0f} s, {n / files_s if files_s else 0:.2f} files/s "
        f"(check {walls['check']:.0f} s in all, {walls['check'] / max(n, 1):.2f} s each; run {walls['run']:.0f} s, "
        f"{walls['run'] / max(n, 1):.2f} s each)",
        f"- {len(sweep_out):,} sweeps: {sweeps_s:.0f} s, {len(sweep_out) / sweeps_s if sweeps_s else 0:.2f} sweeps/s",
        f"- the whole pass, with the second run of the non-clean cases: {total_s:.0f} s ({total_s / 60:.1f} min)",
        f"- runs started again after an ImportError of mpsim._core (the extension being rebuilt): {core_retries}",
        "",
    ]
    # check/run agreement
    disagree = [(nme, r) for nme, r in outcomes.items() if r[0].cls == "clean error" and r[1].cls == "ran"]
    refused = [(nme, r) for nme, r in outcomes.items() if r[0].cls == "ran" and r[1].cls == "clean error"]
    L += [
        "## `check` against `run`",
        "",
        f"- `check` refused and `run` ran: {len(disagree)}",
        f"- `check` accepted and `run` refused: {len(refused)} (kinds of message below)",
        "",
    ]
    for pat, cnt in collections.Counter(_pattern(r[1].first_line) for _, r in refused).most_common(12):
        L.append(f"  - {cnt} × `{_md(pat, 160)}`")
    for nme, r in disagree[:20]:
        L.append(f"  - {nme}: check: `{_md(r[0].first_line)}`")
    L += ["", "## Messages", "", "The commonest kinds of clean error (file names, quoted values and numbers taken out):", ""]
    errs = collections.Counter(_pattern(o.first_line) for r in outcomes.values() for o in r if o.cls == "clean error")
    L.append(f"{len(errs):,} kinds in all.")
    L.append("")
    L.append("| messages | kind |")
    L.append("|---:|---|")
    for pat, cnt in errs.most_common(25):
        L.append(f"| {cnt:,} | `{_md(pat, 180)}` |")
    L += ["", "Examples of each class:", ""]
    all_out = [(nme, o) for nme, r in outcomes.items() for o in r] + [(nme, o) for nme, r in sweep_out.items() for o in r]
    for c in SEVERITY:
        ex = [(nme, o) for nme, o in all_out if o.cls == c or (c == "written outside" and o.outside)]
        if not ex:
            continue
        L.append(f"- **{c}**:")
        seen = set()
        for nme, o in ex:
            key = _pattern(o.first_line) if c != "written outside" else ",".join(o.outside)[:80]
            if key in seen:
                continue
            seen.add(key)
            if c == "ran" and not o.first_line:
                continue
            msg = (o.first_line or "(nothing printed)") if c != "written outside" else "; ".join(o.outside)[:300]
            L.append(f"  - {nme} ({o.command}): `{_md(msg, 220)}`")
            if len(seen) >= (4 if c in CLEAN else 8):
                break
    L += ["", "## Non-clean cases", ""]
    bad = [(nme, r, "check + run") for nme, r in outcomes.items() if file_class(r) not in CLEAN]
    bad += [(nme, r, "sweep") for nme, r in sweep_out.items() if file_class(r) not in CLEAN]
    if not bad:
        L.append("None.")
    else:
        L += [
            "Each kept with its outputs in the --keep folder, under its name; 'again' is the class of a second run.",
            "",
            "| file | seed | mutations | command | class | again | first line |",
            "|---|---|---|---|---|---|---|",
        ]
        for nme, r, what in sorted(bad, key=lambda x: (severity(file_class(x[1])), x[0])):
            src, notes = meta[nme]
            worst = min(r, key=lambda o: (0 if o.outside else 1, severity(o.cls)))
            line = (worst.first_line or "(nothing printed)") if not worst.outside else "; ".join(worst.outside)
            again = confirmed.get(nme if what != "sweep" else nme + "#sweep", "-")
            L.append(f"| {nme} | {src} | {_md('; '.join(notes), 160)} | {worst.command} | {file_class(r)} | {again} | `{_md(line, 220)}` |")
    L.append("")
    return "\n".join(L)


if __name__ == "__main__":
    main()
