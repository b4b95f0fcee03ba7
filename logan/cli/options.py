"""Options the commands share: how logs are read (`logan ingest`, and every answering
command given FILES), where the rows are (FILES or --db), and which of them an answer looks
at (the filters). One declaration each, so every command spells and explains them alike."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Annotated

import typer

from logan.answer.filters import filter_sql
from logan.answer.inputs import ReadOptions, requests_of
from logan.errors import LoganError
from logan.read.classify import PROFILES, load_rules
from logan.read.ingest import IngestSummary
from logan.show.console import Fit
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


def output(form: str, out: Path | None, wide: bool, columns: str | None, raw: bool) -> Output:
    """The output options as logan.show.writers takes them."""
    chosen = tuple(c.strip() for c in columns.split(",") if c.strip()) if columns else ()
    return Output(form, out, Fit(wide, chosen), raw)


def top(top: int | None, output: Output) -> int | None:
    """--top: 20 rows for people unless asked, every row for programs unless asked."""
    if top is None:
        return 20 if output.human else None
    return top or None


def filters(
    since: str | None,
    until: str | None,
    env: list[str] | None,
    method: list[str] | None,
    status: str | None,
    path: str | None,
) -> dict:
    """The filter options as logan.answer.filters takes them (checked before any reading)."""
    chosen = dict(since=since, until=until, env=env or None, method=method or None, status=status,
                  path_glob=path)  # fmt: skip
    try:
        filter_sql(chosen)
    except ValueError as exc:
        raise LoganError(str(exc)) from None
    return chosen


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


def rows_source(
    engine: str,
    data: str | None,
    master: str | None,
    files: list[str] | None,
    db: Path | None,
    keep: Collection[str] | None,
    read: ReadOptions,
    on_read: Callable[[IngestSummary], None] | None,
    path_glob: str | None = None,
) -> AbstractContextManager:
    """The rows an answer reads: a DuckDB store (FILES, --db) or a Parquet folder on Spark
    (--engine spark --data DIR); the context gives an object whose `con` the answers take."""
    if not spark_engine(engine, data, master):
        return requests_of(files, db, keep, read, on_read=on_read)
    if files or db is not None:
        raise LoganError("--engine spark reads --data DIR (logan export --db STORE --to DIR writes one)")
    if data is None:
        raise LoganError("--engine spark needs --data DIR (logan export --db STORE --to DIR writes one)")
    from logan.engines.spark import spark_store
    from logan.engines.transpile import check_glob

    check_glob(path_glob)
    return spark_store(data, master)
