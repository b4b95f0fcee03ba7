"""Provenance lives in `ingests`: `requests_data` stores no source, dialect or format per
row, the `requests` view joins them in by ingest_id, and the ingests counters stay true for
what is committed (also when an ingest is interrupted)."""

from __future__ import annotations

import importlib
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from logan import schema
from logan.errors import LoganError
from logan.read.ingest import ingest
from logan.store import open_store

INGEST_MODULE = importlib.import_module("logan.read.ingest")
PROVENANCE = ("source", "dialect", "format")


def apache_log(n: int, junk_at: set[int]) -> bytes:
    lines = [
        "junk line"
        if i in junk_at
        else f'10.0.0.{i} - - [10/Oct/2000:13:55:{i % 60:02d} +0000] "GET /a/{i} HTTP/1.1" 200 {i} "-" "ua"'
        for i in range(1, n + 1)
    ]
    return ("\n".join(lines) + "\n").encode()


def haproxy_log(n: int) -> bytes:
    """Requests, then events and a line that is neither (a reject)."""
    request = (
        "Jan  1 00:00:{s:02d} lb haproxy[1]: 10.0.1.2:{i} [01/Jan/2021:00:00:{s:02d}.655] http-in "
        'static/srv1 10/0/30/69/109 200 2750 - - ---- 1/1/1/1/0 0/0 {{1wt.eu}} {{}} "GET /h/{i} HTTP/1.1"'
    )
    lines = [request.format(i=i, s=i % 60) for i in range(1, n + 1)]
    lines += [
        "Jan  1 00:01:00 lb haproxy[1]: Server be/app3 is DOWN, reason: Layer4 timeout, check duration: 2ms.",
        "Jan  1 00:01:01 lb haproxy[1]: Something HAProxy never says",
        "Jan  1 00:01:02 lb haproxy[1]: Proxy www started.",
    ]
    return ("\n".join(lines) + "\n").encode()


def stored(con) -> set[str]:  # noqa: ANN001
    rows = con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE table_name = ?", [schema.REQUESTS_TABLE]
    ).fetchall()
    return {r[0] for r in rows}


def check_counters(con, files: dict[str, bytes]) -> None:  # noqa: ANN001
    """Every ingests row against counts taken from the tables and the files themselves."""
    got = con.execute(
        "SELECT ingest_id, source, lines, rows, rejects, events, bytes FROM ingests ORDER BY ingest_id"
    ).fetchall()
    assert [r[1] for r in got] == list(files)
    for ingest_id, source, lines, n_rows, rejects, n_events, nbytes in got:
        data = files[source]
        want_rows = con.execute(
            f"SELECT count(*) FROM {schema.REQUESTS_TABLE} WHERE ingest_id = ?", [ingest_id]
        ).fetchone()[0]
        want_rejects = con.execute("SELECT count(*) FROM rejects WHERE source = ?", [source]).fetchone()[0]
        want_events = con.execute("SELECT count(*) FROM events WHERE source = ?", [source]).fetchone()[0]
        assert (n_rows, rejects, n_events) == (want_rows, want_rejects, want_events)
        assert (lines, nbytes) == (data.count(b"\n"), len(data))  # every line ends in \n
        assert n_rows + rejects + n_events == lines


def test_two_dialects_in_one_file_store(tmp_path):
    db = tmp_path / "s.duckdb"
    a, h = tmp_path / "web.log", tmp_path / "lb.log"
    a.write_bytes(apache_log(40, junk_at={7, 33}))
    h.write_bytes(haproxy_log(30))
    ingest([a], store=db, format="apache:combined", profile="none", block_size=700).store.close()
    s = ingest([h], store=db, format="haproxy:httplog", profile="none", block_size=900)
    assert (s.sources[0].rows, s.sources[0].rejects, s.sources[0].events) == (30, 1, 2)
    s.store.close()

    with open_store(db, read_only=True) as st:
        con = st.con
        assert not stored(con) & set(PROVENANCE)
        assert {"ingest_id", "line_no"} <= stored(con)
        # The view keeps the canonical columns, order and types.
        described = con.execute("DESCRIBE requests").fetchall()
        assert [(r[0], r[1]) for r in described] == [(c, t) for c, t, _ in schema.REQUESTS]
        got = con.execute("SELECT source, dialect, format, line_no FROM requests").fetchall()
        want = {(str(a), "apache", "apache:combined", i) for i in range(1, 41) if i not in (7, 33)}
        want |= {(str(h), "haproxy", "haproxy:httplog", i) for i in range(1, 31)}
        assert len(got) == len(want) and set(got) == want
        # More than one batch each: the counters add up over batches.
        check_counters(con, {str(a): a.read_bytes(), str(h): h.read_bytes()})
        # Filtering on a provenance column reads through the join.
        n = con.execute("SELECT count(*) FROM requests WHERE dialect = 'haproxy'").fetchone()[0]
        assert n == 30


def test_interrupted_ingest_keeps_true_counters(tmp_path, monkeypatch):
    db = tmp_path / "s.duckdb"
    f = tmp_path / "a.log"
    # Junk in every batch sends each batch down the exact path once.
    data = apache_log(60, junk_at={5, 25, 45, 55})
    f.write_bytes(data)
    real = INGEST_MODULE._exact_path
    calls = []

    def third_fails(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("killed in batch 3")
        return real(*args, **kwargs)

    monkeypatch.setattr(INGEST_MODULE, "_exact_path", third_fails)
    st = open_store(db)
    with pytest.raises(RuntimeError, match="killed in batch 3"):
        ingest([f], store=st, format="apache:combined", profile="none", block_size=1400)
    st.close()
    with open_store(db, read_only=True) as ro:
        con = ro.con
        (ingest_id, lines, n_rows, rejects, n_events, first_line, nbytes) = con.execute(
            "SELECT ingest_id, lines, rows, rejects, events, first_line, bytes FROM ingests"
        ).fetchall()[0]
        # Batches commit whole and in order: the lines read are up to the last one stored.
        committed = con.execute(
            "SELECT max(line_no) FROM (SELECT line_no FROM requests UNION ALL SELECT line_no FROM rejects)"
        ).fetchone()[0]
        assert 0 < lines < 60 and first_line == 1
        assert committed == lines
        assert nbytes == len(b"".join(data.splitlines(keepends=True)[:lines]))
        assert n_rows == con.execute("SELECT count(*) FROM requests WHERE source = ?", [str(f)]).fetchone()[0]
        assert rejects == con.execute("SELECT count(*) FROM rejects").fetchone()[0] == 2
        assert (n_rows + rejects + n_events, n_events) == (lines, 0)
        assert con.execute("SELECT count(*) FROM ingests").fetchone()[0] == 1
        assert ingest_id == 1


def test_append_creates_ingests_rows(tmp_path):
    with open_store(tmp_path / "s.duckdb") as st:
        st.append(
            pd.DataFrame(
                {
                    "source": ["x", "x", "y", None],
                    "dialect": ["apache", "apache", "nginx", None],
                    "line_no": [1, 2, 1, 9],
                    "path": ["/a", "/b", "/c", "/d"],
                }
            )
        )
        st.append(pd.DataFrame({"path": ["/e"], "format": ["mine"]}))
        assert not stored(st.con) & set(PROVENANCE)
        got = st.con.execute("SELECT path, source, dialect, format FROM requests ORDER BY path").fetchall()
        assert got == [
            ("/a", "x", "apache", None),
            ("/b", "x", "apache", None),
            ("/c", "y", "nginx", None),
            ("/d", None, None, None),
            ("/e", None, None, "mine"),
        ]
        ingests = st.con.execute(
            "SELECT source, dialect, format, first_line, lines, rows, rejects, events FROM ingests "
            "ORDER BY ingest_id"
        ).fetchall()
        assert sorted(ingests, key=str) == sorted(
            [
                ("x", "apache", None, 1, 2, 2, 0, 0),
                ("y", "nginx", None, 1, 1, 1, 0, 0),
                (None, None, None, 9, 1, 1, 0, 0),
                (None, None, "mine", None, 1, 1, 0, 0),
            ],
            key=str,
        )
        ids = st.con.execute("SELECT ingest_id FROM ingests").fetchall()
        assert len(set(ids)) == 4


def test_older_store_is_refused(tmp_path):
    db = tmp_path / "old.duckdb"
    open_store(db).close()
    con = duckdb.connect(str(db))
    con.execute("UPDATE logan_meta SET value = '3' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(LoganError, match="store version 3, too old for this logan"):
        open_store(db)


def test_append_and_ingest_ids_do_not_collide(tmp_path: Path):
    # A store written by append and by ingest side by side: ids never collide.
    db = tmp_path / "s.duckdb"
    f = tmp_path / "a.log"
    f.write_bytes(apache_log(3, junk_at=set()))
    with open_store(db) as st:
        st.append(pd.DataFrame({"path": ["/z"], "source": ["imported"]}))
        ingest([f], store=st, format="apache:combined", profile="none")
        got = st.con.execute("SELECT source, count(*) FROM requests GROUP BY 1 ORDER BY 1").fetchall()
        assert got == [(str(f), 3), ("imported", 1)]
        assert st.con.execute("SELECT list(ingest_id ORDER BY ingest_id) FROM ingests").fetchone()[0] == [
            1,
            2,
        ]


def test_append_joins_the_callers_transaction():
    st = open_store(None)
    st.con.execute("BEGIN")
    st.append(pd.DataFrame({"path": ["/a"], "source": ["x"]}))
    st.con.execute("ROLLBACK")
    counts = st.con.execute("SELECT (SELECT count(*) FROM requests), (SELECT count(*) FROM ingests)")
    assert counts.fetchall() == [(0, 0)]
    st.con.execute("BEGIN")
    st.append(pd.DataFrame({"path": ["/b"], "source": ["y"]}))
    st.con.execute("COMMIT")
    assert st.con.execute("SELECT path, source FROM requests").fetchall() == [("/b", "y")]
