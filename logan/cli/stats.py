"""`logan stats`: where the time goes, as a table, CSV, JSON, Markdown or Parquet.

A thin layer over logan.answer.stats; logan.show.stats writes the answer.
"""

from __future__ import annotations

import glob
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from logan.answer import stats as st
from logan.cli import options as opt
from logan.errors import LoganError
from logan.read.classify import collapse_routes
from logan.read.ingest import ingest
from logan.show.console import err
from logan.show.stats import write_stats, write_view
from logan.show.writers import OUTPUTS
from logan.store import open_store


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
    slo: Annotated[str | None, typer.Option(help="threshold for the SLO share and Apdex, e.g. 500ms")] = None,
    view: Annotated[
        str | None,
        typer.Option("--view", help=f"show one view instead: {' | '.join(st.VIEWS)}"),
    ] = None,
    output: Annotated[str, typer.Option("--output", "-o", help=" | ".join(OUTPUTS))] = "table",
    out: Annotated[Path | None, typer.Option("--out", help="file for --output parquet")] = None,
    format: opt.FormatOpt = "auto",
    dialect: opt.DialectOpt = None,
    tz: opt.TzOpt = "UTC",
    profile: opt.ProfileOpt = "auto",
    rules: opt.RulesOpt = None,
    trusted_proxy: opt.TrustedProxyOpt = None,
    nginx_conf: opt.NginxConfOpt = None,
    log_format_name: opt.LogFormatNameOpt = None,
) -> None:
    """Where the time goes: requests, total time, share and percentiles per group.

    Given FILES, they are read into a temporary store first (into --db when given too).
    --view shows one view instead: percentiles (ab), histogram (hey), slowest requests,
    pareto and apdex (needs --slo) per --by, cache (the GET/HEAD endpoints worth caching).
    """
    format, dialect = opt.format_from_options(format, dialect, nginx_conf, log_format_name)
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
            since=since,
            until=until,
            env=env or None,
            method=method or None,
            status=status,
            path_glob=path,
        )
        st.filter_sql(filters)  # option errors before any reading
        st.dimension_columns(by)
        if sort not in st.SORTS:
            raise LoganError(f"unknown --sort {sort!r}; use one of {', '.join(st.SORTS)}")
        if view is not None and view not in st.VIEWS:
            raise LoganError(f"unknown --view {view!r}; use one of {', '.join(st.VIEWS)}")
        if view == "apdex" and slo_us is None:
            raise LoganError("--view apdex needs --slo, e.g. --slo 500ms")
    except ValueError as exc:
        raise LoganError(str(exc)) from None

    scratch = None
    if db is None and _input_bytes(files or []) > IN_MEMORY_MAX_BYTES:
        # A one-shot store in memory takes about 4x the log: big logs go to a file that is
        # removed afterwards (a little slower, RSS under 1.5 GB whatever the size).
        scratch = tempfile.TemporaryDirectory(prefix="logan-stats-")
        db = Path(scratch.name) / "stats.duckdb"
    # a store that is only read is opened read-only
    store = open_store(db, read_only=db is not None and not files)
    try:
        if files:
            # A store made for this one answer keeps only the columns it reads.
            keep = st.columns_read(by, view, slo_us, **filters) if db is None or scratch else None
            _ingest(files, store, format, dialect, tz, profile, rules, trusted_proxy or [], keep)
        if view is not None:
            table = _checked(st.named_records, store.con, view, by=by, top=top, slo_us=slo_us, **filters)
        else:
            table = _checked(st.stats_records, store.con, by=by, sort=sort, top=top, slo_us=slo_us, **filters)
        if view is None and output in ("table", "markdown"):
            # the table is the headline's ranking when it is sorted by total time
            ranked = table if sort == "total" else None
            totals = st.summary(store.con, **filters)
            head = st.headline(store.con, by=by, table=ranked, totals=totals, **filters)
            total = totals["requests"]
        else:
            head, total = "", 0
    finally:
        store.close()
        if scratch is not None:
            scratch.cleanup()
    if view is not None:
        write_view(table, view, output, out, st.dimension_columns(by), st.view_question(view, by, slo_us))
    else:
        write_stats(table, output, out, st.dimension_columns(by), head, total)


# Logs up to this size are read into an in-memory store (fastest); larger ones into a
# temporary file.
IN_MEMORY_MAX_BYTES = 1 << 30


def _input_bytes(files: list[str]) -> int:
    total = 0
    for pattern in files:
        for p in glob.glob(pattern) if any(c in pattern for c in "*?[") else [pattern]:
            path = Path(p)
            if path.is_dir():
                total += sum(f.stat().st_size for f in path.iterdir() if f.is_file())
            elif path.is_file():
                total += path.stat().st_size
    return total


def _checked(fn, *args, **kwargs) -> st.Records:  # noqa: ANN001, ANN002, ANN003
    # a bad option found late (by the SQL layer) is a usage error, not a traceback
    try:
        return fn(*args, **kwargs)
    except ValueError as exc:
        raise LoganError(str(exc)) from None


def _ingest(files, store, format, dialect, tz, profile, rules, trusted, keep) -> None:  # noqa: ANN001
    s = ingest(
        files,
        store,
        format=format,
        dialect=dialect,
        tz=tz,
        profile=profile,
        rules=rules,
        trusted_proxies=trusted,
        columns=keep,
    )
    if s.profile in ("puppet", "generic"):
        collapse_routes(store.con)
    rejected = f", {s.rejects:,} rejected" if s.rejects else ""
    err.print(Text(f"read {s.lines:,} lines: {s.rows:,} requests{rejected} (profile {s.profile})"))
