"""The `extra` map as a store keeps it: a column per entry for a format whose rows mostly
have one, the map whole for one whose rows mostly have none (schema.EXTRA_SET). Either way
the `requests` view shows each row the map of its own format's entries, NULL where the line
has '-', and no map where every entry is '-'."""

from __future__ import annotations

import pytest
from conftest import READERS, reading_with

import logan
from logan import schema
from logan.answer import views
from logan.read import detect
from logan.store import stored_columns

# Two formats with different entries, one in each told apart by case only.
FORMAT_A = '%h %t "%r" %>s %b %{Cookie}i %{Note}n %{X-Trace}i'
FORMAT_B = '%h %t "%r" %>s %b %{X-Trace}i %{cookie}i %{ratio}n'
T = "[10/Oct/2026:13:55:36 +0000]"


def logged(prefix: str, values: dict[str, str]) -> tuple[str, dict | None]:
    """A line of `prefix` and the entries' words, and the map it should give: NULL where
    a word is '-', no map where every one is."""
    want = {k: None if v == "-" else v for k, v in values.items()}
    return f"{prefix} {' '.join(values.values())}", None if all(v is None for v in want.values()) else want


def lines_a() -> list[tuple[str, dict | None]]:
    out = []
    for i in range(40):
        big = f"s={i}" if i % 3 and i % 10 else "-"
        small = f"t{i}" if i % 4 and i % 10 else "-"
        trace = f"tr-{i}" if i % 5 else "-"
        prefix = f'10.0.0.{i} {T} "GET /a/{i} HTTP/1.1" 200 {i}'
        out.append(logged(prefix, {"in.Cookie": big, "note.Note": small, "in.X-Trace": trace}))
    return out


def lines_b() -> list[tuple[str, dict | None]]:
    out = []
    for i in range(30):
        trace = f"b-{i}" if i % 2 else "-"
        cookie = f"c{i}" if i % 3 else "-"
        ratio = f"{i}" if i % 6 else "-"
        prefix = f'10.1.0.{i} {T} "GET /b/{i} HTTP/1.1" 200 {i}'
        out.append(logged(prefix, {"in.X-Trace": trace, "in.cookie": cookie, "note.ratio": ratio}))
    return out


def maps_by_source(store: logan.Store) -> dict[str, list[dict | None]]:
    got = store.con.execute("SELECT source, extra FROM requests ORDER BY source, line_no").fetchall()
    out: dict[str, list[dict | None]] = {}
    for source, m in got:
        out.setdefault(source.rsplit("/", 1)[-1], []).append(m)
    return out


@pytest.mark.parametrize("reader", READERS)
def test_two_formats_in_one_store_each_row_has_its_own_entries(tmp_path, monkeypatch, reader):
    a, b = lines_a(), lines_b()
    (tmp_path / "a.log").write_text("".join(line + "\n" for line, _ in a))
    (tmp_path / "b.log").write_text("".join(line + "\n" for line, _ in b))
    db = tmp_path / "s.duckdb"
    with reading_with(monkeypatch, reader):
        logan.ingest([tmp_path / "a.log"], format=FORMAT_A, store=db, profile="none").store.close()
        logan.ingest([tmp_path / "b.log"], format=FORMAT_B, store=db, profile="none").store.close()
    with logan.open(db) as st:
        stored = stored_columns(st.con)
        assert "extra" not in stored and schema.EXTRA_SET in stored  # most rows have an entry
        # the two cookies are two columns, though DuckDB's names ignore case
        assert {schema.extra_column("in.Cookie"), schema.extra_column("in.cookie")} <= stored
        assert maps_by_source(st) == {"a.log": [w for _, w in a], "b.log": [w for _, w in b]}
        assert sorted(map(sorted, dict(st.con.execute("SELECT * FROM extra_sets").fetchall()).values())) == [
            ["in.Cookie", "in.X-Trace", "note.Note"],
            ["in.X-Trace", "in.cookie", "note.ratio"],
        ]


def test_the_map_whole_and_as_entries_read_the_same(tmp_path, monkeypatch):
    """The same log written both ways (the share EXTRAS_FILLED forced each way) gives the
    same rows; a store holding both (a store of version 8 kept maps whole) reads each row
    from where its map is."""
    a, b = lines_a(), lines_b()
    (tmp_path / "a.log").write_text("".join(line + "\n" for line, _ in a))
    (tmp_path / "b.log").write_text("".join(line + "\n" for line, _ in b))
    shown = {}
    for share in (0.0, 2.0):
        monkeypatch.setattr(detect, "EXTRAS_FILLED", share)
        db = tmp_path / f"s{share}.duckdb"
        logan.ingest([tmp_path / "a.log"], format=FORMAT_A, store=db, profile="none").store.close()
        with logan.open(db) as st:
            assert (schema.EXTRA_SET in stored_columns(st.con)) == (share == 0.0)
            assert ("extra" in stored_columns(st.con)) == (share == 2.0)
            shown[share] = st.sql("SELECT * EXCLUDE (source) FROM requests ORDER BY line_no")
    assert shown[0.0].astype(str).equals(shown[2.0].astype(str))
    # into the store that keeps the map whole, a log written an entry a column
    monkeypatch.setattr(detect, "EXTRAS_FILLED", 0.0)
    db = tmp_path / "s2.0.duckdb"
    logan.ingest([tmp_path / "b.log"], format=FORMAT_B, store=db, profile="none").store.close()
    with logan.open(db) as st:
        assert {"extra", schema.EXTRA_SET} <= stored_columns(st.con)
        assert maps_by_source(st) == {"a.log": [w for _, w in a], "b.log": [w for _, w in b]}
        # a lookup reads the entry of the row's own map
        got = st.sql("SELECT count(extra['in.X-Trace']) AS n FROM requests")["n"][0]
        # the views' lookups read the entries' columns (views.narrowed), as the maps say
        sql = (
            "SELECT line_no, extra['in.Cookie'], extra['in.X-Trace'], extra['note.ratio'], "
            "extra['in.cookie'], extra['nowhere'] FROM requests ORDER BY ALL"
        )
        fast = views.narrowed(st.con, sql)
        assert schema.EXTRA_LOOKUP in fast and "extra['" not in fast.split("SELECT * FROM (", 1)[1]
        assert st.con.execute(fast).fetchall() == st.con.execute(sql).fetchall()
    assert got == sum(1 for _, w in a + b if w and w["in.X-Trace"] is not None)


def test_a_log_whose_rows_mostly_have_no_entry_keeps_the_map_whole(tmp_path):
    # combined's %l is '-' on every line: no map, and no column per entry to write
    line = f'10.0.0.1 - - {T} "GET / HTTP/1.1" 200 5 "-" "curl/8"\n'
    (tmp_path / "c.log").write_text(line * 50)
    summary = logan.ingest(
        [tmp_path / "c.log"], format="combined", store=tmp_path / "c.duckdb", profile="none"
    )
    with summary.store as st:
        stored = stored_columns(st.con)
        assert schema.EXTRA_SET not in stored and not any(c.startswith(schema.EXTRA_PREFIX) for c in stored)
        assert st.sql("SELECT count(*) AS n FROM requests WHERE extra IS NULL")["n"][0] == 50


def test_entries_told_apart_by_case_only_are_two(ingest_text):
    _, req, rej = ingest_text("h a b\n", "%h %{Cookie}i %{cookie}i")
    assert rej.empty and dict(req["extra"][0]) == {"in.Cookie": "a", "in.cookie#2": "b"}


def test_entry_columns_never_share_a_name():
    keys = ["in.Cookie", "in.cookie", "in.COOKIE", "a#b", "x y", 'q"uote', "ü"]
    names = [schema.extra_column(k).lower() for k in keys]
    assert len(set(names)) == len(keys)
    assert schema.extra_column("note.ratio") == "extra:note.ratio"  # readable when it can be
    assert schema.quoted('extra:q"uote') == '"extra:q""uote"'


def test_entry_names_with_quotes_are_names_not_sql(ingest_text):
    # a header's name is the user's format, not the log's, but a quote in it is still text
    _, req, rej = ingest_text("h a b c\nh x - -\n", "%h %{it's}i %{X\"Y}i %{Ünï}i")
    assert rej.empty
    assert [dict(m) for m in req["extra"]] == [
        {"in.it's": "a", 'in.X"Y': "b", "in.Ünï": "c"},
        {"in.it's": "x", 'in.X"Y': None, "in.Ünï": None},
    ]
