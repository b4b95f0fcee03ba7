"""`logan prune`: drop what a store holds from before a retention window, so a store fed
every night keeps a steady size (Store.prune)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer

from logan.errors import LoganError
from logan.show.console import say
from logan.store import Store, open_existing
from logan.units import parse_duration

EXAMPLES = "Example: logan prune --db web.duckdb --keep 35d"

KeepOpt = Annotated[
    str | None, typer.Option("--keep", help="keep this much, up to now (35d, 12w); drop what is older")
]


def cutoff(keep: str) -> datetime:
    """The instant (UTC) before which `--keep` drops requests."""
    us = parse_duration(keep, "--keep")
    if us <= 0:
        raise LoganError(f"--keep: {keep!r} keeps nothing; give a window such as 35d")
    return datetime.now(UTC).replace(tzinfo=None) - timedelta(microseconds=us)


def prune_and_say(store: Store, keep: str, before: datetime) -> None:
    p = store.prune(before)
    say(
        f"dropped {p.requests:,} requests, {p.rejects:,} rejects, {p.events:,} events"
        f" and {p.routes:,} route templates no request is left on "
        f"from before {before:%Y-%m-%d %H:%M} UTC (--keep {keep})"
    )


def prune_command(
    db: Annotated[Path, typer.Option("--db", help="the store to prune")],
    keep: KeepOpt = None,
) -> None:
    """Drop the requests, rejects and events older than --keep from a store."""
    if keep is None:
        raise LoganError("--keep: say how much to keep, e.g. --keep 35d")
    before = cutoff(keep)
    store = open_existing(db)
    try:
        prune_and_say(store, keep, before)
    finally:
        store.close()
