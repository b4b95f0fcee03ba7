"""What writing in batches costs DuckDB: a stored table written whole, in batches one after
another, and in batches two at a time.

    python benchmarks/batch_write.py STORE.duckdb
    python benchmarks/batch_write.py STORE.duckdb --rows 368640 --chunk 61440 --runs 3

An ingest writes a log in batches of whole row groups, each in a transaction of its own
(what a re-run resumes from). This holds the `requests_data` table of STORE (a store a
`logan ingest` wrote) in memory as Arrow, then writes it into a new file, with the ingest's
settings (two threads, insertion order not kept, one checkpoint at the end, row groups
not merged at it):

- **whole**: one INSERT of every row (what the write floor of shapes_benchmark.py does);
- **batches**: an INSERT and a COMMIT a batch of --rows rows, handed to DuckDB in chunks
  of --chunk rows, one batch after another (what an ingest does), with each INSERT's time;
- **two at a time**: the same batches, two connections each taking the next one.

Wall and CPU (every thread) of each, medians of --runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import duckdb
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest_benchmark import DATA  # noqa: E402

SETTINGS = (
    "SET threads = 2",
    "SET preserve_insertion_order = false",
    "SET enable_progress_bar = false",
    "SET checkpoint_threshold = '10GB'",
    "SET max_vacuum_tasks = 0",
)


def write(batches: list[pa.Table], target: Path, lanes: int) -> tuple[float, float, list[float]]:
    """(wall, CPU, each INSERT's seconds) of writing `batches` into a new file at `target`,
    `lanes` connections taking the next batch (0: one INSERT of them all)."""
    con = duckdb.connect(str(target))
    for s in SETTINGS:
        con.execute(s)
    con.register("first", batches[0])
    con.execute("CREATE TABLE t AS SELECT * FROM first LIMIT 0")
    con.unregister("first")
    taken, lock, times = [0], threading.Lock(), []

    def lane(c: duckdb.DuckDBPyConnection) -> None:
        while True:
            with lock:
                k = taken[0]
                taken[0] += 1
            if k >= len(batches):
                return
            c.register("b", batches[k])
            c.execute("BEGIN")
            t0 = time.perf_counter()
            c.execute("INSERT INTO t SELECT * FROM b")
            times.append(time.perf_counter() - t0)
            c.execute("COMMIT")
            c.unregister("b")

    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    if lanes == 0:
        con.register("whole", pa.concat_tables(batches))
        con.execute("INSERT INTO t SELECT * FROM whole")
    elif lanes == 1:
        lane(con)
    else:
        threads = [threading.Thread(target=lane, args=(con.cursor(),)) for _ in range(lanes)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    con.execute("CHECKPOINT")
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    con.close()
    return wall, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime, times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", type=Path)
    ap.add_argument("--rows", type=int, default=245_760, help="rows a batch (default: two row groups)")
    ap.add_argument("--chunk", type=int, default=61_440, help="rows a chunk handed to DuckDB")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    held = duckdb.connect()
    held.execute(f"ATTACH '{a.store}' AS src (READ_ONLY)")
    table = held.sql("SELECT * FROM src.requests_data").to_arrow_table()
    batches = [
        pa.Table.from_batches(table.slice(i, a.rows).to_batches(max_chunksize=a.chunk))
        for i in range(0, table.num_rows, a.rows)
    ]
    print(f"\n{table.num_rows:,} rows of {a.store.name}, {len(batches)} batches of {a.rows:,} in chunks"
          f" of {a.chunk:,}; medians of {a.runs}\n")  # fmt: skip
    print("| written | wall | CPU | each INSERT |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        for name, lanes in (("whole", 0), ("batches", 1), ("two at a time", 2)):
            walls, cpus, each = [], [], []
            for k in range(a.runs):
                target = Path(tmp) / f"{lanes}_{k}.duckdb"
                wall, cpu, times = write(batches, target, lanes)
                walls.append(wall)
                cpus.append(cpu)
                each += times
                os.remove(target)
            spread = f"{min(each):.2f}-{max(each):.2f} s" if lanes else ""
            walls_s = ", ".join(f"{w:.2f}" for w in walls)
            wall, cpu = statistics.median(walls), statistics.median(cpus)
            print(f"| {name} | {wall:.2f} s ({walls_s}) | {cpu:.2f} s | {spread} |", flush=True)


if __name__ == "__main__":
    main()
