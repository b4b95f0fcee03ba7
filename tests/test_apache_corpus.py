"""The real Apache logs of ../shared/corpus (read there, never copied): every line becomes a
row or a reject, and the values equal what plain Python reads from the raw files.

Formats are the ones each folder's PROVENANCE.txt states. Expected rejects are the lines a
reader of the file can see are not in that format (listed by hand, with the reason).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

import pandas as pd
import pytest
from conftest import reading_with

from logan.read.ingest import ingest

# PROVENANCE.txt of netnea_apache_extended_t5 / labor07 ("extended") and labor06 (classic %t).
EXTENDED = (
    '%h %{GEOIP_COUNTRY_CODE}e %u [%{%Y-%m-%d %H:%M:%S}t.%{usec_frac}t] "%r" %>s %b "%{Referer}i" '
    '"%{User-Agent}i" %v %A %p %R %{BALANCER_WORKER_ROUTE}e %X "%{cookie}n" %{UNIQUE_ID}e '
    "%{SSL_PROTOCOL}x %{SSL_CIPHER}x %I %O %{ratio}n%% %D %{ModSecTimeIn}e %{ApplicationTime}e "
    "%{ModSecTimeOut}e %{ModSecAnomalyScoreIn}e %{ModSecAnomalyScoreOut}e"
)
EXTENDED_CLASSIC = (
    '%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i" %v %A %p %R %{BALANCER_WORKER_ROUTE}e %X '
    '"%{cookie}n" %{UNIQUE_ID}e %I %O %{ratio}n%% %D %{ModSecTimeIn}e %{ApplicationTime}e '
    "%{ModSecTimeOut}e %{ModSecAnomalyScoreIn}e %{ModSecAnomalyScoreOut}e"
)


@dataclass(frozen=True)
class Spec:
    file: str
    fmt: str
    rejects: tuple[int, ...] = ()  # line numbers expected in `rejects`
    has_D: bool = False  # netnea: %D is the 6th word from the end, after the last quote


SPECS = [
    Spec("netnea_apache_extended_t5/tutorial-5-example-access.log", EXTENDED, has_D=True),
    Spec("netnea_apache_extended_labor07/labor-07-example-access.log", EXTENDED, has_D=True),
    Spec("netnea_apache_extended_labor06/labor-06_access_10000.log", EXTENDED_CLASSIC, has_D=True),
    Spec("puppet_access_ssl/puppet_access_ssl.log", "combined"),
    Spec("basjes_hackers_access/hackers-access.log", "combined"),
    # Line 8899 is cut short in the middle of its request line.
    Spec("elastic_apache_logs/apache_logs", "combined", rejects=(8899,)),
    Spec("tricky_crowdsec/apache-http-probing__apache-http-probing.log", "common"),
    Spec("tricky_crowdsec/apache2-malformed__apache2-logs.log", "combined"),
    # 4: a vhost prefix; 6: common (no referer/UA); 7: vhost:port prefix; 8, 9: error-log lines.
    Spec("tricky_crowdsec/apache2-logs__apache2-logs.log", "combined", rejects=(4, 6, 7, 8, 9)),
    Spec("tricky_filebeat/apache_access_darwin-2.4.23.log", "common"),
    # 1, 3: common; 4, 5: combined plus a quoted X-Forwarded-For; 7: a vhost prefix.
    Spec("tricky_filebeat/apache_access_test.log", "combined", rejects=(1, 3, 4, 5, 7)),
    Spec("tricky_filebeat/apache_ssl-request.log", '%t %h %{SSL_PROTOCOL}x %{SSL_CIPHER}x "%r" %b'),
    Spec("tricky_issue_lines/goaccess-1752_apache_ms_T.log", '%h %l %u %t "%r" %>s %b %{ms}T'),
    Spec("tricky_issue_lines/fluent-bit-566_escaped_quote_ua.log", "combined"),
    Spec("tricky_issue_lines/goaccess-291_cache_in_user_field_bad_request.log", "combined"),
    # "(pid-seconds)" after the UA, named here as two fields.
    Spec(
        "tricky_issue_lines/goaccess-1616_apache_php_time_suffix.log",
        '%v %h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i" (%P-%{php_seconds}n)',
    ),
]
CLEAN = [
    s
    for s in SPECS
    if s.file.split("/")[0]
    in {
        "netnea_apache_extended_t5",
        "netnea_apache_extended_labor07",
        "netnea_apache_extended_labor06",
        "puppet_access_ssl",
        "basjes_hackers_access",
    }
]


def raw_lines(path: Path) -> list[str]:
    """The file's lines, read with plain Python (a last line without \\n counts too)."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [x.rstrip(b"\r").decode("utf-8", "backslashreplace") for x in lines]


@cache
def _ingested(path: str, fmt: str, tz: str = "UTC") -> tuple[object, pd.DataFrame, pd.DataFrame]:
    s = ingest([path], format=fmt, tz=tz, profile="none")
    req = s.store.sql("SELECT * FROM requests ORDER BY line_no")
    rej = s.store.sql("SELECT * FROM rejects ORDER BY line_no")
    s.store.close()
    return s, req, rej


def ingested(corpus: Path, spec: Spec, tz: str = "UTC"):  # noqa: ANN201
    return _ingested(str(corpus / spec.file), spec.fmt, tz)


def spec_of(name: str) -> Spec:
    return next(s for s in SPECS if s.file.startswith(name))


@pytest.mark.parametrize("spec", SPECS, ids=[s.file.split("/")[-1] for s in SPECS])
def test_every_line_is_a_row_or_a_reject(corpus, spec):
    lines = raw_lines(corpus / spec.file)
    s, req, rej = ingested(corpus, spec)
    assert s.lines == len(lines)
    assert s.rows + s.rejects == len(lines)
    assert (len(req), len(rej)) == (s.rows, s.rejects)
    assert s.events == 0
    assert list(rej.line_no) == list(spec.rejects)
    # A reject keeps its line exactly as written.
    assert list(rej.raw) == [lines[n - 1] for n in spec.rejects]
    # Every line number appears exactly once across the two tables.
    assert sorted([*req.line_no, *rej.line_no]) == list(range(1, len(lines) + 1))


@pytest.mark.parametrize("spec", CLEAN, ids=[s.file.split("/")[0] for s in CLEAN])
def test_clean_files_have_no_rejects(corpus, spec):
    s, req, rej = ingested(corpus, spec)
    assert s.rejects == 0 and rej.empty
    assert s.rows == len(raw_lines(corpus / spec.file))


def test_elastic_line_8899_is_the_one_reject(corpus):
    spec = spec_of("elastic_apache_logs")
    lines = raw_lines(corpus / spec.file)
    s, req, rej = ingested(corpus, spec)
    assert (s.rows, s.rejects) == (9999, 1)
    assert rej.line_no.tolist() == [8899]
    assert rej.raw[0] == lines[8898]
    # The line stops inside its User-Agent: the closing quote is missing.
    assert rej.raw[0].count('"') == 5 and rej.raw[0].endswith("bot.html")
    assert rej.reason[0] == "does not match format"
    # PROVENANCE: 669 lines with size "-"; counted here from the raw text of the lines read.
    dash = sum(1 for i, x in enumerate(lines, 1) if i != 8899 and re.search(r'" \d{3} -( |$)', x))
    assert int(req.bytes_sent.isna().sum()) == dash == 669


def _netnea_tail(line: str) -> list[str]:
    # After the last quote (the "%{cookie}n" field): ... %I %O ratio% %D + five ModSec values.
    return line.rsplit('"', 1)[1].split()


@pytest.mark.parametrize("spec", [s for s in SPECS if s.has_D], ids=lambda s: s.file.split("/")[0])
def test_sum_of_D_equals_an_independent_sum(corpus, spec):
    lines = raw_lines(corpus / spec.file)
    tails = [_netnea_tail(x) for x in lines]
    assert all(t[-7].endswith("%") for t in tails)  # the %{ratio}n%% word: the layout is right
    expected = [int(t[-6]) for t in tails]  # %D is never "-" in these files
    _, req, _ = ingested(corpus, spec)
    assert int(req.duration_us.sum()) == sum(expected)
    assert req.duration_us.tolist() == expected  # and line by line
    bytes_in = [None if t[-9] == "-" else int(t[-9]) for t in tails]
    assert [None if pd.isna(v) else int(v) for v in req.bytes_received] == bytes_in


def test_sum_of_D_matches_provenance_extremes(corpus):
    # PROVENANCE.txt: t5 %D min 18, max 301,455,050; labor06 min 823, max 6,076,221.
    for name, lo, hi in [
        ("netnea_apache_extended_t5", 18, 301_455_050),
        ("netnea_apache_extended_labor06", 823, 6_076_221),
    ]:
        _, req, _ = ingested(corpus, spec_of(name))
        assert (req.duration_us.min(), req.duration_us.max()) == (lo, hi)


def test_ms_T_in_microseconds(corpus):
    _, req, _ = ingested(corpus, spec_of("tricky_issue_lines/goaccess-1752"))
    assert req.duration_us.tolist() == [1736 * 1000]


def test_netnea_t5_timestamps_without_offset_follow_tz(corpus):
    spec = spec_of("netnea_apache_extended_t5")
    first = "2016-09-02 10:42:51.003372"  # line 1, as written
    assert raw_lines(corpus / spec.file)[0].split("[")[1].startswith(first)
    s, req, _ = ingested(corpus, spec)
    assert s.tz_assumed
    assert req.ts_start[0] == datetime.strptime(first, "%Y-%m-%d %H:%M:%S.%f")
    s2, req2, _ = ingested(corpus, spec, tz="Europe/Zurich")
    from zoneinfo import ZoneInfo

    zurich = datetime.strptime(first, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=ZoneInfo("Europe/Zurich"))
    assert req2.ts_start[0] == zurich.astimezone(UTC).replace(tzinfo=None)
    # Every row shifts by the zone's offset of its own date, not one fixed offset.
    naive = pd.to_datetime([x.split("[")[1].split("]")[0] for x in raw_lines(corpus / spec.file)])
    expected = naive.tz_localize("Europe/Zurich").tz_convert("UTC").tz_localize(None)
    assert (req2.ts_start.values == expected.values).all()


def test_labor06_offsets_are_utc_instants(corpus):
    spec = spec_of("netnea_apache_extended_labor06")
    lines = raw_lines(corpus / spec.file)
    stamps = [datetime.strptime(x.split("[")[1].split("]")[0], "%d/%b/%Y:%H:%M:%S %z") for x in lines]
    assert {st.utcoffset().total_seconds() for st in stamps} == {3600, 7200}  # crosses DST
    _, req, _ = ingested(corpus, spec)
    assert req.ts_start.tolist() == [st.astimezone(UTC).replace(tzinfo=None) for st in stamps]
    ends = [a + pd.Timedelta(microseconds=d) for a, d in zip(req.ts_start, req.duration_us, strict=True)]
    assert req.ts_end.tolist() == ends


def test_puppet_counts_match_provenance(corpus):
    _, req, _ = ingested(corpus, spec_of("puppet_access_ssl"))
    assert req.status.value_counts().to_dict() == {200: 2377, 404: 6}
    assert req.method.value_counts().to_dict() == {"GET": 2353, "PUT": 19, "POST": 11}
    assert req.client.nunique() == 11
    assert req.user_agent.isna().all() and req.referer.isna().all()  # always "-"


def test_basjes_ipv6_clients(corpus):
    spec = spec_of("basjes_hackers_access")
    lines = raw_lines(corpus / spec.file)
    v6 = [i for i, x in enumerate(lines, 1) if ":" in x.split(" ", 1)[0]]
    assert len(v6) == 12  # PROVENANCE: 12 IPv6 client lines
    _, req, _ = ingested(corpus, spec)
    got = req[req.client.str.contains(":")]
    assert got.line_no.tolist() == v6
    assert got.client.tolist() == [lines[i - 1].split(" ", 1)[0] for i in v6]
    assert "2001:41d0:8:f69::1" in set(got.client)


def test_tls_garbage_lines_keep_raw_text(corpus):
    spec = spec_of("tricky_crowdsec/apache2-malformed")
    lines = raw_lines(corpus / spec.file)
    _, req, _ = ingested(corpus, spec)
    assert req.request.tolist() == [x.split('"')[1] for x in lines]
    assert req.request[0] == "\\x16\\x03\\x01\\x01 \\x02"
    assert req.method.isna().all() and req.path.isna().all()
    assert req.status.tolist() == [400] * 11


def test_escaped_quote_in_user_agent(corpus):
    _, req, _ = ingested(corpus, spec_of("tricky_issue_lines/fluent-bit-566"))
    assert req.user_agent[0] == 'Dalvik/2.1.0 (Linux; U; Android 5.1; Alba 10" Build/LMY47I)'
    assert req.method[0] == "POST" and req.bytes_sent[0] == 8073


def test_bad_request_line_and_user_field(corpus):
    _, req, _ = ingested(corpus, spec_of("tricky_issue_lines/goaccess-291"))
    assert req.remote_user.tolist() == ["MISS", "HIT"]
    assert req.request.tolist() == ["GET/ HTTP/1.1"] * 2
    assert req.method.isna().all()
    assert req.bytes_sent.tolist() == [0, 0]  # %b 0 stays 0


def test_request_timeout_lines(corpus):
    _, req, _ = ingested(corpus, spec_of("tricky_filebeat/apache_access_darwin"))
    row = req[req.line_no == 3].iloc[0]
    assert row.client == "::1" and row.status == 408
    assert pd.isna(row.request) and pd.isna(row.bytes_sent)


def test_ssl_request_log(corpus):
    _, req, _ = ingested(corpus, spec_of("tricky_filebeat/apache_ssl-request"))
    assert req.client.tolist() == ["172.30.0.119", "81.2.69.143"]
    assert req.bytes_sent[0] == 1375 and pd.isna(req.bytes_sent[1])
    assert [dict(e)["ssl.SSL_PROTOCOL"] for e in req.extra] == ["TLSv1.2", "TLSv1.2"]
    assert req.ts_start[0] == datetime(2018, 8, 10, 7, 45, 56)


def test_php_time_suffix_fields(corpus):
    _, req, _ = ingested(corpus, spec_of("tricky_issue_lines/goaccess-1616"))
    assert req.vhost[0] == "domain" and req.client[0] == "xx.xx.xxx.xxx"
    e = dict(req.extra[0])
    assert (e["pid"], e["note.php_seconds"]) == ("60642713", "6.779")


@pytest.mark.parametrize("reader", ["sql", "regex"])
@pytest.mark.parametrize(
    "name", ["basjes_hackers_access", "netnea_apache_extended_t5", "elastic_apache_logs"]
)
def test_split_and_regex_paths_agree_on_real_logs(corpus, monkeypatch, name, reader):
    """The whole file read by another reader first (the SQL split, or the regex for every
    line) equals the normal read."""
    spec = spec_of(name)
    _, req, rej = ingested(corpus, spec)
    with reading_with(monkeypatch, reader):
        s = ingest([corpus / spec.file], format=spec.fmt, profile="none")
    req2 = s.store.sql("SELECT * FROM requests ORDER BY line_no")
    rej2 = s.store.sql("SELECT * FROM rejects ORDER BY line_no")
    pd.testing.assert_frame_equal(req.drop(columns="source"), req2.drop(columns="source"))
    pd.testing.assert_frame_equal(rej.drop(columns="source"), rej2.drop(columns="source"))
