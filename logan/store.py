"""A logan store: one DuckDB file (or memory) holding requests, rejects, events, ingests.

The store knows its tables and nothing of what reads them: the answers (logan.answer) take
its connection, and `logan.Store` adds them as methods for the library's users.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import duckdb

from logan import schema
from logan.errors import LoganError, StoreError

if TYPE_CHECKING:  # pandas costs 0.4 s to import: only the calls that return frames load it
    import pandas as pd


# logan never reaches the network: DuckDB would otherwise fetch an extension for a file it
# does not read itself (a SQLite file given as --db).
_OFFLINE = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}

# One process writes a store at a time (DuckDB locks the file; a reader is locked out too).
# Another logan waits this long for it, then says who holds it (LOGAN_LOCK_WAIT: seconds).
LOCK_WAIT = float(os.environ.get("LOGAN_LOCK_WAIT", "10"))
_LOCK_HELD = re.compile(r"Conflicting lock is held in (.*) \(PID (\d+)\)")


@dataclass
class Pruned:
    """What a prune dropped."""

    requests: int
    rejects: int
    events: int
    routes: int = 0


class Store:
    """An open store. `con` is a plain DuckDB connection: query it as you like."""

    def __init__(self, path: str | Path | None = None, read_only: bool = False, wait: float = LOCK_WAIT):
        self.path = str(path) if path else ":memory:"
        _check_is_duckdb(self.path)
        self.con = _connect(self.path, read_only, wait)
        # Timestamps are stored as UTC; TIMESTAMPTZ casts must happen in UTC.
        self.con.execute("SET TimeZone = 'UTC'")
        # Loads need no particular row order: 10-15% faster.
        self.con.execute("SET preserve_insertion_order = false")
        self._check_version(read_only)
        if not read_only:
            self._ensure_schema()

    def _ensure_schema(self) -> None:
        # One transaction: a run killed while it makes a new store leaves an empty file,
        # which holds nothing yet, never tables without a version (a store too old to read).
        with transaction(self.con):
            self.con.execute("CREATE TABLE IF NOT EXISTS logan_meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
            for name in schema.PLAIN_TABLES:
                self.con.execute(schema.create_table_sql(name))
            always = ", ".join(f"{c} {schema.STORED_TYPES[c]}" for c in schema.ALWAYS_STORED)
            self.con.execute(f"CREATE TABLE IF NOT EXISTS {schema.REQUESTS_TABLE} ({always})")
            _refresh_view(self.con)  # a store written by an earlier logan gets today's view
            # a new store gets today's version, an older one is now migrated (the tables
            # above); a store as it should be is not written at all (it opens on a full disk)
            set_meta(self.con, "schema_version", str(schema.SCHEMA_VERSION))

    def ensure_columns(self, columns: Iterable[str], sets: dict[int, list[str]] | None = None) -> None:
        """Store these canonical columns from now on (see schema.REQUESTS_TABLE), and the
        lists of `extra` entries `sets` (schema.EXTRA_SET)."""
        ensure_columns(self.con, columns, sets)

    def append(self, rows: pd.DataFrame) -> int:
        """Add rows given by canonical column names (tests, imports); returns the count.

        Each distinct (source, dialect, format) of the rows becomes one `ingests` row."""
        return append_requests(self.con, rows)

    def _check_version(self, read_only: bool) -> None:
        """Refuse a store this logan cannot read: a newer one, or one too old to migrate;
        a file that is no logan store is refused too, untouched (a new file is empty)."""
        tables = {r[0] for r in self.con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if not tables and not read_only:
            return  # a new store: _ensure_schema makes it
        if not tables:
            raise LoganError(f"{self.path} holds nothing yet: no ingest into it has finished a batch")
        if "logan_meta" not in tables:
            raise LoganError(f"{self.path} is a DuckDB file but not a logan store: not touching it")
        row = self.con.execute("SELECT value FROM logan_meta WHERE key = 'schema_version'").fetchall()
        found = int(row[0][0]) if row else None
        if found == schema.SCHEMA_VERSION or found in schema.MIGRATES_FROM:
            return
        if found is not None and found > schema.SCHEMA_VERSION:
            raise LoganError(
                f"{self.path} was written by a newer logan (store version {found}; this logan reads "
                f"{schema.SCHEMA_VERSION} and older): upgrade logan to read it"
            )
        raise LoganError(
            f"{self.path} has store version {found}, too old for this logan ({schema.SCHEMA_VERSION})"
        )

    def sql(self, query: str, params: list | dict | None = None) -> pd.DataFrame:
        """Run a query; the answer as a DataFrame."""
        return self.con.execute(query, params).df()

    def is_empty(self) -> bool:
        """Whether nothing was ever read into it (no `ingests` row)."""
        return not self.con.execute("SELECT count(*) FROM ingests").fetchall()[0][0]

    def prune(self, before: datetime) -> Pruned:
        """Drop the requests that started before `before` (UTC), the events before it, the
        rejects of ingests none of whose requests are left (or, of an ingest that read no
        request, that ran before `before`), and the routes no request is left on; the
        space is reused by what is ingested next (DuckDB reuses the freed blocks after the
        checkpoint), so a store pruned every night keeps a steady size. The file registry
        stays: a pruned file is not read again."""
        con = self.con
        con.execute("BEGIN")
        gone = con.execute(f"DELETE FROM {schema.REQUESTS_TABLE} WHERE ts_start < ?", [before]).fetchall()
        events = con.execute("DELETE FROM events WHERE ts < ?", [before]).fetchall()
        # a reject has no time of its own: it goes with its ingest's requests
        rejects = con.execute(
            f"""DELETE FROM rejects r USING ingests i
                WHERE r.source = i.source AND r.line_no BETWEEN i.first_line AND i.first_line + i.lines - 1
                  AND (i.rows > 0 OR i.started_at < ?)
                  AND NOT EXISTS (SELECT 1 FROM {schema.REQUESTS_TABLE} q WHERE q.ingest_id = i.ingest_id)""",
            [before],
        ).fetchall()
        routes = _drop_unused_routes(con) if "route" in stored_columns(con) else 0
        con.execute("COMMIT")
        con.execute("CHECKPOINT")
        return Pruned(gone[0][0], rejects[0][0], events[0][0], routes)

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _drop_unused_routes(con: duckdb.DuckDBPyConnection) -> int:
    """Drop the learned route templates no request refers to any more: a site of hashed
    paths brings new routes every day, and `routes` would grow for ever (and with it the
    folds that read every route). The templates left stay as they were learned."""
    return con.execute(
        "DELETE FROM routes AS t WHERE NOT EXISTS"
        f" (SELECT 1 FROM {schema.REQUESTS_TABLE} AS r WHERE r.route = t.route)"
    ).fetchall()[0][0]


def _check_is_duckdb(path: str) -> None:
    """Refuse a file that is not a DuckDB database before DuckDB opens it (DuckDB would
    take a SQLite file for one to attach and look for an extension to read it)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError:
        return  # a new store, or one DuckDB will say it cannot open
    if head and head[8:12] != b"DUCK":
        what = "a SQLite database" if head.startswith(b"SQLite format 3") else "not a DuckDB file"
        raise LoganError(f"{path} is {what}, not a logan store: not touching it")


def stored_columns(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE table_name = ? AND schema_name = 'main'",
        [schema.REQUESTS_TABLE],
    ).fetchall()
    return {r[0] for r in rows}


def extra_sets(con: duckdb.DuckDBPyConnection, stored: set[str] | None = None) -> dict[int, list[str]]:
    """The lists of `extra` entries the store's rows have, by id (schema.EXTRA_SET);
    `stored`: its stored columns, when the caller has them."""
    if schema.EXTRA_SET not in (stored_columns(con) if stored is None else stored):
        return {}  # none (a store of 8 or older; Spark's)
    return dict(con.execute("SELECT set_id, keys FROM extra_sets").fetchall())


def _refresh_view(con: duckdb.DuckDBPyConnection) -> None:
    """Write the `requests` view anew unless the one in the store is today's for the
    stored columns. `logan_meta` keeps a hash of the view's text and of the view as DuckDB
    holds it, both written with the view in one transaction: a run killed between the
    two by an older logan left a view without the new columns (NULL in every row) that a
    hash of the text alone called current; the hash of what DuckDB holds sees it."""
    stored = stored_columns(con)
    sql = schema.requests_view_sql(stored, extra_sets(con, stored))
    with transaction(con):
        if meta(con, VIEW_HASH) != _view_hash(con, sql):
            con.execute(sql)
            set_meta(con, VIEW_HASH, _view_hash(con, sql))


# logan_meta: _view_hash of the `requests` view.
VIEW_HASH = "requests_view"


def _view_hash(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    """sha256 of the view's text and of the `requests` view as DuckDB holds it."""
    held = con.execute(
        "SELECT sql FROM duckdb_views()"
        " WHERE view_name = 'requests' AND schema_name = 'main' AND NOT temporary"
    )
    return hashlib.sha256(f"{sql}\0{held.fetchall()}".encode()).hexdigest()


def meta(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    """A `logan_meta` value, None when unset."""
    got = con.execute("SELECT value FROM logan_meta WHERE key = ?", [key]).fetchall()
    return got[0][0] if got else None


def set_meta(con: duckdb.DuckDBPyConnection, key: str, value: str) -> bool:
    """Set a `logan_meta` value; whether it changed (nothing is written when not)."""
    if meta(con, key) == value:
        return False
    con.execute("INSERT OR REPLACE INTO logan_meta VALUES (?, ?)", [key, value])
    return True


def ensure_columns(
    con: duckdb.DuckDBPyConnection, columns: Iterable[str], sets: dict[int, list[str]] | None = None
) -> None:
    """Add the columns the stored table lacks, canonical, schema.STORED_ONLY or `extra`
    entries, and the lists of entries `sets` the store lacks (cheap: no row is rewritten).
    The columns, the lists and the view over them are one transaction: a run killed among
    them leaves none of them."""
    with transaction(con):
        _ensure_columns(con, columns, sets)


def _ensure_columns(
    con: duckdb.DuckDBPyConnection, columns: Iterable[str], sets: dict[int, list[str]] | None
) -> None:
    have = stored_columns(con)
    wanted = set(columns) - set(schema.FROM_INGESTS)  # kept in `ingests`, not per row
    missing = [c for c in schema.STORED_TYPES if c in wanted and c not in have]
    missing += sorted(c for c in wanted - have - set(schema.STORED_TYPES))  # extra_set and entries
    for c in missing:
        added = f"{schema.quoted(c)} {schema.stored_type(c)}"
        con.execute(f"ALTER TABLE {schema.REQUESTS_TABLE} ADD COLUMN {added}")
    known = extra_sets(con)
    new = {i: keys for i, keys in (sets or {}).items() if i not in known}
    clash = [keys for i, keys in (sets or {}).items() if i in known and known[i] != keys]
    if clash:  # two lists with one sha256 prefix: never seen, but never a wrong map either
        raise LoganError(f"the extra entries {clash[0]} share an id with others in this store")
    for i, keys in new.items():
        con.execute("INSERT INTO extra_sets VALUES (?, ?)", [i, keys])
    if missing or new:
        _refresh_view(con)


def append_requests(con: duckdb.DuckDBPyConnection, rows: pd.DataFrame) -> int:
    """Add rows by canonical column names. The rows of each distinct (source, dialect,
    format) get a new `ingests` row (lines = rows, no rejects or events, no bytes), which
    the `requests` view reads those three columns from; all in one transaction."""
    unknown = [c for c in rows.columns if c not in schema.REQUEST_TYPES]
    if unknown:
        raise LoganError(f"not columns of requests: {unknown}")
    given = [c for c in schema.FROM_INGESTS if c in rows.columns]
    key = {c: f"CAST(a.{c} AS VARCHAR)" if c in given else "NULL::VARCHAR" for c in schema.FROM_INGESTS}
    first = "min(a.line_no)" if "line_no" in rows.columns else "NULL"
    ensure_columns(con, rows.columns)
    con.register("__append", rows)
    try:
        with transaction(con):
            con.execute(
                "CREATE OR REPLACE TEMP TABLE __append_ingests AS SELECT "
                "(SELECT coalesce(max(ingest_id), 0) FROM ingests) "
                "+ row_number() OVER (ORDER BY source, dialect, format) AS ingest_id, * "
                f"FROM (SELECT {', '.join(f'{sql} AS {c}' for c, sql in key.items())}, "
                f"{first} AS first_line, count(*) AS n FROM __append AS a GROUP BY ALL)"
            )
            con.execute(
                "INSERT INTO ingests (ingest_id, source, dialect, format, first_line, lines, rows,"
                " rejects, events, bytes, started_at, seconds) SELECT ingest_id, source, dialect,"
                " format, first_line, n, n, 0, 0, NULL, current_timestamp::TIMESTAMP, 0 FROM __append_ingests"
            )
            kept = f" EXCLUDE ({', '.join(given)})" if given else ""
            on = " AND ".join(f"{sql} IS NOT DISTINCT FROM i.{c}" for c, sql in key.items())
            n = con.execute(
                f"INSERT INTO {schema.REQUESTS_TABLE} BY NAME SELECT a.*{kept}, i.ingest_id "
                f"FROM __append AS a JOIN __append_ingests AS i ON {on}"
            ).fetchall()
            con.execute("DROP TABLE __append_ingests")
    finally:
        con.unregister("__append")
    return n[0][0]


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """The block's statements in one transaction, rolled back when one fails; in the
    caller's when one is open (then committed or undone with it)."""
    if _in_transaction(con):
        yield
        return
    con.execute("BEGIN")
    try:
        yield
        con.execute("COMMIT")
    except BaseException:
        roll_back(con)
        raise


def roll_back(con: duckdb.DuckDBPyConnection) -> None:
    """Undo the open transaction; a COMMIT that failed (the disk full) has ended it already."""
    with contextlib.suppress(duckdb.TransactionException):
        con.execute("ROLLBACK")


def _in_transaction(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether an explicit transaction is open (a failed BEGIN would abort it): in
    auto-commit every statement has a transaction id of its own."""
    q = "SELECT txid_current()"
    return con.execute(q).fetchall() == con.execute(q).fetchall()


def _connect(path: str, read_only: bool, wait: float) -> duckdb.DuckDBPyConnection:
    """DuckDB's connection to the store, waiting up to `wait` seconds while another
    process holds it."""
    deadline = time.monotonic() + wait
    while True:
        try:
            con = duckdb.connect(path, read_only=read_only, config=_OFFLINE)
            # DuckDB draws a progress bar on stdout for a query past 2 s: it would land inside
            # `-o csv > file`, and in the mail cron sends of whatever a job prints. (In
            # Jupyter the setting cannot change without ipywidgets; the bar is a widget there.)
            with contextlib.suppress(duckdb.Error):
                con.execute("SET enable_progress_bar = false")
            return con
        except duckdb.Error as exc:
            held = _LOCK_HELD.search(str(exc))
            if held is None:
                said = str(exc).splitlines()[0]
                # a process killed while DuckDB rewrote a metadata block (docs/store.md)
                damaged = "checksum" in said
                said += "; the file is damaged: ingest the logs into a new store" if damaged else ""
                raise LoganError(f"cannot open store {path}: {said}") from None
            if time.monotonic() >= deadline:
                pid = int(held.group(2))
                raise StoreError(
                    f"{path} is being written by pid {pid} ({Path(held.group(1)).name}{_since(pid)}): "
                    f"waited {wait:g} s; try again when it is done"
                ) from None
        time.sleep(0.2)


def _since(pid: int) -> str:
    """', since HH:MM:SS' for a process running on this machine (Linux), else ''."""
    try:
        ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return ""
    started = time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")
    return f", since {datetime.fromtimestamp(started):%H:%M:%S}"


def open_store(path: str | Path | None = None, read_only: bool = False, wait: float = LOCK_WAIT) -> Store:
    """Open (creating when needed) the store at `path`; None for an in-memory store. While
    another process holds the file, wait up to `wait` seconds for it."""
    return Store(path, read_only=read_only, wait=wait)


def open_existing(path: str | Path, read_only: bool = False) -> Store:
    """Open the store at `path` for a command that reads or changes what it holds: a path
    with no file is a mistake to say, not a new empty store to make."""
    if not Path(path).exists():
        raise LoganError(f"--db: no store at {path}")
    return open_store(path, read_only=read_only)


@contextmanager
def writing(path: str | Path | None, store: type[Store] = Store) -> Iterator[Store]:
    """A store opened for a command that writes into it, closed afterwards. When the
    command fails before anything was kept, a file this call created is removed again: a
    failed command leaves no empty store behind."""
    created = path is not None and not Path(path).exists()
    st = store(path)
    try:
        yield st
    except BaseException:
        empty = created and st.is_empty()
        st.close()
        if empty:
            for leftover in (Path(path), Path(f"{path}.wal")):  # type: ignore[arg-type]
                leftover.unlink(missing_ok=True)
        raise
    st.close()


# DuckDB's memory while an answer reads a store (within_memory): what it keeps of the
# store's blocks, and what its aggregates hold before they spill.
ANSWER_MEMORY_MB = 256


@contextmanager
def memory_at_most(con: duckdb.DuckDBPyConnection, mib: int | None) -> Iterator[None]:
    """DuckDB's memory held to `mib` for the block (None: DuckDB's own limit); after it, the
    blocks it cached let go. DuckDB keeps the blocks it read cached up to 80% of the
    machine's memory: `logan cache` on a 20 M-row store kept 0.8-1.5 GB of them after its
    GROUP BY was done. Under the limit they are read again from the file when needed (the
    GROUP BY took as long), and what does not fit spills to a temporary file. Not on a store
    in memory (DuckDB would move its tables to a temporary file to meet the limit), nor on
    Spark (its memory is its own)."""
    if not _boundable(con):
        yield
        return
    if mib is not None:
        con.execute(f"SET memory_limit = '{int(mib)}MB'")
    _BOUND.add(id(con))
    try:
        yield
    finally:
        _BOUND.discard(id(con))
        # a limit below what DuckDB holds evicts the cached blocks; one it cannot meet
        # (blocks still pinned) is refused, and the cache stays
        with contextlib.suppress(duckdb.Error):
            con.execute(f"SET memory_limit = '{_LET_GO_MB}MB'")
        con.execute("RESET memory_limit")


T = TypeVar("T")


def within_memory(con: duckdb.DuckDBPyConnection, mib: int, run: Callable[[], T]) -> T:
    """run() under memory_at_most(mib); when it runs out of that memory, again with four
    times as much, then with DuckDB's own limit. The bound is for what DuckDB merely keeps,
    not for what an answer needs: what does not spill (the texts of a million keys picked by
    any_value) ran out of 256 MB. `run` leaves nothing behind when it fails. Where no bound
    applies, or an outer block's holds (which retries), it runs once."""
    if not _boundable(con):
        return run()
    for limit in (mib, 4 * mib):
        try:
            with memory_at_most(con, limit):
                return run()
        except duckdb.OutOfMemoryException:
            pass
    with memory_at_most(con, None):
        return run()


_LET_GO_MB = 16
# The connections inside a memory_at_most block now.
_BOUND: set[int] = set()


def _boundable(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether memory_at_most sets a limit here: not on Spark (its memory is its own), not on
    a store in memory, not inside another such block (a report's section), whose bound holds."""
    return isinstance(con, duckdb.DuckDBPyConnection) and not _in_memory(con) and id(con) not in _BOUND


def _in_memory(con: duckdb.DuckDBPyConnection) -> bool:
    sql = "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    return con.execute(sql).fetchall()[0][0] is None


# What an ingest turns off while it parses (logan.read.ingest): DuckDB would push its WHERE
# clauses below the projections that compute the split pieces, and pick the hash joins'
# sides itself.
DISABLED_OPTIMIZERS = "filter_pushdown,build_side_probe_side"


@contextmanager
def filter_pushdown(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Filter pushdown back on, for a lookup of this ingest's rows by line number (zone
    maps then skip every other batch); the ingest keeps it off for its parsing, where
    DuckDB would inline string_split(line, '"') into every use."""
    con.execute("SET disabled_optimizers = ''")
    try:
        yield
    finally:
        con.execute(f"SET disabled_optimizers = '{DISABLED_OPTIMIZERS}'")
