"""The `logan` command: a thin layer over the library (logan.ingest, logan.store, ...)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn
from rich.table import Table
from rich.text import Text

from logan.cli import options as opt
from logan.errors import LoganError
from logan.read.ingest import IngestSummary, ingest, merge_summaries
from logan.store import open_store

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Where does the time go? Web-server logs into DuckDB."
)
err = Console(stderr=True, highlight=False)
out = Console(highlight=False)

# Inputs smaller than this finish before a progress bar is worth drawing.
_PROGRESS_MIN_BYTES = 64 << 20

DbOpt = Annotated[Path | None, typer.Option("--db", help="DuckDB store file (created if missing)")]


def _progress_for(paths: list[str]):  # noqa: ANN202
    sizes = [Path(p).stat().st_size for p in paths if p != "-" and Path(p).is_file()]
    if sum(sizes) < _PROGRESS_MIN_BYTES or not err.is_terminal:
        return None, None
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=err,
        transient=True,
    )
    task = bar.add_task("ingest", total=sum(sizes))
    done: dict[str, int] = {}

    def update(source: str, nbytes: int, _total: int | None) -> None:
        done[source] = nbytes
        bar.update(task, completed=sum(done.values()), description=Text(Path(source).name))

    return bar, update


def run_ingest(paths: list[str], **kwargs: object) -> IngestSummary:
    """Ingest with a progress bar on stderr for long inputs."""
    bar, update = _progress_for(paths)
    if bar is None:
        return ingest(paths, **kwargs)  # type: ignore[arg-type]
    with bar:
        return ingest(paths, progress=update, **kwargs)  # type: ignore[arg-type]


def _source_job(spec: str) -> tuple[list[str], str, str]:
    """LABEL=FORMAT:PATH -> ([PATH], FORMAT, LABEL); FORMAT may itself hold a colon
    (nginx:timed), the path is after the last one."""
    label, eq, rest = spec.partition("=")
    fmt, colon, path = rest.rpartition(":")
    if not (eq and colon and label and fmt and path):
        raise LoganError(f"--source {spec!r}: write LABEL=FORMAT:PATH, e.g. web=nginx:timed:/var/log/x.log")
    return [path], fmt, label


def print_summary(s: IngestSummary) -> None:
    """The closing summary of an ingest, on stderr (stdout stays for answers)."""
    for src in s.sources:
        if src.detected:
            err.print(Text(f"{src.source}: {src.detected}"))
    t = Table(show_header=False, box=None, pad_edge=False)
    t.add_row("lines read", f"{s.lines:,}")
    t.add_row("requests", f"{s.rows:,}")
    t.add_row("rejects", f"{s.rejects:,}")
    if s.events:
        t.add_row("events", f"{s.events:,}")
    for reason, n in s.rejects_by_reason.items():
        t.add_row(Text(f"  {reason}"), f"{n:,}")
    bad = s.total("invalid_utf8")
    if bad:
        t.add_row("not UTF-8", f"{bad:,} lines kept, bytes written \\xhh")
    if s.ts_min is not None:
        t.add_row("time range", f"{s.ts_min:%Y-%m-%d %H:%M:%S} .. {s.ts_max:%Y-%m-%d %H:%M:%S} UTC")
    if s.tz_assumed:
        t.add_row("time zone", f"timestamps without an offset were read as {s.tz} (--tz)")
    if s.profile:
        t.add_row("profile", s.profile)
    mb = s.total("nbytes") / 1e6
    t.add_row("took", f"{s.seconds:.2f} s, {mb:,.1f} MB, {s.mb_per_s:,.0f} MB/s")
    err.print(t)


@app.command("ingest")
def ingest_command(
    files: Annotated[list[str] | None, typer.Argument(help="log files, globs, .gz, or - for stdin")] = None,
    db: DbOpt = None,
    source: Annotated[
        list[str] | None,
        typer.Option(help="LABEL=FORMAT:PATH, a server of a stack (repeatable): web=nginx:timed:/x.log"),
    ] = None,
    format: opt.FormatOpt = "auto",
    dialect: opt.DialectOpt = None,
    tz: opt.TzOpt = "UTC",
    profile: opt.ProfileOpt = "auto",
    rules: opt.RulesOpt = None,
    trusted_proxy: opt.TrustedProxyOpt = None,
    label: Annotated[str | None, typer.Option(help="source name for stdin or a single file")] = None,
    nginx_conf: opt.NginxConfOpt = None,
    log_format_name: opt.LogFormatNameOpt = None,
) -> None:
    """Read access logs into a DuckDB store: every line becomes a request or a reject."""
    format, dialect = opt.format_from_options(format, dialect, nginx_conf, log_format_name)
    jobs = [(files, format, label)] if files else []
    jobs += [_source_job(spec) for spec in source or ()]
    if not jobs:
        raise LoganError("no input: give log files, or --source LABEL=FORMAT:PATH")
    store = open_store(db)
    common = {"store": store, "dialect": dialect, "tz": tz, "profile": profile, "rules": rules,
              "trusted_proxies": tuple(trusted_proxy or ())}  # fmt: skip
    summaries = [run_ingest(paths, format=fmt, label=lab, **common) for paths, fmt, lab in jobs]
    print_summary(merge_summaries(summaries))
    if db is None:
        err.print("(in-memory store: nothing was kept; give --db FILE to keep the table)")
    store.close()


@app.command("sql")
def sql_command(
    query: Annotated[str, typer.Argument(help="SQL over requests, rejects, events, ingests")],
    db: Annotated[Path, typer.Option("--db", help="DuckDB store file")],
    output: Annotated[str, typer.Option("--output", "-o", help="table | csv | json")] = "table",
) -> None:
    """Ad-hoc SQL against a store."""
    if not db.exists():
        raise LoganError(f"no store at {db}")
    store = open_store(db, read_only=True)
    try:
        df = store.sql(query)
    except Exception as exc:  # duckdb's own message says what is wrong with the query
        raise LoganError(str(exc).splitlines()[0]) from exc
    finally:
        store.close()
    write_frame(df, output)


def write_frame(df, output: str) -> None:  # noqa: ANN001
    """A DataFrame to stdout as table, csv or json; cell text is data, never markup."""
    df = _integral_floats_as_ints(df)
    if output == "csv":
        df.to_csv(sys.stdout, index=False)
    elif output == "json":
        sys.stdout.write(json.dumps(json.loads(df.to_json(orient="records", date_format="iso")), indent=1))
        sys.stdout.write("\n")
    elif output == "table":
        t = Table()
        for c in df.columns:
            t.add_column(Text(str(c)))
        for row in df.itertuples(index=False):
            t.add_row(*[Text("" if v is None else str(v)) for v in row])
        out.print(t)
    else:
        raise LoganError(f"unknown output {output!r}: table, csv or json")


def _integral_floats_as_ints(df):  # noqa: ANN001, ANN202
    # DuckDB's sum(BIGINT) is a 128-bit integer, which pandas holds as float: 7800.0.
    for col in df.columns:
        s = df[col]
        if s.dtype.kind == "f" and s.notna().any():
            vals = s.dropna()
            if (vals == vals.round()).all() and vals.abs().max() < 2**53:
                df[col] = s.astype("Int64")
    return df


@app.command("formats")
def formats_command() -> None:
    """The named formats logan knows, by dialect."""
    from logan.read.dialects import dialects

    t = Table("preset", "format string")
    for d in dialects().values():
        for name, fmt in d.presets.items():
            t.add_row(Text(f"{d.name}:{name}"), Text(fmt))
    out.print(t)


def _register_stats() -> None:
    from logan.cli.stats import stats_command

    app.command("stats")(stats_command)


_register_stats()


def main() -> None:
    try:
        app()
    except LoganError as exc:
        err.print(Text(f"logan: {exc}", style="red"))
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
