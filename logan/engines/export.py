"""A store as Parquet folders a cluster reads: `requests` partitioned hive-style by day
(`requests/day=2013-11-05/...parquet`), `events` by day too, `rejects` and `ingests`
whole.

DuckDB's COPY streams the rows to the files, so a store larger than memory exports in
bounded memory. Re-running adds only what is new: a day whose folder already holds as
many rows as the store has for it is left alone; a new day is written; a day the store
has more (or fewer) rows for than its folder (the store grew during that day) is written
again. `rejects` and `ingests` are small beside `requests` and are written whole.

The columns are those of the canonical `requests` view (logan/schema.py), route
templates applied, so an engine reading the folder needs no join; `day` (YYYY-MM-DD, UTC,
`undated` for a row without a start time) is the partition. Sources are a column, not a
partition: a source is any path or label, and a fleet's thousands of them would make
thousands of small files a day.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from logan.errors import LoganError

UNDATED = "undated"
# The partition of a row: its UTC start day.
_DAY_SQL = f"coalesce(strftime(ts_start, '%Y-%m-%d'), '{UNDATED}')"
_DAY_EVENTS_SQL = f"coalesce(strftime(ts, '%Y-%m-%d'), '{UNDATED}')"
# Tables written whole, one file each, and by-day tables with their day expression.
WHOLE_TABLES = ("rejects", "ingests")
DAY_TABLES = {"requests": _DAY_SQL, "events": _DAY_EVENTS_SQL}


@dataclass
class ExportSummary:
    """What an export wrote: per by-day table, the days written and the days left as they
    were; the rows written."""

    written: dict[str, list[str]] = field(default_factory=dict)
    kept: dict[str, list[str]] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)


def export(con: duckdb.DuckDBPyConnection, to: str | Path) -> ExportSummary:
    """Write the store behind `con` under the folder `to` (see the module's docstring)."""
    to = Path(to)
    if to.exists() and not to.is_dir():
        raise LoganError(f"--to {to} is a file, not a folder")
    to.mkdir(parents=True, exist_ok=True)
    summary = ExportSummary()
    for table, day_sql in DAY_TABLES.items():
        written, kept, rows = _export_by_day(con, table, day_sql, to / table)
        summary.written[table], summary.kept[table], summary.rows[table] = written, kept, rows
    for table in WHOLE_TABLES:
        summary.rows[table] = _export_whole(con, table, to / table)
    return summary


def _export_by_day(
    con: duckdb.DuckDBPyConnection, table: str, day_sql: str, folder: Path
) -> tuple[list[str], list[str], int]:
    in_store = dict(con.execute(f"SELECT {day_sql} AS day, count(*) FROM {table} GROUP BY day").fetchall())
    in_folder = _folder_counts(con, folder)
    todo = sorted(d for d, n in in_store.items() if in_folder.get(d) != n)
    kept = sorted(d for d, n in in_store.items() if in_folder.get(d) == n)
    for day in todo:  # a day written again replaces its files, never adds to them
        shutil.rmtree(folder / f"day={day}", ignore_errors=True)
    if not todo:
        return [], kept, 0
    folder.mkdir(parents=True, exist_ok=True)
    con.execute(
        f"COPY (SELECT *, {day_sql} AS day FROM {table} WHERE {day_sql} IN (SELECT unnest(?::VARCHAR[]))) "
        f"TO '{_quoted(folder)}' (FORMAT parquet, PARTITION_BY (day), OVERWRITE_OR_IGNORE, "
        "FILENAME_PATTERN 'part_{uuid}')",
        [todo],
    )
    return todo, kept, sum(in_store[d] for d in todo)


def _folder_counts(con: duckdb.DuckDBPyConnection, folder: Path) -> dict[str, int]:
    """Rows per day already under `folder` (read from the Parquet footers). A day with a
    file that has no footer (an export killed while it wrote the day) is left out: it is
    written again, where reading it failed every later run."""
    counts = {}
    for day_dir in sorted(folder.glob("day=*")) if folder.is_dir() else []:
        files = sorted(str(f) for f in day_dir.glob("*.parquet"))
        if files:
            try:
                counts[day_dir.name.removeprefix("day=")] = con.execute(
                    "SELECT count(*) FROM read_parquet(?)", [files]
                ).fetchall()[0][0]
            except duckdb.InvalidInputException:
                continue
    return counts


def _export_whole(con: duckdb.DuckDBPyConnection, table: str, folder: Path) -> int:
    """`table` as one file, replaced atomically (a reader never sees half of it)."""
    folder.mkdir(parents=True, exist_ok=True)
    final, partial = folder / f"{table}.parquet", folder / f".{table}.parquet.partial"
    con.execute(f"COPY (SELECT * FROM {table}) TO '{_quoted(partial)}' (FORMAT parquet)")
    partial.replace(final)
    return con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]


def _quoted(path: Path) -> str:
    # COPY takes its target as a literal, not a parameter: the folder a user named, quoted
    return str(path).replace("'", "''")
