"""`logan stats`: where the time goes, as a table, CSV, JSON, Markdown or Parquet.

A thin layer over logan.stats; registered in cli.py with app.command("stats")(stats_command).
Log content is data in every output: rich Text cells (no markup), Markdown with its special
characters escaped, CSV cells that cannot start a spreadsheet formula.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Annotated

import pandas as pd
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from logan import stats as st
from logan.classify import collapse_routes
from logan.errors import LoganError
from logan.ingest import ingest
from logan.store import open_store

OUTPUTS = ("table", "csv", "json", "markdown", "parquet")
# A report written to a file or pipe is not squeezed into 80 columns.
_out = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
_err = Console(stderr=True, highlight=False)


def stats_command(
    files: Annotated[
        list[str] | None, typer.Argument(help="log files to read into a temporary store")
    ] = None,
    db: Annotated[Path | None, typer.Option("--db", help="DuckDB store file")] = None,
    by: Annotated[
        list[str] | None,
        typer.Option("--by", "-b", help=f"group by (repeatable): {', '.join(st.DIMENSIONS)}"),
    ] = None,
    sort: Annotated[str, typer.Option(help="total | count | avg | p95 | p99 | max")] = "total",
    top: Annotated[int, typer.Option(help="rows to show (0: all)")] = 20,
    since: Annotated[
        str | None, typer.Option(help="24h, 7d (before the last request) or a time (ISO, UTC unless given)")
    ] = None,
    until: Annotated[str | None, typer.Option(help="same forms as --since; exclusive")] = None,
    env: Annotated[list[str] | None, typer.Option(help="environment (repeatable)")] = None,
    method: Annotated[list[str] | None, typer.Option(help="HTTP method (repeatable)")] = None,
    status: Annotated[str | None, typer.Option(help="5xx, 404, 4xx,503, 500-504")] = None,
    path: Annotated[str | None, typer.Option("--path", help="path glob, e.g. '/api/*'")] = None,
    slo: Annotated[
        str | None, typer.Option(help="threshold for the SLO share and Apdex, e.g. 500ms")
    ] = None,
    output: Annotated[str, typer.Option("--output", "-o", help=" | ".join(OUTPUTS))] = "table",
    out: Annotated[Path | None, typer.Option("--out", help="file for --output parquet")] = None,
    format: Annotated[
        str, typer.Option("--format", "-f", help="log format preset or string (FILES); auto")
    ] = "auto",
    dialect: Annotated[str | None, typer.Option(help="apache | nginx | varnish | haproxy")] = None,
    tz: Annotated[str, typer.Option(help="time zone of timestamps without offset")] = "UTC",
    profile: Annotated[str, typer.Option(help="auto | puppet | generic")] = "auto",
    rules: Annotated[Path | None, typer.Option(help="classification rules (TOML)")] = None,
    trusted_proxy: Annotated[
        list[str] | None,
        typer.Option("--trusted-proxy", help="CIDR of a proxy whose X-Forwarded-For counts"),
    ] = None,
) -> None:
    """Where the time goes: requests, total time, share and percentiles per group.

    Given FILES, they are read into a temporary store first (into --db when given too).
    """
    if output not in OUTPUTS:
        raise LoganError(f"unknown --output {output!r}; use one of {', '.join(OUTPUTS)}")
    if output == "parquet" and out is None:
        raise LoganError("--output parquet needs --out FILE")
    if not files and db is None:
        raise LoganError("give log FILES, or --db STORE")
    if db is not None and not files and not db.exists():
        raise LoganError(f"no store at {db}")
    by = by or ["indirector"]
    try:
        slo_us = st.parse_duration(slo) if slo else None
        filters = dict(
            since=since, until=until, env=env or None, method=method or None,
            status=status, path_glob=path,
        )
        st.filter_sql(filters)  # option errors before any reading
        st.dimension_columns(by)
        if sort not in st.SORTS:
            raise ValueError(f"unknown --sort {sort!r}; use one of {', '.join(st.SORTS)}")
    except ValueError as exc:
        raise LoganError(str(exc)) from None

    # a store that is only read is opened read-only
    store = open_store(db, read_only=db is not None and not files)
    try:
        if files:
            _ingest(files, store, format, dialect, tz, profile, rules, trusted_proxy or [])
        try:
            table = st.stats(store.con, by=by, sort=sort, top=top, slo_us=slo_us, **filters)
        except ValueError as exc:
            raise LoganError(str(exc)) from None
        if output in ("table", "markdown"):
            # the table is the headline's ranking when it is sorted by total time
            ranked = table if sort == "total" else None
            head = st.headline(store.con, by=by, table=ranked, **filters)
            total = st.summary(store.con, **filters)["requests"]
        else:
            head, total = "", 0
    finally:
        store.close()
    write_stats(table, output, out, st.dimension_columns(by), head, total)


def _ingest(files, store, format, dialect, tz, profile, rules, trusted) -> None:  # noqa: ANN001
    s = ingest(
        files, store, format=format, dialect=dialect, tz=tz, profile=profile,
        rules=rules, trusted_proxies=trusted,
    )
    if s.profile in ("puppet", "generic"):
        collapse_routes(store.con)
    rejected = f", {s.rejects:,} rejected" if s.rejects else ""
    _err.print(
        Text(f"read {s.lines:,} lines: {s.rows:,} requests{rejected} (profile {s.profile})")
    )


# --- Output ---------------------------------------------------------------------------------
def write_stats(
    df: pd.DataFrame,
    output: str,
    out: Path | None = None,
    dims: list[str] | None = None,
    head: str = "",
    total_requests: int = 0,
) -> None:
    """Write a stats() table to stdout (or `out` for parquet) in the chosen form."""
    if output == "parquet":
        df.to_parquet(out, index=False)
        _err.print(Text(f"wrote {len(df):,} rows to {out}"))
    elif output == "json":
        records = json.loads(df.to_json(orient="records", date_format="iso"))
        sys.stdout.write(json.dumps(records, indent=1) + "\n")
    elif output == "csv":
        safe_csv(df).to_csv(sys.stdout, index=False)
    elif output == "markdown":
        cols, rows = human_rows(df, dims or [], total_requests)
        if head:
            sys.stdout.write("  \n".join(markdown_escape(x) for x in head.splitlines()) + "\n\n")
        sys.stdout.write(markdown_table(cols, rows))
    else:
        if head:
            _out.print(Text(head))
        cols, rows = human_rows(df, dims or [], total_requests)
        t = Table(show_lines=False)
        for i, c in enumerate(cols):
            if i < len(dims or []):
                t.add_column(Text(c), overflow="fold")
            else:
                t.add_column(Text(c), justify="right", no_wrap=True)
        for row in rows:
            t.add_row(*[Text(v) for v in row])
        _out.print(t)


def human_rows(
    df: pd.DataFrame, dims: list[str], total_requests: int
) -> tuple[list[str], list[list[str]]]:
    """Columns and cells for people: ms/s, 7.1M, %; only the timers the log has."""
    pct = _percent
    spec: list[tuple[str, str, object]] = [
        ("requests", "requests", st.format_count),
    ]
    if total_requests and ("share" not in df.columns or df["share"].isna().all()):
        # no times in the log: the share of requests is the next best answer
        spec.append(("% req", "requests", lambda n: pct(n / total_requests)))
    spec += [
        ("% time", "share", pct), ("total", "total_us", st.format_us),
        ("avg", "avg_us", st.format_us), ("p50", "p50_us", st.format_us),
        ("p95", "p95_us", st.format_us), ("p99", "p99_us", st.format_us),
        ("max", "max_us", st.format_us), ("5xx", "error_share", pct),
        ("bytes", "bytes", st.format_bytes),
    ]  # fmt: skip
    for timer in st.TIMERS:
        spec += [(f"{timer} avg", f"{timer}_avg_us", st.format_us),
                 (f"{timer} p95", f"{timer}_p95_us", st.format_us)]  # fmt: skip
    spec += [("in SLO", "slo_share", pct), ("apdex", "apdex", lambda v: f"{v:.2f}")]
    # a column the log cannot fill (no times at all, no upstream timer) is left out
    spec = [s for s in spec if s[1] in df.columns and df[s[1]].notna().any()]
    cols = dims + [s[0] for s in spec]
    rows = []
    for _, r in df.iterrows():
        cells = ["-" if pd.isna(r[d]) else str(r[d]) for d in dims]
        cells += ["-" if pd.isna(r[src]) else fmt(r[src]) for _, src, fmt in spec]
        rows.append(cells)
    return cols, rows


def _percent(x: float) -> str:
    return "-" if pd.isna(x) else f"{100 * x:.1f}%"


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_csv(df: pd.DataFrame) -> pd.DataFrame:
    """Text cells that a spreadsheet would run as a formula get a leading apostrophe."""
    df = df.copy()
    for col in df.columns:
        if df[col].dtype == object or pd.api.types.is_string_dtype(df[col]):
            df[col] = df[col].map(
                lambda v: "'" + v if isinstance(v, str) and v.startswith(_FORMULA_START) else v
            )
    return df


# Inline markup (emphasis, code, links, images, HTML, strikethrough, table cells); `[` and
# `<` cover links and HTML, so ( ) ! need no escape.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def markdown_escape(text: str) -> str:
    """Text shown literally by Markdown renderers (no links, HTML, emphasis or cell breaks)."""
    text = text.replace("\r", " ").replace("\n", " ").replace("&", "&amp;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    # a leading - + # = would start a list, heading or setext underline
    return "\\" + text if text[:1] in ("-", "+", "#", "=") else text


def markdown_table(cols: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(markdown_escape(c) for c in cols) + " |"]
    lines.append("|" + "|".join("---" for _ in cols) + "|")
    lines += ["| " + " | ".join(markdown_escape(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
