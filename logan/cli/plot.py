"""`logan plot histogram|heatmap|pareto`: where the time goes, as a picture (PNG or SVG).

A thin layer over logan.show.plots, which draws what logan.answer gives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from logan.answer.views import DIMENSIONS, dimension_columns
from logan.cli import options as opt
from logan.errors import LoganError
from logan.show import plots
from logan.show.charts import CHART_MODULES
from logan.show.console import err, inert, say

EXAMPLES = (
    "Examples: logan plot histogram sample_logs/puppet_access.log -o histogram.png  ·  "
    "logan plot heatmap --db puppet.duckdb --since 6h -o heatmap.svg  ·  "
    "logan plot heatmap access.log --by route --top 3 -o routes.png  ·  "
    "logan plot pareto --db puppet.duckdb --by route -o pareto.png"
)


@opt.command
def plot_command(
    kind: Annotated[str, typer.Argument(help=" | ".join(plots.KINDS))],
    rows: opt.StoredRows,
    where: opt.Where,
    reading: opt.Reading,
    out: Annotated[Path, typer.Option("--out", "-o", help="the picture: a .png or .svg file")] = Path(
        "plot.png"
    ),
    by: Annotated[list[str] | None, typer.Option("--by", help=f"group by: {', '.join(DIMENSIONS)}")] = None,
    top: Annotated[
        int | None, typer.Option(min=1, help="groups drawn (default 8, 4 panels, 20 bars)")
    ] = None,
) -> None:
    """Draw a log-scale latency histogram per group, a latency-over-time heatmap (one panel,
    or one per group with --by), or the time-spent Pareto (share and cumulative share of
    server time per group)."""
    opt.warm("pandas", *CHART_MODULES)
    if kind not in plots.KINDS:
        raise LoganError(f"unknown picture {kind!r}; use {' | '.join(plots.KINDS)}")
    plots.check_path(out)
    if by:
        dimension_columns(by)
    with rows.open(plots.columns_read(kind, by, **where), reading, where) as store:
        fig = plots.figure(store.con, kind, by, top, **where)
    plots.save(fig, out)
    say(f"wrote {inert(out)}", err)
