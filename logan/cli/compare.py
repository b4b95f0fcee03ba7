"""`logan compare`: before and after, per group, with a verdict beyond noise.

A thin layer over logan.answer.compare; logan.show.compare writes the answer. The two sides
are two sets of logs (`--a FILE... --b FILE...`, or exactly two FILES), or two periods of
one input (FILES or --db) named by --a-since ... --b-until or --baseline 1d|7d.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Annotated

import typer

from logan.answer import compare as cmp
from logan.answer.views import DIMENSIONS, dimension_columns
from logan.cli import options as opt
from logan.errors import LoganError
from logan.show.compare import heading, side_label, write_compare

EXAMPLES = (
    "Examples: logan compare sample_logs/puppet_access.log "
    "--a-until 2013-11-05T19:04 --b-since 2013-11-05T19:04  ·  "
    "logan compare before.log after.log  ·  "
    "logan compare --a 'old/*.log' --b new.log --by route -o markdown  ·  "
    "logan compare --db puppet.duckdb --baseline 7d --since 24h  ·  "
    "logan compare access.log --a-until '2024-05-01 12:00' --b-since '2024-05-01 12:00' -o json  ·  "
    "logan compare --engine spark --data lake/ --baseline 1d --since 24h"
)
FilesOpt = Annotated[list[str] | None, typer.Option(help="log files of that side (repeatable; globs)")]
TimeOpt = Annotated[str | None, typer.Option(help="same forms as --since")]


@opt.command
def compare_command(
    rows: opt.Rows,
    where: opt.Where,
    shown: opt.Shown,
    reading: opt.Reading,
    a: FilesOpt = None,
    b: FilesOpt = None,
    a_since: TimeOpt = None,
    a_until: TimeOpt = None,
    b_since: TimeOpt = None,
    b_until: TimeOpt = None,
    baseline: Annotated[
        str | None, typer.Option(help="1d | 7d: B is --since..--until, A that much earlier")
    ] = None,
    by: Annotated[list[str] | None, typer.Option("--by", help=f"group by: {', '.join(DIMENSIONS)}")] = None,
    alpha: Annotated[
        float, typer.Option(min=0, max=1, help="false discovery rate over the groups")
    ] = cmp.ALPHA,
    min_requests: Annotated[int, typer.Option(min=2, help="timed requests a side needs")] = cmp.MIN_REQUESTS,
    min_change: Annotated[
        float, typer.Option(min=0, help="the median must move this much (0.1: 10%)")
    ] = cmp.MIN_CHANGE,
    top: opt.TopOpt = None,
) -> None:
    """Before and after, per group: count, avg, p50, p95, p99, max and total time of side A
    and side B, with deltas, ratios and a verdict (regression, improvement, same, too few)
    from a Mann-Whitney U test per group. docs/compare.md says how to read it.

    --engine spark --data DIR compares two periods of a Parquet folder on Spark (docs/spark.md).
    """
    opt.warm("pandas")
    by = by or ["indirector"]
    dimension_columns(by)
    periods = any(v is not None for v in (a_since, a_until, b_since, b_until))
    sets = two_sets(rows.files or [], rows.db, a or [], b or [], periods or baseline is not None)
    cmp.check_periods(bool(sets), periods, baseline, where)  # before any reading
    keep = cmp.columns_read(by, **where)
    with ExitStack() as stack:
        if sets:
            stores = [stack.enter_context(rows.open(keep, reading, where, files=s)) for s in sets]
            con, con_b = stores[0].con, stores[1].con
        else:
            con, con_b = stack.enter_context(rows.open(keep, reading, where)).con, None
        side_a, side_b = cmp.sides(con, con_b, a_since, a_until, b_since, b_until, baseline, where)
        table = cmp.compare_sides(side_a, side_b, by, cmp.Criteria(alpha, min_requests, min_change))
    names = sets or [None, None]
    labels = side_label(side_a.filters, names[0]), side_label(side_b.filters, names[1])
    head = heading(table, *labels, alpha, min_requests, min_change)
    write_compare(table, shown, dimension_columns(by), head, opt.top(top, shown))


def two_sets(files: list[str], db: object, a: list[str], b: list[str], periods: bool) -> list[list[str]]:
    """The two sets of logs the arguments name ([] when they name one input)."""
    if a or b:
        if not (a and b):
            raise LoganError("--a and --b go together: the logs of side A and of side B")
        if files or db is not None:
            raise LoganError("with --a and --b, give no other FILES nor --db")
        return [a, b]
    if len(files) == 2 and db is None and not periods:
        return [files[:1], files[1:]]
    return []
