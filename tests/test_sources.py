"""Inputs: .gz, stdin, globs, block boundaries, bytes that are not UTF-8, and the batch
transaction. Expected values come from the generated lines themselves, not from logan."""

from __future__ import annotations

import gzip
import importlib
import io
import os
import subprocess
import sys
import threading
from datetime import datetime
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from logan.errors import LoganError
from logan.read import sources
from logan.read.ingest import ingest
from logan.store import open_store

# The module, not the function of the same name (logan has no __init__ to keep them apart).
INGEST_MODULE = importlib.import_module("logan.read.ingest")


def count_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def make_line(i: int, pad: int = 0, ua: str = "-") -> str:
    """Line i of a generated combined_D log: its values are functions of i."""
    path = f"/r{i}/" + "x" * pad
    return (
        f"192.0.2.{i % 250} - - [10/Oct/2000:13:{i // 60 % 60:02d}:{i % 60:02d} +0000] "
        f'"GET {path} HTTP/1.1" 200 {i * 3} {i * 1000 + 7} "-" "{ua}"'
    )


def make_log(n: int, long_every: int = 0, long_pad: int = 0) -> tuple[bytes, list[int]]:
    pads = [long_pad if long_every and i % long_every == 0 else i % 13 for i in range(1, n + 1)]
    text = "".join(make_line(i, pads[i - 1]) + "\n" for i in range(1, n + 1))
    return text.encode(), pads


def check_rows(req: pd.DataFrame, n: int, pads: list[int] | None = None) -> None:
    """Every generated line arrived exactly once, with its own number and values."""
    req = req.sort_values("line_no").reset_index(drop=True)
    assert list(req.line_no) == list(range(1, n + 1))
    assert list(req.bytes_sent) == [i * 3 for i in range(1, n + 1)]
    assert list(req.duration_us) == [i * 1000 + 7 for i in range(1, n + 1)]
    if pads is not None:
        assert list(req.path) == [f"/r{i}/" + "x" * pads[i - 1] for i in range(1, n + 1)]


def requests_of(summary) -> pd.DataFrame:  # noqa: ANN001
    return summary.store.sql("SELECT * FROM requests ORDER BY source, line_no")


# ---- gzip ------------------------------------------------------------------------------


def test_gz_input(tmp_path):
    data, pads = make_log(300)
    gz = tmp_path / "access.log.gz"
    gz.write_bytes(gzip.compress(data))
    s = ingest([gz], format="combined_D", profile="none")
    assert (s.lines, s.rows, s.rejects) == (300, 300, 0)
    req = requests_of(s)
    check_rows(req, 300, pads)
    assert set(req.source) == {str(gz)}
    assert req.duration_us.sum() == sum(i * 1000 + 7 for i in range(1, 301))
    # The closing summary's time range, computed from the generator's rule.
    stamps = [datetime(2000, 10, 10, 13, i // 60 % 60, i % 60) for i in range(1, 301)]
    assert (s.ts_min, s.ts_max) == (min(stamps), max(stamps))


def test_gz_without_gz_suffix_and_multi_member(tmp_path):
    # logrotate's delaycompress / cat a.gz b.gz: two gzip members, one stream; the magic
    # bytes decide, not the name.
    data, pads = make_log(50)
    cut = data.index(b"\n", len(data) // 2) + 1
    f = tmp_path / "access.log.1"
    f.write_bytes(gzip.compress(data[:cut]) + gzip.compress(data[cut:]))
    s = ingest([f], format="combined_D", profile="none", block_size=256)
    check_rows(requests_of(s), 50, pads)


def test_a_cut_gz_is_read_up_to_the_cut_and_the_other_files_after_it(tmp_path):
    data, _ = make_log(3000)
    packed = gzip.compress(data)
    cut = tmp_path / "a.log.gz"
    cut.write_bytes(packed[: len(packed) // 2])  # a rotated file still being compressed
    whole = tmp_path / "b.log"
    whole.write_bytes(make_log(10)[0])
    # what decompresses, by gzip's own tool: it prints up to the cut, then complains
    zcat = subprocess.run(["gzip", "-dc", str(cut)], capture_output=True)
    assert zcat.returncode != 0 and zcat.stdout and not zcat.stdout.endswith(b"\n")
    complete = zcat.stdout.count(b"\n")
    s = ingest([cut, whole], format="combined_D", profile="none")
    req = s.store.sql("SELECT source, line_no FROM requests")
    assert (req.source == str(cut)).sum() == complete  # every whole line of the cut file
    assert (req.source == str(whole)).sum() == 10  # and the file after it
    rej = s.store.sql("SELECT source, line_no, raw, reason FROM rejects")
    assert rej.values.tolist() == [
        [str(cut), complete + 1, zcat.stdout.rsplit(b"\n", 1)[1].decode(), INGEST_MODULE.CUT_GZ]
    ]


def test_a_gz_cut_in_its_header_is_an_empty_input(tmp_path):
    f = tmp_path / "bad.log.gz"
    f.write_bytes(gzip.compress(make_log(100)[0])[:12])  # a header, nothing after it
    s = ingest([f], format="combined_D", profile="none")
    assert (s.lines, s.rows, s.rejects) == (0, 0, 0)


def test_gz_members_one_after_the_other_read_as_one_file(tmp_path):
    data, pads = make_log(500)
    f = tmp_path / "cat.log.gz"
    half = data.index(b"\n", len(data) // 2) + 1
    f.write_bytes(gzip.compress(data[:half]) + gzip.compress(data[half:]))  # cat a.gz b.gz
    s = ingest([f], format="combined_D", profile="none")
    check_rows(s.store.sql("SELECT * FROM requests"), 500, pads)


# ---- stdin -----------------------------------------------------------------------------


def test_stdin_via_cli(tmp_path):
    data, pads = make_log(120)
    db = tmp_path / "s.duckdb"
    r = subprocess.run(
        ["logan", "ingest", "-", "--db", str(db), "--format", "combined_D", "--profile", "none"],
        input=data,
        capture_output=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr.decode()
    with open_store(db, read_only=True) as st:
        req = st.sql("SELECT * FROM requests ORDER BY line_no")
        assert st.sql("SELECT count(*) AS n FROM rejects").n[0] == 0
    assert set(req.source) == {"<stdin>"}
    check_rows(req, 120, pads)


def test_a_fifo_is_read_as_a_stream(tmp_path):
    data, pads = make_log(300)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_bytes, args=(data,))
    writer.start()
    s = ingest([fifo], format="combined_D", profile="none")
    writer.join()
    check_rows(s.store.sql("SELECT * FROM requests"), 300, pads)
    assert s.store.sql("SELECT count(*) n FROM files")["n"][0] == 0  # a pipe cannot be read on later


def test_a_process_substitution_is_read(tmp_path):
    data, _ = make_log(200)
    log = tmp_path / "a.log.gz"
    log.write_bytes(gzip.compress(data))
    r = subprocess.run(
        ["bash", "-c", f"logan stats <(zcat {log}) --format combined_D --profile none -o csv --by status"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1].split(",")[:2] == ["200", "200"]


def test_a_file_that_grows_while_read_gives_each_line_once(tmp_path):
    data, _ = make_log(20_000)
    log = tmp_path / "growing.log"
    log.write_bytes(data)
    more = b"".join(make_line(i).encode() + b"\n" for i in range(20_001, 30_001))
    st = open_store(tmp_path / "s.duckdb")

    def append_once(*_: object) -> None:  # while the first batches are read
        if not log.stat().st_size > len(data):
            with log.open("ab") as fh:
                fh.write(more)

    first = ingest([log], st, format="combined_D", profile="none", block_size=1 << 18, progress=append_once)
    second = ingest([log], st, format="combined_D", profile="none")
    assert first.lines >= 20_000 and first.lines + second.lines == 30_000
    got = st.sql("SELECT line_no, duration_us FROM requests ORDER BY line_no")
    assert got.line_no.tolist() == list(range(1, 30_001))
    assert got.duration_us.tolist() == [i * 1000 + 7 for i in range(1, 30_001)]
    st.close()


def test_a_file_that_shrinks_while_read_is_no_error(tmp_path):
    data, _ = make_log(20_000)
    log = tmp_path / "shrinking.log"
    log.write_bytes(data)
    st = open_store(tmp_path / "s.duckdb")

    def truncate_once(*_: object) -> None:  # copytruncate while the first batches are read
        if log.stat().st_size == len(data):
            with log.open("r+b") as fh:
                fh.truncate(0)

    first = ingest([log], st, format="combined_D", profile="none", block_size=1 << 18, progress=truncate_once)
    rows = st.sql("SELECT line_no FROM requests ORDER BY line_no").line_no.tolist()
    assert rows == list(range(1, first.rows + 1)) and first.rejects == 0  # what was read, each once
    log.write_bytes(make_log(5)[0])  # the server writes on into the emptied file
    second = ingest([log], st, format="combined_D", profile="none")
    assert (second.lines, second.rows) == (5, 5)  # read as the new file it is
    st.close()


def test_stdin_gz_with_label_via_module(tmp_path):
    data, pads = make_log(40)
    db = tmp_path / "s.duckdb"
    args = ["ingest", "-", "--db", str(db), "--format", "combined_D", "--label", "web1", "--profile", "none"]
    r = subprocess.run(
        [sys.executable, "-m", "logan", *args],
        input=gzip.compress(data),
        capture_output=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr.decode()
    with open_store(db, read_only=True) as st:
        req = st.sql("SELECT * FROM requests ORDER BY line_no")
    assert set(req.source) == {"web1"}
    check_rows(req, 40, pads)


# ---- globs -----------------------------------------------------------------------------


def test_glob_expands_rotated_set(tmp_path):
    sizes = {"access.log": 30, "access.log.1": 20, "access.log.2.gz": 10}
    for name, n in sizes.items():
        data = make_log(n)[0]
        (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    (tmp_path / "error.log").write_text("not an access log\n")
    s = ingest([str(tmp_path / "access.log*")], format="combined_D", profile="none")
    assert (s.lines, s.rows, s.rejects) == (60, 60, 0)
    counts = s.store.sql(
        "SELECT source, count(*) AS n, min(line_no) AS lo, max(line_no) AS hi "
        "FROM requests GROUP BY source ORDER BY source"
    )
    assert list(counts.source) == [str(tmp_path / k) for k in sorted(sizes)]
    assert list(counts.n) == [sizes[k] for k in sorted(sizes)]
    assert list(counts.lo) == [1, 1, 1]
    assert list(counts.hi) == [sizes[k] for k in sorted(sizes)]
    for src, n in sizes.items():
        check_rows(s.store.sql(f"SELECT * FROM requests WHERE source = '{tmp_path / src}'"), n)


def test_directory_is_its_visible_files(tmp_path):
    logs = tmp_path / "httpd"
    (logs / "old").mkdir(parents=True)
    (logs / "access.log").write_bytes(make_log(7)[0])
    (logs / "access.log.1").write_bytes(make_log(5)[0])
    (logs / ".access.log.swp").write_bytes(b"editor junk\n")
    (logs / "old" / "access.log.9").write_bytes(make_log(3)[0])
    s = ingest([str(logs)], format="combined_D", profile="none")
    assert [src.source for src in s.sources] == [str(logs / "access.log"), str(logs / "access.log.1")]
    assert (s.lines, s.rows, s.rejects) == (12, 12, 0)


def test_glob_without_match_is_an_error(tmp_path):
    with pytest.raises(LoganError, match="no file matches"):
        ingest([str(tmp_path / "nothing*.log")], format="combined_D", profile="none")


def test_missing_file_is_an_error(tmp_path):
    with pytest.raises(LoganError, match="missing.log"):
        ingest([str(tmp_path / "missing.log")], format="combined_D", profile="none")


def test_empty_file(tmp_path):
    f = tmp_path / "empty.log"
    f.write_bytes(b"")
    s = ingest([f], format="combined_D", profile="none")
    assert (s.lines, s.rows, s.rejects) == (0, 0, 0)


# ---- block boundaries ------------------------------------------------------------------


@pytest.mark.parametrize("block_size", [64, 100, 257, 1 << 20])
def test_block_boundaries(tmp_path, block_size):
    # Lines of many lengths, every 7th far longer than any block here.
    data, pads = make_log(90, long_every=7, long_pad=5000)
    f = tmp_path / "a.log"
    f.write_bytes(data)
    s = ingest([f], format="combined_D", profile="none", block_size=block_size)
    assert (s.lines, s.rows, s.rejects) == (90, 90, 0)
    assert s.lines == count_lines(data)
    check_rows(requests_of(s), 90, pads)


@pytest.mark.parametrize("block_size", [64, 100])
def test_block_boundaries_crlf_and_no_final_newline(tmp_path, block_size):
    n = 60
    text = "\r\n".join(make_line(i, i % 11) for i in range(1, n + 1))  # no final terminator
    f = tmp_path / "a.log"
    f.write_bytes(text.encode())
    s = ingest([f], format="combined_D", profile="none", block_size=block_size)
    assert (s.lines, s.rows, s.rejects) == (n, n, 0)
    check_rows(requests_of(s), n, [i % 11 for i in range(1, n + 1)])


@pytest.mark.parametrize("block_size", [64, 100])
def test_block_boundaries_rejects_keep_their_line_numbers(tmp_path, block_size):
    lines = [make_line(i) for i in range(1, 41)]
    bad = {5: "", 17: "garbage " * 30, 33: "x"}
    for no, text in bad.items():
        lines[no - 1] = text
    f = tmp_path / "a.log"
    f.write_bytes(("\n".join(lines) + "\n").encode())
    s = ingest([f], format="combined_D", profile="none", block_size=block_size)
    rej = s.store.sql("SELECT line_no, raw, reason FROM rejects ORDER BY line_no")
    assert list(zip(rej.line_no, rej.raw, strict=True)) == sorted(bad.items())
    assert list(rej.reason) == ["empty line", "does not match format", "does not match format"]
    req = requests_of(s)
    assert list(req.line_no) == [i for i in range(1, 41) if i not in bad]
    assert list(req.duration_us) == [i * 1000 + 7 for i in range(1, 41) if i not in bad]


# ---- bytes that are not UTF-8 ----------------------------------------------------------


def test_invalid_utf8_is_kept_not_aborted(tmp_path):
    good = make_line(1).encode()
    latin1 = make_line(2).encode()
    latin1 = latin1[: latin1.rindex(b'"-"')] + b'"Mozilla \xe9t\xe9"'  # a Latin-1 User-Agent
    path_ff = make_line(3).encode().replace(b"/r3/", b"/r3/\xff\xfe")
    utf8 = make_line(4).replace('"-"', '"Caf\u00e9 \u2603"', 2).encode()
    junk = b"\x80\x81 junk \xc3\x28"
    f = tmp_path / "a.log"
    f.write_bytes(b"\n".join([good, latin1, path_ff, utf8, junk]) + b"\n")
    s = ingest([f], format="combined_D", profile="none")
    assert (s.lines, s.rows, s.rejects) == (5, 4, 1)
    assert s.total("invalid_utf8") == 3
    req = requests_of(s).set_index("line_no")
    assert req.user_agent[2] == "Mozilla \\xe9t\\xe9"
    assert req.path[3] == "/r3/\\xff\\xfe"
    assert req.user_agent[4] == "Caf\u00e9 \u2603" and req.referer[4] == "Caf\u00e9 \u2603"
    assert list(req.duration_us) == [1007, 2007, 3007, 4007]
    rej = s.store.sql("SELECT line_no, raw FROM rejects")
    assert list(zip(rej.line_no, rej.raw, strict=True)) == [(5, "\\x80\\x81 junk \\xc3(")]


def test_invalid_utf8_with_tiny_blocks(tmp_path):
    lines = [make_line(i).encode() for i in range(1, 31)]
    for i in (2, 9, 10, 29):
        lines[i - 1] = lines[i - 1].replace(b"/r", b"/\xe4r")
    f = tmp_path / "a.log"
    f.write_bytes(b"\n".join(lines) + b"\n")
    s = ingest([f], format="combined_D", profile="none", block_size=64)
    req = requests_of(s)
    assert list(req.line_no) == list(range(1, 31))
    expected = [f"/\\xe4r{i}/" for i in (2, 9, 10, 29)]
    assert [p for p in req.path if p.startswith("/\\xe4r")] == expected


class _Trickle(io.RawIOBase):
    """A pipe that hands out at most a few bytes per read, as a slow writer does."""

    def __init__(self, data: bytes, step: int):
        self.data, self.pos, self.step = data, 0, step

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # noqa: ANN001
        chunk = self.data[self.pos : self.pos + min(self.step, len(b))]
        b[: len(chunk)] = chunk
        self.pos += len(chunk)
        return len(chunk)


@pytest.mark.parametrize("step", [1, 7, 4096])
def test_short_reads_lose_no_byte(step):
    # Every line, in order, with its number, whatever the pipe hands out per read; the
    # last line has no line end and one line is not UTF-8.
    lines = [make_line(i).encode() for i in range(1, 41)]
    lines[12] = lines[12].replace(b"/r", b"/\xe4r")
    data = b"\n".join(lines)
    got = [b for b in sources._blocks(_Trickle(data, step), 300)]
    texts = [t for b in got for t in b.table.column("line").to_pylist()]
    assert texts == [ln.decode("utf-8", "backslashreplace") for ln in lines]
    assert [n for b in got for n in b.table.column("line_no").to_pylist()] == list(range(1, 41))
    assert sum(b.nbytes for b in got) == len(data) and sum(b.invalid_utf8 for b in got) == 1


@pytest.mark.parametrize("block_size", [230, 1000, 10_000])
def test_batches_come_in_whole_row_groups(monkeypatch, block_size):
    # Every batch but the last holds a multiple of the row group (a block of 23 lines
    # hands out 20 and holds 3 back), lines held back come first in the next batch (short
    # ones inline in their view, long ones in a copy of them), and nothing is lost,
    # reordered or renumbered.
    monkeypatch.setattr(sources, "ROW_GROUP", 10)
    lines = [("x" * (i % 17)).encode() + b"-%d" % i for i in range(1, 98)]
    data = b"\r\n".join(lines) + b"\n"
    got = list(sources._blocks(io.BytesIO(data), block_size))
    sizes = [b.lines for b in got]
    assert all(n % 10 == 0 for n in sizes[:-1]) and sum(sizes) == 97, sizes
    assert len(got) == -(-len(data) // block_size) or block_size > len(data)  # one batch per block
    texts = [t for b in got for t in b.table.column("line").to_pylist()]
    assert texts == [ln.decode() for ln in lines]
    assert [n for b in got for n in b.table.column("line_no").to_pylist()] == list(range(1, 98))
    assert sum(b.nbytes for b in got) == len(data)


def test_blocks_of_many_short_lines_are_read_smaller(monkeypatch):
    # A batch's memory goes with its lines: after a block of more than BLOCK_LINES lines,
    # the next blocks are read smaller, to about that many; nothing is lost or renumbered.
    monkeypatch.setattr(sources, "ROW_GROUP", 10)
    monkeypatch.setattr(sources, "BLOCK_LINES", 100_000)
    lines = [b"%09d" % i for i in range(1, 500_001)]  # 10 bytes a line: 2 MiB hold 209,715
    data = b"\n".join(lines) + b"\n"
    got = list(sources._blocks(io.BytesIO(data), 2 << 20))
    sizes = [b.lines for b in got]
    assert sizes[0] == 209_710  # the first block, whole row groups of it
    assert all(n <= 104_860 for n in sizes[1:]), sizes  # 1 MiB blocks from then on
    assert [n for b in got for n in b.table.column("line_no").to_pylist()] == list(range(1, 500_001))
    assert [t for b in got for t in b.table.column("line").to_pylist()][::99_999] == [
        ln.decode() for ln in lines[::99_999]
    ]
    assert sum(b.nbytes for b in got) == len(data)


def test_blocks_of_long_lines_are_read_larger_to_make_batches_of_two_row_groups(monkeypatch):
    # A block that, with the lines held from the one before, makes fewer than two row groups
    # leaves batches of one (DuckDB writes those on one thread): the next blocks are read
    # larger, up to twice the size asked, for two row groups and a sixteenth.
    monkeypatch.setattr(sources, "ROW_GROUP", 32)
    lines = [b"%099d" % i for i in range(1, 1001)]  # 100 bytes a line and its newline
    data = b"\n".join(lines) + b"\n"
    got = list(sources._blocks(io.BytesIO(data), 4_000))  # 40 lines: 1.25 row groups
    sizes = [b.lines for b in got]
    # 32 whole and 8 held; then blocks of 64 + 2 - held lines: 58, so 64 whole and 2 held,
    # then 64 (6,400 bytes), so 64 whole and 2 held again, to the 8 lines left at the end
    assert sizes == [32] + [64] * 15 + [8], sizes
    assert [b.nbytes for b in got][:3] == [4_000, 5_800, 6_400]
    assert [t for b in got for t in b.table.column("line").to_pylist()] == [ln.decode() for ln in lines]
    assert [n for b in got for n in b.table.column("line_no").to_pylist()] == list(range(1, 1001))
    assert sum(b.nbytes for b in got) == len(data)
    # Where two row groups do not fit in twice the block, blocks stay the size asked.
    small = [b.lines for b in sources._blocks(io.BytesIO(data), 3_000)]  # 30 lines
    assert max(small) <= 32 and sum(small) == 1000, small


def test_lines_held_back_are_copied_out_of_their_block(monkeypatch):
    # A batch points into its own block and a copy of the lines held back from the block
    # before (under a row group), never into that block, which is free once its batch is.
    monkeypatch.setattr(sources, "ROW_GROUP", 10)
    lines = [b"%099d" % i for i in range(1, 301)]  # 100 bytes a line and its newline
    data = b"\n".join(lines) + b"\n"
    got = list(sources._blocks(io.BytesIO(data), 1_500))  # 15 lines: one row group and a half
    sizes = [b.lines for b in got]
    # 10 whole, 5 held; 5 and 15 whole; then blocks of 20 lines (test_blocks_of_long_lines_...)
    assert sizes[:4] == [10, 20, 20, 20] and sum(sizes) == 300, sizes
    assert [t for b in got for t in b.table.column("line").to_pylist()] == [ln.decode() for ln in lines]
    assert [n for b in got for n in b.table.column("line_no").to_pylist()] == list(range(1, 301))
    assert sum(b.nbytes for b in got) == len(data)
    for b in got:  # the data a batch points into: its block, and a copy of under a row group
        held = sorted(buf.size for buf in b.table.column("line").chunk(0).buffers()[2:])[:-1]
        assert all(size < 10 * 100 for size in held), held


def test_a_small_file_is_read_into_a_buffer_its_size(tmp_path, monkeypatch):
    # A re-run reads the few MB appended since: not into a buffer of the whole block size
    # (64 MB of page faults and zeros). Pipes and .gz content, whose size is not known,
    # still get the block size.
    pool = sources.BufferPool()
    monkeypatch.setattr(sources, "BUFFERS", pool)
    data, _ = make_log(2_000)  # about 0.4 MB
    log = tmp_path / "a.log"
    log.write_bytes(data)
    at = data.index(b"\n", 1000) + 1  # where a re-run resumes
    with log.open("rb") as fh:
        batches = list(sources._blocks(fh, 8 << 20, sources.Start(offset=at, line=5)))
    assert [len(b) for b in pool._made] == [1 << 20]
    assert sum(b.nbytes for b in batches) == len(data) - at
    assert batches[0].table.column("line_no")[0].as_py() == 6
    gz = tmp_path / "a.log.gz"
    gz.write_bytes(gzip.compress(data))
    with sources.Source(str(gz), str(gz)).open() as fh:
        assert sum(b.nbytes for b in sources._blocks(fh, 8 << 20)) == len(data)
    assert sorted(len(b) for b in pool._made) == [1 << 20, 8 << 20]


def test_an_ingest_lets_go_of_its_buffers(tmp_path):
    # `logan stats LOG` answers right after its ingest, in the same process: the blocks and
    # fields the ingest read into are not kept for it.
    data, _ = make_log(2_000)
    log = tmp_path / "a.log"
    log.write_bytes(data)
    made = []
    get = sources.BUFFERS.get

    def remember(size, slack=1.0):
        made.append(get(size, slack))
        return made[-1]

    sources.BUFFERS.get = remember  # the instance's, for this ingest only
    try:
        s = ingest([log], format="combined_D", profile="none")
    finally:
        del sources.BUFFERS.get
    assert s.rows == 2_000 and made  # the ingest read into buffers of the pool...
    assert sources.BUFFERS._made == []  # ...and the pool holds none of them now


def test_nul_bytes_after_a_crash(tmp_path):
    # A server that crashed can leave a run of NUL bytes where its buffered writes were lost.
    lines = [make_line(i).encode() for i in range(1, 6)]
    lines[2] = b"\0" * 4096
    f = tmp_path / "a.log"
    f.write_bytes(b"\n".join(lines) + b"\n")
    s = ingest([f], format="combined_D", profile="none", block_size=1000)
    assert (s.lines, s.rows, s.rejects) == (5, 4, 1)
    rej = s.store.sql("SELECT line_no, raw, reason FROM rejects")
    got = list(zip(rej.line_no, rej.raw, rej.reason, strict=True))
    assert got == [(3, "\0" * 4096, "does not match format")]
    assert list(requests_of(s).duration_us) == [1007, 2007, 4007, 5007]


# ---- one transaction per batch ---------------------------------------------------------


def _counts(db: Path) -> tuple[int, int, int]:
    with open_store(db, read_only=True) as st:
        return tuple(
            int(st.sql(f"SELECT count(*) AS n FROM {t}").n[0]) for t in ("requests", "rejects", "ingests")
        )


def test_failure_mid_batch_rolls_back(tmp_path, monkeypatch):
    db = tmp_path / "store.duckdb"
    first = tmp_path / "first.log"
    first.write_bytes(make_log(25)[0] + b"junk\n")
    ingest([first], store=db, format="combined_D", profile="none").store.close()
    assert _counts(db) == (25, 1, 1)

    # A batch with split-path lines, then lines with escapes (the exact path) and a reject:
    # the fast insert runs, then the exact path fails.
    second = tmp_path / "second.log"
    second.write_bytes(make_log(10)[0] + (make_line(11, ua='a \\"q\\"') + "\nbad line\n").encode())

    def boom(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(INGEST_MODULE, "_exact_path", boom)
    st = open_store(db)
    with pytest.raises(RuntimeError, match="disk on fire"):
        ingest([second], store=st, format="combined_D", profile="none")
    # The same connection sees no half batch, and it can go on.
    assert st.sql("SELECT count(*) AS n FROM requests").n[0] == 25
    st.close()
    assert _counts(db) == (25, 1, 1)
    with open_store(db, read_only=True) as ro:
        assert set(ro.sql("SELECT DISTINCT source FROM requests").source) == {str(first)}


def test_failure_in_second_batch_keeps_the_first(tmp_path, monkeypatch):
    # Every line the same length, so a block holds exactly two lines, and each pair has one
    # line for the split path and one (a tab in a quoted field) for the exact path.
    lines = [make_line(i, ua=("a\tbc" if i % 2 == 0 else "abcd")) for i in range(10, 20)]
    width = {len(x) for x in lines}
    assert len(width) == 1
    f = tmp_path / "a.log"
    f.write_bytes(("\n".join(lines) + "\n").encode())
    real = INGEST_MODULE._exact_path
    calls = []

    def second_fails(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("killed in batch 2")
        return real(*args, **kwargs)

    monkeypatch.setattr(INGEST_MODULE, "_exact_path", second_fails)
    db = tmp_path / "s.duckdb"
    st = open_store(db)
    with pytest.raises(RuntimeError, match="killed in batch 2"):
        ingest([f], store=st, format="combined_D", profile="none", block_size=2 * (width.pop() + 1) + 5)
    st.close()
    with open_store(db, read_only=True) as ro:
        req = ro.sql("SELECT line_no, user_agent FROM requests ORDER BY line_no")
    assert list(req.line_no) == [1, 2]
    assert list(req.user_agent) == ["a\tbc", "abcd"]  # lines 10 and 11 of the generator


def test_duckdb_gets_half_row_groups_but_a_small_table_whole():
    group = sources.ROW_GROUP
    # halves of row groups: each of two threads takes every other one
    assert [len(c) for c in _chunks(3 * group)] == [group // 2] * 6
    assert [len(c) for c in _chunks(group)] == [group // 2, group // 2]
    assert [len(c) for c in _chunks(group + 1)] == [group // 2, group // 2, 1]
    # under a row group: one chunk, read in one order (the same sums to the last digit)
    assert [len(c) for c in _chunks(40_000)] == [40_000]
    assert [len(c) for c in _chunks(0)] == []


def _chunks(n: int) -> list:
    table = pa.table({"x": pa.array(range(n), pa.int64())})
    return table.to_batches(max_chunksize=sources.scan_rows(n))
