"""`logan export`: a store as Parquet by day, read back equal to the store, and a second run
that writes only the days that changed. Needs no Spark: DuckDB reads the files back."""

from __future__ import annotations

import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pandas as pd
from spark_support import SAMPLES, days_frame

from logan.engines.export import UNDATED, export
from logan.store import open_store

ORDER = "ORDER BY source, line_no"


def logan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["logan", *args], capture_output=True, text=True, timeout=120)


def read_back(folder: Path, table: str, order: str = ORDER) -> pd.DataFrame:
    files = sorted(str(p) for p in (folder / table).rglob("*.parquet"))
    return duckdb.connect().execute(f"SELECT * FROM read_parquet(?) {order}", [files]).df()


def test_every_table_reads_back_as_the_store_has_it(tmp_path):
    db = tmp_path / "s.duckdb"
    for log in sorted(SAMPLES.glob("*.log")):
        assert logan("ingest", str(log), "--db", str(db)).returncode == 0
    with open_store(db) as store:
        store.append(days_frame())
        done = export(store.con, tmp_path / "out")
        for table in ("requests", "rejects", "events"):
            want = store.sql(f"SELECT * FROM {table} {ORDER}")
            got = read_back(tmp_path / "out", table)
            assert len(got) == len(want) and done.rows[table] == len(want)
            pd.testing.assert_frame_equal(got[list(want.columns)], want, check_dtype=False)
        want = store.sql("SELECT * FROM ingests ORDER BY ingest_id")
        pd.testing.assert_frame_equal(read_back(tmp_path / "out", "ingests", "ORDER BY ingest_id"), want)
    # the partitions are the UTC days of the rows, counted here from the rows given
    frame = days_frame()
    days = {t.strftime("%Y-%m-%d") for t in frame.ts_start.dropna()} | {UNDATED}
    assert days <= {p.name.removeprefix("day=") for p in (tmp_path / "out" / "requests").iterdir()}
    undated = read_back_day(tmp_path / "out", UNDATED)
    assert len(undated) == frame.ts_start.isna().sum()


def read_back_day(folder: Path, day: str) -> pd.DataFrame:
    files = [str(p) for p in (folder / "requests" / f"day={day}").glob("*.parquet")]
    return duckdb.connect().execute("SELECT * FROM read_parquet(?)", [files]).df()


def rows(day: datetime, n: int, first_line: int) -> pd.DataFrame:
    return pd.DataFrame(
        dict(source="x.log", line_no=range(first_line, first_line + n), dialect="nginx", format="t",
             ts_start=[day + timedelta(minutes=i) for i in range(n)], duration_us=range(n))
    )  # fmt: skip


def test_a_second_run_writes_only_new_and_grown_days(tmp_path):
    out = tmp_path / "out"
    d1, d2, d3 = datetime(2024, 5, 1), datetime(2024, 5, 2), datetime(2024, 5, 3)
    with open_store(tmp_path / "s.duckdb") as store:
        store.append(pd.concat([rows(d1, 30, 1), rows(d2, 20, 31)]))
        first = export(store.con, out)
        assert first.written["requests"] == ["2024-05-01", "2024-05-02"] and first.rows["requests"] == 50
        day1_files = {p: p.stat().st_mtime_ns for p in (out / "requests" / "day=2024-05-01").iterdir()}
        store.append(pd.concat([rows(d2 + timedelta(hours=5), 5, 51), rows(d3, 7, 56)]))
        second = export(store.con, out)
    assert second.written["requests"] == ["2024-05-02", "2024-05-03"]
    assert second.kept["requests"] == ["2024-05-01"] and second.rows["requests"] == 25 + 7
    assert {p: p.stat().st_mtime_ns for p in (out / "requests" / "day=2024-05-01").iterdir()} == day1_files
    got = read_back(out, "requests")
    assert got.groupby(got.ts_start.dt.date).size().to_dict() == {d1.date(): 30, d2.date(): 25, d3.date(): 7}
    assert got.line_no.tolist() == list(range(1, 63))  # every row once: a rewritten day did not add to itself


def test_a_day_an_export_was_killed_writing_is_written_again(tmp_path):
    """A day's file cut short as a killed export leaves it (Parquet's footer is written
    last): the next run writes that day again and keeps the others as they were."""
    out = tmp_path / "out"
    d1, d2 = datetime(2024, 5, 1), datetime(2024, 5, 2)
    with open_store(tmp_path / "s.duckdb") as store:
        store.append(pd.concat([rows(d1, 30, 1), rows(d2, 20, 31)]))
        export(store.con, out)
        (cut,) = (out / "requests" / "day=2024-05-02").iterdir()
        cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
        day1_files = {p: p.stat().st_mtime_ns for p in (out / "requests" / "day=2024-05-01").iterdir()}
        again = export(store.con, out)
    assert again.written["requests"] == ["2024-05-02"] and again.kept["requests"] == ["2024-05-01"]
    assert {p: p.stat().st_mtime_ns for p in (out / "requests" / "day=2024-05-01").iterdir()} == day1_files
    assert read_back(out, "requests").line_no.tolist() == list(range(1, 51))


def test_export_command_and_its_example(tmp_path):
    db = tmp_path / "puppet.duckdb"
    assert logan("ingest", str(SAMPLES / "puppet_access.log"), "--db", str(db)).returncode == 0
    help_text = " ".join(logan("export", "--help").stdout.split())
    assert "Example" in help_text.split("Options")[-1]
    r = subprocess.run(["logan", "export", "--db", "puppet.duckdb", "--to", "puppet-parquet"],
                       capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = sum(1 for _ in (SAMPLES / "puppet_access.log").open())
    assert f"({lines:,} rows)" in r.stdout
    assert len(read_back(tmp_path / "puppet-parquet", "requests")) == lines
    again = logan("export", "--db", str(db), "--to", str(tmp_path / "puppet-parquet"))
    assert "0 day(s) written" in again.stdout and "1 unchanged" in again.stdout


def test_export_refuses_clearly(tmp_path):
    r = logan("export", "--db", str(tmp_path / "none.duckdb"), "--to", str(tmp_path / "o"))
    assert r.returncode == 2 and "no store" in r.stderr and "Traceback" not in r.stderr
    r = logan("export", "--to", str(tmp_path / "o"))
    assert r.returncode == 2 and "--db" in r.stderr
    (tmp_path / "file").write_text("x")
    db = tmp_path / "s.duckdb"
    assert logan("ingest", str(SAMPLES / "nginx_access.log"), "--db", str(db)).returncode == 0
    r = logan("export", "--db", str(db), "--to", str(tmp_path / "file"))
    assert r.returncode == 2 and "is a file" in r.stderr
