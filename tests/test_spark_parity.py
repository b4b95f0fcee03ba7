"""Every view in queries/ gives the same answer on DuckDB and on Spark over the same Parquet.

The test enumerates queries/*.sql when it is collected, so a view added later is checked
too: a view that cannot be translated faithfully fails here until it is made portable or
given a reviewed variant. Both engines read the Parquet folder `logan export` wrote; the
DuckDB answer is the reference. Counts, sums, min and max and every text are identical;
averages, shares and standard deviations equal to 1e-9 relative (their sums run in another
order); percentiles identical (the translation computes DuckDB's interpolation).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
import sqlglot
from spark_support import shaped_store, spark  # noqa: F401  (spark: the shared session fixture)

from logan.answer.views import DIMENSIONS, query_sql, series_sql
from logan.engines.export import export
from logan.engines.transpile import to_spark
from logan.resources import queries_dir
from logan.store import open_store

VIEWS = sorted(p.stem for p in queries_dir().glob("*.sql"))
# the groupings a templated view is checked with: text, numbers, NULL groups, two columns
# (route and environment group alike; each case is a Spark job, on a shared machine)
BY = ["indirector", "status", "cache", "server"]
SLO_US = 5000
PERCENTILE = re.compile(r"(^|_)p\d+(_us)?$")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("parity")
    with open_store(shaped_store(tmp), read_only=True) as store:
        export(store.con, tmp / "parquet")
    return tmp / "parquet"


@pytest.fixture(scope="module")
def both(spark, folder):  # noqa: ANN001, ANN201, F811
    """(DuckDB connection, Spark session), each with `requests` over the folder."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for table in ("requests", "events"):
        glob = str(folder / table / "*" / "*.parquet")
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{glob}', hive_partitioning = true)")
        spark.read.parquet(str(folder / table)).createOrReplaceTempView(table)
    # the windows `logan incidents` hands queries/incident_shares.sql: the hours of the
    # data, every other one an incident's
    first = con.execute(
        "SELECT min(date_diff('microsecond', TIMESTAMP '1970-01-01', ts_start)) FROM requests"
    ).fetchone()[0]
    hours = [(first // 3_600_000_000 + h) * 3_600_000_000 for h in range(96)]
    buckets = [(b, "incident" if k % 2 == 0 else "baseline") for k, b in enumerate(hours)]
    con.execute("CREATE TABLE incident_buckets (bucket_us BIGINT, part VARCHAR)")
    con.executemany("INSERT INTO incident_buckets VALUES (?, ?)", buckets)
    spark.createDataFrame(buckets, "bucket_us BIGINT, part STRING").createOrReplaceTempView(
        "incident_buckets"
    )
    return con, spark


def cases() -> list[tuple[str, str | None]]:
    found = []
    for name in VIEWS:
        text = (queries_dir() / f"{name}.sql").read_text()
        if "{dimensions}" in text:
            found += [(name, by) for by in BY]
        elif "{series}" in text:  # the timeline's views: one series column, as --by gives it
            found.append((name, "indirector"))
        else:
            found.append((name, None))
    return found


def view_sql(con: duckdb.DuckDBPyConnection, name: str, by: str | None) -> tuple[str, list]:
    """The view's SQL as logan runs it, and the values of its `?` parameters (the bucket
    width, the span the timeline covers) read off the data."""
    text = (queries_dir() / f"{name}.sql").read_text()
    sql = (
        series_sql(name, [by] if by else [])
        if "{series}" in text
        else query_sql(name, [by] if by else (), SLO_US)
    )
    hour = 3_600_000_000
    lo, hi = con.execute(
        "SELECT min(date_diff('microsecond', TIMESTAMP '1970-01-01', ts_start)), "
        "max(date_diff('microsecond', TIMESTAMP '1970-01-01', ts_end)) FROM requests"
    ).fetchone()
    lo, hi = lo // hour * hour, (hi // hour + 1) * hour
    since, until = con.execute("SELECT min(ts_start), max(ts_start) FROM requests").fetchone()
    params = {
        "timeline": [hour],
        "bucket_starts": [hour],
        "in_flight": [lo, hi, hour],
        "incident_shares": [hour, since, until],
        # the day's start, in the middle of the data: the hours before it are the day before
        "requesters_grew": [since + (until - since) / 2],
    }
    return sql, params.get(name, [])


@pytest.mark.parametrize(("name", "by"), cases())
def test_view_is_the_same_on_spark(both, name, by):
    con, session = both
    sql, params = view_sql(con, name, by)
    cur = con.execute(sql, params)
    columns = [d[0] for d in cur.description]
    expected = [tuple(_plain(v) for v in row) for row in cur.fetchall()]
    answer = session.sql(to_spark(sql), args=params or None)
    assert answer.columns == columns
    got = [tuple(_plain(v) for v in row) for row in answer.collect()]
    assert len(got) == len(expected) and expected, (
        f"{name}: {len(got)} rows on Spark, {len(expected)} on DuckDB"
    )
    if not _ordered(sql):  # no ORDER BY: the same rows, in any order
        expected, got = sorted(expected, key=_key), sorted(got, key=_key)
    for want, have in zip(expected, got, strict=True):
        for col, w, h in zip(columns, want, have, strict=True):
            assert _same(col, w, h), f"{name} by {by}: {col} is {h!r} on Spark, {w!r} on DuckDB\n{want}"


def test_every_view_is_checked():
    # the list above is read from the folder, not written down: a new file is a new case
    assert set(VIEWS) == {p.stem for p in queries_dir().glob("*.sql")} and len(VIEWS) >= 8
    assert {name for name, _ in cases()} == set(VIEWS)
    assert set(BY) <= set(DIMENSIONS)


def _plain(v: object) -> object:
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, list):
        return tuple(_plain(x) for x in v)
    return v


def _same(col: str, want: object, have: object) -> bool:
    if want is None or have is None:
        return want is None and have is None
    if isinstance(want, float) and not PERCENTILE.search(col):
        return math.isclose(want, have, rel_tol=1e-9, abs_tol=1e-12)
    return want == have and type(want) is type(have) or (isinstance(want, float) and want == have)


def _key(row: tuple) -> tuple:
    # floats may differ in their last digits: order by the exact columns first
    return tuple((v is None, str(v) if not isinstance(v, float) else "") for v in row) + tuple(
        (v is None, round(v, 6) if isinstance(v, float) else 0) for v in row
    )


def _ordered(sql: str) -> bool:
    return sqlglot.parse_one(sql, read="duckdb").args.get("order") is not None
