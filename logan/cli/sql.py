"""`logan sql`: ad-hoc SQL against a store, written like every other answer."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from logan.cli import options as opt
from logan.errors import LoganError
from logan.show.writers import write_frame
from logan.store import open_existing

EXAMPLES = 'Example: logan sql --db puppet.duckdb "SELECT status, count(*) FROM requests GROUP BY 1" -o csv'


@opt.command
def sql_command(
    query: Annotated[str, typer.Argument(help="SQL over requests, rejects, events, ingests")],
    db: Annotated[Path, typer.Option("--db", help="DuckDB store file")],
    shown: opt.Shown,
) -> None:
    """Ad-hoc SQL against a store (read-only)."""
    store = open_existing(db, read_only=True)
    try:
        df = store.sql(query)
    except Exception as exc:  # duckdb's own message says what is wrong with the query
        raise LoganError(str(exc).splitlines()[0]) from exc
    finally:
        store.close()
    write_frame(df, shown)
