"""`logan incidents`: the windows where rate, latency, errors or requests in flight left
their baseline, what kind each was, how much worse, and the values that explain it.

A thin layer over logan.answer.incidents; logan.show.timeline writes it.
"""

from __future__ import annotations

import typer

from logan.answer import incidents as inc
from logan.answer import timeline as tl
from logan.cli import options as opt
from logan.cli.timeline import BucketOpt
from logan.errors import EXIT_PARTIAL
from logan.read.ingest import IngestSummary
from logan.show.console import said_read

EXAMPLES = (
    "Examples: logan incidents sample_logs/puppet_access.log  ·  "
    "logan incidents --db store.duckdb --bucket 1m -o json  ·  "
    "logan incidents haproxy.log --since 2026-11-24T23:00 --until 2026-11-25T02:00  ·  "
    "logan incidents --engine spark --data lake/ -o json"
)


def incidents_command(
    files: opt.FilesArg = None,
    db: opt.StoreOpt = None,
    bucket: BucketOpt = None,
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
    """When it went wrong: bursts, slowdowns, errors, saturation and servers down, each with
    its start, end, how much worse than the baseline, and its causes (the endpoints,
    requesters, servers... that explain most of the change, Adtributor-style).

    Given FILES, they are read into a temporary store first (into --db when given too).
    --engine spark --data DIR answers the same from Parquet on Spark (docs/spark.md).
    """
    format, dialect = opt.format_from_options(format, dialect, nginx_conf, log_format_name)
    shown = opt.output(output, out, wide, columns, raw)
    filters = opt.filters(since, until, env, method, status, path)
    if bucket is not None:
        tl.bucket_width_us(0, 0, bucket)  # checked before any log is read
    read = opt.read_options(format, dialect, tz, profile, rules, trusted_proxy, keep_going)
    summaries: list[IngestSummary] = []
    rows = opt.rows_source(engine, data, master, files, db, None, read, summaries.append, path)
    with rows as store:
        for s in summaries:
            said_read(s)
        found = inc.incidents(store.con, bucket, **filters)
    from logan.show.timeline import write_incidents

    write_incidents(found, shown, f"{len(found)} incident{'s' * (len(found) != 1)} found")
    if any(s.skipped for s in summaries):
        raise typer.Exit(EXIT_PARTIAL)
