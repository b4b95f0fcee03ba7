"""HAProxy dialect: log-format syntax, timers, syslog prefixes, events, the real corpus, and a
real haproxy on loopback.

Expected values are worked out by hand (hand-written lines) or computed by plain Python
parsing of the corpus files, never by logan.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from conftest import READERS, reading_with

from logan.read.compile import compile_format
from logan.read.dialects import get_dialect
from logan.read.ingest import ingest as run_ingest
from logan.read.syntax import Directive, tokenize_haproxy

CORPUS = Path(__file__).parents[2] / "shared" / "corpus"
needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"the shared log corpus is not at {CORPUS} (it is never copied into the repo)"
)

# The example of configuration.txt 8.2.3, as `option httplog` writes it.
DOC_LINE = (
    "10.0.1.2:33317 [06/Feb/2009:12:14:14.655] http-in static/srv1 10/0/30/69/109 200 2750 - - ---- "
    '1/1/1/1/0 0/0 {1wt.eu} {} "GET /index.html HTTP/1.1"'
)
DOC_START = datetime(2009, 2, 6, 12, 14, 14, 655000)


def ingest(tmp_path: Path, lines: list[str], fmt: str = "haproxy:httplog", **kw):
    """Ingest hand-written lines; check rows + rejects + events = lines; (summary, con)."""
    path = tmp_path / f"haproxy{len(list(tmp_path.iterdir()))}.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    kw.setdefault("profile", "none")
    s = run_ingest([str(path)], format=fmt, **kw)
    assert s.lines == len(lines)
    assert s.rows + s.rejects + s.events == len(lines)
    return s, s.store.con


def one(tmp_path: Path, line: str, fmt: str = "haproxy:httplog", **kw) -> dict:
    s, con = ingest(tmp_path, [line], fmt, **kw)
    assert s.rows == 1, con.execute("SELECT reason, raw FROM rejects").fetchall()
    cur = con.execute("SELECT * FROM requests")
    names = [d[0] for d in cur.description]
    return dict(zip(names, cur.fetchall()[0], strict=True))


def extra(row: dict) -> dict:
    return {k: v for k, v in (row["extra"] or {}).items() if v is not None}


# ---- the log-format language ------------------------------------------------------------


def test_tokenize_config_quoting_and_flags():
    # As configuration.txt prints "option httplog clf": one quoted config word with \" inside.
    toks = tokenize_haproxy(r'"%{+Q}o %{-Q}ci - - [%trg] %r %ST \"\" %cp %CC"')
    assert toks == [
        Directive("ci", None, "%{-Q}ci"),
        " - - [",
        Directive("trg", None, "%trg"),
        '] "',
        Directive("r", None, "%r"),
        '" ',
        Directive("ST", None, "%ST"),  # a number: +Q does not quote it
        ' "" ',
        Directive("cp", None, "%cp"),
        ' "',
        Directive("CC", None, "%CC"),
        '"',
    ]


def test_tokenize_keyword_pieces_samples_hex_percent():
    # The keyword, quoted pieces next to each other, escaped spaces, merged separators.
    toks = tokenize_haproxy(
        "log-format \"%ci\"' %{+X}cp'\\ \\  %[capture.req.hdr(0)] %{+Q}[ssl_fc_err,hex] 100%%"
    )
    assert toks == [
        Directive("ci", None, "%ci"),
        " ",
        Directive("cp+X", None, "%{+X}cp"),
        " ",
        Directive("[", "capture.req.hdr(0)", "%[capture.req.hdr(0)]"),
        ' "',
        Directive("[", "ssl_fc_err,hex", "%{+Q}[ssl_fc_err,hex]"),
        '" 100%',
    ]


def test_presets_compile_with_a_fast_path():
    d = get_dialect("haproxy")
    assert set(d.presets) >= {"httplog", "httplog_clf", "httpslog", "tcplog"}
    for name, fmt in d.presets.items():
        cf = compile_format(d, fmt, name)
        assert cf.fast_raw_sql("t") is not None, name


# ---- httplog fields -------------------------------------------------------------------


def test_httplog_doc_example(tmp_path):
    row = one(tmp_path, DOC_LINE)
    assert (row["client"], row["client_port"]) == ("10.0.1.2", 33317)
    assert row["ts_start"] == DOC_START
    assert row["ts_end"] == DOC_START + timedelta(milliseconds=109)
    assert (row["backend"], row["server"]) == ("static", "srv1")
    # TR/Tw/Tc/Tr/Ta = 10/0/30/69/109 ms
    assert row["request_read_us"] == 10_000
    assert row["queue_us"] == 0
    assert row["connect_us"] == 30_000
    assert row["ttfb_us"] == 69_000
    assert row["duration_us"] == 109_000
    assert (row["status"], row["bytes_sent"], row["termination_state"]) == (200, 2750, "----")
    conns = [row[c] for c in ("active_conns", "frontend_conns", "backend_conns", "server_conns", "retries")]
    assert conns == [1, 1, 1, 1, 0]
    assert (row["server_queue"], row["backend_queue"]) == (0, 0)
    assert (row["method"], row["path"], row["protocol"]) == ("GET", "/index.html", "HTTP/1.1")
    # {1wt.eu} is the captured request header; {} an empty response capture; "-" cookies.
    assert row["frontend"] == "http-in"
    assert extra(row) == {"captured_request_headers": "1wt.eu"}


def test_accept_date_is_local_time_in_tz(tmp_path):
    row = one(tmp_path, DOC_LINE, tz="Europe/Berlin")
    assert row["ts_start"] == DOC_START - timedelta(hours=1)  # CET in February


def test_never_reached_timers_are_null_and_nosrv_badreq_are_requests(tmp_path):
    lines = [
        "127.0.0.1:35982 [10/Dec/2018:12:01:46.395] http-webservices http-webservices/<NOSRV> "
        '0/-1/-1/-1/0 503 213 - - SC-- 1/1/0/0/0 0/0 "GET / HTTP/1.1"',
        "202.55.2.227:36072 [25/Dec/2014:01:55:20.408] node_server_in node_server_in/<NOSRV> "
        '-1/-1/-1/-1/0 400 187 - - PR-- 0/0/0/0/0 0/0 "<BADREQ>"',
    ]
    s, con = ingest(tmp_path, lines)
    assert s.rows == 2
    got = con.execute(
        "SELECT server, request_read_us, queue_us, connect_us, ttfb_us, duration_us, status, request, "
        "method, path "
        "FROM requests ORDER BY line_no"
    ).fetchall()
    assert got == [
        ("<NOSRV>", 0, None, None, None, 0, 503, "GET / HTTP/1.1", "GET", "/"),
        ("<NOSRV>", None, None, None, None, 0, 400, "<BADREQ>", None, None),
    ]


def test_logasap_and_redispatch_marks(tmp_path):
    line = (
        "10.0.0.1:4000 [06/Feb/2009:12:14:14.655] fe be/s2 1/0/2/40/+43 200 +512 - - ---- "
        '3/3/1/1/+2 0/0 "GET /big HTTP/1.1"'
    )
    row = one(tmp_path, line)
    assert (row["duration_us"], row["bytes_sent"], row["retries"]) == (43_000, 512, 2)
    assert row["frontend"] == "fe"
    assert extra(row) == {"logasap": "true", "redispatched": "true"}
    plain = one(tmp_path, DOC_LINE)
    assert "logasap" not in extra(plain) and "redispatched" not in extra(plain)


def test_header_captures_are_optional_per_line(tmp_path):
    """No capture configured: nothing is written, not even the separator."""
    base = (
        "127.0.0.1:43738 [10/Dec/2018:15:46:49.497] ws ws/<NOSRV> 0/-1/-1/-1/0 503 213 - - SC-- "
        "1/1/0/0/0 0/0 "
    )
    lines = [
        base + '"GET /a HTTP/1.1"',
        base + '{localhost:8888||} "GET /b HTTP/1.1"',
        base + '{localhost:8888||} {|} "GET /c HTTP/1.1"',
        base + '{Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/65.0} {} "GET /d HTTP/1.1"',
    ]
    s, con = ingest(tmp_path, lines)
    assert s.rows == 4
    got = con.execute(
        "SELECT path, extra['captured_request_headers'], extra['captured_response_headers'] "
        "FROM requests ORDER BY line_no"
    ).fetchall()
    assert got == [
        ("/a", None, None),
        ("/b", "localhost:8888||", None),
        ("/c", "localhost:8888||", "|"),
        ("/d", "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/65.0", None),
    ]


def test_ipv6_and_unknown_clients(tmp_path):
    rows = [
        one(tmp_path, DOC_LINE.replace("10.0.1.2:33317", "2001:db8::1:443")),
        one(tmp_path, DOC_LINE.replace("10.0.1.2:33317", "-:22222")),
        one(tmp_path, DOC_LINE.replace("10.0.1.2:33317", "unix:1")),
    ]
    assert [(r["client"], r["client_port"]) for r in rows] == [
        ("2001:db8::1", 443),
        (None, 22222),
        ("unix", 1),
    ]


def test_tcplog(tmp_path):
    line = (
        "X.X.X.45:52890 [12/Jul/2018:10:12:34.518] haproxy_frontend haproxy_backend/<backend_host_1> "
        "1/1/96648 6774 cD 375/375/375/118/0 0/0"
    )
    row = one(tmp_path, line, "haproxy:tcplog")
    assert row["ts_start"] == datetime(2018, 7, 12, 10, 12, 34, 518000)
    assert (row["queue_us"], row["connect_us"], row["duration_us"]) == (1000, 1000, 96_648_000)
    assert (row["bytes_sent"], row["termination_state"], row["active_conns"], row["server_conns"]) == (
        6774,
        "cD",
        375,
        118,
    )
    assert row["request"] is None and row["server"] == "<backend_host_1>"


def test_httplog_clf_trailing_space_and_header_list(tmp_path):
    line = (
        '202.42.255.254 - - [10/Nov/2016:07:55:30 +0000] "GET /js/app.js?1.0 HTTP/1.1" 200 5511 "" "" '
        '60154 456 "bayer" "bayer-app" "bayer-app1" 5 0 1 3 9 ---- 8 8 3 4 0 0 0 "" "" "http://x/" '
        '"Mozilla/5.0 (KHTML, like Gec" '
    )
    row = one(tmp_path, line, "haproxy:httplog_clf")
    assert row["ts_start"] == datetime(2016, 11, 10, 7, 55, 30, 456000)  # [%trg] + %ms
    assert (row["client_port"], row["backend"], row["server"]) == (60154, "bayer-app", "bayer-app1")
    assert (
        row["request_read_us"],
        row["queue_us"],
        row["connect_us"],
        row["ttfb_us"],
        row["duration_us"],
    ) == (
        5000,
        0,
        1000,
        3000,
        9000,
    )
    assert (row["path"], row["query"]) == ("/js/app.js", "1.0")
    assert extra(row)["captured_request_headers"] == '"http://x/" "Mozilla/5.0 (KHTML, like Gec"'


def test_httpslog(tmp_path):
    line = DOC_LINE.replace("http-in", "https-in~") + " 0/0/0/0/1 1wt.eu/TLSv1.3/TLS_AES_256_GCM_SHA384"
    row = one(tmp_path, line, "haproxy:httpslog")
    e = extra(row)
    assert row["frontend"] == "https-in~"
    assert (e["ssl_fc_sni"], e["ssl_version"], e["ssl_ciphers"]) == (
        "1wt.eu",
        "TLSv1.3",
        "TLS_AES_256_GCM_SHA384",
    )
    assert e["ssl_fc_is_resumed"] == "1" and e["fc_err"] == "0"


def test_custom_log_format(tmp_path):
    fmt = (
        'log-format "%{+Q}o %{-Q}ci:%{+X}cp %Ts.%ms %HM %HU %HV %ST %U %B %Tt %ID '
        '%[capture.req.hdr(0)] %[req.hdr(user-agent)] %f"'
    )
    line = (
        '192.0.2.9:D431 1234567890.250 "POST" "/api/v1/items?id=7&x=y" "HTTP/2.0" 201 734 99 1500 "ab12" '
        '"10.1.1.1, 10.2.2.2" "curl/8.5.0" "web"'
    )
    row = one(tmp_path, line, fmt, dialect="haproxy")
    assert (row["client"], row["client_port"]) == ("192.0.2.9", 0xD431)
    assert row["ts_start"] == datetime(2009, 2, 13, 23, 31, 30, 250000)
    assert (row["method"], row["path"], row["query"], row["protocol"]) == (
        "POST",
        "/api/v1/items",
        "id=7&x=y",
        "HTTP/2.0",
    )
    assert (row["status"], row["bytes_received"], row["bytes_sent"], row["duration_us"]) == (
        201,
        734,
        99,
        1_500_000,
    )
    assert row["user_agent"] == "curl/8.5.0"
    assert extra(row) == {
        "unique_id": "ab12",
        "capture.req.hdr(0)": "10.1.1.1, 10.2.2.2",
    }
    assert row["frontend"] == "web"


def test_bad_lines_are_rejects(tmp_path):
    lines = [
        DOC_LINE,
        DOC_LINE.replace("10/0/30/69/109", "10/0/x/69/109"),  # a timer that is not a number
        DOC_LINE[: -len('/index.html HTTP/1.1"')],  # cut by the log buffer: no closing quote
        "hello world",
    ]
    s, con = ingest(tmp_path, lines)
    # the cut line still tells its timers, status and server: a row, its request line cut
    assert (s.rows, s.rejects, s.events) == (2, 2, 0)
    got = con.execute("SELECT duration_us, status, request FROM requests ORDER BY line_no").fetchall()
    assert got[0][:2] == got[1][:2] and got[1][2] == DOC_LINE[: -len('/index.html HTTP/1.1"')].split('"')[-1]


@pytest.mark.parametrize("reader", READERS)
def test_numbers_too_big_for_a_row_are_rejects(tmp_path, monkeypatch, reader):
    """A value whose microseconds overflow 64 bits (or a status past SMALLINT) is the line's
    fault: a reject with the directive's reason, whichever reader met it, never an overflow
    error that stops the ingest."""
    huge = "9" * 17  # ms: 17 digits are 10^20 us
    lines = [
        DOC_LINE,
        DOC_LINE.replace("10/0/30/69/109", f"10/0/30/69/{huge}"),
        DOC_LINE.replace("10/0/30/69/109", f"{huge}/0/30/69/109"),
        DOC_LINE.replace(" 200 2750 ", " 99999 2750 "),
    ]
    with reading_with(monkeypatch, reader):
        s, con = ingest(tmp_path, lines)
    assert (s.rows, s.rejects, s.events) == (1, 3, 0)
    reasons = dict(con.execute("SELECT reason, count(*) FROM rejects GROUP BY 1").fetchall())
    assert reasons == {"bad %Ta value": 1, "bad %TR value": 1, "bad %ST value": 1}, reasons


# ---- syslog prefixes ------------------------------------------------------------------

PREFIXES = [
    "Feb  6 12:14:14 localhost haproxy[14389]: ",  # rsyslog file format, padded day
    "Feb 16 12:14:14 10.0.0.1 haproxy[14389]: ",
    "<134>Feb  6 12:14:14 haproxy[14389]: ",  # haproxy's own rfc3164 header over UDP
    "<134>1 2009-02-06T12:14:14.812+00:00 lb1 haproxy 14389 - - ",  # rfc5424
    '<134>1 2009-02-06T12:14:14Z lb1 haproxy 14389 - [meta seq="1" x="a\\"b\\]"] ',  # rfc5424 + SD
    "2009-02-06T12:14:14.812345+01:00 lb1 haproxy[14389]: ",  # RSYSLOG_FileFormat
    "2009-02-06T12:14:14+0000 lb1 haproxy[14389]: ",  # journalctl -o short-iso
    "<134>",  # log ... format short
    "",  # log stdout format raw
]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_syslog_prefixes_are_detected(tmp_path, prefix):
    s, con = ingest(tmp_path, [prefix + DOC_LINE] * 3, "auto")
    assert s.sources[0].format == "haproxy:httplog"
    assert (s.rows, s.rejects) == (3, 0)
    got = con.execute("SELECT DISTINCT ts_start, client, duration_us FROM requests").fetchall()
    assert got == [(DOC_START, "10.0.1.2", 109_000)]


def test_prefixes_mixed_in_one_file(tmp_path):
    s, _ = ingest(tmp_path, [p + DOC_LINE for p in PREFIXES])
    assert (s.rows, s.rejects) == (len(PREFIXES), 0)


# ---- events ---------------------------------------------------------------------------


def test_events_kinds_servers_and_times(tmp_path):
    lines = [
        "Dec 31 23:59:58 lb haproxy[1]: Proxy www started.",
        "Dec 31 23:59:59 lb haproxy[1]: Server be/app3 is DOWN, reason: Layer4 timeout, check duration: 2ms.",
        "Jan  1 00:00:01 lb haproxy[1]: backend be has no server available!",
        "Jan  1 00:00:02 lb haproxy[1]: "
        + DOC_LINE.replace("06/Feb/2009:12:14:14.655", "01/Jan/2021:00:00:01.500"),
        "Jan  1 00:00:03 lb haproxy[1]: Connect from 1.128.3.4:40780 to 1.128.3.4:5000 (main/HTTP)",
        "Jan  1 00:00:04 lb haproxy[1]: 9.2.1.3:5 [01/Jan/2021:00:00:03.111] www/sk2: SSL handshake failure",
        "2021-01-01T00:00:05+01:00 lb haproxy[1]: Health check for server be/app3 succeeded, reason: L7OK",
        "[WARNING] 000/000005 (1) : Server be/app3 is UP.",
        "Jan  1 00:00:06 lb haproxy[1]: Something HAProxy never says",
    ]
    s, con = ingest(tmp_path, lines)
    assert (s.rows, s.events, s.rejects) == (1, 7, 1)
    got = con.execute("SELECT line_no, ts, kind, server FROM events ORDER BY line_no").fetchall()
    assert got == [
        # No year in RFC 3164: the one closest to the nearest request (2021-01-01).
        (1, datetime(2020, 12, 31, 23, 59, 58), "proxy_started", "www"),
        (2, datetime(2020, 12, 31, 23, 59, 59), "server_down", "be/app3"),
        (3, datetime(2021, 1, 1, 0, 0, 1), "backend_down", "be"),
        (5, datetime(2021, 1, 1, 0, 0, 3), "connect", "main"),
        # A connection error carries HAProxy's own date, with ms.
        (6, datetime(2021, 1, 1, 0, 0, 3, 111000), "ssl_handshake_failure", "www/sk2"),
        (7, datetime(2020, 12, 31, 23, 0, 5), "health_check", "be/app3"),
        (8, None, "warning", None),
    ]
    assert con.execute("SELECT text FROM events WHERE line_no = 3").fetchall() == [
        ("backend be has no server available!",)
    ]
    assert con.execute("SELECT line_no FROM rejects").fetchall() == [(9,)]


def test_events_far_from_any_request_take_the_year_of_the_requests_around_their_run(tmp_path):
    """Between two requests of 2014, a long run of lines that are not requests: events and
    lines HAProxy never writes. Every event in it is dated in 2014, the one 121 lines from
    either request too (not in the latest year before today, as an event with no request
    near is)."""
    request = "Feb  6 12:00:00 lb haproxy[1]: " + DOC_LINE.replace("06/Feb/2009", "06/Feb/2014")
    noise = [f"Feb  6 12:00:{i % 60:02d} lb haproxy[1]: Something HAProxy never says" for i in range(120)]
    event = "Feb  6 12:01:00 lb haproxy[1]: Server be/app1 is DOWN"
    s, con = ingest(tmp_path, [request, *noise, event, *noise, request])
    assert (s.rows, s.events, s.rejects) == (2, 1, 240)
    assert con.execute("SELECT line_no, ts FROM events").fetchall() == [(122, datetime(2014, 2, 6, 12, 1))]


def test_events_only_file_gets_a_recent_year(tmp_path):
    now = datetime.now()
    line = f"{now:%b} {now.day:2d} 00:00:00 lb haproxy[1]: Server be/app1 is UP"
    s, con = ingest(tmp_path, [line], "haproxy:httplog")
    assert s.events == 1
    ts = con.execute("SELECT ts FROM events").fetchall()[0][0]
    assert ts.year == now.year and ts.month == now.month and ts.day == now.day


# ---- the real corpus ------------------------------------------------------------------

# An independent reading: the timers and counts of each request line, by plain regexes.
HTTPLOG = re.compile(
    r"(?:^|: )(\S+):(\d+) \[[^\]]+\] \S+ (\S+)/(\S+) (-?\d+)/(-?\d+)/(-?\d+)/(-?\d+)/\+?(\d+) (\d+) \+?(\d+) "
)
CLF = re.compile(
    r'\] "[^"]*" (\d+) (\d+) "" "" \d+ \d+ "[^"]*" "([^"]*)" "([^"]*)" '
    r"(-?\d+) (-?\d+) (-?\d+) (-?\d+) (-?\d+) "
)
TCPLOG = re.compile(r"(?:^|: )(\S+):(\d+) \[[^\]]+\] \S+ (\S+)/(\S+) (-?\d+)/(-?\d+)/\+?(\d+) \+?(\d+) \S\S ")
COLUMNS = {  # timer position in the regex groups -> column
    "httplog": {5: "request_read_us", 6: "queue_us", 7: "connect_us", 8: "ttfb_us", 9: "duration_us"},
    "httplog_clf": {5: "request_read_us", 6: "queue_us", 7: "connect_us", 8: "ttfb_us", 9: "duration_us"},
    "tcplog": {5: "queue_us", 6: "connect_us", 7: "duration_us"},
}
STATUS = {"httplog": 10, "httplog_clf": 1, "tcplog": None}


def expected(path: Path, preset: str) -> dict:
    """Request count, timer sums in us (-1 left out), status sum, non-request lines."""
    pattern = {"httplog": HTTPLOG, "httplog_clf": CLF, "tcplog": TCPLOG}[preset]
    sums = dict.fromkeys(COLUMNS[preset].values(), 0)
    n = status = other = 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        m = pattern.search(line)
        if not m:
            other += 1 if line.strip() else 0
            continue
        n += 1
        for g, col in COLUMNS[preset].items():
            ms = int(m.group(g))
            sums[col] += ms * 1000 if ms >= 0 else 0
        if STATUS[preset]:
            status += int(m.group(STATUS[preset]))
    return {"rows": n, "sums": sums, "status": status, "other": other}


# (file, format, clean: zero rejects expected)
CORPUS_FILES = [
    ("haproxy_raravena80/haproxy.log", "auto", "httplog", True),
    ("haproxy_no7dw/haproxy.log", "auto", "httplog", True),
    ("haproxy_no7dw/haproxy.log.1", "auto", "httplog", True),
    ("haproxy_clf_lazylizard3/haproxy.log", "auto", "httplog_clf", True),
    ("lnav_haproxy/logfile_haproxy.0", "auto", "httplog", True),
    ("tricky_haproxy_misc/tcplog_rsa_nw.log", "auto", "tcplog", True),
    ("tricky_haproxy_misc/openshift_router_rfc3339.log", "auto", "httplog", True),
    ("tricky_filebeat/haproxy_httplog-no-headers.log", "auto", "httplog", False),  # a blank line
    ("tricky_filebeat/haproxy_default.log", "haproxy:httplog", "httplog", True),  # events only
    ("tricky_crowdsec/haproxy-logs__haproxy-logs.log", "auto", "httplog", True),
    ("tricky_crowdsec/haproxy-nextcloud-whitelist__haproxy-logs.log", "auto", "httplog", True),
]


@needs_corpus
@pytest.mark.parametrize(("name", "fmt", "preset", "clean"), CORPUS_FILES)
def test_corpus_file(name, fmt, preset, clean):
    path = CORPUS / name
    want = expected(path, preset)
    s = run_ingest([str(path)], format=fmt, profile="none")
    src = s.sources[0]
    assert src.format == f"haproxy:{preset}"
    assert src.lines == len(path.read_bytes().splitlines())
    assert src.rows + src.rejects + src.events == src.lines
    assert src.rows == want["rows"]
    assert src.events == want["other"]
    if clean:
        assert src.rejects == 0, s.store.con.execute("SELECT reason, raw FROM rejects LIMIT 3").fetchall()
    con = s.store.con
    for col, total in want["sums"].items():
        assert con.execute(f"SELECT coalesce(sum({col}), 0) FROM requests").fetchall()[0][0] == total, col
    if STATUS[preset]:
        assert con.execute("SELECT coalesce(sum(status), 0) FROM requests").fetchall()[0][0] == want["status"]


@needs_corpus
def test_corpus_rejects_cannot_hide_requests():
    """Every line a plain regex reads as a request is a row: none landed in events."""
    for name, fmt, preset, _ in CORPUS_FILES:
        s = run_ingest([str(CORPUS / name)], format=fmt, profile="none")
        texts = [t for (t,) in s.store.con.execute("SELECT text FROM events").fetchall()]
        pattern = {"httplog": HTTPLOG, "httplog_clf": CLF, "tcplog": TCPLOG}[preset]
        assert not [t for t in texts if pattern.search(t)], name


@needs_corpus
def test_corpus_filebeat_custom_format_with_host_sample():
    """Nine lines carry %[capture.req.hdr(0)] (the Host) after %b/%s; the first line is a
    plain httplog with captures, so it is this format's one reject."""
    path = CORPUS / "tricky_filebeat/haproxy_haproxy.log"
    fmt = (
        "%ci:%cp [%tr] %ft %b/%s %[capture.req.hdr(0)] %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc "
        "%ac/%fc/%bc/%sc/%rc %sq/%bq %hr %hs %{+Q}r"
    )
    s = run_ingest([str(path)], format=fmt, dialect="haproxy", profile="none")
    assert (s.rows, s.rejects, s.events) == (9, 1, 0)
    got = s.store.con.execute(
        "SELECT count(DISTINCT extra['capture.req.hdr(0)']), sum(duration_us), count(client) FROM requests"
    ).fetchall()
    # hosts site.domain.com, app.domain.com, app.domain.eu; Ta 18+18+56+31+35+2606+30+41+47 ms;
    # clients "-" (PROXY protocol without an address): NULL
    assert got == [(3, 2_882_000, 0)]


@needs_corpus
def test_corpus_https_and_badreq():
    path = CORPUS / "tricky_filebeat/haproxy_integrations_bad-req_and_https.log"
    https = run_ingest([str(path)], format="haproxy:httpslog", profile="none")
    plain = run_ingest([str(path)], format="haproxy:httplog", profile="none")
    assert (https.rows, https.rejects, plain.rows, plain.rejects) == (1, 1, 1, 1)
    assert plain.store.con.execute("SELECT request, status, termination_state FROM requests").fetchall() == [
        ("<BADREQ>", 400, "CR--")
    ]


# ---- a real haproxy -------------------------------------------------------------------

HAPROXY = shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Syslog(threading.Thread):
    """A UDP syslog listener that writes each datagram as one line, like a syslog daemon."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.path = path
        self.count = 0
        self.stop = threading.Event()

    def run(self) -> None:
        with open(self.path, "wb") as fh:
            while not self.stop.is_set():
                try:
                    data = self.sock.recv(65535)
                except TimeoutError:
                    continue
                fh.write(data.rstrip(b"\n") + b"\n")
                fh.flush()
                self.count += 1
        self.sock.close()


@pytest.mark.server
@pytest.mark.skipif(HAPROXY is None, reason="haproxy is not installed (Debian package haproxy)")
def test_real_haproxy_httplog(tmp_path):
    n = 40
    log = tmp_path / "haproxy.log"
    syslog = _Syslog(log)
    syslog.start()
    backend_port, front_port = _free_port(), _free_port()
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "index.html").write_text("hello\n")
    backend = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "http.server",
            str(backend_port),
            "--bind",
            "127.0.0.1",
            "-d",
            str(tmp_path / "www"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(
        f"""
global
    log 127.0.0.1:{syslog.port} local0
defaults
    mode http
    log global
    option httplog
    timeout connect 2s
    timeout client 5s
    timeout server 5s
frontend fe
    bind 127.0.0.1:{front_port}
    capture request header User-Agent len 64
    http-request deny if {{ path_beg /denied }}
    default_backend be
backend be
    server app1 127.0.0.1:{backend_port}
"""
    )
    proxy = subprocess.Popen(
        [HAPROXY, "-f", str(cfg), "-db"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        _wait_for(front_port)
        _wait_for(backend_port)
        statuses = []
        for i in range(n):
            path = "/denied" if i % 10 == 9 else ("/index.html" if i % 2 else f"/missing{i}?q={i}")
            req = urllib.request.Request(
                f"http://127.0.0.1:{front_port}{path}", headers={"User-Agent": f"t/{i} x"}
            )
            try:
                with urllib.request.urlopen(req, timeout=5) as r:
                    statuses.append(r.status)
            except urllib.error.HTTPError as e:
                statuses.append(e.code)
        deadline = time.monotonic() + 10
        while syslog.count < n and time.monotonic() < deadline:
            time.sleep(0.05)
        # Probes and requests share the count: wait until the log stops growing, so a
        # loaded machine's late datagram is not cut off.
        seen = -1
        while seen != syslog.count and time.monotonic() < deadline:
            seen = syslog.count
            time.sleep(0.5)
    finally:
        for p in (proxy, backend):
            p.terminate()
        for p in (proxy, backend):
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        syslog.stop.set()
        syslog.join(timeout=5)
    s = run_ingest([str(log)], profile="none")
    src = s.sources[0]
    assert src.format == "haproxy:httplog"
    assert src.rejects == 0 and src.rows + src.events == src.lines
    con = s.store.con
    # The readiness probe connected and closed without a request: HAProxy logs it too.
    probes = con.execute(
        "SELECT count(*) FILTER (WHERE request = '<BADREQ>' AND termination_state = 'CR--' AND status = 400) "
        "FROM requests"
    ).fetchall()[0][0]
    assert src.rows == n + probes and probes >= 1
    got = con.execute("SELECT status FROM requests WHERE request <> '<BADREQ>'").fetchall()
    assert sorted(r[0] for r in got) == sorted(statuses)
    assert statuses.count(200) == 16 and statuses.count(404) == 20 and statuses.count(403) == 4
    ok = con.execute(
        "SELECT count(*), count(duration_us), count(ttfb_us), count(connect_us), min(server), "
        "count(DISTINCT extra['captured_request_headers']) FROM requests WHERE status IN (200, 404)"
    ).fetchall()[0]
    assert ok == (36, 36, 36, 36, "app1", 36)
    denied = con.execute(
        "SELECT DISTINCT server, connect_us, ttfb_us, termination_state FROM requests WHERE status = 403"
    ).fetchall()
    assert denied == [("<NOSRV>", None, None, "PR--")]
    # Ta covers the server's part.
    assert con.execute(
        "SELECT bool_and(duration_us >= ttfb_us) FROM requests WHERE status IN (200, 404)"
    ).fetchall() == [(True,)]


def _wait_for(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


def test_auto_detects_a_file_of_events_only():
    """A log holding only HAProxy's own messages still gets a format: its lines are events."""
    path = CORPUS / "tricky_filebeat" / "haproxy_default.log"
    if not path.exists():
        pytest.skip(f"corpus file not found: {path}")
    s = run_ingest([str(path)], profile="none")
    src = s.sources[0]
    assert src.format.startswith("haproxy:")
    assert (src.lines, src.rows, src.rejects, src.events) == (1, 0, 0, 1)
    kind, server = s.store.con.execute("SELECT kind, server FROM events").fetchall()[0]
    assert (kind, server) == ("connect", "main")
