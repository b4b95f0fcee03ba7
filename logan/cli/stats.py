"""`logan stats`: where the time goes, as a table, CSV, JSON, Markdown or Parquet.

A thin layer over logan.answer.stats; logan.show.stats writes the answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from logan.answer import stats as st
from logan.answer.inputs import requests_of
from logan.cli import options as opt
from logan.errors import LoganError
from logan.read.ingest import IngestSummary
from logan.show.console import err
from logan.show.stats import write_stats, write_view
from logan.show.writers import OUTPUTS


def stats_command(
    files: opt.FilesArg = None,
    db: opt.StoreOpt = None,
    by: Annotated[
        list[str] | None,
        typer.Option("--by", "-b", help=f"group by (repeatable): {', '.join(st.DIMENSIONS)}"),
    ] = None,
    sort: Annotated[str, typer.Option(help="total | count | avg | p95 | p99 | max")] = "total",
    top: Annotated[int, typer.Option(help="rows to show (0: all)")] = 20,
    since: opt.SinceOpt = None,
    until: opt.UntilOpt = None,
    env: opt.EnvOpt = None,
    method: opt.MethodOpt = None,
    status: opt.StatusOpt = None,
    path: opt.PathOpt = None,
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
    by = by or ["indirector"]
    filters = opt.filters(since, until, env, method, status, path)
    try:
        slo_us = st.parse_duration(slo) if slo else None
        st.dimension_columns(by)
        if sort not in st.SORTS:
            raise LoganError(f"unknown --sort {sort!r}; use one of {', '.join(st.SORTS)}")
        if view is not None and view not in st.VIEWS:
            raise LoganError(f"unknown --view {view!r}; use one of {', '.join(st.VIEWS)}")
        if view == "apdex" and slo_us is None:
            raise LoganError("--view apdex needs --slo, e.g. --slo 500ms")
    except ValueError as exc:
        raise LoganError(str(exc)) from None

    keep = st.columns_read(by, view, slo_us, **filters)  # all a store made for this answer needs
    with requests_of(files, db, keep, opt.read_options(format, dialect, tz, profile, rules, trusted_proxy),
                     on_read=_said) as store:  # fmt: skip
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
    if view is not None:
        write_view(table, view, output, out, st.dimension_columns(by), st.view_question(view, by, slo_us))
    else:
        write_stats(table, output, out, st.dimension_columns(by), head, total)


def _checked(fn, *args, **kwargs) -> st.Records:  # noqa: ANN001, ANN002, ANN003
    # a bad option found late (by the SQL layer) is a usage error, not a traceback
    try:
        return fn(*args, **kwargs)
    except ValueError as exc:
        raise LoganError(str(exc)) from None


def _said(s: IngestSummary) -> None:
    rejected = f", {s.rejects:,} rejected" if s.rejects else ""
    err.print(Text(f"read {s.lines:,} lines: {s.rows:,} requests{rejected} (profile {s.profile})"))
