"""`logan nightly`: ingest every configured source, report on the last complete day in
the configured time zone, mail it. Made to run unattended from cron or a systemd timer:

- a source that fails (a file no format reads, one that cannot be opened, a glob that
  matches nothing) does not stop the others; the report names it, and the status says
  the run was done in part (3);
- running it again for the same day counts nothing twice: a file already read as it is
  now is not read again, and a file that changed since is read anew in place of its old
  rows (`already_read` / `forget`: the store's own registry of read files replaces these
  two once the incremental ingest lands).
"""

from __future__ import annotations

import glob
import struct
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path

import duckdb

from logan import schema
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


def file_key(path: Path) -> tuple[int, datetime]:
    """What says a file is the one read before: its size (uncompressed, as `ingests.bytes`
    counts it; a gzip file's own trailer says it, modulo 2**32) and its modification time."""
    stat = path.stat()
    size = stat.st_size
    with path.open("rb") as fh:
        if fh.read(2) == b"\x1f\x8b" and size >= 18:
            fh.seek(-4, 2)
            size = -struct.unpack("<I", fh.read(4))[0] - 1  # marked: compare modulo 2**32
    return size, datetime.fromtimestamp(stat.st_mtime, UTC).replace(tzinfo=None)


def already_read(con: duckdb.DuckDBPyConnection, path: Path) -> bool:
    """Whether the newest ingest of `path` read it whole after its last change."""
    size, mtime = file_key(path)
    row = con.execute(
        "SELECT bytes, started_at FROM ingests WHERE source = ? ORDER BY ingest_id DESC LIMIT 1", [str(path)]
    ).fetchall()
    if not row or row[0][0] is None or row[0][1] < mtime:
        return False
    read = row[0][0]
    return read % 2**32 == -size - 1 if size < 0 else read == size


def forget(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Remove every row an earlier ingest of `path` left (it changed, or was cut short)."""
    con.execute("BEGIN")
    try:
        ids = "SELECT ingest_id FROM ingests WHERE source = ?"
        con.execute(f"DELETE FROM {schema.REQUESTS_TABLE} WHERE ingest_id IN ({ids})", [str(path)])
        for table in ("rejects", "events", "ingests"):
            con.execute(f"DELETE FROM {table} WHERE source = ?", [str(path)])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def files_of(source: SourceConfig, base: Path) -> list[Path]:
    pattern = str(base / source.path)
    found = sorted(glob.glob(pattern)) if any(ch in pattern for ch in "*?[") else [pattern]
    paths = [Path(p).resolve() for p in found if Path(p).is_file()]
    if not paths:
        raise LoganError("no file matches" if found or "*" in pattern else "no such file")
    return paths


def ingest_source(store: Store, source: SourceConfig, config: Config, run: NightlyRun) -> None:
    """Read the files of one source that are not already read as they are now."""
    r = config.read
    for path in files_of(source, config.path.parent):
        if already_read(store.con, path):
            run.skipped.append(str(path))
            continue
        forget(store.con, path)
        ingest([path], store, format=source.format, dialect=source.dialect, tz=r.tz, profile=r.profile,
               rules=r.rules, trusted_proxies=r.trusted_proxies)  # fmt: skip
        run.read.append(str(path))


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
