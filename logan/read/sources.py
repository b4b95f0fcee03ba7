"""Inputs: files, globs, .gz and stdin, read as batches of lines in bounded memory.

A batch is an Arrow table (line_no, line) over one block of the input. The lines are
string views into the block itself, so a batch costs the block plus 16 bytes a line and
no Python object per line. Line terminators (\\n, \\r\\n) are not part of a line; a last
line without a terminator is still a line.
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import io
import os
import stat
import sys
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from queue import Empty, Queue

import numpy as np
import pyarrow as pa

from logan.errors import LoganError

try:  # the C split's line cutter (logan/read/_split.c), when it was built
    from logan.read import _split
except ImportError:
    _split = None

DEFAULT_BLOCK = 64 << 20
GZIP_MAGIC = b"\x1f\x8b"
GZIP_HEAD = 4096  # bytes looked at to tell a .gz from a text that starts with its magic


def is_gzip(head: bytes) -> bool:
    """Whether content starting with `head` is gzip: the magic, and a start that inflates.
    A log line may begin with the two magic bytes (hostile input does); read as gzip, the
    whole file would be lost."""
    if head[:2] != GZIP_MAGIC or head[2:3] not in (b"\x08", b""):  # the method: deflate
        return False
    try:
        zlib.decompressobj(wbits=31).decompress(head)
    except zlib.error:
        return False
    return True


# Arrow's string_view layout: length, then 12 inline bytes, or a 4-byte prefix, the index
# of the data buffer and the offset in it. DuckDB's own strings have the same layout.
_VIEW = np.dtype([("len", "<i4"), ("prefix", "V4"), ("buf", "<i4"), ("off", "<i4")])


@dataclass
class Source:
    label: str  # what `requests.source` says
    path: str | None  # None for stdin

    def open(self) -> io.BufferedIOBase:
        if self.path is None:
            raw: io.BufferedIOBase = sys.stdin.buffer
        else:
            raw = open(self.path, "rb")  # noqa: SIM115 - closed by the reader
        head = raw.peek(GZIP_HEAD)[:GZIP_HEAD] if hasattr(raw, "peek") else b""
        if is_gzip(head):
            return io.BufferedReader(Gunzip(raw), 1 << 16)  # type: ignore[return-value]
        return raw

    @property
    def regular(self) -> bool:
        """A file that can be read again (not stdin, a FIFO or `<(zcat a.gz)`): only such
        a file has a place in a store's registry of files."""
        return self.path is not None and stat.S_ISREG(os.stat(self.path).st_mode)

    def compressed(self) -> bool:
        with open(self.path, "rb") as fh:  # type: ignore[arg-type]
            return is_gzip(fh.read(GZIP_HEAD))

    def prefix(self, n: int) -> bytes:
        """The first `n` bytes of the content (decompressed), fewer for a shorter file (or
        a .gz cut short: what it holds)."""
        with self.open() as fh:
            return fh.read(n)

    def size(self) -> int | None:
        if not self.regular:
            return None
        return os.path.getsize(self.path)  # type: ignore[arg-type]


class Gunzip(io.RawIOBase):
    """The content of a .gz, read up to where it is cut (a rotated file still being
    compressed, a copy cut short): what decompresses is read, then it ends, and `cut` says
    it did not end whole. Members one after the other (`cat a.gz b.gz`) read as one."""

    def __init__(self, raw: io.BufferedIOBase):
        self.raw, self.unzip = raw, zlib.decompressobj(wbits=31)
        self.pending, self.at, self.cut, self.done = b"", 0, False, False

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # noqa: ANN001
        while self.at == len(self.pending) and not self.done:
            self.pending, self.at = b"", 0
            self._decompress_more()
        n = min(len(b), len(self.pending) - self.at)
        b[:n] = memoryview(self.pending)[self.at : self.at + n]
        self.at += n
        return n

    def _decompress_more(self) -> None:
        if self.unzip.eof:  # a member ended: another may follow
            data = self.unzip.unused_data or self.raw.read(1 << 16)
            self.unzip = zlib.decompressobj(wbits=31)
            if not data:
                self.done = True
                return
        else:
            data = self.raw.read(1 << 16)
            if not data:  # the file ends inside a member
                self.pending, self.cut, self.done = self.unzip.flush(), True, True
                return
        try:
            self.pending = self.unzip.decompress(data)
        except zlib.error:  # not gzip from here on (garbage, a cut header)
            self.cut = self.done = True

    def close(self) -> None:
        self.raw.close()
        super().close()


@dataclass(frozen=True)
class Start:
    """Where a read begins: `offset` bytes into the content, where a line starts, with
    `line` lines before it; lines up to `skip` are read but not handed out (a store holds
    them already). `hold_partial`: a last line without its newline is left for later (its
    writer may not be done)."""

    offset: int = 0
    line: int = 0
    skip: int = 0
    hold_partial: bool = False


def expand(paths: list[str]) -> list[Source]:
    """Paths as the user gave them: '-' is stdin, globs are expanded (shells that pass
    them through unexpanded, quoted arguments), a directory is its files, a missing file
    is an error up front."""
    out: list[Source] = []
    for p in paths:
        if p == "-":
            out.append(Source("<stdin>", None))
            continue
        matches = sorted(glob.glob(p)) if any(c in p for c in "*?[") else [p]
        if not matches:
            raise LoganError(f"no file matches {p!r}")
        matches = [f for m in matches for f in _files_of(m)]
        for m in matches:
            if not Path(m).exists():
                raise LoganError(f"no such file: {m}")
            if not (Path(m).is_file() or stat.S_ISFIFO(os.stat(m).st_mode)):
                raise LoganError(f"not a readable file: {m}")  # a socket, a device
            if not os.access(m, os.R_OK):
                raise LoganError(f"cannot read {m}: permission denied")
            out.append(Source(m, m))
    if not out:
        raise LoganError("no input: give log files, globs, or - for stdin")
    return out


def _files_of(path: str) -> list[str]:
    """A directory stands for the visible files in it (/var/log/httpd/), not its
    subdirectories; anything else stands for itself."""
    p = Path(path)
    if not p.is_dir():
        return [path]
    return [str(f) for f in sorted(p.iterdir()) if f.is_file() and not f.name.startswith(".")]


@dataclass
class Batch:
    table: pa.Table  # line_no BIGINT, line string_view
    first_line: int
    lines: int
    nbytes: int
    invalid_utf8: int  # lines whose bytes were not UTF-8 (kept, bad bytes written \xhh)
    parsed: object | None = None  # what Prepare.fn made of it in the reader thread
    # where a read that resumes after this batch starts: (bytes into the content, lines
    # before them), at or before the batch's last line (see Start)
    resume: tuple[int, int] = (0, 0)
    # the last batch of a cut .gz: its last line, incomplete (when not left for later)
    cut_line: int | None = None
    last: bool = False  # the source's last: no batch after it to hand lines on to


@dataclass
class Prepare:
    """Work for the reader thread on each batch it reads, beside the consumer's work on the
    batch before (logan.read.native's split). The format is known only from the first batch:
    the reader hands that one over, then waits until the consumer calls `start` (with the
    work, or None for none). A batch the reader did not prepare comes with `parsed` None.

    With `whole_rows`, `fn` makes batches of whole row groups of rows rather than the
    reader of lines: what it returns says in `lines` how many of the batch's first lines it
    read, and the reader hands the others on to the next batch (see _cut_at_rows)."""

    fn: Callable[[Batch], object] | None = None
    started: threading.Event = field(default_factory=threading.Event)
    whole_rows: bool = False

    def start(self, fn: Callable[[Batch], object] | None, whole_rows: bool = False) -> None:
        self.fn = fn
        self.whole_rows = whole_rows and fn is not None
        self.started.set()

    def cuts_rows(self, k: int) -> bool:
        """Whether the `k`th batch (from 0) is cut at its rows' row groups: the first is
        handed over whole, the format is read from it."""
        if k == 0:
            return False
        self.started.wait()
        return self.whole_rows


def _line_views(block: bytes | memoryview) -> np.ndarray:
    """The Arrow string views (_VIEW records, data buffer 0) of every line of `block`."""
    if _split is not None:  # in C: a fifth of the time of the numpy passes below
        return np.frombuffer(_split.line_views(block), _VIEW)
    a = np.frombuffer(block, np.uint8)
    ends = np.flatnonzero(a == 10)
    if len(a) and a[-1] != 10:  # last line without a terminator
        ends = np.append(ends, len(a))
    n = len(ends)
    starts = np.empty(n, np.int64)
    if n:
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
    stop = ends.copy()
    cr = (stop > starts) & (a[np.maximum(stop - 1, 0)] == 13) if n else np.zeros(0, bool)
    stop[cr] -= 1
    lens = stop - starts
    views = np.zeros(n, _VIEW)
    views["len"] = lens
    views["off"] = starts
    raw = views.view(np.uint8).reshape(n, 16)
    if n and len(a):
        last = len(a) - 1
        raw[:, 4:8] = a[np.minimum(starts[:, None] + np.arange(4), last)]
        short = np.flatnonzero(lens <= 12)
        if len(short):
            idx = np.minimum(starts[short][:, None] + np.arange(12), last)
            raw[short, 4:16] = a[idx] * (np.arange(12) < lens[short][:, None])
    return views


def int64_array(values: np.ndarray) -> pa.Array:
    """`values` as an Arrow int64 array over the same memory. (pa.array() of a numpy array
    imports pandas the first time: 0.2 s before the first batch.)"""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def int64_values(column: pa.ChunkedArray) -> np.ndarray:
    """A column of int64 without NULLs as numpy (to_numpy() imports pandas too)."""
    arr = column.combine_chunks()
    return np.frombuffer(arr.buffers()[1], np.int64, len(arr), arr.offset * 8)


# DuckDB's row group. A batch holds a multiple of it (but the last, and batches of small
# blocks): a file store's checkpoint merges the part-filled row group that would end each
# batch with its neighbours, rewriting them on one thread. HAProxy's 0.5 GB benchmark log
# (306 k lines a block: a half-filled group each) spent a second at close doing that.
ROW_GROUP = 122_880


def scan_rows(n: int) -> int:
    """The chunk size of an Arrow table of `n` rows handed to DuckDB, which scans one chunk
    per thread: half a row group, so that its two threads end a batch together. A batch of
    Apache's 390-byte "extended" lines is one row group (122,880 lines); in one chunk its
    INSERT ran on one thread (1.1 cores busy of 2), in two the first 150 MB of that log
    took 3.51 s instead of 3.84 s. A batch of three row groups (Apache's 220-byte combined
    lines) in chunks of a row group left the third to one thread, the other idle for
    0.15-0.2 s a batch; in halves the 1 GB log took 8.02 s instead of 8.55 (medians of
    four, alternating; each thread ends on a half-filled row group: 45 a GB instead of 37,
    a 3% larger store). Fewer rows stay one chunk: read in one order, a small log's
    standard deviations come out the same to the last digit every run."""
    return max(1, n) if n < ROW_GROUP else ROW_GROUP // 2


_INLINE = 12  # a view holds a string this short itself: no buffer index, no offset


def _joined(held: np.ndarray, held_bufs: list, views: np.ndarray, block: object) -> tuple[np.ndarray, list]:
    """Lines held back from earlier blocks, then the new block's."""
    if not len(held):
        return views, [block]
    views["buf"][views["len"] > _INLINE] = len(held_bufs)
    return np.concatenate([held, views]), [*held_bufs, block]


def _hold_back(
    views: np.ndarray, block: bytes | memoryview, before: int
) -> tuple[np.ndarray, np.ndarray, list]:
    """(lines to hand out now, in whole row groups; lines held back, with the buffer they
    point into). `views`: the `before` lines held from earlier blocks, then `block`'s.

    The lines held are the block's last ones (fewer than a row group, and a batch of a row
    group or more hands out every line held before), copied out of it: pointing into the
    block, they kept its buffer through the next batch, a third block in memory beside the
    next batch's and the one being read (the 1 GB realistic log: 752 and 767 MB of peak RSS
    against 819 and 788)."""
    keep = len(views) - len(views) % ROW_GROUP
    if keep in (0, len(views)):
        return views, np.zeros(0, _VIEW), []
    tail = bytes(block[_line_start(block, views[before:], keep - before) :])
    return views[:keep], _line_views(tail), [tail]


def _line_start(block: bytes | memoryview, views: np.ndarray, k: int) -> int:
    """Where line `k` of `block` starts (`views`: its lines'): the offset of the first line
    from k on that is not inline, then back over the newlines of those before it."""
    text = block.obj if isinstance(block, memoryview) else block  # a prefix of it: same offsets
    long = np.flatnonzero(views["len"][k:] > _INLINE)
    j = k + int(long[0]) if len(long) else len(views)
    pos = int(views["off"][j]) if len(long) else len(block)  # the block ends with a newline
    for _ in range(j - k):
        pos = text.rfind(b"\n", 0, pos - 1) + 1
    return pos


def _to_utf8(block: memoryview, ascii: bool) -> tuple[bytes | memoryview, int]:
    """The block as valid UTF-8: bytes that are not are written \\xhh, the way Apache and
    nginx escape them, so nothing is dropped and no ingest aborts. Returns the count of
    lines that needed it. `ascii`: the caller knows it is all ASCII (most logs; checking
    that costs a twentieth of decoding)."""
    if ascii:
        return block, 0
    raw = bytes(block)
    try:
        raw.decode("utf-8")
        return raw, 0
    except UnicodeDecodeError:
        pass
    bad = 0
    out = []
    for line in raw.split(b"\n"):
        try:
            line.decode("utf-8")
            out.append(line)
        except UnicodeDecodeError:
            bad += 1
            out.append(line.decode("utf-8", "backslashreplace").encode("utf-8"))
    return b"\n".join(out), bad


def read_batches(
    source: Source, block_size: int = DEFAULT_BLOCK, start: Start = Start(), prepare: Prepare | None = None
) -> Iterator[Batch]:
    """Batches of a source's lines, numbered from 1, read in a background thread so that
    reading and splitting overlap with parsing in DuckDB."""
    q: Queue = Queue(maxsize=1)
    stop = threading.Event()

    def produce() -> None:
        try:
            with source.open() as fh:
                for item in _blocks(fh, block_size, start, prepare):
                    q.put(item)
                    # The next block is read once this one is taken: a batch in the queue
                    # and one being read would hold a third block (and its fields) in memory.
                    q.join()
                    if stop.is_set():
                        return
        except BaseException as exc:  # handed to the consumer, which raises it
            q.put(exc)
            return
        q.put(None)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            q.task_done()
            if item is None:
                break
            if isinstance(item, BaseException):
                if isinstance(item, OSError | EOFError | gzip.BadGzipFile):
                    raise LoganError(f"cannot read {source.label}: {item}") from item
                raise item
            yield item
    finally:
        # A consumer that stops early (an error in its batch) lets the reader finish what
        # it holds, so nothing of the source outlives the ingest.
        stop.set()
        if prepare is not None:
            prepare.started.set()
        while thread.is_alive():
            with contextlib.suppress(Empty):
                q.get(timeout=0.05)
                q.task_done()
        thread.join()


class BufferPool:
    """Big buffers, each handed out again once nothing refers to it any more (no Arrow
    array, view or batch): a new 64 MB buffer costs 16 k page faults and zeroing, some
    50 ms of kernel time, for every block of the input. The pool holds no more buffers
    than were in use at once: a free one that does not fit is let go."""

    def __init__(self) -> None:
        self._made: list[bytearray] = []
        self._lock = threading.Lock()

    def get(self, size: int, slack: float = 1.0) -> bytearray:
        """A buffer of `size` rounded up to a MiB, or up to `slack` times that, its
        contents undefined."""
        size = -(-size // _MIB) * _MIB
        with self._lock:
            # free: referred to by the list, the comprehension and getrefcount's argument
            free = [buf for buf in self._made if sys.getrefcount(buf) == 3]
            fit = next((buf for buf in free if size <= len(buf) <= size * slack), None)
            if fit is not None:
                return fit
            self._made = [buf for buf in self._made if all(buf is not f for f in free)]
            buf = bytearray(size)
            self._made.append(buf)
            return buf

    def release(self) -> None:
        """Let go of every buffer (each lives on while something still refers to it): once
        an ingest is done, 137 MiB of them stayed with a 300 MB log, through the answer that
        `logan stats LOG` computes next."""
        with self._lock:
            self._made = []


_MIB = 1 << 20


BUFFERS = BufferPool()


def _fill(fh: io.BufferedIOBase, rest: bytes, block_size: int) -> tuple[bytearray, int, bool]:
    """A buffer holding `rest` then up to `block_size` bytes read straight into it (no
    concatenation copy), zeros after them; returns it, how many bytes it holds and whether
    the input ended. Pipes and gzip may return less per call: read until full or at the
    end."""
    want = len(rest) + block_size
    buf = BUFFERS.get(want)
    buf[: len(rest)] = rest
    view = memoryview(buf)
    filled = len(rest)
    while filled < want:
        got = fh.readinto(view[filled:want])
        if not got:
            break
        filled += got
    view.release()
    np.frombuffer(buf, np.uint8)[filled:] = 0  # a reused buffer's old bytes are no input
    return buf, filled, filled < want


def _at_most_left(fh: io.BufferedIOBase, size: int) -> int:
    """`size`, or less when a plain file has fewer bytes left (one more, to see its end):
    the 10 MB a re-run reads went into a new 64 MB buffer, 30 ms of page faults and zeroing.
    A file that grows meanwhile is read on in the next block."""
    try:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):  # a pipe or terminal says 0 bytes
            return size
        left = st.st_size - fh.tell()
    except (AttributeError, OSError, ValueError):  # the content of a .gz
        return size
    return max(1, min(size, left + 1))


def _is_cut(fh: io.BufferedIOBase) -> bool:
    return isinstance(getattr(fh, "raw", None), Gunzip) and fh.raw.cut  # type: ignore[attr-defined]


def _skip(fh: io.BufferedIOBase, n: int) -> None:
    """Past the first `n` bytes of the content (a seek, or reading through a .gz)."""
    if n and fh.seekable():
        fh.seek(n)
        return
    while n > 0:
        got = fh.read(min(n, DEFAULT_BLOCK))
        if not got:
            return
        n -= len(got)


# The lines a block may hold before the next ones are read smaller. A batch's memory goes
# with its lines (their views, the C split's fields, the rows joined to their classes): 64 MB
# of nginx's short lines (490,000) took an ingest to 1.25 GB, 64 MB of Apache's long ones
# (270,000) to 0.85 GB; the same nginx log in blocks of about 300,000 lines took 0.83 GB,
# in the same time. Blocks of fewer lines cost more: per batch, the classes' cache is joined.
BLOCK_LINES = 300_000

# The row groups a block is read larger for (up to twice the block size asked), so that with
# the lines handed on from the block before it makes a batch of that many whole row groups:
# DuckDB inserts a batch of one row group on one thread. Apache's 390-byte "extended" lines,
# 171,000 a 64 MB block, made batches of one row group and of two in turn, which took 0.78
# and 0.83 s to insert (medians); in batches of two the 1 GB log took 11.6-13.9 s instead
# of 13.7-17.7 s.
BATCH_GROUPS = 2


def _next_size(size: int, lines: int, nbytes: int, held: int, most: int) -> int:
    """The size of the next block after one of `size` bytes gave `lines` lines in `nbytes`
    bytes and `held` lines were handed on to the next batch; at most `most` bytes."""
    if lines > BLOCK_LINES:
        return max(_MIB, size * BLOCK_LINES // lines)
    groups = BATCH_GROUPS * ROW_GROUP
    if lines > 0 and held + lines < groups:
        # a sixteenth of a row group more: a margin for lines that make no row (rejects,
        # HAProxy's events), which would leave the batch a row group short
        grown = nbytes * (groups + ROW_GROUP // 16 - held) // lines
        if grown <= most:
            return max(size, grown)
    return size


def _blocks(
    fh: io.BufferedIOBase, block_size: int, start: Start = Start(), prepare: Prepare | None = None
) -> Iterator[Batch]:
    """The batches of `fh`, each prepared by `prepare` but the first."""
    _skip(fh, start.offset)
    line_no, skip_lines = start.line, start.skip
    consumed = start.offset  # content bytes before `rest`
    rest = b""
    held, held_bufs = np.zeros(0, _VIEW), []
    eof = False
    size = block_size
    made = 0  # batches handed out
    while not eof:
        # Each block gets its own buffer: the batches handed out point into it (string
        # views), and several are in flight at once.
        buf, filled, eof = _fill(fh, rest, _at_most_left(fh, size))
        cut = filled if eof else buf.rfind(b"\n", 0, filled) + 1
        if eof and start.hold_partial and filled and buf[filled - 1] != 10:
            cut = buf.rfind(b"\n", 0, filled) + 1  # a last line its writer may finish later
        if cut == 0 and not eof:  # no line end yet: a line longer than the block
            rest = bytes(buf[:filled])
            continue
        # a read that resumes after this block's lines may start where the block starts
        resume = (consumed, line_no + len(held))
        consumed += cut
        rest = bytes(buf[cut:filled])
        block, bad = _to_utf8(memoryview(buf)[:cut], ascii=buf.isascii())
        read = _line_views(block)
        before = len(held)
        views, bufs = _joined(held, held_bufs, read, block)
        cuts = prepare is not None and prepare.cuts_rows(made)
        held, held_bufs = np.zeros(0, _VIEW), []
        if not eof and not cuts:
            views, held, held_bufs = _hold_back(views, block, before)
        n = len(views)
        first = line_no + 1
        line_no += n
        if eof:  # everything read: a resumed read starts past it
            resume = (consumed, line_no)
        if line_no <= skip_lines or (n == 0 and not cut):  # nothing to hand out yet
            size = _next_size(size, len(read), cut, len(held), 2 * block_size)
            continue
        buffers = [None, pa.py_buffer(views), *(pa.py_buffer(b) for b in bufs)]
        lines = pa.Array.from_buffers(pa.string_view(), n, buffers)
        table = pa.table({"line_no": int64_array(np.arange(first, first + n)), "line": lines})
        if first <= skip_lines:
            table = table.slice(skip_lines - first + 1)
        cut_line = line_no if eof and _is_cut(fh) and cut and buf[cut - 1] != 10 else None
        first = max(first, skip_lines + 1)
        batch = Batch(table, first, table.num_rows, cut, bad, resume=resume, cut_line=cut_line, last=eof)
        if prepare is not None and made and prepare.fn is not None:
            batch.parsed = prepare.fn(batch)
        if cuts:
            batch, back = _cut_at_rows(batch)
            if back:  # the lines after its last whole row group of rows lead the next block
                tail = bytes(block[_line_start(block, views[before:], n - back - before) :])
                held, held_bufs = _line_views(tail), [tail]
                line_no -= back
        size = _next_size(size, len(read), cut, len(held), 2 * block_size)
        made += 1
        yield batch


def _cut_at_rows(batch: Batch) -> tuple[Batch, int]:
    """`batch` cut where its prepared rows end (`parsed.lines`), and how many of its lines
    go on to the next batch. A batch whose rows fill whole row groups inserts in DuckDB on
    both threads; a part-filled group is written at the end on one. Lines that are no rows
    (HAProxy's own messages, rejects) leave one part-filled each batch when the lines are
    counted: a batch of 244,852 rows took 0.39 s to insert, one of 245,760 0.23 s.

    The lines handed on were before the block being read next, so each holds fewer rows
    than a row group, and the next batch's cut falls after them."""
    kept = getattr(batch.parsed, "lines", None)
    if kept is None or kept >= batch.lines:
        return batch, 0
    table = batch.table.slice(0, kept)
    cut = replace(batch, table=table, lines=kept)
    return cut, batch.lines - kept
