"""The `logan` command as a user runs it: subprocesses, exit codes, messages, answers.

Answers are compared with numbers computed here from the generated lines; bad input must
give exit code 2 and a message, never a Python traceback."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import duckdb
import pytest

STATUSES = [200, 200, 304, 404, 200, 500, 301]


def gen_line(i: int) -> str:
    status = STATUSES[i % len(STATUSES)]
    size = "-" if status == 304 else str(100 + i)
    dur = "-" if i % 10 == 0 else str(1000 * i + 3)
    return (
        f'10.0.{i % 3}.{i % 7} - - [10/Oct/2000:13:55:{i % 60:02d} -0700] "GET /item/{i}?q={i} HTTP/1.1" '
        f'{status} {size} {dur} "-" "agent/{i % 4}"'
    )


N = 97


@pytest.fixture
def log(tmp_path) -> Path:
    p = tmp_path / "access.log"
    p.write_text("".join(gen_line(i) + "\n" for i in range(1, N + 1)) + "this is not a request\n")
    return p


def expected_by_status() -> dict[int, tuple[int, int | None]]:
    """status -> (count, sum of %D), computed from the generator's rules."""
    count: Counter = Counter()
    total: dict[int, int | None] = {}
    for i in range(1, N + 1):
        s = STATUSES[i % len(STATUSES)]
        count[s] += 1
        if i % 10:
            total[s] = (total.get(s) or 0) + 1000 * i + 3
        else:
            total.setdefault(s, None)
    return {s: (count[s], total[s]) for s in count}


def logan(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["logan", *args], input=stdin, capture_output=True, timeout=120)


def sql(db, output: str, query: str) -> subprocess.CompletedProcess:  # noqa: ANN001
    return logan("sql", "--db", str(db), "-o", output, query)


def ok(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 0, r.stderr.decode()
    assert b"Traceback" not in r.stderr
    return r.stdout.decode()


def refused(r: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit code 2, no traceback, and a message that names what is wrong."""
    err = r.stderr.decode()
    assert "Traceback" not in err, err
    assert r.returncode == 2, (r.returncode, err)
    msg = " ".join(err.split())  # rich wraps long messages
    for n in needles:
        assert n in msg, (n, msg)
    return msg


@pytest.fixture
def db(tmp_path, log) -> Path:
    d = tmp_path / "store.duckdb"
    r = logan("ingest", str(log), "--db", str(d), "--format", "combined_D")
    ok(r)
    err = " ".join(r.stderr.decode().split())
    # The closing summary: lines read, rows, rejects and their reason.
    assert re.search(rf"lines read {N + 1}\b", err), err
    assert re.search(rf"requests {N}\b", err), err
    assert re.search(r"rejects 1\b", err), err
    assert "does not match format 1" in err
    return d


def test_sql_csv_equals_independent_count(db):
    query = "SELECT status, count(*) AS n, sum(duration_us) AS d FROM requests GROUP BY 1 ORDER BY 1"
    out = ok(sql(db, "csv", query))
    rows = list(csv.DictReader(io.StringIO(out)))
    got = {int(r["status"]): (int(r["n"]), None if r["d"] == "" else float(r["d"])) for r in rows}
    assert got == {s: (n, None if d is None else float(d)) for s, (n, d) in expected_by_status().items()}


def test_sql_json_values(db):
    query = (
        "SELECT line_no, client, path, query, bytes_sent, duration_us, ts_start, user_agent "
        "FROM requests WHERE line_no IN (2, 10, 14) ORDER BY line_no"
    )
    out = ok(sql(db, "json", query))
    got = json.loads(out)
    # Line 2: 304 with size '-'; line 10: %D '-'; line 14: everything present.
    assert got == [
        {
            "line_no": 2,
            "client": "10.0.2.2",
            "path": "/item/2",
            "query": "q=2",
            "bytes_sent": None,
            "duration_us": 2003,
            "ts_start": "2000-10-10T20:55:02.000",
            "user_agent": "agent/2",
        },
        {
            "line_no": 10,
            "client": "10.0.1.3",
            "path": "/item/10",
            "query": "q=10",
            "bytes_sent": 110,
            "duration_us": None,
            "ts_start": "2000-10-10T20:55:10.000",
            "user_agent": "agent/2",
        },
        {
            "line_no": 14,
            "client": "10.0.2.0",
            "path": "/item/14",
            "query": "q=14",
            "bytes_sent": 114,
            "duration_us": 14003,
            "ts_start": "2000-10-10T20:55:14.000",
            "user_agent": "agent/2",
        },
    ]


def test_sql_rejects_table(db, log):
    out = ok(logan("sql", "--db", str(db), "-o", "json", "SELECT line_no, raw, reason FROM rejects"))
    expected = {"line_no": N + 1, "raw": "this is not a request", "reason": "does not match format"}
    assert json.loads(out) == [expected]


def test_sql_table_output(db):
    out = ok(logan("sql", "--db", str(db), "SELECT count(*) AS n FROM requests WHERE status = 404"))
    assert re.search(rf"\b{expected_by_status()[404][0]}\b", out)


def test_ingest_appends_to_store_and_stdin(db, log):
    args = ["ingest", "-", "--db", str(db), "--format", "combined_D", "--label", "again"]
    ok(logan(*args, stdin=log.read_bytes()))
    out = ok(sql(db, "csv", "SELECT source, count(*) AS n FROM requests GROUP BY 1 ORDER BY 1"))
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["source"], int(r["n"])) for r in rows] == sorted([("again", N), (str(log), N)])


def test_auto_detect_says_which_preset(tmp_path, log):
    d = tmp_path / "auto.duckdb"
    r = logan("ingest", str(log), "--db", str(d))
    ok(r)
    assert "combined_D" in r.stderr.decode()
    out = ok(logan("sql", "--db", str(d), "-o", "csv", "SELECT DISTINCT format FROM requests"))
    assert out.split() == ["format", "apache:combined_D"]


def test_tz_note_in_summary(tmp_path):
    p = tmp_path / "local.log"
    p.write_text("h [2021-03-28 03:30:00] 5\n")
    d = tmp_path / "tz.duckdb"
    fmt = "%h [%{%Y-%m-%d %H:%M:%S}t] %D"
    r = logan("ingest", str(p), "--db", str(d), "--format", fmt, "--tz", "Europe/Berlin")
    ok(r)
    assert "Europe/Berlin" in " ".join(r.stderr.decode().split())
    out = ok(logan("sql", "--db", str(d), "-o", "json", "SELECT ts_start FROM requests"))
    assert json.loads(out) == [{"ts_start": "2021-03-28T01:30:00.000"}]  # 03:30 CEST


def test_python_dash_m(tmp_path, log):
    r = subprocess.run(
        [sys.executable, "-m", "logan", "ingest", str(log), "--format", "combined_D"],
        capture_output=True,
        timeout=120,
    )
    assert r.returncode == 0 and b"Traceback" not in r.stderr
    assert re.search(rf"requests\s+{N}\b", r.stderr.decode())


def test_took_is_the_whole_command(tmp_path, log):
    """The summary's `took` is what the user waited for: Python's start-up and imports and
    the store's checkpoint and close included (measured here around the process), not the
    ingest's own part (the store's `ingests.seconds`), which on 98 lines is a small part."""
    store = tmp_path / "s.duckdb"
    began = time.perf_counter()
    r = logan("ingest", str(log), "--db", str(store), "--format", "combined_D")
    waited = time.perf_counter() - began
    took = float(re.search(r"took\s+([\d.]+) s", ok(r) + r.stderr.decode()).group(1))
    with duckdb.connect(str(store), read_only=True) as con:
        own = con.execute("SELECT sum(seconds) FROM ingests").fetchone()[0]
    assert took <= waited + 0.05  # /proc's clock ticks are 10 ms
    assert took >= 0.7 * waited, (took, waited)
    assert took > own + 0.2, (took, own)  # start-up alone is more than that


def test_a_reader_that_stops_early_is_not_an_error():
    """`logan stats FILE | head` under `set -o pipefail`: the answer is written until the
    reader goes away, then the command exits 0, quietly (click's own answer to a closed
    pipe was exit 1). The CSV is 170 kB, more than a pipe holds, so the writes that fail
    come after the first line is read and the pipe closed."""
    p = subprocess.Popen(
        ["logan", "stats", str(SAMPLES / "puppet_access.log"),
         "--by", "resource", "--top", "0", "--output", "csv"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert p.stdout is not None and p.stderr is not None
    first = p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 0, err
    assert b",resource," in first, first  # the header came before the pipe closed
    assert "Traceback" not in err and "rror" not in err, err


# ---- bad input: exit 2, a message, never a traceback -----------------------------------

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"


@pytest.mark.parametrize("sample", ["puppet_access.log", "haproxy.log"])
def test_stats_table_needs_no_pandas(sample):
    """`logan stats FILE` as a table never imports pandas: 0.2 s, more than the whole answer
    on a small log. (pyarrow's pa.array() and to_numpy() of numpy data import it.)"""
    code = (
        "import sys\nfrom logan.cli import main\n"
        f"sys.argv = ['logan', 'stats', {str(SAMPLES / sample)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('pandas' in sys.modules, file=sys.stderr)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    err = r.stderr.decode()
    assert "Traceback" not in err, err
    assert "requests" in r.stdout.decode()  # it answered
    assert err.splitlines()[-1].split()[0] == "False", err


def test_unknown_format(tmp_path, log):
    refused(
        logan("ingest", str(log), "--db", str(tmp_path / "x.duckdb"), "--format", "nosuch"),
        "unknown format 'nosuch'",
        "combined_D",
    )


def test_unknown_directive(tmp_path, log):
    refused(logan("ingest", str(log), "--format", "%h %Z %>s"), "%Z")


def test_missing_file(tmp_path):
    refused(logan("ingest", str(tmp_path / "missing.log"), "--db", str(tmp_path / "x.duckdb")), "missing.log")


def test_garbage_with_auto_format(tmp_path):
    p = tmp_path / "garbage.log"
    p.write_text("hello world\nfoo bar baz\n\x01\x02 binary-ish\n")
    msg = refused(logan("ingest", str(p), "--db", str(tmp_path / "x.duckdb")), "closest preset")
    assert "hello world" in msg or "foo bar baz" in msg  # shows a line that does not match


def test_sql_on_non_logan_duckdb(tmp_path):
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE t AS SELECT 1 AS a")
    con.close()
    refused(logan("sql", "--db", str(other), "SELECT * FROM t"), "not a logan store")


def test_ingest_into_non_logan_duckdb(tmp_path, log):
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE t AS SELECT 1 AS a")
    con.close()
    r = logan("ingest", str(log), "--db", str(other), "--format", "combined_D")
    con = duckdb.connect(str(other), read_only=True)
    tables = {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    con.close()
    assert tables == {"t"}  # untouched
    refused(r, "not a logan store")


def test_not_a_duckdb_file(tmp_path):
    bogus = tmp_path / "bogus.duckdb"
    bogus.write_text("this is a text file, not a database\n")
    refused(logan("sql", "--db", str(bogus), "SELECT 1"), str(bogus))


def test_sql_on_missing_store(tmp_path):
    refused(logan("sql", "--db", str(tmp_path / "none.duckdb"), "SELECT 1"), "no store")


def test_sql_error_is_a_message(db):
    refused(logan("sql", "--db", str(db), "SELECT nosuchcolumn FROM requests"), "nosuchcolumn")


def test_unknown_output(db):
    refused(logan("sql", "--db", str(db), "-o", "xml", "SELECT 1"), "xml")


def test_unknown_time_zone(log):
    refused(logan("ingest", str(log), "--format", "combined_D", "--tz", "Mars/Olympus"), "Mars/Olympus")


def test_hostile_number_is_not_a_traceback(tmp_path):
    p = tmp_path / "hostile.log"
    p.write_text(gen_line(1) + "\n" + gen_line(2).replace('" 304 -', '" 99999 -') + "\n")
    r = logan("ingest", str(p), "--db", str(tmp_path / "h.duckdb"), "--format", "combined_D")
    assert "Traceback" not in r.stderr.decode()
    assert r.returncode == 0
    assert re.search(r"rejects\s+1\b", r.stderr.decode())


def test_source_options_put_a_stack_in_one_store(tmp_path):
    """--source LABEL=FORMAT:PATH: one call, several servers, each row labelled."""
    apache = tmp_path / "apache.log"
    apache.write_text("".join(gen_line(i) + "\n" for i in range(1, 11)))
    nginx = tmp_path / "nginx.log"
    nginx.write_text(
        '10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 5 "-" "ua" 0.250 0.200 MISS\n'
        '10.0.0.2 - - [10/Oct/2000:13:55:37 -0700] "GET /b HTTP/1.1" 200 5 "-" "ua" 0.010 - HIT\n'
    )
    db = tmp_path / "stack.duckdb"
    ok(logan("ingest", "--db", str(db), "--source", f"app=combined_D:{apache}",
             "--source", f"front=nginx:timed:{nginx}"))  # fmt: skip
    out = ok(logan("sql", "--db", str(db), "-o", "json",
                   "SELECT source, dialect, count(*) AS n, sum(duration_us) AS d, sum(upstream_us) AS u "
                   "FROM requests GROUP BY ALL ORDER BY source"))  # fmt: skip
    want_d = sum(1000 * i + 3 for i in range(1, 11) if i % 10)
    assert json.loads(out) == [
        {"source": "app", "dialect": "apache", "n": 10, "d": want_d, "u": None},
        {"source": "front", "dialect": "nginx", "n": 2, "d": 260_000, "u": 200_000},
    ]
    refused(logan("ingest", "--db", str(db), "--source", "no-equals-sign"), "LABEL=FORMAT:PATH")


def _options(command: str) -> dict[str, tuple[str, ...]]:
    """Each option of a logan command: its parameter name -> the flags that set it."""
    import typer.main

    from logan.cli import app

    group = typer.main.get_command(app)
    return {p.name: tuple(p.opts) for p in group.commands[command].params}  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", ["ingest", "stats", "timeline", "incidents", "compare", "cache", "plot"])
def test_reading_options_mean_the_same_in_every_command(command):
    """A flag that reads logs means one thing everywhere: `-f` is --format in each command
    that reads FILES (it once meant --follow in `logan ingest` alone), and every reading
    option is there, spelled alike."""
    options = _options(command)
    short_f = [name for name, flags in options.items() if "-f" in flags]
    assert short_f == ["format"]
    reading = {"format", "dialect", "tz", "profile", "rules", "trusted_proxy", "nginx_conf",
               "log_format_name", "keep_going"}  # fmt: skip
    assert reading <= options.keys()
    assert options["trusted_proxy"] == ("--trusted-proxy",)


@pytest.mark.parametrize("command", ["stats", "timeline", "incidents", "compare", "cache"])
def test_answering_commands_share_input_filters_and_output(command):
    options = _options(command)
    shared = {"files", "db", "engine", "data", "master", "since", "until", "env", "method", "status",
              "path", "output", "out", "wide", "columns", "raw"}  # fmt: skip
    assert shared <= options.keys()
    assert options["output"] == ("--output", "-o")


def test_follow_is_capital_f_as_in_tail(tmp_path):
    """`logan ingest -f FORMAT` reads with that format (it does not start following)."""
    log = tmp_path / "a.log"
    log.write_text(Path("sample_logs/puppet_access.log").read_text().splitlines(keepends=True)[0])
    db = tmp_path / "s.duckdb"
    done = subprocess.run(["logan", "ingest", "-f", "combined_D", str(log), "--db", str(db)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM requests").fetchone() == (1,)
    assert _options("ingest")["follow"] == ("--follow", "-F")


@pytest.mark.parametrize("read_only", [False, True])
def test_no_progress_bar_inside_an_answer(tmp_path, read_only):
    """DuckDB draws its progress bar on stdout for a query past 2 s (the default of its
    Python client): a slow `logan timeline --db S -o csv > f` on a busy machine wrote it into
    the CSV. Every connection logan opens has it off."""
    from logan.store import open_store

    path = tmp_path / "s.duckdb"
    open_store(path).close()
    for where in (path, ":memory:"):
        st = open_store(where, read_only=read_only and where != ":memory:")
        try:
            assert st.con.execute("SELECT current_setting('enable_progress_bar')").fetchall() == [(False,)]
        finally:
            st.close()


def test_reclassify_gives_what_an_ingest_with_its_options_gives(tmp_path):
    """`logan reclassify --db S --profile puppet` on a store read with `--profile generic`
    holds what a new ingest of the same log with `--profile puppet` holds, row by row; and
    the two profiles do differ on that log (so the command changed something)."""
    sample = str(SAMPLES / "puppet_access.log")
    cols = "line_no, environment, indirector, resource, route, requester"

    def stored(db: Path) -> list:
        with duckdb.connect(str(db), read_only=True) as con:
            return con.execute(f"SELECT {cols} FROM requests ORDER BY line_no").fetchall()

    generic, puppet = tmp_path / "generic.duckdb", tmp_path / "puppet.duckdb"
    ok(logan("ingest", sample, "--db", str(generic), "--profile", "generic"))
    ok(logan("ingest", sample, "--db", str(puppet), "--profile", "puppet"))
    before, want = stored(generic), stored(puppet)
    assert len(before) == len(want) == 20_000
    assert sum(a != b for a, b in zip(before, want, strict=True)) > 10_000
    said = ok(logan("reclassify", "--db", str(generic), "--profile", "puppet"))
    assert stored(generic) == want
    routes = len({row[4] for row in want if row[4] is not None})
    assert f"classified 20,000 requests again: {routes:,} routes" in said


@pytest.mark.parametrize(
    "args",
    [
        ["reclassify"],
        ["prune", "--keep", "35d"],
        ["sql", "SELECT 1"],
        ["stats"],
        ["timeline"],
    ],
)
def test_commands_over_a_store_refuse_a_missing_one_and_make_none(tmp_path, args):
    missing = tmp_path / "none.duckdb"
    said = refused(logan(*args, "--db", str(missing)))
    assert f"--db: no store at {missing}" in said
    assert list(tmp_path.iterdir()) == []


def test_reclassify_refuses_what_it_cannot_do(tmp_path):
    store = tmp_path / "s.duckdb"
    ok(logan("ingest", str(SAMPLES / "puppet_access.log"), "--db", str(store)))
    assert "--profile 'bogus'" in refused(logan("reclassify", "--db", str(store), "--profile", "bogus"))
    assert "--profile none" in refused(logan("reclassify", "--db", str(store), "--profile", "none"))
