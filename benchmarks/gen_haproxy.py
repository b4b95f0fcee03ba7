"""HAProxy logs for benchmarks and tests: logan's own generated traffic (logan.generate,
deterministic for a seed) as HAProxy `option httplog` lines behind an rsyslog prefix.

    python3 benchmarks/gen_haproxy.py --mb 200 -o /tmp/haproxy.log

The timers are consistent the way HAProxy's are: Ta = TR + Tw + Tc + Tr + Td, the accept
date [%tr] is the request's start, lines leave when the request ends (out of time order),
a few requests are denied (403 PR--, <NOSRV>, -1 timers) and a few "Server ... is DOWN/UP"
messages sit among them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import TextIO

from logan.generate import Request, requests

SERVERS = ["app1", "app2", "app3", "app4"]


def httplog_line(r: Request, i: int) -> str:
    """One request as `option httplog` writes it, with the rsyslog file prefix. The
    prefix's time is the end of the request (when HAProxy logged it), in local time."""
    ms = r.duration_us // 1000
    end = r.ts + timedelta(microseconds=r.duration_us)
    start = r.ts.strftime("%d/%b/%Y:%H:%M:%S.") + f"{r.ts.microsecond // 1000:03d}"
    prefix = f"{end.strftime('%b')} {end.day:2d} {end.strftime('%H:%M:%S')} lb1 haproxy[4242]: "
    client = f"{r.client}:{40000 + i % 20000}"
    server = SERVERS[i % len(SERVERS)]
    if i % 997 == 0:  # denied by a rule before any server: 403, -1 timers
        return (
            f"{prefix}{client} [{start}] fe_puppet~ be_puppet/<NOSRV> 0/-1/-1/-1/{ms} 403 192 - - PR-- "
            f'12/12/0/0/0 0/0 "{r.method} {r.uri} HTTP/1.1"\n'
        )
    tr_ = i % 3
    tw = 0 if i % 50 else i % 7
    tc = 1 if i % 4 else 0
    resp = max(ms - tr_ - tw - tc - 1, 0)
    ta = tr_ + tw + tc + resp + 1
    return (
        f"{prefix}{client} [{start}] fe_puppet~ be_puppet/{server} {tr_}/{tw}/{tc}/{resp}/{ta} "
        f"{r.status} {r.size + 180} - - ---- 12/12/{3 + i % 5}/{1 + i % 3}/0 0/0 "
        f'"{r.method} {r.uri} HTTP/1.1"\n'
    )


def _event(r: Request, i: int) -> str:
    t = r.ts
    prefix = f"{t.strftime('%b')} {t.day:2d} {t.strftime('%H:%M:%S')} lb1 haproxy[4242]: "
    state = (
        "DOWN, reason: Layer4 timeout, check duration: 2001ms" if i % 2 else "UP, reason: Layer7 check passed"
    )
    return f"{prefix}Server be_puppet/{SERVERS[i % len(SERVERS)]} is {state}.\n"


def lines(n: int, seed: int = 1, events_every: int = 100_000) -> Iterator[str]:
    """n request lines (plus an event line every `events_every`), in order of request end."""
    pending: list[tuple[datetime, str]] = []
    for i, r in enumerate(requests(n, seed)):
        pending.append((r.ts + timedelta(microseconds=r.duration_us), httplog_line(r, i)))
        if events_every and i % events_every == events_every - 1:
            pending.append((r.ts, _event(r, i // events_every)))
        if len(pending) >= 4096:
            pending.sort(key=lambda p: p[0])
            yield from (line for _, line in pending[:2048])
            del pending[:2048]
    pending.sort(key=lambda p: p[0])
    yield from (line for _, line in pending)


def write(out: TextIO, n: int | None = None, mb: float | None = None, seed: int = 1) -> int:
    """Write n request lines, or as many as make `mb` megabytes; return the bytes written."""
    limit = int(mb * 1e6) if mb else None
    total = 0
    buf: list[str] = []
    for line in lines(n if n is not None else 1 << 40, seed):
        buf.append(line)
        total += len(line)
        if len(buf) >= 8192:
            out.write("".join(buf))
            buf.clear()
        if limit is not None and total >= limit:
            break
    out.write("".join(buf))
    return total


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int)
    ap.add_argument("--mb", type=float)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args(argv)
    if a.lines is None and a.mb is None:
        a.lines = 5000
    if a.output == "-":
        write(sys.stdout, a.lines, a.mb, a.seed)
    else:
        with open(a.output, "w", encoding="utf-8") as fh:
            write(fh, a.lines, a.mb, a.seed)


if __name__ == "__main__":
    main()
