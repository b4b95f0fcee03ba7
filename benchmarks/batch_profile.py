"""Where a classified ingest's batches go: each batch's INSERT in time, then one batch's
INSERT taken apart.

    python benchmarks/batch_profile.py benchmarks/data/shape_realistic_1GB.log --format combined_D
    python benchmarks/batch_profile.py LOG --format F --batch 5 --runs 7

Runs `logan ingest LOG --format F --db FILE` (default profile) in this process, and prints
when each batch's transaction began and ended, counted from the start of the process, and
when the command returned. Then, for batch --batch (its lines as the reader handed them
over), each a median of --runs:

- **INSERT**: the batch's INSERT again, into a new file holding the same empty table, in a
  transaction of its own: wall time and CPU (every thread);
- **keys**: the side of that INSERT that classifies the batch's distinct request lines
  (the `__w` of rows.insert_sql's direct form), alone;
- **each answer**: the same with one of its columns asked for at a time (DuckDB leaves out
  what that column does not need).

Only for a format the C split reads with its keys numbered (an ingest's direct form).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

T0 = time.perf_counter()

import duckdb  # noqa: E402

import logan.read.ingest as ingest  # noqa: E402
from logan.cli import status_of  # noqa: E402
from logan.read import classify, native  # noqa: E402

KEYS = "WITH __w AS ("  # where the keys' side of the direct INSERT begins
ROWS = "\nSELECT __r.*"  # and where it ends


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(con: duckdb.DuckDBPyConnection, sql: str, params: dict | None, runs: int) -> tuple[float, float]:
    """Median wall and CPU of `sql`, each run in a transaction rolled back."""
    walls, cpus = [], []
    for _ in range(runs):
        con.execute("BEGIN")
        c0, t0 = cpu(), time.perf_counter()
        con.execute(sql, params).fetchall()
        walls.append(time.perf_counter() - t0)
        cpus.append(cpu() - c0)
        con.execute("ROLLBACK")
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("log")
    ap.add_argument("--format", required=True)
    ap.add_argument("--batch", type=int, default=5, help="the batch taken apart (1 is the first)")
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="logan-batch-"))
    kept: dict = {}
    ingest_batch = ingest._ingest_batch

    def watched(st, r, batch, out):  # noqa: ANN001, ANN202
        n = len(kept.setdefault("times", [])) + 1
        read = batch.parsed
        if n == a.batch and isinstance(read, native.Read) and ingest._classify_direct(r, read):
            kept.update(raw=read.raw, keys=read.keys, sql=r.fast_insert_direct, params=r.params)
        t = time.perf_counter()
        said = ingest_batch(st, r, batch, out)
        kept["times"].append((t - T0, time.perf_counter() - T0, batch.lines))
        return said

    ingest._ingest_batch = watched
    if status_of(["ingest", a.log, "--format", a.format, "--db", str(work / "store.duckdb")]):
        sys.exit("the ingest failed")
    print(f"\nthe command returned at {time.perf_counter() - T0:.2f} s")
    for n, (began, ended, lines) in enumerate(kept["times"], 1):
        print(f"batch {n:3d}: {began:6.2f} -> {ended:6.2f} s, {lines:,} lines")
    if "sql" not in kept:
        sys.exit(f"batch {a.batch}: not classified in its INSERT (no such batch, or no numbered keys)")
    sql, params = kept["sql"], kept["params"]
    assert KEYS in sql and ROWS in sql, "rows.insert_sql's direct form changed: update KEYS and ROWS"
    keys_side = sql[sql.index(KEYS) : sql.index(ROWS)]

    con = duckdb.connect(str(work / "batch.duckdb"))
    with duckdb.connect(str(work / "store.duckdb"), read_only=True) as store:
        table = store.execute("SELECT sql FROM duckdb_tables() WHERE table_name = 'requests_data'").fetchone()
    con.execute(table[0])
    con.execute("SET preserve_insertion_order = false")
    classify.register_route_template(con)
    con.register("__raw", kept["raw"])
    con.register("__raw_keys", kept["keys"])
    lines, keys = kept["raw"].num_rows, kept["keys"].num_rows
    print(f"\nbatch {a.batch}: {lines:,} lines, {keys:,} keys; medians of {a.runs}")
    wall, used = timed(con, sql, params, a.runs)
    print(f"  INSERT          {wall:.3f} s, CPU {used:.3f} s")
    columns = [d[0] for d in con.execute(f"{keys_side}\nSELECT * FROM __w LIMIT 0", params).description]
    wall, used = timed(
        con,
        f"{keys_side}\nSELECT count(*), {', '.join(f'count({c})' for c in columns)} FROM __w",
        params,
        a.runs,
    )
    print(f"  keys            {wall:.3f} s, CPU {used:.3f} s")
    for c in columns:
        wall, used = timed(con, f"{keys_side}\nSELECT count({c}) FROM __w", params, a.runs)
        print(f"    {c:<17s} {wall:.3f} s")
    con.close()
    for f in work.iterdir():
        os.remove(f)
    work.rmdir()


if __name__ == "__main__":
    main()
