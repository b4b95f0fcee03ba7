"""The views of `queries/`: their SQL text with its template slots filled, run over the
`requests` of a store (narrowed by a filter), answered as Records or DataFrames.

Every answer module (stats, and the ones after it) runs its views through here, so a view
is read, filled and narrowed one way. The only text that enters a template is a name from
the whitelists below; values are bound parameters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from logan import schema
from logan.errors import LoganError
from logan.resources import queries_dir
from logan.store import extra_sets, stored_columns

if TYPE_CHECKING:  # imported where a DataFrame is made: 0.4 s the CLI need not spend
    import pandas as pd
    import pyarrow as pa

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


# The rows a view's statistics and percentiles are worked out over, unless its caller says
# (its {group_rows} and {percentile_rows} slots: queries/by_dimension.sql)
EVERY_ROW = "SELECT * FROM requests"


def query_sql(
    name: str,
    by: Sequence[str] | str = (),
    slo_us: int | None = None,
    percentile_rows: str = EVERY_ROW,
    group_rows: str = EVERY_ROW,
) -> str:
    """The text of queries/<name>.sql with its template slots filled from --by names, and
    `percentile_rows` and `group_rows` (SQL over the view's own CTEs, made by
    logan.answer) in its {percentile_rows} and {group_rows} slots."""
    sql = query_path(name).read_text()
    cols = dimension_columns(by) if "{dimensions}" in sql else []
    sql = sql.replace("{percentile_rows}", percentile_rows).replace("{group_rows}", group_rows)
    sql = with_parts(sql.replace("{dimensions}", ", ".join(cols)), cols)
    if "{slo_us}" in sql:
        if slo_us is None:
            raise LoganError(f"view {name!r} needs a threshold (slo_us)")
        sql = sql.replace("{slo_us}", str(int(slo_us)))
    return sql


# A view's parameter, as the views spell one: a value bound when it runs (a bucket's width).
_PARAMETER = re.compile(r"CAST\(\? AS \w+\)")


def create_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Create TEMP views: one per plain queries/*.sql (named after the file) and by_<dim>
    for each per-dimension name. Returns their names."""
    names = []
    for path in sorted(queries_dir().glob("*.sql")):
        text = path.read_text()
        if "{slo_us}" in text or "{series}" in text or "{columns}" in text or _PARAMETER.search(text):
            continue  # needs its values: no plain view
        if "{dimensions}" in text:
            for dim in DIMENSIONS:
                view = f"{path.stem}_{dim}" if path.stem != "by_dimension" else f"by_{dim}"
                con.execute(f"CREATE OR REPLACE TEMP VIEW {_ident(view)} AS "
                            f"{query_sql(path.stem, [dim])}")  # fmt: skip
                names.append(view)
        else:
            con.execute(f"CREATE OR REPLACE TEMP VIEW {_ident(path.stem)} AS {query_sql(path.stem)}")
            names.append(path.stem)
    return names


def _ident(name: str) -> str:
    # a file name a user chose, as a quoted SQL identifier
    return '"' + name.replace('"', '""') + '"'


class Records:
    """A query's answer as plain rows (dicts), with DuckDB's column types.

    The CLI prints these as they are (pandas takes 0.4 s to import, more than a query on
    5 M rows); the library hands out `.frame()`, a DataFrame.
    """

    def __init__(
        self, columns: list[str], types: list[str], rows: list[dict[str, Any]], total: int | None = None
    ):
        self.columns, self.types, self.rows = columns, types, rows
        self.total = len(rows) if total is None else total  # rows before a `top` cut them

    def __len__(self) -> int:
        return len(self.rows)

    def without(self, drop: Sequence[str]) -> Records:
        keep = [(c, t) for c, t in zip(self.columns, self.types, strict=True) if c not in drop]
        return Records([c for c, _ in keep], [t for _, t in keep],
                       [{c: r[c] for c, _ in keep} for r in self.rows], self.total)  # fmt: skip

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
    found = Records(columns, types, rows)
    if ROWS_BEFORE_TOP in columns:  # see ordered()
        found = found.without([ROWS_BEFORE_TOP])
        found.total = rows[0][ROWS_BEFORE_TOP] if rows else 0
    return found


def run_arrow(con: duckdb.DuckDBPyConnection, sql: str, where: str = "", params: Sequence = ()) -> pa.Table:
    """run_records() for answers of millions of rows (the samples a test or a plot reads):
    an Arrow table, no Python object per value."""
    return con.sql(_narrowed(con, sql, where), params=list(params)).to_arrow_table()


def run_cursor(
    con: duckdb.DuckDBPyConnection, sql: str, where: str = "", params: Sequence = ()
) -> duckdb.DuckDBPyConnection:
    """Run a view's SQL as run_records does, its answer left in DuckDB for the caller to
    fetch as arrays (fetchnumpy) or a DataFrame: for answers of a row per request."""
    return con.execute(_narrowed(con, sql, where), list(params))


def series_sql(name: str, cols: Sequence[str]) -> str:
    """queries/<name>.sql with columns checked against DIMENSIONS (dimension_columns) in
    its {series} slot (`a, b, ` before the view's own columns; empty for one series),
    {columns} slot (`a, b`) and {partition} slot (`PARTITION BY a, b`, or empty)."""
    sql = query_path(name).read_text()
    listed = "".join(f"{c}, " for c in cols)
    partition = f"PARTITION BY {', '.join(cols)}" if cols else ""
    return (
        sql.replace("{series}", listed)
        .replace("{columns}", ", ".join(cols))
        .replace("{partition}", partition)
    )


# A view's slot for a part of queries/parts/ and the rows it reads, {timer_percentiles:requests},
# and the column it groups them by when the view names one itself: {timer_percentiles:hours BY hour}
_PART = re.compile(r"\{(timer_percentiles):(\w+)(?: BY (\w+))?\}")


def with_parts(sql: str, cols: Sequence[str]) -> str:
    """`sql` with the CTEs of the part its slot names spliced in, grouped by `cols` (or by
    the column the slot names); its {group_columns} are those of `g`, and {same_group} says
    that rows `p` and `g` are of one group. Only names from the views' own text and the
    DIMENSIONS whitelist enter."""
    found = _PART.search(sql)
    if found is None:
        return sql
    name, source, fixed = found.groups()
    cols = [fixed] if fixed else cols
    part = (queries_dir() / "parts" / f"{name}.sql").read_text()
    part = (
        part.replace("{groups}", "".join(f"{c}, " for c in cols))
        .replace("{group_by}", f"GROUP BY {', '.join(cols)}" if cols else "")
        .replace("{source}", source)
        .replace("{keyed_on}", same_group("s", "k", cols))
    )
    sql = sql[: found.start()] + part.strip() + sql[found.end() :]
    same = same_group("p", "g", cols)
    return sql.replace("{group_columns}", ", ".join(f"g.{c}" for c in cols)).replace("{same_group}", same)


def same_group(left: str, right: str, cols: Sequence[str]) -> str:
    """That rows `left` and `right` are of one group of `cols` (NULL matching NULL: a group
    may have no environment); TRUE for no columns, one group."""
    return " AND ".join(f"{left}.{c} IS NOT DISTINCT FROM {right}.{c}" for c in cols) or "TRUE"


# A lookup of one `extra` entry by name in a view's text (queries/cache_requests.sql).
_EXTRA_LOOKUP = re.compile(r"\bextra\['([^']*)'\]")


def _narrowed(con: duckdb.DuckDBPyConnection, sql: str, where: str) -> str:
    """`sql` over the rows of `requests` that `where` keeps. Its text stays as written: a
    CTE named requests shadows the view, and leaves out the view's join with `ingests` when
    neither reads source, dialect or format; and its lookups of an `extra` entry by name
    read the entry's own column (schema.extra_lookup_sql), not a map made for every row."""
    named = columns_named(sql, where)
    if named & set(schema.FROM_INGESTS):
        rows = "SELECT * FROM main.requests"
    else:
        stored = stored_columns(con)
        sets = extra_sets(con, stored)
        keys = list(dict.fromkeys(_EXTRA_LOOKUP.findall(sql))) if sets else []
        for i, key in enumerate(keys):
            sql = sql.replace(f"extra['{key}']", f"{schema.EXTRA_LOOKUP}{i}")
        routes = "route" in named
        rows = schema.requests_select_sql(stored, provenance=False, routes=routes, sets=sets, lookups=keys)
    narrowed = f"SELECT * FROM ({rows}) AS r WHERE {where}" if where else rows
    # NOT MATERIALIZED: DuckDB would otherwise hold every row of a CTE that a view reads
    # twice (queries/by_dimension.sql) in memory, 1.9 GB for 20 M rows
    return f"WITH requests AS NOT MATERIALIZED ({narrowed})\nSELECT * FROM (\n{sql}\n) AS v"


def narrowed(con: duckdb.DuckDBPyConnection, sql: str, where: str = "") -> str:
    """`sql` over the rows `where` keeps, for an answer that runs it itself (into a table,
    or fetched as arrays: logan.answer.cache)."""
    return _narrowed(con, sql, where)


def columns_named(*sql: str) -> set[str]:
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


# How many rows an answer had before `top` cut it ("20 of 798 shown"): a column run_records
# takes off into Records.total.
ROWS_BEFORE_TOP = "__rows_before_top"


def order_by(keys: Sequence[tuple[str, bool]]) -> str:
    """An ORDER BY list of (column, descending) keys, NULLs last. The column names come
    from the whitelists of this module."""
    return ", ".join(f"{c} {'DESC' if desc else 'ASC'} NULLS LAST" for c, desc in keys)


# ordered() with a lead: the rank of each row kept, and whether it is the lead's first row.
RANK, LEAD = "__rank", "__lead"


def ordered(
    sql: str,
    keys: Sequence[tuple[str, bool]],
    top: int | None,
    lead: Sequence[tuple[str, bool]] | None = None,
) -> tuple[str, list]:
    """The rows of `sql` ordered by (column, descending) keys, NULLs last, cut to `top`.

    With `lead` keys, also the row first by those (the headline's group, the most server
    time, under a table sorted by p99), in the same pass: columns RANK and LEAD say which
    rows are which, and that row comes last when the cut left it out."""
    limit, params = (" LIMIT ?", [top]) if top else ("", [])
    counted = f"*, count(*) OVER () AS {ROWS_BEFORE_TOP}"
    if lead is None:
        return f"SELECT {counted} FROM (\n{sql}\n) AS ranked ORDER BY {order_by(keys)}{limit}", params
    marked = (
        f"SELECT {counted}, row_number() OVER (ORDER BY {order_by(keys)}) AS {RANK},"
        f" row_number() OVER (ORDER BY {order_by(lead)}) = 1 AS {LEAD} FROM (\n{sql}\n) AS ranked"
    )
    cut = f" WHERE {RANK} <= ? OR {LEAD}" if top else ""
    return f"SELECT * FROM ({marked}) AS marked{cut} ORDER BY {RANK}", params
