"""`logan incidents`: the windows where rate, latency, errors or requests in flight left
their baseline, what kind each was, how much worse, and the values that explain it.

A thin layer over logan.answer.incidents; logan.show.timeline writes it.
"""

from __future__ import annotations

from logan.answer import incidents as inc
from logan.answer import timeline as tl
from logan.cli import options as opt
from logan.cli.timeline import BucketOpt

EXAMPLES = (
    "Examples: logan incidents sample_logs/puppet_access.log  ·  "
    "logan incidents --db store.duckdb --bucket 1m -o json  ·  "
    "logan incidents haproxy.log --since 2026-11-24T23:00 --until 2026-11-25T02:00  ·  "
    "logan incidents --engine spark --data lake/ -o json"
)


@opt.command
def incidents_command(
    rows: opt.Rows,
    where: opt.Where,
    shown: opt.Shown,
    reading: opt.Reading,
    bucket: BucketOpt = None,
) -> None:
    """When it went wrong: bursts, slowdowns, errors, saturation and servers down, each with
    its start, end, how much worse than the baseline, and its causes (the endpoints,
    requesters, servers... that explain most of the change, Adtributor-style).

    Given FILES, they are read into a temporary store first (into --db when given too).
    --engine spark --data DIR answers the same from Parquet on Spark (docs/spark.md).
    """
    opt.warm("pandas")
    if bucket is not None:
        tl.bucket_width_us(0, 0, bucket)  # checked before any log is read
    with rows.open(None, reading, where) as store:
        found = inc.incidents(store.con, bucket, **where)
    from logan.show.timeline import write_incidents

    write_incidents(found, shown, f"{len(found)} incident{'s' * (len(found) != 1)} found")
