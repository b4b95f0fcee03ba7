"""How fast `logan timeline` and `logan incidents` answer from a store of 10 M requests, and
how the cost grows with the requests and the buckets.

    python benchmarks/timeline_benchmark.py                  # 10 M requests, 3 runs
    python benchmarks/timeline_benchmark.py --rows 1000000 --runs 5

Builds (once, in benchmarks/data/) a store of a day of synthetic traffic made in DuckDB, in
the order of request start as a log holds them: requests at random instants with a burst
from one requester group in the evening, log-normal durations (a few seconds long ones, so
requests overlap), six endpoints, four servers, some 5xx. Times `logan timeline --db STORE
-o csv` and `logan incidents --db STORE -o json` in a fresh process per run (what a user
waits for, Python start-up included), and the exact requests-in-flight computation alone on
an open store (logan.answer.in_flight). Medians printed (wall, CPU seconds of user and
system time in all threads, peak RSS), with the machine's load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from logan.answer.in_flight import in_flight
from logan.store import append_requests, open_store

DATA = Path(__file__).resolve().parent / "data"
DAY_US = 86_400_000_000
T0_US = 1_700_000_000_000_000  # 2023-11-14 22:13:20 UTC
CHUNK = 2_000_000


def rows_sql(first: int, n: int) -> str:
    """n synthetic requests (numbers first..first+n): values from hashes of the number, so
    every chunk is the same whatever the chunking."""
    u = "(hash(i, {k}) % 1000003) / 1000003.0"  # a uniform draw per request and purpose
    return f"""
    WITH draws AS (
      SELECT i, {u.format(k=1)} AS u1, {u.format(k=2)} AS u2, {u.format(k=3)} AS u3,
             {u.format(k=4)} AS u4, {u.format(k=5)} AS u5
      FROM range({first}, {first + n}) AS t(i)
    ), shaped AS (
      SELECT *,
        CASE WHEN u5 < 0.05 THEN 0.80 + 0.01 * u1 ELSE u1 END AS day_frac,  -- 5%: a burst at 19:12
        CAST(exp(9.5 + 1.3 * sqrt(-2 * ln(greatest(u2, 1e-9))) * cos(6.2831853 * u3)) AS BIGINT) AS dur
      FROM draws
    )
    SELECT
      make_timestamp(CAST({T0_US} + day_frac * {DAY_US} AS BIGINT)) AS ts_start,
      make_timestamp(CAST({T0_US} + day_frac * {DAY_US} AS BIGINT) + dur) AS ts_end,
      dur AS duration_us,
      CASE WHEN u4 < 0.004 THEN 503 WHEN u4 < 0.02 THEN 404 ELSE 200 END AS status,
      'GET' AS method,
      ['catalog', 'file_metadata', 'file_content', 'report', 'node', 'status'][1 + CAST(floor(u3 * 6) AS INT)]
        AS indirector,
      CASE WHEN u5 < 0.05 THEN 'bots' ELSE 'fleet-' || CAST(CAST(floor(u4 * 4) AS INT) AS VARCHAR) END
        AS requester_group,
      'node-' || CAST(i % 20000 AS VARCHAR) AS requester,
      CASE WHEN u2 < 0.8 THEN 'production' ELSE 'staging' END AS environment,
      'be_app' AS backend,
      'app' || CAST(i % 4 AS VARCHAR) AS server,
      CAST(200 + u1 * 5000 AS BIGINT) AS bytes_sent
    FROM shaped
    """


def store_for(rows: int) -> Path:
    db = DATA / f"timeline_{rows}.duckdb"
    if db.exists():
        return db
    DATA.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    made = duckdb.connect()  # all the rows, in the order of their start as a log has them
    made.execute(f"CREATE TABLE made AS SELECT * FROM ({rows_sql(0, rows)}) ORDER BY ts_start")
    with open_store(db) as store:
        for first in range(0, rows, CHUNK):
            append_requests(store.con, made.execute(f"SELECT * FROM made LIMIT {CHUNK} OFFSET {first}").df())
    print(f"built {db.name}: {rows:,} requests in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    return db


def fresh(cmd: list[str], runs: int) -> tuple[float, float, float]:
    """Median wall seconds, median CPU seconds (user + system, all threads) and median peak
    RSS (MB) of a command run in a fresh process: on a busy machine the CPU time is what the
    answer costs, the wall time what the machine's other work added to it."""
    walls, cpus, rss = [], [], []
    with tempfile.NamedTemporaryFile("r") as peak:
        # GNU time reports the peak RSS: a child forked from this process would count this
        # process's own memory (the store it built) in its peak
        timed = ["/usr/bin/time", "-f", "%M", "-o", peak.name, *cmd]
        for _ in range(runs):
            t = time.perf_counter()
            child = subprocess.Popen(timed, stdout=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)  # this child's own rusage (with its child's)
            walls.append(time.perf_counter() - t)
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit(f"{' '.join(cmd)} failed")
            cpus.append(usage.ru_utime + usage.ru_stime)
            peak.seek(0)
            rss.append(int(peak.read().split()[-1]) / 1024)  # kilobytes
    return statistics.median(walls), statistics.median(cpus), statistics.median(rss)


def in_flight_alone(db: Path, width: int, runs: int) -> tuple[float, float]:
    """Median wall and CPU seconds of the requests-in-flight computation on an open store."""
    with open_store(db, read_only=True) as store:
        lo, hi = store.con.execute(
            "SELECT min(epoch_us(ts_start)), max(epoch_us(ts_start)) FROM requests"
        ).fetchone()
        lo, hi = lo // width * width, (hi // width + 1) * width
        walls, cpus = [], []
        for _ in range(runs):
            t, c = time.perf_counter(), time.process_time()
            in_flight(store.con, [], lo, hi, width)
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    db = store_for(a.rows)
    logan = [sys.executable, "-m", "logan"]
    print(f"{a.rows:,} requests, medians of {a.runs} runs, load average {os.getloadavg()[0]:.1f}")
    buckets = {None: "auto (15 min, 96 buckets)", "1m": "1 min, 1,440 buckets", "10s": "10 s, 8,640 buckets"}
    for bucket, said in buckets.items():
        opt = ["--bucket", bucket] if bucket else []
        tl = fresh([*logan, "timeline", "--db", str(db), "-o", "csv", *opt], a.runs)
        inc = fresh([*logan, "incidents", "--db", str(db), "-o", "json", *opt], a.runs)
        print(f"  buckets {said}: timeline {tl[0]:.2f} s ({tl[1]:.2f} CPU-s, {tl[2]:.0f} MB), "
              f"incidents {inc[0]:.2f} s ({inc[1]:.2f} CPU-s, {inc[2]:.0f} MB), fresh process")  # fmt: skip
    start = fresh([*logan, "--version"], a.runs)
    print(f"  start-up alone (logan --version): {start[0]:.2f} s ({start[1]:.2f} CPU-s, {start[2]:.0f} MB)")
    wall, cpu = in_flight_alone(db, 900_000_000, a.runs)
    print(f"  requests in flight alone (open store, 96 buckets): {wall:.2f} s ({cpu:.2f} CPU-s)")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
