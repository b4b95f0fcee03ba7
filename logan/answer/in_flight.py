"""Requests in flight per time bucket, exactly: the most at once and the mean over the
bucket's time, from every request's start and end (a request is in flight over
[ts_start, ts_end)).

numpy over the starts and ends of queries/request_spans.sql, no Python loop per request:

- the number in flight only rises at a start, so a bucket's maximum is the number in flight
  at its own start or just after one of the starts in it; at an instant t that number is
  #(starts <= t) - #(ends <= t), two binary searches in the sorted starts and ends;
- a bucket's mean is the sum of each request's overlap with it over its width: every
  request adds the part of it in the bucket it starts in (sums over the runs of sorted
  starts); the few that run past that bucket add the whole width to each bucket they cross
  and their tail to the one they end in (a difference array).

The same sweep compiled (logan/answer/_sweep.c: the starts walked once, the ends of the
requests in flight in a heap, no sort of the ends, no binary search) answers in a third of
the numpy form's time, and it can be fed a stretch of time after another: what it carries
from one to the next is the requests still in flight, so a long store is read in slices of
time (logan.answer.timeline cuts them) and its starts and ends are never all in memory
(1 GB for 20 M requests). numpy is what runs where it was not built, on everything at once.
queries/in_flight.sql is the same answer as a sweep in SQL (what an engine without numpy
runs, e.g. Spark); the tests hold the three and a brute-force count to the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import duckdb
import numpy as np

from logan.answer.filters import within
from logan.answer.views import run_arrow, series_sql

try:
    from logan.answer import _sweep
except ImportError:  # installed without a C compiler: the numpy form
    _sweep = None

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
    slices: Sequence[tuple[int, int]] = (),
) -> pd.DataFrame:
    """Per series (the `cols`) and bucket of `width` from `lo` to `hi` (epoch us): bucket_us,
    in_flight_max, in_flight_mean. `slices`: stretches of start time [from, to) that cover
    the requests, in order, read one after another by the compiled sweep (none: one read)."""
    if _sweep is None:
        return _frame(cols, _numpy_sweeps(_spans(con, cols, where, params), lo, hi, width), lo, hi, width)
    buckets, sweeps = (hi - lo) // width, {}
    for part in [within(where, params, a, b) for a, b in slices] or [(where, params)]:
        for key, s, e in _spans(con, cols, *part):
            s, e = in_start_order(_us(s), _us(e))
            if key not in sweeps:
                sweeps[key] = _sweep.Sweeper(lo, width, buckets)
            sweeps[key].feed(s, e)
    return _frame(cols, {key: _finished(sweep, buckets) for key, sweep in sweeps.items()}, lo, hi, width)


def _spans(
    con: duckdb.DuckDBPyConnection, cols: Sequence[str], where: str, params: Sequence
) -> Iterator[tuple[tuple, np.ndarray, np.ndarray]]:
    """(series key, starts, ends) of the requests `where` keeps, per series: a key's missing
    values as None, so that one series read in two slices is one key."""
    if not cols:  # as Arrow: half the CPU time of fetchnumpy for 10 M timestamps
        spans = run_arrow(con, series_sql("request_spans", cols), where, params)
        if spans.num_rows:
            s = spans.column("s").to_numpy()  # a copy of the chunks: each column let go once copied
            spans = spans.drop_columns(["s"])
            e = spans.column("e").to_numpy()
            del spans
            yield (), s, e
        return
    # the series' values as categories: a Python string per row took 0.5 GB for 2 M rows
    spans = run_arrow(con, series_sql("request_spans", cols), where, params)
    frame = spans.to_pandas(strings_to_categorical=True)
    del spans
    for key, rows in frame.groupby(list(cols), dropna=False, sort=False, observed=True):
        key = tuple(None if v is None or v != v else v for v in (key if isinstance(key, tuple) else (key,)))
        yield key, rows["s"].to_numpy(), rows["e"].to_numpy()


def _numpy_sweeps(
    spans: Iterator[tuple[tuple, np.ndarray, np.ndarray]], lo: int, hi: int, width: int
) -> dict[tuple, tuple[np.ndarray, np.ndarray]]:
    """(most, area) per series by the numpy form, from one read of everything."""
    edges = np.arange(lo, hi + 1, width, dtype=np.int64)
    found = {}
    for key, s, e in spans:
        s, e = in_start_order(_us(s), _us(e))
        found[key] = most_in_flight(s, np.sort(e), edges), overlap_sums(s, e, edges)
    return found


def _finished(sweep: object, buckets: int) -> tuple[np.ndarray, np.ndarray]:
    most, area = np.empty(buckets, np.int64), np.empty(buckets, np.float64)
    sweep.finish(most, area)
    return most, area


def _frame(
    cols: Sequence[str], found: dict[tuple, tuple[np.ndarray, np.ndarray]], lo: int, hi: int, width: int
) -> pd.DataFrame:
    import pandas as pd  # here, not above: the sweep runs while pandas loads

    buckets = np.arange(lo, hi, width, dtype=np.int64)
    if not cols and not found:  # no request with both times (a log without durations): nothing to say
        nothing = np.full(len(buckets), np.nan)
        return pd.DataFrame({"bucket_us": buckets, "in_flight_max": nothing, "in_flight_mean": nothing})
    frames = []
    for key, (most, area) in found.items():
        one = pd.DataFrame({"bucket_us": buckets, "in_flight_max": most, "in_flight_mean": area / width})
        for c, v in zip(cols, key, strict=True):
            one.insert(0, c, v)
        frames.append(one)
    columns = [*cols, "bucket_us", "in_flight_max", "in_flight_mean"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def swept(s: np.ndarray, e: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """most_in_flight and overlap_sums in one compiled sweep (s sorted, e in the same order,
    every start inside the edges)."""
    sweep = _sweep.Sweeper(int(edges[0]), int(edges[1] - edges[0]), len(edges) - 1)
    sweep.feed(np.ascontiguousarray(s), np.ascontiguousarray(e))
    return _finished(sweep, len(edges) - 1)


def in_start_order(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (s, e) sorted by start (epoch us): as they are when they are in order, no
    copy; else by numpy's stable sort (timsort: a log written as requests end, and the long
    runs a parallel scan hands a store's row groups over in, merge in about linear time;
    measured faster than moving the late starts into place or merging the runs in C)."""
    if _is_sorted(s):
        return s, e
    order = np.argsort(s, kind="stable")
    return s[order], e[order]


def _is_sorted(s: np.ndarray) -> bool:
    return bool(len(s) < 2 or (s[1:] >= s[:-1]).all())


def _us(times: np.ndarray) -> np.ndarray:
    """Timestamps as microseconds since 1970 (int64), without a copy when they are already."""
    return np.asarray(times).astype("datetime64[us]", copy=False).view(np.int64)


def level_at(s: np.ndarray, e: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Requests in flight at each instant t: started at or before it, not ended by it
    (s and e sorted)."""
    return np.searchsorted(s, t, side="right") - np.searchsorted(e, t, side="right")


def _started_by(s: np.ndarray) -> np.ndarray:
    """For each of the sorted starts, how many start at or before it (ties count alike):
    searchsorted(s, s, "right") without a search."""
    last_of_run = np.flatnonzero(
        np.append(s[1:] != s[:-1], True)
    )  # the last index of each run of equal starts
    return np.repeat(last_of_run + 1, np.diff(np.append(-1, last_of_run)))


def most_in_flight(s: np.ndarray, e: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per bucket between consecutive edges: the most requests in flight at any instant
    (s and e sorted, every start inside the edges)."""
    most = level_at(s, e, edges[:-1])  # at each bucket's start
    after = np.append(
        _started_by(s) - np.searchsorted(e, s, side="right"), -1
    )  # -1: empty buckets at the end
    first = np.searchsorted(s, edges, side="left")
    peaks = np.maximum.reduceat(after, first[:-1])  # over each bucket's starts
    return np.where(np.diff(first) > 0, np.maximum(most, peaks), most)


def overlap_sums(s: np.ndarray, e: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per bucket: the microseconds of all requests' time inside it (their overlaps); s
    sorted, e in the same order, every start inside the edges."""
    width, n = edges[1] - edges[0], len(edges) - 1
    first = np.searchsorted(s, edges, side="left")  # each bucket's starts: s[first[k]:first[k + 1]]
    counts = np.diff(first)
    bucket_end = np.repeat(edges[1:], counts)
    head = np.minimum(e, bucket_end) - s  # the part in the bucket it starts in
    total = np.where(counts > 0, np.add.reduceat(np.append(head, 0), first[:-1]), 0).astype(np.float64)
    # the few that run past their bucket's end: the whole width of each bucket they cross,
    # and their tail in the bucket they end in (a difference array)
    spill = np.flatnonzero(e > bucket_end)
    end = np.minimum(e[spill], edges[-1])
    keep = end > bucket_end[spill]
    end, begin = end[keep], bucket_end[spill][keep]
    k0, k1 = (begin - edges[0]) // width, (end - 1 - edges[0]) // width
    total += np.bincount(k1, weights=end - (edges[0] + k1 * width), minlength=n)[:n]
    total += np.cumsum(np.bincount(k0, minlength=n + 1) - np.bincount(k1, minlength=n + 1))[:n] * width
    return total
