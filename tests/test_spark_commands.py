"""`logan timeline|incidents|compare|cache|stats --engine spark --data DIR` print what their
`--db STORE` forms print, from the Parquet `logan export` wrote of that store.

The commands run in this process (typer's runner), so the whole module shares the one
Spark session of spark_support; DuckDB's answer over the store is the reference: the same
rows and texts, integers identical, floats equal to 1e-9 relative.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from spark_support import SAMPLES, same_json, spark  # noqa: F401  (the shared session fixture)
from typer.testing import CliRunner

from logan.cli import app

# (command and its options): each a question the samples answer with several rows. The
# HAProxy sample brings servers' events (timeline, incidents' servers down); compare runs
# on two periods of one store (two sets of logs are files, read by DuckDB).
COMMANDS = {
    "timeline": ["timeline", "--bucket", "1m", "--by", "source"],
    "incidents": ["incidents", "--bucket", "30s"],
    "compare": ["compare", "--a-until", "2013-11-05T19:04", "--b-since", "2013-11-05T19:04", "--by", "route"],
    "cache": ["cache", "--by", "indirector", "--ttl", "1s,60s", "--workers", "4", "--assign", "client"],
    # the statistics of the shown groups alone (logan.answer.stats.cut_to_top)
    "stats": ["stats", "--by", "resource", "--top", "5"],
    "stats_p99": ["stats", "--by", "requester", "--top", "5", "--sort", "p99"],
}


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> tuple[Path, Path]:
    """(store, its Parquet export) of the Puppet and HAProxy sample logs."""
    tmp = tmp_path_factory.mktemp("commands")
    db, data = tmp / "s.duckdb", tmp / "parquet"
    for log in ("puppet_access.log", "haproxy.log"):
        run(["ingest", str(SAMPLES / log), "--db", str(db)])
    run(["export", "--db", str(db), "--to", str(data)])
    return db, data


def run(args: list[str]) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.stdout


def on_both(stored: tuple[Path, Path], args: list[str]) -> tuple[str, str]:
    """(DuckDB's output, Spark's output) of one command."""
    db, data = stored
    spark_args = ["--engine", "spark", "--data", str(data), "--master", "local[1]"]
    return run([*args, "--db", str(db)]), run([*args, *spark_args])


@pytest.mark.parametrize("command", COMMANDS)
def test_command_on_spark_prints_what_duckdb_prints(spark, stored, command):  # noqa: F811
    want, got = on_both(stored, [*COMMANDS[command], "-o", "json"])
    same_json(json.loads(got), json.loads(want))


def test_csv_on_spark_is_duckdbs(spark, stored):  # noqa: F811
    want, got = on_both(stored, ["timeline", "--bucket", "2m", "-o", "csv"])
    want_rows, got_rows = (list(csv.DictReader(io.StringIO(t))) for t in (want, got))
    assert len(want_rows) > 1
    same_json([_numbers(r) for r in got_rows], [_numbers(r) for r in want_rows])


def _numbers(row: dict[str, str]) -> dict[str, object]:
    # CSV cells as the numbers they write (a float's last digits may differ), else the text
    out: dict[str, object] = {}
    for k, v in row.items():
        try:
            out[k] = int(v)
        except ValueError:
            try:
                out[k] = float(v)
            except ValueError:
                out[k] = v
    return out


def test_arrays_come_back_typed_as_duckdb_gives_them(spark, stored):  # noqa: F811
    # what the numpy code of an answer reads: timestamps in microseconds, int64 with NULLs
    from logan.engines.spark import SparkConnection
    from logan.store import open_store

    db, data = stored
    sql = ("SELECT ts_start, duration_us, upstream_us, status, method FROM requests "
           "WHERE source LIKE '%haproxy%' ORDER BY line_no LIMIT 500")  # fmt: skip
    with open_store(db, read_only=True) as store:
        want_df, want_np = store.con.execute(sql).df(), store.con.execute(sql).fetchnumpy()
    con = SparkConnection(spark, data)
    got_df, got_np = con.execute(sql).df(), con.execute(sql).fetchnumpy()
    assert list(got_df.dtypes) == list(want_df.dtypes)
    assert got_df.equals(want_df)
    for name, want in want_np.items():
        got = got_np[name]
        assert got.dtype == want.dtype and type(got) is type(want), name
        mask = np.ma.getmaskarray(want)
        assert (np.ma.getmaskarray(got) == mask).all(), name
        assert (np.ma.getdata(got)[~mask] == np.ma.getdata(want)[~mask]).all(), name
