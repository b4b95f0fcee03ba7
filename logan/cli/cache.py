"""`logan cache`: what to cache, and what a cache with each TTL would really save.

A thin layer over logan.answer.cache; logan.show.cache writes the answer and
logan.show.cache_plot draws time saved against TTL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from logan.answer import cache as ca
from logan.answer.cache_sim import ASSIGNMENTS
from logan.cli import options as opt
from logan.show.cache import write_cache
from logan.show.cache_plot import check_path, plot_saved

EXAMPLES = (
    "Examples: logan cache sample_logs/puppet_access.log --by indirector --ttl 1s,60s,5min  ·  "
    "logan cache --db puppet.duckdb --by indirector --ttl auto --workers 20 --plot saved.png  ·  "
    "logan cache access.log --by url --ttl 5s --revalidate 2ms --max-objects 10000 -o json  ·  "
    "logan cache --engine spark --data lake/ --by indirector --ttl 60s -o json"
)


@opt.command
def cache_command(
    rows: opt.Rows,
    where: opt.Where,
    shown: opt.Shown,
    reading: opt.Reading,
    by: Annotated[str, typer.Option("--by", "-b", help=" | ".join(ca.BY))] = "route",
    key: Annotated[str, typer.Option(help="url (vhost+path+query) | path (drops the query)")] = "url",
    ttl: Annotated[str, typer.Option(help="one or more TTLs (1s,5s,60s,5min), or auto: a ladder")] = "60s",
    workers: Annotated[int, typer.Option(min=1, help="independent caches (per-process, per-host)")] = 1,
    assign: Annotated[
        str, typer.Option(help=f"how requests reach --workers: {' | '.join(ASSIGNMENTS)}")
    ] = "random",
    seed: Annotated[int, typer.Option(help="seed of --assign random")] = 0,
    coalesce: Annotated[
        bool, typer.Option("--coalesce/--no-coalesce", help="requests during a fill wait for it (hits)")
    ] = True,
    coalesce_new_only: Annotated[
        bool, typer.Option(help="only a key's first fill is waited for (nginx proxy_cache_lock)")
    ] = False,
    revalidate: Annotated[str | None, typer.Option(help="after expiry a 304 at this cost, e.g. 2ms")] = None,
    hit_cost: Annotated[
        str | None, typer.Option(help="what a hit costs (default: the key's fastest)")
    ] = None,
    max_objects: Annotated[int, typer.Option(min=0, help="LRU bound per cache, objects (0: none)")] = 0,
    max_bytes: Annotated[int, typer.Option(min=0, help="LRU bound per cache, bytes (0: none)")] = 0,
    keep_varying: Annotated[bool, typer.Option(help="replay keys whose answer size varies too")] = False,
    source: Annotated[str | None, typer.Option(help="replay only this source (tier) of the store")] = None,
    plot: Annotated[
        Path | None, typer.Option(help="PNG of time saved against TTL for the top groups")
    ] = None,
    top: opt.TopOpt = None,
) -> None:
    """What to cache: hit ratio, backend requests and server time saved per TTL, replayed
    through a modelled cache (fills land when the miss ends; coalescing; per-process caches).

    --engine spark --data DIR reads the requests from Parquet on Spark (docs/spark.md).
    """
    opt.warm("pandas")
    ca.check_options(by, key, ttl, assign, revalidate, hit_cost)
    if plot is not None:
        check_path(plot)
    keep = ca.columns_read(key, by, source, **where)
    with rows.open(keep, reading, where) as store:
        answer = ca.cache(
            store.con, by, key, ttl, workers, assign, seed, coalesce, revalidate, hit_cost,
            max_objects, max_bytes, opt.top(top, shown), source, keep_varying, coalesce_new_only, **where,
        )  # fmt: skip
    write_cache(answer, shown)
    if plot is not None:
        plot_saved(answer, plot)
