"""The `logan` command: one thin module per command over the library (logan.read,
logan.answer) and its outputs (logan.show).

Whatever goes wrong ends in one line on stderr and an exit status (docs/reliability.md):
0 done, 1 failed (a store that cannot be written, the disk full...), 2 a usage error or
input logan cannot read, 3 done in part (some input skipped or rejected past the limit).
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Iterator, Mapping

import duckdb
import typer
from typer._click.exceptions import MissingParameter, NoArgsIsHelpError, UsageError

from logan import __version__
from logan.errors import EXIT_FAILURE, EXIT_USAGE, LoganError, StoreError, interrupted
from logan.show.console import err, say_error

# Each command's module under logan.cli, of its name, holds `<name>_command` and its
# EXAMPLES (the epilog of its --help). In the order `logan --help` lists them.
COMMANDS = (
    "ingest", "stats", "sql", "prune", "reclassify", "timeline", "incidents", "formats",
    "report", "mail", "nightly", "compare", "plot", "cache", "export",
)  # fmt: skip
_SETTINGS = {"help_option_names": ["-h", "--help"]}


def _command(name: str) -> typer._click.Command:
    """The click command of `name`, made from its module's function the way typer makes a
    group's commands."""
    module = importlib.import_module(f"logan.cli.{name}")
    one = typer.Typer(add_completion=False, pretty_exceptions_enable=False, context_settings=_SETTINGS)
    one.command(name, epilog=module.EXAMPLES)(getattr(module, f"{name}_command"))
    command = typer.main.get_command(one)
    command.name = name
    command.help = _reflowed(command.help or "")
    return command


def _reflowed(doc: str) -> str:
    """A docstring's paragraphs each on one line, for the terminal to wrap: typer's help
    keeps the source's line breaks, and where they fall short of the terminal's width
    a paragraph shows ragged, a word or two on a line of its own."""
    return "\n\n".join(" ".join(p.split()) for p in inspect.cleandoc(doc).split("\n\n"))


class _Commands(Mapping):
    """The commands by name, each imported when first asked for: a command loads its own
    module and what it needs, not the other thirteen's (the cache simulator, mail and SSL,
    the report's templates): 0.1-0.2 s of every command's start. `logan --help` asks for
    all of them."""

    def __init__(self) -> None:
        self._made: dict[str, typer._click.Command] = {}

    def __getitem__(self, name: str) -> typer._click.Command:
        if name not in COMMANDS:
            raise KeyError(name)
        if name not in self._made:
            self._made[name] = _command(name)
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS)


class _Group(typer.core.TyperGroup):
    """typer's group over the commands of COMMANDS, imported as they are asked for (its
    get_command and list_commands, and the "did you mean" of a typo, read `commands`)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Commands()  # type: ignore[assignment]


app = typer.Typer(
    cls=_Group,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings=_SETTINGS,
    help="Where does the time go? Web-server access logs into DuckDB, broken down by endpoint.",
)


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
        say_error(usage_message(exc))
        status = EXIT_USAGE
    except LoganError as exc:
        say_error(str(exc))
        status = EXIT_FAILURE if isinstance(exc, StoreError) else EXIT_USAGE
    except KeyboardInterrupt:
        status = 130
    except SystemExit as exc:  # click's exit 1 when stdout's reader goes away (EPIPE)
        if not isinstance(exc.__context__, BrokenPipeError):
            raise
        status = 0  # `logan stats FILE | head`: the reader has read enough, not an error
    except RuntimeError as exc:  # DuckDB's form of Ctrl-C inside a query (errors.interrupted)
        if not interrupted(exc):
            raise
        status = 130
    except (duckdb.Error, OSError) as exc:  # the store or the disk, not the user's input
        if os.environ.get("LOGAN_DEBUG"):
            raise
        say_error(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        status = EXIT_FAILURE
    err.file.flush()
    return status if isinstance(status, int) else 0


def usage_message(exc: UsageError) -> str:
    """click's message, and for a missing argument what it takes and where to read more:
    `logan plot` alone said only "Missing argument 'kind'"."""
    message = exc.format_message()
    param, ctx = getattr(exc, "param", None), exc.ctx
    if isinstance(exc, MissingParameter) and getattr(param, "help", None) and ctx is not None:
        message = f"{message.rstrip('.')}: {param.help}. See '{ctx.command_path} --help'."
    return message


if __name__ == "__main__":
    program()
