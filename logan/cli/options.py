"""Options the commands share: how logs are read (`logan ingest`, and every answering
command given FILES), where the rows are (FILES, --db or a Parquet folder on Spark), which of
them an answer looks at (the filters) and how it is written (--output...). One declaration
each, so every command spells and explains them alike.

The options that go together are a group (`Reading`, `Where`, `Shown`, `Rows`, `StoredRows`): a command
takes one parameter for the whole group, and `@command` lists the group's options in its
place, checks them, and hands the command the one value they make (a ReadOptions, the
filters, an Output, an Input). --help shows each group under its own heading.
"""

from __future__ import annotations

import functools
import inspect
import ipaddress
import threading
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from copy import copy
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin, get_type_hints

import typer

from logan.answer.filters import filter_sql
from logan.answer.inputs import ReadOptions, requests_of
from logan.errors import EXIT_PARTIAL, LoganError
from logan.read.classify import PROFILES, load_rules
from logan.read.ingest import IngestSummary
from logan.show.console import Fit, said_read
from logan.show.writers import OUTPUTS, Output

EngineOpt = Annotated[str, typer.Option("--engine", help="duckdb (FILES or --db) | spark (--data)")]
DataOpt = Annotated[
    str | None, typer.Option("--data", help="Parquet folder for --engine spark (logan export, ingest --to)")
]
MasterOpt = Annotated[
    str | None, typer.Option("--master", help="Spark master: local[*] (default), spark://, yarn, k8s://")
]
FilesArg = Annotated[list[str] | None, typer.Argument(help="log files to read into a temporary store")]
StoreOpt = Annotated[Path | None, typer.Option("--db", help="DuckDB store file")]

SinceOpt = Annotated[
    str | None, typer.Option(help="24h, 7d (before the last request) or a time (ISO, UTC unless given)")
]
UntilOpt = Annotated[str | None, typer.Option(help="same forms as --since; exclusive")]
EnvOpt = Annotated[list[str] | None, typer.Option(help="environment (repeatable)")]
MethodOpt = Annotated[list[str] | None, typer.Option(help="HTTP method (repeatable)")]
StatusOpt = Annotated[str | None, typer.Option(help="5xx, 404, 4xx,503, 500-504")]
PathOpt = Annotated[str | None, typer.Option("--path", help="path glob, e.g. '/api/*'")]

OutputOpt = Annotated[str, typer.Option("--output", "-o", help=" | ".join(OUTPUTS))]
OutFileOpt = Annotated[Path | None, typer.Option("--out", help="file for --output parquet")]
TopOpt = Annotated[
    int | None,
    typer.Option(min=0, help="rows to show (0: all); default 20 in a table, all in csv/json/parquet"),
]
WideOpt = Annotated[bool, typer.Option("--wide", help="every column, however wide the terminal")]
ColumnsOpt = Annotated[
    str | None, typer.Option("--columns", help="the columns to show besides the groups, e.g. 'p99,max,bytes'")
]
RawOpt = Annotated[bool, typer.Option("--raw", help="CSV cells as logged (no formula guard, no escapes)")]

MaxRejectOpt = Annotated[
    float | None,
    typer.Option(
        "--max-reject-ratio",
        min=0.0,
        max=1.0,
        help="exit 3 when over this share of the lines are rejects",
    ),
]
KeepGoingOpt = Annotated[
    bool, typer.Option("--keep-going", help="read a file even when the format reads none of its first lines")
]

FormatOpt = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help="preset (combined_D, nginx:timed) or the format string from the server's config; auto detects",
    ),
]
DialectOpt = Annotated[str | None, typer.Option(help="apache | nginx | varnish | haproxy")]
TzOpt = Annotated[str, typer.Option(help="time zone of timestamps that carry no offset")]
ProfileOpt = Annotated[str, typer.Option(help="classification: auto | puppet | generic | none")]
RulesOpt = Annotated[Path | None, typer.Option(help="classification rules (TOML)")]
TrustedProxyOpt = Annotated[
    list[str] | None,
    typer.Option("--trusted-proxy", help="CIDR of a proxy whose X-Forwarded-For counts (repeatable)"),
]
NginxConfOpt = Annotated[Path | None, typer.Option(help="read the format from this nginx.conf")]
LogFormatNameOpt = Annotated[
    str | None,
    typer.Option(help="the log_format name in --nginx-conf (default: what its access_log uses)"),
]


def top(top: int | None, output: Output) -> int | None:
    """--top: 20 rows for people unless asked, every row for programs unless asked."""
    if top is None:
        return 20 if output.human else None
    return top or None


def read_options(
    format: str,
    dialect: str | None,
    tz: str,
    profile: str,
    rules: Path | None,
    trusted_proxy: list[str] | None,
    keep_going: bool = False,
) -> ReadOptions:
    """The reading options, checked before any log is read (a rules file is read here)."""
    if profile not in ("auto", "none", *PROFILES):
        raise LoganError(f"--profile {profile!r}: use auto, none, {', '.join(PROFILES)}")
    for net in trusted_proxy or ():
        try:
            ipaddress.ip_network(net, strict=False)
        except ValueError as exc:
            raise LoganError(f"--trusted-proxy {net}: {exc}") from None
    loaded = load_rules(rules) if rules is not None else None
    return ReadOptions(format, dialect, tz, profile, loaded, tuple(trusted_proxy or ()), keep_going)


def format_from_options(
    format: str, dialect: str | None, nginx_conf: Path | None, log_format_name: str | None
) -> tuple[str, str | None]:
    """--nginx-conf/--log-format-name name a format as the server's config writes it."""
    if nginx_conf is None:
        if log_format_name:
            raise LoganError("--log-format-name needs --nginx-conf")
        return format, dialect
    from logan.read.nginx_conf import format_from_nginx_conf

    return format_from_nginx_conf(nginx_conf, log_format_name), "nginx"


def spark_engine(engine: str, folder: str | None, master: str | None, folder_opt: str = "--data") -> bool:
    """Whether --engine names Spark; its folder and --master only with it."""
    if engine == "duckdb":
        if folder is not None or master is not None:
            raise LoganError(f"{folder_opt} and --master are for --engine spark")
        return False
    if engine != "spark":
        raise LoganError(f"--engine {engine!r}: use duckdb or spark")
    return True


@dataclass
class Input:
    """Where an answer's requests are: FILES read into a temporary store (into --db when given
    too), a --db store, or a Parquet folder on Spark (--engine spark --data DIR); and whether
    reading FILES skipped any (the command then exits 3, done in part)."""

    files: FilesArg = None
    db: StoreOpt = None
    engine: EngineOpt = "duckdb"
    data: DataOpt = None
    master: MasterOpt = None
    read: list[IngestSummary] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        spark_engine(self.engine, self.data, self.master)

    def value(self) -> Input:
        return self

    @property
    def skipped(self) -> bool:
        return any(s.skipped for s in self.read)

    def open(
        self,
        keep: Collection[str] | None,
        reading: ReadOptions,
        where: dict,
        files: list[str] | None = None,
    ) -> AbstractContextManager:
        """A context whose value's `con` the answers take; `files` reads other logs than
        FILES (a side of `logan compare`). Only the `keep` columns are stored from logs."""
        files = self.files if files is None else files
        db = self.db if files is self.files else None
        if not spark_engine(self.engine, self.data, self.master):
            return requests_of(files, db, keep, reading, on_read=self._said)
        if files or db is not None:
            raise LoganError("--engine spark reads --data DIR (logan export --db STORE --to DIR writes one)")
        if self.data is None:
            raise LoganError("--engine spark needs --data DIR (logan export --db STORE --to DIR writes one)")
        from logan.engines.spark import spark_store
        from logan.engines.transpile import check_glob

        check_glob(where.get("path_glob"))
        return spark_store(self.data, self.master)

    def _said(self, summary: IngestSummary) -> None:
        said_read(summary)
        self.read.append(summary)


@dataclass
class StoredInput:
    """FILES or --db, for a command that answers on DuckDB only."""

    files: FilesArg = None
    db: StoreOpt = None

    def value(self) -> Input:
        return Input(self.files, self.db)


# ---- the groups: a dataclass of options each (in the order --help lists them), and the
# value a command is given for them ----


@dataclass
class ReadingOptions:
    format: FormatOpt = "auto"
    dialect: DialectOpt = None
    tz: TzOpt = "UTC"
    profile: ProfileOpt = "auto"
    rules: RulesOpt = None
    trusted_proxy: TrustedProxyOpt = None
    nginx_conf: NginxConfOpt = None
    log_format_name: LogFormatNameOpt = None
    keep_going: KeepGoingOpt = False

    def value(self) -> ReadOptions:
        """Every reading option as one ReadOptions, checked."""
        fmt, dialect = format_from_options(self.format, self.dialect, self.nginx_conf, self.log_format_name)
        return read_options(fmt, dialect, self.tz, self.profile, self.rules, self.trusted_proxy,
                            self.keep_going)  # fmt: skip


@dataclass
class WhereOptions:
    since: SinceOpt = None
    until: UntilOpt = None
    env: EnvOpt = None
    method: MethodOpt = None
    status: StatusOpt = None
    path: PathOpt = None

    def value(self) -> dict:
        """The filters as logan.answer.filters takes them, checked before any reading."""
        chosen = dict(since=self.since, until=self.until, env=self.env or None,
                      method=self.method or None, status=self.status, path_glob=self.path)  # fmt: skip
        try:
            filter_sql(chosen)
        except ValueError as exc:
            raise LoganError(str(exc)) from None
        return chosen


@dataclass
class ShownOptions:
    output: OutputOpt = "table"
    out: OutFileOpt = None
    wide: WideOpt = False
    columns: ColumnsOpt = None
    raw: RawOpt = False

    def value(self) -> Output:
        """The output options as logan.show.writers takes them."""
        chosen = tuple(c.strip() for c in self.columns.split(",") if c.strip()) if self.columns else ()
        return Output(self.output, self.out, Fit(self.wide, chosen), self.raw)


@dataclass(frozen=True)
class Group:
    """Options a command takes as one value: the typer-annotated fields of the dataclass
    `options`, listed in --help under `panel`; the command gets `options(...).value()`."""

    options: type
    panel: str

    def parameters(self) -> list[inspect.Parameter]:
        hints = get_type_hints(self.options, include_extras=True)
        kind, panel = inspect.Parameter.POSITIONAL_OR_KEYWORD, self.panel
        return [
            inspect.Parameter(f.name, kind, default=f.default, annotation=_in_panel(hints[f.name], panel))
            for f in fields(self.options)
            if f.init
        ]

    def value(self, values: dict[str, Any]) -> Any:
        """The command's value for these options (taken out of `values`)."""
        chosen = {f.name: values.pop(f.name) for f in fields(self.options) if f.init}
        return self.options(**chosen).value()


def _in_panel(annotation: Any, panel: str) -> Any:
    """The same typer option, listed under `panel` in --help (arguments keep their place)."""
    kind, info = get_args(annotation)
    if isinstance(info, typer.models.ArgumentInfo):
        return annotation
    info = copy(info)
    info.rich_help_panel = panel
    return Annotated[kind, info]


Reading = Annotated[ReadOptions, Group(ReadingOptions, "Reading logs")]
Where = Annotated[dict, Group(WhereOptions, "Which requests")]
Shown = Annotated[Output, Group(ShownOptions, "Output")]
Rows = Annotated[Input, Group(Input, "Input")]
StoredRows = Annotated[Input, Group(StoredInput, "Input")]


def _group_of(annotation: Any) -> Group | None:
    if get_origin(annotation) is not Annotated:
        return None
    return next((m for m in get_args(annotation)[1:] if isinstance(m, Group)), None)


def command(func: Callable[..., None]) -> Callable[..., None]:
    """A command whose group parameters (Reading, Where, Shown, Rows...) typer sees as their
    options; the command gets each group's value, and exits 3 when its Input skipped logs."""
    hints = get_type_hints(func, include_extras=True)
    groups: dict[str, Group] = {}
    params: list[inspect.Parameter] = []
    for p in inspect.signature(func).parameters.values():
        group = _group_of(hints[p.name])
        if group is None:
            params.append(p.replace(annotation=hints[p.name]))
        else:
            groups[p.name] = group
            params += group.parameters()

    @functools.wraps(func)
    def run(**values: Any) -> None:
        built = {name: group.value(values) for name, group in groups.items()}
        func(**values, **built)
        if any(isinstance(v, Input) and v.skipped for v in built.values()):
            raise typer.Exit(EXIT_PARTIAL)

    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    return run


def warm(*modules: str) -> None:
    """Import these modules on a thread of their own while the command goes on. pandas
    takes about half a second to import; a command that needs it later opens the store and
    starts its first query meanwhile, and DuckDB runs without the GIL. Not a daemon thread:
    an interpreter never shuts down in the middle of the import (logan.cli.program ends
    the process without waiting for it, which is harmless)."""
    threading.Thread(target=_import_quietly, args=modules, name="logan-warm").start()


def _import_quietly(*modules: str) -> None:
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:  # said where the module is imported for use
            return
