"""HAProxy lines read the same whichever path takes them.

The split path cuts the syslog prefix off and splits the rest; the exact path runs one regex
(prefix included) per line; after a batch's split, the few lines left over go through the
exact path's shortcuts. Each test reads the same input twice, once as the ingest does and
once with the split path switched off (every line through the regex), and wants the same
tables; the split-path tests also check that the split path really took the lines it can.
"""

from __future__ import annotations

import importlib

import duckdb
import pandas as pd
import pyarrow as pa
import pytest
from conftest import reading_with

from logan.read import native
from logan.read.compile import compile_format
from logan.read.dialects import resolve_format
from logan.read.ingest import ingest
from logan.read.sources import Batch

INGEST_MODULE = importlib.import_module("logan.read.ingest")

BODY = (
    "10.0.1.2:33317 [06/Feb/2009:12:14:14.655] http-in static/srv1 10/0/30/69/109 200 2750 - - ---- "
    '1/1/1/1/0 0/0 "GET /index.html HTTP/1.1"'
)
# Header captures are optional fields: only the regex reads them.
CAPTURES = BODY.replace('0/0 "GET', '0/0 {1wt.eu} {} "GET')
EVENT = "Server be/app3 is DOWN, reason: Layer4 timeout, check duration: 2001ms."
BODIES = [BODY, CAPTURES, EVENT, "no request at all", ""]

# Headers the dialect knows (parsers/haproxy.toml [prefixes]).
VALID = [
    "Feb  6 12:14:14 localhost haproxy[14389]: ",
    "Feb 16 12:14:14 10.0.0.1 haproxy[14389]: ",
    "Feb  6 12:14:14 lb1 haproxy: ",
    "Feb  6 12:14:14 haproxy[14389]: ",
    "<134>Feb  6 12:14:14 haproxy[14389]: ",
    "<134>1 2009-02-06T12:14:14.812+00:00 lb1 haproxy 14389 - - ",
    '<134>1 2009-02-06T12:14:14Z lb1 haproxy 14389 - [meta seq="1" x="a\\"b\\]"] ',
    "2009-02-06T12:14:14.812345+01:00 lb1 haproxy[14389]: ",
    "2009-02-06T12:14:14+0000 lb1 haproxy[14389]: ",
    "2009-02-06T12:14:14 lb1 haproxy[14389]: ",
    "<134>2009-02-06T12:14:14Z haproxy[1]: ",
    "<134>",
    "",
]
# Headers whose end is not their first ": " (a host may end with ":"; without a host, the
# tag may be followed by what reads as another tag).
LONGER = ["Feb  6 12:14:14 lb1: haproxy[1]: ", "Feb  6 12:14:14 haproxy[1]: x[2]: "]
# Text before the message that is no header.
NEAR_MISSES = [
    "xyz: ",
    "Feb  6 12:14:14 lb1 ha:proxy[1]: ",
    "Feb  6 12:14:14 a b haproxy[1]: ",
    "Feb 6 12:14:14 lb1 haproxy[1]: ",
    "feb  6 12:14:14 lb1 haproxy[1]: ",
    "Feb  6 12:14:14 lb\t1 haproxy[1]: ",
    "Feb  6 12:14:14 lb1 haproxy[1x]: ",
    "Feb  6 12:14:14 lb1 haproxy[1]:",
    "Feb  6 12:14:14 lb1 haproxy[1]:  ",
    "Feb  6 12:14:14 lb1 haproxy[1]: Feb  6 12:14:14 lb1 haproxy[1]: ",
    "<1234>",  # no header: the line reads as a request from client "<1234>10.0.1.2"
    "<134>1 2009-02-06T12:14:14Z lb1 haproxy 14389 - ",
    '"quoted": ',
    "2009-02-06 12:14:14 lb1 haproxy[1]: ",
]


TABLES = ("requests", "rejects", "events")


def tables(path, fmt: str, **kw) -> tuple:  # noqa: ANN001
    s = ingest([str(path)], format=fmt, profile="none", **kw)
    con = s.store.con
    return s, {t: con.execute(f"SELECT * FROM {t} ORDER BY line_no").df() for t in TABLES}


def read_both_ways(tmp_path, monkeypatch, lines: list[str], fmt: str = "haproxy:httplog", **kw) -> tuple:  # noqa: ANN001
    """Ingest `lines` as usual, then with the SQL split and with the regex alone taking
    them first: all must give the same tables."""
    path = tmp_path / "input.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    s1, t1 = tables(path, fmt, **kw)
    for reader in ("sql", "regex"):
        with reading_with(monkeypatch, reader):
            s2, t2 = tables(path, fmt, **kw)
        for name in t1:
            pd.testing.assert_frame_equal(t1[name], t2[name], obj=f"{name} ({reader})")
        assert s1.rejects_by_reason == s2.rejects_by_reason
        assert (s1.lines, s1.rows, s1.rejects, s1.events) == (s2.lines, s2.rows, s2.rejects, s2.events)
    assert s1.rows + s1.rejects + s1.events == len(lines)
    return s1, t1


def split_path_takes(lines: list[str], fmt: str = "haproxy:httplog") -> set[int]:
    """Line numbers (1-based) the split path reads, before any type check: the same for
    the SQL split and the C one."""
    d, string, label = resolve_format(fmt, "haproxy")
    cf = compile_format(d, string, label)
    con = duckdb.connect()
    table = pa.table({"line_no": list(range(1, len(lines) + 1)), "line": pa.array(lines, pa.string_view())})
    con.register("t", table)
    by_sql = {r[0] for r in con.execute(f"SELECT line_no FROM ({cf.fast_raw_sql('t')})").fetchall()}
    plan = native.plan(cf)
    if plan is not None:
        batch = Batch(table, 1, len(lines), 0, 0)
        by_c = set(native.read_batch(con, cf, plan, batch).raw.column("line_no").to_pylist())
        assert by_c == by_sql
    return by_sql


def test_split_and_regex_agree_on_every_prefix(tmp_path, monkeypatch):
    lines = [p + b for p in VALID + LONGER + NEAR_MISSES for b in BODIES]
    s, t = read_both_ways(tmp_path, monkeypatch, lines)
    # After a header a request is a request, read past its header.
    clients = dict(t["requests"][["line_no", "client"]].values.tolist())
    for p in VALID + LONGER:
        for b in (BODY, CAPTURES):
            assert clients.get(lines.index(p + b) + 1) == "10.0.1.2", p + b
    # ...and the split path, not the regex, read those without header captures (or a
    # backslash anywhere: only the regex decodes escapes).
    taken = split_path_takes(lines)
    assert {lines.index(p + BODY) + 1 for p in VALID + LONGER if "\\" not in p} <= taken
    # After a near miss there is no header: no request either (but for "<1234>", which
    # is no header and reads as part of the client).
    got = {p: clients.get(lines.index(p + BODY) + 1) for p in NEAR_MISSES}
    assert got == {p: "<1234>10.0.1.2" if p == "<1234>" else None for p in NEAR_MISSES}
    # An event is an event after a header, never after a near miss.
    assert s.events == len(VALID + LONGER)
    assert t["events"]["text"].unique().tolist() == [EVENT]


def test_a_header_without_host_may_be_followed_by_a_tag(tmp_path, monkeypatch):
    # RE2 gives "haproxy[1]:" to the optional host and "x[2]" to the tag when the rest then
    # reads: the header ends at the second ": ". Cut at the first one instead, "x[2]:" would
    # be the client of a format whose %r (unquoted) takes any number of words.
    fmt = "%ci %r"
    line = "Feb  6 12:14:14 haproxy[1]: x[2]: 1.2.3.4 GET /"
    _, t = read_both_ways(tmp_path, monkeypatch, [line], fmt, dialect="haproxy")
    assert t["requests"][["client", "request"]].values.tolist() == [["1.2.3.4", "GET /"]]


def test_left_over_lines_of_many_batches(tmp_path, monkeypatch):
    """Small batches: the left-over lines are found by line number from each batch's first."""
    lines = [p + b for p in VALID[:3] + LONGER + NEAR_MISSES[:3] for b in BODIES] * 4
    read_both_ways(tmp_path, monkeypatch, lines, block_size=1500)


@pytest.mark.parametrize("every", [2, 7])
def test_left_over_lines_in_many_runs(tmp_path, monkeypatch, every):
    """Over a thousand separate runs of left-over lines in one batch: read by one pass over
    the batch in DuckDB instead of one slice per run."""
    lines = [CAPTURES if i % every == 0 else BODY for i in range(2 * 1000 * every + 5)]
    lines[17] = EVENT
    lines[18] = "garbage"
    relations = []
    real = INGEST_MODULE._left_over

    def spy(*a, **kw):  # noqa: ANN002, ANN003, ANN202
        relations.append(real(*a, **kw))
        return relations[-1]

    monkeypatch.setattr(INGEST_MODULE, "_left_over", spy)
    s, _ = read_both_ways(tmp_path, monkeypatch, lines)
    assert (s.events, s.rejects) == (1, 1)
    assert relations and set(relations) == {"__left_lines_t"}  # one per split reader


def test_left_over_lines_that_no_regex_reads(tmp_path, monkeypatch):
    """A batch whose left-overs are only events, garbage and empty lines skips the typed
    projection: the same rejects, with the same reasons, as when every line takes it."""
    prefix = VALID[0]
    lines = [prefix + BODY, prefix + EVENT, "garbage", "", prefix + BODY, prefix + "no request"]
    s, t = read_both_ways(tmp_path, monkeypatch, lines)
    assert (s.rows, s.events, s.rejects) == (2, 1, 3)
    assert s.rejects_by_reason == {"does not match format": 2, "empty line": 1}
    assert t["rejects"]["line_no"].tolist() == [3, 4, 6]


# Lines whose pieces are all there but one is empty, or that hold a tab inside a word: the
# regex refuses an empty or tabbed \S+ field, so the split path must leave them too.
HOLES = [
    BODY.replace("static/srv1", "static/"),
    BODY.replace("static/srv1", "/srv1"),
    BODY.replace("10.0.1.2:33317", ":33317"),
    BODY.replace(" http-in ", "  "),
    BODY.replace("---- ", " "),
    BODY.replace("http-in", "http\tin"),
    BODY.replace("static/srv1", "sta\ttic/srv1"),
]


def test_split_path_refuses_empty_and_tabbed_fields(tmp_path, monkeypatch):
    lines = [BODY, *HOLES]
    s, t = read_both_ways(tmp_path, monkeypatch, lines)
    assert split_path_takes(lines) == {1}
    assert list(t["requests"]["line_no"]) == [1] and s.rejects == len(HOLES)


def test_apache_split_path_refuses_empty_fields(tmp_path, monkeypatch):
    good = '192.0.2.1 - - [06/Feb/2009:12:14:14 +0000] "GET / HTTP/1.1" 200 12 345 "-" "ua"'
    holes = [good.replace("192.0.2.1 ", " "), good.replace(" - - ", " -  "), good.replace("- -", "-\t-")]
    s, t = read_both_ways(tmp_path, monkeypatch, [good, *holes], "combined_D")
    assert list(t["requests"]["line_no"]) == [1] and s.rejects == len(holes)
