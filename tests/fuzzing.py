"""Hostile lines for every dialect: real lines (the sample logs, the corpus) mutated the way
strangers and broken writers mutate them, and the checks every reading must pass.

Used by tests/test_hostile.py (a few thousand lines a dialect in the normal suite) and by
benchmarks/fuzz.py (a million and more a dialect, on demand). The checks:

- nothing escapes as an exception, and rows + rejects + events = lines, always;
- the three readers of a line (the C split, the SQL split, the regex) give the same rows
  and the same rejects, reasons included.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from logan.read.ingest import ingest

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"

# dialect -> (the preset its seeds are read with, seed files under sample_logs/ or the corpus)
SEEDS = {
    "apache": ("apache:combined_D", ["sample_logs/puppet_access.log"]),
    "nginx": ("nginx:timed", ["sample_logs/nginx_access.log"]),
    "varnish": ("varnish:timed", ["sample_logs/varnish_access.log"]),
    "haproxy": (
        "haproxy:httplog",
        [
            "sample_logs/haproxy.log",
            "corpus/haproxy_raravena80/haproxy.log",
            "corpus/haproxy_no7dw/haproxy.log",
        ],
    ),
    "combined": (
        "apache:combined",
        ["corpus/elastic_apache_logs/apache_logs", "corpus/basjes_hackers_access/hackers-access.log"],
    ),
}

# What strangers send and broken writers leave: quotes, escapes, controls, invalid UTF-8,
# separators, numbers at their limits, SQL and markup.
_PIECES = [
    b'"', b"\\", b'\\"', b"\\\\", b"\x00", b"\r", b"\t", b"\x1b[31m", b"\xff\xfe", b"\xc3\x28", b"\xe9",
    b" ", b"  ", b"-", b"-1", b"+5", b"0x10", b"99999999999999999999", b"1e9", b"%", b"$", b"#22",
    b"[", b"]", b"{", b"}", b"|", b"'); DROP TABLE requests; --", b"<script>alert(1)</script>",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", b"GET / HTTP/1.1", b"::1", b"[::1]:8080",
]  # fmt: skip


def seed_lines(dialect: str, limit: int = 2000) -> list[bytes]:
    """Real lines of the dialect's seed files that exist here (the corpus may be absent)."""
    out: list[bytes] = []
    for name in SEEDS[dialect][1]:
        path = CORPUS / name.removeprefix("corpus/") if name.startswith("corpus/") else REPO / name
        if path.is_file():
            out += path.read_bytes().splitlines()[:limit]
    return [x for x in out if x]


def mutate(line: bytes, rng: random.Random) -> bytes:
    """One to three edits of a real line: a piece inserted, a span deleted or repeated, a
    byte replaced, the line cut or doubled."""
    for _ in range(rng.randint(1, 3)):
        n = len(line)
        at = rng.randint(0, n)
        op = rng.randrange(7)
        if op == 0:
            line = line[:at] + rng.choice(_PIECES) + line[at:]
        elif op == 1 and n:
            line = line[:at] + line[min(n, at + rng.randint(1, 8)) :]
        elif op == 2 and n:
            line = line[:at] + bytes([rng.randrange(256)]) + line[at + 1 :]
        elif op == 3:
            line = line[:at]  # a truncated line
        elif op == 4 and n:
            line = line[:at] + line[at : at + rng.randint(1, 40)] * rng.randint(2, 50) + line[at:]
        elif op == 5:
            line = line.replace(b" ", rng.choice([b"  ", b"\t", b" \t"]), 1)
        else:
            line = line + b" " + line  # two lines' worth in one
    return line.replace(b"\n", b" ")  # a line stays a line


def hostile_lines(dialect: str, n: int, seed: int) -> Iterator[bytes]:
    """`n` lines: about half as found, half mutated."""
    rng = random.Random(seed)
    seeds = seed_lines(dialect)
    for _ in range(n):
        line = rng.choice(seeds)
        yield line if rng.random() < 0.5 else mutate(line, rng)


def read(path: Path, fmt: str, **kw) -> tuple[object, pd.DataFrame, pd.DataFrame]:
    """Ingest `path` with `fmt` (keep going whatever the lines); (summary, rows, rejects)."""
    s = ingest([str(path)], format=fmt, profile="none", keep_going=True, **kw)
    req = s.store.sql("SELECT * EXCLUDE (source) FROM requests ORDER BY line_no")
    rej = s.store.sql("SELECT line_no, raw, reason FROM rejects ORDER BY line_no")
    return s, req, rej


def check_counts(summary: object, lines: int) -> None:
    got = summary.rows + summary.rejects + summary.events  # type: ignore[attr-defined]
    assert summary.lines == lines, (summary.lines, lines)  # type: ignore[attr-defined]
    assert got == lines, f"{lines} lines became {got} rows, rejects and events"
