"""`logan export`: a store as Parquet folders partitioned by day, for Spark and any engine
that reads Parquet (logan.engines.export does the work)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from logan.answer.inputs import requests_of
from logan.cli import options as opt
from logan.engines.export import export
from logan.errors import LoganError
from logan.show.console import say

EXAMPLES = (
    "Examples: logan export --db puppet.duckdb --to puppet-parquet  ·  "
    "logan export --db web.duckdb --to /mnt/lake/web  (again tomorrow: only the new days are written)"
)


def export_command(
    db: opt.StoreOpt = None,
    to: Annotated[Path | None, typer.Option("--to", help="folder to write (created if missing)")] = None,
) -> None:
    """Write a store's requests (by day), events, rejects and ingests as Parquet under --to;
    a day already there with the same rows is left as it is."""
    if db is None or to is None:
        raise LoganError("logan export needs --db STORE and --to DIR")
    with requests_of(db=db) as store:
        done = export(store.con, to)
    for table, days in done.written.items():
        kept = done.kept[table]
        say(f"{table}: {len(days)} day(s) written ({done.rows[table]:,} rows), {len(kept)} unchanged")
    for table in ("rejects", "ingests"):
        say(f"{table}: {done.rows[table]:,} rows")
    say(f"under {to}")
