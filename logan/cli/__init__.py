"""The `logan` command: one thin module per command over the library (logan.read,
logan.answer) and its outputs (logan.show).

Whatever goes wrong ends in one line on stderr and an exit status (docs/reliability.md):
0 done, 1 failed (a store that cannot be written, the disk full...), 2 a usage error or
input logan cannot read, 3 done in part (some input skipped or rejected past the limit).
"""

from __future__ import annotations

import os
import sys

import duckdb
import typer
from typer._click.exceptions import NoArgsIsHelpError, UsageError

from logan import __version__
from logan.cli.cache import EXAMPLES as CACHE_EXAMPLES
from logan.cli.cache import cache_command
from logan.cli.compare import EXAMPLES as COMPARE_EXAMPLES
from logan.cli.compare import compare_command
from logan.cli.export import EXAMPLES as EXPORT_EXAMPLES
from logan.cli.export import export_command
from logan.cli.formats import formats_command
from logan.cli.incidents import EXAMPLES as INCIDENTS_EXAMPLES
from logan.cli.incidents import incidents_command
from logan.cli.ingest import EXAMPLES as INGEST_EXAMPLES
from logan.cli.ingest import ingest_command
from logan.cli.mail import EXAMPLES as MAIL_EXAMPLES
from logan.cli.mail import mail_command
from logan.cli.nightly import EXAMPLES as NIGHTLY_EXAMPLES
from logan.cli.nightly import nightly_command
from logan.cli.plot import EXAMPLES as PLOT_EXAMPLES
from logan.cli.plot import plot_command
from logan.cli.prune import EXAMPLES as PRUNE_EXAMPLES
from logan.cli.prune import prune_command
from logan.cli.report import EXAMPLES as REPORT_EXAMPLES
from logan.cli.report import report_command
from logan.cli.sql import EXAMPLES as SQL_EXAMPLES
from logan.cli.sql import sql_command
from logan.cli.stats import EXAMPLES as STATS_EXAMPLES
from logan.cli.stats import stats_command
from logan.cli.timeline import EXAMPLES as TIMELINE_EXAMPLES
from logan.cli.timeline import timeline_command
from logan.errors import EXIT_FAILURE, EXIT_USAGE, LoganError, StoreError
from logan.show.console import err, say_error

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Where does the time go? Web-server access logs into DuckDB, broken down by endpoint.",
)
app.command("ingest", epilog=INGEST_EXAMPLES)(ingest_command)
app.command("stats", epilog=STATS_EXAMPLES)(stats_command)
app.command("sql", epilog=SQL_EXAMPLES)(sql_command)
app.command("prune", epilog=PRUNE_EXAMPLES)(prune_command)
app.command("timeline", epilog=TIMELINE_EXAMPLES)(timeline_command)
app.command("incidents", epilog=INCIDENTS_EXAMPLES)(incidents_command)
app.command("formats", epilog="Example: logan formats")(formats_command)
app.command("report", epilog=REPORT_EXAMPLES)(report_command)
app.command("mail", epilog=MAIL_EXAMPLES)(mail_command)
app.command("nightly", epilog=NIGHTLY_EXAMPLES)(nightly_command)
app.command("compare", epilog=COMPARE_EXAMPLES)(compare_command)
app.command("plot", epilog=PLOT_EXAMPLES)(plot_command)
app.command("cache", epilog=CACHE_EXAMPLES)(cache_command)
app.command("export", epilog=EXPORT_EXAMPLES)(export_command)


def _version(show: bool) -> None:
    if show:
        print(f"logan {__version__} (DuckDB {duckdb.__version__})")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="the version"),
) -> None:
    """Where does the time go? Web-server access logs into DuckDB, broken down by endpoint."""


def main(argv: list[str] | None = None) -> None:
    """Run the command line; exit with its status (see the module's docstring)."""
    sys.exit(status_of(argv))


def program() -> None:
    """The `logan` program (its script, and `python -m logan`): main() with an exit that
    skips the interpreter's teardown. Everything is written and every store closed by
    then; what is left is freeing a heap of up to a GB object by object, 0.3-0.6 s of a
    report or a cache simulation over 10 M requests. A Spark session, which stops its JVM
    at exit, gets the ordinary exit."""
    status = status_of(None)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):  # a reader that went away (| head) reads no more
        pass
    if "pyspark" in sys.modules:
        sys.exit(status)
    os._exit(status)


def status_of(argv: list[str] | None) -> int:
    """Run the command line; its exit status."""
    try:
        status = app(argv, standalone_mode=False)
    except NoArgsIsHelpError as exc:
        print(exc.ctx.get_help() if exc.ctx else "logan --help")
        status = 0
    except UsageError as exc:
        say_error(exc.format_message())
        status = EXIT_USAGE
    except LoganError as exc:
        say_error(str(exc))
        status = EXIT_FAILURE if isinstance(exc, StoreError) else EXIT_USAGE
    except KeyboardInterrupt:
        status = 130
    except (duckdb.Error, OSError) as exc:  # the store or the disk, not the user's input
        if os.environ.get("LOGAN_DEBUG"):
            raise
        say_error(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        status = EXIT_FAILURE
    err.file.flush()
    return status if isinstance(status, int) else 0


if __name__ == "__main__":
    program()
