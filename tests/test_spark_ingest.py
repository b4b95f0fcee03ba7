"""`logan ingest --engine spark` gives the rows and rejects `logan ingest` gives, row for
row: every canonical column of `requests`, every reject's line number, line and reason,
for each dialect's sample log and the real logs of ../shared/corpus the other tests read.

DuckDB's ingest of the same file is the reference. What Spark does not read yet is
refused with its reason (HAProxy's event lines), never read differently.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spark_support import REPO, SAMPLES, same_json, spark  # noqa: F401  (the shared session fixture)
from typer.testing import CliRunner

import logan
from logan import schema
from logan.answer.inputs import ReadOptions
from logan.cli import app
from logan.engines.spark_ingest import spark_ingest
from logan.engines.transpile import NotPortable

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
    (CORPUS / "lnav_shop_access" / "logfile_shop_access_log.0", "auto", None),
    (CORPUS / "nginx_gonx_thumbs" / "access.log", GONX, "nginx"),
    (CORPUS / "nginx_otus_ui_sample" / "nginx-access-ui.log-20170630", OTUS, "nginx"),
    (CORPUS / "tricky_issue_lines" / "fluent-bit-566_escaped_quote_ua.log", "auto", None),
]
COLUMNS = [name for name, _, _ in schema.REQUESTS]


def _duckdb(path: Path, fmt: str, dialect: str | None) -> tuple[list[tuple], list[tuple]]:
    """(rows, rejects) of logan ingest, in line order."""
    con = logan.ingest([str(path)], format=fmt, dialect=dialect).store.con
    rows = con.execute(f"SELECT {', '.join(COLUMNS)} FROM requests ORDER BY line_no").fetchall()
    rejects = con.execute("SELECT source, line_no, raw, reason FROM rejects ORDER BY line_no").fetchall()
    return [_plain(r) for r in rows], rejects


def _spark(session, path: Path, to: Path, fmt: str, dialect: str | None) -> tuple[list[tuple], list[tuple]]:  # noqa: ANN001, E501
    spark_ingest(session, [str(path)], to, ReadOptions(fmt, dialect))
    rows = session.read.parquet(str(to / "requests")).select(*COLUMNS).orderBy("line_no").collect()
    rejects = session.read.parquet(str(to / "rejects")).orderBy("line_no").collect()
    return [_plain(tuple(r)) for r in rows], [tuple(r) for r in rejects]


def _plain(row: tuple) -> tuple:
    # `extra` is a MAP: DuckDB gives a dict, Spark a dict too (None when empty on both)
    return tuple(dict(v) if isinstance(v, dict) else v for v in row)


@pytest.mark.parametrize(("path", "fmt", "dialect"), LOGS, ids=[p.name for p, _, _ in LOGS])
def test_spark_reads_every_line_as_duckdb_does(spark, tmp_path, path, fmt, dialect):  # noqa: F811
    if not path.is_file():
        pytest.skip(f"{path} is not here (the corpus lives in ../shared/corpus)")
    want_rows, want_rejects = _duckdb(path, fmt, dialect)
    got_rows, got_rejects = _spark(spark, path, tmp_path / "lake", fmt, dialect)
    assert len(got_rows) == len(want_rows) and want_rows
    for want, got in zip(want_rows, got_rows, strict=True):
        assert got == want, {c: (w, g) for c, w, g in zip(COLUMNS, want, got, strict=True) if w != g}
    assert got_rejects == want_rejects


def test_event_lines_are_refused_not_misread(spark, tmp_path):  # noqa: F811
    with pytest.raises(NotPortable, match="event lines"):
        spark_ingest(spark, [str(SAMPLES / "haproxy.log")], tmp_path / "lake")


def test_the_folder_answers_as_the_store_does(spark, tmp_path):  # noqa: F811
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
