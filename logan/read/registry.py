"""Which files a store has read, and how far: what makes a re-run read only what is new.

Each file read into a store has a row in table `files`: its identity and the position read
up to. The position is saved in the transaction of each batch, with the batch's rows,
rejects and events, so a store holds every line of a file exactly once whatever happened:
a run killed mid-batch leaves the last committed position, and the next run goes on from
there (Filebeat and Vector keep such a registry beside the data, and so deliver at least
once; here it is in the data's own transaction).

A file is known by its content, not its name: a fingerprint of its first bytes (after
decompression). So every rotation style finds its file again: `access.log` renamed
`access.log.1` (and compressed later to `access.log.2.gz`) keeps its first bytes and goes
on from where it was; a new `access.log`, or one truncated under us (copytruncate), starts
with other bytes and is read from its first line. The device and inode break a tie between
files that start alike.

A position is where a resumed read starts, `offset` bytes into the content and `line`
lines in, and how many lines are already stored (`lines`, at or after that start): a run
that resumes after a crash re-reads at most one block and skips what the store has. A last
line without its newline is held back while the file may still be written (modified in the
last QUIET_SECONDS), and read whole on the next run.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb

# The bytes a file is known by (Filebeat's fingerprint reads 1 KiB too).
FINGERPRINT_BYTES = 1024
# A file unchanged this long is no longer written: its last line counts even without a
# newline (a server killed mid-line). A file written more recently keeps it for later.
QUIET_SECONDS = 300


@dataclass
class Position:
    """Where to read a file from, and what the store already holds of it."""

    file_id: int | None = None  # its row in `files`; None: not kept (stdin, a pipe)
    offset: int = 0  # bytes of content to skip: a line starts there
    line: int = 0  # lines before `offset`
    lines: int = 0  # lines the store holds (>= line)
    fingerprint: str = ""
    fp_len: int = 0
    # how it was read: (dialect, format string, label); a re-run of `auto` reads on with it
    # rather than detecting the format again on the few lines appended since
    format: tuple[str, str, str] | None = None
    profile: str | None = None  # and the profile `auto` chose

    @property
    def known(self) -> bool:
        return self.lines > 0


def fingerprint(prefix: bytes) -> str:
    return hashlib.sha256(prefix).hexdigest()


def find(
    con: duckdb.DuckDBPyConnection, path: str, prefix: bytes, compressed: bool, reread: bool = False
) -> Position:
    """The position to read the file at `path` from, its first bytes (decompressed) being
    `prefix`. A file the store has not met, or asked to be read again, starts at 0 with a
    new row."""
    fresh = Position(_new_id(con), fingerprint=fingerprint(prefix), fp_len=len(prefix))
    if reread or not prefix:  # an empty file has no identity yet
        return fresh
    st = os.stat(path)
    rows = con.execute(
        "SELECT file_id, resume_offset, resume_line, lines, fingerprint, fp_len, device, inode, path, "
        "dialect, format, format_label, profile FROM files WHERE fp_len > 0 AND fp_len <= ?",
        [len(prefix)],
    ).fetchall()
    matches = [r for r in rows if r[4] == fingerprint(prefix[: r[5]])]
    if not compressed:  # a file now shorter than where its read stopped was truncated: a new one
        matches = [r for r in matches if r[1] <= st.st_size]
    if not matches:
        return fresh
    # files that start alike: the same inode first, then the same path, then the furthest read
    best = max(matches, key=lambda r: (r[6] == st.st_dev and r[7] == st.st_ino, r[8] == path, r[3]))
    fmt = (best[9], best[10], best[11]) if best[9] is not None else None
    return Position(best[0], best[1], best[2], best[3], fingerprint(prefix), len(prefix), fmt, best[12])


def save(
    con: duckdb.DuckDBPyConnection, pos: Position, path: str, label: str, compressed: bool, ingest_id: int
) -> None:
    """Write the file's row (inside the caller's transaction: the batch's)."""
    st = os.stat(path)
    con.execute("DELETE FROM files WHERE file_id = ?", [pos.file_id])  # `files` has no key to upsert on
    con.execute(
        "INSERT INTO files (file_id, path, source, device, inode, fingerprint, fp_len, "
        "compressed, resume_offset, resume_line, lines, dialect, format, format_label, profile, ingest_id, "
        "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [pos.file_id, path, label, st.st_dev, st.st_ino, pos.fingerprint, pos.fp_len, compressed,
         pos.offset, pos.line, pos.lines, *(pos.format or (None, None, None)), pos.profile, ingest_id,
         datetime.now(UTC).replace(tzinfo=None)],
    )  # fmt: skip


def still_written(path: str) -> bool:
    """Whether the file was modified recently enough that its writer may go on."""
    return time.time() - os.stat(path).st_mtime < QUIET_SECONDS


def _new_id(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute("SELECT coalesce(max(file_id), 0) + 1 FROM files").fetchall()[0][0]
