"""Spark local mode against DuckDB for `logan stats --by indirector`, at several sizes.

    python benchmarks/spark_benchmark.py --rows 1000000 10000000 --runs 3
    python benchmarks/spark_benchmark.py --log gen.log --rows 1000000   # a log generated before

One million requests are generated (`python -m logan.generate`, Puppet traffic) and read
into a store with the Puppet profile, once (benchmarks/data/). A store of k million is that
store's rows k times, each copy k days later: k days of the same traffic, k partitions in
Parquet. Each store is exported (`logan export`, timed) and the same library call answers
from both: `stats_records(con, by=["indirector"], top=None)` on the DuckDB store and on a
Spark session (local[*], the default) over the Parquet folder. The Spark session's start
is timed apart; the first Spark answer (the JVM compiling the plan) apart from the warm
ones. Medians printed, with the machine's load: the figures only mean something beside it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from logan.answer.stats import stats_records
from logan.engines.export import export
from logan.engines.session import spark_session
from logan.engines.spark import SparkConnection
from logan.store import open_store

DATA = Path(__file__).resolve().parent / "data"
BASE = 1_000_000


def base_store(log: Path | None) -> Path:
    db = DATA / "spark_1M_puppet.duckdb"
    if db.exists():
        return db
    DATA.mkdir(exist_ok=True)
    if log is None:
        log = DATA / "spark_1M.log"
        subprocess.run(
            [sys.executable, "-m", "logan.generate", "--lines", str(BASE), "-o", str(log)], check=True
        )
    subprocess.run(["logan", "ingest", str(log), "--db", str(db), "--profile", "puppet"], check=True)
    return db


def store_of(rows: int, base: Path) -> Path:
    """`rows` requests: the base store's rows, copied rows // 1M times a day apart."""
    copies = rows // BASE
    if copies <= 1:
        return base
    db = DATA / f"spark_{copies}M_puppet.duckdb"
    if db.exists():
        return db
    shutil.copy(base, db)
    with open_store(db) as store:
        # from the base file, not from the table being added to (its copies would be copied)
        store.con.execute("ATTACH ? AS base (READ_ONLY)", [str(base)])
        for day in range(1, copies):
            store.con.execute(
                "INSERT INTO requests_data SELECT * REPLACE (ts_start + to_days(?) AS ts_start, "
                "ts_end + to_days(?) AS ts_end) FROM base.requests_data",
                [day, day],
            )
    return db


def timed(fn, runs: int) -> tuple[float, float]:  # noqa: ANN001
    """(first run, median of the runs after it) in seconds."""
    times = []
    for _ in range(runs + 1):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times[0], statistics.median(times[1:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, nargs="+", default=[BASE, 10 * BASE])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--log", type=Path, help="a generated log of 1 M lines to start from")
    ap.add_argument("--master", default="local[*]")
    a = ap.parse_args()
    base = base_store(a.log)
    t = time.perf_counter()
    session = spark_session(a.master, {"spark.driver.memory": "4g", "spark.ui.enabled": "false"})
    started = time.perf_counter() - t
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; Spark session start {started:.1f} s")
    print("| requests | export | DuckDB store | Spark local, first | Spark local, warm |")
    print("|---:|---:|---:|---:|---:|")
    for rows in a.rows:
        db = store_of(rows, base)
        folder = db.with_suffix(".parquet")
        with open_store(db, read_only=True) as store:
            t = time.perf_counter()
            export(store.con, folder)
            exported = time.perf_counter() - t
            _, duck = timed(lambda: stats_records(store.con, by=["indirector"], top=None), a.runs)  # noqa: B023
        con = SparkConnection(session, folder)
        first, warm = timed(lambda: stats_records(con, by=["indirector"], top=None), a.runs)  # noqa: B023
        print(f"| {rows:,} | {exported:.1f} s | {duck:.2f} s | {first:.1f} s | {warm:.1f} s |", flush=True)


if __name__ == "__main__":
    main()
