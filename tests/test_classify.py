"""Classification: Puppet URLs, generic route templates, requesters, user rules."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from logan.read import classify
from logan.read.classify import (
    CLASSIFIED,
    ROUTE_PARAM_MIN_VALUES,
    Group,
    Rule,
    Rules,
    classification_exprs,
    classified_sql,
    collapse_routes,
    detect_profile,
    load_rules,
    reclassify,
    sql_literal,
)
from logan.store import append_requests, open_store

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"


def classified(rows: list[dict], profile: str, rules=None, trusted=()) -> pd.DataFrame:
    """Classify the rows both ways the ingest may (per row, and once per distinct key then
    joined back), check they agree, and return the answer."""
    con = open_store(None).con
    append_requests(con, pd.DataFrame(rows).assign(line_no=range(len(rows))))
    exprs = classification_exprs(profile, rules, trusted)
    cols = ", ".join(f"{sql} AS {name}" for name, sql in exprs.items())
    per_row = con.execute(f"SELECT path, {cols} FROM requests ORDER BY line_no").df()
    rel = f"SELECT * EXCLUDE ({', '.join(CLASSIFIED)}) FROM requests"
    joined_sql = classified_sql(rel, profile, rules, trusted)
    joined = con.execute(f"SELECT path, {', '.join(CLASSIFIED)} FROM ({joined_sql}) ORDER BY line_no").df()
    pd.testing.assert_frame_equal(per_row, joined)
    return per_row


def one(profile: str, rules=None, trusted=(), **row) -> dict:
    row.setdefault("method", "GET")
    row.setdefault("client", "192.0.2.1")
    return classified([row], profile, rules, trusted).iloc[0].to_dict()


# --- Puppet ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "query", "env", "ind", "res", "route", "requester"),
    [
        ("/production/file_metadata/modules/ssh/sshd_config", None, "production",
         "file_metadata", "modules/ssh/sshd_config", "/{environment}/file_metadata/{key}",
         "192.0.2.1"),
        ("/dev/catalog/node1.example.com", None, "dev", "catalog", "node1.example.com",
         "/{environment}/catalog/{node}", "node1.example.com"),
        ("/production/file_metadatas/plugins", "checksum_type=md5&recurse=true", "production",
         "file_metadatas", "plugins", "/{environment}/file_metadatas/{key}", "192.0.2.1"),
        ("/puppet/v3/catalog/web01", "environment=staging&fail_on_404=true", "staging",
         "catalog", "web01", "/puppet/v3/catalog/{node}", "web01"),
        ("/puppet/v3/facts/db02", "environment=production", "production", "facts", "db02",
         "/puppet/v3/facts/{node}", "db02"),
        ("/puppet/v3/file_metadatas/pluginfacts", "environment=production", "production",
         "file_metadatas", "pluginfacts", "/puppet/v3/file_metadatas/{key}", "192.0.2.1"),
        ("/puppet/v3/environments", None, None, "environments", None,
         "/puppet/v3/environments", "192.0.2.1"),
        ("/puppet-ca/v1/certificate/ca", None, None, "certificate", "ca",
         "/puppet-ca/v1/certificate/{key}", "192.0.2.1"),
        # not Puppet-shaped: the generic profile answers
        ("/status/v1/services", None, None, "status", "/status/v1/services",
         "/status/v1/services", "192.0.2.1"),
        ("/", None, None, "/", "/", "/", "192.0.2.1"),
    ],
)  # fmt: skip
def test_puppet_urls(path, query, env, ind, res, route, requester) -> None:
    got = one("puppet", path=path, query=query)
    assert (got["environment"], got["indirector"], got["resource"]) == (env, ind, res)
    assert (got["route"], got["requester"]) == (route, requester)


def test_puppet_node_name_is_requester_only_for_node_indirections() -> None:
    rows = [
        {"method": "PUT", "path": "/production/report/agent7", "client": "10.0.0.7"},
        {"method": "GET", "path": "/production/node/agent8", "client": "10.0.0.8"},
        {"method": "GET", "path": "/production/file_content/agent9", "client": "10.0.0.9"},
    ]
    got = classified(rows, "puppet")
    assert list(got["requester"]) == ["agent7", "agent8", "10.0.0.9"]


def test_detect_profile() -> None:
    puppet = ["/production/file_metadata/modules/a", "/puppet/v3/catalog/x", "/favicon.ico"]
    assert detect_profile(puppet) == "puppet"
    assert detect_profile(["/blog/tags/puppet", "/production/x/y", "/"]) == "generic"
    assert detect_profile([]) == "generic"


# --- Generic routes -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "route", "indirector"),
    [
        ("/api/users/12345", "/api/users/{id}", "api/users"),
        ("/api/v2/orders/550e8400-e29b-41d4-a716-446655440000/items",
         "/api/v2/orders/{uuid}/items", "api/v2/orders"),
        ("/commit/3f786850e387550fdab836ed7e6dc881de23001b", "/commit/{hash}", "commit"),
        ("/reports/2024-03-01/summary", "/reports/{date}/summary", "reports"),
        ("/reset/aB3dE5fG7hI9jK1lM3nO5pQ", "/reset/{token}", "reset"),
        ("/img/a/logo.PNG", "/img/a/{file}.png", "*.png"),
        ("/favicon.ico", "/{file}.ico", "*.ico"),
        ("/articles/dynamic-dns-with-dhcp/", "/articles/{slug}/", "articles"),
        ("/wp-login.php", "/wp-login.php", "wp-login.php"),
        ("/xmlrpc.php", "/xmlrpc.php", "xmlrpc.php"),
        ("/users/deadbeef", "/users/deadbeef", "users"),  # a word, not a hash
        # at the lengths each rule needs (its regex runs only from there)
        ("/c/1a2b3c4d", "/c/{hash}", "c"),
        ("/c/1a2b3c4", "/c/1a2b3c4", "c"),
        ("/t/aB3dE5fG7hI9jK1lM3nO", "/t/{token}", "t"),
        ("/t/aB3dE5fG7hI9jK1lM3n", "/t/aB3dE5fG7hI9jK1lM3n", "t"),
        ("/s/a-b-c", "/s/{slug}", "s"),
        ("/s/a-b", "/s/a-b", "s"),
        ("/d/2024-03-0", "/d/2024-03-0", "d"),
        ("/u/550e8400-e29b-41d4-a716-44665544000", "/u/{slug}", "u"),  # one short: words and dashes
        # fan-out directories of hashed files, whatever their digits; a date's are not
        ("/t/x100/a2/a8/6806ed71570139f1656554d94bbb.jpeg", "/t/x100/{hash}/{hash}/{file}.jpeg", "*.jpeg"),
        ("/t/x100/09/45/6806ed71570139f1656554d94bbb.jpeg", "/t/x100/{hash}/{hash}/{file}.jpeg", "*.jpeg"),
        ("/objects/ab/cd/ef/0123", "/objects/{hash}/{hash}/{hash}/{id}", "objects"),
        ("/blog/2015/09/12/title", "/blog/{id}/{id}/{id}/title", "blog"),
        ("/blog/2015/09/ab/title", "/blog/{id}/{id}/{hash}/title", "blog"),
        ("/lang/de/about", "/lang/de/about", "lang"),  # alone: a word
        ("/x/AB/CD", "/x/AB/CD", "x"),  # upper case: words
        ("/", "/", "/"),
        ("*", "*", "*"),
        ("example.com:443", "{other}", "{other}"),
    ],
)  # fmt: skip
def test_generic_routes(path: str, route: str, indirector: str) -> None:
    got = one("generic", path=path, query="id=7&token=abc")
    assert (got["route"], got["indirector"], got["resource"]) == (route, indirector, path)
    assert got["environment"] is None


def test_route_is_per_vhost_and_keeps_query_apart() -> None:
    rows = [
        {"path": "/u/1", "query": "a=1", "vhost": "Shop.example.com"},
        {"path": "/u/2", "query": "b=2", "vhost": "blog.example.com"},
        {"path": "/u/3", "query": None, "vhost": None},
    ]
    got = classified(rows, "generic")
    assert list(got["route"]) == ["shop.example.com/u/{id}", "blog.example.com/u/{id}", "/u/{id}"]


def test_null_path_stays_unclassified() -> None:
    got = one("generic", path=None)
    assert got["route"] is None and got["indirector"] is None


def test_hostile_path_is_data() -> None:
    evil = "/x'); DROP TABLE requests; --/1"
    got = one("puppet", path=evil)
    assert got["resource"] == evil and got["route"] == "/x'); DROP TABLE requests; --/{id}"


# --- Learned parameters -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("rewrite_at", "whole_under"),
    [(0, 100_000), (100_000, 100_000), (100_000, 0)],
    ids=["written-anew", "updated", "new-routes-folded-alone"],
)
def test_collapse_routes_finds_parameters_by_cardinality(
    rewrite_at: int, whole_under: int, monkeypatch
) -> None:
    monkeypatch.setattr(classify, "REWRITE_ROUTES_AT", rewrite_at)
    monkeypatch.setattr(classify, "FOLD_WHOLE_UNDER", whole_under)
    con = open_store(None).con
    tags = [f"/blog/tags/word{chr(97 + i % 26)}{chr(97 + i // 26)}" for i in range(25)]
    few = [f"/blog/{name}" for name in ("archive", "about", "feed")]
    scripts = [f"/cgi/s{i}.php" for i in range(25)]
    top = [f"/top{i}" for i in range(25)]
    api = [f"/api/v1/things{chr(97 + i)}" for i in range(25)]
    paths = tags + few + scripts + top + api
    append_requests(con, pd.DataFrame({"path": paths, "route": paths}))
    changed = collapse_routes(con, min_values=20)
    routes = dict(con.execute("SELECT path, route FROM requests").fetchall())
    assert changed == 25
    assert {routes[p] for p in tags} == {"/blog/tags/{name}"}
    assert [routes[p] for p in few + scripts + top + api] == few + scripts + top + api
    assert collapse_routes(con, min_values=20) == 0  # a second run finds nothing new
    # a later ingest brings one more tag: the parameter is known, so it joins at once
    append_requests(con, pd.DataFrame({"path": ["/blog/tags/new"], "route": ["/blog/tags/new"]}))
    assert collapse_routes(con, min_values=20) == 1
    assert con.execute("SELECT count(DISTINCT route) FROM requests WHERE path LIKE '/blog/tags/%'"
                       ).fetchone() == (1,)  # fmt: skip
    # each route once in `routes` (the view joins it), every stored route there
    held = con.execute("SELECT count(*), count(DISTINCT route) FROM routes").fetchone()
    assert held == (len(paths) + 1, len(paths) + 1)


@pytest.mark.parametrize(("words", "folded"), [(6, False), (10, True)])
def test_a_word_with_and_without_a_trailing_slash_is_one_value(words: int, folded: bool) -> None:
    # `/p/w1` and `/p/w1/` put the same word between /p and an empty rest: six words are
    # six values (not a parameter at ROUTE_PARAM_MIN_VALUES), ten are ten
    con = open_store(None).con
    paths = [f"/p/w{n}{slash}" for n in range(words) for slash in ("", "/")]
    append_requests(con, pd.DataFrame({"path": paths, "route": paths}))
    collapse_routes(con)
    want = {p: ("/p/{name}" + p[-1] * p.endswith("/") if folded else p) for p in paths}
    assert _templates(con) == want


def _hashed(con, sizes: range, pairs: range) -> None:  # noqa: ANN001
    """Routes of a thumbnail server: /t/<size>/<hex pair>/{file}.jpeg, with a script beside."""
    paths = [f"/t/x{n}/{p:02x}/{{file}}.jpeg" for n in sizes for p in pairs] + [f"/t/s{n}.php" for n in sizes]
    append_requests(con, pd.DataFrame({"path": paths, "route": paths}))


def test_where_words_are_a_parameter_the_placeholders_there_are_too() -> None:
    # /p/ has ten words before /x: a parameter, and the segments the per-row rules made
    # {slug}, {id}, {hash}... between the same /p and /x are values of it; a static file,
    # another suffix, and a place with too few words keep theirs
    con = open_store(None).con
    words = [f"/p/w{chr(97 + n)}/x" for n in range(ROUTE_PARAM_MIN_VALUES)]
    placed = [f"/p/{{{m}}}/x" for m in ("id", "uuid", "date", "hash", "token", "slug")]
    kept = ["/p/{file}.png", "/p/{id}/y", "/q/{slug}/x", "/q/a/x", "/q/b/x"]
    paths = words + placed + kept
    append_requests(con, pd.DataFrame({"path": paths, "route": paths}))
    collapse_routes(con)
    assert _templates(con) == {p: "/p/{name}/x" for p in words + placed} | {p: p for p in kept}


def _templates(con) -> dict:  # noqa: ANN001
    return dict(con.execute("SELECT route, template FROM routes").fetchall())


def test_new_routes_folded_alone_get_what_a_whole_fold_gives(monkeypatch) -> None:
    # Past FOLD_WHOLE_UNDER routes, a few new ones are folded beside the parameters the
    # last whole fold found, not with every route again: where those parameters decide,
    # each new route gets the template a whole fold of every route gives it.
    monkeypatch.setattr(classify, "FOLD_WHOLE_UNDER", 0)
    alone = open_store(None).con
    _hashed(alone, range(0, 30), range(0, 40))
    assert collapse_routes(alone) > 0  # the first fold is whole: nothing is known yet
    assert {t for t in _templates(alone).values()} == {"/t/{name}/{name}/{file}.jpeg"} | {
        f"/t/s{n}.php" for n in range(30)
    }
    _hashed(alone, range(30, 32), range(0, 40))  # 82 new routes beside 1,230: alone
    assert collapse_routes(alone) == 80  # the two scripts keep their names
    whole = open_store(None).con
    _hashed(whole, range(0, 32), range(0, 40))
    collapse_routes(whole)
    assert _templates(alone) == _templates(whole)
    folded_alone = "SELECT value FROM logan_meta WHERE key = 'routes_folded_alone'"
    assert alone.execute(folded_alone).fetchone() == ("82",)


def test_a_first_fold_without_a_path_route_folds_nothing_and_leaves_nothing() -> None:
    # `*` (OPTIONS *) and text that is no path are not folded: a store's first fold reads
    # its new routes through a view, which must find none and be gone afterwards
    con = open_store(None).con
    odd = ["*", "{other}", "x"]
    append_requests(con, pd.DataFrame({"path": odd, "route": odd}))
    assert collapse_routes(con) == 0
    assert con.execute("SELECT count(*) FROM routes").fetchone() == (0,)
    assert sorted(r for (r,) in con.execute("SELECT route FROM requests").fetchall()) == sorted(odd)
    left = "SELECT table_name FROM duckdb_tables() UNION ALL SELECT view_name FROM duckdb_views()"
    assert not [n for (n,) in con.execute(left).fetchall() if n.startswith("logan_route")]


def test_routes_written_anew_take_the_place_of_the_table_in_a_store_file(tmp_path: Path, monkeypatch) -> None:
    # Past REWRITE_ROUTES_AT new routes the fold writes a table of the store and puts it
    # in the place of `routes`: after a reopen, the same templates as the copy a fold
    # under the mark makes, in a table of two columns, and nothing of the fold left.
    copied = open_store(None).con
    _hashed(copied, range(0, 30), range(0, 40))
    changed = collapse_routes(copied)
    monkeypatch.setattr(classify, "REWRITE_ROUTES_AT", 1_000)  # 1,230 new routes: past it
    with open_store(tmp_path / "s.duckdb") as store:
        _hashed(store.con, range(0, 30), range(0, 40))
        # every /t/x{n}/{pair} gets a template, the thirty scripts keep their names
        assert collapse_routes(store.con) == changed == 1_200
    with open_store(tmp_path / "s.duckdb", read_only=True) as store:
        assert _templates(store.con) == _templates(copied)
        columns = "SELECT column_name FROM duckdb_columns() WHERE table_name = 'routes' ORDER BY column_index"
        assert [c for (c,) in store.con.execute(columns).fetchall()] == ["route", "template"]
        tables = {t for (t,) in store.con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert classify.ROUTES_NEXT not in tables and "routes" in tables


def test_a_place_wide_only_with_the_known_routes_waits_for_the_next_whole_fold(monkeypatch) -> None:
    monkeypatch.setattr(classify, "FOLD_WHOLE_UNDER", 0)
    con = open_store(None).con
    _hashed(con, range(0, 30), range(0, 40))
    few = [f"/p/w{n}/x" for n in range(6)]  # six words under /p: not a parameter
    append_requests(con, pd.DataFrame({"path": few, "route": few}))
    collapse_routes(con)
    more = [f"/p/w{n}/x" for n in range(6, 10)]  # ten with these four
    append_requests(con, pd.DataFrame({"path": more, "route": more}))
    collapse_routes(con)  # 4 new routes of 1,236, folded alone: each of the four is new
    assert {_templates(con)[r] for r in few + more} == set(few + more)
    monkeypatch.setattr(classify, "FOLD_WHOLE_SHARE", 0.003)  # 4 alone + 1 new reach 0.3%
    last = ["/p/w10/x"]
    append_requests(con, pd.DataFrame({"path": last, "route": last}))
    collapse_routes(con)  # a whole fold: the eleven words are a parameter now
    assert {_templates(con)[r] for r in few + more + last} == {"/p/{name}/x"}
    assert con.execute("SELECT value FROM logan_meta WHERE key = 'routes_folded_alone'").fetchone() == ("0",)


@pytest.mark.skipif(not (CORPUS / "elastic_apache_logs").is_dir(), reason="corpus absent")
def test_elastic_routes_are_few_and_keep_endpoints_apart() -> None:
    ingest = pytest.importorskip("logan.read.ingest", reason="logan.read.ingest not written yet").ingest
    store = open_store(None)
    ingest([str(CORPUS / "elastic_apache_logs" / "apache_logs")], store, format="combined",
           profile="generic")  # fmt: skip
    collapse_routes(store.con)
    paths, routes = store.con.execute(
        "SELECT count(DISTINCT path), count(DISTINCT route) FROM requests"
    ).fetchone()
    assert routes * 3 < paths, (routes, paths)
    # a route never joins two top-level sections, and a script is a route of its own
    mixed = store.con.execute(
        r"""SELECT route FROM requests GROUP BY route HAVING
            (route NOT LIKE '/{%' AND count(DISTINCT regexp_extract(path, '^/[^/]*')) > 1)
            OR (count(DISTINCT path) > 1 AND bool_or(regexp_matches(path, '\.(php|cgi|aspx?)$')))"""
    ).fetchall()
    assert mixed == []
    got = dict(store.con.execute("SELECT path, route FROM requests").fetchall())
    assert got["/robots.txt"] != got["/favicon.ico"]
    assert got["/blog/tags/puppet"] == got["/blog/tags/firefox"] == "/blog/tags/{name}"


# --- Requesters ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("client", "xff", "trusted", "expected"),
    [
        ("127.0.0.1", "203.0.113.9, 10.0.0.1", ["127.0.0.1/8"], "203.0.113.9"),
        ("127.9.9.9", "203.0.113.9", ["127.0.0.0/8"], "203.0.113.9"),
        ("10.1.2.3", "203.0.113.9", ["127.0.0.1/8"], "10.1.2.3"),  # not a trusted proxy
        ("127.0.0.1", "203.0.113.9", [], "127.0.0.1"),  # no proxy configured
        ("127.0.0.1", None, ["127.0.0.1/8"], "127.0.0.1"),
        ("127.0.0.1", "-", ["127.0.0.1/8"], "127.0.0.1"),
        ("::1", "2001:db8::7", ["::1"], "2001:db8::7"),
        ("2001:db8:0:0:1::5", "198.51.100.1", ["2001:db8::/48"], "198.51.100.1"),
        ("2001:db9::5", "198.51.100.1", ["2001:db8::/32"], "2001:db9::5"),
        ("::ffff:10.0.0.5", "198.51.100.2", ["10.0.0.0/24"], "198.51.100.2"),
        ("10.0.0.999", "198.51.100.2", ["10.0.0.0/8"], "10.0.0.999"),  # not an address
    ],
)  # fmt: skip
def test_trusted_proxy(client: str, xff: str | None, trusted: list[str], expected: str) -> None:
    got = one("generic", path="/", client=client, forwarded_for=xff, trusted=trusted)
    assert got["requester"] == expected


# --- User rules ---------------------------------------------------------------------------------
RULES_TOML = r"""
[[rules]]
match = '^/api/v(\d+)/(\w+)'
indirector = 'api\2'
environment = 'v\1'

[[rules]]
match = '^/health'
method = "get"
indirector = "health"
resource = "O'Brien"

[[rules]]
match = 'internal'
field = "vhost"
environment = "internal"

[[groups]]
name = "office"
cidrs = ["192.0.2.0/28", "2001:db8::/32"]

[[groups]]
name = "agents"
hosts = ["*.Nodes.example.com"]
"""


def test_rules_file_overrides_profile(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(RULES_TOML)
    rules = load_rules(path)
    assert load_rules(rules) is rules
    rows = [
        {"method": "GET", "path": "/api/v3/users/7", "client": "192.0.2.5"},
        {"method": "GET", "path": "/health", "client": "192.0.2.99"},
        {"method": "POST", "path": "/health", "client": "2001:db8::1"},
        {"method": "GET", "path": "/x", "vhost": "internal.example.com",
         "client": "a.nodes.example.com"},
        {"method": "PUT", "path": "/production/report/b.nodes.example.com",
         "client": "198.51.100.1"},
    ]  # fmt: skip
    got = classified(rows, "puppet", str(path))
    assert list(got["indirector"]) == ["apiusers", "health", "health", "x", "report"]
    assert list(got["environment"].fillna("-")) == ["v3", "-", "-", "internal", "production"]
    assert list(got["resource"]) == ["/api/v3/users/7", "O'Brien", "/health", "/x",
                                     "b.nodes.example.com"]  # fmt: skip
    # POST /health: the rule is for GET only, so the generic profile answers
    assert got["route"][2] == "/health"
    assert list(got["requester_group"].fillna("-")) == ["office", "-", "office", "agents",
                                                        "agents"]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[rules]]\nmatch = '('\nindirector = 'x'\n", "invalid regex"),
        ("[[rules]]\nmatch = 'a'\n", "sets nothing"),
        ("[[rules]]\nmatch = 'a'\nfield = 'extra'\nindirector = 'x'\n", "field must be"),
        ("[[rules]]\nmatch = 'a'\ncolour = 'x'\n", "allowed keys"),
        ("[[groups]]\nname = 'g'\ncidrs = ['10.0.0.0/33']\n", "groups[0]"),
        ("[rule]\nmatch = 'a'\n", "unknown sections"),
    ],
)
def test_bad_rules_are_explained(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(message)):
        load_rules(path)


def test_rule_values_are_quoted() -> None:
    assert sql_literal("it's") == "'it''s'"
    rules = Rules((Rule("'; DROP TABLE requests; --", "path", None, {"indirector": "a'b"}),))
    got = one("generic", rules=rules, path="/'; DROP TABLE requests; --")
    assert got["indirector"] == "a'b"


def test_reclassify_updates_the_store() -> None:
    con = open_store(None).con
    append_requests(con, pd.DataFrame({"method": ["GET", "GET"],
                                       "path": ["/production/file_metadata/a", "/dev/catalog/n1"],
                                       "client": ["10.0.0.1", "10.0.0.2"]}))  # fmt: skip
    rules = Rules(groups=(Group("lan", ("10.0.0.0/8",)),))
    assert reclassify(con, "auto", rules) == 2
    got = con.execute(
        "SELECT environment, indirector, requester, requester_group FROM requests ORDER BY path"
    ).fetchall()
    assert got == [
        ("dev", "catalog", "n1", "lan"),
        ("production", "file_metadata", "10.0.0.1", "lan"),
    ]


def test_unknown_profile() -> None:
    with pytest.raises(ValueError, match="detect_profile"):
        classification_exprs("auto")


def test_expressions_stay_small() -> None:
    # The ingest embeds these in every INSERT; a blow-up would show here first.
    rules = load_rules(Rules(groups=(Group("g", ("10.0.0.0/8", "2001:db8::/32"), ("*.x",)),)))
    size = sum(map(len, classification_exprs("puppet", rules, ["127.0.0.1/8"]).values()))
    assert size < 60_000, size
