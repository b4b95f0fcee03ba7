"""Every Apache mod_log_config directive of issue 2, one line at a time.

Expected values are written by hand or computed with Python's datetime/zoneinfo, never read
back from logan. Every ingest goes through the `ingest_text` fixture, which also checks the
invariant rows + rejects = lines on each input.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pandas as pd
import pytest
from conftest import reading_with

from logan.errors import FormatError, LoganError

CLF = "%d/%b/%Y:%H:%M:%S %z"


def utc(text: str, fmt: str = CLF) -> datetime:
    """A timestamp with an offset as a naive UTC datetime, the way the store keeps it."""
    return datetime.strptime(text, fmt).astimezone(UTC).replace(tzinfo=None)


def local(text: str, fmt: str, tz: str) -> datetime:
    """A timestamp without an offset, read in `tz`, as naive UTC."""
    naive = datetime.strptime(text, fmt)
    return naive.replace(tzinfo=ZoneInfo(tz)).astimezone(UTC).replace(tzinfo=None)


def null(v: object) -> bool:
    return v is None or bool(pd.isna(v))


@pytest.fixture
def one(ingest_text):  # noqa: ANN001, ANN201
    """one(fmt, line, tz='UTC') -> the single row (a dict) that the line gives."""

    def run(fmt: str, line: str, tz: str = "UTC") -> dict:
        _, req, rej = ingest_text(line + "\n", fmt, tz=tz)
        assert rej.empty, rej.to_dict("records")
        assert len(req) == 1
        return req.iloc[0].to_dict()

    return run


def extra(row: dict) -> dict:
    """The row's `extra` entries that hold a value (a '-' field may be absent or NULL)."""
    e = row["extra"]
    return {} if null(e) else {k: v for k, v in dict(e).items() if not null(v)}


# ---- who -------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["192.0.2.7", "host-7.example.org", "2001:41d0:8:f69::1", "::1"])
def test_h_remote_host(one, value):
    row = one("%h %>s", f"{value} 200")
    assert row["client"] == value
    assert row["status"] == 200


def test_a_client_ip(one):
    assert one("%a %>s", "198.51.100.4 200")["client"] == "198.51.100.4"


def test_c_a_peer_ip_alone_is_the_client(one):
    assert one("%{c}a %>s", "10.0.0.9 200")["client"] == "10.0.0.9"


def test_a_and_c_a_client_and_peer(one):
    row = one("%a %{c}a %>s", "198.51.100.4 10.0.0.9 200")
    assert row["client"] == "198.51.100.4"
    assert extra(row) == {"peer_ip": "10.0.0.9"}


def test_A_server_ip(one):
    row = one("%h %A", "192.0.2.7 203.0.113.80")
    assert row["client"] == "192.0.2.7"
    assert extra(row) == {"server_ip": "203.0.113.80"}


def test_l_logname(one):
    assert extra(one("%h %l", "192.0.2.7 CH")) == {"logname": "CH"}
    # '-' is absent: no extra entry at all.
    assert extra(one("%h %l", "192.0.2.7 -")) == {}


def test_u_remote_user(one):
    assert one("%h %u", "192.0.2.7 alice")["remote_user"] == "alice"
    assert null(one("%h %u", "192.0.2.7 -")["remote_user"])


def test_u_empty_user_name_is_empty_string(one):
    assert one("%h %u", '192.0.2.7 ""')["remote_user"] == ""


# ---- when ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stamp",
    [
        "10/Oct/2000:13:55:36 -0700",
        "01/Dec/2013:09:22:29 +0100",
        "29/Feb/2016:23:59:59 +0545",
        "31/Dec/1999:23:00:00 -1200",
    ],
)
def test_t_clf_time_is_utc(one, stamp):
    row = one("%h %t", f"h [{stamp}]")
    assert row["ts_start"] == utc(stamp)
    assert null(row["ts_end"])  # no duration: the end is unknown


def test_t_offset_wins_over_tz_option(one):
    stamp = "10/Oct/2000:13:55:36 +0200"
    assert one("%h %t", f"h [{stamp}]", tz="America/New_York")["ts_start"] == utc(stamp)


@pytest.mark.parametrize("prefix", ["", "begin:"])
def test_strftime_with_offset(one, prefix):
    stamp = "10/Oct/2000:13:55:36 +0200"
    row = one(f"%h %{{{prefix}%d/%b/%Y:%H:%M:%S %z}}t", f"h {stamp}")
    assert row["ts_start"] == utc(stamp)


def test_strftime_without_offset_uses_tz(ingest_text):
    s, req, _ = ingest_text("h 2000-10-10 13:55:36\n", "%h %{%Y-%m-%d %H:%M:%S}t", tz="America/New_York")
    assert req.ts_start[0] == local("2000-10-10 13:55:36", "%Y-%m-%d %H:%M:%S", "America/New_York")
    assert s.tz_assumed is True


def test_strftime_T_F_shorthands(one):
    row = one("%h [%{%F %T}t]", "h [2016-09-02 10:42:51]")
    assert row["ts_start"] == datetime(2016, 9, 2, 10, 42, 51)


def test_offset_timestamps_do_not_claim_an_assumed_tz(ingest_text):
    s, _, _ = ingest_text("h [10/Oct/2000:13:55:36 +0200]\n", "%h %t", tz="Europe/Berlin")
    assert s.tz_assumed is False


def test_tz_across_dst_changes(ingest_text):
    fmt = "%h [%{%Y-%m-%d %H:%M:%S}t] %D"
    stamps = [
        "2021-03-28 01:30:00",  # CET, before spring forward
        "2021-03-28 03:30:00",  # CEST, after it
        "2021-10-31 01:30:00",  # CEST, before fall back
        "2021-10-31 03:30:00",  # CET, after it
        "2021-07-01 12:00:00",  # summer
        "2021-01-15 12:00:00",  # winter
    ]
    text = "".join(f"h [{s}] 250\n" for s in stamps)
    s, req, _ = ingest_text(text, fmt, tz="Europe/Berlin")
    expected = [local(x, "%Y-%m-%d %H:%M:%S", "Europe/Berlin") for x in stamps]
    assert list(req.ts_start) == expected
    # 01:30 CET -> 03:30 CEST is one real hour; 01:30 CEST -> 03:30 CET is three.
    assert req.ts_start[1] - req.ts_start[0] == timedelta(hours=1)
    assert req.ts_start[3] - req.ts_start[2] == timedelta(hours=3)
    assert list(req.ts_end) == [e + timedelta(microseconds=250) for e in expected]
    assert s.tz_assumed is True


@pytest.mark.parametrize(
    ("frac_fmt", "frac", "us"), [("usec_frac", "003372", 3372), ("msec_frac", "047", 47000)]
)
def test_strftime_with_fraction(one, frac_fmt, frac, us):
    row = one(f"%h [%{{%Y-%m-%d %H:%M:%S}}t.%{{{frac_fmt}}}t]", f"h [2016-09-02 10:42:51.{frac}]")
    assert row["ts_start"] == datetime(2016, 9, 2, 10, 42, 51) + timedelta(microseconds=us)


def test_strftime_fraction_in_tz(one):
    row = one(
        "%h [%{%Y-%m-%d %H:%M:%S}t.%{usec_frac}t]", "h [2016-09-02 10:42:51.000001]", tz="Europe/Zurich"
    )
    expected = local("2016-09-02 10:42:51", "%Y-%m-%d %H:%M:%S", "Europe/Zurich") + timedelta(microseconds=1)
    assert row["ts_start"] == expected


EPOCH = 971186136  # 2000-10-10 13:55:36 UTC


@pytest.mark.parametrize(
    ("arg", "text", "extra_us"),
    [("sec", str(EPOCH), 0), ("msec", f"{EPOCH}123", 123000), ("usec", f"{EPOCH}123456", 123456)],
)
def test_epoch_times(one, arg, text, extra_us):
    row = one(f"%h %{{{arg}}}t", f"h {text}")
    expected = datetime.fromtimestamp(EPOCH, UTC).replace(tzinfo=None) + timedelta(microseconds=extra_us)
    assert expected == datetime(2000, 10, 10, 13, 55, 36) + timedelta(microseconds=extra_us)
    assert row["ts_start"] == expected


@pytest.mark.parametrize("arg", ["begin:sec", "end:usec"])
def test_epoch_times_with_begin_end_prefix(one, arg):
    text = str(EPOCH) if arg.endswith("sec") and not arg.endswith("usec") else f"{EPOCH}000250"
    row = one(f"%h %{{{arg}}}t %D", f"h {text} 1000")
    base = datetime(2000, 10, 10, 13, 55, 36)
    if arg.startswith("end:"):
        assert row["ts_end"] == base + timedelta(microseconds=250)
        assert row["ts_start"] == base + timedelta(microseconds=250 - 1000)
    else:
        assert row["ts_start"] == base


def test_strftime_percent_s(ingest_text):
    try:
        _, req, _ = ingest_text(f"h {EPOCH}\n", "%h %{%s}t")
    except LoganError:
        return  # a clear error is acceptable too
    assert req.ts_start[0] == datetime(2000, 10, 10, 13, 55, 36)


def test_end_time_role_derives_start_from_duration(one):
    stamp = "10/Oct/2000:13:55:36 +0200"
    row = one("%h %{end:%d/%b/%Y:%H:%M:%S %z}t %D", f"h {stamp} 1500")
    assert row["ts_end"] == utc(stamp)
    assert row["ts_start"] == utc(stamp) - timedelta(microseconds=1500)
    assert row["duration_us"] == 1500


def test_end_time_with_ms_duration(one):
    stamp = "10/Oct/2000:13:55:36 +0200"
    row = one("%h %{end:%d/%b/%Y:%H:%M:%S %z}t %{ms}T", f"h {stamp} 1500")
    assert row["ts_end"] == utc(stamp)
    assert row["ts_start"] == utc(stamp) - timedelta(seconds=1.5)


def test_begin_time_derives_end_from_duration(one):
    stamp = "10/Oct/2000:13:55:36 -0700"
    row = one("%h %t %D", f"h [{stamp}] 2500000")
    assert row["ts_start"] == utc(stamp)
    assert row["ts_end"] == utc(stamp) + timedelta(seconds=2.5)


# ---- what ------------------------------------------------------------------------------


def test_r_request_line(one):
    row = one('%h "%r" %>s', 'h "GET /a/b?x=1&y=2 HTTP/1.1" 200')
    assert row["request"] == "GET /a/b?x=1&y=2 HTTP/1.1"
    got = (row["method"], row["path"], row["query"], row["protocol"])
    assert got == ("GET", "/a/b", "x=1&y=2", "HTTP/1.1")


def test_r_without_query(one):
    row = one('%h "%r" %>s', 'h "PUT /dev/report/node1 HTTP/1.0" 200')
    assert (row["method"], row["path"], row["protocol"]) == ("PUT", "/dev/report/node1", "HTTP/1.0")
    assert null(row["query"])


def test_r_absolute_uri(one):
    row = one('%h "%r" %>s', 'h "GET http://example.com:8080/a/b?c=d HTTP/1.1" 200')
    assert row["request"] == "GET http://example.com:8080/a/b?c=d HTTP/1.1"
    assert (row["path"], row["query"]) == ("/a/b", "c=d")


@pytest.mark.parametrize("line", ["GET/ HTTP/1.1", "HELP", "batman", "GET /a b HTTP/1.1"])
def test_r_not_method_uri_protocol(one, line):
    row = one('%h "%r" %>s', f'h "{line}" 400')
    assert row["request"] == line
    assert null(row["method"]) and null(row["path"]) and null(row["protocol"])
    assert row["status"] == 400


def test_r_dash_is_null(one):
    row = one('%h "%r" %>s %b', 'h "-" 408 -')
    assert null(row["request"]) and null(row["method"]) and null(row["path"])
    assert row["status"] == 408
    assert null(row["bytes_sent"])


def test_m_U_q_H(one):
    row = one("%m %U %q %H", "POST /a/b ?x=1 HTTP/1.0")
    assert (row["method"], row["path"], row["query"], row["protocol"]) == ("POST", "/a/b", "x=1", "HTTP/1.0")


def test_q_empty_is_null(one):
    # %q writes "" when there is no query string: two spaces in a row.
    row = one("%m %U %q %H", "GET /a/b  HTTP/1.1")
    assert (row["method"], row["path"], row["protocol"]) == ("GET", "/a/b", "HTTP/1.1")
    assert null(row["query"])


def test_U_q_adjacent(ingest_text):
    _, req, _ = ingest_text("GET /a?x=1 HTTP/1.1\nGET /abc HTTP/1.1\n", "%m %U%q %H")
    assert list(req.path) == ["/a", "/abc"]
    assert req["query"][0] == "x=1"
    assert null(req["query"][1])


# ---- status ----------------------------------------------------------------------------


@pytest.mark.parametrize("directive", ["%>s", "%<s", "%s"])
def test_status_directives(one, directive):
    row = one(f"%h {directive}", "h 404")
    assert row["status"] == 404


def test_final_status_wins_over_original(one):
    row = one("%h %s %>s", "h 302 200")
    assert row["status"] == 200
    assert extra(row) == {"original_status": "302"}


def test_status_dash_is_null(one):
    assert null(one("%h %>s", "h -")["status"])


def test_duplicate_extra_names_do_not_crash(ingest_text):
    try:
        _, req, _ = ingest_text("h 200 301 301\n", "%h %>s %<s %s")
    except LoganError:
        return  # refusing the format with a clear message is fine too
    assert req.status[0] == 200


@pytest.mark.parametrize(
    ("fmt", "bad"),
    [
        ("%h %>s", "99999"),
        ("%h %T", "99999999999999"),
        ("%h %{ms}T", "99999999999999999"),
        ("%h %{sec}t", "99999999999999"),
        ("%h %{remote}p", "99999999999"),
    ],
)
def test_out_of_range_number_is_one_reject(ingest_text, fmt, bad):
    _, req, rej = ingest_text(f"h {bad}\nh 200\n", fmt)
    assert list(req.line_no) == [2]
    assert list(rej.line_no) == [1]


def test_out_of_range_D_is_one_reject(ingest_text):
    _, req, rej = ingest_text("h 99999999999999999999\nh 5\n", "%h %D")
    assert list(req.duration_us) == [5]
    assert list(zip(rej.line_no, rej.reason, strict=True)) == [(1, "bad %D value")]


# ---- sizes -----------------------------------------------------------------------------


def test_b_body_bytes(one):
    assert one("%h %b", "h 2326")["bytes_sent"] == 2326


def test_b_dash_is_null_not_zero(one):
    row = one("%h %b", "h -")
    assert null(row["bytes_sent"])


def test_B_zero_is_zero(one):
    row = one("%h %B", "h 0")
    assert row["bytes_sent"] == 0
    assert not null(row["bytes_sent"])


def test_O_bytes_out(one):
    assert one("%h %O", "h 12118")["bytes_sent"] == 12118


def test_I_and_O(one):
    row = one("%h %I %O", "h 701 12118")
    assert (row["bytes_received"], row["bytes_sent"]) == (701, 12118)


def test_S_bytes_total(one):
    row = one("%h %S", "h 12819")
    assert extra(row) == {"bytes_total": "12819"}


# ---- how long --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("directive", "text", "us"),
    [
        ("%D", "88871", 88871),
        ("%T", "3", 3_000_000),
        ("%{s}T", "2", 2_000_000),
        ("%{ms}T", "1736", 1_736_000),
        ("%{us}T", "1736", 1736),
        ("%D", "301455050", 301_455_050),
        ("%T", "0", 0),
    ],
)
def test_duration_units(one, directive, text, us):
    row = one(f"%h {directive}", f"h {text}")
    assert row["duration_us"] == us


@pytest.mark.parametrize("directive", ["%D", "%T", "%{ms}T"])
def test_duration_dash_is_null(one, directive):
    assert null(one(f"%h {directive}", "h -")["duration_us"])


def test_D_wins_over_T_wherever_written(one):
    row = one("%h %T %D", "h 0 912345")
    assert row["duration_us"] == 912345
    assert extra(row) == {"duration_T": "0"}


def test_FB_time_to_first_byte(one):
    row = one("%h %D %^FB", "h 5000 1234")
    assert (row["duration_us"], row["ttfb_us"]) == (5000, 1234)
    assert null(one("%h %^FB", "h -")["ttfb_us"])


# ---- server side -----------------------------------------------------------------------


@pytest.mark.parametrize("directive", ["%v", "%V"])
def test_vhost(one, directive):
    assert one(f"{directive} %h", "www.example.com 192.0.2.7")["vhost"] == "www.example.com"


def test_v_and_V(one):
    row = one("%v %V %h", "canonical.example.com alias.example.com 192.0.2.7")
    assert row["vhost"] == "canonical.example.com"
    assert extra(row) == {"server_name_v": "alias.example.com"}


def test_vhost_port_prefix_and_ipv6_client(one):
    row = one(
        '%v:%p %h %l %u %t "%r" %>s %O',
        'www.example.com:443 2001:db8::1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 7',
    )
    got = (row["vhost"], row["client"], row["status"], row["bytes_sent"])
    assert got == ("www.example.com", "2001:db8::1", 200, 7)
    assert extra(row) == {"server_port": "443"}


@pytest.mark.parametrize(
    ("directive", "key"),
    [("%p", "server_port"), ("%{canonical}p", "server_port"), ("%{local}p", "local_port")],
)
def test_server_ports(one, directive, key):
    row = one(f"%h {directive}", "h 8443")
    assert extra(row) == {key: "8443"}
    assert null(row["client_port"])


def test_remote_port(one):
    row = one("%h %{remote}p", "h 54321")
    assert row["client_port"] == 54321
    assert extra(row) == {}


@pytest.mark.parametrize(
    ("directive", "text", "key"),
    [
        ("%P", "12345", "pid"),
        ("%k", "3", "keepalives"),
        ("%X", "+", "conn_status"),
        ("%X", "X", "conn_status"),
        ("%L", "VfqW0cCoAwcAACKIUAEAAAAF", "log_id"),
    ],
)
def test_connection_extras(one, directive, text, key):
    assert extra(one(f"%h {directive}", f"h {text}")) == {key: text}


def test_connection_extras_dash_absent(one):
    assert extra(one("%h %X %L", "h - -")) == {}


# ---- headers, notes, environment -------------------------------------------------------


def test_well_known_request_headers(one):
    row = one(
        '%h "%{Referer}i" "%{User-Agent}i" "%{X-Forwarded-For}i" %{Host}i',
        'h "https://ref.example/x?y" "Mozilla/5.0 (X11; Linux x86_64)" "203.0.113.9, 10.0.0.1" app.example',
    )
    assert row["referer"] == "https://ref.example/x?y"
    assert row["user_agent"] == "Mozilla/5.0 (X11; Linux x86_64)"
    assert row["forwarded_for"] == "203.0.113.9, 10.0.0.1"
    assert row["vhost"] == "app.example"


def test_header_names_are_case_insensitive(one):
    row = one('%h "%{referer}i" "%{USER-AGENT}i"', 'h "r" "ua"')
    assert (row["referer"], row["user_agent"]) == ("r", "ua")


def test_other_request_header(one):
    row = one('%h "%{Accept-Language}i"', 'h "de-CH, en;q=0.5"')
    assert extra(row) == {"in.Accept-Language": "de-CH, en;q=0.5"}


def test_request_header_dash_is_null(one):
    row = one('%h "%{Referer}i" "%{User-Agent}i"', 'h "-" "-"')
    assert null(row["referer"]) and null(row["user_agent"])


def test_response_headers(one):
    row = one("%h %{X-Cache}o %{Content-Type}o", "h HIT text/html")
    assert row["cache_status"] == "HIT"
    assert extra(row) == {"out.Content-Type": "text/html"}


@pytest.mark.parametrize(
    ("directive", "key"),
    [
        ("%{GEOIP_COUNTRY_CODE}e", "env.GEOIP_COUNTRY_CODE"),
        ("%{ratio}n", "note.ratio"),
        ("%{JSESSIONID}C", "cookie.JSESSIONID"),
        ("%{SSL_PROTOCOL}x", "ssl.SSL_PROTOCOL"),
        ("%{Expires}^ti", "trailer_in.Expires"),
        ("%{Server-Timing}^to", "trailer_out.Server-Timing"),
    ],
)
def test_named_extras(one, directive, key):
    row = one(f"%h {directive} %>s", "h TLSv1.2 200")
    assert extra(row) == {key: "TLSv1.2"}
    assert row["status"] == 200


def test_percent_literal(one):
    row = one("%h %{ratio}n%% %D", "h 35% 100")
    assert extra(row) == {"note.ratio": "35"}
    assert row["duration_us"] == 100


@pytest.mark.parametrize("fmt", ["%h %Z", "%h %{foo}Z", "%h %>Q"])
def test_unknown_directive_is_a_clear_error(ingest_text, fmt):
    bad = fmt.split()[-1]
    with pytest.raises(FormatError, match=re.escape(f"directive {bad}")):
        ingest_text("h x\n", fmt)


def test_config_escaped_quotes_in_format(one):
    # Pasted from httpd.conf: LogFormat "%h \"%r\" %>s"
    row = one(r"%h \"%r\" %>s", 'h "GET / HTTP/1.1" 200')
    assert (row["path"], row["status"]) == ("/", 200)


# ---- fidelity: escapes, '-', line ends -------------------------------------------------

COMBINED_D = "combined_D"
HEAD = "192.0.2.7 - - [10/Oct/2000:13:55:36 -0700]"


def test_escaped_quote_and_backslash_decoded(one):
    line = HEAD + r' "GET /a\"b\\c HTTP/1.1" 200 5 10 "-" "Alba 10\" Build \\x"'
    row = one(COMBINED_D, line)
    assert row["request"] == 'GET /a"b\\c HTTP/1.1'
    assert row["path"] == '/a"b\\c'
    assert row["user_agent"] == 'Alba 10" Build \\x'


def test_escaped_backslash_at_end_of_field(one):
    row = one(COMBINED_D, HEAD + r' "GET / HTTP/1.1" 200 5 10 "-" "ua \\"')
    assert row["user_agent"] == "ua \\"


@pytest.mark.parametrize("req", [r"\x16\x03\x01", r"\x16\x03\x01\x01 \x02", r"\x16\x03\x01\x06"])
def test_tls_handshake_kept_as_written(one, req):
    row = one(COMBINED_D, HEAD + f' "{req}" 400 226 - "-" "-"')
    assert row["request"] == req  # backslash, x, 1, 6: as Apache wrote it
    assert row["request"].startswith("\\x16")
    assert null(row["method"]) and null(row["path"]) and null(row["protocol"]) and null(row["query"])
    assert (row["status"], row["bytes_sent"]) == (400, 226)
    assert null(row["duration_us"])


def test_escaped_bytes_in_path_kept(one):
    row = one(COMBINED_D, HEAD + r' "GET /caf\xc3\xa9 HTTP/1.1" 200 5 10 "-" "-"')
    assert row["path"] == "/caf\\xc3\\xa9"


def test_dash_is_null_never_zero(one):
    row = one(COMBINED_D, HEAD + ' "GET / HTTP/1.1" 200 - - "-" "-"')
    assert row["status"] == 200
    for col in ("bytes_sent", "duration_us", "remote_user", "referer", "user_agent", "ts_end"):
        assert null(row[col]), col
    assert extra(row) == {}  # %l '-' leaves no entry


def test_ipv6_clients(ingest_text):
    clients = ["2001:41d0:8:f69::1", "::1", "fe80::1ff:fe23:4567:890a", "::ffff:192.0.2.1"]
    tail = ' - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 5 10 "-" "-"\n'
    text = "".join(c + tail for c in clients)
    _, req, _ = ingest_text(text, COMBINED_D)
    assert list(req.client) == clients


def _line(i: int, ua: str = "-") -> str:
    stamp = f"[10/Oct/2000:13:55:{i:02d} -0700]"
    return f'192.0.2.{i} - - {stamp} "GET /p{i} HTTP/1.1" 200 {i} {i * 100} "-" "{ua}"'


def test_truncated_last_line_without_newline(ingest_text):
    _, req, _ = ingest_text(_line(1) + "\n" + _line(2), COMBINED_D)
    assert list(req.line_no) == [1, 2]
    assert list(req.path) == ["/p1", "/p2"]
    assert list(req.duration_us) == [100, 200]


def test_last_line_cut_in_the_middle_is_a_reject(ingest_text):
    cut = _line(2)[:60]
    _, req, rej = ingest_text(_line(1) + "\n" + cut, COMBINED_D)
    assert list(req.line_no) == [1]
    assert list(zip(rej.line_no, rej.raw, rej.reason, strict=True)) == [(2, cut, "does not match format")]


def test_crlf_line_ends(ingest_text):
    text = _line(1, "ua one") + "\r\n" + _line(2) + "\r\n" + _line(3, "ua three") + "\n"
    _, req, _ = ingest_text(text, COMBINED_D)
    assert list(req.user_agent.fillna("<null>")) == ["ua one", "<null>", "ua three"]
    assert list(req.duration_us) == [100, 200, 300]


def test_crlf_last_field_numeric(ingest_text):
    # common: %b is the last field; a '\r' left on it would make it unreadable.
    text = '192.0.2.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 2326\r\n'
    _, req, _ = ingest_text(text * 2, "common")
    assert list(req.bytes_sent) == [2326, 2326]


def test_empty_line_is_a_reject(ingest_text):
    text = _line(1) + "\n\n" + _line(3) + "\n"
    s, req, rej = ingest_text(text, COMBINED_D)
    assert list(req.line_no) == [1, 3]
    assert list(zip(rej.line_no, rej.raw, rej.reason, strict=True)) == [(2, "", "empty line")]
    assert s.rejects_by_reason == {"empty line": 1}


def test_line_with_only_cr_is_an_empty_line(ingest_text):
    _, req, rej = ingest_text(_line(1) + "\r\n\r\n", COMBINED_D)
    assert list(rej.reason) == ["empty line"]


def test_garbage_line_is_a_reject_with_reason(ingest_text):
    _, req, rej = ingest_text(_line(1) + "\nnot a log line at all\n", COMBINED_D)
    assert list(req.line_no) == [1]
    assert list(zip(rej.line_no, rej.raw, rej.reason, strict=True)) == [
        (2, "not a log line at all", "does not match format")
    ]


def test_bad_value_reason_names_the_directive(ingest_text):
    # The shape of %t ([...]) is there, its text is not a time: the reason says which field.
    bad = '192.0.2.1 - - [99/Foo/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 5 10 "-" "-"'
    _, _, rej = ingest_text(bad + "\n", COMBINED_D)
    assert list(zip(rej.line_no, rej.reason, strict=True)) == [(1, "bad %t value")]


# ---- the two parsing paths agree ------------------------------------------------------


def test_backslash_elsewhere_gives_identical_row(ingest_text):
    plain = _line(7, "agent")
    # Same line, a harmless escaped backslash in the referer, decoded: the rest reads alike.
    escaped = plain.replace('"-" "agent"', '"http://r.example/a\\\\b" "agent"')
    _, req, _ = ingest_text(plain + "\n" + escaped + "\n", COMBINED_D)
    a, b = req.iloc[0].to_dict(), req.iloc[1].to_dict()
    assert null(a["referer"]) and b["referer"] == "http://r.example/a\\b"
    for col in a:
        if col in ("line_no", "referer"):
            continue
        assert (null(a[col]) and null(b[col])) or a[col] == b[col], col


VARIED = (
    "\n".join(
        [
            _line(1, "Mozilla/5.0 (X11; Linux x86_64)"),
            '2001:41d0:8:f69::1 - bob [01/Dec/2013:09:22:29 +0100] "POST /a?b=c&d HTTP/1.0" 302 - 55 '
            '"http://x/" "-"',
            '192.0.2.9 - - [10/Oct/2000:13:55:36 -0700] "\\x16\\x03\\x01" 400 226 - "-" "-"',
            '192.0.2.9 - - [10/Oct/2000:13:55:36 -0700] "-" 408 - - "-" "-"',
            '192.0.2.9 - - [10/Oct/2000:13:55:36 -0700] "GET /q\\"x HTTP/1.1" 200 1 2 "-" "a \\"b\\""',
            "",
            "garbage",
            '192.0.2.9 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" - - - "-" "-"',
            '192.0.2.9 - - [31/Dec/1999:23:59:59 -1200] "OPTIONS * HTTP/1.1" 200 0 1 "-" "curl/8.0"',
            '192.0.2.9 - - [10/Oct/2000:13:55:36 -0700] "GET /  HTTP/1.1" 200 0 1 "-" "-"',
            '192.0.2.9 - - [10/Oct/2000:13:55:36 -0700] "GET /x HTTP/1.1" 200 0 1x "-" "-"',
        ]
    )
    + "\n"
)


@pytest.mark.parametrize("reader", ["sql", "regex"])
def test_fast_and_exact_paths_agree_on_every_line(ingest_text, monkeypatch, reader):
    """The same input read once normally (a split path where it can) and once taken by
    another reader first (the SQL split, or the regex for every line) gives identical
    tables."""
    s1, req1, rej1 = ingest_text(VARIED, COMBINED_D)
    with reading_with(monkeypatch, reader):
        s2, req2, rej2 = ingest_text(VARIED, COMBINED_D)
    drop = ["source"]
    pd.testing.assert_frame_equal(
        req1.drop(columns=drop).reset_index(drop=True), req2.drop(columns=drop).reset_index(drop=True)
    )
    pd.testing.assert_frame_equal(
        rej1.drop(columns=drop).reset_index(drop=True), rej2.drop(columns=drop).reset_index(drop=True)
    )
    assert s1.rejects_by_reason == s2.rejects_by_reason
    # And the input really exercised both: 11 lines, 3 of them rejects.
    assert (s1.rows, s1.rejects) == (8, 3)
