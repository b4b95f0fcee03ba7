"""The timeline: what happened bucket by bucket of request start (rate, latency percentiles
of every timer, status classes, bytes, cache hits, queues, requests in flight), the server
events on it, and the saturation it shows.

The SQL is queries/timeline.sql (per-bucket aggregates) and queries/span.sql; the requests
in flight come from logan.answer.in_flight (exact, numpy); this module sizes the buckets, fills the
--by columns into their {series} slot (names from the DIMENSIONS whitelist only), cuts a long
span into slices of whole buckets answered one after another (queries/bucket_starts.sql:
memory that does not grow with the store), joins the two answers and gives every bucket of
the span a row, empty ones included, so a gap in traffic shows as zero requests rather than
as a missing row.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import duckdb

from logan.answer.filters import filter_sql, within
from logan.answer.in_flight import in_flight
from logan.answer.views import dimension_columns, query_path, run_records, series_sql
from logan.errors import LoganError
from logan.store import ANSWER_MEMORY_MB, within_memory
from logan.units import parse_duration

if TYPE_CHECKING:
    import pandas as pd

# Bucket widths a timeline picks from (seconds): the smallest giving at most TARGET buckets.
NICE_WIDTHS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
TARGET_BUCKETS = 100
# Filled with zeros in a bucket without requests (the other columns stay empty there).
COUNTS = ("requests", "rate", "status_1xx", "status_2xx", "status_3xx", "status_4xx", "status_5xx",
          "status_499", "status_500", "status_502", "status_503", "status_504", "bytes",
          "bytes_per_s")  # fmt: skip


def bucket_width_us(first_us: int, last_us: int, bucket: str | int | None = None) -> int:
    """The bucket width: `bucket` as given ('10s', '1m', microseconds), else the smallest
    round width that cuts the span into at most about TARGET_BUCKETS buckets."""
    if bucket is not None:
        width = bucket if isinstance(bucket, int) else parse_duration(bucket, "--bucket")
        if width < 1_000:
            raise LoganError(f"--bucket {bucket}: use at least 1ms")
        return width
    span_s = max(last_us - first_us, 0) / 1e6
    for w in NICE_WIDTHS_S:
        if span_s / w <= TARGET_BUCKETS:
            return w * 1_000_000
    return NICE_WIDTHS_S[-1] * 1_000_000


@dataclass
class Saturation:
    """Requests in flight held at a ceiling while latency grew: a concurrency limit."""

    series: str
    ceiling: int
    start: object  # pandas Timestamp, UTC
    end: object
    latency_ratio: float  # p95 (or queue p95) in the plateau over its median elsewhere
    measure: str

    def __str__(self) -> str:
        minutes = (self.end - self.start).total_seconds() / 60
        held = f"{minutes:.0f} min" if minutes >= 2 else f"{minutes * 60:.0f} s"
        where = f"{self.series}: " if self.series else ""
        return (
            f"{where}in flight held at {self.ceiling} for {held} ({self.start:%H:%M:%S} to "
            f"{self.end:%H:%M:%S} UTC) while {self.measure} rose {self.latency_ratio:.0f}x: "
            "a concurrency limit, e.g. Apache MaxRequestWorkers or a pool's maxconn"
        )


SHOWN_EVENTS = 30  # under a table for people; the library gives them all


@dataclass
class Story:
    """A timeline with what happened on it: the server events and the saturation seen."""

    frame: pd.DataFrame
    events: pd.DataFrame
    saturation: list[Saturation] = field(default_factory=list)

    def notes(self) -> list[str]:
        said = [str(s) for s in self.saturation]
        for e in self.events.head(SHOWN_EVENTS).itertuples():
            said.append(f"{e.ts:%Y-%m-%d %H:%M:%S} {e.kind} {e.server or ''}: {e.text}")
        if len(self.events) > SHOWN_EVENTS:
            said.append(
                f"... and {len(self.events) - SHOWN_EVENTS:,} more events (logan sql: SELECT * FROM events)"
            )
        return said


def story(
    con: duckdb.DuckDBPyConnection,
    by: Sequence[str] | str = (),
    bucket: str | int | None = None,
    **filters: object,
) -> Story:
    """The timeline (see `timeline`) with the server events in its span and its saturation."""
    frame = timeline(con, by, bucket, **filters)
    dims = dimension_columns(by) if by else []
    return Story(frame, events_between(con, frame), saturation(frame, dims))


def events_between(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame) -> pd.DataFrame:
    """The server events (queries/server_events.sql) from the timeline's first bucket to
    the end of its last."""
    import pandas as pd

    events = run_records(con, query_path("server_events").read_text()).frame()
    if events.empty:
        return events
    lo = frame["start"].min().tz_localize(None)
    hi = lo + pd.Timedelta(microseconds=int(frame["bucket_us"].max() - frame["bucket_us"].min()
                                             + frame["width_us"].iloc[0]))  # fmt: skip
    return events[(events["ts"] >= lo) & (events["ts"] < hi)].reset_index(drop=True)


# A plateau: at least this many buckets in a row with in_flight_max within CEILING_SLACK of
# the series' highest, and latency in them at least LATENCY_RISE times its median elsewhere.
PLATEAU_BUCKETS = 3
CEILING_SLACK = 0.03
LATENCY_RISE = 3.0


def saturation(frame: pd.DataFrame, dims: Sequence[str] = ()) -> list[Saturation]:
    """Each series' plateau of requests in flight at its ceiling while p95 (or the queue's
    p95) grew: the picture of a concurrency limit."""
    if "in_flight_max" not in frame.columns:
        return []
    found = []
    groups = frame.groupby(list(dims), dropna=False, sort=False) if dims else [((), frame)]
    for key, rows in groups:
        name = " ".join(str(k) for k in (key if isinstance(key, tuple) else (key,)))
        found += _plateaus(rows.reset_index(drop=True), name)
    return found


def _plateaus(rows: pd.DataFrame, name: str) -> list[Saturation]:
    import numpy as np

    ceiling = rows["in_flight_max"].max()
    if not ceiling or ceiling != ceiling or ceiling < 2:
        return []
    at = (rows["in_flight_max"] >= ceiling * (1 - CEILING_SLACK)).to_numpy()
    found = []
    for first, last in _runs(at):
        if last - first + 1 < PLATEAU_BUCKETS:
            continue
        inside = np.zeros(len(rows), dtype=bool)
        inside[first : last + 1] = True
        for measure, col in (("p95", "p95_us"), ("queue p95", "queue_p95_us")):
            if col not in rows.columns:
                continue
            before, during = rows.loc[~inside, col].median(), rows.loc[inside, col].median()
            if before and during and during / before >= LATENCY_RISE:
                width = rows["width_us"].iloc[0]
                end = rows["start"].iloc[last] + _td(width)
                found.append(
                    Saturation(name, int(ceiling), rows["start"].iloc[first], end, during / before, measure)
                )
                break
    return found


def _runs(flags: object) -> list[tuple[int, int]]:
    """(first, last) index of each run of True."""
    runs, start = [], None
    for i, f in enumerate(list(flags) + [False]):
        if f and start is None:
            start = i
        elif not f and start is not None:
            runs.append((start, i - 1))
            start = None
    return runs


def _td(us: int) -> object:
    import pandas as pd

    return pd.Timedelta(microseconds=int(us))


def timeline(
    con: duckdb.DuckDBPyConnection,
    by: Sequence[str] | str = (),
    bucket: str | int | None = None,
    since: str | datetime | None = None,
    until: str | datetime | None = None,
    env: str | Sequence[str] | None = None,
    method: str | Sequence[str] | None = None,
    status: str | None = None,
    path_glob: str | None = None,
) -> pd.DataFrame:
    """One row per bucket of request start (per --by group), every bucket of the span.

    Columns: the --by columns; start (the bucket's start, UTC), bucket_us (the same in epoch
    microseconds), width_us; requests, rate (per second); p50_us, p95_us, p99_us, max_us of
    the duration and, for each of upstream/ttfb/queue the log carries, <timer>_p50_us ...
    <timer>_max_us; status_1xx..status_5xx, status_499/500/502/503/504, error_share (5xx);
    bytes, bytes_per_s; cache_hit_ratio; server_queue_avg/max, backend_queue_avg/max
    (HAProxy); in_flight_max and in_flight_mean (exact, from ts_start/ts_end). Columns the
    log has nothing for are left out.
    """
    cols = dimension_columns(by) if by else []
    where, params = filter_sql(
        dict(since=since, until=until, env=env, method=method, status=status, path_glob=path_glob)
    )
    span = run_records(con, query_path("span").read_text(), where, params).rows[0]
    if not span["requests"]:
        raise LoganError(
            "no requests to put on a timeline (none the filters keep, or none with a start time)"
        )
    width = bucket_width_us(span["first_us"], span["last_us"], bucket)
    lo = span["first_us"] // width * width
    hi = (span["last_us"] // width + 1) * width
    long = span["requests"] > SLICE_REQUESTS and isinstance(con, duckdb.DuckDBPyConnection)  # Spark: at once
    slices = time_slices(con, lo, hi, width, where, params) if long else []
    per_bucket, flight = within_memory(
        con, ANSWER_MEMORY_MB, lambda: _aggregate_and_sweep(con, cols, lo, hi, width, where, params, slices)
    )
    import pandas as pd

    grid = _on_grid(per_bucket, cols, lo, hi, width)
    for c in cols:  # a column with no value at all comes as floats from one side, objects from the other
        grid[c], flight[c] = grid[c].astype(object), flight[c].astype(object)
    df = grid.merge(flight, on=[*cols, "bucket_us"], how="left")
    df.insert(len(cols), "start", pd.to_datetime(df["bucket_us"], unit="us", utc=True))
    df.insert(len(cols) + 2, "width_us", width)
    df = df.drop(columns=[c for c in df.columns if df[c].isna().all() and c not in (*cols, *COUNTS)])
    return df.sort_values([*cols, "bucket_us"], na_position="last", ignore_index=True)


# A timeline of more requests than this is answered a slice of time at a time (whole
# buckets, at most this many requests each): the percentiles hold every time of a bucket
# until its end, and the sweep every start and end. Whole, 20 M HAProxy requests took
# 1.7-1.9 GB (935 MiB for the aggregate, 1,056 MiB for the sweep).
SLICE_REQUESTS = 2_000_000


def time_slices(
    con: duckdb.DuckDBPyConnection, lo: int, hi: int, width: int, where: str, params: list
) -> list[tuple[int, int]]:
    """[from, to) in epoch microseconds, from lo to hi, each whole buckets of at most
    SLICE_REQUESTS request starts (a bucket of more is a slice of its own), in order."""
    counts = run_records(con, query_path("bucket_starts").read_text(), where, [*params, width]).rows
    slices, first, held = [], lo, 0
    for row in counts:
        if held and held + row["requests"] > SLICE_REQUESTS:
            slices.append((first, row["bucket_us"]))
            first, held = row["bucket_us"], 0
        held += row["requests"]
    return [*slices, (first, hi)]


def _aggregate_and_sweep(
    con: duckdb.DuckDBPyConnection,
    cols: list[str],
    lo: int,
    hi: int,
    width: int,
    where: str,
    params: list,
    slices: list[tuple[int, int]],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """queries/timeline.sql's buckets and the requests in flight, a slice of time after
    another (`slices`; none: at once). On DuckDB the sweep (numpy and C, one core) runs on a
    cursor of its own beside the aggregate: both let go of the GIL, and pandas is imported
    while they run. Another engine runs one after the other, at once."""
    if not isinstance(con, duckdb.DuckDBPyConnection):
        flight = in_flight(con, cols, lo, hi, width, where, params)
        return _aggregate(con, cols, width, where, params, []), flight
    with ThreadPoolExecutor(max_workers=1) as beside, con.cursor() as other:
        flying = beside.submit(in_flight, other, cols, lo, hi, width, where, params, slices)
        return _aggregate(con, cols, width, where, params, slices), flying.result()


def _aggregate(
    con: duckdb.DuckDBPyConnection, cols: list[str], width: int, where: str, params: list, slices: list
) -> pd.DataFrame:
    """queries/timeline.sql over each slice (or everything), as one frame."""
    sql = series_sql("timeline", cols)
    parts = [within(where, params, a, b) for a, b in slices] or [(where, params)]
    found = [run_records(con, sql, part_where, [*part_params, width]) for part_where, part_params in parts]
    for more in found[1:]:
        found[0].rows += more.rows
    return found[0].frame()


def _on_grid(per_bucket: pd.DataFrame, cols: list[str], lo: int, hi: int, width: int) -> pd.DataFrame:
    """Every bucket from lo to hi for every series: a bucket without a request start gets a
    row of zero counts."""
    import pandas as pd

    grid = pd.DataFrame({"bucket_us": range(lo, hi, width)})
    if cols:
        grid = per_bucket[cols].drop_duplicates().merge(grid, how="cross")
    df = grid.merge(per_bucket, on=[*cols, "bucket_us"], how="left")
    present = [c for c in COUNTS if c in df.columns]
    df[present] = df[present].fillna(0)
    for c in present:
        if c not in ("rate", "bytes_per_s"):
            df[c] = df[c].astype("int64")
    return df
