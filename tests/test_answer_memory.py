"""An answer over a store file holds DuckDB's memory to a bound while it reads, and lets
the blocks DuckDB cached go after (logan.store.memory_at_most): DuckDB otherwise keeps what
it read up to 80% of the machine's memory, and `logan cache` on a 20 M-row store took
3.6 GB. Measured by DuckDB's own accounting (duckdb_memory)."""

from __future__ import annotations

import duckdb

from logan.store import memory_at_most, within_memory

MIB = 1 << 20


def cached(con: duckdb.DuckDBPyConnection, tag: str = "BASE_TABLE") -> tuple[int, int]:
    """DuckDB's memory and temporary storage under `tag`, in bytes."""
    sql = "SELECT sum(memory_usage_bytes), sum(temporary_storage_bytes) FROM duckdb_memory() WHERE tag = ?"
    got = con.execute(sql, [tag]).fetchall()[0]
    return int(got[0] or 0), int(got[1] or 0)


def limit(con: duckdb.DuckDBPyConnection) -> str:
    return con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]


def table_of_texts(con: duckdb.DuckDBPyConnection) -> None:
    """Texts that compress to about 90 MB."""
    con.execute("CREATE TABLE t AS SELECT range AS x, md5(range::VARCHAR) AS y FROM range(5000000)")


def test_an_answer_on_a_file_is_bounded_and_lets_the_cache_go(tmp_path):
    db = str(tmp_path / "s.duckdb")
    with duckdb.connect(db) as w:
        table_of_texts(w)
    con = duckdb.connect(db, read_only=True)
    default = limit(con)
    top = con.execute("SELECT max(y), count(*) FROM t").fetchall()
    assert top[0][1] == 5_000_000
    before = cached(con)[0]
    assert before > 64 * MIB  # what DuckDB keeps without a bound
    with memory_at_most(con, 32):
        assert con.execute("SELECT max(y), count(*) FROM t").fetchall() == top
        assert limit(con) != default
        within = cached(con)[0]
    after = cached(con)[0]
    assert limit(con) == default
    assert within <= 32 * MIB < before
    assert after <= 16 * MIB


def test_a_store_in_memory_keeps_its_tables_in_memory():
    con = duckdb.connect()
    table_of_texts(con)
    default = limit(con)
    held = cached(con, "IN_MEMORY_TABLE")
    assert held[0] > 64 * MIB
    with memory_at_most(con, 32):
        assert limit(con) == default
        assert con.execute("SELECT count(DISTINCT y) FROM t").fetchall() == [(5_000_000,)]
    # nothing moved to a temporary file: DuckDB would have, to meet the bound
    assert cached(con, "IN_MEMORY_TABLE") == held


def test_what_needs_more_than_the_bound_runs_again_with_more(tmp_path):
    """A DISTINCT over 5 M texts does not spill: under 8 MB and 32 MB it runs out of
    memory, under DuckDB's own limit it answers."""
    db = str(tmp_path / "s.duckdb")
    with duckdb.connect(db) as w:
        table_of_texts(w)
    con = duckdb.connect(db, read_only=True)
    default = limit(con)
    tried = []

    def run() -> int:
        tried.append(limit(con))
        return con.execute("SELECT count(DISTINCT y) FROM t").fetchall()[0][0]

    assert within_memory(con, 8, run) == 5_000_000
    assert len(tried) == 3 and tried[-1] == default and len(set(tried)) == 3
    assert limit(con) == default
    # what fits runs once, under the bound
    tried.clear()

    def scan() -> str:
        tried.append(limit(con))
        return con.execute("SELECT max(y) FROM t").fetchall()[0][0]

    assert within_memory(con, 32, scan) == con.execute("SELECT max(y) FROM t").fetchall()[0][0]
    assert len(tried) == 1 and tried[0] != default


def test_a_bound_inside_a_bound_leaves_the_outer_one(tmp_path):
    """A report's section runs under a bound, and the answers it calls (a timeline, the
    causes of incidents) set their own: the inner block neither changes the outer limit nor
    lifts it when it ends."""
    db = str(tmp_path / "s.duckdb")
    with duckdb.connect(db) as w:
        table_of_texts(w)
    con = duckdb.connect(db, read_only=True)
    default = limit(con)
    with memory_at_most(con, 32):
        outer = limit(con)
        with memory_at_most(con, 512):
            assert limit(con) == outer
        assert limit(con) == outer != default
        assert con.execute("SELECT count(*) FROM t").fetchall() == [(5_000_000,)]
    assert limit(con) == default
    with memory_at_most(con, 512):  # after the outer block ended, a bound of its own again
        assert limit(con) not in (outer, default)
