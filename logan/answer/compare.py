"""Before and after: the same per-group statistics over two sides (two periods of one store,
or two sets of logs), side by side with deltas and ratios, and a verdict per group that says
whether its response times changed beyond noise.

A side is a store and the filters that pick its requests. The statistics are those of
`logan stats` (queries/by_dimension.sql through logan.answer.stats), so a compare row agrees
with `logan stats` on each side. The verdict comes from the requests themselves
(queries/duration_counts.sql): a Mann-Whitney U test per group, the p-values of all groups
adjusted for the number of groups (Benjamini-Hochberg), and a median that moved by at least
`min_change`. docs/compare.md says why this test suits latencies. Both are written here
with numpy from counts per duration, as scipy.stats.mannwhitneyu (asymptotic, two-sided,
continuity corrected) and false_discovery_control compute them (tests/test_compare.py holds
them equal): scipy would need every request in memory and its import alone took longer
than the whole test.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import duckdb
import numpy as np

from logan.answer.filters import filter_sql, parse_time
from logan.answer.stats import columns_read as stats_columns_read
from logan.answer.stats import stats_records
from logan.answer.views import columns_named, dimension_columns, query_sql, run_arrow
from logan.errors import LoganError
from logan.units import DURATION, missing, parse_duration

if TYPE_CHECKING:
    import pandas as pd

ALPHA = 0.01  # false discovery rate over the groups tested
MIN_REQUESTS = 30  # timed requests each side needs before its group is tested
MIN_CHANGE = 0.10  # the median must move by at least this fraction to count
BASELINES = {"1d": timedelta(days=1), "7d": timedelta(days=7)}

# The statistics shown side by side (columns of stats_records), each as a_, b_, delta_ and ratio_.
STATS = ("requests", "avg_us", "p50_us", "p95_us", "p99_us", "max_us", "total_us")
WHOLE = ("requests", "max_us", "total_us")  # integers; the others are means and interpolations
VERDICTS = ("regression", "improvement", "same", "too few", "only A", "only B", "no times")


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a DuckDB connection over `requests` and the filters
    (logan.answer.filters) that pick this side's requests; `stats`, their stats_records
    frame by the groups compared (every group, top=None) when the caller has read it."""

    con: duckdb.DuckDBPyConnection
    filters: dict = field(default_factory=dict)
    stats: pd.DataFrame | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Criteria:
    """What counts as a change: see the module's docstring."""

    alpha: float = ALPHA
    min_requests: int = MIN_REQUESTS
    min_change: float = MIN_CHANGE


def compare(
    con: duckdb.DuckDBPyConnection,
    by: Sequence[str] | str = ("indirector",),
    *,
    con_b: duckdb.DuckDBPyConnection | None = None,
    a_since: str | datetime | None = None,
    a_until: str | datetime | None = None,
    b_since: str | datetime | None = None,
    b_until: str | datetime | None = None,
    baseline: str | None = None,
    alpha: float = ALPHA,
    min_requests: int = MIN_REQUESTS,
    min_change: float = MIN_CHANGE,
    **filters,
) -> pd.DataFrame:
    """Side A against side B, one row per group of `by` (see compare_sides for the columns).

    Two sets of logs: `con` is A and `con_b` is B, both narrowed by `filters` (since, until,
    env, method, status, path_glob). Two periods of one store: `a_since`/`a_until` and
    `b_since`/`b_until`, or `baseline` ('1d', '7d'): B is `since`..`until` (default: the
    last day or week of the store) and A the same window that much earlier.
    """
    a, b = sides(con, con_b, a_since, a_until, b_since, b_until, baseline, filters)
    return compare_sides(a, b, by, Criteria(alpha, min_requests, min_change))


def sides(
    con: duckdb.DuckDBPyConnection,
    con_b: duckdb.DuckDBPyConnection | None,
    a_since: str | datetime | None,
    a_until: str | datetime | None,
    b_since: str | datetime | None,
    b_until: str | datetime | None,
    baseline: str | None,
    filters: dict,
) -> tuple[Side, Side]:
    """The two sides the options name (see compare())."""
    periods = any(v is not None for v in (a_since, a_until, b_since, b_until))
    check_periods(con_b is not None, periods, baseline, filters)
    if con_b is not None:
        return Side(con, filters), Side(con_b, filters)
    if baseline is not None:
        a_window, b_window = baseline_windows(con, baseline, filters.get("since"), filters.get("until"))
        return Side(con, filters | a_window), Side(con, filters | b_window)
    return (Side(con, filters | {"since": a_since, "until": a_until}),
            Side(con, filters | {"since": b_since, "until": b_until}))  # fmt: skip


def check_periods(two_sets: bool, periods: bool, baseline: str | None, filters: dict) -> None:
    """The ways of naming two sides that exclude each other, refused before any reading."""
    if baseline is not None and baseline not in BASELINES:
        raise LoganError(f"--baseline {baseline!r}: use {' or '.join(BASELINES)}")
    if two_sets and (periods or baseline):
        raise LoganError("two sets of logs are compared as they are: no --a-since/--b-since/--baseline")
    if periods and baseline:
        raise LoganError("give --a-since/--a-until/--b-since/--b-until or --baseline, not both")
    if periods and (filters.get("since") or filters.get("until")):
        raise LoganError("--since/--until go with --baseline; with two periods use --a-since ... --b-until")
    if not two_sets and not periods and not baseline:
        raise LoganError("name the two sides: two sets of logs (--a FILE --b FILE), "
                         "--a-since ... --b-until, or --baseline 1d|7d")  # fmt: skip


def baseline_windows(
    con: duckdb.DuckDBPyConnection, baseline: str, since: str | datetime | None, until: str | datetime | None
) -> tuple[dict, dict]:
    """B = since..until (relative times count back from the newest request, as the filters
    do; no --since: the last `baseline` of the store); A = B shifted `baseline` earlier."""
    shift = BASELINES[baseline]
    newest = con.execute("SELECT max(ts_start) FROM requests").fetchone()[0]
    if newest is None:
        raise LoganError("no requests to compare")
    end = _instant(until, newest) if until is not None else newest + timedelta(microseconds=1)
    start = _instant(since, newest) if since is not None else end - shift
    if end - start > shift:
        raise LoganError(f"the window is longer than --baseline {baseline}: the two periods would overlap")
    return {"since": start - shift, "until": end - shift}, {"since": start, "until": end}


def _instant(text: str | datetime, newest: datetime) -> datetime:
    if isinstance(text, str) and DURATION.match(text.strip()):
        return newest - timedelta(microseconds=parse_duration(text.strip()))
    return parse_time(text)


def compare_sides(
    a: Side, b: Side, by: Sequence[str] | str = ("indirector",), criteria: Criteria = Criteria()
) -> pd.DataFrame:
    """One row per group of `by` found on either side, largest change first within each
    verdict (regressions, then improvements, then the rest).

    Columns: the group columns; verdict (VERDICTS); p_value (Mann-Whitney U, two-sided),
    q_value (p adjusted over the groups tested, Benjamini-Hochberg), p_slower (the chance
    that a B request of the group is slower than an A one; 0.5: no change); then for each
    of STATS: a_<stat>, b_<stat>, delta_<stat> (B - A) and ratio_<stat> (B / A), times in µs.
    """
    dims = dimension_columns(by)
    table = _side_by_side(_stats(a, by), _stats(b, by), dims)
    tests = _tests([duration_counts(side, by) for side in (a, b)], dims, criteria)
    table = table.merge(tests, on=dims, how="left")
    table["q_value"] = _adjusted(table["p_value"])
    table["verdict"] = [_verdict(r, criteria) for r in table.itertuples()]
    return _ordered(table, dims)


def _stats(side: Side, by: Sequence[str] | str) -> pd.DataFrame:
    found = side.stats
    if found is None:
        found = stats_records(side.con, by=by, sort="total", top=None, **side.filters).frame()
    return _plain_groups(found[[*dimension_columns(by), *STATS]], dimension_columns(by))


def _plain_groups(df: pd.DataFrame, dims: list[str]) -> pd.DataFrame:
    """Group columns as plain Python values, None for a missing one, so that the groups of
    both sides and of the tests join whatever dtype each frame gave them (an empty side,
    a column of NULLs, 200 read as 200.0)."""
    import pandas as pd

    df = df.copy()
    for d in dims:
        df[d] = pd.Series([_plain_key((v,))[0] for v in df[d]], dtype=object, index=df.index)
    return df


def _integral(v: object) -> bool:
    return isinstance(v, float) and v.is_integer()


def _side_by_side(a: pd.DataFrame, b: pd.DataFrame, dims: list[str]) -> pd.DataFrame:
    # pandas matches a missing group value (no environment) with a missing one here
    both = a.merge(b, on=dims, how="outer", suffixes=("_a", "_b"))
    out = both[dims].copy()
    for stat in STATS:
        kind = "Int64" if stat in WHOLE else "Float64"  # JSON says 42, not 42.0
        va, vb = both[f"{stat}_a"].astype(kind), both[f"{stat}_b"].astype(kind)
        if stat == "requests":
            va, vb = va.fillna(0), vb.fillna(0)
        name = stat.removesuffix("_us")
        out[f"a_{stat}"], out[f"b_{stat}"] = va, vb
        out[f"delta_{stat}"] = vb - va
        out[f"ratio_{name}"] = vb.astype("Float64") / va.where(va != 0)
    return out


def duration_counts(side: Side, by: Sequence[str] | str) -> pd.DataFrame:
    """queries/duration_counts.sql on one side: the group columns (texts as categories, a
    code per row: a Python string per row was 160 MB of a day's 970,000 counts), duration_us, n."""
    where, params = filter_sql(side.filters)
    found = run_arrow(side.con, query_sql("duration_counts", by), where, params)
    return found.to_pandas(strings_to_categorical=True)


def _tests(counts: list[pd.DataFrame], dims: list[str], criteria: Criteria) -> pd.DataFrame:
    """Per group timed on both sides: Mann-Whitney U of B against A. p_slower (U over the
    pairs) for every such group; p_value only with `min_requests` a side."""
    import pandas as pd

    ids, keys = _group_ids(counts, dims)
    group = np.concatenate(ids)
    side = np.concatenate([np.full(len(c), s) for s, c in enumerate(counts)])
    value = np.concatenate([c["duration_us"].to_numpy(np.int64) for c in counts])
    n = np.concatenate([c["n"].to_numpy(np.float64) for c in counts])
    na = np.bincount(group, weights=n * (side == 0), minlength=len(keys))
    nb = np.bincount(group, weights=n * (side == 1), minlength=len(keys))
    rank_b, ties = rank_sums(group, value, n, side == 1, len(keys))
    rows = []
    for k, key in enumerate(keys):
        if na[k] == 0 or nb[k] == 0:
            continue
        u, p = mann_whitney(rank_b[k], ties[k], nb[k], na[k])
        tested = min(na[k], nb[k]) >= criteria.min_requests
        rows.append([*key, p if tested else float("nan"), u / (na[k] * nb[k])])
    return _plain_groups(pd.DataFrame(rows, columns=[*dims, "p_value", "p_slower"]), dims)


def _group_ids(frames: list[pd.DataFrame], dims: list[str]) -> tuple[list[np.ndarray], list[tuple]]:
    """Each row's group number, the groups numbered alike in every frame by their plain
    values (None where missing) whatever dtype each frame gave them; and the groups."""
    numbers: dict[tuple, int] = {}
    ids = []
    for df in frames:
        local = df.groupby(dims, dropna=False, sort=False, observed=True).ngroup().to_numpy()  # as first seen
        firsts = df.drop_duplicates(dims)[dims].itertuples(index=False)
        found = [numbers.setdefault(_plain_key(tuple(row)), len(numbers)) for row in firsts]
        ids.append(np.asarray(found, np.int64)[local] if len(df) else np.zeros(0, np.int64))
    return ids, list(numbers)


def rank_sums(group: np.ndarray, value: np.ndarray, n: np.ndarray, in_b: np.ndarray, groups: int) -> tuple:
    """Per group, from counts `n` of each (group, value, side): the sum of side B's ranks
    among both sides' values (equal values share their mean rank) and the tie term
    sum(t^3 - t) over the runs of equal values."""
    if len(group) == 0:  # no timed request on either side
        return np.zeros(groups), np.zeros(groups)
    order = np.lexsort((value, group))
    g, v, c, b = group[order], value[order], n[order], in_b[order]
    new = np.r_[True, (g[1:] != g[:-1]) | (v[1:] != v[:-1])]  # a run of equal values starts
    run = np.cumsum(new) - 1
    t = np.bincount(run, weights=c)
    t_b = np.bincount(run, weights=c * b)
    run_group = g[new]
    before = np.cumsum(t) - t  # values before the run, over all groups
    first = np.r_[True, run_group[1:] != run_group[:-1]]
    before -= np.repeat(before[first], np.diff(np.r_[np.flatnonzero(first), len(t)]))
    mean_rank = before + (t + 1) / 2
    return (np.bincount(run_group, weights=t_b * mean_rank, minlength=groups),
            np.bincount(run_group, weights=t**3 - t, minlength=groups))  # fmt: skip


def mann_whitney(rank_b: float, ties: float, nb: float, na: float) -> tuple[float, float]:
    """U of B and the two-sided p-value by the normal approximation with tie and continuity
    corrections (scipy.stats.mannwhitneyu(b, a, method="asymptotic"))."""
    u_b = rank_b - nb * (nb + 1) / 2
    u = max(u_b, na * nb - u_b)
    n = na + nb
    s = math.sqrt(na * nb / 12 * ((n + 1) - ties / (n * (n - 1))))
    z = (u - na * nb / 2 - 0.5) / s if s > 0 else -math.inf
    return u_b, min(1.0, math.erfc(z / math.sqrt(2)))


def _plain_key(values: tuple) -> tuple:
    return tuple(None if missing(v) else int(v) if _integral(v) else v for v in values)


def _adjusted(p: pd.Series) -> pd.Series:
    """Benjamini-Hochberg q-values of the groups tested (NaN where untested): with 50
    groups, some p-value under 1% is expected by chance alone."""
    tested = p.dropna()
    q = p.astype("float64").copy()
    if len(tested):
        ps = tested.to_numpy(dtype=float)
        order = np.argsort(ps)
        scaled = ps[order] * len(ps) / np.arange(1, len(ps) + 1)
        adjusted = np.empty(len(ps))
        adjusted[order] = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
        q[tested.index] = adjusted
    return q


def _verdict(r: object, criteria: Criteria) -> str:
    na, nb = r.a_requests, r.b_requests
    if na == 0:
        return "only B"
    if nb == 0:
        return "only A"
    if missing(r.a_p50_us) or missing(r.b_p50_us):
        return "no times"
    if missing(r.p_value):
        return "too few"
    ratio = r.ratio_p50
    if r.q_value < criteria.alpha and not missing(ratio):
        if r.p_slower > 0.5 and ratio >= 1 + criteria.min_change:
            return "regression"
        if r.p_slower < 0.5 and ratio <= 1 / (1 + criteria.min_change):
            return "improvement"
    return "same"


def _ordered(table: pd.DataFrame, dims: list[str]) -> pd.DataFrame:
    rank = {v: i for i, v in enumerate(VERDICTS)}
    # within a verdict the largest change of total time first; groups without one last
    change = table["delta_total_us"].abs().astype("float64").fillna(-1.0)
    keyed = table.assign(__verdict=table["verdict"].map(rank), __change=-change)
    keyed = keyed.sort_values(["__verdict", "__change", *dims], kind="stable", na_position="last")
    front = [*dims, "verdict", "p_value", "q_value", "p_slower"]
    rest = [c for c in table.columns if c not in front]
    return keyed[front + rest].reset_index(drop=True)


def columns_read(by: Sequence[str] | str = ("indirector",), **filters) -> set[str]:
    """The `requests` columns a comparison reads: all a store made for it needs."""
    return stats_columns_read(by, **filters) | columns_named(query_sql("duration_counts", by))
