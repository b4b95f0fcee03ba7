"""`logan plot histogram|heatmap|pareto`: where the time goes, as a picture (PNG or SVG).

A thin layer over logan.show.plots, which draws what logan.answer gives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from logan.answer.inputs import requests_of
from logan.answer.views import DIMENSIONS, dimension_columns
from logan.cli import options as opt
from logan.errors import LoganError
from logan.show import plots
from logan.show.console import err, inert, said_read, say

EXAMPLES = (
    "Examples: logan plot histogram sample_logs/puppet_access.log -o histogram.png  ·  "
    "logan plot heatmap --db puppet.duckdb --since 6h -o heatmap.svg  ·  "
    "logan plot heatmap access.log --by route --top 3 -o routes.png  ·  "
    "logan plot pareto --db puppet.duckdb --by route -o pareto.png"
)


def plot_command(
    kind: Annotated[str, typer.Argument(help=" | ".join(plots.KINDS))],
    files: opt.FilesArg = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="the picture: a .png or .svg file")] = Path(
        "plot.png"
    ),
    db: opt.StoreOpt = None,
    by: Annotated[list[str] | None, typer.Option("--by", help=f"group by: {', '.join(DIMENSIONS)}")] = None,
    top: Annotated[
        int | None, typer.Option(min=1, help="groups drawn (default 8, 4 panels, 20 bars)")
    ] = None,
    since: opt.SinceOpt = None,
    until: opt.UntilOpt = None,
    env: opt.EnvOpt = None,
    method: opt.MethodOpt = None,
    status: opt.StatusOpt = None,
    path: opt.PathOpt = None,
    format: opt.FormatOpt = "auto",
    dialect: opt.DialectOpt = None,
    tz: opt.TzOpt = "UTC",
    profile: opt.ProfileOpt = "auto",
    rules: opt.RulesOpt = None,
    trusted_proxy: opt.TrustedProxyOpt = None,
    nginx_conf: opt.NginxConfOpt = None,
    log_format_name: opt.LogFormatNameOpt = None,
    keep_going: opt.KeepGoingOpt = False,
) -> None:
    """Draw a log-scale latency histogram per group, a latency-over-time heatmap (one panel,
    or one per group with --by), or the time-spent Pareto (share and cumulative share of
    server time per group)."""
    if kind not in plots.KINDS:
        raise LoganError(f"unknown picture {kind!r}; use {' | '.join(plots.KINDS)}")
    plots.check_path(out)
    format, dialect = opt.format_from_options(format, dialect, nginx_conf, log_format_name)
    filters = opt.filters(since, until, env, method, status, path)
    if by:
        dimension_columns(by)
    read = opt.read_options(format, dialect, tz, profile, rules, trusted_proxy, keep_going)
    with requests_of(files, db, plots.columns_read(kind, by, **filters), read, on_read=said_read) as store:
        fig = plots.figure(store.con, kind, by, top, **filters)
    plots.save(fig, out)
    say(f"wrote {inert(out)}", err)
