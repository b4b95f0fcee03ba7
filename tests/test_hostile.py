"""Logs are hostile: mutated real lines for every dialect, named real-world malformations,
and log content and options that never become SQL.

The volume here is a few thousand lines a dialect; `python benchmarks/fuzz.py` runs the
same checks over a million and more (docs/reliability.md has the volume reached)."""

from __future__ import annotations

import gzip
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import reading_with
from fuzzing import CORPUS, SEEDS, check_counts, hostile_lines, mutate, read, seed_lines
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from logan.answer import stats as st
from logan.errors import FormatError
from logan.read.ingest import ingest

FUZZ_LINES = 1500
HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


def _have_seeds(dialect: str) -> None:
    if not seed_lines(dialect, limit=1):
        pytest.skip(f"no seed lines for {dialect} here (the corpus is not at {CORPUS})")


@pytest.mark.parametrize("dialect", sorted(SEEDS))
def test_mutated_lines_are_counted_and_read_alike_by_every_reader(tmp_path, monkeypatch, dialect):
    _have_seeds(dialect)
    fmt = SEEDS[dialect][0]
    path = tmp_path / f"{dialect}.log"
    path.write_bytes(b"\n".join(hostile_lines(dialect, FUZZ_LINES, seed=7)) + b"\n")
    s, req, rej = read(path, fmt)
    check_counts(s, FUZZ_LINES)
    assert s.rows > FUZZ_LINES // 3 and s.rejects > 0  # the mutations reached both sides
    for reader in ("sql", "regex"):
        with reading_with(monkeypatch, reader):
            s2, req2, rej2 = read(path, fmt)
        check_counts(s2, FUZZ_LINES)
        pd.testing.assert_frame_equal(req, req2, obj=f"rows by {reader}")
        pd.testing.assert_frame_equal(rej, rej2, obj=f"rejects by {reader}")


# Found by the fuzzer at volume: a control character inside a fixed-width time, which
# strptime skips ("19:00:5\v" read as 19:00:05) where the regex and the C split refuse it.
FOUND_AT_VOLUME = [
    ("nginx:timed", b'10.0.32.14 - - [05/Nov/2013:19:00:5\x0b +0000] "GET /p HTTP/1.1" 200 379 "-" "Ruby"'
                    b" 0.010 0.009 MISS"),
    ("nginx:timed", b'10.0.32.14 - - [05/N\x0bv/2013:19:00:05 +0000] "GET /p HTTP/1.1" 200 379 "-" "Ruby"'
                    b" 0.010 0.009 MISS"),
]  # fmt: skip


@pytest.mark.parametrize("fmt,line", FOUND_AT_VOLUME)
def test_lines_the_fuzzer_found_are_read_alike_by_every_reader(tmp_path, monkeypatch, fmt, line):
    path = tmp_path / "found.log"
    good = line.replace(b"N\x0bv", b"Nov").replace(b"\x0b", b"0")  # as written: it is read
    path.write_bytes(good + b"\n" + line + b"\n")
    s, req, rej = read(path, fmt)
    assert (s.rows, s.rejects) == (1, 1)
    for reader in ("sql", "regex"):
        with reading_with(monkeypatch, reader):
            _, req2, rej2 = read(path, fmt)
        pd.testing.assert_frame_equal(req, req2, obj=f"rows by {reader}")
        pd.testing.assert_frame_equal(rej, rej2, obj=f"rejects by {reader}")


@settings(max_examples=40, deadline=None, suppress_health_check=HEALTH)
@given(
    dialect=hs.sampled_from(["apache", "nginx", "varnish", "haproxy"]),
    junk=hs.lists(hs.binary(min_size=0, max_size=60), min_size=1, max_size=8),
    seed=hs.integers(0, 2**32 - 1),
)
def test_any_bytes_anywhere_keep_the_count(tmp_path, dialect, junk, seed):
    """Arbitrary bytes inserted into real lines (hypothesis shrinks a failure to its
    smallest case): every line is still a row, a reject or an event."""
    rng = random.Random(seed)
    seeds = seed_lines(dialect)
    lines = []
    for piece in junk:
        line = bytearray(rng.choice(seeds))
        at = rng.randint(0, len(line))
        lines.append(bytes(line[:at] + piece.replace(b"\n", b"") + line[at:]))
    path = tmp_path / f"h{seed}.log"
    path.write_bytes(b"\n".join(lines) + b"\n")
    s, _, _ = read(path, SEEDS[dialect][0])
    check_counts(s, len(lines))


@pytest.mark.parametrize("start", [b"\x1f\x8b", b"\x1f\x8b\x08", b"\x1f\x8b\x08\x00"])
def test_a_log_starting_with_gzips_magic_is_read_as_text(tmp_path, start):
    """A first line that begins with gzip's magic bytes (found by the test above) is a line
    like the others; the whole file used to be read as a .gz cut at its start: nothing.
    The same lines compressed are read as a .gz into the same rows."""
    good = seed_lines("apache")[:3]
    lines = [start + good[0], *good]
    path = tmp_path / "magic.log"
    path.write_bytes(b"\n".join(lines) + b"\n")
    s, req, rej = read(path, SEEDS["apache"][0])
    check_counts(s, len(lines))
    first = req["client"].iloc[0] if len(req) == len(lines) else rej["raw"].iloc[0]
    assert first.startswith("\x1f")  # the line itself (its byte 0x8b is written \x8b)
    packed = tmp_path / "magic.log.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    s2, req2, rej2 = read(packed, SEEDS["apache"][0])
    check_counts(s2, len(lines))
    pd.testing.assert_frame_equal(req, req2)
    pd.testing.assert_frame_equal(rej, rej2)


def test_mutation_keeps_lines_whole():
    rng = random.Random(1)
    for line in seed_lines("apache", limit=200):
        assert b"\n" not in mutate(line, rng)


# --- Named cases --------------------------------------------------------------------------
APACHE = (
    '10.0.0.1 - - [05/Nov/2013:19:00:00 +0000] "GET /production/file_metadata/modules/a HTTP/1.1" '
    '200 5 {us} "-" "{ua}"'
)
GARBAGE = bytes(random.Random(3).randrange(256) for _ in range(20000)).replace(b"\n", b"")


def _line(us: int = 1000, ua: str = "Ruby") -> bytes:
    return APACHE.format(us=us, ua=ua).encode()


@pytest.mark.parametrize(
    ("name", "data", "rows", "rejects"),
    [
        ("latin-1 user agent", _line(ua="caf\xe9").replace(b"caf\xc3\xa9", b"caf\xe9") + b"\n", 1, 0),
        ("invalid UTF-8", _line(ua="x").replace(b'"x"', b'"\xff\xfe\xc3\x28"') + b"\n", 1, 0),
        ("NUL bytes inside", _line().replace(b"Ruby", b"Ru\x00by") + b"\n", 1, 0),
        ("a NUL-filled tail", _line() + b"\n" + b"\x00" * 5000, 1, 1),
        ("CRLF", _line() + b"\r\n" + _line(2000) + b"\r\n", 2, 0),
        ("a lone CR", _line() + b"\r" + _line(2000) + b"\n", 0, 1),
        ("a 1 MB line", _line(ua="A" * (1 << 20)) + b"\n" + _line() + b"\n", 2, 0),
        ("a truncated last line", _line() + b"\n" + _line()[:40], 1, 1),
        ("binary garbage", GARBAGE + b"\n", 0, 1),
        ("TLS handshake as request", _line().replace(b"GET /production/file_metadata/modules/a HTTP/1.1",
                                                     b"\\x16\\x03\\x01\\x02\\x00\\x01") + b"\n", 1, 0),
    ],
)  # fmt: skip
def test_named_malformations(ingest_text, name, data, rows, rejects):
    s, req, rej = ingest_text(data, "combined_D", keep_going=True)
    assert (s.rows, s.rejects) == (rows, rejects), name


def test_an_empty_file_and_a_directory(tmp_path, ingest_text):
    s, _, _ = ingest_text(b"", "combined_D")
    assert (s.lines, s.rows, s.rejects) == (0, 0, 0)
    d = tmp_path / "logs"
    d.mkdir()
    (d / "a.log").write_bytes(_line() + b"\n")
    (d / "b.log").write_bytes(_line(2000) + b"\n" + _line(3000) + b"\n")
    s = ingest([str(d)], format="combined_D", profile="none")
    assert (s.lines, s.rows) == (3, 3)
    assert s.store.sql("SELECT sum(duration_us) AS d FROM requests")["d"][0] == 6000


def _as_non_root() -> list[str]:
    """The prefix that runs a command without the power to read every file: nothing for a
    user, and for root the same root without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (the
    capabilities that let root read a mode-000 file); the interpreter under /root stays
    reachable, which running as `nobody` would not allow."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("running as root and util-linux's setpriv is not here to drop the read capabilities")
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]


def _logan_as_non_root(*args: str) -> subprocess.CompletedProcess:
    cmd = [*_as_non_root(), sys.executable, "-m", "logan", *args, "--format", "combined_D"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_an_unreadable_file_is_named_and_nothing_is_written(tmp_path):
    good = tmp_path / "a.log"
    good.write_bytes(_line() + b"\n")
    bad = tmp_path / "b.log"
    bad.write_bytes(_line(2000) + b"\n")
    bad.chmod(0)
    db = str(tmp_path / "s.duckdb")
    for args in (
        ["ingest", str(good), str(bad), "--db", db],
        ["ingest", str(tmp_path), "--db", db],
        ["stats", str(bad)],
    ):
        r = _logan_as_non_root(*args)
        assert r.returncode == 2, r.stderr
        assert r.stderr.strip() == f"logan: cannot read {bad}: permission denied"
        assert not Path(db).exists()  # refused before anything was read: no half store
    bad.chmod(0o644)  # the same command once the file is readable: both files read
    r = _logan_as_non_root("ingest", str(good), str(bad), "--db", db)
    assert r.returncode == 0, r.stderr
    assert _stored_rows(Path(db)) == 2


def _stored_rows(db: Path) -> int:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT count(*) FROM requests").fetchone()[0]


def test_haproxy_quotes_inside_a_sample_fetch_capture(tmp_path):
    """HAProxy 2.6 writes a sample fetch's quotes as they came (%{+Q}[capture.req.hdr(1)]):
    the field ends at the quote the rest of the format can follow, the last at the end."""
    fmt = (
        "%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %tsc %{+Q}r "
        "xff=%{+Q}[capture.req.hdr(0)] ua=%{+Q}[capture.req.hdr(1)]"
    )
    ua = 'Puppet/7.1.0 "patched" Ruby/2.7 (x86_64-linux) \\"x\\"'
    lines = [
        f'10.0.0.1:40000 [24/Nov/2026:10:00:00.123] fe be/app1 0/0/1/20/21 200 512 ---- "GET /a HTTP/1.1"'
        f' xff="10.1.1.1" ua="{ua}"',
        '10.0.0.2:40001 [24/Nov/2026:10:00:01.123] fe be/app1 0/0/1/30/31 200 512 ---- "GET /b HTTP/1.1"'
        ' xff="10.1.1.2" ua="Puppet/7.1.0"',
    ]
    path = tmp_path / "q.log"
    path.write_text("\n".join(lines) + "\n")
    s = ingest([str(path)], format=fmt, dialect="haproxy", profile="none")
    assert (s.rows, s.rejects) == (2, 0)
    got = s.store.sql("SELECT line_no, duration_us, extra FROM requests ORDER BY line_no")
    assert got["duration_us"].tolist() == [21000, 31000]
    # logasap: the "+" HAProxy puts before a total it logged early, absent here
    assert got["extra"][0] == {"capture.req.hdr(0)": "10.1.1.1", "capture.req.hdr(1)": ua, "logasap": None}


def test_a_line_cut_by_syslog_keeps_its_timers(tmp_path):
    """HAProxy's `len 1024` cuts a long request line, which httplog writes last: the timers,
    status and server before it are still the request's."""
    sample = (Path(__file__).resolve().parents[1] / "sample_logs" / "haproxy.log").read_text().splitlines()
    whole = next(x for x in sample if "be_puppet/app" in x and '"GET' in x)
    long = whole.replace(" HTTP/1.1", "?" + "x" * 2000 + " HTTP/1.1")
    cut = long.encode()[:1024].decode()
    path = tmp_path / "cut.log"
    path.write_text(f"{cut}\n{whole}\n")
    s = ingest([str(path)], format="haproxy:httplog", profile="none")
    assert (s.lines, s.rows, s.rejects) == (2, 2, 0)
    got = s.store.sql("SELECT duration_us, status, server, request FROM requests ORDER BY line_no")
    assert got["duration_us"][0] == got["duration_us"][1] and got["status"][0] == got["status"][1]
    assert got["server"][0] == got["server"][1]
    assert len(got["request"][0]) < len(long) and got["request"][0].startswith("GET ")


# --- SQL injection: log content and options are data ------------------------------------------
def _injections() -> list[str]:
    found = []
    folder = CORPUS / "tricky_crowdsec"
    for path in sorted(folder.glob("*sqli*")) if folder.is_dir() else []:
        for line in path.read_text(errors="replace").splitlines():
            if '"' in line:
                found.append(line.split('"')[1].split(" ")[1] if " " in line.split('"')[1] else line)
    return found[:20] or ["' OR 1=1 --", "1'); DROP TABLE requests; --", '" UNION SELECT * FROM ingests --']


@pytest.mark.parametrize("evil", _injections())
def test_sql_in_logs_and_options_is_data(tmp_path, evil):
    in_path = evil.replace(" ", "%20").replace('"', "%22")  # as a client sends it: a quote is escaped
    line = _line().decode().replace("/production/file_metadata/modules/a", "/x" + in_path)
    path = tmp_path / "evil.log"
    path.write_text(line.replace('"Ruby"', '"' + evil.replace('"', '\\"') + '"') + "\n")
    s = ingest([str(path)], format="combined_D", profile="generic")
    con = s.store.con
    before = con.execute("SELECT count(*) FROM duckdb_tables()").fetchall()
    for kw in ({"env": evil}, {"method": evil}, {"path_glob": evil}):
        got = st.stats_records(con, by="user_agent", top=None, **kw)
        assert got.rows == [] or got.rows[0]["requests"] == 1
    got = st.stats_records(con, by="user_agent", top=None)
    assert got.rows[0]["user_agent"] == evil and got.rows[0]["requests"] == 1
    assert con.execute("SELECT count(*) FROM duckdb_tables()").fetchall() == before  # nothing dropped
    with pytest.raises(FormatError):
        ingest([str(path)], format=evil, profile="none")  # a name that is no preset
