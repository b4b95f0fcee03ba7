"""How fast `logan stats` answers from a store of several million requests.

    python benchmarks/stats_benchmark.py --gb 1 --runs 5
    python benchmarks/stats_benchmark.py --gb 1 --rows 5000000 --by indirector   # 5 M rows

Builds (once) a store from the generated Apache combined_D log of that size (or its first
--rows lines) with the Puppet profile (benchmarks/data/), then times
`python -m logan stats --db STORE --by X` in a fresh process per run (what a user waits
for, Python start-up included) and the library call `stats.stats(con, by=[X])` on an open
store (what a notebook waits for). Medians printed.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb

from logan.answer import stats
from logan.read.ingest import ingest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ingest_benchmark import log_file  # noqa: E402


def store_for(gb: float, rows: int | None) -> Path:
    part = f"_{rows}rows" if rows else ""
    db = HERE / "data" / f"apache_{gb:g}GB{part}_puppet.duckdb"
    if not db.exists():
        log = log_file("apache", gb)
        if rows:
            head = db.with_suffix(".log")
            with open(log, "rb") as src, open(head, "wb") as dst:
                dst.writelines(line for _, line in zip(range(rows), src, strict=False))
            log = head
        t = time.perf_counter()
        s = ingest([str(log)], store=str(db), format="combined_D", profile="puppet")
        if rows:
            log.unlink()
        print(f"built {db.name}: {s.rows:,} rows in {time.perf_counter() - t:.1f} s "
              f"({s.mb_per_s:.0f} MB/s with classification)", file=sys.stderr)  # fmt: skip
        s.store.close()
    return db


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rows", type=int, help="only the first ROWS lines of the log")
    ap.add_argument("--by", nargs="+", default=["indirector", "environment", "requester"])
    a = ap.parse_args()
    db = store_for(a.gb, a.rows)
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT count(*) FROM requests").fetchall()[0][0]
    print(f"\nstore: {db.name}, {rows:,} requests, median of {a.runs} runs\n")
    print("| --by | `logan stats --db` (fresh process) | `stats.stats()` (open store) |")
    print("|---|---|---|")
    for by in a.by:
        cli, lib = [], []
        for _ in range(a.runs):
            t = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "logan", "stats", "--db", str(db), "--by", by],
                check=True, capture_output=True,
            )  # fmt: skip
            cli.append(time.perf_counter() - t)
            t = time.perf_counter()
            stats.stats(con, by=[by])
            lib.append(time.perf_counter() - t)
        print(f"| {by} | {statistics.median(cli):.2f} s | {statistics.median(lib):.2f} s |")


if __name__ == "__main__":
    main()
