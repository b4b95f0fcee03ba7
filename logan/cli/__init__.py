"""The `logan` command: one thin module per command over the library (logan.read,
logan.answer) and its outputs (logan.show). A LoganError is printed as one line, exit 2.
"""

from __future__ import annotations

import typer
from rich.text import Text

from logan.cli.formats import formats_command
from logan.cli.ingest import ingest_command
from logan.cli.sql import sql_command
from logan.cli.stats import stats_command
from logan.errors import LoganError
from logan.show.console import err

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Where does the time go? Web-server logs into DuckDB."
)
app.command("ingest")(ingest_command)
app.command("stats")(stats_command)
app.command("sql")(sql_command)
app.command("formats")(formats_command)


def main() -> None:
    try:
        app()
    except LoganError as exc:
        err.print(Text(f"logan: {exc}", style="red"))
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
