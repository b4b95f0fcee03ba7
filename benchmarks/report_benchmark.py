"""How long does the nightly report of a busy day take, in a fresh process, charts included?

    python benchmarks/report_benchmark.py --rows 10000000 --runs 3

Builds (once, cached under benchmarks/data/) a store holding a day of `--rows` requests
and a tenth as many on the day before and on the same weekday a week before (what the
headline compares with), written by SQL straight into the store's table: a Puppet-like
shape (indirectors, routes, a few thousand URLs, a thousand requesters, 2% errors), the
store as an ingest leaves it. Then times `logan report --db STORE --day DAY` in a new
process, as cron runs it, and each section's own time in one process.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from logan import schema
from logan.nightly.report import SECTIONS, ReportOptions, build_report, day_period
from logan.store import ensure_columns, open_store

DATA = Path(__file__).resolve().parent / "data"
DAY = date(2026, 11, 23)
COLUMNS = ["ts_start", "ts_end", "duration_us", "status", "method", "indirector", "route", "path", "query",
           "vhost", "requester", "client", "bytes_sent", "user_agent", "environment"]  # fmt: skip

# One row per request number n of a day starting at $day: every value derived from n by
# hashing, so the store is the same on every machine.
ROWS_SQL = """
INSERT INTO requests_data BY NAME
SELECT
  ? AS ingest_id, n AS line_no,
  ?::TIMESTAMP + to_microseconds(CAST(n * (86400000000 / ?) AS BIGINT)) AS ts_start,
  ?::TIMESTAMP + to_microseconds(CAST(n * (86400000000 / ?) AS BIGINT) + d) AS ts_end,
  d AS duration_us,
  CASE WHEN hash(n, 1) % 50 = 0 THEN 503 WHEN hash(n, 2) % 20 = 0 THEN 304 ELSE 200 END AS status,
  CASE WHEN k < 80 THEN 'GET' WHEN k < 92 THEN 'PUT' ELSE 'POST' END AS method,
  CASE WHEN k < 60 THEN 'file_metadata' WHEN k < 80 THEN 'file_content' WHEN k < 92 THEN 'report'
       ELSE 'catalog' END AS indirector,
  '/puppet/v3/' || CASE WHEN k < 60 THEN 'file_metadata' WHEN k < 80 THEN 'file_content'
       WHEN k < 92 THEN 'report' ELSE 'catalog' END || '/{name}' AS route,
  '/puppet/v3/x/' || CAST(hash(n, 3) % 4000 AS VARCHAR) AS path,
  'environment=production' AS query,
  'puppet' AS vhost,
  'node' || CAST(hash(n, 4) % 1000 AS VARCHAR) AS requester,
  '10.0.' || CAST(hash(n, 4) % 1000 // 250 AS VARCHAR) || '.' || CAST(hash(n, 4) % 250 AS VARCHAR) AS client,
  CAST(200 + hash(n, 3) % 4000 AS BIGINT) AS bytes_sent,
  'Puppet/8.' || CAST(hash(n, 4) % 10 AS VARCHAR) AS user_agent,
  'production' AS environment
FROM (
  SELECT n, hash(n, 0) % 100 AS k,
         CAST(500 + (hash(n, 5) % 20000) * CASE WHEN hash(n, 0) % 100 >= 92 THEN 40 ELSE 1 END AS BIGINT) AS d
  FROM range(?) AS t(n)
)
"""


def build_store(db: Path, rows: int) -> None:
    """The day, the day before and a week before, each one ingest of its own."""
    tmp = db.with_suffix(".part")
    tmp.unlink(missing_ok=True)
    with open_store(tmp) as store:
        ensure_columns(store.con, COLUMNS)
        days = [(DAY, rows), (date.fromordinal(DAY.toordinal() - 1), rows // 10),
                (date.fromordinal(DAY.toordinal() - 7), rows // 10)]  # fmt: skip
        for ingest_id, (day, n) in enumerate(days, 1):
            start = day_period(day).start
            store.con.execute(ROWS_SQL, [ingest_id, start, n, start, n, n])
            store.con.execute(
                "INSERT INTO ingests (ingest_id, source, dialect, format, first_line, lines, rows, rejects,"
                " events, bytes, started_at, seconds) VALUES (?, ?, 'apache', 'combined_D', 1, ?, ?, 0, 0,"
                " NULL, now()::TIMESTAMP, 0)",
                [ingest_id, f"/var/log/puppet/{day}.log", n, n],
            )
        store.con.execute("CHECKPOINT")
    tmp.rename(db)


def fresh_process(db: Path, out: Path, sections: list[str]) -> tuple[float, float, float]:
    """Seconds, CPU seconds (every thread) and peak RSS (MB) of `logan report` in a new
    process. The CPU time is the figure to trust on a shared machine: the wall time there
    grows with everyone else's load."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    chosen = [a for key in sections for a in ("--section", key)]
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "logan", "report", "--db", str(db), "--day", DAY.isoformat(),
                    "--out", str(out), *chosen], check=True)  # fmt: skip
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return seconds, cpu, after.ru_maxrss / 1024


def per_section(db: Path) -> None:
    with open_store(db, read_only=True) as store:
        period = day_period(DAY)
        for spec in SECTIONS:
            t0, c0 = time.perf_counter(), time.process_time()
            build_report(store.con, period, ReportOptions(), [spec.key])
            print(
                f"  {spec.key:<14} {time.perf_counter() - t0:6.2f} s, {time.process_time() - c0:6.2f} CPU-s"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    DATA.mkdir(exist_ok=True)
    db = DATA / f"report_{args.rows}.duckdb"
    if not db.exists():
        t0 = time.perf_counter()
        build_store(db, args.rows)
        print(f"built {db.name} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    with open_store(db, read_only=True) as store:
        n = store.con.execute(f"SELECT count(*) FROM {schema.REQUESTS_TABLE}").fetchone()[0]
    print(f"store: {n:,} rows, {db.stat().st_size / 1e6:.0f} MB; the day: {args.rows:,} requests")
    everything = [s.key for s in SECTIONS]
    for name, sections in (
        ("every section", everything),
        ("without cache", [k for k in everything if k != "cache"]),
    ):
        with tempfile.TemporaryDirectory() as tmp:
            runs = [fresh_process(db, Path(tmp) / "report.html", sections) for _ in range(args.runs)]
            size = (Path(tmp) / "report.html").stat().st_size
        wall = statistics.median(s for s, _, _ in runs)
        print(f"logan report, {name} (fresh process): median {wall:.2f} s, "
              f"{statistics.median(c for _, c, _ in runs):.2f} CPU-s; runs "
              f"{', '.join(f'{s:.2f}' for s, _, _ in runs)} s; peak RSS {max(m for *_, m in runs):.0f} MB; "
              f"page {size / 1e3:.0f} kB; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print("per section (one process, warm):")
    per_section(db)


if __name__ == "__main__":
    main()
