"""nginx dialect: variables, escapes, log_format from nginx.conf, and the real corpus.

Expected values are computed here independently of logan (hand-written lines with their
values worked out by hand, and plain Python parsing of the corpus files).
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from logan.errors import FormatError
from logan.read.classify import ROUTE_PARAM_MIN_VALUES
from logan.read.compile import compile_format
from logan.read.dialects import get_dialect, resolve_format
from logan.read.ingest import ingest as run_ingest
from logan.read.nginx_conf import format_from_nginx_conf
from logan.schema import REQUESTS_TABLE

CORPUS = Path(__file__).parents[2] / "shared" / "corpus"
needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"the shared log corpus is not at {CORPUS} (it is never copied into the repo)"
)

COMBINED = '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"'  # noqa: E501


# Nginx Proxy Manager's `proxy` log_format (tricky_crowdsec PROVENANCE).
NPM_PROXY = (
    "[$time_local] $upstream_cache_status $upstream_status $status - $request_method $scheme $host "
    '"$request_uri" [Client $remote_addr] [Length $body_bytes_sent] [Gzip $gzip_ratio] [Sent-to $server] '
    '"$http_user_agent" "$http_referer"'
)


def ingest(tmp_path: Path, lines: list[str] | str, fmt: str):
    """Ingest lines (or a corpus file path) with an nginx format; (summary, connection)."""
    if isinstance(lines, list):
        path = tmp_path / "access.log"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        lines = str(path)
    s = run_ingest([lines], format=fmt, dialect="nginx", profile="none")
    return s, s.store.con


def rows(con, cols: str) -> list[tuple]:
    return con.execute(f"SELECT {cols} FROM requests ORDER BY line_no").fetchall()


def line_count(path: Path) -> int:
    return len(path.read_bytes().splitlines())


def us(seconds: str) -> int:
    return int(Decimal(seconds) * 1_000_000)


# ---- variables ------------------------------------------------------------------------


def test_time_local_is_the_end_and_request_time_gives_the_start(tmp_path):
    line = '10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET /a?b=1 HTTP/1.1" 200 5 "-" "ua" 1.234 - -'
    s, con = ingest(tmp_path, [line], "timed")
    assert (s.rows, s.rejects) == (1, 0)
    end = datetime(2000, 10, 10, 20, 55, 36)  # 13:55:36 at -07:00 is 20:55:36 UTC
    assert rows(con, "ts_end, ts_start, duration_us") == [(end, end - timedelta(seconds=1.234), 1_234_000)]


def test_request_time_exact_microseconds(tmp_path):
    # 0.001 s steps must not pick up float error: 20.178 s is 20178000 us, not 20177999.
    times = ["0.000", "0.001", "20.178", "3.631", "0.29"]
    lines = [
        f'1.2.3.4 - - [01/Jan/2024:00:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "-" {t} - -' for t in times
    ]
    _, con = ingest(tmp_path, lines, "nginx:timed")
    assert [r[0] for r in rows(con, "duration_us")] == [0, 1000, 20_178_000, 3_631_000, 290_000]


def test_request_time_exact_on_both_sides_of_the_narrow_decimal(tmp_path):
    # Times below 10^6 s are read in 18 digits, longer ones in 38 (logan.read.convert): the
    # same microseconds either way, up to the largest a BIGINT holds; one more is a reject.
    times = ["999999.999999", "1000000.000001", "86400000", "9223372036854.775807", "-0.001", "7"]
    line = '1.2.3.4 - - [01/Jan/2024:00:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "-" {} - -'
    too_long = line.format("9223372036854.775808")
    s, con = ingest(tmp_path, [*(line.format(t) for t in times), too_long], "nginx:timed")
    assert (s.rows, s.rejects) == (len(times), 1)
    assert [r[0] for r in rows(con, "duration_us")] == [us(t) for t in times]
    assert us(times[3]) == 2**63 - 1


@pytest.mark.parametrize(
    ("value", "total", "tries"),
    [
        ("0.012", 12_000, 1),
        ("0.012, 0.004 : 0.010", 26_000, 3),  # two tries, then an internal redirect
        ("0.100, -", 100_000, 2),  # the second try never answered
        ("-", None, 0),  # no upstream at all (cache hit)
        ("-, -", None, 2),
    ],
)
def test_upstream_times_are_summed_and_tries_counted(tmp_path, value, total, tries):
    fmt = '$remote_addr [$time_local] "$request" $status rt=$request_time urt="$upstream_response_time"'
    line = f'1.2.3.4 [01/Jan/2024:00:00:00 +0000] "GET / HTTP/1.1" 200 rt=0.200 urt="{value}"'
    s, con = ingest(tmp_path, [line], fmt)
    assert s.rejects == 0
    assert rows(con, "upstream_us, upstream_tries, duration_us") == [(total, tries, 200_000)]


def test_bare_upstream_lists_with_spaces(tmp_path):
    # Unquoted lists hold spaces: the split path cannot take them, the regex path must.
    fmt = "$remote_addr [$time_local] $status $upstream_addr $upstream_status $upstream_connect_time $upstream_header_time"  # noqa: E501
    lines = [
        "1.2.3.4 [01/Jan/2024:00:00:00 +0000] 502 10.0.0.1:80, 10.0.0.2:80 : unix:/s 502, 502 : 200 0.001, 0.002 : - 0.010, 0.020 : 0.003",  # noqa: E501
        "1.2.3.4 [01/Jan/2024:00:00:01 +0000] 200 10.0.0.1:80 200 0.001 0.004",
    ]
    s, con = ingest(tmp_path, lines, fmt)
    assert (s.rows, s.rejects) == (2, 0)
    assert rows(
        con, "upstream_addr, upstream_status, upstream_tries, upstream_connect_us, upstream_header_us"
    ) == [
        ("10.0.0.1:80, 10.0.0.2:80 : unix:/s", "502, 502 : 200", 3, 3_000, 33_000),
        ("10.0.0.1:80", "200", 1, 1_000, 4_000),
    ]


def test_msec_and_iso8601(tmp_path):
    fmt = "$msec $time_iso8601 $status $request_time"
    s, con = ingest(tmp_path, ["1505682002.133 2017-09-18T00:00:02+03:00 200 0.151"], fmt)
    assert s.rejects == 0
    # $msec has the milliseconds: it gives the time, $time_iso8601 goes to extra.
    end = datetime(2017, 9, 17, 21, 0, 2, 133_000)
    assert rows(con, "ts_end, ts_start") == [(end, end - timedelta(microseconds=151_000))]
    fmt2 = "$time_iso8601 $status"
    _, con2 = ingest(tmp_path, ["2017-09-18T00:00:02+03:00 200"], fmt2)
    assert rows(con2, "ts_end") == [(datetime(2017, 9, 17, 21, 0, 2),)]


def test_request_uri_uri_args_and_protocol(tmp_path):
    fmt = "$remote_addr $request_method $scheme://$host$request_uri $server_protocol $status"
    s, con = ingest(tmp_path, ["1.2.3.4 GET https://Example.com/p/a?x=1&y=2 HTTP/2.0 200"], fmt)
    assert s.rejects == 0
    assert rows(con, "method, vhost, path, query, protocol, extra") == [
        ("GET", "Example.com", "/p/a", "x=1&y=2", "HTTP/2.0", {"scheme": "https"})
    ]
    fmt2 = "$remote_addr $uri $args $status"
    _, con2 = ingest(tmp_path, ["1.2.3.4 /index.html - 200", "1.2.3.4 /s q=a 200"], fmt2)
    assert rows(con2, "path, query") == [("/index.html", None), ("/s", "q=a")]


def test_headers_cookies_and_unknown_variables_go_to_extra(tmp_path):
    fmt = '$remote_addr "$http_x_forwarded_for" "$http_X_Request_ID" $cookie_sid ${my_var}x [$empty] $sent_http_x_cache'  # noqa: E501
    line = '1.2.3.4 "10.0.0.1, 10.0.0.2" "abc" s1 valx [] hit'
    s, con = ingest(tmp_path, [line], fmt)
    assert s.rejects == 0
    assert rows(con, "forwarded_for, cache_status, extra") == [
        (
            "10.0.0.1, 10.0.0.2",
            "HIT",
            {"http.x_request_id": "abc", "cookie.sid": "s1", "my_var": "val", "empty": ""},
        )
    ]


def test_unquoted_forwarded_for_list(tmp_path):
    fmt = "$http_x_forwarded_for - $remote_user [$time_local] $status"
    s, con = ingest(tmp_path, ["10.0.0.2, 10.0.0.1, 127.0.0.1 - - [07/Dec/2016:11:05:07 +0100] 200"], fmt)
    assert s.rejects == 0
    assert rows(con, "forwarded_for") == [("10.0.0.2, 10.0.0.1, 127.0.0.1",)]


def test_escape_default_decodes_quote_and_backslash_only(tmp_path):
    # nginx escape=default: " -> \x22, \ -> \x5C, control and high bytes -> \xHH.
    lines = [
        r'1.2.3.4 - - [01/Jan/2024:00:00:00 +0000] "GET /q?a=\x22x\x22 HTTP/1.1" 200 1 "-" "Alba 10\x22 \x5Cx22"',  # noqa: E501
        r'1.2.3.4 - - [01/Jan/2024:00:00:00 +0000] "\x16\x03\x01\x00" 400 157 "-" "-"',
        '1.2.3.4 - - [01/Jan/2024:00:00:00 +0000] "" 400 0 "-" "-"',
    ]
    s, con = ingest(tmp_path, lines, "nginx:combined")
    assert (s.rows, s.rejects) == (3, 0)
    assert rows(con, "request, path, query, user_agent, status") == [
        ('GET /q?a="x" HTTP/1.1', "/q", 'a="x"', 'Alba 10" \\x22', 200),
        (r"\x16\x03\x01\x00", None, None, None, 400),
        ("", None, None, None, 400),
    ]


def test_escape_json_format(tmp_path):
    fmt = (
        'escape=json {"time":"$time_iso8601","addr":"$remote_addr","req":"$request",'
        '"status":$status,"bytes":$body_bytes_sent,"rt":$request_time,"urt":"$upstream_response_time",'
        '"ua":"$http_user_agent","uid":"$cookie_uid"}'
    )
    lines = [
        '{"time":"2024-03-01T10:00:00+01:00","addr":"1.2.3.4","req":"GET /x HTTP/1.1","status":200,'
        '"bytes":12,"rt":0.250,"urt":"0.100, 0.140","ua":"curl/8","uid":""}',
        '{"time":"2024-03-01T10:00:01+01:00","addr":"1.2.3.4","req":"GET /y HTTP/1.1","status":404,'
        '"bytes":0,"rt":0.001,"urt":"","ua":"say \\"hi\\" \\\\ \\u001b","uid":"u1"}',
    ]
    s, con = ingest(tmp_path, lines, fmt)
    assert (s.rows, s.rejects) == (2, 0)
    end = datetime(2024, 3, 1, 9, 0, 0)
    assert rows(
        con,
        "ts_end, ts_start, path, status, bytes_sent, duration_us, upstream_us, upstream_tries, user_agent",
    ) == [
        (end, end - timedelta(milliseconds=250), "/x", 200, 12, 250_000, 240_000, 2, "curl/8"),
        # escape=json writes an absent variable as "" (not "-"): no upstream, no tries.
        (
            end + timedelta(seconds=1),
            end + timedelta(milliseconds=999),
            "/y",
            404,
            0,
            1000,
            None,
            0,
            'say "hi" \\ \\u001b',
        ),
    ]
    cf = compile_format(get_dialect("nginx"), fmt, "json")
    assert cf.escape == "json"
    assert cf.fast_raw_sql("t") is not None  # JSON keys between quotes do not stop the split path


def test_escape_none_keeps_raw_quotes(tmp_path):
    fmt = 'escape=none $remote_addr "$request" $status "$http_user_agent"'
    s, con = ingest(tmp_path, ['1.2.3.4 "GET / HTTP/1.1" 200 "a "quoted" \\x22 ua"'], fmt)
    assert (s.rows, s.rejects) == (1, 0)
    assert rows(con, "user_agent") == [('a "quoted" \\x22 ua',)]


def test_unknown_escape_mode_is_an_error():
    with pytest.raises(FormatError, match="escape=html"):
        compile_format(get_dialect("nginx"), "escape=html $status", "x")


def test_raw_dollar_format_resolves_to_nginx_and_presets_carry_the_dialect():
    d, fmt, _ = resolve_format("$remote_addr $status", None)
    assert d.name == "nginx"
    d, fmt, label = resolve_format("nginx:combined", None)
    assert (d.name, fmt, label) == ("nginx", COMBINED, "nginx:combined")
    with pytest.raises(FormatError):
        resolve_format("$remote_addr $ x", "nginx") and compile_format(
            get_dialect("nginx"), "$remote_addr $ x", "x"
        )


def test_a_dollar_without_a_name_is_an_error():
    with pytest.raises(FormatError, match="variable name"):
        compile_format(get_dialect("nginx"), "$remote_addr $ $status", "x")


@pytest.mark.parametrize("preset", ["combined", "main", "timed", "upstreaminfo"])
def test_presets_have_a_split_path(preset):
    cf = compile_format(get_dialect("nginx"), get_dialect("nginx").presets[preset], preset)
    assert cf.fast_raw_sql("t") is not None


def test_tsv_format_has_a_split_path():
    fmt = "$remote_addr\\t[$time_local]\\t$request_method\\t$uri\\t$status\\t$request_time"
    cf = compile_format(get_dialect("nginx"), fmt, "tsv")
    assert ", '\t')" in cf.fast_raw_sql("t")  # split on tabs


def test_lines_with_odd_spacing_are_not_misread_by_the_split_path(tmp_path):
    # Two spaces in the format: a line with "- -" in that place must not shift the fields.
    fmt = "$remote_addr  $remote_user $status"
    s, con = ingest(tmp_path, ["1.2.3.4 - - 200", "1.2.3.4  bob 200"], fmt)
    assert (s.rows, s.rejects) == (1, 1)
    assert rows(con, "remote_user, status") == [("bob", 200)]


# ---- nginx.conf -----------------------------------------------------------------------


def test_format_from_nginx_conf(tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "nginx.conf").write_text(
        "# main config\n"
        "user www-data;\n"
        "http {\n"
        "    log_format  main  '$remote_addr - $remote_user [$time_local] \"$request\" '  # comment\n"
        "                      '$status $body_bytes_sent \"$http_referer\" '\n"
        '                      \'"$http_user_agent" "$http_x_forwarded_for"\';\n'
        "    include conf.d/*.conf;\n"
        "    server { listen 80; access_log /var/log/nginx/access.log main; }\n"
        "}\n"
    )
    (tmp_path / "conf.d" / "logs.conf").write_text(
        "log_format json escape=json\n"
        '  \'{"t":"$time_iso8601",\'\n'
        "  '\"rt\":$request_time}';\n"
        'log_format tsv "$remote_addr\\t$status\\t\\"$request\\"";\n'
        "log_format braces ${remote_addr}-${status};\n"
    )
    conf = tmp_path / "nginx.conf"
    main = format_from_nginx_conf(conf, "main")
    assert main == get_dialect("nginx").presets["main"]
    assert format_from_nginx_conf(conf, "json") == 'escape=json {"t":"$time_iso8601","rt":$request_time}'
    tsv = format_from_nginx_conf(conf, "tsv")
    assert tsv == '$remote_addr\\t$status\\t\\"$request\\"'  # as written; the tokenizer undoes it
    cf = compile_format(get_dialect("nginx"), tsv, "tsv")
    assert "".join(x for x in cf.items if isinstance(x, str)) == '\t\t""'
    assert format_from_nginx_conf(conf, "braces") == "${remote_addr}-${status}"
    assert format_from_nginx_conf(conf, "combined") == COMBINED  # built in
    with pytest.raises(FormatError, match="found: braces, json, main, tsv"):
        format_from_nginx_conf(conf, "nope")


def test_nginx_conf_format_ingests(tmp_path):
    (tmp_path / "nginx.conf").write_text('log_format j escape=json \'{"s":$status,"u":"$request_uri"}\';')
    fmt = format_from_nginx_conf(tmp_path / "nginx.conf", "j")
    s, con = ingest(tmp_path, ['{"s":200,"u":"/a?b=\\"c\\""}'], fmt)
    assert (s.rows, s.rejects) == (1, 0)
    assert rows(con, "status, path, query") == [(200, "/a", 'b="c"')]


# ---- the corpus -----------------------------------------------------------------------


def _split_list(text: str) -> list[str]:
    """An nginx $upstream_* list, parsed without logan."""
    return [v for part in text.split(" : ") for v in part.split(", ")]


def _sum_us(values: list[str]) -> int:
    return sum(us(v) for v in values if v != "-")


GONX = '$remote_addr [$time_local] "$request" $status $request_length $body_bytes_sent $request_time "$t_size" $read_time $gen_time'  # noqa: E501


@needs_corpus
def test_corpus_gonx_thumbs(tmp_path):
    path = CORPUS / "nginx_gonx_thumbs" / "access.log"
    s, con = ingest(tmp_path, str(path), GONX)
    assert (s.lines, s.rows, s.rejects) == (line_count(path), 1000, 0)
    expected = 0
    for line in path.read_text().splitlines():
        after = line.split('"')[2].split()  # 200 363 7013 0.138
        expected += us(after[3])
    got = con.execute(
        "SELECT sum(duration_us), count(*) FILTER (WHERE ts_start < ts_end) FROM requests"
    ).fetchall()
    assert got == [(expected, 1000 - sum(1 for x in path.read_text().splitlines() if " 0.000 " in x))]


@needs_corpus
def test_corpus_gonx_thumbs_are_one_endpoint():
    # Hashed thumbnails, /t/{size}/{two hex}/{two hex}/{hex}.jpeg: one route a size as
    # stored (each fan-out directory {hash}, whatever its digits), and one endpoint once the
    # fold has made the sizes, ROUTE_PARAM_MIN_VALUES or more of them, a parameter.
    path = CORPUS / "nginx_gonx_thumbs" / "access.log"
    con = run_ingest([str(path)], format=GONX, dialect="nginx").store.con
    paths = [line.split('"')[1].split()[1] for line in path.read_text().splitlines()]
    assert all(re.fullmatch(r"/t/[0-9a-z]+/[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]+\.jpeg", p) for p in paths)
    by_hand = Counter(f"/t/{p.split('/')[2]}/{{hash}}/{{hash}}/{{file}}.jpeg" for p in paths)
    stored = con.execute(f"SELECT route, count(*) FROM {REQUESTS_TABLE} GROUP BY route").fetchall()
    assert Counter(dict(stored)) == by_hand
    assert len(by_hand) >= ROUTE_PARAM_MIN_VALUES
    routes = con.execute("SELECT route, count(*) FROM requests GROUP BY route").fetchall()
    assert routes == [("/t/{name}/{hash}/{hash}/{file}.jpeg", 1000)]


@needs_corpus
def test_corpus_tsv_ryna(tmp_path):
    path = CORPUS / "nginx_tsv_ryna" / "access.log"
    fmt = (
        "$remote_addr\\t$remote_port\\t[$time_local]\\t$request_method\\t$uri\\t$args\\t$server_protocol\\t"
        '$status\\t$body_bytes_sent\\t\\"$http_referer\\"\\t\\"$my_trans_id\\"\\t\\"$my_http_header_field\\"\\t'
        "$upstream_addr\\t$upstream_response_time\\t$request_time\\t$server_name"
    )
    s, con = ingest(tmp_path, str(path), fmt)
    assert (s.lines, s.rows, s.rejects) == (line_count(path), 100, 0)
    cols = [line.split("\t") for line in path.read_text().splitlines()]
    assert con.execute(
        "SELECT sum(upstream_us), sum(duration_us), sum(upstream_tries) FROM requests"
    ).fetchall() == [
        (sum(_sum_us(_split_list(c[13])) for c in cols), sum(us(c[14]) for c in cols), len(cols))
    ]
    assert rows(con, "vhost, client_port")[0] == ("my-service.com", 46270)


@needs_corpus
def test_corpus_otus_ui(tmp_path):
    path = CORPUS / "nginx_otus_ui_sample" / "nginx-access-ui.log-20170630"
    # PROVENANCE gives '$remote_addr  $remote_user $http_x_real_ip', but every line reads
    # "1.196.116.32 -  - [": the two spaces sit after $remote_user in the config that wrote it.
    fmt = (
        '$remote_addr $remote_user  $http_x_real_ip [$time_local] "$request" $status $body_bytes_sent '
        '"$http_referer" "$http_user_agent" "$http_x_forwarded_for" "$http_X_REQUEST_ID" "$http_X_RB_USER" $request_time'  # noqa: E501
    )
    s, con = ingest(tmp_path, str(path), fmt)
    assert (s.lines, s.rows, s.rejects) == (line_count(path), 49, 0)
    expected = sum(us(line.rsplit(" ", 1)[1]) for line in path.read_text().splitlines())
    assert con.execute("SELECT sum(duration_us) FROM requests").fetchall() == [(expected,)]
    # As written by the provenance, no line matches: nothing is read wrong in silence. The
    # ingest stops at once and says so; asked to go on, every line is a reject.
    bad = fmt.replace("$remote_addr $remote_user  $http", "$remote_addr  $remote_user $http")
    with pytest.raises(FormatError, match="reads none of the first 49 lines"):
        ingest(tmp_path, str(path), bad)
    s2 = run_ingest([str(path)], format=bad, dialect="nginx", profile="none", keep_going=True)
    assert (s2.rows, s2.rejects) == (0, 49)


@needs_corpus
def test_corpus_shop_access_auto_detects_main(tmp_path):
    path = CORPUS / "lnav_shop_access" / "logfile_shop_access_log.0"
    s = run_ingest([str(path)], format="auto", profile="none")
    assert s.sources[0].format == "nginx:main"
    assert (s.lines, s.rows, s.rejects) == (line_count(path), 1000, 0)
    con = s.store.con
    xff = sum(1 for line in path.read_text().splitlines() if not line.endswith('"-"'))
    assert con.execute("SELECT count(forwarded_for), count(ts_start) FROM requests").fetchall() == [
        (xff, 1000)
    ]


@needs_corpus
def test_corpus_ingress_upstreaminfo(tmp_path):
    path = CORPUS / "tricky_filebeat" / "nginx_ingress_controller_test.log"
    s, con = ingest(tmp_path, str(path), "nginx:upstreaminfo")
    assert (s.lines, s.rows, s.rejects) == (line_count(path), 29, 0)
    exp_rt = exp_urt = exp_tries = exp_multi = 0
    for line in path.read_text().splitlines():
        tail = line.rsplit('"', 1)[1].split()  # request_length request_time [..] [..] lists... req_id
        exp_rt += us(tail[1])
        words = tail[4:-1]  # upstream_addr, response_length, response_time, status, joined by ", "
        groups: list[list[str]] = []
        for w in words:
            if groups and groups[-1][-1].endswith(","):
                groups[-1].append(w)
            else:
                groups.append([w])
        addr, _, times, _ = (" ".join(g).replace(",", "").split() for g in groups)
        exp_urt += _sum_us(times)
        tries = 0 if addr == ["-"] else len(addr)
        exp_tries += tries
        exp_multi += tries > 1
    got = con.execute(
        "SELECT sum(duration_us), sum(upstream_us), sum(upstream_tries), count(*) FILTER (WHERE upstream_tries > 1) "  # noqa: E501
        "FROM requests"
    ).fetchall()
    assert got == [(exp_rt, exp_urt, exp_tries, exp_multi)]
    assert exp_multi == 5


@needs_corpus
def test_corpus_rt_ut_cs(tmp_path):
    path = CORPUS / "tricky_issue_lines" / "goaccess-885_nginx_rt_ut_cs.log"
    fmt = (
        '$remote_addr - $remote_user [$time_local] "$request" $status $bytes_sent "$http_referer" "$http_user_agent" '  # noqa: E501
        '"$uid_got" "$uid_set" $msec adfr="$cookie_adfr" dv="$cookie_dv" dvr="$cookie_dvr" lv="$cookie_lv" '
        'lvr="$cookie_lvr" rt=$request_time ut="$upstream_response_time" cs=$upstream_cache_status '
        'ua="$upstream_addr" us="$upstream_status"'
    )
    s, con = ingest(tmp_path, str(path), fmt)
    assert (s.lines, s.rows, s.rejects) == (2, 2, 0)
    text = path.read_text()
    rts = [us(v) for v in re.findall(r" rt=(\S+)", text)]
    uts = [None if v == "-" else us(v) for v in re.findall(r' ut="([^"]*)"', text)]
    assert rows(con, "duration_us, upstream_us, cache_status, upstream_tries") == [
        (rts[0], uts[0], "HIT", 0),
        (rts[1], uts[1], "MISS", 1),
    ]
    msec = Decimal(re.findall(r'" (\d+\.\d+) adfr', text)[1])
    end = datetime(1970, 1, 1) + timedelta(microseconds=int(msec * 1_000_000))
    assert rows(con, "ts_end, ts_start")[1] == (end, end - timedelta(microseconds=rts[1]))


@needs_corpus
@pytest.mark.parametrize(
    ("name", "fmt", "n_rows"),
    [
        ("goaccess-215_nginx_request_time.log", "main_rt", 1),
        (
            "goaccess-156_nginx_cache_status.log",
            '$remote_addr - $remote_user [$time_local] $upstream_cache_status "$request" $status $body_bytes_sent '  # noqa: E501
            '"$http_referer" "$http_user_agent"',
            3,
        ),
        (
            "goaccess-2280_lancache_cache_status.log",
            '[$cacheidentifier] $remote_addr / $http_x_forwarded_for - $remote_user [$time_local] "$request" $status '  # noqa: E501
            '$body_bytes_sent "$http_referer" "$http_user_agent" "$upstream_cache_status" "$host" "$http_range"',  # noqa: E501
            4,
        ),
    ],
)
def test_corpus_issue_lines(tmp_path, name, fmt, n_rows):
    path = CORPUS / "tricky_issue_lines" / name
    if fmt == "main_rt":
        fmt = get_dialect("nginx").presets["main"] + " $request_time"
    s, con = ingest(tmp_path, str(path), fmt)
    assert (s.lines, s.rows, s.rejects) == (line_count(path), n_rows, 0)
    if "request_time" in fmt:
        assert rows(con, "duration_us") == [(20_178_000,)]
    if "cache_status" in fmt:
        got = [r[0] for r in rows(con, "cache_status")]
        assert got == re.findall(r"(HIT|MISS)", path.read_text())


# Tricky files: several formats (or error-log lines) in one file. Every line is a row or a
# reject, and the rows are the lines of the stated format.
@needs_corpus
@pytest.mark.parametrize(
    ("rel", "fmt", "n_rows"),
    [
        ("tricky_crowdsec/nginx-http-malformed__nginx_http-logs.log", "nginx:combined", 12),
        ("tricky_crowdsec/nginx-http-sqli-probing__nginx-http-sqli-probing.log", "nginx:combined", 16),
        ("tricky_crowdsec/nginx-http-xss-probing__nginx-http-xss-probing.log", "nginx:combined", 26),
        # vhost-prefixed lines, a line missing a "-" and an error-log line are not combined.
        ("tricky_crowdsec/nginx_http-logs__nginx_http-logs.log", "nginx:combined", 4),
        # Nginx Proxy Manager writes several layouts; these are the lines of its `proxy` one.
        (
            "tricky_crowdsec/nginx-proxy-manager-logs__nginx-proxy-manager-logs.log",
            NPM_PROXY,
            6,
        ),
        # XFF chains in place of $remote_addr and an optional trailing "$http_x_forwarded_for".
        ("tricky_filebeat/nginx_access_test.log", "nginx:combined", 2),
        ("tricky_filebeat/nginx_access_test.log", "nginx:main", 1),
        ("tricky_filebeat/nginx_access_test-with-host.log", "$host " + COMBINED, 3),
    ],
)
def test_corpus_tricky_files_account_for_every_line(tmp_path, rel, fmt, n_rows):
    path = CORPUS / rel
    s, _ = ingest(tmp_path, str(path), fmt)
    assert s.lines == line_count(path)
    assert s.rows + s.rejects == s.lines
    assert s.rows == n_rows


@needs_corpus
def test_corpus_malformed_requests_keep_their_escapes(tmp_path):
    path = CORPUS / "tricky_crowdsec" / "nginx-http-malformed__nginx_http-logs.log"
    _, con = ingest(tmp_path, str(path), "nginx:combined")
    raw = [line.split('"')[1] for line in path.read_text().splitlines()]
    got = [r[0] for r in rows(con, "request")]
    assert got == [r.replace("\\x22", '"').replace("\\x5C", "\\") for r in raw]
    assert any(r.startswith("\\x16\\x03\\x01") for r in got)
    assert con.execute("SELECT count(*) FROM requests WHERE method IS NOT NULL").fetchall() == [(0,)]


@needs_corpus
def test_npm_proxy_cache_and_upstream(tmp_path):
    path = CORPUS / "tricky_crowdsec" / "nginx-proxy-manager-logs__nginx-proxy-manager-logs.log"
    _, con = ingest(tmp_path, str(path), NPM_PROXY)
    got = con.execute(
        "SELECT cache_status, upstream_status, vhost, path FROM requests WHERE line_no = 7"
    ).fetchall()
    assert got == [("HIT", "200", "example.com", "/api/users")]
