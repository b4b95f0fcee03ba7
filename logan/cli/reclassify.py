"""`logan reclassify`: classify every request of a store again (classify.reclassify), with
the rules, profile and route templates of today, without reading the logs again: after a
rules file changed, or on a store an older logan wrote."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from logan.answer.inputs import ReadOptions
from logan.cli.options import ProfileOpt, RulesOpt, TrustedProxyOpt, read_options
from logan.errors import LoganError
from logan.read.classify import reclassify
from logan.show.console import say
from logan.store import Store, open_existing, transaction, within_memory

EXAMPLES = "Example: logan reclassify --db web.duckdb --profile generic"

# DuckDB's memory while it classifies (classify.reclassify, a piece of the rows at a time):
# what it caches of the store's blocks and the rows' changes not yet committed; more spills.
# 10.2 M rows (4 GB of Apache's extended lines): 649 MiB of peak RSS and 28 s, against
# 3.3 GiB and 26 s without the bound.
MEMORY_MB = 512


def reclassify_command(
    db: Annotated[Path, typer.Option("--db", help="the store to classify again")],
    profile: ProfileOpt = "auto",
    rules: RulesOpt = None,
    trusted_proxy: TrustedProxyOpt = None,
) -> None:
    """Classify every request of a store again: indirector, resource, environment, requester
    and route, with these rules and today's route templates. One transaction: a run that
    fails or is stopped leaves the store as it was."""
    if profile == "none":
        raise LoganError("--profile none: reclassify takes auto, puppet or generic")
    options = read_options("auto", None, "UTC", profile, rules, trusted_proxy)  # checked first
    t0 = time.perf_counter()
    store = open_existing(db)
    try:
        n = within_memory(store.con, MEMORY_MB, lambda: _again(store, options))
        routes = store.con.execute("SELECT count(DISTINCT route) FROM requests").fetchall()[0][0]
    finally:
        store.close()
    say(f"classified {n:,} requests again: {routes:,} routes, took {time.perf_counter() - t0:.2f} s")


def _again(store: Store, options: ReadOptions) -> int:
    with transaction(store.con):
        return reclassify(store.con, options.profile, options.rules, options.trusted_proxies)
