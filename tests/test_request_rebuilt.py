"""A request line that is its method, path, query and protocol joined is not stored: the
`requests` view joins them again (schema.REQUEST_PARTS). Every other line is stored whole.
Either way the view shows the line as the log has it."""

from __future__ import annotations

from pathlib import Path

import pytest

import logan
from logan.read import ingest, native
from logan.read.classify import Rule, Rules, classification_exprs, reclassify
from logan.store import stored_columns

REQUESTS = [
    "GET /a HTTP/1.1",
    "GET /a?b=1&c=2 HTTP/1.1",
    "GET /a? HTTP/1.1",  # an empty query
    "GET /a?x?y HTTP/1.0",  # a second '?' belongs to the query
    "OPTIONS * HTTP/1.1",
    "CONNECT example.com:443 HTTP/1.1",
    "PROPFIND /x%20y HTTP/2.0",
    "GET /caf\u00e9?q=\u00fc HTTP/1.1",
    'GET /a\\"b HTTP/1.1',  # an escaped quote: the line holds it decoded
    "GET http://example.com/a?b HTTP/1.1",  # absolute: the path lost the host
    "GET  /a HTTP/1.1",  # two spaces
    "GET /a HTTP/1.1 more",
    "GET /a",  # HTTP/0.9
    "get /a http/1.1",  # no HTTP/ protocol: no parts
    "",
    "-",
    "\\x16\\x03\\x01",
]


def decoded(request: str) -> str | None:
    """The request as logan's `requests` shows it: '-' is no value, \\" a quote."""
    return None if request == "-" else request.replace('\\"', '"')


def parts_joined(request: str | None) -> bool:
    """Whether the line is method, target and an HTTP/ protocol, the target in origin form
    (not absolute): then method, path, query and protocol joined are the line."""
    if request is None:
        return False
    parts = request.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        return False
    return not ("://" in parts[1] and not parts[1].startswith("/"))


@pytest.mark.parametrize("split", ["C", "SQL"])
@pytest.mark.parametrize("where", ["file", "memory"])
def test_the_view_shows_each_request_line_as_logged_and_only_odd_ones_are_stored(
    tmp_path, monkeypatch, split, where
):
    if split == "SQL":
        monkeypatch.setattr(native, "_split", None)
    elif not native.available():
        pytest.skip("the C split was not built")
    log = tmp_path / "access.log"
    lines = [
        f'10.0.0.{i % 9} - - [05/Nov/2013:19:00:{i % 60:02d} +0000] "{r}" 200 {i} {1000 + i}\n'
        for i, r in enumerate(REQUESTS * 40)
    ]
    log.write_text("".join(lines))
    store = str(tmp_path / "s.duckdb") if where == "file" else None
    s = ingest.ingest([str(log)], store=store, format='%h %l %u %t "%r" %>s %b %D', dialect="apache")
    assert s.rows == len(lines) and not s.rejects
    con = s.store.con
    got = con.execute("SELECT line_no, request FROM requests ORDER BY line_no").fetchall()
    assert got == [(i + 1, decoded(REQUESTS[i % len(REQUESTS)])) for i in range(len(lines))]
    stored = con.execute(
        "SELECT line_no, request, request_rebuilt FROM requests_data ORDER BY line_no"
    ).fetchall()
    for line_no, request, rebuilt in stored:
        want = decoded(REQUESTS[(line_no - 1) % len(REQUESTS)])
        joined = parts_joined(want)
        assert rebuilt is joined, (want, rebuilt)
        assert request == (None if joined else want), want
    assert sum(r for _, _, r in stored) == 9 * 40  # the nine above the absolute one


SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"


CLASSES = "environment, indirector, resource, route, requester, requester_group"


@pytest.mark.parametrize(
    "log, profile", [("puppet_access.log", "puppet"), ("haproxy.log", "generic")], ids=["puppet", "generic"]
)
def test_a_resource_or_requester_that_copies_its_path_or_client_is_left_to_the_view(tmp_path, log, profile):
    """The generic profile's resource is the path and its requester the client: such a row
    stores no resource or requester but a true flag (schema.COPIES), and the view shows the
    path or the client. It names no environment and no group: those columns are not stored
    at all (rows.stored_columns). The Puppet profile's resources are not the path, and a
    Puppet node's requester is its name: those are stored. The view shows what
    reclassifying the rows, which stores every value whole, shows."""
    db = str(tmp_path / "s.duckdb")
    fmt = "combined_D" if profile == "puppet" else "auto"
    ingest.ingest([str(SAMPLES / log)], store=db, format=fmt, profile=profile).store.close()
    st = logan.open(db)
    view = f"SELECT line_no, {CLASSES} FROM requests ORDER BY line_no"
    shown = st.con.execute(view).fetchall()
    stored = stored_columns(st.con)
    if profile == "generic":
        assert not stored & {"environment", "resource", "requester", "requester_group"}
        ((n, paths, clients),) = st.con.execute(
            "SELECT count(*), count(*) FILTER (WHERE resource_is_path),"
            " count(*) FILTER (WHERE requester_is_client) FROM requests_data"
        ).fetchall()
        assert paths == clients == n > 0
    else:
        assert {"environment", "resource", "requester"} <= stored and "requester_group" not in stored
        ((n, resources, paths, requesters, clients, alike),) = st.con.execute(
            "SELECT count(*), count(resource), count(*) FILTER (WHERE resource_is_path), count(requester),"
            " count(*) FILTER (WHERE requester_is_client),"
            " count(*) FILTER (WHERE resource IS NOT DISTINCT FROM path OR requester = client)"
            " FROM requests_data"
        ).fetchall()
        assert resources + paths == n and requesters + clients == n and alike == 0
        assert resources > 0.9 * n and 0 < requesters < 0.5 * n  # node names; requests of no node
    reclassify(st.con, profile)  # every row again, stored whole
    whole = "SELECT count(*) FROM requests_data WHERE resource_is_path OR requester_is_client"
    assert st.con.execute(whole).fetchall() == [(0,)]
    assert st.con.execute(view).fetchall() == shown
    st.close()


def test_a_store_takes_a_classification_column_when_a_later_ingest_fills_it(tmp_path):
    """A generic ingest stores no environment, resource or requester; a Puppet ingest into
    the same store then adds them, and every row, the first ingest's too, shows what
    classifying it row by row (classify.classification_exprs, no store) gives."""
    db = str(tmp_path / "s.duckdb")
    ingest.ingest([str(SAMPLES / "haproxy.log")], store=db, format="auto", profile="generic").store.close()
    st = logan.open(db)
    assert "resource" not in stored_columns(st.con)
    st.close()
    ingest.ingest(
        [str(SAMPLES / "puppet_access.log")], store=db, format="combined_D", profile="puppet"
    ).store.close()
    st = logan.open(db)
    assert {"environment", "resource", "requester"} <= stored_columns(st.con)
    for source, profile in (("haproxy.log", "generic"), ("puppet_access.log", "puppet")):
        exprs = classification_exprs(profile)
        by_row = ", ".join(f"{exprs[c]} AS {c}" for c in CLASSES.split(", ") if c != "route")
        rows = "FROM requests WHERE source LIKE '%' || ? ORDER BY line_no"
        got = st.con.execute(f"SELECT {CLASSES.replace('route, ', '')} {rows}", [source]).fetchall()
        want = st.con.execute(f"SELECT {by_row} {rows}", [source]).fetchall()
        assert len(got) > 100 and got == want, source
        assert any(r[2] is not None for r in got)  # resources: the paths, Puppet's keys
    st.close()


def test_reclassifying_reads_the_request_line_the_view_shows(tmp_path):
    """A rule on the request line matches a line stored as its parts (request NULL,
    request_rebuilt true) when the store is classified again, as it did at ingest."""
    log = tmp_path / "a.log"
    lines = [
        f'10.0.0.{i} - - [10/Oct/2026:13:55:{i:02d} +0000] "GET /a/{i} HTTP/1.1" 200 5\n' for i in range(6)
    ]
    log.write_text("".join(lines))
    rules = Rules((Rule("^GET /a/[024]", "request", None, {"indirector": "even"}),))
    db = str(tmp_path / "s.duckdb")
    ingest.ingest([str(log)], store=db, format="common", profile="generic", rules=rules).store.close()
    st = logan.open(db)
    assert st.con.execute("SELECT count(*) FROM requests_data WHERE request_rebuilt").fetchall() == [(6,)]
    view = "SELECT line_no, indirector FROM requests ORDER BY line_no"
    want = [(i + 1, "even" if i % 2 == 0 and i < 5 else "a") for i in range(6)]
    assert st.con.execute(view).fetchall() == want
    reclassify(st.con, "generic", rules)
    assert st.con.execute(view).fetchall() == want
    st.close()


def test_reclassifying_in_pieces_gives_what_one_piece_gives(tmp_path, monkeypatch):
    """reclassify classifies a store RECLASSIFY_ROWS rows at a time (so its memory does not
    grow with the store): in pieces of 777 rows (26 for the 20,000 of the sample), a store
    read with the generic profile and classified again as Puppet's holds what one piece
    makes, row by row, and what an ingest with the Puppet profile holds."""
    from logan.read import classify

    log = str(SAMPLES / "puppet_access.log")
    view = f"SELECT line_no, {CLASSES} FROM requests ORDER BY line_no"
    stores = {}
    for name, profile in (("pieces", "generic"), ("whole", "generic"), ("ingest", "puppet")):
        db = str(tmp_path / f"{name}.duckdb")
        ingest.ingest([log], store=db, format="combined_D", profile=profile).store.close()
        stores[name] = logan.open(db)
    before = stores["pieces"].con.execute(view).fetchall()
    reclassify(stores["whole"].con, "puppet")
    monkeypatch.setattr(classify, "RECLASSIFY_ROWS", 777)
    reclassify(stores["pieces"].con, "puppet")
    got = {name: st.con.execute(view).fetchall() for name, st in stores.items()}
    assert len(got["pieces"]) == 20_000 and got["pieces"] != before
    assert got["pieces"] == got["whole"] == got["ingest"]
    for st in stores.values():
        st.close()
