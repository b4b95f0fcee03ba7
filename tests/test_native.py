"""The C split (logan/read/_split.c) and the stores made for one report.

The C split must take the lines the SQL split takes and cut them into the same field texts;
every ingest then reads the same tables whichever reader took a line. A report's one-shot
store keeps only the columns the report reads, and gives the same answer as a full store.
"""

from __future__ import annotations

import json
import math
import random
import re
import subprocess
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from conftest import CORPUS, reading_with

from logan import schema
from logan.answer import stats as st
from logan.errors import FormatError
from logan.read import detect, native, rows, sources
from logan.read import ingest as ingest_module
from logan.read.classify import collapse_routes
from logan.read.compile import CompiledFormat, compile_format, prefix_regex
from logan.read.dialects import dialects, resolve_format
from logan.read.ingest import ingest
from logan.read.sources import Batch, expand, read_batches
from logan.store import open_store, stored_columns

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"
needs_c = pytest.mark.skipif(not native.available(), reason="the C split (logan.read._split) was not built")


def corpus_logs() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.glob("*/*") if p.name not in ("PROVENANCE.txt", "INDEX.md"))


def split_both_ways(batch: Batch, cf: CompiledFormat) -> tuple[dict, dict]:
    """{line_no: field texts} as the SQL split and as the C split read a batch."""
    con = duckdb.connect()
    con.register("__batch", batch.table)
    aliases = [f.alias for f in cf.fields]
    sql = cf.fast_raw_sql("__batch")
    by_sql = {
        r[0]: r[1:] for r in con.execute(f"SELECT line_no, {', '.join(aliases)} FROM ({sql})").fetchall()
    }
    plan = native.plan(cf)
    assert plan is not None, cf.label
    con.register("__raw", native.read_batch(con, cf, plan, batch).raw)
    found = con.execute(f"SELECT line_no, {', '.join(aliases)} FROM ({plan.sql('__raw')})").fetchall()
    by_c = {r[0]: r[1:] for r in found}
    return by_sql, by_c


def read_by_regex(batch: Batch, cf: CompiledFormat) -> dict:
    """{line_no: field texts} of the lines the exact path reads, escapes decoded."""
    con = duckdb.connect()
    con.register("__batch", batch.table)
    aliases = ", ".join(f.alias for f in cf.fields)
    found = con.execute(f"SELECT line_no, {aliases} FROM ({cf.exact_raw_sql('__batch')}) WHERE matched")
    return {r[0]: r[1:] for r in found.fetchall()}


def c_reads_as_sql_and_regex(batch: Batch, cf: CompiledFormat) -> dict:
    """The C split's {line_no: field texts} of a batch, checked: it takes every line the SQL
    split takes, to the same texts, and besides those only lines with an escape it decodes,
    to the texts the exact path decodes them to."""
    by_sql, by_c = split_both_ways(batch, cf)
    assert {k: by_c.get(k) for k in by_sql} == by_sql
    extra = {k: v for k, v in by_c.items() if k not in by_sql}
    if extra:
        lines = dict(zip(*batch.table.to_pydict().values(), strict=True))
        assert all("\\" in lines[k] for k in extra)
        by_regex = read_by_regex(batch, cf)
        assert extra == {k: by_regex.get(k) for k in extra}
    return by_c


@needs_c
def test_every_preset_the_sql_split_reads_has_a_c_plan():
    for name, d in dialects().items():
        for preset, fmt in d.presets.items():
            cf = compile_format(d, fmt, f"{name}:{preset}")
            if cf.fast_raw_sql("t") is not None:
                assert native.plan(cf) is not None, f"{name}:{preset}"


@needs_c
@pytest.mark.parametrize(
    "path", corpus_logs() + sorted(SAMPLES.glob("*.log")), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_c_split_cuts_what_the_sql_split_cuts(path):
    """On every real log and sample: the same lines taken, the same text in every field (and
    lines with escapes, read as the regex reads them)."""
    batches = list(read_batches(expand([str(path)])[0]))
    st_ = open_store(None)
    try:
        cf, _ = detect.detect_format(st_, batches[0].table)
    except FormatError:
        pytest.skip(f"{path.name}: no preset reads it (its tests give the format)")
    if cf.fast_raw_sql("__batch") is None:
        pytest.skip(f"{cf.label}: no split path")
    taken = 0
    for batch in batches:
        taken += len(c_reads_as_sql_and_regex(batch, cf))
    if path.parent == SAMPLES:  # all but HAProxy's events (real logs' odd lines may all go to the regex)
        assert taken > 0.99 * sum(b.lines for b in batches)


@needs_c
def test_lines_cut_from_several_buffers(tmp_path, monkeypatch):
    """Lines held back from one block and handed out with the next point into two buffers;
    fields of 12 bytes or less are held inline, longer ones point into the lines' buffer."""
    fmt = '%ci:%cp %ST %B "%r"'
    lines = [
        f'10.0.{i % 250}.{i % 7}:{1000 + i % 60000} {200 + i % 3} {i % 5000} "GET /{"p" * (i % 40)}/{i}"'
        for i in range(300_000)
    ]
    path = tmp_path / "many.log"
    path.write_text("\n".join(lines) + "\n")
    seen_buffers = []
    real = native.split

    def spy(p, line_views, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        seen_buffers.append(len(line_views.buffers()) - 2)
        return real(p, line_views, *a, **k)

    monkeypatch.setattr(native, "split", spy)
    s1 = ingest([path], format=fmt, dialect="haproxy", profile="none", block_size=8 << 20)
    assert max(seen_buffers) == 2  # a batch whose lines lie in two blocks
    got = s1.store.con.execute(
        "SELECT line_no, client, client_port, status, bytes_sent, request FROM requests ORDER BY line_no"
    ).fetchall()
    assert s1.rows == len(lines) == len(got)
    for i in (0, 1, 122_879, 122_880, 150_001, 299_999):
        client, rest = lines[i].split(":", 1)
        port, status, size, request = rest.split(" ", 3)
        assert got[i] == (i + 1, client, int(port), int(status), int(size), request.strip('"'))
    with reading_with(monkeypatch, "sql"):
        s2 = ingest([path], format=fmt, dialect="haproxy", profile="none", block_size=8 << 20)
    assert s2.store.con.execute("SELECT * EXCLUDE (source) FROM requests ORDER BY line_no").fetchall() == [
        (*r[:1], *r[1:])
        for r in s1.store.con.execute("SELECT * EXCLUDE (source) FROM requests ORDER BY line_no").fetchall()
    ]


def _row_groups(con: duckdb.DuckDBPyConnection) -> list[int]:
    """The rows of each of the stored table's row groups, in order (DuckDB's own account)."""
    return [
        n
        for (n,) in con.execute(
            "SELECT sum(count) FROM pragma_storage_info(?) WHERE column_id = 0 AND column_path = '[0]'"
            " GROUP BY row_group_id ORDER BY row_group_id",
            [schema.REQUESTS_TABLE],
        ).fetchall()
    ]


_QUOTED = '\\"x'  # a backslash and a quote inside the request


def _many_lines(n: int) -> tuple[list[str], set[int], set[int]]:
    """n lines of a short HAProxy format: one in 97 no request (a reject), one in 89 with an
    escaped quote (the C split leaves it, the regex reads it: a row); (lines, the rejects'
    and the escaped lines' indexes from 0)."""
    bad = {i for i in range(n) if i % 97 == 0}
    escaped = {i for i in range(n) if i % 89 == 0} - bad

    def line(i: int) -> str:
        tail = _QUOTED if i in escaped else ""
        return f'10.0.{i % 250}.{i % 7}:{1000 + i % 60000} 200 {i % 5000} "GET /{i}{tail}"'

    lines = [f"not a request {i}" if i in bad else line(i) for i in range(n)]
    return lines, bad, escaped


@needs_c
@pytest.mark.parametrize(("lines", "last", "rows"), [(260_000, False, 245_760), (246_000, False, 122_880),
                                                     (246_000, True, None)])  # fmt: skip
def test_a_batch_is_read_up_to_its_last_whole_row_group_of_rows(lines, last, rows):
    """read_batch with whole_rows: the split stops at the row that fills as many row groups
    as the lines would if each were a row; when the lines run out first (too many are no
    rows), the batch ends after its last whole row group. The lines the split leaves and
    the format's regex reads are rows too (the exact path inserts them), so the cut counts
    them. The last batch is read whole."""
    cf = compile_format(dialects()["haproxy"], '%ci:%cp %ST %B "%r"', "t")
    texts, bad, escaped = _many_lines(lines)
    good = [i for i in range(lines) if i not in bad]  # the lines that are rows, from 0
    table = pa.table(
        {"line_no": pa.array(range(11, 11 + lines), pa.int64()), "line": pa.array(texts, pa.string_view())}
    )
    read = native.read_batch(duckdb.connect(), cf, native.plan(cf), Batch(table, 11, lines, 0, 0, last=last),
                             whole_rows=True)  # fmt: skip
    if rows is None:  # every line read
        assert read.lines is None and read.raw.num_rows == len(good) - len(escaped)
        return
    # the lines kept end before the first row past the whole row groups
    assert read.lines == good[rows]
    taken = [11 + i for i in good[:rows] if i not in escaped]
    assert read.raw.column("line_no").to_pylist() == taken


@needs_c
def test_batches_of_a_file_store_fill_whole_row_groups_of_rows(tmp_path, monkeypatch):
    """Lines that are no rows (rejects here; HAProxy's own messages) would leave a batch's
    last row group part-filled, which DuckDB writes on one thread, and lines only the
    regex reads (escapes) a small row group of their own: past the first batch, the reader
    thread cuts each batch after its last whole row group of rows, these counted, and
    reads the lines after it with the next block. Every line is still read once, and once
    again when a run is stopped between two batches and the next one resumes."""
    fmt = '%ci:%cp %ST %B "%r"'
    lines, bad_at, _ = _many_lines(700_000)
    bad = {i + 1 for i in bad_at}  # line numbers
    path = tmp_path / "many.log"
    path.write_text("\n".join(lines) + "\n")

    def stored(con: duckdb.DuckDBPyConnection) -> tuple[list, list]:
        got = con.execute("SELECT line_no, client, client_port, bytes_sent, request FROM requests").fetchall()
        rejected = con.execute("SELECT line_no FROM rejects").fetchall()
        return sorted(got), sorted(n for (n,) in rejected)

    real, done = ingest_module._ingest_batch, []

    def counted(st, r, batch, out):  # noqa: ANN001, ANN202
        before = out.rows
        said = real(st, r, batch, out)
        done.append(out.rows - before)
        return said

    monkeypatch.setattr(ingest_module, "_ingest_batch", counted)
    whole = ingest([path], store=tmp_path / "s.duckdb", format=fmt, dialect="haproxy", profile="none",
                   block_size=8 << 20)  # fmt: skip
    monkeypatch.setattr(ingest_module, "_ingest_batch", real)
    groups = _row_groups(whole.store.con)
    got, rejected = stored(whole.store.con)
    assert whole.sources[0].rows == len(got) == len(lines) - len(bad) and rejected == sorted(bad)
    assert [n for n, *_ in got] == sorted(set(range(1, len(lines) + 1)) - bad)
    for i in (1, 122_879, 350_001, 699_999):
        client, rest = lines[i].split(":", 1)
        port, _, size, request = rest.split(" ", 3)
        assert got[i - 1 - i // 97] == (i + 1, client, int(port), int(size), request.strip('"'))
    # the first batch is handed over as the reader cut it, in whole row groups of lines (the
    # format is read from it), the last holds what is left; every batch between them holds
    # whole row groups of rows
    assert len(done) >= 4 and sum(done) == sum(groups) == len(got)
    assert all(n % sources.ROW_GROUP == 0 for n in done[1:-1]), done
    assert done[0] % sources.ROW_GROUP != 0 and done[-1] % sources.ROW_GROUP != 0, done

    # stopped after the second batch's commit, then run again: the same rows and rejects
    done = []

    def stop_after_two(*a, **k):  # noqa: ANN002, ANN003, ANN202
        if len(done) == 2:
            raise KeyboardInterrupt
        done.append(real(*a, **k))
        return done[-1]

    st = open_store(tmp_path / "t.duckdb")
    monkeypatch.setattr(ingest_module, "_ingest_batch", stop_after_two)
    with pytest.raises(KeyboardInterrupt):
        ingest([path], store=st, format=fmt, dialect="haproxy", profile="none", block_size=8 << 20)
    monkeypatch.setattr(ingest_module, "_ingest_batch", real)
    assert 0 < st.con.execute("SELECT count(*) FROM requests").fetchone()[0] < len(got)
    ingest([path], store=st, format=fmt, dialect="haproxy", profile="none", block_size=8 << 20)
    assert stored(st.con) == (got, rejected)


@needs_c
@pytest.mark.parametrize(
    ("line", "fields"),
    [
        # an IPv6 client: the port is after the last ":"
        ('2001:db8::1:443 200 5 "GET / HTTP/1.1"', ("2001:db8::1", "443", "200", "5", "GET / HTTP/1.1")),
        # a quote inside the quoted field is no line the split reads
        ('1.2.3.4:5 200 5 "GET /" HTTP/1.1"', None),
        # nor a backslash anywhere, nor a tab, nor a form feed in a word
        ('1.2.3.4:5 200 5 "GET /\\x HTTP/1.1"', None),
        ('1.2.3.4:5 200\t5 "GET / HTTP/1.1"', None),
        ('1.2.3.4:5 200\f 5 "GET / HTTP/1.1"', None),
        # an empty client, a missing field, a field too many
        (':5 200 5 "GET / HTTP/1.1"', None),
        ('1.2.3.4:5 200 "GET / HTTP/1.1"', None),
        ('1.2.3.4:5 200 5 6 "GET / HTTP/1.1"', None),
        ('1.2.3.4:5 200 5 "GET / HTTP/1.1" ', None),
        ("", None),
        # short fields: held in the views themselves
        ('1.2.3.4:5 2 5 ""', ("1.2.3.4", "5", "2", "5", "")),
    ],
)
def test_c_split_takes_only_what_the_regex_reads_alike(line, fields):
    cf = compile_format(*resolve_format('%ci:%cp %ST %B "%r"', "haproxy"))
    table = pa.table({"line_no": np.array([1], np.int64), "line": pa.array([line], pa.string_view())})
    by_sql, by_c = split_both_ways(Batch(table, 1, 1, len(line), 0), cf)
    assert by_c == ({1: fields} if fields else {})
    # what it takes, the regex reads to the same texts
    if fields:
        groups = [
            duckdb.execute("SELECT regexp_extract(?, ?, ?)", [line, cf.regex, g]).fetchall()[0][0]
            for g in range(1, 6)
        ]
        assert tuple(groups) == fields


@needs_c
@pytest.mark.parametrize(
    "line",
    [
        # an empty Referer and User-Agent header, as Apache writes them
        '1.2.3.4 - - [29/Mar/2026:00:30:02 +0000] "GET /cms/ HTTP/1.1" 301 235 "" ""',
        '1.2.3.4 - - [29/Mar/2026:00:30:02 +0000] "GET /cms/ HTTP/1.1" 301 - "" "Mozilla/5.0 (X11)"',
    ],
)
def test_an_empty_quoted_field_is_read_by_the_splits_as_by_the_regex(line):
    """A quoted field may be empty: the regex reads "" as an empty text, and so do both
    splits (a line they left to the regex made its batch two INSERTs)."""
    cf = compile_format(*resolve_format("combined", "apache"))
    table = pa.table({"line_no": np.array([1], np.int64), "line": pa.array([line], pa.string_view())})
    by_sql, by_c = split_both_ways(Batch(table, 1, 1, len(line), 0), cf)
    n = len(cf.fields)
    groups = tuple(
        duckdb.execute("SELECT regexp_extract(?, ?, ?)", [line, cf.regex, g]).fetchall()[0][0]
        for g in range(1, n + 1)
    )
    assert by_c == by_sql == {1: groups}
    assert groups[-2] == ""


@needs_c
def test_nginx_upstream_lists_stay_in_their_field(ingest_text, monkeypatch):
    fmt = '$remote_addr [$time_local] "$request" $status $upstream_response_time $upstream_addr'
    lines = [
        '1.2.3.4 [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 502 0.100, 0.004 : 0.010 a:1, b:2 : c:3',
        '1.2.3.4 [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 0.010 a:1',
        '1.2.3.4 [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 0.010 a:1 extra',
    ]
    text = "\n".join(lines) + "\n"
    s1, req1, rej1 = ingest_text(text, fmt, dialect="nginx")
    assert (s1.rows, s1.rejects) == (2, 1)
    assert req1["upstream_addr"].tolist() == ["a:1, b:2 : c:3", "a:1"]
    assert req1["upstream_us"].tolist() == [114_000, 10_000]  # the sum of the tries
    for reader in ("sql", "regex"):
        with reading_with(monkeypatch, reader):
            _, req2, rej2 = ingest_text(text, fmt, dialect="nginx")
        pd.testing.assert_frame_equal(req1.drop(columns="source"), req2.drop(columns="source"))
        pd.testing.assert_frame_equal(rej1.drop(columns="source"), rej2.drop(columns="source"))


_HAPROXY = (
    "Mar 29 00:30:00 lb haproxy[1]: 10.0.0.{n}:5000 [29/Mar/2026:00:30:00.0{n:02d}] fe be/s1"
    " 1/0/2/3/6 200 190 - - ---- 1/1/1/0/0 0/0 "
)
# Captured headers as HAProxy writes them ({request headers} {response headers}, "|" between
# the headers of a block): spaces, quotes and an empty block; then lines of other shapes
# in the same log: one block only, none, and a brace inside a block (no line the regex reads).
CAPTURED = [
    '{Mozilla/5.0 (X11; Linux x86_64) "q"|www.example.com} {} "GET /a?x=1 HTTP/1.1"',
    '{curl/8.4.0|} {text/html} "GET /b HTTP/1.1"',
    '{} {} "POST /c HTTP/1.0"',
    '{-|a b  c} {|} "GET /d HTTP/1.1"',
    '{only the request block} "GET /e HTTP/1.1"',
    '"GET /f HTTP/1.1"',
    '{a{b} {} "GET /g HTTP/1.1"',
]


@needs_c
def test_captured_headers_are_taken_by_the_c_split_as_the_regex_reads_them(ingest_text, monkeypatch):
    """A log with header captures has "{...}" where %hr and %hs are optional: the plan
    chosen from a batch's first lines takes the lines with both blocks (the most of them),
    and every line reads as the regex alone reads it."""
    lines = [_HAPROXY.format(n=n) + c for n, c in enumerate(CAPTURED * 3)]
    text = "\n".join(lines) + "\n"
    cf = compile_format(*resolve_format("httplog", "haproxy"))
    table = pa.table({"line_no": np.arange(1, len(lines) + 1), "line": pa.array(lines, pa.string_view())})
    batch = Batch(table, 1, len(lines), len(text), 0)
    con = duckdb.connect()
    p = native.plan(cf, sample=(con, batch))
    assert p is not None
    taken = native.read_batch(con, cf, p, batch).raw.column("line_no").to_pylist()
    assert taken == [n + 1 for n, c in enumerate(CAPTURED * 3) if c.count("} {") == 1 and "{a{" not in c]
    assert native.read_batch(con, cf, native.plan(cf), batch).raw.num_rows == 3  # without captures
    s1, req1, rej1 = ingest_text(text, "haproxy:httplog")
    assert (s1.rows, s1.rejects) == (18, 3)
    extra = [{} if e is pd.NA else dict(e) for e in req1["extra"]]
    assert extra[0]["captured_request_headers"] == 'Mozilla/5.0 (X11; Linux x86_64) "q"|www.example.com'
    assert extra[0]["captured_response_headers"] is None  # {}: nothing captured
    assert extra[3]["captured_request_headers"] == "-|a b  c"
    assert extra[4]["captured_request_headers"] == "only the request block"  # read by the regex
    with reading_with(monkeypatch, "regex"):
        _, req2, rej2 = ingest_text(text, "haproxy:httplog")
    pd.testing.assert_frame_equal(req1.drop(columns="source"), req2.drop(columns="source"))
    pd.testing.assert_frame_equal(rej1.drop(columns="source"), rej2.drop(columns="source"))


@needs_c
def test_the_plan_is_chosen_on_lines_spread_over_the_batch():
    """A log that starts with HAProxy's own messages (a reload) still gets the plan of its
    requests' shape: the lines that choose are spread over the first batch."""
    start = ["Mar 29 00:30:00 lb haproxy[1]: Proxy fe started."] * 3000
    captured = [_HAPROXY.format(n=n % 100) + CAPTURED[0] for n in range(2000)]
    lines = start + captured
    cf = compile_format(*resolve_format("httplog", "haproxy"))
    table = pa.table({"line_no": np.arange(1, len(lines) + 1), "line": pa.array(lines, pa.string_view())})
    batch = Batch(table, 1, len(lines), sum(map(len, lines)) + len(lines), 0)
    con = duckdb.connect()
    p = native.plan(cf, sample=(con, batch))
    assert p is not None
    assert native.read_batch(con, cf, p, batch).raw.num_rows == len(captured)


# (the end of a line, whether the SQL split takes it, the referer as the exact path decodes it,
# the user agent so)
_APACHE_ESCAPES = [
    # Apache writes a byte of a referer or user agent that is no ASCII as \xhh: kept as written
    (
        r'"http://\xe4\xe5\xe3.ru/" "Mozilla/5.0 (iPad)"',
        True,
        r"http://\xe4\xe5\xe3.ru/",
        "Mozilla/5.0 (iPad)",
    ),
    (r'"-" "a \x01 control"', True, "-", r"a \x01 control"),
    (r'"-" "say \"hi\""', False, "-", 'say "hi"'),  # \" is a quote
    (r'"http://x/\\y" "curl"', False, "http://x/\\y", "curl"),  # \\ is one backslash
    (r'"http://x/y\\" "curl"', False, "http://x/y\\", "curl"),
    (r'"-" "\\\"\\"', False, "-", '\\"\\'),  # \\ \" \\: backslash, quote, backslash
    (
        r'"-" "}__t|O:21:\"JDatabaseDriverMysqli\":3:{s:2}"',
        False,
        "-",
        '}__t|O:21:"JDatabaseDriverMysqli":3:{s:2}',
    ),
]
_NGINX_ESCAPES = [
    (r'"http://\xE4\xE5.ru/" "Mozilla/5.0"', True, r"http://\xE4\xE5.ru/", "Mozilla/5.0"),
    (r'"http://x/\x22q\x22" "curl"', False, 'http://x/"q"', "curl"),  # nginx's \x22 is a quote
    (r'"http://x/\x5Cy" "curl"', False, "http://x/\\y", "curl"),
    (r'"-" "\x5Cx22"', False, "-", "\\x22"),  # a backslash, then the text x22
]


@needs_c
@pytest.mark.parametrize(
    "dialect, escapes", [("apache", _APACHE_ESCAPES), ("nginx", _NGINX_ESCAPES)], ids=["apache", "nginx"]
)
def test_escapes_are_read_by_the_c_split_as_by_the_exact_path(
    dialect, escapes, ingest_text, tmp_path, monkeypatch
):
    """A line whose escapes the exact path leaves as written (Apache's \\xhh) is read by both
    split paths, which keep the text as written too. A line with an escape the exact path
    decodes (\\" and \\\\, nginx's \\x22 and \\x5C) is left to it by the SQL split, and read by
    the C split, which decodes it alike. Every reader stores the same rows, with the referer
    and user agent as written by hand above."""
    user = "DOMAIN\\ops" if dialect == "apache" else "-"  # a backslash outside quotes is text
    head = f'10.0.0.1 - {user} [10/Oct/2026:13:55:36 +0000] "GET /a HTTP/1.1" 200 5 '
    lines = [head + rest for rest, *_ in escapes]
    text = "\n".join(lines) + "\n"
    path = tmp_path / "escapes.log"
    path.write_text(text)
    cf = compile_format(*resolve_format("combined", dialect))
    (batch,) = read_batches(expand([str(path)])[0])
    by_sql, by_c = split_both_ways(batch, cf)
    assert sorted(by_sql) == [i + 1 for i, (_, taken, *_) in enumerate(escapes) if taken]
    assert sorted(by_c) == list(range(1, len(lines) + 1))
    c_reads_as_sql_and_regex(batch, cf)

    s1, req1, rej1 = ingest_text(text, "combined", dialect=dialect)
    assert (s1.rows, s1.rejects) == (len(lines), 0)

    def stored(column: str) -> list:
        return [None if pd.isna(v) else v for v in req1[column]]

    assert stored("referer") == [None if referer == "-" else referer for _, _, referer, _ in escapes]
    assert stored("user_agent") == [agent for *_, agent in escapes]
    assert stored("remote_user") == [None if user == "-" else user] * len(lines)
    for reader in ("sql", "regex"):
        with reading_with(monkeypatch, reader):
            _, req2, _ = ingest_text(text, "combined", dialect=dialect)
        pd.testing.assert_frame_equal(req1.drop(columns="source"), req2.drop(columns="source"))


_ESCAPED_REQUESTS = [
    r"GET /a\"b?q=\\1 HTTP/1.1",  # decoded: /a"b, q=\1
    r"GET /sys/code/box.inc.php?config[\\\"sipssys\\\"]=http://cirt.net/rfiinc.txt? HTTP/1.1",  # nikto
    r"GET /puppet/v3/catalog/n\"1?environment=pr\\od HTTP/1.1",
    r"GET /a\\ HTTP/1.1",
    "GET /a/b?q=1 HTTP/1.1",
]


@needs_c
@pytest.mark.parametrize("distinct", [False, True], ids=["keyed", "inline"])
@pytest.mark.parametrize("profile", ["none", "generic", "puppet"])
def test_an_escape_in_a_request_line_is_decoded_before_classification(
    profile, distinct, ingest_text, monkeypatch
):
    """The C split decodes a request line's escapes before the reader makes classification's
    keys, queries and route templates of it: such a line is taken, and its row, route and
    classes are those the exact path makes of its decoded text. With few distinct request
    lines the batch is classified by key, with as many as lines row by row."""
    lines = []
    for i in range(600):
        request = _ESCAPED_REQUESTS[i % len(_ESCAPED_REQUESTS)]
        if distinct:
            request = request.replace(" HTTP", f"/{i} HTTP", 1).replace("?", f"{i}?", 1)
        agent = 'say \\"hi\\"' if i % 7 == 0 else "curl"
        lines.append(
            f'10.0.0.{i % 9} - - [10/Oct/2026:13:55:{i % 60:02d} +0000] "{request}" 200 5 "-" "{agent}"'
        )
    text = "\n".join(lines) + "\n"
    taken = []
    real = native.split

    def spy(p, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        raw, through = real(p, *a, **k)
        taken.extend(raw.column("line_no").to_pylist())
        return raw, through

    monkeypatch.setattr(native, "split", spy)
    _, req1, _ = ingest_text(text, "combined", profile=profile)
    assert taken == list(range(1, len(lines) + 1))
    if not distinct:
        assert list(req1["path"][:4]) == ['/a"b', "/sys/code/box.inc.php", '/puppet/v3/catalog/n"1', "/a\\"]
        assert list(req1["query"][:2]) == ["q=\\1", 'config[\\"sipssys\\"]=http://cirt.net/rfiinc.txt?']
    assert list(req1["user_agent"][:8]) == ['say "hi"', *["curl"] * 6, 'say "hi"']
    with reading_with(monkeypatch, "regex"):
        _, req2, _ = ingest_text(text, "combined", profile=profile)
    pd.testing.assert_frame_equal(req1.drop(columns="source"), req2.drop(columns="source"))


@needs_c
def test_a_backslash_where_it_may_start_anything_leaves_the_line_to_the_regex(tmp_path):
    """HAProxy decodes no escape, and a backslash may stand for anything there (RFC 5424
    structured data): neither split takes such a line."""
    cf = compile_format(*resolve_format("httplog", "haproxy"))
    line = (
        "Feb  6 12:14:14 localhost haproxy[14389]: 10.0.1.2:33317 [06/Feb/2009:12:14:14.655] "
        'http-in static/srv1 10/0/30/69/109 200 2750 - - ---- 1/1/1/1/0 0/0 "GET /a\\x41 HTTP/1.1"'
    )
    plain = line.replace("\\x41", "A")
    path = tmp_path / "h.log"
    path.write_text(f"{line}\n{plain}\n")
    (batch,) = read_batches(expand([str(path)])[0])
    by_sql, by_c = split_both_ways(batch, cf)
    assert by_c == by_sql
    assert sorted(by_c) == [2]


# --- stores made for one report ---------------------------------------------------------------
KEPT = {"duration_us", "status", "path"}


@pytest.mark.parametrize("reader", ["native", "sql"])
def test_a_store_keeps_only_the_columns_asked_for(monkeypatch, reader):
    log = SAMPLES / "haproxy.log"
    full = ingest([log], profile="none")
    with reading_with(monkeypatch, reader):
        some = ingest([log], profile="none", columns=KEPT)
    assert set(stored_columns(some.store.con)) == KEPT | {"ingest_id", "line_no"}
    counts = ("lines", "rows", "rejects", "events")
    assert [getattr(some, c) for c in counts] == [getattr(full, c) for c in counts]
    # the events counted alike, and kept only where every column is (the answers that
    # read events ask for every column)
    events = "SELECT count(*) FROM events"
    assert full.store.con.execute(events).fetchall()[0][0] == full.events > 0
    assert some.store.con.execute(events).fetchall()[0][0] == 0
    assert some.rejects_by_reason == full.rejects_by_reason
    q = "SELECT line_no, duration_us, status, path, client, backend FROM requests ORDER BY line_no"
    kept = some.store.con.execute(q).fetchall()
    whole = full.store.con.execute(q).fetchall()
    assert [r[:4] for r in kept] == [r[:4] for r in whole]
    assert {r[4:] for r in kept} == {(None, None)}  # not kept: NULL, as for a log without them
    assert all(r[4] is not None for r in whole)


@needs_c
def test_fields_not_kept_are_not_cut_out():
    cf = compile_format(*resolve_format("haproxy:httplog", None))
    values, checks = rows.fields_read(cf, False, frozenset({"duration_us", "ts_start"}))
    name = {f.alias: f.spec.directive.lstrip("%") for f in cf.fields}
    assert {name[a] for a in values} == {"Ta", "tr"}
    # every number and the date have a check; no text has
    assert {name[a] for a in checks} >= {"Ta", "tr", "TR", "Tw", "Tc", "Tr", "ST", "B", "ac", "fc", "bc"}
    assert not {name[a] for a in checks} & {"ci", "ft", "b", "s", "{+Q}r", "tsc"}
    plan = native.plan(cf, values, checks)
    # a number only a check reads is checked in C (digits), not cut out; a number kept and
    # the date are read in C, their SQL checks left out, and handed over as BIGINT
    assert {f.alias for f in plan.fields} == values
    assert plan.checked == checks
    assert {name[a] for a in plan.numbers} == {"Ta", "tr"}
    con = duckdb.connect()
    limits = native.digit_limits(cf, checks - values, "UTC")
    assert set(limits) == checks - values
    for alias, (most, dashes) in limits.items():
        ok = next(ok for ok, _ in cf.typed("UTC")[1] if alias in re.findall(r"\bf\d+\b", ok))
        passes = [
            con.execute(f"SELECT coalesce({ok}, false) FROM (SELECT ? AS {alias})", [v]).fetchall()[0][0]
            for v in ["0", "7" * most, "9" * most, "-", "-1"]
        ]
        assert passes[:3] == [True, True, True], (name[alias], passes)
        assert passes[3] >= bool(dashes & 1) and passes[4] >= bool(dashes & 2)
    # %rc is [+-]?\d+: "-" passes its check (a cast) but not the exact path's regex
    assert {name[a]: d for a, (_, d) in limits.items()}["rc"] == 2
    # HAProxy's ST is a SMALLINT: four digits at most
    st_ = {a for a in name if name[a] == "ST"}
    assert native.digit_limits(cf, st_, "UTC") == {a: (4, 3) for a in st_}


@needs_c
def test_lines_whose_checked_numbers_are_no_digits_go_to_the_regex(tmp_path, monkeypatch):
    """ "+1" retries (redispatched), a "-" counter, 10 digits: the C split leaves the line,
    the exact path checks it; the report's store has the same rows as a full one."""
    body = (
        "lb haproxy[1]: 10.0.1.2:33317 [06/Feb/2009:12:14:14.655] http-in static/srv1 10/0/30/69/109 200 "
        '2750 - - ---- 1/1/1/1/{r} 0/0 "GET /index.html HTTP/1.1"'
    )
    lines = ["Feb  6 12:14:14 " + body.format(r=r) for r in ("0", "+1", "-", "1234567890", "12", "x")]
    path = tmp_path / "h.log"
    path.write_text("\n".join(lines) + "\n")
    keep = {"duration_us", "ts_start"}
    own = ingest([path], format="haproxy:httplog", profile="none", columns=keep)
    full = ingest([path], format="haproxy:httplog", profile="none")
    q = "SELECT line_no, duration_us, ts_start FROM requests ORDER BY line_no"
    assert own.store.con.execute(q).fetchall() == full.store.con.execute(q).fetchall()
    assert (own.rows, own.rejects) == (full.rows, full.rejects) == (4, 2)  # "-" and "x" are no retries


BYS = [["indirector"], ["requester"], ["server"], ["route"], ["environment", "status"]]


@pytest.mark.parametrize("log", ["haproxy.log", "nginx_access.log"])
@pytest.mark.parametrize("by", BYS, ids="+".join)
def test_a_report_from_its_own_store_equals_the_full_store(log, by):
    full = ingest([SAMPLES / log], profile="auto").store.con
    collapse_routes(full)
    for view, slo in [(None, None), (None, 250_000), ("pareto", None), ("cache", None), ("slowest", None)]:
        keep = st.columns_read(by, view, slo)
        own = ingest([SAMPLES / log], profile="auto", columns=keep).store.con
        collapse_routes(own)
        # and provenance, and the flags that leave a copy to the view (schema.COPIES)
        assert set(stored_columns(own)) <= keep | set(schema.ALWAYS_STORED) | set(schema.STORED_ONLY)
        if view is None:
            a = st.stats_records(full, by=by, slo_us=slo, top=None)
            b = st.stats_records(own, by=by, slo_us=slo, top=None)
        else:
            a = st.named_records(full, view, by=by, top=None)
            b = st.named_records(own, view, by=by, top=None)
        assert b.columns == a.columns
        assert same_rows(b.rows, a.rows), (view, slo)
        assert same_rows([st.summary(own)], [st.summary(full)])


def same_rows(got: list[dict], want: list[dict]) -> bool:
    """Equal rows, but for the last bits of floats: a parallel float sum (a sum of squares,
    an estimate rounded to whole microseconds) may round apart between two runs."""
    if len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        for k in w:
            a, b = g[k], w[k]
            if isinstance(a, float) or isinstance(b, float):
                if not math.isclose(a, b, rel_tol=1e-12):
                    return False
            elif isinstance(a, int) and isinstance(b, int) and k.endswith("_us"):
                if abs(a - b) > 1:
                    return False
            elif a != b:
                return False
    return True


def test_stats_of_a_file_equals_stats_of_its_store(tmp_path):
    """The CLI's one-shot store against a store of every column, as a user runs both."""
    log = str(SAMPLES / "haproxy.log")
    db = str(tmp_path / "full.duckdb")
    subprocess.run(["logan", "ingest", log, "--db", db], check=True, capture_output=True, timeout=120)
    for args in (["--by", "server", "--slo", "100ms"], ["--by", "requester", "--status", "2xx"]):
        one = subprocess.run(["logan", "stats", log, "-o", "json", *args], capture_output=True, timeout=120)
        full = subprocess.run(
            ["logan", "stats", "--db", db, "-o", "json", *args], capture_output=True, timeout=120
        )
        assert one.returncode == full.returncode == 0, one.stderr + full.stderr
        assert same_rows(json.loads(one.stdout), json.loads(full.stdout))
        assert len(json.loads(one.stdout)) > 1


@needs_c
@pytest.mark.parametrize("seed", range(5))
def test_c_line_views_equal_numpys(monkeypatch, seed):
    """Lines cut in C and with numpy: the same views, byte for byte (CRLF, empty lines,
    lines of 12 bytes or less held inline, no newline at the end)."""
    rng = np.random.default_rng(seed)
    pieces = []
    for _ in range(2000):
        text = bytes(rng.choice(list(b"ab c\r\t\x00"), size=rng.integers(0, 30)))
        pieces.append(text + (b"\r\n" if rng.random() < 0.3 else b"\n"))
    block = b"".join(pieces) + (b"tail" if seed % 2 else b"")
    from logan.read import sources

    by_c = sources._line_views(memoryview(block)).copy()
    monkeypatch.setattr(sources, "_split", None)
    by_numpy = sources._line_views(memoryview(block))
    assert by_c.tobytes() == by_numpy.tobytes()
    assert len(by_c) == block.count(b"\n") + (seed % 2)


@needs_c
@pytest.mark.parametrize(
    ("fmt", "dialect", "line"),
    [
        # %>s is an int (-|-?\d+), %D too; a cast would read "+5", "0x10" or "1_000"
        ('%h "%r" %>s %D', "apache", '1.2.3.4 "GET / HTTP/1.1" {v} 5'),
        ('%h "%r" %>s %D', "apache", '1.2.3.4 "GET / HTTP/1.1" 200 {v}'),
        # HAProxy's %rc is signed ([+-]?\d+): "+1" is a redispatch, "-" is no value
        ('%ci "%r" %rc', "haproxy", '1.2.3.4 "GET / HTTP/1.1" {v}'),
        # nginx's $request_time is a decimal (-|-?\d+(?:\.\d+)?)
        ('$remote_addr "$request" $request_time', "nginx", '1.2.3.4 "GET / HTTP/1.1" {v}'),
    ],
)
def test_numbers_read_alike_whatever_reads_them(ingest_text, monkeypatch, fmt, dialect, line):
    values = ["5", "-5", "-", "+5", "0x10", "1_000", "007", "5.0", "5.", ".5", "-.5", "", "5e3", "99999"]
    text = "\n".join(line.format(v=v) for v in values) + "\n"
    s1, req1, rej1 = ingest_text(text, fmt, dialect=dialect)
    with reading_with(monkeypatch, "regex"):
        s2, req2, rej2 = ingest_text(text, fmt, dialect=dialect)
    pd.testing.assert_frame_equal(req1.drop(columns="source"), req2.drop(columns="source"))
    pd.testing.assert_frame_equal(rej1.drop(columns="source"), rej2.drop(columns="source"))
    assert 0 < s1.rows < len(values)


@needs_c
def test_numbers_handed_over_read_as_texts_do(ingest_text, monkeypatch):
    """Fields the C split hands over as BIGINT (timers, status, bytes) give the rows and
    rejects the regex gives from their texts, at the edges: "-", "-1", leading zeros, the
    most digits a value in microseconds may have (15 for milliseconds) and one more."""
    cf = compile_format(*resolve_format("haproxy:httplog", None))
    p = native.plan(cf, *rows.fields_read(cf, False, None), "UTC")
    timers, status, size = ["f6", "f7", "f8", "f9", "f10"], "f11", "f12"
    assert {*timers, status, size} <= p.numbers
    line = (
        "10.0.1.2:33317 [06/Feb/2009:12:14:14.655] http-in static/srv1 {t} {s} {b} - - ---- "
        '1/1/1/1/0 0/0 "GET /index.html HTTP/1.1"'
    )
    cases = [("10/0/30/69/109", "200", "2750")]
    cases += [(f"{v}/0/30/69/{v}", "200", "1") for v in ["-1", "007", "0", "9" * 15, "9" * 16, "-", "-2"]]
    cases += [("1/2/3/4/5", v, "1") for v in ["-", "-1", "0", "32767", "32768", "099"]]
    cases += [("1/2/3/4/5", "200", v) for v in ["-", "-1", "0", "9" * 18, "9" * 19]]
    text = "".join(line.format(t=t, s=st, b=b) + "\n" for t, st, b in cases)
    s1, req1, rej1 = ingest_text(text, "haproxy:httplog")
    with reading_with(monkeypatch, "regex"):
        s2, req2, rej2 = ingest_text(text, "haproxy:httplog")
    pd.testing.assert_frame_equal(req1.drop(columns="source"), req2.drop(columns="source"))
    pd.testing.assert_frame_equal(rej1.drop(columns="source"), rej2.drop(columns="source"))
    durations = req1.set_index("line_no")["duration_us"]
    assert durations[3] == 7000 and durations[5] == 999_999_999_999_999_000  # "007", 15 nines
    assert pd.isna(durations[2])  # "-1": never reached
    assert 0 < s1.rows < len(cases)


@needs_c
@pytest.mark.parametrize(
    "pattern",
    ["%d/%b/%Y:%H:%M:%S.%g", "[%d/%b/%Y:%H:%M:%S %z]", "%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%d %H:%M:%S.%f"],
)
def test_times_read_in_c_are_duckdbs(pattern):
    """_split.parse_time reads what a pattern writes to the microsecond DuckDB's strptime
    reads, offsets applied; it refuses every text DuckDB refuses (31 April, 24:00, 29
    February of 2023) and a few it would read otherwise (no leading zero)."""
    texts = native._time_probes(pattern, 3000)
    texts += [t.replace("/0", "/") for t in texts[:200]] + [t.lower() for t in texts[:50]]
    mine = [native._split.parse_time(t.encode(), pattern.encode()) for t in texts]
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    theirs = con.execute(
        "SELECT list(epoch_us(CAST(try_strptime(t, ?) AS TIMESTAMP)) ORDER BY i) "
        "FROM (SELECT unnest(?) AS t, unnest(?) AS i)",
        [pattern.strip("[]"), [t.strip("[]") for t in texts], list(range(len(texts)))],
    ).fetchall()[0][0]
    read = [(t, m, d) for t, m, d in zip(texts, mine, theirs, strict=True) if m is not None]
    assert [m for _, m, _ in read] == [d for _, _, d in read]
    assert len(read) > len(texts) / 2  # most texts are times
    assert all(m is None for t, m, d in zip(texts, mine, theirs, strict=True) if d is None)


@needs_c
def test_times_handed_over_read_as_texts_do(ingest_text, monkeypatch):
    """Apache's [%t] read in C gives the rows and rejects the regex gives, on days that are
    and are not (31 April), leap days and offsets; a pattern with a directive the C reader
    lacks (%a) is left to SQL."""
    stamps = ["29/Feb/2024:23:59:59 +0100", "29/Feb/2023:00:00:00 +0000", "31/Apr/2023:12:00:00 -0700",
              "01/Jan/1970:00:00:00 +1400", "31/Dec/9999:23:59:59 -1200", "1/Jan/2024:00:00:00 +0000",
              "10/Oct/2000:13:55:36 -0700", "10/Oct/2000:24:00:00 -0700"]  # fmt: skip
    text = "".join(f'1.2.3.4 - - [{t}] "GET / HTTP/1.1" 200 5 7\n' for t in stamps)
    fmt = '%h %l %u %t "%r" %>s %b %D'
    cf = compile_format(*resolve_format(fmt, "apache"))
    assert "f3" in native.plan(cf, *rows.fields_read(cf, False, None), "UTC").numbers
    s1, req1, rej1 = ingest_text(text, fmt, dialect="apache")
    with reading_with(monkeypatch, "regex"):
        s2, req2, rej2 = ingest_text(text, fmt, dialect="apache")
    pd.testing.assert_frame_equal(req1.drop(columns="source"), req2.drop(columns="source"))
    pd.testing.assert_frame_equal(rej1.drop(columns="source"), rej2.drop(columns="source"))
    assert req1["ts_start"].iloc[0] == pd.Timestamp("2024-02-29 22:59:59")
    weekday = compile_format(*resolve_format("%h %{%a %d/%b/%Y:%H:%M:%S}t %>s", "apache"))
    assert not native.time_patterns(weekday, {f.alias for f in weekday.fields}, "UTC")


@needs_c
def test_syslog_headers_measured_in_c_are_re2s(tmp_path):
    """The RFC 3164 headers _split.c measures have the length RE2 gives them with HAProxy's
    prefixes, on 20,000 lines of real and crafted headers and near misses; lines that do
    not start with a capital letter are left to RE2; the lines of a batch come out in
    their order whichever measured them."""
    prefix = prefix_regex(dialects()["haproxy"])
    assert native.rfc3164_in_c(prefix)
    probes = native._header_probes(20_000)
    probes += ["<134>" + p for p in probes[:500]] + ["2009-02-06T12:14:14+00:00 lb1 haproxy[1]: x"]
    path = tmp_path / "headers.log"
    path.write_bytes("\n".join(probes).encode())
    batch = next(read_batches(expand([str(path)])[0]))
    lines = batch.table.column("line").combine_chunks()
    line_no = np.arange(1, len(probes) + 1, dtype=np.int64)
    got = native.header_lengths(duckdb.connect(), compile_format(*resolve_format("haproxy:httplog", None)),
                                lines, line_no)  # fmt: skip
    con = duckdb.connect()
    re2 = con.execute(
        "SELECT list(strlen(regexp_extract(t, ?)) ORDER BY i) FROM (SELECT unnest(?) AS t, unnest(?) AS i)",
        ["^" + prefix, probes, list(range(len(probes)))],
    ).fetchall()[0][0]
    assert got.tolist() == re2
    assert sum(1 for x in re2 if x) > 1500  # many real headers among them


@needs_c
@pytest.mark.parametrize(
    "sample", ["puppet_access.log", "nginx_access.log", "varnish_access.log", "haproxy.log"]
)
@pytest.mark.parametrize("keep", ["all", "report"])
def test_the_c_split_takes_every_request_of_the_samples(sample, keep):
    """The plan an ingest makes takes every request line of logan's own samples, whatever
    their numbers and times look like: a check that refused every decimal (nginx's
    $request_time) once left every line to the regex, with the same rows, 3.5x slower."""
    path = SAMPLES / sample
    store = open_store(None)
    batch = next(read_batches(expand([str(path)])[0]))
    cf, _ = detect.detect_format(store, batch.table, None)
    columns = None if keep == "all" else st.columns_read(["indirector"], None, None)
    plan = native.plan(cf, *rows.fields_read(cf, True, columns), "UTC")
    taken = native.read_batch(store.con.cursor(), cf, plan, batch).raw.num_rows
    summary = ingest([path], profile="none")
    assert batch.lines == summary.lines  # one batch: the whole sample
    assert taken == summary.rows


@pytest.mark.parametrize("reader", ["native", "sql"])
def test_raw_texts_that_type_alike_classify_once(ingest_text, monkeypatch, reader):
    """$request_uri gives path and query: "/a/1?x=1" and "/a/1?x=2" are one path, one
    classification key; every line is one row, classified alike."""
    text = "1.2.3.4 /a/1?x=1 200\n1.2.3.4 /a/1?x=2 200\n1.2.3.4 /a/1 200\n1.2.3.4 /b 200\n"
    with reading_with(monkeypatch, reader):
        s, req, _ = ingest_text(text, "$remote_addr $request_uri $status", dialect="nginx", profile="generic")
    assert s.rows == 4 and len(req) == 4
    assert req["path"].tolist() == ["/a/1", "/a/1", "/a/1", "/b"]
    assert req["query"].tolist()[:2] == ["x=1", "x=2"]
    assert req["route"].tolist() == ["/a/{id}", "/a/{id}", "/a/{id}", "/b"]


# Request lines whose query strings the classification keys drop (native.without_query):
# plain and absolute targets, a '?' in an absolute URI's host (part of the host, as
# logan/read/rows.py reads it), empty and bare queries, lines that are not three words,
# short texts (inline in their view) and long ones (a view into the block).
QUERY_LINES = [
    "GET /a?x=1 HTTP/1.1",
    "GET /a?x=2 HTTP/1.1",
    "GET /a HTTP/1.1",
    "GET /items/42?session=" + "s" * 200 + " HTTP/1.1",
    "GET /items/43?session=" + "t" * 200 + " HTTP/1.1",
    "GET http://h.example/b/c?y=1 HTTP/1.1",
    "GET http://h?x/b?y=1 HTTP/1.1",
    "GET http://h?x HTTP/1.1",
    "GET /? HTTP/1.1",
    "GET ?x HTTP/1.1",
    "G ?x HTTP/",
    "GET /a?x=1 FTP/1",
    "GET a?u=http://x/y?z HTTP/1.1",
    "GET /a?b?c HTTP/1.1",
    "-",
    "GET /a?x=1",
    "GET /a?x=1 HTTP/1.1 more",
    "GET  /a?x=1 HTTP/1.1",
    "G?T /a?b HTTP/1.1",
    "POST /login.php?next=/admin HTTP/1.0",
]


def test_keys_without_query_read_as_whole_lines_do(ingest_text, monkeypatch):
    """The generic profile reads no query: the C split's reader numbers the request lines
    without it (a key per path), and cuts each line's query, whether it is its parts joined,
    and (a key a line: the rows are classified where they are) the route template and
    indirector of its path. Every column equals the SQL split's, which keys on whole lines
    and classifies in SQL, and the regex's, which compares each line with its parts."""
    text = "".join(
        f'10.0.0.{i} - - [10/Oct/2000:13:55:{i:02d} +0000] "{r}" 200 {i}\n' for i, r in enumerate(QUERY_LINES)
    )
    plans, made = [], []
    real = native.read_batch

    def spy(con, cf, p, batch, **kw):  # noqa: ANN001, ANN003, ANN202
        plans.append(p)
        got = real(con, cf, p, batch, **kw)
        made.append(native.ROW_TEMPLATE in got.raw.column_names)
        return got

    found, flags = {}, {}
    for reader in ("native", "sql", "regex"):
        with reading_with(monkeypatch, reader):
            monkeypatch.setattr(native, "read_batch", spy)
            s, req, rej = ingest_text(text, "common", profile="generic")
        found[reader] = req.drop(columns=["source", "ingest_id"], errors="ignore")
        flags[reader] = s.store.sql("SELECT request_rebuilt FROM requests_data ORDER BY line_no")
        assert len(req) + len(rej) == len(QUERY_LINES)
    # a key a line: classified row by row, from the templates the reader made in C
    assert plans and all(p.cut == ("request",) and p.row_query and p.row_templates for p in plans)
    assert made and all(made)
    assert found["native"].equals(found["sql"]) and found["native"].equals(found["regex"])
    # The line is left to the view to rebuild exactly when its parts joined are the line
    # (per key for the split's readers, per row for the regex's): joined here in Python.
    parts = found["native"][["method", "path", "query", "protocol"]].astype(object)
    parts = parts.where(parts.notna(), None).itertuples(index=False)
    joined = [
        f"{m} {p}{'' if q is None else '?' + q} {v}" if None not in (m, p, v) else None
        for m, p, q, v in parts
    ]
    lines = [QUERY_LINES[n - 1] for n in found["native"]["line_no"]]
    expected = [j == line for j, line in zip(joined, lines, strict=True)]
    assert sum(expected) >= 10 and not all(expected)
    for reader in flags:
        assert flags[reader]["request_rebuilt"].tolist() == expected, reader
    got = found["native"].set_index("request")
    assert got.loc["GET /items/42?session=" + "s" * 200 + " HTTP/1.1", "query"] == "session=" + "s" * 200
    assert got.loc["GET http://h?x/b?y=1 HTTP/1.1", ["vhost", "path", "query"]].tolist() == [
        "h?x",
        "/b",
        "y=1",
    ]


def test_keys_of_a_request_line_and_a_vhost_read_as_whole_lines_do(ingest_text, monkeypatch):
    """A format with a vhost keys its classification on two fields: the C split's reader
    numbers each line's pair (the request line without its query, the vhost). The same
    request line under two vhosts is two keys, two query strings of one path under one
    vhost one key; every column equals the SQL split's, which keys on whole texts."""
    hosts = ["a.example", "b.example", "a.example", "-"]
    text = "".join(
        f'{hosts[i % 4]} 10.0.0.{i} - - [10/Oct/2000:13:55:{i % 60:02d} +0000] "{r}" 200 {i}\n'
        for i, r in enumerate(QUERY_LINES * 4)
    )
    plans = []
    real = native.read_batch

    def spy(con, cf, p, batch, **kw):  # noqa: ANN001, ANN003, ANN202
        plans.append(p)
        got = real(con, cf, p, batch, **kw)
        keys.append(got.keys.to_pylist())
        return got

    found, keys, flags = {}, [], {}
    for reader in ("native", "sql", "regex"):
        with reading_with(monkeypatch, reader):
            monkeypatch.setattr(native, "read_batch", spy)
            s, req, rej = ingest_text(text, '%v %h %l %u %t "%r" %>s %b', profile="generic")
        found[reader] = req.drop(columns=["source", "ingest_id"], errors="ignore")
        flags[reader] = s.store.sql("SELECT request_rebuilt FROM requests_data ORDER BY line_no")
        assert len(req) + len(rej) == 4 * len(QUERY_LINES)
    assert plans and all(p.cut == ("request", None) or p.cut == (None, "request") for p in plans)
    assert found["native"].equals(found["sql"]) and found["native"].equals(found["regex"])
    # per key (the splits') as per row (the regex's): the line left to the view to rebuild
    assert flags["native"].equals(flags["regex"]) and flags["sql"].equals(flags["regex"])
    assert 0 < flags["regex"]["request_rebuilt"].sum() < len(flags["regex"])
    # the keys: each (request line without its query, vhost) once, counted in Python
    pairs = {(native.without_query(pa.array([r], pa.string_view()), True)[0].as_py(), h)
             for i, r in enumerate(QUERY_LINES * 4) for h in [hosts[i % 4]]}  # fmt: skip
    (batch_keys,) = keys
    cut_of = dict(zip(plans[0].keyed, plans[0].cut, strict=True))
    request_f = next(f for f, c in cut_of.items() if c == "request")
    vhost_f = next(f for f, c in cut_of.items() if c is None)
    assert sorted((k[request_f], k[vhost_f]) for k in batch_keys) == sorted(pairs)
    assert sorted(k["__kid"] for k in batch_keys) == list(range(len(pairs)))


@needs_c
def test_number_keys_numbers_each_pair_once():
    """native.number_keys over two fields: lines get the same number exactly when both of
    their texts are the same, and each distinct pair is handed over once, with its texts."""
    import random

    rng = random.Random(3)
    words = ["", "a", "x" * 12, "y" * 13, *QUERY_LINES]
    a = [rng.choice(words) for _ in range(20_000)]
    b = [rng.choice(["h1", "h2", "a-long-virtual-host.example.org", ""]) for _ in range(20_000)]
    ids, distinct = native.number_keys([pa.array(a, pa.string_view()), pa.array(b, pa.string_view())])
    ids = ids.to_pylist()
    got = list(zip(distinct[0].to_pylist(), distinct[1].to_pylist(), strict=True))
    assert sorted(got) == sorted(set(zip(a, b, strict=True)))  # each pair once
    assert all(got[k] == (x, y) for k, x, y in zip(ids, a, b, strict=True))  # each line's own


@needs_c
@pytest.mark.parametrize("request_line", [True, False])
def test_without_query_cuts_where_the_path_ends(request_line):
    """native.without_query against the same rule in Python, on every line above and on
    targets alone: a request line loses the query of its second word, a target its tail."""
    texts = (
        QUERY_LINES if request_line else [t.split(" ")[1] if t.count(" ") >= 1 else t for t in QUERY_LINES]
    )

    def query_at(target: str) -> int:
        start = 0
        if "://" in target and not target.startswith("/"):
            start = target.find("/", target.index("://") + 3)
            if start < 0:
                return -1
        return target.find("?", start)

    def cut(target: str) -> str:
        q = query_at(target)
        return target if q < 0 else target[:q]

    def joined_again(text: str) -> bool:  # rows.py's parts of the line give it back
        words = text.split(" ")
        if len(words) != 3 or not words[2].startswith("HTTP/"):
            return False
        return not ("://" in words[1] and not words[1].startswith("/"))

    def query(text: str) -> str | None:  # rows.py's query of a whole request line
        words = text.split(" ")
        if len(words) != 3 or not words[2].startswith("HTTP/") or query_at(words[1]) < 0:
            return None
        return words[1][query_at(words[1]) + 1 :]

    def expected(text: str) -> str:
        if not request_line:
            return cut(text)
        words = text.split(" ")
        return text if len(words) != 3 else " ".join([words[0], cut(words[1]), words[2]])

    got = native.without_query(pa.array(texts, pa.string_view()), request_line).to_pylist()
    assert got == [expected(t) for t in texts]
    assert got[0] == ("GET /a HTTP/1.1" if request_line else "/a")
    if request_line:  # the rows' queries, cut in the same pass, with NULL lines among them
        lines = pa.array([*texts, None, *texts], pa.string_view()).slice(3)
        cut_too, queries, rebuilt = native.request_without_query(lines)
        assert cut_too.to_pylist() == native.without_query(lines, True).to_pylist()
        assert queries.to_pylist() == [None if t is None else query(t) for t in lines.to_pylist()]
        assert queries.null_count >= 10
        assert rebuilt.to_pylist() == [t is not None and joined_again(t) for t in lines.to_pylist()]
        assert 0 < sum(rebuilt.to_pylist()) < len(lines) - 5


def request_target(text: str | None) -> str | None:
    """The target of a request line as rows.py reads it, written out in Python: the second
    of exactly three words when the third starts with HTTP/, an absolute URI's after its
    host ("/" when nothing follows it); None for any other line."""
    words = (text or "").split(" ")
    if len(words) != 3 or not words[2].startswith("HTTP/"):
        return None
    target = words[1]
    if "://" in target and not target.startswith("/"):
        rest = target[target.index("://") + 3 :]
        target = rest[rest.find("/") :] if "/" in rest else "/"
    return target


@needs_c
def test_templates_made_in_the_reader_are_the_sql_ones():
    """native.request_templates: each request line's path cut in C as rows.py derives it
    (written out here in Python), then its route template and indirector, against the
    SQL of both (classify.route_template_sql, classification_exprs) over that path."""
    from logan.read import classify

    def path(text: str | None) -> str | None:
        target = request_target(text)
        return None if target is None else target.split("?")[0]

    lines = [
        *QUERY_LINES,
        None,
        "GET http://h HTTP/1.1",
        "GET /img/ab12cd34.png?v=1 HTTP/1.1",
        "GET /a/7/ HTTP/1.0",
    ]
    got_t, got_i = native.request_templates(pa.array(lines, pa.string_view()), classify.templates_of_paths)
    paths = [path(t) for t in lines]
    con = duckdb.connect()
    want = con.execute(
        f"SELECT {classify.route_template_sql('p')} AS t FROM (SELECT unnest(?::VARCHAR[]) AS p)", [paths]
    ).fetchnumpy()["t"]
    assert got_t.to_pylist() == [None if p is None else t for p, t in zip(paths, want, strict=True)]
    ind = classify.classification_exprs("generic")["indirector"]
    want_i = con.execute(f"SELECT {ind} FROM (SELECT unnest(?::VARCHAR[]) AS path)", [paths]).fetchall()
    assert got_i.to_pylist() == [i for (i,) in want_i]
    assert sum(p is None for p in paths) >= 5 and "/img/{file}.png" in got_t.to_pylist()


@needs_c
@pytest.mark.parametrize("seed", [1, 2])
def test_c_dictionary_encoding_is_pyarrows(seed):
    """native.dictionary_encode against pyarrow's Array.dictionary_encode: the same numbers
    and the same distinct texts in the same order, for texts short enough to sit in their
    view and long ones, spread over many data buffers, and after without_query (whose cut
    texts sit in a buffer of their own)."""
    import random

    rng = random.Random(seed)
    words = ["", "a", "x" * 12, "y" * 13, *QUERY_LINES]
    words += [f"GET /r/{i}{'/z' * rng.randint(0, 60)}?q={rng.random()} HTTP/1.1" for i in range(3000)]
    texts = pa.array([rng.choice(words) for _ in range(60_000)], pa.string_view())
    assert len(texts.buffers()) > 10  # pyarrow spreads long texts over many buffers
    for arr in (texts, native.without_query(texts, True)):
        ids, distinct = native.dictionary_encode(arr)
        expected = arr.dictionary_encode()
        assert ids.to_pylist() == expected.indices.to_pylist()
        assert distinct.to_pylist() == expected.dictionary.to_pylist()
        assert len(distinct) == len(set(arr.to_pylist()))


@needs_c
@pytest.mark.parametrize("n", [0, 1, 2, 7, 8, 9, 15, 16, 17, 33])
def test_c_dictionary_encoding_of_fewer_texts_than_it_reads_ahead_is_pyarrows(n):
    """The C numbering hashes texts ahead of the one it numbers (_split.c's AHEAD, 16):
    arrays shorter than that, or just longer, are numbered as pyarrow numbers them."""
    words = ["GET /a HTTP/1.1", "x", "GET /b/" + "c" * 20 + " HTTP/1.1", "x"]
    texts = pa.array([words[(i * i) % 4] for i in range(n)], pa.string_view())
    ids, distinct = native.dictionary_encode(texts)
    expected = texts.dictionary_encode()
    assert ids.to_pylist() == expected.indices.to_pylist()
    assert distinct.to_pylist() == expected.dictionary.to_pylist()


@needs_c
def test_an_ingest_does_not_load_pyarrow_compute(tmp_path):
    """Numbering the keys is done without pyarrow.compute, whose import took 0.05-0.15 s of
    every ingest (a re-run of a few appended lines waits for it)."""
    import sys

    code = (
        "import sys, logan\n"
        "from logan.read.ingest import ingest\n"
        f"st = logan.open({str(tmp_path / 's.duckdb')!r})\n"
        f"s = ingest([{str(SAMPLES / 'puppet_access.log')!r}], store=st)\n"
        "print(s.rows, 'pyarrow.compute' in sys.modules)"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    out = ran.stdout.split()
    assert int(out[0]) > 0 and out[1] == "False"


def test_keys_keep_their_query_when_classification_reads_it(tmp_path):
    """Puppet's environment is in the query, and a rule may read it: then the keys are whole
    request lines; the generic profile's are cut, and so are a $request_uri target's."""
    from logan.read.ingest import _classification

    rules = tmp_path / "rules.toml"
    rules.write_text('[[rules]]\nmatch = "debug=1"\nfield = "query"\nindirector = "debug"\n')
    cf = compile_format(*resolve_format("common", None))
    request = rows.key_fields(cf, _classification("generic", None, (), "__c"))
    assert len(request) == 1
    assert rows.query_cut(cf, _classification("generic", None, (), "__c"), request[0]) == "request"
    assert rows.query_cut(cf, _classification("puppet", None, (), "__c"), request[0]) is None
    assert rows.query_cut(cf, _classification("generic", rules, (), "__c"), request[0]) is None
    target = compile_format(*resolve_format("$remote_addr $request_uri $status", "nginx"))
    [uri] = rows.key_fields(target, _classification("generic", None, (), "__c"))
    assert rows.query_cut(target, _classification("generic", None, (), "__c"), uri) == "target"


# Request lines on the edges of the Puppet profile's parse (classify.PUPPET_PATH and the
# query's environment): each URL form, prefixes that are almost one, indirections that are
# not lowercase words, keys with '\r' and '\n' (RE2's '.' takes the one, not the other),
# environment parameters at the start, after another, empty, repeated, or a suffix of
# another's name; absolute URIs, lines that are not "A B HTTP/...", long lines.
PUPPET_LINES = [
    "GET /production/catalog/node1.example.com?facts_format=pson&environment=dev HTTP/1.1",
    "GET /puppet/v3/catalog/n1?environment=prod&x=1 HTTP/1.1",
    "GET /puppet/v3/catalog/n1?x=1&environment=prod HTTP/1.1",
    "GET /puppet/v3/node/x?xenvironment=1&environment=2 HTTP/1.1",
    "GET /puppet/v3/node/x?xenvironment=1 HTTP/1.1",
    "GET /puppet/v3/file_metadatas/modules/a?environment=&links=follow HTTP/1.1",
    "GET /puppet/v3/file_content/modules/a?a=1&&environment=e2&environment=e3 HTTP/1.1",
    "GET /puppet/v3/Catalog/n1 HTTP/1.1",
    "GET /puppet/v3 HTTP/1.1",
    "GET /puppet/v3/ HTTP/1.1",
    "GET /puppet/v4/catalog/n HTTP/1.1",
    "PUT /puppet-ca/v1/certificate_request/n1 HTTP/1.1",
    "GET /puppet-ca/v1/certificate/ca HTTP/1.1",
    "GET /production/file_metadata/modules/ntp/ntp.conf?links=manage HTTP/1.0",
    "GET /production/catalog/ HTTP/1.1",
    "GET /production/status HTTP/1.1",
    "GET /Prod_2/report/n%20x HTTP/1.1",
    "GET /pro-d/catalog/n HTTP/1.1",
    "GET /production/cat4log/n HTTP/1.1",
    "GET /production/catalog/a\rb HTTP/1.1",
    "GET /production/catalog/a\nb HTTP/1.1",
    "GET /é/catalog/ü HTTP/1.1",
    "GET http://master:8140/production/catalog/n?environment=x HTTP/1.1",
    "GET http://master:8140 HTTP/1.1",
    "GET http://m?environment=x/puppet/v3/node/n HTTP/1.1",
    "GET /production/catalog/n FTP/1",
    "GET /production/catalog/n",
    "-",
    "GET /puppet/v3/catalog/" + "n" * 300 + "?environment=" + "e" * 200 + " HTTP/1.1",
    *QUERY_LINES,
]


def parsed_as_sql(lines: list[str | None]) -> list[tuple]:
    """(prefix, indirection, key, environment) of each request line by the SQL the profile
    runs without the reader's parts (classify.puppet_parse_sql, _QUERY_ENV), over the path
    and query derived here in Python as rows.py derives them."""
    from logan.read import classify

    paths = [None if t is None else t.split("?")[0] for t in map(request_target, lines)]
    queries = [t.split("?", 1)[1] if t and "?" in t else None for t in map(request_target, lines)]
    got = (
        duckdb.connect()
        .execute(
            f"SELECT {classify.puppet_parse_sql('path')} AS s, {classify._QUERY_ENV} AS e"
            " FROM (SELECT unnest(?::VARCHAR[]) AS path, unnest(?::VARCHAR[]) AS query)",
            [paths, queries],
        )
        .fetchall()
    )
    return [(None, None, None, e) if s is None else (s["prefix"], s["ind"], s["key"], e) for s, e in got]


@needs_c
def test_puppet_parts_made_in_the_reader_are_the_sql_ones():
    """native.request_parts(puppet=True): the Puppet profile's parse of each request line in C, against
    the regex and the query's split in SQL, on the edges above and on lines made at random
    from the pieces a Puppet URL is made of."""
    rnd = random.Random(7)
    heads = ["/puppet/v3", "/puppet-ca/v1", "/production", "/Prod_1", "/puppet", "", "/", "http://h:8140"]
    mids = ["/catalog", "/file_metadatas", "/Node", "/node/", "/_", "", "/v3"]
    tails = ["/n1.example.com", "/", "/a/b", "", "?environment=e", "?x=1&environment=", "&environment=q",
             "?environment=a&environment=b", "/k?x=environment=1", "/é", "\r"]  # fmt: skip
    targets = [f"{rnd.choice(heads)}{rnd.choice(mids)}{''.join(rnd.choices(tails, k=rnd.randint(0, 3)))}"
               for _ in range(3000)]  # fmt: skip
    made = [f"GET {t} HTTP/1.1" for t in targets]
    lines = [*PUPPET_LINES, None, *made]
    parts = native.request_parts(pa.array(lines, pa.string_view()), puppet=True)[6:]
    got = list(zip(*(p.to_pylist() for p in parts), strict=True))
    want = parsed_as_sql(lines)
    assert got == want
    # the edges are reached: every URL form, environments found and not, non-paths
    assert {g[0] for g in got} >= {"puppet/v3", "puppet-ca/v1", "production", "", None}
    assert sum(g[3] is not None for g in got) >= 300 and sum(g[1] == "" for g in got) >= 300
    assert got[PUPPET_LINES.index("GET /puppet/v3/file_content/modules/a?a=1&&environment=e2&environment=e3"
                                  " HTTP/1.1")][3] == "e2"  # fmt: skip


def test_puppet_keys_parsed_in_the_reader_classify_as_sql_does(ingest_text, monkeypatch):
    """The Puppet profile's keys are whole request lines, taken apart and parsed in the
    reader (native.Plan.request_of, puppet): every column of every row equals the SQL
    split's, which classifies its keys by the regex, and the regex reader's."""
    # each line thrice: keys a third of the lines, so the batch is classified by its keys
    # (a batch of more keys than half its lines is classified row by row, by SQL)
    lines = [r for r in PUPPET_LINES if "\n" not in r] * 3
    text = "".join(
        f'10.0.0.{i % 250} - - [10/Oct/2000:13:55:{i % 60:02d} +0000] "{r}" 200 {i}\n'
        for i, r in enumerate(lines)
    )
    plans, keys = [], []
    real = native.read_batch

    def spy(con, cf, p, batch, **kw):  # noqa: ANN001, ANN003, ANN202
        plans.append(p)
        got = real(con, cf, p, batch, **kw)
        keys.append(got.keys)
        return got

    found = {}
    for reader in ("native", "sql", "regex"):
        with reading_with(monkeypatch, reader):
            monkeypatch.setattr(native, "read_batch", spy)
            s, req, rej = ingest_text(text, "common", profile="puppet")
        if reader == "native" and native.available():  # classified by its keys, not row by row
            assert keys and all(not native.inline(k.num_rows, len(lines)) for k in keys)
        found[reader] = req.drop(columns=["source", "ingest_id"], errors="ignore")
        assert len(req) + len(rej) == text.count("\n")
    if native.available():
        assert plans and all(p.request_of is not None and p.puppet for p in plans)
        made = {*native.PUPPET_PARTS, *native.KEY_PARTS, native.KEY_JOINED}
        assert keys and all(made <= set(k.column_names) for k in keys)
    assert found["native"].equals(found["sql"]) and found["native"].equals(found["regex"])
    got = found["native"].drop_duplicates("request").set_index("request")
    line = "GET /puppet/v3/file_content/modules/a?a=1&&environment=e2&environment=e3 HTTP/1.1"
    assert got.loc[line, ["environment", "indirector", "resource"]].tolist() == [
        "e2",
        "file_content",
        "modules/a",
    ]
    assert got.loc[
        "GET /production/catalog/node1.example.com?facts_format=pson&environment=dev HTTP/1.1",
        ["environment", "requester", "route"],
    ].tolist() == [  # fmt: skip
        "production",
        "node1.example.com",
        "/{environment}/catalog/{node}",
    ]


@needs_c
def test_request_parts_made_in_the_reader_are_rows_pys():
    """native.request_parts: method, path, query, protocol and absolute URI's host of each
    request line, and whether it is those joined, against rows.py's own SQL over the same
    lines (the projection an ingest runs when the reader has not taken them apart)."""
    from logan.read.compile import compile_format
    from logan.read.dialects import resolve_format

    lines = [*PUPPET_LINES, *QUERY_LINES, None, "GET http://h HTTP/1.1", "GET http:///x?y HTTP/1.1",
             "GET https://h.example:8443/a/b?c=1 HTTP/2.0", "GET /a?x=1 HTTP/", "GET * HTTP/1.1"]  # fmt: skip
    with_puppet = native.request_parts(pa.array(lines, pa.string_view()), puppet=True)
    parts = native.request_parts(pa.array(lines, pa.string_view()))
    assert [p.to_pylist() for p in parts] == [p.to_pylist() for p in with_puppet[:6]]
    got = list(zip(*(p.to_pylist() for p in parts), strict=True))
    cf = compile_format(*resolve_format("%r", "apache"))
    typed = "SELECT 0 AS line_no, '' AS line, f0 AS request, true AS __ok FROM (SELECT unnest($lines) AS f0)"
    derived = rows.derived_sql(cf, typed)
    sql = f"SELECT method, path, query, protocol, vhost, {rows.REBUILT_TEST} FROM ({derived})"
    params = {"lines": lines, "ingest_id": 1, "source": "s", "dialect": "apache", "format": "%r"}
    want = duckdb.connect().execute(sql, params).fetchall()
    assert got == [tuple(w) for w in want]
    assert sum(g[0] is None for g in got) >= 8 and sum(g[4] is not None for g in got) >= 5
    assert 10 <= sum(g[5] for g in got) < len(lines) - 10
