"""What a new user meets first: errors that say what to do (one line, exit 2, no
traceback), tables that fit 80 columns, output that stays data, formats that fit or say so.

Every case runs the real `logan` command in a subprocess, as a user would."""

from __future__ import annotations

import csv
import importlib
import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from logan.cli import COMMANDS
from logan.show.plots import KINDS

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_logs"
PUPPET = SAMPLES / "puppet_access.log"
CORPUS = REPO.parent / "shared" / "corpus"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")


def logan(*args: str, columns: int | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if columns:  # rich reads the terminal's width from COLUMNS when it is set
        env["COLUMNS"] = str(columns)
    return subprocess.run(["logan", *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd)


def refused(r: subprocess.CompletedProcess, *needles: str) -> str:
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("logan: "), r.stderr  # one line
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


# --- Every option with a bad value: one line naming it, exit 2 ---------------------------------
def _bad_toml(tmp: Path) -> str:
    path = tmp / "bad.toml"
    path.write_text('[[rules]]\nmatch = "x"\nindirector = \n')
    return str(path)


BAD = [
    (["stats", str(PUPPET), "--trusted-proxy", "10.0.0.0/33"], ["--trusted-proxy", "10.0.0.0/33"]),
    (["stats", str(PUPPET), "--rules", "/nonexistent.toml"], ["/nonexistent.toml", "No such file"]),
    (["stats", str(PUPPET), "--rules", "{bad}"], ["not TOML", "line 3"]),
    (["stats", str(PUPPET), "--top", "-5"], ["--top"]),
    (["stats", str(PUPPET), "--top", "many"], ["--top"]),
    (["stats", str(PUPPET), "--by", "nothing"], ["--by", "nothing"]),
    (["stats", str(PUPPET), "--sort", "size"], ["--sort", "size"]),
    (["stats", str(PUPPET), "--view", "nope"], ["--view", "nope"]),
    (["stats", str(PUPPET), "--view", "apdex"], ["--slo"]),
    (["stats", str(PUPPET), "--slo", "fast"], ["--slo", "fast"]),
    (["stats", str(PUPPET), "--since", "yesterday-ish"], ["not a time", "yesterday-ish"]),
    (["stats", str(PUPPET), "--status", "teapot"], ["not a status", "teapot"]),
    (["stats", str(PUPPET), "--output", "xml"], ["--output", "xml"]),
    (["stats", str(PUPPET), "--output", "parquet"], ["--out"]),
    (["stats", str(PUPPET), "--profile", "wordpress"], ["--profile", "wordpress"]),
    (["stats", str(PUPPET), "--format", "nginx:nosuch"], ["nginx:nosuch", "nginx:combined", "nginx:timed"]),
    (["stats", str(PUPPET), "--tz", "Mars/Olympus"], ["Mars/Olympus"]),
    (["stats", str(PUPPET), "--columns", "p42"], ["--columns", "p42"]),
    (["stats", str(PUPPET), "--nosuch"], ["--nosuch"]),
    (["stats", "/nonexistent.log"], ["/nonexistent.log"]),
    (["stats"], ["FILES", "--db"]),
    (["stats", "--db", "/nonexistent.duckdb"], ["/nonexistent.duckdb"]),
    (["ingest"], ["no input"]),
    (["ingest", str(PUPPET), "--source", "nolabel"], ["--source", "LABEL=FORMAT:PATH"]),
    (["ingest", str(PUPPET), "--log-format-name", "main"], ["--nginx-conf"]),
    (["ingest", str(PUPPET), "--nginx-conf", "/nonexistent.conf"], ["/nonexistent.conf"]),
    (["sql", "--db", "/nonexistent.duckdb", "SELECT 1"], ["/nonexistent.duckdb"]),
    (["sql", "--db", str(PUPPET), "SELECT 1"], ["not a DuckDB file", "not touching it"]),
    (["nosuchcommand"], ["nosuchcommand"]),
    # a missing argument or option: what it takes, and where to read more
    (["plot"], ["'kind'", *KINDS, "'logan plot --help'"]),
    (["sql"], ["'query'", "SQL over requests", "'logan sql --help'"]),
    (["prune"], ["'--db'", "the store to prune", "'logan prune --help'"]),
    (["nightly"], ["'--config'", "the logan.toml", "'logan nightly --help'"]),
]


@pytest.mark.parametrize(("args", "needles"), BAD, ids=lambda x: " ".join(x) if isinstance(x, list) else "")
def test_a_bad_option_is_one_line_exit_2(tmp_path, args, needles):
    args = [_bad_toml(tmp_path) if a == "{bad}" else a for a in args]
    refused(logan(*args, cwd=tmp_path), *needles)


def test_a_sqlite_file_is_refused_untouched_and_offline(tmp_path):
    import sqlite3

    db = tmp_path / "other.sqlite"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE t (a)")
    before = db.read_bytes()
    refused(logan("stats", "--db", str(db)), "SQLite", "not touching it")
    assert db.read_bytes() == before


def test_a_failed_command_leaves_no_empty_store(tmp_path):
    garbage = tmp_path / "garbage.log"
    garbage.write_text("not a log line\nnor this one\n")
    db = tmp_path / "new.duckdb"
    r = logan("ingest", str(garbage), "--db", str(db))
    assert r.returncode == 2 and "garbage.log" in r.stderr and "Traceback" not in r.stderr
    assert not db.exists() and not Path(f"{db}.wal").exists()
    # a store that already holds rows stays, whatever the next command does
    assert logan("ingest", str(PUPPET), "--db", str(db)).returncode == 0
    assert logan("ingest", str(garbage), "--db", str(db)).returncode == 2
    r = logan("sql", "--db", str(db), "-o", "csv", "SELECT count(*) AS n FROM requests")
    assert r.stdout.splitlines()[1] == str(sum(1 for _ in PUPPET.open()))


def test_version_and_short_help():
    r = logan("--version")
    assert r.returncode == 0 and r.stdout.startswith("logan ")
    r = logan("-h")
    assert r.returncode == 0 and "stats" in r.stdout and "ingest" in r.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_every_help_ends_with_an_example_that_runs(tmp_path, command):
    text = " ".join(logan(command, "--help", columns=300).stdout.split())
    assert "Example" in text.split("Options")[-1]  # after the options: the last thing shown
    first = text[text.index("Example") :].split(":", 1)[1].split("·")[0].strip().split(" ")
    assert first[0] == "logan" and first[1] == command
    args = [a.strip('"') for a in first[2:]]
    if command == "sql":  # the query is one argument
        args = [*args[:2], " ".join(args[2:-2]), *args[-2:]]
    if "--db" in args and command != "ingest":  # a store the example reads: made for it
        assert (
            logan("ingest", str(PUPPET), "--db", str(tmp_path / args[args.index("--db") + 1])).returncode == 0
        )
    r = logan(command, *[a.replace("sample_logs/", f"{SAMPLES}/") for a in args], cwd=tmp_path)
    assert r.returncode == 0, (args, r.stderr)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_help_says_its_whole_text_wrapped_at_the_terminals_width(command):
    """The prose of a --help, paragraph by paragraph, filled to the terminal's width: no
    line cut short where the source's docstring broke its lines, no word lost."""
    doc = getattr(importlib.import_module(f"logan.cli.{command}"), f"{command}_command").__doc__
    out = "\n".join(line.rstrip() for line in logan(command, "--help", columns=80).stdout.splitlines())
    prose = out.split("╭")[0].split("Usage:")[1].split("\n", 1)[1]  # between the usage and the panels
    assert prose.split() == doc.split()
    for paragraph in prose.strip("\n").split("\n\n"):
        lines = paragraph.splitlines()
        assert all(len(line) >= 55 for line in lines[:-1]), lines


# --- A wrong format is said, not read as rejects -------------------------------------------------
def test_a_wrong_format_stops_and_names_the_right_one(tmp_path):
    r = logan(
        "ingest", str(SAMPLES / "haproxy.log"), "--format", "combined", "--db", str(tmp_path / "s.duckdb")
    )
    msg = refused(r, "haproxy.log", "--format apache:combined reads none", "haproxy:httplog")
    assert "--keep-going" in msg
    r = logan("ingest", str(SAMPLES / "haproxy.log"), "--format", "combined", "--keep-going")
    assert r.returncode == 0 and "rejects" in r.stderr


def test_a_directory_with_an_error_log_is_read_in_part(tmp_path):
    (tmp_path / "access.log").write_bytes((SAMPLES / "nginx_access.log").read_bytes())
    (tmp_path / "error.log").write_text(
        '2024/01/01 00:00:00 [error] 12#12: *1 open() "/x" failed (2: No such file or directory)\n'
    )
    r = logan("ingest", str(tmp_path), "--db", str(tmp_path / "s.duckdb"))
    assert r.returncode == 3, r.stderr
    assert "skipped" in r.stderr and "error.log" in r.stderr
    # the store in the same directory, and its write-ahead log, are not read as logs
    assert "s.duckdb" not in r.stderr, r.stderr
    rows = logan("sql", "--db", str(tmp_path / "s.duckdb"), "-o", "csv", "SELECT count(*) FROM requests")
    assert int(rows.stdout.splitlines()[1]) == sum(1 for _ in (SAMPLES / "nginx_access.log").open())


def test_auto_detection_needs_most_of_the_sample(tmp_path):
    lines = (SAMPLES / "puppet_access.log").read_text().splitlines()[:3]
    log = tmp_path / "mixed.log"
    log.write_text("\n".join([*lines, *(f"free text {i}" for i in range(10))]) + "\n")
    r = logan("ingest", str(log))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    said = " ".join(r.stderr.split())  # the message shows a line it cannot read, on lines of its own
    assert "no known format reads most" in said and "3 of the first 13" in said and "'free text 0'" in said


@needs_corpus
@pytest.mark.parametrize(
    ("name", "durations_ms"),
    [
        ("sumologic-docs_puppetserver_access.log", [134, 77]),
        ("puppetserver_static_file_content_2016.log", [2]),
    ],
)
def test_puppetserver_access_log_is_detected_with_milliseconds(name, durations_ms):
    path = CORPUS / "tricky_issue_lines" / name
    r = logan("stats", str(path), "--by", "route", "-o", "json")
    assert r.returncode == 0, r.stderr
    got = sorted(row["total_us"] for row in json.loads(r.stdout))
    assert got == sorted(ms * 1000 for ms in durations_ms)  # %D of logback-access: milliseconds
    r = logan("ingest", str(path))
    assert "apache:puppetserver" in " ".join(r.stderr.split())


def test_a_misspelt_nginx_variable_is_named(tmp_path):
    fmt = '$remote_addr [$time_local] "$request" $status $request_tme'
    refused(logan("stats", str(SAMPLES / "nginx_access.log"), "--dialect", "nginx", "--format", fmt),
            "$request_tme", "$request_time")  # fmt: skip


def test_nginx_conf_gives_the_format_its_access_log_uses(tmp_path):
    conf = tmp_path / "nginx.conf"
    timed = (
        '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" '
        '"$http_user_agent" $request_time $upstream_response_time $upstream_cache_status'
    )
    conf.write_text(
        f"http {{\n  log_format timed '{timed}';\n  server {{\n"
        "    access_log /var/log/nginx/access.log timed buffer=32k;\n  }\n}\n"
    )
    r = logan(
        "stats", str(SAMPLES / "nginx_access.log"), "--nginx-conf", str(conf), "-o", "json", "--by", "method"
    )
    assert r.returncode == 0, r.stderr
    assert sum(row["requests"] for row in json.loads(r.stdout)) == sum(
        1 for _ in (SAMPLES / "nginx_access.log").open()
    )
    assert all(row["total_us"] for row in json.loads(r.stdout))  # the request time was read
    conf.write_text(conf.read_text().replace("}\n}", "  access_log /var/log/nginx/api.log combined;\n  }\n}"))
    refused(logan("stats", str(SAMPLES / "nginx_access.log"), "--nginx-conf", str(conf)),
            "several formats", "timed", "combined", "--log-format-name")  # fmt: skip


# --- Readable in 80, 100 and 160 columns ----------------------------------------------------------
@pytest.mark.parametrize("width", [80, 100, 160])
def test_tables_fit_the_terminal_without_cutting_a_number(width):
    r = logan("stats", str(PUPPET), columns=width)
    assert r.returncode == 0, r.stderr
    table = [x for x in r.stdout.splitlines() if x[:1] in "┏┃┡│└"]
    assert table and max(len(x) for x in table) <= width
    assert "…" not in r.stdout
    head = next(x for x in table if "requests" in x)
    for key in ("method", "indirector", "requests", "% time", "total"):
        assert key in head, (width, head)
    hidden = [x for x in r.stdout.splitlines() if x.startswith("left out to fit")]
    if width == 160:
        assert not hidden and "bytes" in head
    else:
        assert hidden and "--wide" in hidden[0] and "bytes" in hidden[0] and "bytes" not in head
    # --wide shows every column, --columns picks
    wide = logan("stats", str(PUPPET), "--wide", columns=width).stdout
    assert "bytes" in wide and "left out" not in wide
    assert "│ POST   │ catalog " in wide  # the text columns whole, not squeezed to fit
    picked = logan("stats", str(PUPPET), "--columns", "bytes", columns=width).stdout
    head = next(x for x in picked.splitlines() if x.startswith("┃"))
    assert "bytes" in head and "p50" not in head


def test_column_names_made_of_log_content_are_shown_as_text(tmp_path):
    """A `logan sql` PIVOT names columns after values of the log: a terminal escape among
    them is shown escaped in the table's header, as in its cells, not obeyed or dropped."""
    db = str(tmp_path / "p.duckdb")
    assert logan("ingest", str(PUPPET), "--db", db).returncode == 0
    evil = "CASE WHEN line_no = 1 THEN 'x' || chr(27) || ']0;pwned' || chr(7) ELSE 'ok' END"
    query = f"PIVOT (SELECT {evil} AS k FROM requests WHERE line_no <= 3) ON k USING count(*)"
    table = logan("sql", "--db", db, query)
    assert table.returncode == 0, table.stderr
    header = next(x for x in table.stdout.splitlines() if x.startswith("┃"))
    assert "x\\x1b]0;pwned\\x07" in header and "ok" in header
    assert "\x1b" not in table.stdout and "\x07" not in table.stdout


def test_top_says_what_it_cut_and_data_outputs_keep_every_row():
    all_json = json.loads(logan("stats", str(PUPPET), "--by", "requester", "-o", "json").stdout)
    table = logan("stats", str(PUPPET), "--by", "requester").stdout
    assert f"20 of {len(all_json):,} groups shown" in table and len(all_json) > 20
    three = json.loads(logan("stats", str(PUPPET), "--by", "requester", "-o", "json", "--top", "3").stdout)
    assert three == all_json[:3]


def test_a_relative_window_says_what_it_counted_from():
    out = " ".join(logan("stats", str(PUPPET), "--since", "5m").stdout.split())
    assert "--since 5m counted back from the newest request, 2013-11-05 19:12 UTC" in out
    assert "Warning: that is" in out and "before now" in out


# --- Log content stays data in every output ------------------------------------------------------
EVIL_UA = "\x1b[31mRED\x1b]0;pwned\x07 =HYPERLINK(1) \u202eevil"


def _evil_log(tmp: Path) -> Path:
    lines = [
        f'10.0.0.{i} - - [05/Nov/2013:19:00:0{i} +0000] "GET /x HTTP/1.1" 200 5 {1000 + i} "-" "{EVIL_UA}"'
        for i in range(3)
    ]
    path = tmp / "evil.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_terminal_escapes_from_a_log_never_reach_the_terminal(tmp_path):
    log = _evil_log(tmp_path)
    for shown in ("table", "markdown"):
        r = logan("stats", str(log), "--by", "user_agent", "--format", "combined_D", "-o", shown)
        assert r.returncode == 0, r.stderr
        for ch in ("\x1b", "\x07", "\u202e"):
            assert ch not in r.stdout + r.stderr
        shown_escape = "\\x1b[31mRED" if shown == "table" else "\\\\x1b\\[31mRED"  # Markdown escapes \ and [
        assert shown_escape in r.stdout and "\\u202e" in r.stdout


def test_every_command_writes_csv_alike(tmp_path):
    log = _evil_log(tmp_path)
    db = tmp_path / "s.duckdb"
    assert logan("ingest", str(log), "--db", str(db), "--format", "combined_D").returncode == 0
    via_sql = logan("sql", "--db", str(db), "-o", "csv", "SELECT DISTINCT user_agent FROM requests").stdout
    via_stats = logan("stats", "--db", str(db), "--by", "user_agent", "-o", "csv").stdout
    cell_sql = next(csv.DictReader(io.StringIO(via_sql)))["user_agent"]
    cell_stats = next(csv.DictReader(io.StringIO(via_stats)))["user_agent"]
    assert cell_sql == cell_stats == "\\x1b[31mRED\\x1b]0;pwned\\x07 =HYPERLINK(1) \\u202eevil"
    formula = logan("sql", "--db", str(db), "-o", "csv", "SELECT '=1+2' AS q").stdout.splitlines()[1]
    assert formula == "'=1+2"
    raw = logan("sql", "--db", str(db), "-o", "csv", "--raw", "SELECT '=1+2' AS q").stdout.splitlines()[1]
    assert raw == "=1+2"


def test_max_reject_ratio_makes_a_partial_read_exit_3(tmp_path):
    log = tmp_path / "some_bad.log"
    good = PUPPET.read_text().splitlines(keepends=True)[:3]
    log.write_text("garbage\n" + "".join(good))  # one line in four is a reject
    over = logan("ingest", str(log), "--format", "combined_D", "--max-reject-ratio", "0.2")
    assert over.returncode == 3 and "25.0% of the lines read were rejects" in over.stderr
    under = logan("ingest", str(log), "--format", "combined_D", "--max-reject-ratio", "0.3")
    assert under.returncode == 0
