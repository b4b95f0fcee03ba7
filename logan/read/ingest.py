"""Ingest: log lines in, `requests` rows and `rejects` out, one transaction per batch.

Invariant, per source and per batch: rows + rejects (+ events) = lines read. A batch's rows
and rejects commit together, so an interrupted ingest never leaves half a batch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import duckdb
import pyarrow as pa

from logan import schema
from logan.errors import FormatError, LoganError, StoreError
from logan.read import detect, events, native, registry, rows
from logan.read.classify import (
    CLASS_CACHE_KEYS,
    ClassCache,
    Rules,
    classified_inline_sql,
    classified_sql,
    detect_profile,
    fold_new_routes,
    key_columns,
    load_rules,
    register_route_template,
    templates_of_paths,
    unfilled_columns,
)
from logan.read.compile import CompiledFormat, compile_format
from logan.read.dialects import get_dialect, resolve_format
from logan.read.sources import (
    BUFFERS,
    DEFAULT_BLOCK,
    ROW_GROUP,
    Batch,
    Prepare,
    Source,
    Start,
    expand,
    read_batches,
    scan_rows,
)
from logan.store import DISABLED_OPTIMIZERS, Store, filter_pushdown, open_store, roll_back, stored_columns

# DuckDB's memory during an ingest into a file: enough for a block's batch in flight (the
# same speed as without a limit on a 5 GB log), small enough that RSS stays flat (the
# classifier works on a batch's distinct request lines, not on the batch).
INGEST_MEMORY_MB = 256
# ... and while batches are read: the batches of two row groups of Apache's long "extended"
# lines (sources.BATCH_GROUPS) took the 1 GB log's ingest to 884-938 MiB of peak RSS under
# 256 MB, to 835-844 MiB under 192 at the same speed. The route fold and the checkpoint
# after the last batch, with no batch in memory, have INGEST_MEMORY_MB.
BATCH_MEMORY_MB = 192
# A batch that does not fit (hundreds of thousands of distinct request lines, each joined
# to its classes: a log of hashed file names) runs again with twice the limit, up to this.
INGEST_MEMORY_MAX_MB = 2048
# A checkpoint merges the table's last row group, when partly full, with the new rows behind
# it (DuckDB's vacuum): a re-run's 40,000 lines rewrote the 28,000 rows the run before left
# as well, 133 ms against 57, and 95,000 lines 0.72 s against 0.13. A batch of this many lines
# or more turns that off for the ingest: its rows stay row groups of their own. Fewer (a
# --follow round's, a cron's every few minutes) are left to DuckDB, which merges small row
# groups together instead of adding one a round.
OWN_ROW_GROUP = ROW_GROUP // 4


@dataclass
class SourceSummary:
    source: str
    format: str
    detected: str | None = None  # how auto-detection chose, for the user
    lines: int = 0
    rows: int = 0
    rejects: int = 0
    events: int = 0
    nbytes: int = 0
    invalid_utf8: int = 0
    ingest_id: int | None = None  # its row in `ingests`
    resumed_at: int = 0  # lines of it read before (registry): this read went on after them


@dataclass
class IngestSummary:
    sources: list[SourceSummary] = field(default_factory=list)
    rejects_by_reason: dict[str, int] = field(default_factory=dict)
    ts_min: datetime | None = None
    ts_max: datetime | None = None
    seconds: float = 0.0
    tz: str = "UTC"
    tz_assumed: bool = False  # some timestamps had no offset and were read in `tz`
    profile: str | None = None
    store: Store | None = None  # where the rows went (the new one when none was given)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (source, why): no access log

    def total(self, attr: str) -> int:
        return sum(getattr(s, attr) for s in self.sources)

    @property
    def lines(self) -> int:
        return self.total("lines")

    @property
    def rows(self) -> int:
        return self.total("rows")

    @property
    def rejects(self) -> int:
        return self.total("rejects")

    @property
    def events(self) -> int:
        return self.total("events")

    @property
    def mb_per_s(self) -> float:
        return self.total("nbytes") / 1e6 / self.seconds if self.seconds else 0.0


def merge_summaries(summaries: Sequence[IngestSummary]) -> IngestSummary:
    """One summary for several ingests into one store (a stack's servers)."""
    out = IngestSummary(tz=summaries[0].tz)
    for s in summaries:
        out.sources += s.sources
        out.skipped += s.skipped
        for k, v in s.rejects_by_reason.items():
            out.rejects_by_reason[k] = out.rejects_by_reason.get(k, 0) + v
        out.seconds += s.seconds
        out.tz_assumed |= s.tz_assumed
        out.profile = out.profile or s.profile
        lo, hi = s.ts_min, s.ts_max
        out.ts_min = lo if out.ts_min is None or (lo is not None and lo < out.ts_min) else out.ts_min
        out.ts_max = hi if out.ts_max is None or (hi is not None and hi > out.ts_max) else out.ts_max
    return out


ProgressFn = Callable[[str, int, int | None], None]  # (source, bytes done, total or None)


def ingest(
    paths: Sequence[str | Path],
    store: Store | str | Path | None = None,
    format: str = "auto",
    dialect: str | None = None,
    tz: str = "UTC",
    profile: str = "auto",
    rules: object | None = None,
    trusted_proxies: Sequence[str] = (),
    label: str | None = None,
    block_size: int = DEFAULT_BLOCK,
    progress: ProgressFn | None = None,
    columns: Collection[str] | None = None,
    keep_going: bool = False,
    reread: bool = False,
) -> IngestSummary:
    """Read log files (globs, .gz, '-' for stdin) into a store and say what happened.

    `store` is an open Store, a path to a DuckDB file, or None for a new in-memory store
    (then the returned summary's `store` attribute holds it). `columns` keeps only those
    `requests` columns (the others read NULL), for a store made for one report: what is
    not kept is neither cut out of the lines nor written. Such a store keeps no events
    either (dating an RFC 3164 event from the requests around it was a tenth of `logan
    stats` on HAProxy's log); the answers that read events, the timeline and incidents,
    keep every column. Every line is still checked, so rows, rejects and events are
    counted the same.

    Of several files, one that no format reads (an error log beside the access logs) is
    skipped and said in `skipped`; a single one is an error. A format given by name that
    reads none of a file's first lines is an error too (every line would be a reject),
    unless `keep_going`.

    A file the store has read before is read on from where it was (logan/read/registry.py:
    its rows are never stored twice, whatever its name is now); `reread` reads every file
    whole again, as a new ingest.
    """
    st = store if isinstance(store, Store) else open_store(store)
    _check_tz(st, tz)
    sources = [s for s in expand([str(p) for p in paths]) if not _is_store_file(s, st)]
    if not sources:
        raise LoganError("no input: the files given are the store itself")
    if label and len(sources) == 1:
        sources[0].label = label
    summary = IngestSummary(tz=tz)
    started = time.perf_counter()
    # DuckDB pushes our WHERE clauses below the projections that compute the split pieces,
    # inlining `string_split(line, '"')` once per use: parsing ran 1.7x slower with it on.
    st.con.execute(f"SET disabled_optimizers = '{DISABLED_OPTIMIZERS}'")
    if st.path != ":memory:":
        # DuckDB keeps written blocks cached up to 80% of RAM by default: RSS then grows
        # with the input (1.5 GB for a 5 GB log). Written blocks can be read back instead.
        st.con.execute(f"SET memory_limit = '{BATCH_MEMORY_MB}MB'")
        _keep_block_memory(st.con)
        # Commits go to the write-ahead log, and the file is checkpointed once, below. Not
        # every commit (checkpoint_threshold '1KB' saved a re-run 0.35 s of syncing the log):
        # DuckDB rewrites its metadata blocks in place at a checkpoint, and a run killed in
        # that write leaves a file DuckDB refuses (docs/store.md). Fewer checkpoints, fewer
        # such moments.
    keep = None if columns is None else frozenset(columns)
    shared: dict[str, _Classes] = {}  # by profile
    try:
        for src in sources:
            try:
                summary.sources.append(
                    _ingest_source(
                        st,
                        src,
                        format,
                        dialect,
                        tz,
                        profile,
                        rules,
                        trusted_proxies,
                        block_size,
                        progress,
                        summary,
                        keep,
                        shared,
                        keep_going,
                        reread,
                    )
                )
            except FormatError as exc:  # raised at its first batch: nothing of it was kept
                if len(sources) == 1:
                    raise FormatError(f"{src.label}: {exc}") from None
                summary.skipped.append((src.label, str(exc).splitlines()[0]))
        if st.path != ":memory:":
            _at_least(st.con, INGEST_MEMORY_MB)
        if summary.profile in ("puppet", "generic"):
            # Route words that vary a lot under one prefix (/tags/{name}) show only across
            # rows: fold them now that the new rows are in (the Puppet profile gives the
            # routes of non-Puppet paths the generic way).
            _within_memory(st, lambda: fold_new_routes(st.con))
        if st.path != ":memory:":
            # Written now, under the memory limit: the checkpoint DuckDB makes at close
            # would run without it (3.2 GB for a 1 GB log of varied paths), and the time
            # it takes belongs to the ingest's.
            _within_memory(st, lambda: st.con.execute("CHECKPOINT"))
    except (duckdb.Error, OSError) as exc:
        raise _disk_full(st, exc) or exc from exc
    finally:
        with contextlib.suppress(duckdb.Error):  # a store invalidated by a full disk says so above
            for classes in shared.values():
                st.con.execute(f"DROP TABLE IF EXISTS {classes.table}")
            st.con.execute("RESET disabled_optimizers")
            st.con.execute("RESET memory_limit")
            st.con.execute("RESET max_vacuum_tasks")
        BUFFERS.release()
    summary.seconds = time.perf_counter() - started
    _finish_summary(st, summary)
    summary.store = st
    return summary


def _is_store_file(src: Source, st: Store) -> bool:
    """Whether `src` is the store being written or its write-ahead log (a directory given
    whole that holds the store too): never read as a log. The log comes and goes as
    commits checkpoint."""
    if src.path is None or st.path == ":memory:":
        return False
    store = Path(st.path).resolve()
    return Path(src.path).resolve() in (store, store.with_name(store.name + ".wal"))


def _check_tz(st: Store, tz: str) -> None:
    if tz.upper() == "UTC":
        return
    known = st.con.execute("SELECT count(*) FROM pg_timezone_names() WHERE name = ?", [tz]).fetchall()[0]
    if not known or not known[0]:
        raise LoganError(f"unknown time zone {tz!r} (use an IANA name such as Europe/Berlin)")


def _ingest_source(
    st: Store,
    src: Source,
    fmt: str,
    dialect: str | None,
    tz: str,
    profile: str,
    rules: object | None,
    trusted_proxies: Sequence[str],
    block_size: int,
    progress: ProgressFn | None,
    summary: IngestSummary,
    keep: rows.Keep,
    shared: dict[str, _Classes],
    keep_going: bool = False,
    reread: bool = False,
) -> SourceSummary:
    total = src.size()
    reading: _Reading | None = None
    classes: _Classes | None = None
    out: SourceSummary | None = None
    started_at = datetime.now(UTC).replace(tzinfo=None)
    t0 = time.perf_counter()
    ingest_id = st.con.execute("SELECT coalesce(max(ingest_id), 0) + 1 FROM ingests").fetchall()[0][0]
    kept, start = _where_to_start(st, src, reread)
    # The C split runs in the reader thread, on its own DuckDB cursor (syslog headers).
    prepare, cursor = Prepare(), None
    batches = read_batches(src, block_size, start=start, prepare=prepare)
    try:
        for batch in batches:
            if reading is None:
                cf, detected = _choose_format(st, fmt, dialect, batch, keep_going, kept)
                out = SourceSummary(src.label, cf.label, detected, ingest_id=ingest_id)
                out.resumed_at = start.skip
                resolved = _resolve_profile(profile, st, batch, cf, kept)
                summary.profile = summary.profile or resolved
                classes = _classes_for(st, shared, resolved, rules, trusted_proxies, ingest_id)
                classification = classes.classification
                classified = classification is not None
                plan = native.plan(cf, *rows.fields_read(cf, classified, keep), tz, sample=(st.con, batch))
                plan = _keyed_plan(plan, cf, classification)
                reading = _Reading(
                    cf, plan, tz, classification, keep, src.label, ingest_id, kept, classes=classes
                )
                unfilled = classification.unfilled if classification is not None else ()
                reading.entries = detect.extras_filled(st, batch.table, cf)
                names = rows.stored_columns(cf, classified, keep, reading.rebuild, unfilled, reading.entries)
                st.ensure_columns(names, rows.extra_set_of(cf) if schema.EXTRA_SET in names else None)
                summary.tz_assumed |= _has_local_time(cf)
                reading.row = _IngestRow(
                    [ingest_id, src.label, cf.dialect.name, cf.label, batch.first_line, started_at], t0
                )
                if plan is not None:
                    cursor = st.con.cursor()
                # batches of whole row groups of rows: a store in memory writes none
                whole = st.path != ":memory:"
                split = functools.partial(
                    native.read_batch, cursor, cf, plan, whole_rows=whole, templates=templates_of_paths
                )
                prepare.start(split if plan else None, whole)
            assert out is not None and classes is not None
            _empty_cache_when_useless(st.con, classes)
            if batch.lines >= OWN_ROW_GROUP and st.path != ":memory:":
                st.con.execute("SET max_vacuum_tasks = 0")
            reasons = _within_memory(st, functools.partial(_ingest_batch, st, reading, batch, out))
            classes.last_lines = batch.lines
            for k, v in reasons.items():
                summary.rejects_by_reason[k] = summary.rejects_by_reason.get(k, 0) + v
            if progress:
                progress(src.label, out.nbytes, total)
            del batch  # its block and fields go back to the pool while the next is read
    finally:
        batches.close()  # the reader thread is done with the cursor
        if cursor is not None:
            cursor.close()
    if out is None and kept is not None and kept.position.known:  # read before, nothing new
        return SourceSummary(src.label, fmt, resumed_at=kept.position.lines)
    if out is None:  # an empty input: its row says so
        out = SourceSummary(src.label, fmt, ingest_id=ingest_id)
        empty = _IngestRow([ingest_id, src.label, dialect, fmt, 1, started_at], t0)
        empty.begin(st.con)
        empty.count(st.con, 0, 0, 0, 0, 0)
    return out


def _keyed_plan(
    plan: native.Plan | None, cf: CompiledFormat, classification: rows.Classifier
) -> native.Plan | None:
    """The C split's plan with the fields classification keys on, when it cuts them out as
    texts: how they lose their query, and what the reader makes of a request line besides
    (native.Plan.row_query, row_templates)."""
    keyed = rows.key_fields(cf, classification)
    if plan is None or not keyed or set(keyed) & (plan.numbers | set(plan.absent)):
        return plan
    assert classification is not None
    cut = tuple(rows.query_cut(cf, classification, k) for k in keyed)
    row_query = any(c == "request" and rows.query_as_cut(cf, k) for k, c in zip(keyed, cut, strict=True))
    templates = row_query and classification.templates and rows.cut_from_request(cf, ["path"])
    # the request lines the reader takes apart, and the Puppet profile's parse reads whole
    requests = [(k, c) for k, c in zip(keyed, cut, strict=True) if rows.query_as_cut(cf, k)]
    request_of = requests[0][0] if requests else None
    puppet = bool(requests) and requests[0][1] is None and classification.parts
    puppet = puppet and rows.cut_from_request(cf, ["path"])
    return dataclasses.replace(
        plan, keyed=tuple(keyed), cut=cut, row_query=row_query, row_templates=templates,
        request_of=request_of, puppet=puppet,
    )  # fmt: skip


@dataclass
class _Kept:
    """A file the store keeps track of (registry): where it is, and where its read is."""

    path: str
    compressed: bool
    position: registry.Position

    def save(self, con: duckdb.DuckDBPyConnection, batch: Batch, label: str, ingest_id: int) -> None:
        """The position after `batch`, in its transaction."""
        pos = self.position
        pos.offset, pos.line = batch.resume
        pos.lines = batch.first_line + batch.lines - 1
        registry.save(con, pos, self.path, label, self.compressed, ingest_id)


def _where_to_start(st: Store, src: Source, reread: bool) -> tuple[_Kept | None, Start]:
    """Where the store's registry says to read `src` from (stdin, a pipe: from the start,
    and nothing kept)."""
    if not src.regular:
        return None, Start()
    assert src.path is not None
    compressed = src.compressed()
    pos = registry.find(st.con, src.path, src.prefix(registry.FINGERPRINT_BYTES), compressed, reread)
    # a plain file written a moment ago may be mid-line: its last line waits for the next run
    # (a store in memory has no next run)
    hold = st.path != ":memory:" and registry.still_written(src.path)
    return _Kept(src.path, compressed, pos), Start(pos.offset, pos.line, pos.lines, hold)


@dataclass
class _Classes:
    """A profile's classification in one ingest, shared by the sources read with it: its
    cache serves every file (a directory of rotated logs of one server asks for the same
    paths; each file's first batch filled a cache of its own, 40 ms a file)."""

    classification: rows.Classifier
    table: str  # the cache's table, dropped when the ingest ends
    size: int = 0  # the keys the cache holds: what its fills inserted since it was made
    held: int = 0  # the keys it held before the last batch
    last_lines: int = 0  # the lines of the last batch classified with it


@dataclass
class _Reading:
    """How one source's batches are read and written, fixed by its first batch."""

    cf: CompiledFormat
    plan: native.Plan | None  # the C split, or None for the SQL one
    tz: str
    classification: rows.Classifier
    keep: rows.Keep
    label: str
    ingest_id: int
    kept: _Kept | None = None  # the file's place in the store's registry (None: stdin)
    row: _IngestRow | None = None
    classes: _Classes | None = None  # the classification's cache, shared with other sources
    # request lines that are their parts joined left for the view to rebuild (rows.stored_columns);
    # not by an engine that reads the stored columns back (read_not_rows)
    rebuild: bool = True
    # the `extra` map written an entry a column (rows.stored_columns), for a format whose
    # rows mostly have one
    entries: bool = False

    @functools.cached_property
    def fast(self) -> str | None:
        """The lines a split reads: the C split's (registered as __raw), or the SQL
        split's over __batch; None when the format allows no split."""
        return self.plan.sql("__raw") if self.plan is not None else self.cf.fast_raw_sql("__batch")

    @property
    def numbered(self) -> rows.Numbered | None:
        """The keyed texts the C split's reader numbered (registered as __raw_keys)."""
        if self.plan is None or not self.plan.keyed:
            return None
        p = self.plan
        cut = any(c is not None for c in p.cut)
        return rows.Numbered("__raw_keys", cut, p.row_query, request=p.request_of is not None, parts=p.puppet)

    @functools.cached_property
    def fast_insert(self) -> str:
        """The INSERT of what `fast` reads: the same for every batch, made once (6 ms)."""
        assert self.fast is not None
        p = self.plan
        checked, numbers = (p.checked, p.numbers) if p is not None else (frozenset(), frozenset())
        return rows.insert_sql(
            self.cf,
            self.fast,
            self.tz,
            self.classification,
            self.keep,
            checked,
            numbers,
            self.numbered,
            rebuild=self.rebuild,
            entries=self.entries,
        )

    @functools.cached_property
    def fast_insert_direct(self) -> str:
        """fast_insert with the batch's keys classified in it, past the class cache (see
        _classify_direct)."""
        return self._past_the_cache(direct=True)

    @functools.cached_property
    def fast_insert_inline(self) -> str:
        """fast_insert with every row classified where it is (see _classify_inline)."""
        return self._past_the_cache(inline=True)

    @functools.cached_property
    def fast_insert_inline_made(self) -> str:
        """fast_insert_inline of rows that carry their route template and indirector (the
        reader made them: native.Plan.row_templates)."""
        return self._past_the_cache(inline=True, templates=True)

    def _past_the_cache(self, inline: bool = False, direct: bool = False, templates: bool = False) -> str:
        assert self.fast is not None and self.plan is not None and self.numbered is not None
        p = self.plan
        numbered = dataclasses.replace(self.numbered, templates=templates)
        return rows.insert_sql(
            self.cf, self.fast, self.tz, self.classification, self.keep, p.checked, p.numbers,
            numbered, rebuild=self.rebuild, inline=inline, direct=direct, entries=self.entries,
        )  # fmt: skip

    @functools.cached_property
    def fast_prepare(self) -> list[tuple[str, bool]]:
        """The statements run before fast_insert: the classification of new keys, when it
        is cached across batches."""
        assert self.fast is not None
        return rows.prepare_sql(self.cf, self.fast, self.tz, self.classification, self.numbered)

    @property
    def params(self) -> dict:
        return {
            "ingest_id": self.ingest_id,
            "source": self.label,
            "dialect": self.cf.dialect.name,
            "format": self.cf.label,
        }


class _IngestRow:
    """The `ingests` row of one source's ingest, kept true for what is committed: the first
    batch's transaction inserts it (before its rows: the `requests` view reads source,
    dialect and format from it), every batch's transaction adds its counts."""

    def __init__(self, key: list, t0: float):
        self.key = key  # ingest_id, source, dialect, format, first_line, started_at
        self.t0 = t0
        self.inserted = False

    def begin(self, con) -> None:  # noqa: ANN001
        if not self.inserted:
            con.execute(
                "INSERT INTO ingests (ingest_id, source, dialect, format, first_line, started_at,"
                " lines, rows, rejects, events, bytes, seconds) VALUES (?, ?, ?, ?, ?, ?, 0, 0, 0, 0, 0, 0)",
                self.key,
            )

    def count(self, con, lines: int, n_rows: int, rejects: int, n_events: int, nbytes: int) -> None:  # noqa: ANN001
        con.execute(
            "UPDATE ingests SET lines = lines + ?, rows = rows + ?, rejects = rejects + ?,"
            " events = events + ?, bytes = bytes + ?, seconds = ? WHERE ingest_id = ?",
            [lines, n_rows, rejects, n_events, nbytes, time.perf_counter() - self.t0, self.key[0]],
        )
        self.inserted = True  # by the batch's transaction: the next batch only counts


# How DuckDB says the disk is full: writing the file or WAL, or its temporary files.
_DISK_FULL = ("No space left on device", "failed to offload data block")


def _disk_full(st: Store, exc: BaseException) -> StoreError | None:
    if not any(m in str(exc) for m in _DISK_FULL):
        return None
    return StoreError(
        f"the disk is full ({st.path}): the store keeps every batch committed before; free space "
        "and run the ingest again to read on from there"
    )


def _choose_format(
    st: Store, fmt: str, dialect: str | None, batch: Batch, keep_going: bool, kept: _Kept | None
) -> tuple[CompiledFormat, str | None]:
    known = kept.position.format if kept is not None and kept.position.known else None
    detected = None
    if fmt == "auto" and known is not None and dialect in (None, known[0]):
        cf = compile_format(get_dialect(known[0]), known[1], known[2])  # as it was read before
    elif fmt == "auto":
        cf, detected = detect.detect_format(st, batch.table, dialect)
    else:
        cf = compile_format(*resolve_format(fmt, dialect))
        if not keep_going:
            detect.check_format(st, batch.table, cf)
    if kept is not None:
        kept.position.format = (cf.dialect.name, cf.fmt, cf.label)
    return cf, detected


def _resolve_profile(profile: str, st: Store, batch: Batch, cf: CompiledFormat, kept: _Kept | None) -> str:
    if profile == "auto" and kept is not None and kept.position.known and kept.position.profile:
        profile = kept.position.profile  # as it was read before, not guessed from what was appended
    elif profile == "auto":
        profile = detect_profile(detect.sample_paths(st, batch.table, cf))
    if kept is not None:
        kept.position.profile = profile
    return profile


def _classification(
    profile: str, rules: object | None, trusted: Sequence[str], cache: str, native: bool = False
) -> rows.Classifier:
    """The profile bound to its rules; its answers cached in the table `cache` across the
    batches of a source, unless requesters are classified too (trusted proxies, groups:
    then each batch is classified whole). `native`: the cache's route templates by the C
    function (register_route_template)."""
    if profile == "none":
        return None
    bound = load_rules(rules) if rules is not None else Rules()  # type: ignore[arg-type]
    keys = tuple(key_columns(profile, bound))
    unfilled = unfilled_columns(profile, bound, trusted)
    if trusted or bound.groups:
        return rows.Classification(
            lambda rel, keyed=None: classified_sql(rel, profile, bound, trusted, keyed),
            keys,
            unfilled=unfilled,
        )
    cached = ClassCache(cache, profile, bound, native)
    return rows.Classification(
        lambda rel, keyed=None: classified_sql(
            rel, profile, bound, trusted, keyed, cached if keyed else None
        ),
        keys,
        cached.create_sql(),
        cached.fill_sql,
        lambda rel, keyed, parts: classified_sql(
            rel, profile, bound, trusted, keyed, cached, direct=True, parts=parts
        ),
        lambda rel, made=None: classified_inline_sql(rel, cached, made),
        templates=native and profile == "generic",
        parts=profile == "puppet",
        unfilled=unfilled,
    )


def _has_local_time(cf: CompiledFormat) -> bool:
    for f in cf.time_fields:
        if f.spec.convert == "strftime" and "%z" not in (f.spec.arg or "") and "%Z" not in (f.spec.arg or ""):
            return True
    return False


def _classes_for(
    st: Store,
    shared: dict[str, _Classes],
    profile: str,
    rules: object | None,
    trusted: Sequence[str],
    ingest_id: int,
) -> _Classes:
    """The classification of `profile` in this ingest: made (with its cache) by the first
    source read with it."""
    if profile not in shared:
        table = f"__classes_{ingest_id}"
        native = register_route_template(st.con)
        classes = shared[profile] = _Classes(_classification(profile, rules, trusted, table, native), table)
        if classes.classification is not None and classes.classification.setup is not None:
            st.con.execute(classes.classification.setup)
    return shared[profile]


def _empty_cache_when_useless(con: duckdb.DuckDBPyConnection, c: _Classes) -> None:
    """The classification's cache made again, empty, before a batch: when it holds more than
    CLASS_CACHE_KEYS keys, or when the last batch brought new keys for more than half its
    lines. Such a log's paths do not repeat (nginx thumbnails of hashed names): the cache
    would hold a row per line, in memory (a temporary table), and every batch's fill joins
    against it; a batch of 490,000 new keys joined to the 200,000 kept ran out of the
    batches' memory limit (256 MB then) and doubled it. Emptied, it fills again with the
    keys of the batches that follow, which a log that repeats its paths meets again.

    Its size is counted from what its fills inserted: a count(*) of the table took 40-50 ms
    and 8,000 page faults a batch once it held a few hundred thousand keys."""
    if c.classification is None or c.classification.setup is None:
        return
    if c.size > CLASS_CACHE_KEYS or c.size - c.held > c.last_lines // 2:
        con.execute(c.classification.setup)
        c.size = 0
    c.held = c.size


T = TypeVar("T")


def _within_memory(st: Store, run: Callable[[], T]) -> T:
    """run(); when it runs out of the ingest's memory limit, run again with twice the limit
    (up to INGEST_MEMORY_MAX_MB), which then holds for the rest of the ingest. `run` leaves
    nothing behind when it fails: a batch is rolled back whole, and folding the routes
    starts over from what is stored."""
    while True:
        try:
            return run()
        except duckdb.OutOfMemoryException:
            limit = _limit_mb(st.con) * 2
            if st.path == ":memory:" or limit > INGEST_MEMORY_MAX_MB:
                raise
            st.con.execute(f"SET memory_limit = '{limit}MB'")


def _keep_block_memory(con: duckdb.DuckDBPyConnection) -> None:
    """DuckDB keeps the memory of its blocks, up to the ingest's memory limit, instead of
    handing it back to the kernel as each block is evicted and taking fresh pages for the
    next (DuckDB's block_allocator_memory, 0 by default). On the 1 GB realistic log that
    was 1.05 M page faults, 2.8 s of system time; kept, 0.8 M, 2.1 s, and the ingest 4%
    faster, for 15-40 MB more peak RSS. Kept for the life of the store's connection: the
    setting cannot be lowered (a store already holding more is left as it is)."""
    with contextlib.suppress(duckdb.InvalidInputException):
        con.execute(f"SET block_allocator_memory = '{BATCH_MEMORY_MB}MB'")


def _at_least(con: duckdb.DuckDBPyConnection, mb: int) -> None:
    """DuckDB's memory limit raised to `mb` (in MB), unless _within_memory raised it higher."""
    if _limit_mb(con) < mb:
        con.execute(f"SET memory_limit = '{mb}MB'")


def _limit_mb(con: duckdb.DuckDBPyConnection) -> int:
    """DuckDB's memory limit in MB, as it was set (DuckDB shows it in MiB)."""
    current = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    return round(_mib(current) * 1.048576)


def _mib(setting: str) -> int:
    """DuckDB's memory_limit setting ('244.1 MiB', '1.9 GiB') in MiB."""
    number, unit = setting.split()
    return int(float(number) * {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024, "TiB": 1 << 20}.get(unit, 1))


def _ingest_batch(st: Store, r: _Reading, batch: Batch, out: SourceSummary) -> Counter:
    """One batch in one transaction, rolled back whole when it fails; its rejects by reason."""
    con = st.con
    said: Counter = Counter()
    cf, row = r.cf, r.row
    assert row is not None
    table = pa.Table.from_batches(batch.table.to_batches(max_chunksize=scan_rows(batch.lines)))
    con.register("__batch", table)
    params = r.params
    if r.plan is not None:
        read = batch.parsed
        if not isinstance(read, native.Read):  # the reader thread did not prepare it
            read = native.read_batch(con, cf, r.plan, batch, templates=templates_of_paths)
        con.register("__raw", read.raw)
        if read.keys is not None:
            con.register("__raw_keys", read.keys)
    fast = r.fast
    direct = r.plan is not None and _classify_direct(r, read)
    con.execute("BEGIN")
    try:
        row.begin(con)
        n_fast = added = 0
        if fast is not None and direct:
            insert = r.fast_insert_direct
            if _classify_inline(read):
                made = native.ROW_TEMPLATE in read.raw.column_names
                insert = r.fast_insert_inline_made if made else r.fast_insert_inline
            n_fast = con.execute(insert, params).fetchall()[0][0]
        elif fast is not None:
            for sql, bound in r.fast_prepare:  # the class cache's fill is the last
                added = con.execute(sql, params if bound else None).fetchall()[0][0]
            n_fast = con.execute(r.fast_insert, params).fetchall()[0][0]
        n_slow = n_rej = n_events = 0
        if n_fast < batch.lines:
            n_slow, n_events, reasons = _exact_path(con, r, fast is not None, n_fast, batch)
            n_rej = sum(reasons.values())
            said.update(reasons)
        if n_fast + n_slow + n_rej + n_events != batch.lines:
            raise RuntimeError(
                f"{r.label}: {batch.lines} lines gave {n_fast + n_slow} rows, {n_rej} rejects"
                f" and {n_events} events"
            )
        if batch.cut_line is not None:
            _said_cut(con, r.label, batch.cut_line, said)
        row.count(con, batch.lines, n_fast + n_slow, n_rej, n_events, batch.nbytes)
        if r.kept is not None:
            r.kept.save(con, batch, r.label, r.ingest_id)
        con.execute("COMMIT")
        if r.classes is not None:
            r.classes.size += added
    except BaseException:
        roll_back(con)  # every batch committed before stays
        raise
    finally:
        con.unregister("__batch")
        con.unregister("__raw")
        con.unregister("__raw_keys")
    out.lines += batch.lines
    out.rows += n_fast + n_slow
    out.rejects += n_rej
    out.events += n_events
    out.nbytes += batch.nbytes
    out.invalid_utf8 += batch.invalid_utf8
    return said


def _classify_direct(r: _Reading, read: native.Read) -> bool:
    """Whether the batch's keys are classified in its INSERT, past the class cache: when the
    C split's reader numbered them. Filling the cache with a batch's new keys, then joining
    every key back to it on their texts, cost more than classifying all of the batch's keys
    again, on every log measured: the fills and INSERTs of 1 GB took 7.58 s against 7.05
    on the realistic log (keys 19% of the lines), 7.29 against 7.05 on the generator's
    (2.5%); 7.6 against 5.95 s on 300 MB of hashed file names (every key new). Keys that
    are not numbered come from a DISTINCT over the batch in SQL, and the cache's join is
    on their texts either way: they keep it."""
    c = r.classification
    return c is not None and c.direct is not None and read.keys is not None


def _classify_inline(read: native.Read) -> bool:
    """Whether a batch classified direct (_classify_direct) is better classified row by
    row, without its keys: when they are more than native.INLINE_KEY_SHARE of its lines. The
    SELECT of a batch took (keyed, inline): 0.17 and 0.26 s with keys 5% of its lines
    (the HAProxy shape), 0.18 and 0.22 s at 17% (Apache combined), 0.39 and 0.28 s at
    100% (hashed file names); in between the lines cross near half."""
    assert read.keys is not None
    return native.inline(read.keys.num_rows, read.raw.num_rows)


CUT_GZ = "the .gz is cut in this line (still being compressed, or copied short)"


def _said_cut(con: duckdb.DuckDBPyConnection, label: str, line_no: int, reasons: Counter) -> None:
    """The last line of a cut .gz, when a reject, says why (when it still reads as a
    request, it is one)."""
    where = "WHERE source = ? AND line_no = ?"
    was = con.execute(f"SELECT reason FROM rejects {where}", [label, line_no]).fetchall()
    if was:
        con.execute(f"UPDATE rejects SET reason = ? {where}", [CUT_GZ, label, line_no])
        reasons[was[-1][0]] -= 1
        reasons[CUT_GZ] += 1
        if not reasons[was[-1][0]]:
            del reasons[was[-1][0]]


def _left_over(con, params: dict, n_fast: int, batch: Batch) -> str:  # noqa: ANN001
    """The lines of the batch the split path did not insert, as a relation: the batch's
    lines without a row of this ingest.

    One bit per line of the batch says which have a row (filter pushdown on for that one
    statement: the table's zone maps skip the rows of other batches). The usual few lines
    left over (HAProxy's event lines) are then cut out of the batch's Arrow table: 5 ms a
    batch, where an anti-join of the batch against the rows just inserted took 20 ms."""
    if n_fast == 0:
        return "__batch"
    lo, hi = batch.first_line, batch.first_line + batch.lines - 1
    with filter_pushdown(con):
        bits = con.execute(
            f"SELECT bitstring_agg(line_no, $lo, $hi)::VARCHAR FROM {schema.REQUESTS_TABLE} "
            "WHERE ingest_id = $ingest_id AND line_no BETWEEN $lo AND $hi",
            {"ingest_id": params["ingest_id"], "lo": lo, "hi": hi},
        ).fetchall()[0][0]
    bits = bits or "0" * batch.lines
    n_left = bits.count("0")
    if n_fast + n_left != batch.lines:
        raise RuntimeError(f"{params['source']}: lines {lo}-{hi}: {n_fast} rows, {n_left} left")
    # Runs of consecutive lines left over, one slice of the batch each. Past a thousand, the
    # slicing costs more in Python than a pass over the batch does in DuckDB.
    runs: list[tuple[int, int]] = []
    start = bits.find("0")
    while start != -1 and len(runs) <= 1000:
        end = bits.find("1", start)
        end = len(bits) if end == -1 else end
        runs.append((start, end - start))
        start = bits.find("0", end)
    if start == -1:
        # One chunk: DuckDB scans an Arrow table chunk by chunk, slowly when they are tiny.
        pieces = [batch.table.slice(i, n) for i, n in runs] or [batch.table.slice(0, 0)]
        left = pa.concat_tables(pieces).combine_chunks()
        con.register("__left_lines", left)
        return "__left_lines"
    con.execute(
        "CREATE OR REPLACE TEMP TABLE __left_lines_t AS SELECT line_no, line FROM __batch "
        "WHERE get_bit($bits::BIT, CAST(line_no - $lo AS INTEGER)) = 0",
        {"bits": bits, "lo": lo},
    )
    return "__left_lines_t"


def _exact_path(
    con: duckdb.DuckDBPyConnection, r: _Reading, split: bool, n_fast: int, batch: Batch
) -> tuple[int, int, Counter]:
    """Lines the split path did not take: read them with the format's regex, insert what
    reads, keep the dialect's non-request messages as events, reject the rest with a
    reason. Returns (rows, events, rejects by reason)."""
    cf, tz, params, label = r.cf, r.tz, r.params, r.label
    left = _left_over(con, params, n_fast, batch) if split else "__batch"
    # Planning the typed projection of the regex's fields takes 15 ms and inserting from it
    # 8 ms, whatever the number of lines: skipped when no line reads at all (a batch whose
    # only left-overs are HAProxy's event lines).
    reads = con.execute(f"SELECT 1 FROM {left} WHERE {cf.match_sql()} LIMIT 1").fetchall()
    n_rows = 0
    if reads:
        typed = rows.typed_sql(cf, cf.exact_raw_sql(left), tz, with_reason=True, entries=r.entries)
        con.execute(f"CREATE OR REPLACE TEMP TABLE __left AS {typed}")
        inserted = con.execute(
            rows.insert_from_typed_sql(cf, "__left", r.classification, r.keep, r.rebuild, r.entries), params
        )
        n_rows = inserted.fetchall()[0][0]
        not_rows = "SELECT line_no, line, __reason FROM __left WHERE NOT __ok"
    else:
        not_rows = f"SELECT line_no, line, {rows.reason_sql('false')} AS __reason FROM {left}"
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE __not_rows AS SELECT *, {events.matches_sql(cf)} AS __event "
        f"FROM ({not_rows})"
    )
    n_rows += _cut_short(con, r)
    if r.keep is None:
        n_events = events.insert_events(
            con, cf, "(SELECT * FROM __not_rows WHERE __event)", params, tz, others="__not_rows"
        )
    else:  # a store made for one answer keeps no events (see ingest's `columns`): counted
        n_events = con.execute("SELECT count(*) FROM __not_rows WHERE __event").fetchall()[0][0]
    con.execute(
        "INSERT INTO rejects SELECT $source, line_no, line, __reason FROM __not_rows WHERE NOT __event",
        {"source": label},
    )
    reasons = Counter(
        dict(con.execute("SELECT __reason, count(*) FROM __not_rows WHERE NOT __event GROUP BY 1").fetchall())
    )
    for table in ("__not_rows", "__left", "__left_lines_t", "__cut"):
        con.execute(f"DROP TABLE IF EXISTS {table}")
    con.unregister("__left_lines")
    return n_rows, n_events, reasons


def read_not_rows(
    con: duckdb.DuckDBPyConnection, cf: CompiledFormat, tz: str, classification: rows.Classifier, params: dict
) -> tuple[int, int]:
    """What _exact_path makes of the lines of the temp table __not_rows (line_no, line,
    __reason, __event) the format's regex did not read: rows of lines a syslog limit cut
    (into requests_data, and out of __not_rows), the dialect's events (into `events`), the
    reasons of the cut lines that stay rejects. Returns (rows, events). For an engine that
    reads the other lines itself (logan.engines.spark_ingest)."""
    r = _Reading(cf, None, tz, classification, None, params["source"], params["ingest_id"], rebuild=False)
    n_rows = _cut_short(con, r)
    n_events = events.insert_events(con, cf, "(SELECT * FROM __not_rows WHERE __event)", params, tz)
    return n_rows, n_events


def _cut_short(con: duckdb.DuckDBPyConnection, r: _Reading) -> int:
    """Rows from the lines of __not_rows that a line-length limit cut inside their last field
    (CompiledFormat.cut_short): the fields before the cut (timers, status, backend) are
    kept, the last holds what was written of it. Taken out of __not_rows; returns how many."""
    cut = r.cf.cut_short()
    if cut is None:
        return 0
    unclosed = "NOT __event AND __reason = 'does not match format' AND NOT ends_with(line, '\"')"
    # what else a limit cut is said to be, with the length it was cut at
    con.execute(
        f"UPDATE __not_rows SET __reason = 'cut at ' || strlen(line) || ' bytes' "
        f"WHERE {unclosed} AND strlen(line) >= 1000 AND NOT {cut.match_sql()}"
    )
    cut_lines = f"(SELECT line_no, line FROM __not_rows WHERE {unclosed} AND {cut.match_sql()})"
    if not con.execute(f"SELECT 1 FROM {cut_lines} LIMIT 1").fetchall():
        return 0
    typed = rows.typed_sql(cut, cut.exact_raw_sql(cut_lines), r.tz, with_reason=True, entries=r.entries)
    con.execute(f"CREATE OR REPLACE TEMP TABLE __cut AS {typed}")
    n = con.execute(
        rows.insert_from_typed_sql(cut, "__cut", r.classification, r.keep, r.rebuild, r.entries), r.params
    ).fetchall()[0][0]
    con.execute("DELETE FROM __not_rows WHERE line_no IN (SELECT line_no FROM __cut WHERE __ok)")
    return n


def _finish_summary(st: Store, summary: IngestSummary) -> None:
    ids = [s.ingest_id for s in summary.sources if s.ingest_id is not None]
    if not ids or "ts_start" not in stored_columns(st.con):
        return
    lo, hi = st.con.execute(
        f"SELECT min(ts_start), max(ts_start) FROM {schema.REQUESTS_TABLE} "
        "WHERE ingest_id IN (SELECT unnest(?))",
        [ids],
    ).fetchall()[0]
    summary.ts_min, summary.ts_max = lo, hi
