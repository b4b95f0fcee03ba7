"""`logan stats`: where the time goes, as a table, CSV, JSON, Markdown or Parquet.

A thin layer over logan.answer.stats; logan.show.stats writes the answer.
"""

from __future__ import annotations

from typing import Annotated

import typer

from logan.answer import stats as st
from logan.cli import options as opt
from logan.show.stats import check_columns, write_stats, write_view
from logan.units import parse_duration

EXAMPLES = (
    "Examples: logan stats sample_logs/puppet_access.log  ·  "
    "logan stats --db puppet.duckdb --by environment --by indirector --sort p99 --top 10  ·  "
    "logan stats access.log --by route --status 5xx --since 2h -o json"
)


@opt.command
def stats_command(
    rows: opt.Rows,
    where: opt.Where,
    shown: opt.Shown,
    reading: opt.Reading,
    by: Annotated[
        list[str] | None,
        typer.Option("--by", "-b", help=f"group by (repeatable): {', '.join(st.DIMENSIONS)}"),
    ] = None,
    sort: Annotated[str, typer.Option(help="total | count | avg | p95 | p99 | max")] = "total",
    top: opt.TopOpt = None,
    slo: Annotated[str | None, typer.Option(help="threshold for the SLO share and Apdex, e.g. 500ms")] = None,
    view: Annotated[
        str | None,
        typer.Option("--view", help=f"show one view instead: {' | '.join(st.VIEWS)}"),
    ] = None,
) -> None:
    """Where the time goes: requests, total time, share and percentiles per group.

    Given FILES, they are read into a temporary store first (into --db when given too).
    --view shows one view instead: percentiles (ab), histogram (hey), slowest requests,
    pareto and apdex (needs --slo) per --by, cache (the GET/HEAD endpoints worth caching).
    --engine spark --data DIR answers the same from Parquet on Spark (docs/spark.md).
    """
    check_columns(shown.fit.columns, view)
    by = by or ["indirector"]
    slo_us = parse_duration(slo, "--slo") if slo else None
    st.check_options(by, sort, view, slo_us)
    keep = st.columns_read(by, view, slo_us, **where)  # all a store made for this answer needs
    with rows.open(keep, reading, where) as store:
        a = st.answer(store.con, by, sort, opt.top(top, shown), view, slo_us, shown.human, **where)
    if view is not None:
        write_view(a.table, view, shown, st.dimension_columns(by), st.view_question(view, by, slo_us))
    else:
        write_stats(a.table, shown, st.dimension_columns(by), a.headline, a.requests)
