"""Spark local mode against DuckDB for `logan stats --by indirector` and `logan timeline`,
at several sizes.

    python benchmarks/spark_benchmark.py --rows 1000000 10000000 --runs 3
    python benchmarks/spark_benchmark.py --log gen.log --rows 1000000   # a log generated before

One million requests are generated (`python -m logan.generate`, Puppet traffic) and read
into a store with the Puppet profile, once (benchmarks/data/). A store of k million is that
store's rows k times, each copy k days later: k days of the same traffic, k partitions in
Parquet. Each store is exported (`logan export`, timed) and the same library calls answer from
both: `stats_records(con, by=["indirector"], top=None)` (the table of `logan stats --by
indirector`) and `timeline.story(con, ())` (`logan timeline`: its buckets and requests in
flight) on the DuckDB store and on a Spark session (local[*], the default) over the Parquet
folder. The Spark session's start is timed apart; the first answer (the JVM compiling the
plan) apart from the warm ones. Printed: wall seconds (median of the warm runs), the CPU
seconds of those runs (user + system, this process and Spark's JVM, which does the work in
local mode), and the load average when each figure was taken: on a shared machine the wall
time means something only beside it.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from logan.answer.stats import stats_records
from logan.answer.timeline import story
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


class Clock:
    """Wall and CPU seconds of a call: this process's CPU and the JVM's (its own process,
    alive the whole run, so RUSAGE_CHILDREN would not see it: read from /proc)."""

    def __init__(self, jvm_pid: int | None):
        self.jvm_pid = jvm_pid

    def cpu(self) -> float:
        own = resource.getrusage(resource.RUSAGE_SELF)
        total = own.ru_utime + own.ru_stime
        if self.jvm_pid is not None:
            fields = Path(f"/proc/{self.jvm_pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
        return total

    def timed(self, fn, runs: int) -> dict:  # noqa: ANN001
        """The first run, then the median wall and CPU time of `runs` more, and the load."""
        walls, cpus = [], []
        for _ in range(runs + 1):
            t, c = time.perf_counter(), self.cpu()
            fn()
            walls.append(time.perf_counter() - t)
            cpus.append(self.cpu() - c)
        return {
            "first": walls[0], "first_cpu": cpus[0], "wall": statistics.median(walls[1:]),
            "cpu": statistics.median(cpus[1:]), "load": os.getloadavg()[0],
        }  # fmt: skip


QUESTIONS = {
    "stats --by indirector": lambda con: stats_records(con, by=["indirector"], top=None),
    "timeline": lambda con: story(con, ()),
}


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
    jvm = int(session.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    duck_clock, spark_clock = Clock(None), Clock(jvm)
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; Spark session start {started:.1f} s")
    print("| requests | question | export | DuckDB: wall, CPU | Spark local, first: wall, CPU "
          "| Spark local, warm: wall, CPU |")  # fmt: skip
    print("|---:|---|---:|---:|---:|---:|")
    for rows in a.rows:
        db = store_of(rows, base)
        folder = db.with_suffix(".parquet")
        with open_store(db, read_only=True) as store:
            t = time.perf_counter()
            export(store.con, folder)
            exported = time.perf_counter() - t
            duck = {q: duck_clock.timed(lambda f=f: f(store.con), a.runs) for q, f in QUESTIONS.items()}
        con = SparkConnection(session, folder)
        for q, f in QUESTIONS.items():
            d, sp = duck[q], spark_clock.timed(lambda f=f, con=con: f(con), a.runs)
            print(
                f"| {rows:,} | `{q}` | {exported:.1f} s "
                f"| {d['wall']:.2f} s, {d['cpu']:.2f} s (load {d['load']:.1f}) "
                f"| {sp['first']:.1f} s, {sp['first_cpu']:.1f} s "
                f"| {sp['wall']:.1f} s, {sp['cpu']:.1f} s (load {sp['load']:.1f}) |",
                flush=True,
            )


if __name__ == "__main__":
    main()
