"""`logan stats`: where the time goes, as a table, CSV, JSON, Markdown or Parquet.

A thin layer over logan.answer.stats; logan.show.stats writes the answer.
"""

from __future__ import annotations

from typing import Annotated

import typer

from logan.answer import stats as st
from logan.cli import options as opt
from logan.errors import EXIT_PARTIAL
from logan.read.ingest import IngestSummary
from logan.show.console import said_read
from logan.show.stats import check_columns, write_stats, write_view
from logan.units import parse_duration

EXAMPLES = (
    "Examples: logan stats sample_logs/puppet_access.log  ·  "
    "logan stats --db puppet.duckdb --by environment --by indirector --sort p99 --top 10  ·  "
    "logan stats access.log --by route --status 5xx --since 2h -o json"
)


def stats_command(
    files: opt.FilesArg = None,
    db: opt.StoreOpt = None,
    by: Annotated[
        list[str] | None,
        typer.Option("--by", "-b", help=f"group by (repeatable): {', '.join(st.DIMENSIONS)}"),
    ] = None,
    sort: Annotated[str, typer.Option(help="total | count | avg | p95 | p99 | max")] = "total",
    top: opt.TopOpt = None,
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
    output: opt.OutputOpt = "table",
    out: opt.OutFileOpt = None,
    wide: opt.WideOpt = False,
    columns: opt.ColumnsOpt = None,
    raw: opt.RawOpt = False,
    format: opt.FormatOpt = "auto",
    dialect: opt.DialectOpt = None,
    tz: opt.TzOpt = "UTC",
    profile: opt.ProfileOpt = "auto",
    rules: opt.RulesOpt = None,
    trusted_proxy: opt.TrustedProxyOpt = None,
    nginx_conf: opt.NginxConfOpt = None,
    log_format_name: opt.LogFormatNameOpt = None,
    keep_going: opt.KeepGoingOpt = False,
    engine: opt.EngineOpt = "duckdb",
    data: opt.DataOpt = None,
    master: opt.MasterOpt = None,
) -> None:
    """Where the time goes: requests, total time, share and percentiles per group.

    Given FILES, they are read into a temporary store first (into --db when given too).
    --view shows one view instead: percentiles (ab), histogram (hey), slowest requests,
    pareto and apdex (needs --slo) per --by, cache (the GET/HEAD endpoints worth caching).
    --engine spark --data DIR answers the same from Parquet on Spark (docs/spark.md).
    """
    format, dialect = opt.format_from_options(format, dialect, nginx_conf, log_format_name)
    shown = opt.output(output, out, wide, columns, raw)
    check_columns(shown.fit.columns, view)
    by, filters = by or ["indirector"], opt.filters(since, until, env, method, status, path)
    slo_us = parse_duration(slo, "--slo") if slo else None
    st.check_options(by, sort, view, slo_us)
    read = opt.read_options(format, dialect, tz, profile, rules, trusted_proxy, keep_going)
    keep = st.columns_read(by, view, slo_us, **filters)  # all a store made for this answer needs
    summaries: list[IngestSummary] = []
    rows = opt.rows_source(engine, data, master, files, db, keep, read, summaries.append, path)
    with rows as store:
        for s in summaries:
            said_read(s)
        a = st.answer(store.con, by, sort, opt.top(top, shown), view, slo_us, shown.human, **filters)
    if view is not None:
        write_view(a.table, view, shown, st.dimension_columns(by), st.view_question(view, by, slo_us))
    else:
        write_stats(a.table, shown, st.dimension_columns(by), a.headline, a.requests)
    if any(s.skipped for s in summaries):
        raise typer.Exit(EXIT_PARTIAL)
