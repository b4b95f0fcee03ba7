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


@opt.command
def timeline_command(
    rows: opt.Rows,
    where: opt.Where,
    shown: opt.Shown,
    reading: opt.Reading,
    by: ByOpt = None,
    bucket: BucketOpt = None,
    plot: PlotOpt = None,
) -> None:
    """What happened when: per time bucket, requests/s, p50/p95/p99/max of every timer,
    status classes, bytes/s, cache hits, queues and requests in flight (exact).

    Given FILES, they are read into a temporary store first (into --db when given too).
    Under the table: HAProxy's server events and any saturation seen (requests in flight
    held at a ceiling while latency grew).
    --engine spark --data DIR answers the same from Parquet on Spark (docs/spark.md).
    """
    opt.warm("pandas")
    dims = dimension_columns(by) if by else []
    if bucket is not None:
        tl.bucket_width_us(0, 0, bucket)  # checked before any log is read
    if plot is not None:
        from logan.show.timeline_plot import check_plot_path

        check_plot_path(plot)
    with rows.open(None, reading, where) as store:
        story = tl.story(store.con, by or [], bucket, **where)
        if plot is not None:  # incidents are found on the whole traffic, not per series
            whole = tl.story(store.con, (), bucket, **where) if by else story
            shaded = incidents_of(store.con, whole, where)
    from logan.show.timeline import write_timeline

    write_timeline(story.frame, shown, dims, story.notes())
    if plot is not None:
        from logan.show.timeline_plot import save_timeline_plot

        save_timeline_plot(story, plot, shaded, dims)
