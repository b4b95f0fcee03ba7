"""`logan ingest --engine spark` gives the rows and rejects `logan ingest` gives, row for
row: every canonical column of `requests`, every reject's line number, line and reason,
for each dialect's sample log and the real logs of ../shared/corpus the other tests read.

DuckDB's ingest of the same file is the reference, for the rows, the rejects and the
events (HAProxy's servers up and down), including lines a syslog length limit cut and bytes
that are not UTF-8.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from spark_support import REPO, SAMPLES, same_json, spark  # noqa: F401  (the shared session fixture)
from test_apache_corpus import EXTENDED  # netnea's 30-field format: 17 fields land in `extra`
from typer.testing import CliRunner

import logan
from logan import schema
from logan.answer.inputs import ReadOptions
from logan.cli import app, main
from logan.engines.spark_ingest import spark_ingest

CORPUS = REPO.parent / "shared" / "corpus"
# (log, format, dialect): auto detects the samples' and most corpus logs' formats; the
# corpus nginx logs need their log_format, as tests/test_nginx.py gives it
GONX = '$remote_addr [$time_local] "$request" $status $request_length $body_bytes_sent $request_time "$t_size" $read_time $gen_time'  # noqa: E501
OTUS = (
    '$remote_addr $remote_user  $http_x_real_ip [$time_local] "$request" $status $body_bytes_sent '
    '"$http_referer" "$http_user_agent" "$http_x_forwarded_for" "$http_X_REQUEST_ID" "$http_X_RB_USER" $request_time'  # noqa: E501
)
LOGS = [
    (SAMPLES / "puppet_access.log", "auto", None),
    (SAMPLES / "nginx_access.log", "auto", None),
    (SAMPLES / "varnish_access.log", "auto", None),
    (CORPUS / "elastic_apache_logs" / "apache_logs", "auto", None),
    (CORPUS / "netnea_apache_extended_t5" / "tutorial-5-example-access.log", EXTENDED, None),
    (CORPUS / "lnav_shop_access" / "logfile_shop_access_log.0", "auto", None),
    (CORPUS / "nginx_gonx_thumbs" / "access.log", GONX, "nginx"),
    (CORPUS / "nginx_otus_ui_sample" / "nginx-access-ui.log-20170630", OTUS, "nginx"),
    (CORPUS / "tricky_issue_lines" / "fluent-bit-566_escaped_quote_ua.log", "auto", None),
    # HAProxy: requests with the servers' event lines among them
    (SAMPLES / "haproxy.log", "auto", None),
    (CORPUS / "lnav_haproxy" / "logfile_haproxy.0", "auto", None),
    (CORPUS / "haproxy_no7dw" / "haproxy.log", "auto", None),
    (CORPUS / "haproxy_clf_lazylizard3" / "haproxy.log", "auto", None),
]
COLUMNS = [name for name, _, _ in schema.REQUESTS]


EVENTS = [name for name, _, _ in schema.EVENTS]


def _duckdb(path: Path, fmt: str, dialect: str | None) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """(rows, rejects, events) of logan ingest, in line order."""
    con = logan.ingest([str(path)], format=fmt, dialect=dialect).store.con
    rows = con.execute(f"SELECT {', '.join(COLUMNS)} FROM requests ORDER BY line_no").fetchall()
    rejects = con.execute("SELECT source, line_no, raw, reason FROM rejects ORDER BY line_no").fetchall()
    events = con.execute(f"SELECT {', '.join(EVENTS)} FROM events ORDER BY line_no").fetchall()
    return [_plain(r) for r in rows], rejects, events


def _spark(session, path: Path, to: Path, fmt: str, dialect: str | None) -> tuple[list, list, list]:  # noqa: ANN001
    spark_ingest(session, [str(path)], to, ReadOptions(fmt, dialect))
    rows = session.read.parquet(str(to / "requests")).select(*COLUMNS).orderBy("line_no").collect()
    rejects = session.read.parquet(str(to / "rejects")).orderBy("line_no").collect()
    events = []
    if (to / "events").exists():  # written when there are some, as logan export does
        events = session.read.parquet(str(to / "events")).select(*EVENTS).orderBy("line_no").collect()
    return [_plain(tuple(r)) for r in rows], [tuple(r) for r in rejects], [tuple(r) for r in events]


def _plain(row: tuple) -> tuple:
    # `extra` is a MAP: DuckDB gives a dict, Spark a dict too (None when empty on both)
    return tuple(dict(v) if isinstance(v, dict) else v for v in row)


def _same_ingest(session, path: Path, to: Path, fmt: str = "auto", dialect: str | None = None) -> tuple:  # noqa: ANN001
    """Both engines read `path` alike: every row, reject and event; returns DuckDB's."""
    want_rows, want_rejects, want_events = _duckdb(path, fmt, dialect)
    got_rows, got_rejects, got_events = _spark(session, path, to, fmt, dialect)
    assert len(got_rows) == len(want_rows) and want_rows
    for want, got in zip(want_rows, got_rows, strict=True):
        assert got == want, {c: (w, g) for c, w, g in zip(COLUMNS, want, got, strict=True) if w != g}
    assert got_rejects == want_rejects
    assert got_events == want_events
    return want_rows, want_rejects, want_events


@pytest.mark.parametrize(("path", "fmt", "dialect"), LOGS, ids=[p.name for p, _, _ in LOGS])
def test_spark_reads_every_line_as_duckdb_does(spark, tmp_path, path, fmt, dialect):  # noqa: F811
    if not path.is_file():
        pytest.skip(f"{path} is not here (the corpus lives in ../shared/corpus)")
    _, _, events = _same_ingest(spark, path, tmp_path / "lake", fmt, dialect)
    if path.parent.name.startswith(("haproxy_", "lnav_haproxy")) or path.name == "haproxy.log":
        assert events  # the HAProxy logs chosen have event lines: the test compares some


# HAProxy's documentation line (tests/test_haproxy.py), behind a syslog prefix
DOC = (
    "10.0.1.2:33317 [06/Feb/2009:12:14:14.655] http-in static/srv1 10/0/30/69/109 200 2750 - - ---- "
    '1/1/1/1/0 0/0 {1wt.eu} {} "GET /index.html HTTP/1.1"'
)
SYSLOG = "Feb  6 12:14:{:02d} lb haproxy[1]: "


def test_events_and_lines_cut_by_syslog(spark, tmp_path):  # noqa: F811
    """Servers going down and up, a proxy starting, lines cut at a syslog limit (inside the
    request line: a row; elsewhere: a reject saying where), a line of nothing HAProxy
    writes, and a timer past 64 bits: the same rows, events and rejects with the same reasons."""
    long_path = "/" + "a" * 1100
    lines = [
        SYSLOG.format(1) + "Proxy http-in started.",
        SYSLOG.format(2) + DOC,
        SYSLOG.format(3) + "Server static/srv1 is DOWN, reason: Layer4 timeout, check duration: 2ms.",
        SYSLOG.format(4) + DOC.replace('/index.html HTTP/1.1"', long_path)[:1024],  # cut in the request
        SYSLOG.format(5) + DOC.replace("{1wt.eu}", "{" + "h" * 1100)[:1024],  # cut in a header capture
        SYSLOG.format(6) + "Server static/srv1 is UP, reason: Layer7 check passed.",
        SYSLOG.format(7) + DOC.replace("10/0/30/69/109", "10/0/30/69/" + "9" * 17),  # us past 64 bits
        "hello world",
        "[WARNING] 000/000005 (1) : Server static/srv2 is UP.",
        SYSLOG.format(9) + DOC[: -len('/index.html HTTP/1.1"')],  # cut short, no closing quote
    ]
    log = tmp_path / "cut.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows, rejects, events = _same_ingest(spark, log, tmp_path / "lake", "haproxy:httplog")
    # what logan ingest makes of them (tests/test_haproxy.py checks each kind by hand)
    assert [r[1] for r in rows] == [2, 4, 10]
    assert [(r[1], r[3]) for r in rejects] == [
        (5, f"cut at {len(lines[4])} bytes"), (7, "bad %Ta value"), (8, "does not match format")
    ]  # fmt: skip
    assert [(e[2], e[3]) for e in events] == [
        (1, "proxy_started"), (3, "server_down"), (6, "server_up"), (9, "warning")
    ]  # fmt: skip
    # syslog's date has no year: the requests around the events give theirs (2009)
    assert [e[0] for e in events] == [datetime(2009, 2, 6, 12, 14, s) for s in (1, 3, 6)] + [None]


# Paths as clients send them and servers write them: Latin-1, cut sequences, overlong forms,
# surrogates, bytes past U+10FFFF; and valid UTF-8 (2 to 4 bytes) beside them.
PATHS = [b"/caf\xe9", b"/caf\xc3\xa9", b"/euro\xe2\x82", b"/over\xc0\xaf", b"/sur\xed\xa0\x80",
         b"/big\xf5\x80", b"/emoji\xf0\x9f\x98\x80", b"/mixed\xe9\xe2\x82\xac\xff"]  # fmt: skip


def test_bytes_that_are_not_utf8(spark, tmp_path):  # noqa: F811
    """A log with such bytes in its requests and in lines no format reads: the same rows
    and rejects on both engines, each bad byte written \\xhh (Python's own decoder says
    which bytes are bad), the good characters as they are."""
    head = b'10.0.47.15 - - [05/Nov/2013:19:00:00 +0000] "GET '
    tail = b' HTTP/1.1" 200 369 "-" "Ruby" 0.002 - HIT'
    lines = [head + b"/ok" + tail] * 3 + [head + p + tail for p in PATHS] + [b"junk \xff\xfe line", b"x\r"]
    log = tmp_path / "latin1.log"
    log.write_bytes(b"\n".join(lines) + b"\n")
    rows, rejects, _ = _same_ingest(spark, log, tmp_path / "lake")
    path = COLUMNS.index("path")
    assert [r[path] for r in rows[3:]] == [p.decode("utf-8", "backslashreplace") for p in PATHS]
    assert rows[3][path] == "/caf\\xe9" and rows[4][path] == "/caf\u00e9"
    assert [r[2] for r in rejects] == ["junk \\xff\\xfe line", "x"]


def test_the_folder_answers_as_the_store_does(spark, tmp_path, capsys):  # noqa: F811
    # logan ingest --engine spark writes what --engine spark --data reads
    log, db, lake = str(SAMPLES / "nginx_access.log"), str(tmp_path / "s.duckdb"), str(tmp_path / "lake")
    for args in (["ingest", log, "--db", db], ["ingest", "--engine", "spark", "--to", lake, log]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
    want = CliRunner().invoke(app, ["stats", "--db", db, "--by", "route", "-o", "json"])
    got = CliRunner().invoke(
        app, ["stats", "--engine", "spark", "--data", lake, "--by", "route", "-o", "json"]
    )
    assert got.exit_code == 0, got.output

    same_json(json.loads(got.stdout), json.loads(want.stdout))

    # the folder is not read into again (the same file would count twice): refused, untouched
    files = sorted((p, p.stat().st_mtime_ns) for p in Path(lake).rglob("*"))
    with pytest.raises(SystemExit) as said:  # as the `logan` command says it: one line, exit 2
        main(["ingest", "--engine", "spark", "--to", lake, log])
    err = capsys.readouterr().err
    assert said.value.code == 2 and f"{lake}/requests exists" in err and len(err.strip().splitlines()) == 1
    assert sorted((p, p.stat().st_mtime_ns) for p in Path(lake).rglob("*")) == files
