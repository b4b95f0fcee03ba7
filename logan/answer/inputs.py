"""Where an answer's rows come from: a store file, or log files read into a store made for
this one answer.

Every command that answers (`logan stats`, and the ones after it) takes either FILES or
`--db STORE` (or both: the files are read into that store first). `requests_of` is that
choice, once, for the CLI and for the library: given files and no store, the rows go to a
store that keeps only the columns the answer reads (in memory, or in a temporary file for
large logs) and is gone afterwards; given a store alone, it is opened read-only.
"""

from __future__ import annotations

import glob
import tempfile
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from logan.errors import LoganError
from logan.read.ingest import IngestSummary, ingest
from logan.store import Store, open_existing, writing

# Logs up to this size are read into an in-memory store (fastest); larger ones into a
# temporary file: a one-shot store in memory takes about 4x the log.
IN_MEMORY_MAX_BYTES = 1 << 30


@dataclass(frozen=True)
class ReadOptions:
    """How log files are read: the options of `logan ingest` (see logan.read.ingest.ingest)."""

    format: str = "auto"
    dialect: str | None = None
    tz: str = "UTC"
    profile: str = "auto"
    rules: object | None = None
    trusted_proxies: Sequence[str] = field(default_factory=tuple)
    keep_going: bool = False

    def ingest(self, files: Sequence[str], store: Store, columns: Collection[str] | None) -> IngestSummary:
        return ingest(
            files,
            store,
            format=self.format,
            dialect=self.dialect,
            tz=self.tz,
            profile=self.profile,
            rules=self.rules,
            trusted_proxies=tuple(self.trusted_proxies),
            columns=columns,
            keep_going=self.keep_going,
        )


@contextmanager
def requests_of(
    files: Sequence[str] | None = None,
    db: str | Path | None = None,
    columns: Collection[str] | None = None,
    read: ReadOptions | None = None,
    on_read: Callable[[IngestSummary], None] | None = None,
) -> Iterator[Store]:
    """An open store holding the rows to answer from, closed (and removed, when made for
    this answer) afterwards.

    `files` are read first (into `db` when given, so it keeps them; else into a one-shot
    store that keeps only `columns`, and then no events: all of both when None, as the
    answers that read events ask). `on_read` sees the ingest's summary.
    """
    files = list(files or [])
    if not files and db is None:
        raise LoganError("give log FILES, or --db STORE")
    scratch = None
    one_shot = db is None
    if one_shot and input_bytes(files) > IN_MEMORY_MAX_BYTES:
        scratch = tempfile.TemporaryDirectory(prefix="logan-answer-")
        db = Path(scratch.name) / "answer.duckdb"
    try:
        if not files:  # only read: read-only
            assert db is not None  # given FILES or --db (above)
            with open_existing(db, read_only=True) as store:
                yield store
            return
        with writing(db) as store:
            summary = (read or ReadOptions()).ingest(files, store, columns if one_shot else None)
            if on_read is not None:
                on_read(summary)
            yield store
    finally:
        if scratch is not None:
            scratch.cleanup()


def input_bytes(files: Sequence[str]) -> int:
    """The size of the files, globs and directories given (stdin counts 0)."""
    total = 0
    for pattern in files:
        for p in glob.glob(pattern) if any(c in pattern for c in "*?[") else [pattern]:
            path = Path(p)
            if path.is_dir():
                total += sum(f.stat().st_size for f in path.iterdir() if f.is_file())
            elif path.is_file():
                total += path.stat().st_size
    return total
