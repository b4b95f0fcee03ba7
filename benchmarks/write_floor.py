"""How fast can DuckDB write the table logan builds, with nothing to parse?

    python benchmarks/write_floor.py --gb 1 --runs 3

Ingests the generated Apache log once (classification off; the store is cached under
benchmarks/data/), holds its stored table in memory, then times writing that same table
into a new DuckDB file (CREATE TABLE AS + CHECKPOINT), as often as asked. No ingest into
an on-disk store can beat this figure: it is the write alone, the parse excluded.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest_benchmark import DATA, log_file  # noqa: E402

from logan import schema  # noqa: E402


def plain_store(log: Path) -> Path:
    db = DATA / f"{log.stem}_plain.duckdb"
    if not db.exists():
        print(f"ingesting {log.name} into {db.name}...", file=sys.stderr)
        tmp = db.with_suffix(".part")
        tmp.unlink(missing_ok=True)
        subprocess.run(
            [sys.executable, "-m", "logan", "ingest", str(log), "--db", str(tmp),
             "--format", "combined_D", "--profile", "none"],
            check=True, capture_output=True,
        )  # fmt: skip
        tmp.rename(db)
    return db


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    log = log_file("apache", a.gb)
    store = plain_store(log)
    con = duckdb.connect()
    con.execute(f"ATTACH '{store}' AS src (READ_ONLY)")
    con.execute(f"CREATE TABLE held AS SELECT * FROM src.{schema.REQUESTS_TABLE}")
    rows, cols = con.execute("SELECT count(*) FROM held").fetchall()[0][0], len(con.table("held").columns)
    walls = []
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        for k in range(a.runs):
            target = Path(tmp) / f"copy{k}.duckdb"
            con.execute(f"ATTACH '{target}' AS dst")
            t0 = time.perf_counter()
            con.execute("CREATE TABLE dst.t AS SELECT * FROM held")
            con.execute("CHECKPOINT dst")
            walls.append(time.perf_counter() - t0)
            con.execute("DETACH dst")
    wall = statistics.median(walls)
    size = log.stat().st_size
    print(f"runs={[round(w, 2) for w in walls]}", file=sys.stderr)
    print(f"| write only: {rows:,} rows x {cols} stored columns of {log.name} into a new file "
          f"| {wall:.2f} s | {size / 1e6 / wall:,.0f} MB/s of log |")  # fmt: skip


if __name__ == "__main__":
    main()
