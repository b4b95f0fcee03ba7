"""Where the time goes: the views of `queries/` as pandas DataFrames, with filters.

The SQL lives in `queries/*.sql`; this module only picks a file, fills the whitelisted
template slots ({dimensions}, {slo_us}), narrows `requests` with bound parameters and
ranks and reshapes the answer in SQL. Each view comes as Records (plain rows, what the CLI
prints) or as a DataFrame (the library). Every function takes a DuckDB connection whose `requests` table has
the columns of logan/schema.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from logan import schema
from logan.errors import LoganError
from logan.resources import queries_dir
from logan.store import stored_columns

if TYPE_CHECKING:  # imported where a DataFrame is made: 0.4 s the CLI need not spend
    import pandas as pd

# --by name -> the columns it groups by. A fixed whitelist: these names are the only text
# that enters the SQL templates.
DIMENSIONS: dict[str, tuple[str, ...]] = {
    "indirector": ("method", "indirector"),
    "resource": ("method", "indirector", "resource"),
    "environment": ("environment",),
    "requester": ("requester", "requester_group"),
    "status": ("status",),
    "route": ("method", "route"),
    "vhost": ("vhost",),
    "server": ("backend", "server"),
    "backend": ("backend",),
    "frontend": ("frontend",),
    "dialect": ("dialect",),
    "method": ("method",),
    "group": ("requester_group",),
    "cache": ("cache_status",),
    "client": ("client",),
    "source": ("source",),
    "user_agent": ("user_agent",),
}
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
_INTEGER_COLUMNS = (
    "requests",
    "total_us",
    "min_us",
    "max_us",
    "bytes",
    "rank",
    "lo_us",
    "hi_us",
    "saved_us",
    "urls",
    "clients",
    "size_values",
    "cache_known",
)
_INTEGER_SUFFIXES = ("_requests", "_total_us", "_min_us", "_max_us")


# --- Queries ------------------------------------------------------------------------------
def dimension_columns(by: Sequence[str] | str) -> list[str]:
    """Group-by columns for --by names, in order, without repeats."""
    names = [by] if isinstance(by, str) else list(by)
    if not names:
        raise LoganError(f"--by needs one of {', '.join(DIMENSIONS)}")
    cols: list[str] = []
    for name in names:
        if name not in DIMENSIONS:
            raise LoganError(f"unknown --by {name!r}; use one of {', '.join(DIMENSIONS)}")
        cols += [c for c in DIMENSIONS[name] if c not in cols]
    return cols


def query_path(name: str) -> Path:
    path = queries_dir() / f"{name}.sql"
    if not path.is_file():
        raise LoganError(f"no view {name!r} in {queries_dir()}")
    return path


def query_sql(name: str, by: Sequence[str] | str = (), slo_us: int | None = None) -> str:
    """The text of queries/<name>.sql with its template slots filled from --by names."""
    sql = query_path(name).read_text()
    if "{dimensions}" in sql:
        sql = sql.replace("{dimensions}", ", ".join(dimension_columns(by)))
    if "{slo_us}" in sql:
        if slo_us is None:
            raise LoganError(f"view {name!r} needs a threshold (slo_us)")
        sql = sql.replace("{slo_us}", str(int(slo_us)))
    return sql


def create_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Create TEMP views: one per plain queries/*.sql (named after the file) and by_<dim>
    for each per-dimension name. Returns their names."""
    names = []
    for path in sorted(queries_dir().glob("*.sql")):
        text = path.read_text()
        if "{slo_us}" in text:
            continue
        if "{dimensions}" in text:
            for dim in DIMENSIONS:
                view = f"{path.stem}_{dim}" if path.stem != "by_dimension" else f"by_{dim}"
                con.execute(f"CREATE OR REPLACE TEMP VIEW {_ident(view)} AS "
                            f"{query_sql(path.stem, [dim])}")  # fmt: skip
                names.append(view)
        else:
            con.execute(f"CREATE OR REPLACE TEMP VIEW {_ident(path.stem)} AS {text}")
            names.append(path.stem)
    return names


def _ident(name: str) -> str:
    # a file name a user chose, as a quoted SQL identifier
    return '"' + name.replace('"', '""') + '"'


# --- Filters ------------------------------------------------------------------------------
_UNITS_US = {"us": 1, "µs": 1, "ms": 1_000, "s": 1_000_000, "m": 60_000_000, "min": 60_000_000,
             "h": 3_600_000_000, "d": 86_400_000_000, "w": 604_800_000_000}  # fmt: skip
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|µs|ms|s|min|m|h|d|w)\s*$")


def parse_duration(text: str) -> int:
    """'500ms', '1.5s', '24h', '250us' -> microseconds. A bare number is milliseconds."""
    text = str(text).strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return round(float(text) * 1_000)
    m = _DURATION.match(text)
    if not m:
        raise LoganError(f"not a duration: {text!r} (use e.g. 500ms, 2s, 24h)")
    return round(float(m.group(1)) * _UNITS_US[m.group(2)])


def parse_time(text: str | datetime, now: datetime | None = None) -> datetime:
    """An instant as naive UTC (the store's convention).

    '24h', '90m', '7d' mean that long before `now` (default: the current time; filters
    count back from the last request instead, see filter_sql);
    otherwise ISO 8601 ('2013-11-05', '2013-11-05 19:52', '...T19:52:21+01:00') or Apache's
    '05/Nov/2013:19:52:21 +0000'. A time without offset is UTC.
    """
    if isinstance(text, datetime):
        when = text
    else:
        text = text.strip()
        if _DURATION.match(text):
            now = now or datetime.now(UTC)
            if now.tzinfo is None:
                now = now.replace(tzinfo=UTC)
            when = now - timedelta(microseconds=parse_duration(text))
        else:
            try:
                when = datetime.fromisoformat(text)
            except ValueError:
                try:
                    when = datetime.strptime(text, "%d/%b/%Y:%H:%M:%S %z")
                except ValueError:
                    raise LoganError(f"not a time: {text!r} (use 24h, 2013-11-05T19:52:21, ...)") from None
    if when.tzinfo is not None:
        when = when.astimezone(UTC).replace(tzinfo=None)
    return when


def parse_status(spec: str) -> list[tuple[int, int]]:
    """'5xx' -> [(500, 599)]; '404' -> [(404, 404)]; '4xx,503' and '500-504' too."""
    ranges = []
    for part in str(spec).split(","):
        part = part.strip().lower()
        if re.fullmatch(r"[1-5]xx", part):
            lo = int(part[0]) * 100
            ranges.append((lo, lo + 99))
        elif re.fullmatch(r"\d{3}", part):
            ranges.append((int(part), int(part)))
        elif m := re.fullmatch(r"(\d{3})-(\d{3})", part):
            ranges.append((int(m.group(1)), int(m.group(2))))
        else:
            raise LoganError(f"not a status: {part!r} (use 5xx, 404, 500-504)")
    return ranges


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


FILTERS = ("since", "until", "env", "method", "status", "path_glob")


def filter_sql(filters: dict | None = None) -> tuple[str, list]:
    """A WHERE condition with ? placeholders and its parameters (values never enter SQL).

    `filters` holds any of FILTERS, as stats() takes them; None values are no filter.
    """
    filters = {k: v for k, v in (filters or {}).items() if v is not None}
    unknown = set(filters) - set(FILTERS)
    if unknown:
        raise LoganError(f"unknown filter {sorted(unknown)}; use {', '.join(FILTERS)}")
    since, until, env, method, status, path_glob = (filters.get(k) for k in FILTERS)
    conds: list[str] = []
    params: list = []
    for value, op in ((since, ">="), (until, "<")):
        if value is None:
            continue
        if isinstance(value, str) and _DURATION.match(value.strip()):
            # "24h" counts back from the last request in the store, not from now: a
            # post-mortem reads yesterday's logs, and for a fresh log the two agree.
            conds.append(f"ts_start {op} (SELECT max(ts_start) FROM requests) - to_microseconds(?)")
            params.append(parse_duration(value.strip()))
        else:
            conds.append(f"ts_start {op} ?")
            params.append(parse_time(value))
    for column, values in (("environment", _as_list(env)), ("method", _as_list(method))):
        if values:
            conds.append(f"{column} IN ({', '.join('?' * len(values))})")
            params += [v.upper() if column == "method" else v for v in values]
    if status is not None:
        ranges = parse_status(status)
        conds.append("(" + " OR ".join("status BETWEEN ? AND ?" for _ in ranges) + ")")
        params += [v for r in ranges for v in r]
    if path_glob is not None:
        conds.append("path GLOB ?")
        params.append(path_glob)
    return " AND ".join(conds), params


class Records:
    """A query's answer as plain rows (dicts), with DuckDB's column types.

    The CLI prints these as they are (pandas takes 0.4 s to import, more than a query on
    5 M rows); the library hands out `.frame()`, a DataFrame.
    """

    def __init__(self, columns: list[str], types: list[str], rows: list[dict[str, Any]]):
        self.columns, self.types, self.rows = columns, types, rows

    def __len__(self) -> int:
        return len(self.rows)

    def without(self, drop: Sequence[str]) -> Records:
        keep = [(c, t) for c, t in zip(self.columns, self.types, strict=True) if c not in drop]
        return Records([c for c, _ in keep], [t for _, t in keep],
                       [{c: r[c] for c, _ in keep} for r in self.rows])  # fmt: skip

    def frame(self) -> pd.DataFrame:
        import pandas as pd

        df = pd.DataFrame(self.rows, columns=self.columns)
        for col, typ in zip(self.columns, self.types, strict=True):
            if typ.startswith(("DOUBLE", "FLOAT", "DECIMAL")):
                df[col] = df[col].astype("float64")
            elif typ.startswith("TIMESTAMP"):
                df[col] = pd.to_datetime(df[col])
        return _tidy(df)


def run_records(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    where: str = "",
    params: Sequence = (),
) -> Records:
    """Run a view's SQL over `requests` narrowed by `where` (a CTE named requests shadows
    the table, so the view text stays as written)."""
    cur = con.execute(_narrowed(con, sql, where), list(params))
    columns = [d[0] for d in cur.description]
    types = [str(d[1]) for d in cur.description]
    decimals = [c for c, t in zip(columns, types, strict=True) if t.startswith("DECIMAL")]
    rows = [dict(zip(columns, r, strict=True)) for r in cur.fetchall()]
    for r in rows:  # DECIMAL comes back as decimal.Decimal: a fraction is a float here
        for c in decimals:
            r[c] = None if r[c] is None else float(r[c])
    return Records(columns, types, rows)


def _narrowed(con: duckdb.DuckDBPyConnection, sql: str, where: str) -> str:
    """`sql` over the rows of `requests` that `where` keeps. Its text stays as written: a
    CTE named requests shadows the view, and leaves out the view's join with `ingests` when
    neither reads source, dialect or format."""
    if _columns_named(sql, where) & set(schema.FROM_INGESTS):
        rows = "SELECT * FROM main.requests"
    else:
        rows = schema.requests_select_sql(stored_columns(con), provenance=False)
    narrowed = f"SELECT * FROM ({rows}) AS r WHERE {where}" if where else rows
    return f"WITH requests AS ({narrowed})\nSELECT * FROM (\n{sql}\n) AS v"


def _columns_named(*sql: str) -> set[str]:
    """The `requests` columns SQL texts name (in code: a column named in a comment is not
    read)."""
    words = set(re.findall(r"\w+", re.sub(r"--[^\n]*", "", "\n".join(sql))))
    return {c for c in schema.REQUEST_COLUMNS if c in words}


def _tidy(df: pd.DataFrame) -> pd.DataFrame:
    # Counts and sums as nullable integers, so JSON says 42, not 42.0, and NULL stays null.
    import pandas as pd

    for col in df.columns:
        if col in _INTEGER_COLUMNS or col.endswith(_INTEGER_SUFFIXES):
            df[col] = pd.array(df[col].astype("Float64").round(), dtype="Int64")
    return df


def _ordered(sql: str, keys: Sequence[tuple[str, bool]], top: int | None) -> tuple[str, list]:
    """The rows of `sql` ordered by (column, descending) keys, NULLs last, cut to `top`.
    The column names come from the whitelists of this module."""
    order = ", ".join(f"{c} {'DESC' if desc else 'ASC'} NULLS LAST" for c, desc in keys)
    limit, params = (" LIMIT ?", [top]) if top else ("", [])
    return f"SELECT * FROM (\n{sql}\n) AS ranked ORDER BY {order}{limit}", params


def _with_timer_groups(sql: str) -> str:
    """by_dimension.sql with, per timer, the number of groups that have it
    (__<timer>_groups): a timer no group has gets no columns in the answer."""
    counts = [f"count({t}_requests) OVER () AS __{t}_groups" for t in TIMERS]
    return f"SELECT *, {', '.join(counts)} FROM ({sql}) AS wide"


def _with_apdex(dims: list[str], table_sql: str, apdex_sql: str) -> str:
    # groups may be NULL (no environment): NULL matches NULL here
    on = " AND ".join(f"t.{d} IS NOT DISTINCT FROM a.{d}" for d in dims)
    return (
        f"SELECT t.*, a.timed_requests, a.slo_share, a.apdex FROM ({table_sql}) AS t "
        f"LEFT JOIN ({apdex_sql}) AS a ON {on}"
    )


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
    dims = dimension_columns(by)
    where, params = filter_sql(
        dict(since=since, until=until, env=env, method=method, status=status, path_glob=path_glob)
    )
    sql = _with_timer_groups(query_sql("by_dimension", by))
    if slo_us is not None:
        sql = _with_apdex(dims, sql, query_sql("apdex", by, slo_us))
    # largest first (a log without times: all NULL, so by requests); ties broken by the
    # groups themselves, so the order never depends on the engine
    keys = [(SORTS[sort], True), ("requests", True), *[(d, False) for d in dims]]
    sql, limit = _ordered(sql, keys, top)
    found = run_records(con, sql, where, [*params, *limit])
    absent = [t for t in TIMERS if not found.rows or not found.rows[0][f"__{t}_groups"]]
    drop = [f"__{t}_groups" for t in TIMERS] + [f"{t}_{c}" for t in absent for c in STAT_COLUMNS]
    return found.without(drop)


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
        sql, limit = _ordered(sql, keys, top)
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
    return _columns_named(*texts)


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


# --- Human units ----------------------------------------------------------------------------
def missing(value: object) -> bool:
    """None, NaN, NaT or pandas' NA: a cell with nothing in it."""
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN and NaT differ from themselves
    except TypeError:  # pandas.NA refuses to be a bool
        return True


def format_us(us: float | None) -> str:
    """Microseconds for people: 850 us, 22 ms, 1.4 s, 3.2 min, 26.9 h, 4.1 days."""
    if missing(us):
        return "-"
    us = float(us)
    for limit, div, unit in (
        (1e3, 1, "us"), (1e6, 1e3, "ms"), (60e6, 1e6, "s"), (3600e6, 60e6, "min"),
        (86400e6 * 2, 3600e6, "h"),
    ):  # fmt: skip
        if abs(us) < limit:
            value = us / div
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{us / 86400e6:.1f} days"


def format_count(n: float | None) -> str:
    """7129326 -> 7.1M; 84108 -> 84.1k; 2383 -> 2,383."""
    if missing(n):
        return "-"
    n = float(n)
    if abs(n) < 10_000:
        return f"{n:,.0f}"
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.1f}{unit}"
    return f"{n:.0f}"


def format_bytes(n: float | None) -> str:
    if missing(n):
        return "-"
    n = float(n)
    for div, unit in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if abs(n) >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n:.0f} B"
