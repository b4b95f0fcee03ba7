"""A deterministic generator of Puppet-master-like traffic, for sample logs and benchmarks.

Several environments; file_metadata dominates the count, catalogs dominate the time, agents
PUT reports; a few 404s and 500s; Puppet 3 paths and some Puppet 4+ (/puppet/v3) ones.
A traffic spike sits in the middle of every log (tenth of the lines from 40% on): five
times the request rate, and every request slower as the master saturates. The same seed
gives the same bytes. Apache writes a line when the request ends while %t is
its start, so lines come slightly out of time order, as in real logs.

    python -m logan.generate --lines 5000000 -o big.log      # about 0.7 GB
    python -m logan.generate --dialect haproxy --lines 5000   # nginx, varnish, haproxy too
    python -m logan.generate --realistic --lines 5000000 -o real.log   # about 1 GB

`--realistic` writes what a large Puppet fleet's master sees instead of the compact sample:
node names that keep coming (one node per 250 requests), file_metadata over thousands of
module files, the long query strings real agents send, sixteen agent versions; about 210
bytes a line and some 25,000 distinct paths per million lines, where the sample repeats a few
hundred. Speed figures are measured on these lines too: a log whose strings repeat favours
every reader.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TextIO

import numpy as np

ENVIRONMENTS = ["production"] * 12 + ["staging"] * 3 + ["dev"] * 2 + ["feature_ldap"]
MODULES = ["ssh", "ntp", "apache", "mysql", "users", "sudo", "puppet", "motd", "nginx", "postfix"]
FILES = ["sshd_config", "ntp.conf", "httpd.conf", "my.cnf", "sudoers", "motd", "nginx.conf", "main.cf"]

# (endpoint, share of requests, median duration in ms, spread (lognormal sigma), method)
ENDPOINTS = [
    ("file_metadata", 0.80, 9.0, 0.45, "GET"),
    ("file_metadatas", 0.07, 60.0, 0.5, "GET"),
    ("file_content", 0.04, 15.0, 0.6, "GET"),
    ("node", 0.02, 40.0, 0.4, "GET"),
    ("catalog", 0.035, 5500.0, 0.55, "POST"),
    ("report", 0.035, 1800.0, 0.6, "PUT"),
]


@dataclass
class Request:
    client: str
    ts: datetime  # start
    method: str
    uri: str
    status: int
    size: int
    duration_us: int
    agent: str = "Ruby"


# --realistic: what agents send in the wild (Puppet 3 to 8 on several Rubies and systems)
AGENTS = [
    f"Puppet/{p} Ruby/{r} ({a})"
    for p, r in [
        ("7.12.0", "2.7.4-p191"),
        ("7.21.0", "2.7.7-p221"),
        ("8.4.0", "3.2.2-p53"),
        ("6.28.0", "2.5.9-p229"),
    ]
    for a in ("x86_64-linux", "aarch64-linux", "x64-mingw32", "universal.x86_64-darwin21")
]
_QUERIES = {
    "file_metadatas": "links=follow&recurse=true&source_permissions=ignore&ignore=.svn&ignore=CVS"
    "&ignore=.git&ignore=.hg&checksum_type=sha256",
    "file_metadata": "links=manage&source_permissions=use",
    "file_content": "links=manage&source_permissions=ignore",
    "catalog": "facts_format=application%2Fjson&static_catalog=true&checksum_type=sha256.md5"
    "&fail_on_404=true&code_id=",
}


def _realistic_uri(endpoint: str, env: str, node: str, rng: np.random.Generator) -> str:
    """A Puppet 4+ request as agents send it: module files from a large tree, long queries."""
    mod = f"{MODULES[rng.integers(len(MODULES))]}_{rng.zipf(1.3) % 10}"
    f = f"{FILES[rng.integers(len(FILES))]}.{rng.zipf(1.5) % 8}"
    key = {
        "file_metadata": f"modules/{mod}/files/{f}",
        "file_metadatas": f"modules/{mod}/files",
        "file_content": f"modules/{mod}/templates/{f}.erb",
        "node": node,
        "catalog": node,
        "report": node,
    }[endpoint]
    query = _QUERIES.get(endpoint, "")
    if endpoint in ("node", "catalog"):
        query += f"{'&' if query else ''}transaction_uuid={rng.integers(1 << 62):016x}"
    if endpoint == "catalog":
        query = query.replace("code_id=", f"code_id={rng.integers(1 << 40):010x}")
    query += f"{'&' if query else ''}environment={env}"
    return f"/puppet/v3/{endpoint}/{key}?{query}"


def _uri(endpoint: str, env: str, node: str, rng: np.random.Generator, v3: bool) -> str:
    mod = MODULES[rng.integers(len(MODULES))]
    f = FILES[rng.integers(len(FILES))]
    key = {
        "file_metadata": f"modules/{mod}/{f}",
        "file_metadatas": "plugins?checksum_type=md5&links=manage&recurse=true",
        "file_content": f"modules/{mod}/{f}",
        "node": f"{node}?transaction_uuid={rng.integers(1 << 62):016x}",
        "catalog": node,
        "report": node,
    }[endpoint]
    if v3:
        sep = "&" if "?" in key else "?"
        return f"/puppet/v3/{endpoint}/{key}{sep}environment={env}"
    return f"/{env}/{endpoint}/{key}"


def requests(
    n: int, seed: int = 1, start: datetime | None = None, realistic: bool = False
) -> Iterator[Request]:
    rng = np.random.default_rng(seed)
    t = start or datetime(2013, 11, 5, 19, 0, 0, tzinfo=UTC)
    shares = np.array([e[1] for e in ENDPOINTS])
    if realistic:  # a fleet that grows with the log: a node per 250 requests
        nodes = [
            f"web-{i:06d}.{('ams', 'fra', 'iad', 'sjc')[i % 4]}.prod.example.com"
            for i in range(max(400, n // 250))
        ]
    else:
        nodes = [f"node{i:04d}.example.com" for i in range(400)]
    block = 10_000
    spike = range(int(n * 0.4), int(n * 0.5))
    for lo in range(0, n, block):
        m = min(block, n - lo)
        kinds = rng.choice(len(ENDPOINTS), size=m, p=shares / shares.sum())
        gaps = rng.exponential(40_000.0, size=m).astype(np.int64)  # about 25 requests/s
        noise = rng.lognormal(0.0, 1.0, size=m)
        for i in range(m):
            endpoint, _, median_ms, sigma, method = ENDPOINTS[kinds[i]]
            slow = 3.0 if lo + i in spike else 1.0
            t += timedelta(microseconds=int(gaps[i] / (5.0 if slow > 1 else 1.0)))
            node_i = int(rng.integers(len(nodes)))
            env = ENVIRONMENTS[node_i % len(ENVIRONMENTS)]
            duration = int(median_ms * 1000 * slow * noise[i] ** sigma)
            status = 200
            if endpoint == "file_metadata" and rng.random() < 0.01:
                status = 404
            elif endpoint == "catalog" and rng.random() < 0.02:
                status = 500
            size = {"catalog": 450_000, "report": 33, "file_metadatas": 60_000}.get(endpoint, 300)
            size = int(size * (0.5 + rng.random())) if status == 200 else 120
            if realistic:
                uri = _realistic_uri(endpoint, env, nodes[node_i], rng)
                client = f"10.{node_i // 62500 % 256}.{node_i // 250 % 250}.{node_i % 250}"
                agent = AGENTS[node_i % len(AGENTS)]
            else:
                uri = _uri(endpoint, env, nodes[node_i], rng, v3=node_i % 5 == 0)
                client, agent = f"10.{node_i // 250}.{node_i % 250}.{10 + node_i % 7}", "Ruby"
            yield Request(client, t, method, uri, status, size, max(duration, 150), agent)


def _clf_time(t: datetime) -> str:
    return t.strftime("%d/%b/%Y:%H:%M:%S +0000")


def _end(r: Request) -> datetime:
    return r.ts + timedelta(microseconds=r.duration_us)


def apache_combined_d(r: Request, i: int) -> str:
    """apache:combined_D; %t is the start of the request."""
    return (
        f'{r.client} - - [{_clf_time(r.ts)}] "{r.method} {r.uri} HTTP/1.1" {r.status} {r.size} '
        f'{r.duration_us} "-" "{r.agent}"\n'
    )


def _cache(r: Request, i: int) -> str:
    # a cache in front serves some file_metadata; catalogs and reports always pass
    if r.method != "GET":
        return "-"
    return "HIT" if "file_metadata/" in r.uri and i % 3 == 0 else "MISS"


def nginx_timed(r: Request, i: int) -> str:
    """nginx:timed; $time_local is when the request ended, $request_time has ms, a cache
    HIT has no upstream time, and 1 request in 100 tried a second upstream."""
    cache = _cache(r, i)
    total = r.duration_us / 1e6
    if cache == "HIT":
        upstream = "-"
        total = min(total, 0.002)
    elif i % 100 == 0:
        upstream = f"0.000, {max(total - 0.002, 0):.3f}"
    else:
        upstream = f"{max(total - 0.001, 0):.3f}"
    return (
        f'{r.client} - - [{_clf_time(_end(r))}] "{r.method} {r.uri} HTTP/1.1" {r.status} {r.size} '
        f'"-" "{r.agent}" {total:.3f} {upstream} {cache}\n'
    )


def varnish_timed(r: Request, i: int) -> str:
    """varnish:timed; %r carries the absolute URL, %D is microseconds, time_firstbyte
    seconds, handling hit/miss/pass."""
    handling = {"HIT": "hit", "MISS": "miss", "-": "pass"}[_cache(r, i)]
    duration = 900 if handling == "hit" else r.duration_us
    return (
        f'{r.client} - - [{_clf_time(r.ts)}] "{r.method} http://puppet:8140{r.uri} HTTP/1.1" '
        f'{r.status} {r.size} "-" "{r.agent}" {duration} {duration * 0.9 / 1e6:.6f} {handling}\n'
    )


HAPROXY_SERVERS = ["app1", "app2", "app3", "app4"]


def haproxy_httplog(r: Request, i: int) -> str:
    """haproxy:httplog behind an rsyslog prefix (the prefix time is when HAProxy logged:
    the end). Timers add up as HAProxy's do, Ta = TR + Tw + Tc + Tr + Td; 1 request in 997
    is denied before any server (403, <NOSRV>, -1 timers)."""
    ms = r.duration_us // 1000
    end = _end(r)
    start = r.ts.strftime("%d/%b/%Y:%H:%M:%S.") + f"{r.ts.microsecond // 1000:03d}"
    prefix = f"{end.strftime('%b')} {end.day:2d} {end.strftime('%H:%M:%S')} lb1 haproxy[4242]: "
    client = f"{r.client}:{40000 + i % 20000}"
    if i % 997 == 0:
        return (
            f"{prefix}{client} [{start}] fe_puppet~ be_puppet/<NOSRV> 0/-1/-1/-1/{ms} 403 192 - - PR-- "
            f'12/12/0/0/0 0/0 "{r.method} {r.uri} HTTP/1.1"\n'
        )
    tr, tw, tc = i % 3, (0 if i % 50 else i % 7), (1 if i % 4 else 0)
    resp = max(ms - tr - tw - tc - 1, 0)
    ta = tr + tw + tc + resp + 1
    server = HAPROXY_SERVERS[i % len(HAPROXY_SERVERS)]
    return (
        f"{prefix}{client} [{start}] fe_puppet~ be_puppet/{server} {tr}/{tw}/{tc}/{resp}/{ta} "
        f"{r.status} {r.size + 180} - - ---- 12/12/{3 + i % 5}/{1 + i % 3}/0 0/0 "
        f'"{r.method} {r.uri} HTTP/1.1"\n'
    )


def haproxy_event(r: Request, i: int) -> str:
    """A server going down or up, as HAProxy tells syslog between the requests."""
    t = r.ts
    prefix = f"{t.strftime('%b')} {t.day:2d} {t.strftime('%H:%M:%S')} lb1 haproxy[4242]: "
    state = (
        "DOWN, reason: Layer4 timeout, check duration: 2001ms" if i % 2 else "UP, reason: Layer7 check passed"
    )
    return f"{prefix}Server be_puppet/{HAPROXY_SERVERS[i % len(HAPROXY_SERVERS)]} is {state}.\n"


# dialect -> (the preset its lines follow, one request as a line)
FORMATTERS: dict[str, tuple[str, Callable[[Request, int], str]]] = {
    "apache": ("apache:combined_D", apache_combined_d),
    "nginx": ("nginx:timed", nginx_timed),
    "varnish": ("varnish:timed", varnish_timed),
    "haproxy": ("haproxy:httplog", haproxy_httplog),
}
EVENTS: dict[str, Callable[[Request, int], str]] = {"haproxy": haproxy_event}


def lines(
    n: int, dialect: str = "apache", seed: int = 1, events_every: int = 5000, realistic: bool = False
) -> Iterator[str]:
    """n request lines (and, for a server that logs events, one every `events_every`
    requests), in order of request end, as a server writes them."""
    fmt = FORMATTERS[dialect][1]
    event = EVENTS.get(dialect)
    pending: list[tuple[datetime, str]] = []
    for i, r in enumerate(requests(n, seed, realistic=realistic)):
        pending.append((_end(r), fmt(r, i)))
        if event and i % events_every == events_every - 1:
            pending.append((r.ts, event(r, i // events_every)))
        if len(pending) >= 4096:
            pending.sort(key=lambda p: p[0])
            yield from (line for _, line in pending[:2048])
            del pending[:2048]
    pending.sort(key=lambda p: p[0])
    yield from (line for _, line in pending)


def write(n: int, out: TextIO, dialect: str = "apache", seed: int = 1, realistic: bool = False) -> None:
    buf: list[str] = []
    for line in lines(n, dialect, seed, realistic=realistic):
        buf.append(line)
        if len(buf) >= 8192:
            out.write("".join(buf))
            buf.clear()
    out.write("".join(buf))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=5000)
    ap.add_argument("--dialect", default="apache", choices=sorted(FORMATTERS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--realistic", action="store_true", help="a large fleet's lines: long, varied (see above)"
    )
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args(argv)
    if a.output == "-":
        try:
            write(a.lines, sys.stdout, a.dialect, a.seed, a.realistic)
        except BrokenPipeError:  # `| head` has read enough: not an error
            sys.stderr.close()
    else:
        with open(a.output, "w", encoding="utf-8") as fh:
            write(a.lines, fh, a.dialect, a.seed, a.realistic)


if __name__ == "__main__":
    main()
