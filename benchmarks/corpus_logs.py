"""Benchmark logs built from real lines: the corpus in ../shared/corpus scaled up to any size.

A speed that holds only on the project's own generator is not a speed: its lines are short
and repeat. Each shape here takes the lines of real logs of one format and writes as many
as asked, varying what varies in real traffic so that cardinality grows with size:

- the client address (a pool that grows with the log: one address per 20 lines),
- the times (a clock that moves on, written in the line's own format and offset),
- the digits of the request (ids, node names such as ec2-54-211-240-78, sizes in paths),
- query values (`?q=...&page=...`: one in three rewritten),

and keeping everything else as the real server wrote it: the methods, statuses, sizes,
timers, user agents, referers, quoting and escapes. The corpus is read where it lies and
never copied into the repository (several licences allow testing, not redistribution).

    python benchmarks/corpus_logs.py --shape apache_extended --gb 1 -o /tmp/netnea_1g.log
    python benchmarks/corpus_logs.py --list
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"

MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


@dataclass(frozen=True)
class Shape:
    files: tuple[str, ...]  # under the corpus, one format for all
    format: str  # what to give `logan ingest --format`
    client: str  # regex of the client address (group 1)
    times: tuple[tuple[str, Callable[[datetime, str], str]], ...]  # (regex, new text from clock)
    note: str
    only: str = ""  # a regex the corpus lines taken must match (all when empty)
    mixed: tuple[Mixed, ...] = ()  # pieces of other real lines, put into some lines


@dataclass(frozen=True)
class Mixed:
    """One line in `every` gets a piece of a real line of another log: group 1 of `take`'s
    first match in `file` replaces group 1 of `into`'s first match in the line."""

    every: int
    file: str
    take: str
    into: str

    def piece(self) -> str:
        text = (CORPUS / self.file).read_text(encoding="utf-8", errors="surrogateescape")
        m = re.search(self.take, text, re.M)
        if m is None:
            raise SystemExit(f"{self.file}: no line matches {self.take!r}")
        return m.group(1)


def _clf(t: datetime, old: str) -> str:
    # keep the line's own offset: [05/Nov/2013:19:52:21 +0000]
    offset = old[-6:-1]
    return f"[{t.day:02d}/{MONTHS[t.month - 1]}/{t.year}:{t:%H:%M:%S} {offset}]"


def _netnea(t: datetime, old: str) -> str:
    return f"[{t:%Y-%m-%d %H:%M:%S}.{t.microsecond:06d}]"


def _syslog(t: datetime, old: str) -> str:
    return f"{MONTHS[t.month - 1]} {t.day:2d} {t:%H:%M:%S}"


def _haproxy_accept(t: datetime, old: str) -> str:
    return f"[{t.day:02d}/{MONTHS[t.month - 1]}/{t.year}:{t:%H:%M:%S}.{t.microsecond // 1000:03d}]"


_CLF = (r"\[\d{2}/\w{3}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}\]", _clf)
_START_ADDR = r"^(\S+)"
# the text of a line's last quoted field (an Apache user agent), escapes and all
_LAST_QUOTED = r'"((?:[^"\\\n]|\\.)*)"$'
SHAPES = {
    "apache_extended": Shape(
        ("netnea_apache_extended_t5/tutorial-5-example-access.log",),
        '%h %{GEOIP_COUNTRY_CODE}e %u [%{%Y-%m-%d %H:%M:%S}t.%{usec_frac}t] "%r" %>s %b "%{Referer}i" '
        '"%{User-Agent}i" %v %A %p %R %{BALANCER_WORKER_ROUTE}e %X "%{cookie}n" %{UNIQUE_ID}e '
        "%{SSL_PROTOCOL}x %{SSL_CIPHER}x %I %O %{ratio}n%% %D %{ModSecTimeIn}e %{ApplicationTime}e "
        "%{ModSecTimeOut}e %{ModSecAnomalyScoreIn}e %{ModSecAnomalyScoreOut}e",
        _START_ADDR,
        ((r"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6}\]", _netnea),),
        "netnea's Apache 'extended' format: 30 fields, %D, ModSecurity times; 390 bytes a line",
    ),
    "apache_combined": Shape(
        (
            "puppet_access_ssl/puppet_access_ssl.log",
            "elastic_apache_logs/apache_logs",
            "basjes_hackers_access/hackers-access.log",
        ),
        "combined",
        _START_ADDR,
        (_CLF,),
        "Apache combined from a Puppet master, a blog and a site under attack; no timer",
    ),
    "haproxy_httplog": Shape(
        ("haproxy_raravena80/haproxy.log", "haproxy_no7dw/haproxy.log", "haproxy_no7dw/haproxy.log.1"),
        "haproxy:httplog",
        r"haproxy\[\d+\]: (\d+\.\d+\.\d+\.\d+):\d+ \[",
        (
            (r"^\w{3} [ \d]\d \d{2}:\d{2}:\d{2}", _syslog),
            (r"\[\d{2}/\w{3}/\d{4}:\d{2}:\d{2}:\d{2}\.\d{3}\]", _haproxy_accept),
        ),
        "rsyslog + HAProxy httplog, with BADREQ, NOSRV and server events as found",
    ),
    "haproxy_captures": Shape(
        ("lnav_haproxy/logfile_haproxy.0",),
        "haproxy:httplog",
        r"haproxy\[\d+\]: (\d+\.\d+\.\d+\.\d+):\d+ \[",
        (
            (r"^\w{3} [ \d]\d \d{2}:\d{2}:\d{2}", _syslog),
            (r"\[\d{2}/\w{3}/\d{4}:\d{2}:\d{2}:\d{2}\.\d{3}\]", _haproxy_accept),
        ),
        "rsyslog + HAProxy httplog capturing the User-Agent ({...} {}); its request lines only",
        only=r"\} \{",
    ),
    "nginx_timed": Shape(
        ("nginx_gonx_thumbs/access.log",),
        '$remote_addr [$time_local] "$request" $status $request_length $body_bytes_sent $request_time '
        '"$t_size" $read_time $gen_time',
        _START_ADDR,
        (_CLF,),
        "nginx with $request_time, thumbnails of hashed paths",
    ),
}
# The same lines with Apache's escapes where real traffic has them: a tablet's user agent
# with its screen size in inches (`Alba 10\" Build`, one line in 2,000), and a nikto
# probe's request (`config[\\\"sipssys\\\"]`, one in 10,000).
SHAPES["apache_escaped"] = replace(
    SHAPES["apache_combined"],
    note="apache_combined's lines; a user agent with \\\" in 1 of 2,000, an escaped probe in 1 of 10,000",
    mixed=(
        Mixed(2000, "tricky_issue_lines/fluent-bit-566_escaped_quote_ua.log", _LAST_QUOTED, _LAST_QUOTED),
        Mixed(
            10_000,
            "tricky_crowdsec/apache-http-probing__apache-http-probing.log",
            r'"(GET \S*\\"\S* HTTP/1\.1)"',
            r'"([A-Z]+ \S+ HTTP/1\.[01])"',
        ),
    ),
)
FORMAT_DIALECT = {"nginx_timed": "nginx"}


def _request_span(line: str) -> tuple[int, int]:
    """Where the request line is: the first quoted field that starts with a method."""
    m = re.search(r'"([A-Z]{3,10}) ([^" ]*)', line)
    return (m.start(2), m.end(2)) if m else (0, 0)


_DIGITS = re.compile(r"\d+")
_QUERY_VALUE = re.compile(r"=([^&\s\"]+)")


def _varied_request(target: str, rng: random.Random) -> str:
    def digits(m: re.Match) -> str:
        return "".join(rng.choice("0123456789") for _ in m.group(0))

    target = _DIGITS.sub(digits, target)
    if "?" in target and rng.random() < 1 / 3:
        path, _, query = target.partition("?")
        query = _QUERY_VALUE.sub(
            lambda m: "=" + "".join(rng.choice("abcdefghijklmnop") for _ in m.group(1)), query
        )
        target = f"{path}?{query}"
    return target


def corpus_lines(shape: Shape) -> list[str]:
    lines = []
    for name in shape.files:
        path = CORPUS / name
        if not path.is_file():
            raise SystemExit(f"corpus file missing: {path} (the corpus lives in ../shared/corpus)")
        lines += path.read_bytes().decode("utf-8", "surrogateescape").splitlines()
    only = re.compile(shape.only)
    return [x for x in lines if x.strip() and only.search(x)]


def lines(shape: Shape, target_bytes: int, seed: int = 1) -> Iterator[str]:
    rng = random.Random(seed)
    templates = corpus_lines(shape)
    clock = datetime(2026, 3, 29, 0, 30, tzinfo=UTC)  # crosses nothing in particular; UTC
    addresses: list[str] = []
    client = re.compile(shape.client)
    times = [(re.compile(rx), fn) for rx, fn in shape.times]
    mixed = [(m.every, m.piece(), re.compile(m.into)) for m in shape.mixed]
    written = n = 0
    while written < target_bytes:
        n += 1
        line = rng.choice(templates)
        clock += timedelta(microseconds=int(rng.expovariate(1 / 4000)))
        for rx, fn in times:
            line = rx.sub(lambda m, fn=fn, t=clock: fn(t, m.group(0)), line, count=1)
        lo, hi = _request_span(line)
        if hi > lo:
            line = line[:lo] + _varied_request(line[lo:hi], rng) + line[hi:]
        m = client.search(line)
        if m:
            if not addresses or rng.random() < 0.05:  # a new client one line in 20
                octets = (
                    rng.randrange(1, 224),
                    rng.randrange(256),
                    rng.randrange(256),
                    rng.randrange(1, 255),
                )
                addresses.append(".".join(map(str, octets)))
            line = line[: m.start(1)] + rng.choice(addresses) + line[m.end(1) :]
        for every, piece, into in mixed:
            m = into.search(line) if n % every == 0 else None
            if m:
                line = line[: m.start(1)] + piece + line[m.end(1) :]
        written += len(line) + 1
        yield line


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", choices=sorted(SHAPES))
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--output")
    ap.add_argument("--list", action="store_true", help="the shapes and the format each is read with")
    a = ap.parse_args(argv)
    if a.list or not a.shape:
        for name, s in SHAPES.items():
            print(f"{name:16} {s.note}\n{'':16} --format {s.format!r}")
        return
    with open(a.output or sys.stdout.fileno(), "w", encoding="utf-8", errors="surrogateescape") as out:
        buf: list[str] = []
        for line in lines(SHAPES[a.shape], int(a.gb * 1e9), a.seed):
            buf.append(line)
            if len(buf) >= 10_000:
                out.write("\n".join(buf) + "\n")
                buf.clear()
        out.write("\n".join(buf) + ("\n" if buf else ""))


if __name__ == "__main__":
    main()
