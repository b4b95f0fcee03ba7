"""`logan timeline`: the story of a period bucket by bucket (rate, latency, errors, requests
in flight), with the server events and any saturation under it, and a picture with --plot.

A thin layer over logan.answer.timeline; logan.show.timeline and timeline_plot write it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from logan.answer import timeline as tl
from logan.answer.incidents import incidents_of
from logan.answer.views import DIMENSIONS, dimension_columns
from logan.cli import options as opt
from logan.errors import EXIT_PARTIAL
from logan.read.ingest import IngestSummary
from logan.show.console import said_read

EXAMPLES = (
    "Examples: logan timeline sample_logs/puppet_access.log  ·  "
    "logan timeline --db store.duckdb --bucket 1m --by source --plot night.png  ·  "
    "logan timeline haproxy.log --by server -o json  ·  "
    "logan timeline --engine spark --data lake/ --bucket 1m -o json"
)
ByOpt = Annotated[
    list[str] | None, typer.Option("--by", "-b", help=f"one series per: {', '.join(DIMENSIONS)}")
]
BucketOpt = Annotated[str | None, typer.Option(help="bucket width, e.g. 10s, 1m, 5m (default: ~100 buckets)")]
PlotOpt = Annotated[Path | None, typer.Option("--plot", help="also draw the timeline to this .png or .svg")]


def timeline_command(
    files: opt.FilesArg = None,
    db: opt.StoreOpt = None,
    by: ByOpt = None,
    bucket: BucketOpt = None,
    plot: PlotOpt = None,
    since: opt.SinceOpt = None,
    until: opt.UntilOpt = None,
    env: opt.EnvOpt = None,
    method: opt.MethodOpt = None,
    status: opt.StatusOpt = None,
    path: opt.PathOpt = None,
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
    """What happened when: per time bucket, requests/s, p50/p95/p99/max of every timer,
    status classes, bytes/s, cache hits, queues and requests in flight (exact).

    Given FILES, they are read into a temporary store first (into --db when given too).
    Under the table: HAProxy's server events and any saturation seen (requests in flight
    held at a ceiling while latency grew).
    --engine spark --data DIR answers the same from Parquet on Spark (docs/spark.md).
    """
    format, dialect = opt.format_from_options(format, dialect, nginx_conf, log_format_name)
    shown = opt.output(output, out, wide, columns, raw)
    filters = opt.filters(since, until, env, method, status, path)
    dims = dimension_columns(by) if by else []
    if bucket is not None:
        tl.bucket_width_us(0, 0, bucket)  # checked before any log is read
    if plot is not None:
        from logan.show.timeline_plot import check_plot_path

        check_plot_path(plot)
    read = opt.read_options(format, dialect, tz, profile, rules, trusted_proxy, keep_going)
    summaries: list[IngestSummary] = []
    rows = opt.rows_source(engine, data, master, files, db, None, read, summaries.append, path)
    with rows as store:
        for s in summaries:
            said_read(s)
        story = tl.story(store.con, by or [], bucket, **filters)
        if plot is not None:  # incidents are found on the whole traffic, not per series
            whole = tl.story(store.con, (), bucket, **filters) if by else story
            shaded = incidents_of(store.con, whole, filters)
    from logan.show.timeline import write_timeline

    write_timeline(story.frame, shown, dims, story.notes())
    if plot is not None:
        from logan.show.timeline_plot import save_timeline_plot

        save_timeline_plot(story, plot, shaded, dims)
    if any(s.skipped for s in summaries):
        raise typer.Exit(EXIT_PARTIAL)
