"""Where the time goes: per-group statistics, the named views and the headline.

The SQL lives in `queries/*.sql` (by_dimension, summary, apdex and the views of --view);
this module picks a file and ranks and reshapes its answer in SQL (logan.answer.views fills
and runs it, logan.answer.filters narrows it). Each answer comes as Records (plain rows,
what the CLI prints) or as a DataFrame (the library). Every function takes a DuckDB
connection whose `requests` table has the columns of logan/schema.py.

This is also the module notebooks know as `logan.stats`: it hands out the helpers they use
with it (units, filters, views) under the names they have always had.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import duckdb

from logan.answer.filters import filter_sql, parse_status, parse_time
from logan.answer.views import (
    DIMENSIONS,
    EVERY_ROW,
    LEAD,
    RANK,
    Records,
    columns_named,
    create_views,
    dimension_columns,
    narrowed,
    order_by,
    ordered,
    query_path,
    query_sql,
    run_records,
    same_group,
)
from logan.errors import LoganError
from logan.units import DURATION, format_bytes, format_count, format_us, missing, parse_duration

if TYPE_CHECKING:  # imported where a DataFrame is made: 0.4 s the CLI need not spend
    import pandas as pd

__all__ = [
    # answers
    "SORTS", "TIMERS", "STAT_COLUMNS", "VIEWS", "stats", "stats_records", "view", "named_view",
    "named_records", "view_question", "columns_read", "summary", "headline", "answer", "Answer",
    "check_options", "window_note",
    # the helpers notebooks use with them
    "DIMENSIONS", "Records", "create_views", "dimension_columns", "query_sql", "run_records",
    "filter_sql", "parse_status", "parse_time", "parse_duration", "format_bytes", "format_count",
    "format_us", "missing",
]  # fmt: skip

SORTS = {
    "total": "total_us",
    "count": "requests",
    "avg": "avg_us",
    "p95": "p95_us",
    "p99": "p99_us",
    "max": "max_us",
}
TIMERS = ("upstream", "ttfb", "queue")  # beside duration, as in queries/by_dimension.sql
STAT_COLUMNS = [
    "requests", "total_us", "share", "avg_us", "stddev_us", "min_us",
    "p50_us", "p90_us", "p95_us", "p99_us", "max_us",
]  # fmt: skip


def _with_timer_groups(sql: str) -> str:
    """by_dimension.sql with, per timer, the number of groups that have it
    (__<timer>_groups): a timer no group has gets no columns in the answer."""
    counts = [f"count({t}_requests) OVER () AS __{t}_groups" for t in TIMERS]
    return f"SELECT *, {', '.join(counts)} FROM ({sql}) AS wide"


# Group columns whose values run to thousands or millions (a node, a file, an address, an
# agent). Over 4 M rows of the realistic log, the percentiles of the 20 groups shown alone
# took stats_records 0.77-0.80 s against 4.96 s for every one of 60,775 resources; but over
# a few groups (`--by indirector`) picking their rows cost more than it saved, 0.70-0.94 s
# against 0.55-0.64 s.
_MANY_VALUED = ("resource", "requester", "client", "user_agent")


def cut_to_top(dims: list[str], top: int | None) -> bool:
    """Whether stats_records works its statistics out over the rows of the groups it shows
    alone, ranked first (_rank_groups): when it shows the top groups of a many-valued
    column."""
    return bool(top) and bool(set(dims) & set(_MANY_VALUED))


# The groups a cut answer shows, ranked first: a temporary table of the connection, made
# and dropped by each answer.
SHOWN_TABLE = "__logan_shown"
# The columns the groups are ranked by, made as queries/by_dimension.sql makes them
# (`requests` is count(*)), so that the ranking finds the groups the answer would show.
# But the percentiles: the answer's are exact (queries/parts/timer_percentiles.sql), and
# quantile_cont's may differ from them in the last bit (one fused multiply-add), so every
# group within _NEAR of the last one shown is a candidate, ranked exactly by the answer.
_RANKED_BY = {
    "total_us": "CAST(sum(duration_us) AS BIGINT)",
    "avg_us": "avg(duration_us)",
    "max_us": "max(duration_us)",
    "p95_us": "quantile_cont(duration_us, 0.95)",
    "p99_us": "quantile_cont(duration_us, 0.99)",
}
_NEAR = 1e-9  # relative: a million times the last bit of a double
_PERCENTILES = ("p95_us", "p99_us")


@dataclass(frozen=True)
class _Shown:
    """What the ranking found besides the groups: how many there are, and the timers some
    row has (the answer's columns, whichever groups it shows)."""

    groups: int
    timers: frozenset[str]


def _rank_groups(
    con: duckdb.DuckDBPyConnection,
    dims: list[str],
    keys: Sequence[tuple[str, bool]],
    top: int,
    where: str,
    params: Sequence,
    lead: Sequence[tuple[str, bool]] | None = None,
) -> _Shown | None:
    """SHOWN_TABLE: the `top` groups by `keys`, ranked as `ordered` ranks the answer (groups
    breaking ties), from the group columns and the one ranked by alone; for a percentile,
    the candidates near the last of them too; with `lead` keys, also the first group by
    those (the headline's), from the same grouping. A group per request (7.1 M thumbnail
    files) held 9.9 GiB of aggregates as every statistic of every group. None (and no
    table) when no group is found, or too few have the percentile ranked by: the answer
    then works every group out."""
    by = list(dict.fromkeys(c for c, _ in [*keys[:1], *(lead or [])[:1]] if c in _RANKED_BY))
    ranked = [*dims, *(f"{_RANKED_BY[c]} AS {c}" for c in by)]
    grouped = (
        f"SELECT {', '.join(ranked)}, count(*) AS requests, count(*) OVER () AS __groups "
        f"FROM requests GROUP BY {', '.join(dims)}"
    )
    timed = f"(SELECT {', '.join(f'count({t}_us) AS __{t}' for t in TIMERS)} FROM requests) AS t"
    col = keys[0][0]
    if col in _PERCENTILES:  # the last group shown and those near it
        last = f"SELECT {col} - abs({col}) * {_NEAR} FROM g ORDER BY {order_by(keys)} LIMIT 1 OFFSET ?"
        found = f"SELECT *, TRUE AS __shown FROM g WHERE {col} >= ({last})"
        rank = top - 1
    else:
        found = f"SELECT *, TRUE AS __shown FROM (SELECT * FROM g ORDER BY {order_by(keys)} LIMIT ?) AS s"
        rank = top
    if lead:  # the first group by `lead` beside them, one row where it is one of them too
        cols = ", ".join([*dims, *by, "requests", "__groups"])
        found = (
            f"SELECT {cols}, bool_or(__shown) AS __shown FROM ({found} UNION ALL SELECT *, FALSE"
            f" FROM (SELECT * FROM g ORDER BY {order_by(lead)} LIMIT 1) AS l) AS f GROUP BY {cols}"
        )
    sql = f"WITH g AS ({grouped}) SELECT f.*, t.* FROM ({found}) AS f CROSS JOIN {timed}"
    con.execute(f"CREATE OR REPLACE TEMP TABLE {SHOWN_TABLE} AS {narrowed(con, sql, where)}", [*params, rank])
    timers = ", ".join(f"__{t}" for t in TIMERS)
    first = con.execute(f"SELECT __groups, {timers} FROM {SHOWN_TABLE} WHERE __shown LIMIT 1").fetchone()
    if first is None:
        con.execute(f"DROP TABLE {SHOWN_TABLE}")
        return None
    return _Shown(first[0], frozenset(t for t, n in zip(TIMERS, first[1:], strict=True) if n))


def _with_apdex(dims: list[str], table_sql: str, apdex_sql: str) -> str:
    return (
        f"SELECT t.*, a.timed_requests, a.slo_share, a.apdex FROM ({table_sql}) AS t "
        f"LEFT JOIN ({apdex_sql}) AS a ON {same_group('t', 'a', dims)}"
    )


def _keys(sort: str, dims: list[str]) -> list[tuple[str, bool]]:
    """How a table sorted by `sort` is ranked: largest first (a log without times: all
    NULL, so by requests); ties broken by the groups themselves, so the order never
    depends on the engine."""
    return [(SORTS[sort], True), ("requests", True), *[(d, False) for d in dims]]


def _table(
    con: duckdb.DuckDBPyConnection,
    by: Sequence[str] | str,
    sort: str,
    top: int | None,
    filters: dict,
    slo_us: int | None,
    lead: bool,
) -> tuple[Records, Records | None]:
    """stats_records(), and with `lead` the headline's group as well: the first row by
    total, the table's own when it is sorted by total, else from the same ranking and
    answer (a second answer sorted by total took 3 of the 7 s of a p99-sorted one over
    7.1 M thumbnail files)."""
    dims = dimension_columns(by)
    where, params = filter_sql(filters)
    keys = _keys(sort, dims)
    by_total = _keys("total", dims) if lead and sort != "total" else None
    shown = _rank_groups(con, dims, keys, top, where, params, by_total) if cut_to_top(dims, top) else None
    rows, again = EVERY_ROW, EVERY_ROW
    if shown is not None:
        rows = f"SELECT r.* FROM requests AS r JOIN {SHOWN_TABLE} AS t ON {same_group('r', 't', dims)}"
        again = "SELECT * FROM group_rows"
    sql = _with_timer_groups(query_sql("by_dimension", by, percentile_rows=again, group_rows=rows))
    if slo_us is not None:
        sql = _with_apdex(dims, sql, query_sql("apdex", by, slo_us, group_rows=rows))
    sql, limit = ordered(sql, keys, top, by_total)
    try:
        found = run_records(con, sql, where, [*params, *limit])
    finally:
        if shown is not None:
            con.execute(f"DROP TABLE {SHOWN_TABLE}")
    if by_total is not None:
        leading = Records(found.columns, found.types, [r for r in found.rows if r[LEAD]])
        found.rows = [r for r in found.rows if not top or r[RANK] <= top]
    if shown is None:
        absent = [t for t in TIMERS if not found.rows or not found.rows[0][f"__{t}_groups"]]
    else:  # the groups shown may lack a timer others have: its columns stay, as uncut
        absent = [t for t in TIMERS if t not in shown.timers]
        found.total = shown.groups
    drop = [f"__{t}_groups" for t in TIMERS] + [f"{t}_{c}" for t in absent for c in STAT_COLUMNS]
    if by_total is None:
        table = found.without(drop)
        return table, table if lead else None
    drop += [RANK, LEAD]
    return found.without(drop), leading.without(drop)


# --- Public API -----------------------------------------------------------------------------
def stats_records(
    con: duckdb.DuckDBPyConnection,
    by: Sequence[str] | str = ("indirector",),
    sort: str = "total",
    top: int | None = 20,
    since: str | datetime | None = None,
    until: str | datetime | None = None,
    env: str | Sequence[str] | None = None,
    method: str | Sequence[str] | None = None,
    status: str | None = None,
    path_glob: str | None = None,
    slo_us: int | None = None,
) -> Records:
    """Per-group statistics (queries/by_dimension.sql), one row per group.

    Columns: the dimension columns, requests, total_us, share, avg_us, stddev_us, min_us,
    p50_us, p90_us, p95_us, p99_us, max_us, error_share (5xx), bytes; then, for each of
    upstream/ttfb/queue the log has, <timer>_requests, <timer>_total_us, ... <timer>_max_us;
    with slo_us, timed_requests, slo_share and apdex. Sorted by `sort` (largest first; by
    requests when the log has no times), `top` rows (None or 0: all).
    """
    if sort not in SORTS:
        raise LoganError(f"unknown sort {sort!r}; use one of {', '.join(SORTS)}")
    filters = dict(since=since, until=until, env=env, method=method, status=status, path_glob=path_glob)
    return _table(con, by, sort, top, filters, slo_us, lead=False)[0]


def stats(con: duckdb.DuckDBPyConnection, *args: Any, **kwargs: Any) -> pd.DataFrame:
    """stats_records() as a DataFrame: the same arguments, the same rows and columns."""
    return stats_records(con, *args, **kwargs).frame()


def view(
    con: duckdb.DuckDBPyConnection,
    name: str,
    by: Sequence[str] | str = (),
    slo_us: int | None = None,
    **filters,
) -> pd.DataFrame:
    """Any queries/<name>.sql as a DataFrame, e.g. view(con, 'histogram', since='24h')."""
    where, params = filter_sql(filters)
    return run_records(con, query_sql(name, by, slo_us), where, params).frame()


# `logan stats --view NAME` -> the queries/ file it shows. pareto, apdex and cache group by
# --by; apdex needs a threshold.
VIEWS = {
    "percentiles": "percentiles", "histogram": "histogram", "slowest": "slowest",
    "pareto": "pareto", "apdex": "apdex", "cache": "cache_candidates",
}  # fmt: skip
_WHOLE_VIEWS = ("percentiles", "histogram")  # every row is part of the answer: no --top


def named_records(
    con: duckdb.DuckDBPyConnection,
    name: str,
    by: Sequence[str] | str = ("indirector",),
    top: int | None = 20,
    slo_us: int | None = None,
    **filters,
) -> Records:
    """One of VIEWS, ranked as the view says (apdex: worst first), cut to `top` rows (None
    or 0: all) except for percentiles and histogram."""
    if name not in VIEWS:
        raise LoganError(f"unknown view {name!r}; use one of {', '.join(VIEWS)}")
    if name == "apdex" and slo_us is None:
        raise LoganError("the apdex view needs a threshold (--slo, e.g. 500ms)")
    where, params = filter_sql(filters)
    sql = query_sql(VIEWS[name], by, slo_us)
    if name == "apdex":
        # the groups that hurt most first; ties by size, then by the groups themselves
        keys = [("apdex", False), ("timed_requests", True), *[(d, False) for d in dimension_columns(by)]]
        sql, limit = ordered(sql, keys, top)
    elif name not in _WHOLE_VIEWS and top:
        sql, limit = f"SELECT * FROM (\n{sql}\n) AS v LIMIT ?", [top]
    else:
        limit = []
    return run_records(con, sql, where, [*params, *limit])


def named_view(con: duckdb.DuckDBPyConnection, *args: Any, **kwargs: Any) -> pd.DataFrame:
    """named_records() as a DataFrame."""
    return named_records(con, *args, **kwargs).frame()


def view_question(name: str, by: Sequence[str] | str = (), slo_us: int | None = None) -> str:
    """The question a VIEWS entry answers: the first line of its SQL file, slots filled."""
    line = query_path(VIEWS.get(name, name)).read_text().splitlines()[0].removeprefix("-- ")
    if "{dimensions}" in line:
        line = line.replace("{dimensions}", ", ".join(dimension_columns(by)))
    return line.replace("{slo_us} us", format_us(slo_us))


def columns_read(
    by: Sequence[str] | str = ("indirector",),
    view: str | None = None,
    slo_us: int | None = None,
    **filters,
) -> set[str]:
    """The `requests` columns that stats_records() or named_records(view), summary() and
    headline() read with these arguments: all a store made for that one answer needs
    (logan.ingest's `columns`). Read off the SQL they run, so a view that reads one more
    column asks for it."""
    texts = [query_sql("summary"), filter_sql(filters)[0]]
    texts.append(query_sql(VIEWS[view] if view else "by_dimension", by, slo_us or 1))
    if slo_us is not None:
        texts.append(query_sql("apdex", by, slo_us))
    return columns_named(*texts)


def summary(con: duckdb.DuckDBPyConnection, **filters) -> dict:
    """queries/summary.sql as a dict: first_ts, last_ts, requests, total_us, p99_us, ..."""
    where, params = filter_sql(filters)
    return run_records(con, query_sql("summary"), where, params).rows[0]


def headline(
    con: duckdb.DuckDBPyConnection,
    by: Sequence[str] | str = ("indirector",),
    table: Records | None = None,
    totals: dict | None = None,
    **filters,
) -> str:
    """One paragraph: period, requests, server time, and the top consumer in words.

    'GET file_metadata: 45% of all server time, 7.1M requests, p99 22 ms'. Pass the
    stats_records() table (sorted by total) and the summary() to avoid computing them again.
    """
    s = totals if totals is not None else summary(con, **filters)
    if not s["requests"]:
        return "No requests match."
    parts = []
    if s["first_ts"] is not None:
        span = (s["last_ts"] - s["first_ts"]).total_seconds() * 1e6
        parts.append(
            f"{s['first_ts']:%Y-%m-%d %H:%M} to {s['last_ts']:%Y-%m-%d %H:%M} UTC ({format_us(span)})"
        )
    parts.append(f"{format_count(s['requests'])} requests")
    if s["total_us"] is None:
        parts.append("no response times in the log")
    else:
        parts.append(f"{format_us(s['total_us'])} of server time, p99 {format_us(s['p99_us'])}")
    text = ", ".join(parts) + "."
    if table is None:
        table = stats_records(con, by=by, sort="total", top=1, **filters)
    if not table.rows:
        return text
    top = table.rows[0]
    dims = dimension_columns(by)
    label = " ".join("-" if missing(top[c]) else str(top[c]) for c in dims)
    if missing(top["total_us"]):
        share = top["requests"] / s["requests"]
        return f"{text}\n{label}: {share:.0%} of all requests, {format_count(top['requests'])}."
    return (
        f"{text}\n{label}: {top['share']:.0%} of all server time, "
        f"{format_count(top['requests'])} requests, p99 {format_us(top['p99_us'])}."
    )


def window_note(con: duckdb.DuckDBPyConnection, now: datetime | None = None, **filters) -> str:
    """What a relative --since/--until (24h) was counted from, and a warning when that is
    long before `now`: a nightly run whose logs stopped arriving would otherwise report
    the last day that had requests as if it were yesterday."""
    relative = [
        k for k in ("since", "until") if isinstance(filters.get(k), str) and DURATION.match(filters[k])
    ]
    if not relative:
        return ""
    newest = con.execute("SELECT max(ts_start) FROM requests").fetchall()[0][0]
    if newest is None:
        return ""
    said = " and ".join(f"--{k} {filters[k].strip()}" for k in relative)
    note = f"{said} counted back from the newest request, {newest:%Y-%m-%d %H:%M} UTC."
    now = (now or datetime.now(UTC)).replace(tzinfo=None)
    if now - newest > timedelta(days=1):
        note += f" Warning: that is {format_us((now - newest).total_seconds() * 1e6)} before now."
    return note


@dataclass
class Answer:
    """A `logan stats` answer: the table, and for people the headline over it and the
    number of requests it covers."""

    table: Records
    headline: str = ""
    requests: int = 0


def check_options(by: Sequence[str] | str, sort: str, view: str | None, slo_us: int | None) -> None:
    """The options of answer(), checked before any log is read."""
    dimension_columns(by)
    if sort not in SORTS:
        raise LoganError(f"unknown --sort {sort!r}; use one of {', '.join(SORTS)}")
    if view is not None and view not in VIEWS:
        raise LoganError(f"unknown --view {view!r}; use one of {', '.join(VIEWS)}")
    if view == "apdex" and slo_us is None:
        raise LoganError("--view apdex needs --slo, e.g. --slo 500ms")


def answer(
    con: duckdb.DuckDBPyConnection,
    by: Sequence[str] | str = ("indirector",),
    sort: str = "total",
    top: int | None = 20,
    view: str | None = None,
    slo_us: int | None = None,
    with_headline: bool = False,
    **filters,
) -> Answer:
    """What `logan stats` shows: stats_records(), or named_records(view); with the headline
    (for people) when asked."""
    check_options(by, sort, view, slo_us)
    if view is not None:
        return Answer(named_records(con, view, by=by, top=top, slo_us=slo_us, **filters))
    table, lead = _table(con, by, sort, top, filters, slo_us, lead=with_headline)
    if not with_headline:
        return Answer(table)
    totals = summary(con, **filters)
    head = headline(con, by=by, table=lead, totals=totals, **filters)
    note = window_note(con, **filters)
    return Answer(table, f"{head}\n{note}" if note else head, totals["requests"])
