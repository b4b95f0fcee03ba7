"""Ingest MB/s of nginx and Varnish logs against the Apache combined_D path on generated logs
of the same size (same requests, each server's own layout).

    python3 benchmarks/bench_dialects.py [MB] [workdir]

The logs are generated (seeded) into `workdir` (default /tmp/logan-bench) and ingested into an
on-disk store each, classification off, so the figures compare parsing and loading only.
"""

from __future__ import annotations

import random
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from logan.ingest import ingest

PATHS = [
    "/production/file_metadata/modules/ssh/sshd_config",
    "/production/catalog/node{n}.example.com",
    "/puppet/v3/node/node{n}.example.com?environment=production",
    "/api/users/{n}",
    "/static/app.{n}.js",
]
AGENTS = [
    "Ruby",
    "curl/8.5.0",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0",
]

# The same request in each layout: (client, time text, request line, status, bytes, seconds,
# upstream seconds text, cache verdict, user agent).
LAYOUTS = {
    "apache:combined_D": lambda c, t, r, s, b, d, u, k, a: (
        f'{c} - - [{t}] "{r}" {s} {b} {round(d * 1e6)} "-" "{a}"'
    ),
    "nginx:timed": lambda c, t, r, s, b, d, u, k, a: f'{c} - - [{t}] "{r}" {s} {b} "-" "{a}" {d:.3f} {u} {k}',
    "varnish:timed": lambda c, t, r, s, b, d, u, k, a: (
        f'{c} - - [{t}] "{r.replace(" /", " http://www.example.com/", 1)}" {s} {b} "-" "{a}" '
        f"{round(d * 1e6)} {d * 0.8:.6f} {k.lower() if k != '-' else 'pass'}"
    ),
}


def generate(path: Path, layout: str, mb: int, seed: int = 7) -> None:
    rnd = random.Random(seed)
    line = LAYOUTS[layout]
    t0 = datetime(2026, 11, 22, 0, 0, 0)
    target = mb * 1_000_000
    written = 0
    with open(path, "w", encoding="utf-8") as fh:
        i = 0
        while written < target:
            chunk = []
            for _ in range(10_000):
                i += 1
                d = rnd.expovariate(1 / 0.08)
                cache = rnd.choice(["HIT", "MISS", "MISS", "-"])
                ups = (
                    "-"
                    if cache == "HIT"
                    else (f"{d * 0.9:.3f}" if rnd.random() > 0.01 else f"0.500, {d * 0.9:.3f}")
                )
                ts = (t0 + timedelta(milliseconds=i * 13)).strftime("%d/%b/%Y:%H:%M:%S +0000")
                req = f"GET {rnd.choice(PATHS).format(n=rnd.randrange(5000))} HTTP/1.1"
                chunk.append(
                    line(
                        f"10.0.{rnd.randrange(256)}.{rnd.randrange(256)}",
                        ts,
                        req,
                        200,
                        rnd.randrange(100, 90000),
                        d,
                        ups,
                        cache,
                        rnd.choice(AGENTS),
                    )
                )
            text = "\n".join(chunk) + "\n"
            fh.write(text)
            written += len(text)


def main() -> None:
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    work = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(tempfile.gettempdir()) / "logan-bench"
    work.mkdir(parents=True, exist_ok=True)
    results = {}
    for layout in LAYOUTS:
        log = work / f"{layout.replace(':', '_')}_{mb}MB.log"
        if not log.exists():
            generate(log, layout, mb)
        store = work / f"{layout.replace(':', '_')}.duckdb"
        store.unlink(missing_ok=True)
        s = ingest([str(log)], store=str(store), format=layout, profile="none")
        results[layout] = s.mb_per_s
        print(
            f"{layout:20s} {s.total('nbytes') / 1e6:8.1f} MB {s.rows:>9} rows {s.rejects} rejects "
            f"{s.seconds:6.2f} s {s.mb_per_s:7.1f} MB/s",
            flush=True,
        )
        store.unlink(missing_ok=True)
    base = results["apache:combined_D"]
    for layout, v in results.items():
        print(f"{layout:20s} {base / v:5.2f}x the Apache time per MB")


if __name__ == "__main__":
    main()
