"""A deterministic generator of Puppet-master-like traffic, for sample logs and benchmarks.

Several environments; file_metadata dominates the count, catalogs dominate the time, agents
PUT reports; a few 404s and 500s; Puppet 3 paths and some Puppet 4+ (/puppet/v3) ones.
A traffic spike sits in the middle of every log (tenth of the lines from 40% on): five
times the request rate, and every request slower as the master saturates. The same seed
gives the same bytes. Apache writes a line when the request ends while %t is
its start, so lines come slightly out of time order, as in real logs.

    python -m logan.generate --lines 5000000 -o big.log      # about 0.7 GB
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

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


def requests(n: int, seed: int = 1, start: datetime | None = None) -> Iterator[Request]:
    rng = np.random.default_rng(seed)
    t = start or datetime(2013, 11, 5, 19, 0, 0, tzinfo=UTC)
    shares = np.array([e[1] for e in ENDPOINTS])
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
            yield Request(
                client=f"10.{node_i // 250}.{node_i % 250}.{10 + node_i % 7}",
                ts=t,
                method=method,
                uri=_uri(endpoint, env, nodes[node_i], rng, v3=node_i % 5 == 0),
                status=status,
                size=size,
                duration_us=max(duration, 150),
            )


def apache_combined_d(r: Request) -> str:
    ts = r.ts.strftime("%d/%b/%Y:%H:%M:%S +0000")
    return f'{r.client} - - [{ts}] "{r.method} {r.uri} HTTP/1.1" {r.status} {r.size} {r.duration_us} "-" "Ruby"\n'


FORMATTERS = {"apache": apache_combined_d}


def write(n: int, out, dialect: str = "apache", seed: int = 1) -> None:  # noqa: ANN001
    """Write n lines; lines leave in order of request end, as a server writes them."""
    fmt = FORMATTERS[dialect]
    pending: list[tuple[datetime, str]] = []
    for r in requests(n, seed):
        pending.append((r.ts + timedelta(microseconds=r.duration_us), fmt(r)))
        if len(pending) >= 4096:
            pending.sort(key=lambda p: p[0])
            out.write("".join(line for _, line in pending[:2048]))
            del pending[:2048]
    pending.sort(key=lambda p: p[0])
    out.write("".join(line for _, line in pending))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=5000)
    ap.add_argument("--dialect", default="apache", choices=sorted(FORMATTERS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args(argv)
    if a.output == "-":
        write(a.lines, sys.stdout, a.dialect, a.seed)
    else:
        with open(a.output, "w", encoding="utf-8") as fh:
            write(a.lines, fh, a.dialect, a.seed)


if __name__ == "__main__":
    main()
