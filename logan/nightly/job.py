"""`logan nightly`: ingest every configured source, report on the last complete day in
the configured time zone, mail it. Made to run unattended from cron or a systemd timer:

- a source that fails (a file no format reads, one that cannot be opened, a glob that
  matches nothing) does not stop the others; the report names it, and the status says
  the run was done in part (3);
- running it again for the same day counts nothing twice: the store's registry of read
  files (logan/read/registry.py) reads each file on from where the last run stopped.
"""

from __future__ import annotations

import glob
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from email.message import EmailMessage
from pathlib import Path

import duckdb

from logan.errors import EXIT_OK, EXIT_PARTIAL, LoganError
from logan.nightly.config import Config, SourceConfig
from logan.nightly.report import Report, build_report, last_complete_day, parse_day
from logan.read.ingest import ingest
from logan.show import mail
from logan.store import Store, writing


@dataclass
class NightlyRun:
    """What a run did: the report, the sources that failed (label, why), the files read
    and skipped as already read, the mail and the exit status."""

    report: Report
    failed: list[tuple[str, str]] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    message: EmailMessage | None = None
    status: int = EXIT_OK


def files_of(source: SourceConfig, base: Path) -> list[Path]:
    pattern = str(base / source.path)
    found = sorted(glob.glob(pattern)) if any(ch in pattern for ch in "*?[") else [pattern]
    paths = [Path(p).resolve() for p in found if Path(p).is_file()]
    if not paths:
        raise LoganError("no file matches" if found or "*" in pattern else "no such file")
    return paths


def ingest_source(store: Store, source: SourceConfig, config: Config, run: NightlyRun) -> None:
    """Read the files of one source; the store's registry (logan/read/registry.py) reads
    each on from where the last run stopped, so nothing is stored twice."""
    r = config.read
    paths = files_of(source, config.path.parent)
    summary = ingest(paths, store, format=source.format, dialect=source.dialect, tz=r.tz, profile=r.profile,
                     rules=r.rules, trusted_proxies=r.trusted_proxies)  # fmt: skip
    for s in summary.sources:
        (run.read if s.lines else run.skipped).append(s.source)


def one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def run_nightly(
    config: Config,
    day: str | None = None,
    now: datetime | None = None,
    send: Callable[[EmailMessage, mail.Smtp], None] | None = mail.send,
) -> NightlyRun:
    """Ingest, report, mail (send=None: build the mail, send nothing). A mail that cannot
    be sent raises MailError; everything before it is kept."""
    failed: list[tuple[str, str]] = []
    done = NightlyRun(report=None)  # type: ignore[arg-type]
    with writing(config.store) as store:
        for source in config.sources:
            try:
                ingest_source(store, source, config, done)
            except (LoganError, OSError, duckdb.Error) as exc:  # the others still run
                failed.append((source.path, one_line(exc)))
        period = parse_day(day, config.tz, store.con) if day else last_complete_day(config.tz, now)
        options = replace(config.report, failed=tuple(failed))
        done.report = build_report(store.con, period, options, config.sections)
    done.failed = failed
    done.status = EXIT_PARTIAL if failed else EXIT_OK
    if config.mail is not None:
        m = config.mail
        done.message = mail.message(done.report, m.sender, m.to)
        if send is not None:
            send(done.message, m.smtp)
    return done
