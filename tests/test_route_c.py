"""The route template and its indirector in C (logan/read/_route.c) against their SQL
(route_template_sql, _generic_exprs), the reference: the same template and indirector for
every path of the corpus and for paths made to sit on each rule's edges, and the C ones
are what an ingest stores."""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from logan.read.classify import (
    INDIRECTOR_FUNCTION,
    ROUTE_FUNCTION,
    STATIC_EXTENSIONS,
    _generic_exprs,
    register_route_template,
    route_template_sql,
)

pytestmark = pytest.mark.skipif(
    not register_route_template(duckdb.connect()), reason="logan/read/_route.c is not built"
)


def differences(paths: list[str | None]) -> tuple[list[tuple], Counter]:
    """(the paths whose two templates or two indirectors differ, with both of each; how
    often each placeholder came)."""
    con = duckdb.connect()
    register_route_template(con)
    con.register("p", pa.table({"i": range(len(paths)), "path": pa.array(paths, pa.string())}))
    both = f"{route_template_sql('path')} AS by_sql, {ROUTE_FUNCTION}(path) AS by_c"
    indirectors = f"{_generic_exprs('by_sql')['indirector']}, {INDIRECTOR_FUNCTION}(by_c)"
    rows = con.execute(f"SELECT path, by_sql, by_c, {indirectors} FROM (SELECT *, {both} FROM p ORDER BY i)"
                       ).fetchall()  # fmt: skip
    con.close()
    made = Counter(m for _, by_sql, *_ in rows if by_sql for m in re.findall(r"\{(\w+)\}", by_sql))
    return [r for r in rows if r[1] != r[2] or r[3] != r[4]], made


# Segments on the edges of each rule, and pieces to join them with.
EDGES = [
    "", "a", "abc", "0", "7", "-1", "+42", "1-2", "12345678", "deadbeef", "deadbeef1", "DEADBEEF12",
    "0123456789abcdefABCDEF", "0x1f", "1.5", "v1.2.3", ".", "..", ".png", "a.png", "A.PNG", "a.Png",
    "a.b.gz", "x.tar.gz", "a.jpeg", "a.jpg", "a.jpe", "a.tif", "a.tiff", "a.tifff", "a.woff2", "a.htm",
    "a.ſvg", "a.cſſ", "a.\u212aml", "a.php", "a.json", "a\n.png", "a.p\nng", "ü.png", "a.pngx",
    "2024-01-31", "2024-01-3", "2024-01-31T12", "2024-01-31T12:30", "2024-01-31T1230", "2024-01-31 12:30:15",
    "2024-01-31_12:30:15.123", "2024-01-31T12:30:15Z", "2024-01-31T12:30:15+01:00", "2024-01-31T12:30+0100",
    "2024-01-31T12:30:15.5-0130", "2024-01-31T12:3", "2024-01-31T12:30:15:00", "2024-01-31T12:30:15.Z",
    "2024-01-31T12Z", "2024-01-31T12:30:1", "9999-99-99", "2024-01-31X12", "2024-01-31T12:30+01:00x",
    "2024-01-31T12+0100ab", "2024-01-31T12:30Zx", "2024-01-31T12.5x", "2024-01-31T12+01:0", "2024-01-31T12+1",
    "123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-42661417400G",
    "123e4567-e89b-12d3-a456-4266141740000", "123e4567e89b12d3a456426614174000abcd",
    "aB3dE5gH7jK9mN1pQ3sT", "ab3de5gh7jk9mn1pq3st", "ab3de5gh7jk9mn1pq3s", "AB3DE5GH7JK9MN1PQ3ST",
    "aB3_dE5=gH7~jK9.mN1-pQ", "abcdefghijklmnopqrstu", "aB_dE=gH~jK.mN-pQrStUv1", "aB3dE5gH7jK9mN1pQ3s!",
    "my-first-post", "my-post", "my-first-post.v2", "My-First-Post", "2024-01-post", "a-b-c", "1-2-3",
    "a--b-c", "-a-b", "a-b-", "a.b-c-d", "a-b.c-d", "x-y-z-w", "ſ-a-b", "é-a-b", "a b", "*",
]  # fmt: skip


def test_the_rules_edges_give_the_same_template_both_ways():
    paths = [f"/{e}" for e in EDGES] + [f"/x/{a}/{b}" for a in EDGES for b in EDGES[::7]]
    paths += ["", "*", "**", "x/y", "http://h/a", "/", "//", "/a/", "/a//b", None]
    diff, made = differences(paths)
    assert diff == []
    # every rule took some of them, so the comparison covers each
    assert all(made[m] >= 10 for m in ("uuid", "date", "id", "hash", "file", "token", "slug"))
    assert made["other"] == 4


# Segments the indirector reaches past or stops at.
INDIRECTOR_EDGES = [
    "", "api", "API", "apis", "rest", "v1", "v12", "v1.2", "v1.", "v1.2.3", "v.1", "v", "V1", "v1a",
    "v\u0661", "x", "a.png", "{file}.png", "{file}.", "{file}", "x{file}.png", "{file}.a\nb", "\n",
]  # fmt: skip


def test_the_indirectors_edges_are_alike_both_ways():
    rng = random.Random(11)
    paths = ["/" + "/".join(rng.choices(INDIRECTOR_EDGES, k=rng.randint(1, 5))) for _ in range(4000)]
    paths += ["/", "//", "///", "/api/", "/api/v1/", "/v1.2/rest/x/", "/v1./x", "/a/{file}.png", "*", "x", ""]
    diff, _ = differences(paths)
    assert diff == []
    con = duckdb.connect()
    register_route_template(con)
    got = dict(con.execute(f"SELECT p, {INDIRECTOR_FUNCTION}(p) FROM unnest(?) AS t(p)", [paths]).fetchall())
    # by hand: past the API prefixes to the next segment, a static file by its extension
    assert [got[p] for p in ("/api/v1/", "/v1.2/rest/x/", "/v1./x", "/a/{file}.png", "/", "//", "*", "")] == [
        "api/v1/", "v1.2/rest/x", "v1.", "*.png", "/", "/", "*", ""]  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(hs.lists(hs.text(alphabet="/-._:+ TZaAfFzZ019ſ\u212aé~=", max_size=40), min_size=1, max_size=50))
def test_random_paths_give_the_same_template_both_ways(texts):
    paths = [t if i % 5 == 0 else "/" + t for i, t in enumerate(texts)]
    assert differences(paths)[0] == []


def test_random_segments_of_every_shape_give_the_same_template_both_ways():
    rng = random.Random(7)
    pieces = ["-", ".", "_", ":", "T", "Z", "+", "~", "=", " "]
    pieces += [str(rng.randint(0, 99999)) for _ in range(20)]
    pieces += [f"{rng.getrandbits(64):x}", "ab", "AB", "x", *STATIC_EXTENSIONS[::3]]
    pieces += ["2024-01-31", "T12", ":30", "30", ".5", "+01:00", "-0130"]
    # a fifth start as a date does, so the date's tail rules see many tails
    starts = ["2024-01-31", "2024-01-31T12"] + [""] * 8
    segments = [rng.choice(starts) + "".join(rng.choice(pieces) for _ in range(rng.randint(1, 8)))
                for _ in range(5000)]  # fmt: skip
    paths = ["/" + "/".join(rng.sample(segments, rng.randint(1, 4))) for _ in range(5000)]
    diff, made = differences(paths)
    assert diff == []
    assert all(made[m] >= 10 for m in ("date", "id", "hash", "file", "token", "slug"))


# Segments on the edges of the fan-out rule: two hex characters, digits, years, and what
# is one byte off each (upper case, one or three characters, a letter past f).
FAN_OUT_EDGES = [
    "a2", "09", "ff", "0f", "AB", "a", "abc", "g1", "2015", "201", "20155", "12", "", "x", "{id}",
]  # fmt: skip


def test_fan_out_directories_give_the_same_template_both_ways():
    rng = random.Random(5)
    paths = ["/" + "/".join(rng.choices(FAN_OUT_EDGES, k=rng.randint(1, 6))) for _ in range(6000)]
    diff, made = differences(paths)
    assert diff == []
    assert made["hash"] > 1000 and made["id"] > 1000


def corpus_paths(corpus: Path) -> list[str]:
    """The request paths of every log in the corpus (the target of a quoted request line)."""
    out = []
    for log in sorted(corpus.glob("*/*")):
        if log.name == "PROVENANCE.txt" or not log.is_file() or log.suffix == ".gz":
            continue
        text = log.read_text(encoding="utf-8", errors="replace")
        out += [m.split("?", 1)[0] for m in re.findall(r'"[A-Z]{3,10} ([^" ]+)', text)]
    return out


def test_every_corpus_path_gives_the_same_template_both_ways(corpus):
    paths = corpus_paths(corpus)
    assert len(paths) > 50_000
    diff, made = differences(paths)
    assert diff == []
    assert made["file"] > 1000 and made["id"] > 1000


def test_an_ingest_stores_the_c_template(tmp_path, monkeypatch):
    # the ingest classifies with the C functions (as DuckDB functions, or in the reader thread
    # for a batch classified row by row); the stored route is what the SQL gives
    import logan
    from logan.read import classify
    from logan.read import ingest as ingest_module
    from logan.read.ingest import ingest

    calls = Counter()
    by_c = classify._each
    monkeypatch.setattr(classify, "_each", lambda made, texts: calls.update({made.__name__: len(texts)})
                        or by_c(made, texts))  # fmt: skip
    in_reader = classify.templates_of_paths
    monkeypatch.setattr(ingest_module, "templates_of_paths", lambda offsets, data, n: calls.update(
        {"templates": n, "indirectors": n}) or in_reader(offsets, data, n))  # fmt: skip

    paths = ["/img/a1.PNG", "/api/v1/users/42", "/blog/2024-01-31/my-first-post", "/t/0123abcd9/x.js", "*"]
    log = tmp_path / "a.log"
    log.write_text(
        "".join(f'10.0.0.1 - - [05/Nov/2013:19:00:0{i} +0000] "GET {p} HTTP/1.1" 200 5 10 "-" "a"\n'
                for i, p in enumerate(paths))
    )  # fmt: skip
    st = logan.open(tmp_path / "s.duckdb")
    try:
        ingest([str(log)], store=st, format="combined_D", profile="generic")
        got = dict(st.con.execute("SELECT path, (route, indirector) FROM requests_data").fetchall())
    finally:
        st.close()
    con = duckdb.connect()
    both = f"{{'route': t, 'indirector': {_generic_exprs('t')['indirector']}}}"
    sql = f"SELECT {both} FROM (SELECT {route_template_sql('$1')} AS t)"
    want = {p: tuple(con.execute(sql, [p]).fetchone()[0].values()) for p in paths}
    assert got == want
    assert calls == {"templates": len(paths), "indirectors": len(paths)}
