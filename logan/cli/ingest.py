"""`logan ingest`: read access logs into a DuckDB store, with a progress bar for long inputs."""

from __future__ import annotations

import os
import signal
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from logan.cli import options as opt
from logan.cli.prune import KeepOpt, cutoff, prune_and_say
from logan.errors import EXIT_PARTIAL, LoganError
from logan.read.follow import follow as follow_files
from logan.read.ingest import IngestSummary, ingest, merge_summaries
from logan.show.console import err, print_ingest_summary, said_skipped, said_too_many_rejects, say
from logan.store import writing

# Inputs smaller than this finish before a progress bar is worth drawing.
_PROGRESS_MIN_BYTES = 64 << 20

DbOpt = Annotated[Path | None, typer.Option("--db", help="DuckDB store file (created if missing)")]


def _progress_for(paths: list[str]):  # noqa: ANN202
    sizes = [Path(p).stat().st_size for p in paths if p != "-" and Path(p).is_file()]
    if sum(sizes) < _PROGRESS_MIN_BYTES or not err.is_terminal:
        return None, None
    # here: the nightly job's ingest, without a terminal, never draws one (5 ms to import)
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

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


EXAMPLES = (
    "Examples: logan ingest sample_logs/puppet_access.log --db puppet.duckdb  ·  "
    "logan ingest /var/log/nginx/ --db web.duckdb  ·  "
    "logan ingest --db stack.duckdb --source lb=haproxy:httplog:lb.log --source app=combined_D:app.log  ·  "
    "logan ingest --engine spark --to lake/ sample_logs/nginx_access.log"
)


@opt.command
def ingest_command(
    reading: opt.Reading,
    files: Annotated[list[str] | None, typer.Argument(help="log files, globs, .gz, or - for stdin")] = None,
    db: DbOpt = None,
    source: Annotated[
        list[str] | None,
        typer.Option(help="LABEL=FORMAT:PATH, a server of a stack (repeatable): web=nginx:timed:/x.log"),
    ] = None,
    label: Annotated[str | None, typer.Option(help="source name for stdin or a single file")] = None,
    reread: Annotated[
        bool, typer.Option("--reread", help="read files the store has read before again, whole")
    ] = False,
    keep: KeepOpt = None,
    max_reject_ratio: opt.MaxRejectOpt = None,
    follow: Annotated[
        bool,
        typer.Option("--follow", "-F", help="keep reading as the files grow and rotate, until stopped"),
    ] = False,
    interval: Annotated[float, typer.Option(help="with --follow: seconds between reads", min=0.1)] = 2.0,
    engine: opt.EngineOpt = "duckdb",
    to: Annotated[
        str | None, typer.Option("--to", help="--engine spark: the Parquet folder to write (new)")
    ] = None,
    master: opt.MasterOpt = None,
) -> None:
    """Read access logs into a DuckDB store: every line becomes a request or a reject.

    --engine spark --to DIR parses them on Spark instead, into the Parquet layout of
    logan export (docs/spark.md says what it does not read yet)."""
    if opt.spark_engine(engine, to, master, "--to"):
        return _on_spark(files or [], to, master, reading, db is not None or bool(source) or follow)
    jobs = [(files, reading.format, label)] if files else []
    jobs += [_source_job(spec) for spec in source or ()]
    if not jobs:
        raise LoganError("no input: give log files, or --source LABEL=FORMAT:PATH")
    before = cutoff(keep) if keep is not None else None
    common = {"dialect": reading.dialect, "tz": reading.tz, "profile": reading.profile,
              "rules": reading.rules, "trusted_proxies": reading.trusted_proxies,
              "keep_going": reading.keep_going, "reread": reread}  # fmt: skip
    if follow:
        return _follow(jobs, db, interval, common)
    with writing(db) as store:
        summaries = [
            run_ingest(paths, store=store, format=fmt, label=lab, **common) for paths, fmt, lab in jobs
        ]
        if keep is not None:
            prune_and_say(store, keep, before)
    summary = merge_summaries(summaries)
    summary.seconds = process_seconds() or summary.seconds  # what the user waited for
    print_ingest_summary(summary)
    if db is None:
        err.print("(in-memory store: nothing was kept; give --db FILE to keep the table)")
    if said_skipped(summary) | said_too_many_rejects(summary, max_reject_ratio):
        raise typer.Exit(EXIT_PARTIAL)


def process_seconds() -> float | None:
    """How long this process has run (Linux's /proc; None elsewhere): the summary's `took`
    is the whole command, Python's start-up and the imports, the store's checkpoint and
    close included, not the ingest's own part of it (that is `ingests.seconds`)."""
    try:
        with open("/proc/self/stat") as fh:  # field 22, after "pid (name)": its start in ticks
            started = int(fh.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime") as fh:
            return max(float(fh.read().split()[0]) - started, 0.0)
    except (OSError, ValueError, IndexError):
        return None


def _follow(jobs: list, db: Path | None, interval: float, common: dict) -> None:
    """--follow: rounds of incremental ingests until SIGINT or SIGTERM."""
    if db is None or len(jobs) != 1 or "-" in jobs[0][0]:
        raise LoganError("--follow: give log files (not stdin) and a store to keep, --db FILE")
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stops like Ctrl-C
    (paths, fmt, label) = jobs[0]
    say(f"following {', '.join(paths)} into {db} every {interval:g} s; Ctrl-C or SIGTERM stops", err)
    summary = follow_files(paths, db, interval, each_round=_said_round, format=fmt, label=label, **common)
    print_ingest_summary(summary)
    say("stopped: every batch read is committed", err)


def _said_round(s: IngestSummary) -> None:
    if s.lines:
        say(f"{datetime.now():%H:%M:%S} +{s.lines:,} lines: {s.rows:,} requests, {s.rejects:,} rejects", err)


def _on_spark(
    files: list[str], to: str | None, master: str | None, read: opt.ReadOptions, others: bool
) -> None:
    """--engine spark: the logs parsed by Spark into the Parquet folder --to."""
    if to is None or not files or others:
        raise LoganError("--engine spark reads FILES into --to DIR (no --db, --source or --follow)")
    from logan.engines.session import running_session
    from logan.engines.spark_ingest import spark_ingest

    with running_session(master) as session:
        done = spark_ingest(session, files, to, read)
    for s in done.sources:
        events = f"{s.events:,} server event{'s' * (s.events != 1)}"
        said = f"{s.lines:,} lines: {s.rows:,} requests, {s.rejects:,} rejects, {events}"
        say(f"{s.label}: {said} ({s.format})", err)
    say(f"read on Spark in {done.seconds:.1f} s (profile {done.profile}), under {to}", err)
