"""Requests in flight per time bucket, exactly: the most at once and the mean over the
bucket's time, from every request's start and end (a request is in flight over
[ts_start, ts_end)).

numpy over the starts and ends of queries/request_spans.sql, no Python loop per request:

- the number in flight only rises at a start, so a bucket's maximum is the number in flight
  at its own start or just after one of the starts in it; at an instant t that number is
  #(starts <= t) - #(ends <= t), two binary searches in the sorted starts and ends;
- a bucket's mean is the sum of each request's overlap with it over its width: a request
  within one bucket adds its duration; one that spans several adds its head and its tail to
  the first and last, and the whole width to each between (a difference array).

queries/in_flight.sql is the same answer as a sweep in SQL (what an engine without numpy
runs, e.g. Spark); the tests hold the two and a brute-force count to the same numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import duckdb
import numpy as np

from logan.answer.views import run_cursor, series_sql

if TYPE_CHECKING:
    import pandas as pd


def in_flight(
    con: duckdb.DuckDBPyConnection,
    cols: Sequence[str],
    lo: int,
    hi: int,
    width: int,
    where: str = "",
    params: Sequence = (),
) -> pd.DataFrame:
    """Per series (the `cols`) and bucket of `width` from `lo` to `hi` (epoch us): bucket_us,
    in_flight_max, in_flight_mean."""
    import pandas as pd

    cur = run_cursor(con, series_sql("request_spans", cols), where, params)
    if not cols:
        spans = cur.fetchnumpy()
        return _one(spans["s"], spans["e"], lo, hi, width)
    frames = []
    for key, rows in cur.df().groupby(list(cols), dropna=False, sort=False):
        one = _one(rows["s"].to_numpy(), rows["e"].to_numpy(), lo, hi, width)
        for c, v in zip(cols, key if isinstance(key, tuple) else (key,), strict=True):
            one.insert(0, c, v)
        frames.append(one)
    columns = [*cols, "bucket_us", "in_flight_max", "in_flight_mean"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def _one(s: np.ndarray, e: np.ndarray, lo: int, hi: int, width: int) -> pd.DataFrame:
    import pandas as pd

    s = np.sort(np.asarray(s, dtype=np.int64), kind="stable")  # timsort: a log is nearly sorted
    e = np.sort(np.asarray(e, dtype=np.int64), kind="stable")
    edges = np.arange(lo, hi + 1, width, dtype=np.int64)
    return pd.DataFrame({
        "bucket_us": edges[:-1],
        "in_flight_max": most_in_flight(s, e, edges),
        "in_flight_mean": overlap_sums(s, e, lo, hi, width) / width,
    })  # fmt: skip


def level_at(s: np.ndarray, e: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Requests in flight at each instant t: started at or before it, not ended by it."""
    return np.searchsorted(s, t, side="right") - np.searchsorted(e, t, side="right")


def most_in_flight(s: np.ndarray, e: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per bucket between consecutive edges: the most requests in flight at any instant
    (s and e sorted)."""
    most = level_at(s, e, edges[:-1])  # at each bucket's start
    inside = (s >= edges[0]) & (s < edges[-1])
    starts = s[inside]
    if len(starts):
        after = np.append(level_at(s, e, starts), -1)  # -1: what the empty buckets at the end reduce
        first = np.searchsorted(starts, edges[:-1], side="left")
        has = first < np.searchsorted(starts, edges[1:], side="left")
        peaks = np.maximum.reduceat(after, first)  # over each bucket's starts
        most = np.where(has, np.maximum(most, peaks), most)
    return most


def overlap_sums(s: np.ndarray, e: np.ndarray, lo: int, hi: int, width: int) -> np.ndarray:
    """Per bucket: the microseconds of all requests' time inside it (their overlaps)."""
    n = (hi - lo) // width
    s, e = np.clip(s, lo, hi), np.clip(e, lo, hi)
    keep = e > s
    s, e = s[keep] - lo, e[keep] - lo
    first, last = s // width, (e - 1) // width  # the buckets holding the first and last microsecond
    one = first == last
    total = np.bincount(first[one], weights=(e - s)[one], minlength=n)
    many = ~one
    total += np.bincount(first[many], weights=((first + 1) * width - s)[many], minlength=n)
    total += np.bincount(last[many], weights=(e - last * width)[many], minlength=n)
    between = np.bincount(first[many] + 1, minlength=n + 1) - np.bincount(last[many], minlength=n + 1)
    total += np.cumsum(between)[:n] * width
    return total[:n]
