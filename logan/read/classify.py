"""Classification: which environment, endpoint class and requester a request belongs to.

Everything here produces SQL over the canonical columns of a row, so the ingest classifies
inside its INSERT ... SELECT (vectorized, no Python per line): `classification_exprs` gives
one expression per column, `classified_sql` the same answer computed once per distinct
path and client and joined back (much cheaper on real logs), `reclassify` reruns it over a
store, and `collapse_routes` then finds word-like route parameters across rows. Log content
never becomes SQL text; only constants of our own and values from the user's rules file do,
and those go through `sql_literal`.

Profiles
- puppet: `/{environment}/{indirection}/{key}` (Puppet 2.x/3.x),
  `/puppet/v3/{indirection}/{key}?environment=...` and `/puppet-ca/v1/{indirection}/{key}`
  (4.x and later). For catalog/report/node/facts the key is the agent's certname, so it is
  the requester. Paths of another shape fall back to the generic profile.
- generic: a route template per path: segments that are numeric ids, UUIDs, dates, hex
  hashes or long random tokens become {id}, {uuid}, {date}, {hash}, {token}, and the name
  of a static file (images, css, js, fonts, html, archives...) becomes {file} keeping its
  extension: serving `/img/a.png` and `/img/b.png` is one endpoint, while `/login.php` and
  `/xmlrpc.php` (dynamic extensions) stay apart. Two or more directories in a row of two
  hex characters (`/t/x100/a2/a8/...`: a store of hashed files fanned out) are {hash}
  each. The query string is never part of a route. The route is prefixed with the vhost
  when the log has one. `indirector` is the kind of static file (`*.png`: what a CDN or
  cache would take) or else the route's first path segment, extended over API prefixes
  (`api`, `rest`, `v1`...) so that `/api/v1/users/{id}` is in `api/v1/users`; the root is
  `/`. `resource` is the path. After loading, collapse_routes finds parameters that look
  like words (`/blog/tags/{name}`) across rows.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from logan import schema
from logan.errors import LoganError
from logan.read.convert import sql_str
from logan.read.native import PUPPET_PARTS
from logan.store import ensure_columns, meta, set_meta, stored_columns, transaction

PROFILES = ("puppet", "generic")
CLASSIFIED = ("environment", "indirector", "resource", "route", "requester", "requester_group")

# Columns a user rule may match on (a whitelist: rule files name columns, and a column name
# cannot be passed through sql_literal).
RULE_FIELDS = ("path", "query", "vhost", "method", "request", "user_agent", "client")
RULE_TARGETS = ("environment", "indirector", "resource", "route")
# What classification answers for a key: the targets, an agent's name and its group's index.
ANSWERS = (*RULE_TARGETS, "__node", "__gn")


# The project's one quoting helper (standard SQL: only ' is special, no backslash escapes).
sql_literal = sql_str


# --- Puppet ------------------------------------------------------------------------------
# One regex for the three URL forms (RE2 and Python `re` read it alike): the prefix is
# `puppet/v3`, `puppet-ca/v1` or a legacy environment name; indirection names are lowercase
# words, so `/status/v1/...` or `/blog/2015/x` are not Puppet requests.
PUPPET_PATH = r"^/(puppet/v3|puppet-ca/v1|[A-Za-z0-9_]+)/([a-z_]+)(?:/(.*))?$"
_V3, _CA = "puppet/v3", "puppet-ca/v1"
# Indirections whose key is the requesting node's certname.
NODE_INDIRECTIONS = ("catalog", "report", "node", "facts")
# What makes a sample look like a Puppet master: the legacy form only counts with a known
# indirection, since `/{a}/{b}/{c}` alone is any site.
_PUPPET_SAMPLE = re.compile(
    r"^/puppet(?:-ca)?/v\d+/|^/[A-Za-z0-9_]+/(?:catalog|node|facts|report|file_metadatas?|"
    r"file_contents?|file_bucket_file|certificate\w*|resource_types?|status)(?:/|$)"
)


def puppet_parse_sql(path: str = "path") -> str:
    """The parts of a Puppet-shaped path as a struct (prefix, ind, key); '' for every part
    of another path (`ind` is never '' for a Puppet path)."""
    return f"regexp_extract({path}, {sql_literal(PUPPET_PATH)}, ['prefix', 'ind', 'key'])"


def _puppet_exprs(generic: dict[str, str], qenv: str, parsed: str | None = None) -> dict[str, str]:
    """Puppet columns (and __node, the agent's name) for Puppet-shaped paths, else generic.

    `qenv` is SQL for the query's environment parameter. `parsed`: a column holding
    puppet_parse_sql() of the row (one regex a row, where each column would run two).
    """
    pattern = sql_literal(PUPPET_PATH)

    def pick(puppet: str, other: str) -> str:
        # `puppet` reads the parsed path as lg_p (bound once per row); other rows are generic
        if parsed is not None:
            return (
                f"CASE WHEN {parsed}.ind <> '' THEN {puppet.replace('lg_p.', f'{parsed}.')} ELSE {other} END"
            )
        return (
            f"CASE WHEN regexp_matches(path, {pattern}) THEN list_transform([{puppet_parse_sql()}],"
            f" lambda lg_p: {puppet})[1] ELSE {other} END"
        )

    v3, ca = sql_literal(_V3), sql_literal(_CA)
    nodes = ", ".join(sql_literal(n) for n in NODE_INDIRECTIONS)
    key_part = (
        f"CASE WHEN lg_p.ind IN ({nodes}) THEN '/{{node}}' WHEN lg_p.key <> '' THEN '/{{key}}' ELSE '' END"
    )
    template = (
        f"'/' || CASE WHEN lg_p.prefix IN ({v3}, {ca}) THEN lg_p.prefix ELSE '{{environment}}' END"
        f" || '/' || lg_p.ind || {key_part}"
    )
    return {
        "environment": pick(
            f"CASE lg_p.prefix WHEN {v3} THEN {qenv} WHEN {ca} THEN NULL ELSE lg_p.prefix END",
            generic["environment"],
        ),
        "indirector": pick("lg_p.ind", generic["indirector"]),
        "resource": pick("nullif(lg_p.key, '')", generic["resource"]),
        "route": pick(_with_vhost(f"({template})"), generic["route"]),
        "__node": pick(f"CASE WHEN lg_p.ind IN ({nodes}) AND lg_p.key <> '' THEN lg_p.key END", "NULL"),
    }


# --- Generic routes -------------------------------------------------------------------------
_HEX = "[0-9a-fA-F]"
_UUID = f"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}"
_DATE = r"\d{4}-\d{2}-\d{2}(?:[T_ ]\d{2}(?::?\d{2}){0,2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?"
_NUMBER = r"[-+]?\d+"
_SLUG = r"[a-z0-9]+(?:-[a-z0-9.]+){2,}"
# Static content: one endpoint per directory and extension. Dynamic extensions (php, asp,
# json...) are deliberately absent: their file names *are* the endpoints.
STATIC_EXTENSIONS = (
    "png", "jpg", "jpeg", "gif", "svg", "ico", "webp", "bmp", "tif", "tiff", "avif", "css", "js", "mjs",
    "map", "woff", "woff2", "ttf", "otf", "eot", "htm", "html", "xhtml", "txt", "md", "pdf", "ps", "zip",
    "gz", "tgz", "bz2", "xz", "tar", "jar", "war", "rpm", "deb", "iso", "dmg", "exe", "msi", "mp3", "mp4",
    "m4a", "ogg", "ogv", "webm", "avi", "mov", "flv", "wav", "swf", "doc", "xls", "ppt", "docx", "xlsx",
    "pptx", "csv", "odt",
)  # fmt: skip
_STATIC = r".+\.(" + "|".join(STATIC_EXTENSIONS) + r")"
# API prefixes the indirector reaches past, so the indirector names a resource type.
_INDIRECTOR = r"^/((?:(?:api|rest|v\d+(?:\.\d+)?)/)*[^/]*)"


def _segment_case(s: str) -> str:
    """CASE mapping one path segment to its template (checked in this order). Each regex is
    behind a test of the length or of a character its matches must have (strlen counts
    bytes, and every pattern matches ASCII only): most segments fail those, and a regex
    costs a quarter of a microsecond a call."""
    return (
        f"CASE WHEN {s} = '' THEN {s}"
        # every rule below needs a digit, a dot or a dash: plain words skip them all
        f" WHEN NOT regexp_matches({s}, '[-.0-9]') THEN {s}"
        f" WHEN strlen({s}) = 36 AND regexp_full_match({s}, {sql_literal(_UUID)}) THEN '{{uuid}}'"
        f" WHEN strlen({s}) >= 10 AND regexp_full_match({s}, {sql_literal(_DATE)}) THEN '{{date}}'"
        f" WHEN regexp_full_match({s}, {sql_literal(_NUMBER)}) THEN '{{id}}'"
        # a hash has digits and letters, else `deadbeef` or `12345678` would count
        f" WHEN strlen({s}) >= 8 AND regexp_full_match({s}, '{_HEX}{{8,}}') AND regexp_matches({s}, '[0-9]')"
        f" AND regexp_matches({s}, '[a-fA-F]') THEN '{{hash}}'"
        f" WHEN contains({s}, '.') AND regexp_full_match({s}, {sql_literal(_STATIC)}, 'i')"
        f" THEN '{{file}}.' || lower(regexp_extract({s}, '\\.([^.]+)$', 1))"
        # a token: long, has a digit, and either mixes cases or has no word separators
        f" WHEN strlen({s}) >= 20 AND regexp_full_match({s}, '[A-Za-z0-9_=~.-]{{20,}}')"
        f" AND regexp_matches({s}, '[0-9]')"
        f" AND ((regexp_matches({s}, '[a-z]') AND regexp_matches({s}, '[A-Z]'))"
        f" OR regexp_full_match({s}, '[A-Za-z0-9]+')) THEN '{{token}}'"
        # a slug: three or more lowercase words joined by - (an article, a presentation)
        f" WHEN contains({s}, '-') AND regexp_full_match({s}, {sql_literal(_SLUG)})"
        f" AND regexp_matches({s}, '[a-z]') THEN '{{slug}}'"
        f" ELSE {s} END"
    )


def _fan_out(parts: str, i: str) -> str:
    """SQL true when segment `i` of the list `parts` is one of two or more in a row of two
    lowercase hex characters each: the fan-out directories of a store of hashed files
    (`/t/x100/a2/a8/6806ed71...jpeg`, git's `objects/ab/cdef...`), {hash} each. Taken one at
    a time they are numbers ({id}) or words, and an endpoint split four ways and more,
    one route per directory, until the fold. Digits after a year (`/2015/09/12/`) are a
    date's, not a fan-out. `i` is the lambda's index: DuckDB's is 1-based and Spark's
    0-based, and so are their subscripts, so `parts[i - 1]` is the segment before on both
    (past either end: NULL, or on DuckDB the last segment for -1, where the first segment,
    '' before the leading '/', has already failed the test of its own)."""

    def hex2(s: str) -> str:
        return f"coalesce(regexp_full_match({s}, '[0-9a-f]{{2}}'), false)"

    def digits(s: str, n: int) -> str:
        return f"coalesce(regexp_full_match({s}, '[0-9]{{{n}}}'), false)"

    cur, before, before2, after = (f"{parts}[{i}{d}]" for d in ("", " - 1", " - 2", " + 1"))
    # the length first: most segments fail it. The SQL template of 600,000 paths (the
    # thumbnails' and Apache's), one thread: 0.94-1.34 s so, 1.25-1.68 s without that
    # test, 0.77-0.83 s before the rule. (An ingest runs the C template when it is built.)
    return (
        f"(strlen({cur}) = 2 AND {hex2(cur)} AND ({hex2(before)} OR {hex2(after)}) AND NOT ({digits(cur, 2)}"
        f" AND ({digits(before, 4)} OR ({digits(before, 2)} AND {digits(before2, 4)}))))"
    )


def _with_vhost(template: str) -> str:
    return f"CASE WHEN nullif(vhost, '') IS NULL THEN {template} ELSE lower(vhost) || {template} END"


def route_template_sql(path: str = "path") -> str:
    """SQL for the route template of `path` (without vhost).

    The segments are templated outside any CASE: a lambda evaluated in a branch of a CASE
    took 1.9x its time at the top of an expression (300,000 nginx paths: 2.67 against 1.44
    us a path, one DuckDB thread). A path that is not one gives NULL to string_split, and
    the coalesce its template. Where the template sits in a CASE itself (the route with a
    vhost, the Puppet profile's other paths), compute it in a layer of its own
    (ClassCache.fill_sql)."""
    # the segments bound to lg_p (a "let"), so that each sees its neighbours (_fan_out)
    segments = (
        f"list_transform([string_split(CASE WHEN {path} LIKE '/%' THEN {path} END, '/')], lambda lg_p:"
        f" list_transform(lg_p, lambda lg_s, lg_i: CASE WHEN {_fan_out('lg_p', 'lg_i')} THEN '{{hash}}'"
        f" ELSE {_segment_case('lg_s')} END))[1]"
    )
    not_a_path = f"CASE WHEN {path} = '*' THEN '*' WHEN {path} IS NULL THEN NULL ELSE '{{other}}' END"
    return f"coalesce(array_to_string({segments}, '/'), {not_a_path})"


# The same template computed in C (logan/read/_route.c) as a function on a connection: the
# class cache's fill of a log whose paths are all new ran the SQL's regexes on every path.
# And the indirector of a template (_generic_exprs'), whose regexes took longer than the
# template: 110 ms against 75 ms for 368,640 paths of hashed file names on one thread.
ROUTE_FUNCTION = "logan_route_template"
INDIRECTOR_FUNCTION = "logan_indirector"
try:
    from logan.read import _route

    _route.set_extensions(STATIC_EXTENSIONS)
except ImportError:  # built without a C compiler: route_template_sql() serves
    _route = None


def register_route_template(con: duckdb.DuckDBPyConnection) -> bool:
    """Make the C route template and indirector the SQL functions ROUTE_FUNCTION and
    INDIRECTOR_FUNCTION of `con`; whether they are there (not without the compiled
    extension: route_template_sql() and _generic_exprs' SQL then serve)."""
    if _route is None:
        return False
    for name, made in ((ROUTE_FUNCTION, _route.templates), (INDIRECTOR_FUNCTION, _route.indirectors)):
        with contextlib.suppress(duckdb.NotImplementedException):  # made before on this connection
            con.create_function(name, functools.partial(_each, made), ["VARCHAR"], "VARCHAR", type="arrow")
    return True


def templates_of_paths(offsets: bytes | bytearray, data: bytes, n: int) -> tuple[bytes, bytes, bytes, bytes]:
    """The route templates of `n` paths (an Arrow string array's int32 offsets and data)
    and their indirectors, the same buffers: what ROUTE_FUNCTION and INDIRECTOR_FUNCTION
    make of them (native.Templates; only with the compiled extension)."""
    assert _route is not None
    t_off, t_data = _route.templates(offsets, data, 0, n)
    return (t_off, t_data, *_route.indirectors(t_off, t_data, 0, n))


def _each(made, texts):  # noqa: ANN001, ANN202 (pyarrow is imported by the ingest, not here)
    """The body of a function register_route_template makes: DuckDB hands a chunk of texts
    as a pyarrow ChunkedArray of strings (NULLs never: what they make is NULL, DuckDB's
    default), and `made` (a _route function) makes the buffers of what each becomes."""
    import pyarrow as pa

    out = []
    for chunk in texts.chunks:
        if chunk.type != pa.string():
            chunk = chunk.cast(pa.string())
        validity, offsets, data = chunk.buffers()
        buffers = [validity, *map(pa.py_buffer, made(offsets, data or b"", chunk.offset, len(chunk)))]
        out.append(pa.Array.from_buffers(pa.string(), len(chunk), buffers, chunk.null_count, chunk.offset))
    return pa.chunked_array(out, pa.string())


def _generic_exprs(template: str | None = None, indirector: str | None = None) -> dict[str, str]:
    """`template`: a column holding route_template_sql() of the row, else it is inlined;
    `indirector`: a column holding the indirector made of it (INDIRECTOR_FUNCTION), else
    it is made here."""
    template = template or route_template_sql("path")
    # The template is computed once per row and bound to a lambda parameter ("let").
    indirector = indirector or (
        f"list_transform([{template}], lambda lg_t:"
        " CASE WHEN lg_t IS NULL OR lg_t NOT LIKE '/%' THEN lg_t"
        " WHEN regexp_matches(lg_t, '/\\{file\\}\\.[^/]+$')"
        " THEN '*' || regexp_extract(lg_t, '\\{file\\}(\\.[^/]+)$', 1) ELSE "
        f"coalesce(nullif(regexp_extract(lg_t, {sql_literal(_INDIRECTOR)}, 1), ''), '/') END)[1]"
    )
    return {
        "environment": "CAST(NULL AS VARCHAR)",
        "indirector": indirector,
        "resource": "path",
        "route": _with_vhost(f"({template})"),
        "__node": "CAST(NULL AS VARCHAR)",
    }


# --- Learned route parameters ---------------------------------------------------------------
# Names (tags, project names, user names) look like words, so no per-row rule can tell
# `/blog/tags/puppet` from `/blog/archive`. Across rows it is plain: a position where many
# distinct words sit between the same prefix and the same rest of the route is a parameter
# (`/projects/{name}/`), while a word with a subtree of its own (`/cms/wp-content/...`)
# stays. This needs the whole table, so it runs after the rows are in (ingest, reclassify),
# over the distinct routes only (small).
ROUTE_PARAM_MIN_VALUES = 10
# What the per-row rules make of a whole segment: at a place that is a parameter they are
# values like the words, so one endpoint is not two (`/projects/{slug}/` and
# `/projects/{name}/`, or `{id}` and `{name}`). A static file's `{file}.png` stays apart.
SEGMENT_PLACEHOLDERS = ("{id}", "{uuid}", "{date}", "{hash}", "{token}", "{slug}")
# Never a parameter: the first path segment and the one after API prefixes (/api/v1/users:
# the endpoint class, as in the indirector), and script names, which are endpoints too.
_API_PREFIX = r"^[^/]*(?:/(?:api|rest|v\d+(?:\.\d+)?))*$"
_SCRIPT = r"\.(?:php\d?|aspx?|asmx|ashx|jsp|jspx|cgi|pl|py|rb|do|action|json|xml)$"


def collapse_routes(
    con: duckdb.DuckDBPyConnection, min_values: int = ROUTE_PARAM_MIN_VALUES, since_ingest: int = 0
) -> int:
    """Learn the route templates of the store (table `routes`): path segments that take
    `min_values` or more distinct literal values between the same prefix and suffix become
    `{name}`, level by level from the root. Routes of ingests before `since_ingest` are known
    to the table already. Returns how many routes got a new template.

    The rows are not rewritten (an UPDATE of millions of routes took gigabytes and most of
    an ingest's time): the `requests` view shows each route's template.

    A fold of every route took 5 s for the 5 M routes of a log of hashed paths, and a
    nightly re-run of 1% of that log 7 s in all. So past FOLD_WHOLE_UNDER known routes, a
    few new ones are folded alone, beside the parameters the last whole fold found
    (`route_params`): a new route where a parameter is known gets it at once, and one
    among enough new words gets a new one; the known routes keep their templates. A place
    that only the new routes and the known ones together make wide is found by the next
    whole fold, once the routes folded alone reach FOLD_WHOLE_SHARE of the table."""
    if "route" not in stored_columns(con):  # nothing classified: no routes to fold
        return 0
    first = _new_routes(con, since_ingest)
    # a first fold's routes are counted once its first level has cut them
    new = None if first else con.execute("SELECT count(*) FROM logan_route_new").fetchone()[0]
    if new == 0:
        # No new route: `routes` was folded over these very routes (at the same
        # `min_values`), so no template can change. A re-run of known routes: 30 ms less.
        con.execute("DROP TABLE logan_route_new")
        return 0
    alone = int(meta(con, ROUTES_ALONE) or -1)  # -1: no whole fold by this logan yet
    whole = first or _fold_whole(con, alone, new)
    # Every route, those known with their template and the new ones with none yet (the
    # table is written once, at the end: 5 M new routes of a log of hashed paths cost
    # 1.5 s to insert before being written anew); or the new ones alone.
    known = "SELECT route AS cur, template AS before FROM routes UNION ALL " if whole else ""
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW logan_route_0 AS {known}"
        "SELECT route AS cur, CAST(NULL AS VARCHAR) AS before FROM logan_route_new"
    )
    # Level by level over the distinct routes the level before left, until no route has a
    # segment past the level: a level's answer depends on a route's text only, so routes
    # made alike by a level (`/t/x661/4c/..` and `/t/x95/4c/..` as `/t/{name}/4c/..`) are
    # one row from then on. A log of hashed paths (1.7 M routes in 2.1 M lines) has a
    # tenth as many after its first level; updating one row per route at every level took
    # 35 s and 1.5 GB for 0.3 GB of such a log.
    levels = [3]
    while _collapse_level(con, levels[-1], min_values, known_params=not whole):
        levels.append(levels[-1] + 1)
    if new is None:
        new = con.execute("SELECT count(*) FROM logan_route_keyed_3").fetchone()[0]
    changed = _save_templates(con, levels, whole, new)
    _save_params(con, levels, whole)
    set_meta(con, ROUTES_ALONE, str(0 if whole else alone + new))
    for level in [0, *levels]:
        con.execute(f"DROP VIEW logan_route_{level}")
    con.execute(f"DROP {'VIEW' if first else 'TABLE'} logan_route_new")
    for name in [*(f"{kind}_{level}" for level in levels for kind in ("keyed", "wide")), "final"]:
        con.execute(f"DROP TABLE IF EXISTS logan_route_{name}")
    return changed


# Folds of the new routes alone (collapse_routes): past this many known routes, and until
# the routes folded alone since the last whole fold reach this share of them. A whole fold
# of the 43,244 routes of the corpus HAProxy lines scaled to 1 GB took 0.30 s of a 0.96 s
# re-run of its next 1%, and its checkpoint 0.20 s against 0.07 s; the 316 new routes
# alone took 0.08 s, with the same templates.
FOLD_WHOLE_UNDER = 10_000
FOLD_WHOLE_SHARE = 0.1
# logan_meta: how many routes were folded alone since the last whole fold.
ROUTES_ALONE = "routes_folded_alone"


def _fold_whole(con: duckdb.DuckDBPyConnection, alone: int, new: int) -> bool:
    """Whether to fold every route again with the `new` ones, `alone` routes having been
    folded alone since the last whole fold (-1: none yet, no parameters known)."""
    if alone < 0:
        return True
    known = con.execute("SELECT count(*) FROM routes").fetchone()[0]
    return known < FOLD_WHOLE_UNDER or alone + new >= FOLD_WHOLE_SHARE * known


# logan_meta: the last ingest whose routes `routes` holds.
ROUTES_FOLDED = "routes_folded"


def fold_new_routes(con: duckdb.DuckDBPyConnection) -> int:
    """collapse_routes over the ingests since the last fold, and remember this one: a run
    killed before its fold leaves its routes to the next, and a run whose one new ingest
    is 1% of the store folds that 1% (not, when a rotated file with nothing new was among
    its files, the whole store again). Returns how many routes got a new template."""
    last = con.execute("SELECT max(ingest_id) FROM ingests").fetchone()[0]
    if last is None:
        return 0
    folded = meta(con, ROUTES_FOLDED)
    changed = collapse_routes(con, since_ingest=0 if folded is None else int(folded) + 1)
    set_meta(con, ROUTES_FOLDED, str(last))
    return changed


def _new_routes(con: duckdb.DuckDBPyConnection, since_ingest: int) -> bool:
    """logan_route_new: the distinct routes of the ingests from `since_ingest` on that
    `routes` does not hold yet; whether `routes` holds none (a store's first fold).

    Then every route is new, and logan_route_new is a view the first level reads once,
    as it cuts the routes at their segment: as a table of its own, the 21.5 M routes of
    5 GB of hashed paths were written and read back under the ingest's 256 MB, 4 s of a
    30 s fold. Otherwise the new routes are few and `routes` may hold millions: the few
    are the hash join's build side (DuckDB builds on the right; the ingest turns its
    choice of sides off), 0.11 s against 0.52 s for 1% of a log of hashed paths."""
    seen = (
        f"SELECT DISTINCT route FROM {schema.REQUESTS_TABLE}"
        f" WHERE ingest_id >= {int(since_ingest)} AND route LIKE '%/%'"  # a view takes no parameters
    )
    if con.execute("SELECT 1 FROM routes LIMIT 1").fetchone() is None:
        con.execute(f"CREATE OR REPLACE TEMP VIEW logan_route_new AS {seen}")
        return True
    con.execute(
        "CREATE OR REPLACE TEMP TABLE logan_route_new AS SELECT s.route"
        f" FROM routes AS k RIGHT JOIN ({seen}) AS s ON k.route = s.route WHERE k.route IS NULL"
    )
    return False


# Past this many new templates and new routes, `routes` is written anew rather than
# updated: an UPDATE of millions of strings is held in memory until the checkpoint (7 M
# routes of a log of hashed paths ran out of 1 GB), a new table is written block by block.
REWRITE_ROUTES_AT = 100_000
# The new table, written where `routes` is sure to be written anew (more new routes than
# REWRITE_ROUTES_AT), then put in its place.
ROUTES_NEXT = "logan_routes_next"


def _save_templates(con: duckdb.DuckDBPyConnection, levels: list[int], whole: bool, new: int) -> int:
    """Each route's template, the chain of levels composed once (the first level's rows
    are the routes themselves, the later levels' few), into `routes`; how many routes got
    a template other than the one they had (a new route had itself). The new routes
    folded alone are inserted, never written anew: the table's other routes are not in
    the chain.

    Where `routes` is sure to be written anew, the chain goes straight into a table of the
    store that then takes its place, its two flags dropped (a change of the catalog, no
    copy): not into a temporary one copied into `routes`. For the 21.5 M routes of 5 GB of
    hashed paths, under the ingest's 256 MB, the temporary table, its count and its copy
    took 11 s (docs/benchmarks.md)."""
    chain = " ".join(f"JOIN logan_route_{k} AS s{k} ON s{k}.cur = s{k - 1}.nxt" for k in levels[1:])
    anew = whole and new > REWRITE_ROUTES_AT
    table = ROUTES_NEXT if anew else "logan_route_final"
    con.execute(f"DROP TABLE IF EXISTS {ROUTES_NEXT}")  # left by a fold that was stopped
    con.execute(
        f"CREATE OR REPLACE {'' if anew else 'TEMP '}TABLE {table} AS"
        f" SELECT s3.cur AS route, s{levels[-1]}.nxt AS template, s3.before IS NULL AS fresh,"
        f" s{levels[-1]}.nxt IS DISTINCT FROM coalesce(s3.before, s3.cur) AS changed"
        f" FROM logan_route_3 AS s3 {chain}"
    )
    changed = con.execute(f"SELECT count(*) FILTER (WHERE changed) FROM {table}").fetchone()[0]
    if anew:
        with transaction(con):
            con.execute("DROP TABLE routes")
            con.execute(f"ALTER TABLE {ROUTES_NEXT} RENAME TO routes")
            con.execute("ALTER TABLE routes DROP COLUMN fresh")
            con.execute("ALTER TABLE routes DROP COLUMN changed")
        return changed
    if whole and changed + new > REWRITE_ROUTES_AT:
        con.execute(f"CREATE OR REPLACE TABLE routes AS SELECT route, template FROM {table}")
        return changed
    if changed and whole:  # folded alone, only new routes have a template: none to update
        con.execute(
            f"UPDATE routes AS k SET template = m.template FROM {table} AS m"
            " WHERE k.route = m.route AND m.changed AND NOT m.fresh"
        )
    con.execute(f"INSERT INTO routes SELECT route, template FROM {table} WHERE fresh")
    return changed


def _save_params(con: duckdb.DuckDBPyConnection, levels: list[int], whole: bool) -> None:
    """`route_params`: what a whole fold found wide, or more of it, from a fold alone."""
    if whole:
        con.execute("DELETE FROM route_params")
    for k in levels:
        known = "" if whole else f" EXCEPT SELECT level, prefix, suffix FROM route_params WHERE level = {k}"
        con.execute(f"INSERT INTO route_params SELECT {k}, prefix, suffix FROM logan_route_wide_{k}{known}")


def _collapse_level(con: duckdb.DuckDBPyConnection, k: int, min_values: int, known_params: bool) -> bool:
    """logan_route_{k} (cur, nxt; the first level also `before`): each distinct route of
    the level before (its `nxt`, or logan_route_0's routes) and what it becomes with
    segment k a parameter where that is wide; logan_route_wide_{k}: where that is
    (with `known_params`, also where `route_params` says it was). k is 1-based over
    string_split(route, '/'): 1 is the vhost (or ''), 2 the first path segment, so
    collapsing starts at the second path segment. (A segment's position never changes: a
    level makes one segment `{name}`.) Returns whether a route has a segment past k.

    logan_route_{k} is a view over the level's routes cut at segment k
    (logan_route_keyed_{k}, kept until the fold ends), not a table: the next level reads
    its few distinct `nxt`, and the templates' chain reads it once. As a table it was a
    second copy of every route, 6.9 s of the fold of 5 GB of hashed paths (21.5 M routes)
    under the ingest's 256 MB, spilled to disk and read back."""
    # the first level carries each route's template as it was, to count what changed
    before = (
        "SELECT cur, before FROM logan_route_0"
        if k == 3
        else f"SELECT DISTINCT nxt AS cur FROM logan_route_{k - 1}"
    )
    carried = "before, " if k == 3 else ""
    # a table of its own: read by both of what follows, and by the levels after this one
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE logan_route_keyed_{k} AS
        SELECT cur, {carried}array_to_string(parts[1:{k - 1}], '/') AS prefix,
          array_to_string(parts[{k + 1}:], '/') AS suffix, len(parts) > {k} AS more, parts[{k}] AS value,
          -- a route too short to have segment k has none to fold (literal false, value NULL)
          len(parts) >= {k} AND parts[{k}] <> '' AND parts[{k}] NOT LIKE '{{%'
            AND NOT regexp_matches(parts[{k}], {sql_literal(_SCRIPT)}, 'i') AS literal
        FROM (SELECT *, string_split(cur, '/') AS parts FROM ({before}))
        """
    )
    known = f" UNION SELECT prefix, suffix FROM route_params WHERE level = {k}" if known_params else ""
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE logan_route_wide_{k} AS
        -- many words between the same prefix and suffix, or a parameter found there before
        -- (a later ingest brings new words); never past an API prefix (checked once a
        -- prefix, not once a route). The routes are distinct, and a route is its prefix,
        -- value and suffix: a group's values are distinct but where `/a/b` and `/a/b/` both
        -- put `b` before an empty suffix. Those are counted once; a count(DISTINCT) of every
        -- group took 0.91 s for the 5.2 M routes of a log of hashed paths, this 0.22 s.
        SELECT prefix, suffix FROM (
          SELECT prefix, suffix, value, literal FROM logan_route_keyed_{k} WHERE suffix <> ''
          UNION ALL
          SELECT DISTINCT prefix, suffix, value, literal FROM logan_route_keyed_{k} WHERE suffix = ''
        ) GROUP BY prefix, suffix
        HAVING (count(value) FILTER (WHERE literal) >= ? OR bool_or(value = '{{name}}'))
          AND NOT regexp_matches(prefix, {sql_literal(_API_PREFIX)}, 'i'){known}
        """,
        [min_values],
    )
    # where words are wide, a segment the per-row rules made a placeholder is one more
    # value: `/presentations/{slug}/images/...` beside `/presentations/reveal/images/...`
    placeholders = ", ".join(map(sql_literal, SEGMENT_PLACEHOLDERS))
    con.execute(
        f"""
        CREATE OR REPLACE TEMP VIEW logan_route_{k} AS
        SELECT k.cur, {carried.replace("before", "k.before")}CASE
          WHEN (k.literal OR k.value IN ({placeholders})) AND w.prefix IS NOT NULL
          THEN k.prefix || '/{{name}}' || CASE WHEN k.more THEN '/' || k.suffix ELSE '' END
          ELSE k.cur END AS nxt
        FROM logan_route_keyed_{k} AS k
        LEFT JOIN logan_route_wide_{k} AS w ON k.prefix = w.prefix AND k.suffix = w.suffix
        """
    )
    return bool(con.execute(f"SELECT bool_or(more) FROM logan_route_keyed_{k}").fetchone()[0])


# --- Addresses ----------------------------------------------------------------------------
_IPV4 = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}"


def _ipv4_number(a: str) -> str:
    parts = [f"CAST(split_part({a}, '.', {i}) AS UBIGINT) * {256 ** (4 - i)}" for i in range(1, 5)]
    return "(" + " + ".join(parts) + ")"


def _ipv6_number(a: str) -> str:
    """The address as UHUGEINT: '::' expanded to zero groups, each group padded to 4 hex."""
    head = f"CASE WHEN contains({a}, '::') THEN split_part({a}, '::', 1) ELSE {a} END"
    tail = f"CASE WHEN contains({a}, '::') THEN split_part({a}, '::', 2) ELSE '' END"
    hl = f"CASE WHEN ({head}) = '' THEN [] ELSE string_split({head}, ':') END"
    tl = f"CASE WHEN ({tail}) = '' THEN [] ELSE string_split({tail}, ':') END"
    zeros = f"list_transform(range(greatest(0, 8 - len({hl}) - len({tl}))), lambda lg_i: '0')"
    groups = f"list_concat({hl}, {zeros}, {tl})"
    hexed = f"array_to_string(list_transform({groups}, lambda lg_g: lpad(lg_g, 4, '0')), '')"
    return f"TRY_CAST('0x' || ({hexed}) AS UHUGEINT)"


def cidr_match_sql(addr: str, networks: Sequence[str]) -> str:
    """SQL true when the address expression `addr` lies in one of `networks` (CIDR or IP).

    Pure SQL (the inet extension may not be installed): the address becomes an integer that
    is compared with each network's range. IPv4-mapped IPv6 (::ffff:a.b.c.d) counts as IPv4.
    """
    nets = [ipaddress.ip_network(n.strip(), strict=False) for n in networks]
    if not nets:
        return "false"
    checks = []
    v4 = [n for n in nets if n.version == 4]
    v6 = [n for n in nets if n.version == 6]
    if v4:
        ranges = " OR ".join(
            f"lg_n BETWEEN {int(n.network_address)} AND {int(n.broadcast_address)}" for n in v4
        )
        v4addr = f"regexp_replace({addr}, '^::ffff:', '', 'i')"
        checks.append(
            f"list_transform([{v4addr}], lambda lg_a: CASE WHEN regexp_full_match(lg_a, "
            f"{sql_literal(_IPV4)}) THEN list_transform([{_ipv4_number('lg_a')}], "
            f"lambda lg_n: {ranges})[1] ELSE false END)[1]"
        )
    if v6:
        ranges = " OR ".join(
            f"lg_m BETWEEN {int(n.network_address)} AND {int(n.broadcast_address)}" for n in v6
        )
        # brackets and zone ids ([fe80::1%eth0]) are not part of the address
        v6addr = f"lower(regexp_replace(regexp_replace({addr}, '^\\[|\\]$', '', 'g'), '%.*$', ''))"
        checks.append(
            f"list_transform([{v6addr}], lambda lg_b: CASE WHEN regexp_full_match(lg_b, "
            f"'[0-9a-f:]*:[0-9a-f:]*') AND len(string_split(lg_b, '::')) <= 2 THEN "
            f"coalesce(list_transform([{_ipv6_number('lg_b')}], lambda lg_m: {ranges})[1], false)"
            f" ELSE false END)[1]"
        )
    return "coalesce((" + ") OR (".join(checks) + "), false)"


def requester_address_sql(trusted_proxies: Sequence[str]) -> str:
    """The client, or the first X-Forwarded-For address when the client is a trusted proxy."""
    if not trusted_proxies:
        return "client"
    first = "nullif(nullif(trim(split_part(forwarded_for, ',', 1)), ''), '-')"
    return (
        f"CASE WHEN {first} IS NOT NULL AND {cidr_match_sql('client', trusted_proxies)}"
        f" THEN {first} ELSE client END"
    )


# --- User rules ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    """`match` (an RE2 regex) searched in `column` (the TOML key is `field`); the first
    matching rule sets each target.

    Targets may use \\1..\\9 for capture groups of `match`.
    """

    match: str
    column: str
    method: str | None
    targets: dict[str, str]


@dataclass(frozen=True)
class Group:
    """A requester group: addresses in `cidrs`, or requesters matching a `hosts` glob."""

    name: str
    cidrs: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rules:
    rules: tuple[Rule, ...] = ()
    groups: tuple[Group, ...] = ()


_RULE_KEYS = {"match", "field", "method", *RULE_TARGETS}
_GROUP_KEYS = {"name", "cidrs", "hosts"}


def _check_regex(pattern: str, where: str) -> None:
    # Validate with the engine that will run it (RE2), not Python's re.
    try:
        duckdb.connect().execute("SELECT regexp_matches('', ?)", [pattern]).fetchall()
    except duckdb.Error as exc:
        raise LoganError(f"{where}: invalid regex {pattern!r}: {exc}") from None


def _parse_rule(raw: dict, where: str) -> Rule:
    unknown = set(raw) - _RULE_KEYS
    if unknown or "match" not in raw:
        raise LoganError(f"{where}: needs 'match'; allowed keys {sorted(_RULE_KEYS)}")
    fld = raw.get("field", "path")
    if fld not in RULE_FIELDS:
        raise LoganError(f"{where}: field must be one of {RULE_FIELDS}, not {fld!r}")
    _check_regex(raw["match"], where)
    targets = {k: str(raw[k]) for k in RULE_TARGETS if k in raw}
    if not targets:
        raise LoganError(f"{where}: sets nothing; give one of {RULE_TARGETS}")
    method = raw.get("method")
    return Rule(str(raw["match"]), fld, method.upper() if method else None, targets)


def _parse_group(raw: dict, where: str) -> Group:
    unknown = set(raw) - _GROUP_KEYS
    if unknown or "name" not in raw:
        raise LoganError(f"{where}: needs 'name'; allowed keys {sorted(_GROUP_KEYS)}")
    cidrs = tuple(str(c) for c in raw.get("cidrs", ()))
    for c in cidrs:
        try:
            ipaddress.ip_network(c, strict=False)
        except ValueError as exc:
            raise LoganError(f"{where}: {exc}") from None
    return Group(str(raw["name"]), cidrs, tuple(str(h) for h in raw.get("hosts", ())))


def load_rules(path: str | Path | Rules) -> Rules:
    """Read a rules TOML file:

    [[rules]]                      # first match wins, per target column
    match = '^/api/v2/(\\w+)'       # RE2 regex searched in `field` (default path)
    field = "path"                 # path | query | vhost | method | request | user_agent | client
    method = "GET"                 # optional
    indirector = 'api-\\1'          # any of environment, indirector, resource, route

    [[groups]]
    name = "monitoring"
    cidrs = ["10.0.0.0/8", "2001:db8::/32"]
    hosts = ["*.nagios.example.com"]

    A Rules object is returned as is, so callers may pass either.
    """
    if isinstance(path, Rules):
        return path
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except OSError as exc:
        raise LoganError(f"rules file {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:  # its message names the line and column
        raise LoganError(f"rules file {path}: not TOML: {exc}") from None
    unknown = set(doc) - {"rules", "groups"}
    if unknown:
        raise LoganError(f"{path}: unknown sections {sorted(unknown)}; use [[rules]], [[groups]]")
    rules = tuple(_parse_rule(r, f"{path}: rules[{i}]") for i, r in enumerate(doc.get("rules", [])))
    groups = tuple(_parse_group(g, f"{path}: groups[{i}]") for i, g in enumerate(doc.get("groups", [])))
    return Rules(rules, groups)


def _rule_value(rule: Rule, template: str) -> str:
    if "\\" not in template:
        return sql_literal(template)
    # the whole value is rewritten so \N refers to the groups of `match` as searched
    return (
        f"regexp_replace({rule.column}, {sql_literal('(?s)^.*?(?:' + rule.match + ').*$')}, "
        f"{sql_literal(template)})"
    )


def _apply_rules(target: str, rules: Sequence[Rule], otherwise: str) -> str:
    whens = []
    for rule in rules:
        if target not in rule.targets:
            continue
        cond = f"regexp_matches(coalesce({rule.column}, ''), {sql_literal(rule.match)})"
        if rule.method:
            cond += f" AND method = {sql_literal(rule.method)}"
        whens.append(f"WHEN {cond} THEN {_rule_value(rule, rule.targets[target])}")
    if not whens:
        return otherwise
    return f"CASE {' '.join(whens)} ELSE {otherwise} END"


def _group_index_sql(groups: Sequence[Group], value: str, addresses: bool) -> str:
    """1-based index of the first group `value` belongs to, else NULL: by host glob, and by
    CIDR too when `addresses` (value is an address rather than an agent's name)."""
    whens = []
    for i, g in enumerate(groups, 1):
        conds = [f"lower({value}) GLOB {sql_literal(h.lower())}" for h in g.hosts]
        if addresses and g.cidrs:
            conds.append(cidr_match_sql(value, g.cidrs))
        if conds:
            whens.append(f"WHEN ({') OR ('.join(conds)}) THEN {i}")
    return f"CASE {' '.join(whens)} END" if whens else "CAST(NULL AS INTEGER)"


def _group_name_sql(groups: Sequence[Group], by_node: str, by_addr: str) -> str:
    # The requester's group is the first that matches its agent name or its address.
    if not groups:
        return "CAST(NULL AS VARCHAR)"
    names = ", ".join(sql_literal(g.name) for g in groups)
    return f"[{names}][least({by_node}, {by_addr})]"


# --- Public entry points --------------------------------------------------------------------
# The environment parameter of a Puppet v3 query string: the text after the first
# `environment=` that starts the query or follows a `&`, up to the next `&` (string
# functions: several times cheaper than the regex `(?:^|&)environment=([^&]*)`).
_QUERY_ENV = "nullif(split_part(split_part('&' || coalesce(query, ''), '&environment=', 2), '&', 1), '')"


def _what(
    profile: str,
    rules: Rules,
    qenv: str,
    parsed: str | None = None,
    template: str | None = None,
    indirector: str | None = None,
) -> dict[str, str]:
    """environment, indirector, resource, route, __node (agent name), __gn (its group index):
    all functions of the request itself (path, vhost and the columns rules read).
    `parsed`: see _puppet_exprs; `template`, `indirector`: see _generic_exprs."""
    if profile not in PROFILES:
        raise LoganError(f"profile must be one of {PROFILES} (resolve 'auto' with detect_profile)")
    exprs = _generic_exprs(template, indirector)
    if profile == "puppet":
        exprs = _puppet_exprs(exprs, qenv, parsed)
    for target in RULE_TARGETS:
        exprs[target] = _apply_rules(target, rules.rules, exprs[target])
    exprs["__gn"] = _group_index_sql(rules.groups, f"({exprs['__node']})", addresses=False)
    return exprs


def classification_exprs(
    profile: str,
    rules: Rules | str | Path | None = None,
    trusted_proxies: Sequence[str] = (),
) -> dict[str, str]:
    """SQL expression per classification column, over the canonical columns of one row.

    `rules` is a Rules object or the path of a rules file (see load_rules). Every row
    evaluates every regex here; `classified_sql` gives the same answer evaluating them once
    per distinct path and client, which is many times faster on real logs.
    """
    rules = load_rules(rules) if rules is not None else Rules()
    what = _what(profile, rules, _QUERY_ENV)
    addr = requester_address_sql(trusted_proxies)
    by_addr = _group_index_sql(rules.groups, f"({addr})", addresses=True)
    out = {c: what[c] for c in RULE_TARGETS}
    out["requester"] = f"coalesce({what['__node']}, {addr})"
    out["requester_group"] = _group_name_sql(rules.groups, what["__gn"], by_addr)
    return {col: out[col] for col in CLASSIFIED}


def unfilled_columns(profile: str, rules: Rules, trusted_proxies: Sequence[str] = ()) -> frozenset[str]:
    """The classification columns (CLASSIFIED) in which no row gets a value of its own:
    NULL on every row, or for a schema.COPIES column, its source's value on every row.
    The generic profile names no environment and no agent, so its resource is the path and
    its requester the client unless a rule or a trusted proxy says otherwise; without
    groups, no row has a requester_group."""
    targeted = {t for r in rules.rules for t in r.targets}
    out = set() if rules.groups else {"requester_group"}
    if profile == "generic":
        out |= {"environment", "resource"} - targeted
        out |= set() if trusted_proxies else {"requester"}
    return frozenset(out)


def classified_sql(
    relation: str,
    profile: str,
    rules: Rules | str | Path | None = None,
    trusted_proxies: Sequence[str] = (),
    keyed: tuple[str, list[str], list[str]] | None = None,
    cache: ClassCache | None = None,
    direct: bool = False,
    parts: bool = False,
) -> str:
    """SELECT every column of `relation` (a subquery without classification columns) plus
    the six classification columns, equal to classification_exprs row by row.

    The regexes run once per distinct (path, vhost, ...) and per distinct (client,
    forwarded_for), and the answers are joined back: logs repeat their paths and clients,
    so this costs about a third of classifying every row (1M rows of the elastic corpus:
    1.2 s against 3.4 s on a busy 2-core machine; what remains is mostly the copy and the
    joins). `relation` is read once (materialized), so it may be an expensive parse.

    `keyed`: (SQL of a relation with one row per distinct value of `columns` and the
    key_columns() that follow from them, `columns`, `carried`), e.g. the distinct request
    lines of a batch and their path, vhost and query. The answers are then joined back on
    `columns`, and `relation` is not materialized (without trusted proxies and groups);
    the `carried` columns (functions of `columns` alone) come from the key's row too; those
    named __* are not in `relation` (rows._keyed: an answer made per key).

    `cache` (with `keyed`): a ClassCache whose table holds the classification of every
    key of `keyed` (ClassCache.fill_sql): the answers are looked up there instead of
    computed, so a key seen in an earlier batch costs a join, not the regexes. `direct`:
    the keys are classified here as the cache's fill would, and the table is neither read
    nor filled: for keys the C split's reader numbered, joined back on their numbers, where
    the fill and the join on the key texts cost more than classifying every key again.
    `parts` (with `direct`): the keys carry the reader's Puppet parse (ClassCache.answers_sql).
    """
    rules = load_rules(rules) if rules is not None else Rules()
    what = _what(profile, rules, _QUERY_ENV)
    w_cols = ", ".join(f"{what[c]} AS {c}" for c in ANSWERS)
    addr, by_addr, a_cte, a_join = _per_client(rules, trusted_proxies)
    if keyed is not None and not a_cte:
        # The answers per key from the keys' own relation, joined back: `relation` is read
        # once and not held (a third less work for a batch than materializing it).
        keys_sql, keys, carried = keyed
        w_src = keys_sql
        r_src = f"({relation}) AS __r"
        cte = ""
    else:
        keys, carried = key_columns(profile, rules), []
        w_src = f"SELECT DISTINCT {', '.join(keys)} FROM __r"
        r_src = "__r"
        cte = f"__r AS MATERIALIZED (SELECT * FROM ({relation})),\n"
    w_on = " AND ".join(f"__r.{k} IS NOT DISTINCT FROM __w.{k}" for k in keys)
    # the columns that follow from the keys alone, from the key's row: not cut out per row
    # (those named __* only the key's row has: the rows do not make them at all)
    own = [c for c in carried if not c.startswith("__")]
    r_cols = f"__r.* EXCLUDE ({', '.join(own)}), " if own else "__r.*, "
    r_cols += "".join(f"__w.{c}, " for c in carried)
    w_all = ", ".join([*keys, *carried])
    w_from = f"({w_src})"
    if cache is not None and keyed is not None and not a_cte and direct:
        w_cols = ", ".join(ANSWERS)
        w_from = f"({cache.answers_sql(w_src, parts=parts)})"
    elif cache is not None and keyed is not None and not a_cte:
        w_all = ", ".join(f"__k.{c}" for c in [*keys, *carried])
        w_cols = ", ".join(f"__c.{c}" for c in ANSWERS)
        w_from = (
            f"(SELECT *, {cache.key_select()} FROM ({w_src})) AS __k "
            f"LEFT JOIN {cache.table} AS __c ON {cache.on('__k', '__c')}"
        )
    return f"""
WITH {cte}__w AS (SELECT {w_all}, {w_cols} FROM {w_from}){a_cte}
SELECT {r_cols}{", ".join(f"__w.{c}" for c in RULE_TARGETS)},
  coalesce(__w.__node, {addr}) AS requester,
  {_group_name_sql(rules.groups, "__w.__gn", by_addr)} AS requester_group
FROM {r_src} LEFT JOIN __w ON {w_on}{a_join}
"""


def classified_inline_sql(relation: str, cache: ClassCache, made: tuple[str, str] | None = None) -> str:
    """classified_sql of `relation` with every row classified where it is: no keys, no
    join back, no cache. For a batch whose keys are nearly all distinct (hashed file
    names: a key a line), the keys' own parse and the join on their numbers were pure
    cost: 0.28 s against 0.39 s for the SELECT of 368,640 such lines, where a batch with a
    key per 20 lines took 0.26 against 0.17 s (ingest._classify_inline). Without trusted
    proxies and groups only: `cache` exists then alone (ingest._classification). `made`: see
    ClassCache.answers_sql."""
    assert not cache.rules.groups  # so the requester is the node or the client (_per_client)
    answers = cache.answers_sql(relation, made=made)
    return (
        "SELECT *, coalesce(__node, client) AS requester, CAST(NULL AS VARCHAR) AS requester_group"
        f" FROM ({answers})"
    )


def key_columns(profile: str, rules: Rules | str | Path | None = None) -> list[str]:
    """The columns of a row that its classification (but for the requester's address and
    group) reads: path, vhost, the columns rules read, and for Puppet the query."""
    rules = load_rules(rules) if rules is not None else Rules()
    keys = ["path", "vhost"]
    keys += [c for c in RULE_FIELDS if c not in keys and any(r.column == c for r in rules.rules)]
    if any(r.method for r in rules.rules) and "method" not in keys:
        keys.append("method")
    if profile == "puppet" and "query" not in keys:
        # Puppet 4+ names the environment in the query: a handful of query strings per
        # path, so its regex too runs once per distinct key (per row: 10% of a batch).
        keys.append("query")
    return keys


# The most keys ClassCache keeps (some 70 MB at 350 bytes a key). The benchmark shapes whose
# paths repeat stay under it: a realistic Puppet fleet's 1 GB has about 84,000 keys, the
# 1 GB of HAProxy lines from the corpus 139,000 paths.
CLASS_CACHE_KEYS = 200_000


@dataclass(frozen=True)
class ClassCache:
    """The classification of every key an ingest has met, in a table of its own, so each
    batch runs the profile's regexes only over keys no earlier batch had. Real logs repeat
    their paths across batches (a Puppet master serves the same module files all day): on
    a log of varied paths the regexes ran over a quarter of each batch's rows before.

    A Puppet key holds the query's environment parameter, not the query, whose other
    parameters (a transaction id per request) would make every catalog request a key.
    Keys that come numbered (the C split's) are classified in the INSERT instead, past
    the cache (classified_sql's `direct`): classifying them all again cost less than the
    fill and the join on their texts."""

    table: str
    profile: str
    rules: Rules
    native: bool = False  # the route template by ROUTE_FUNCTION (register_route_template)

    def keys(self) -> dict[str, str]:
        """Key column -> its SQL over a row (path, vhost, the columns rules read...)."""
        out = {c: c for c in key_columns(self.profile, self.rules)}
        if self.profile == "puppet" and not any(r.column == "query" for r in self.rules.rules):
            del out["query"]
            out["__env"] = _QUERY_ENV
        return {f"__key_{c.strip('_')}": sql for c, sql in out.items()}

    def key_select(self) -> str:
        return ", ".join(f"{sql} AS {name}" for name, sql in self.keys().items())

    def on(self, left: str, right: str) -> str:
        return " AND ".join(f"{left}.{k} IS NOT DISTINCT FROM {right}.{k}" for k in self.keys())

    def create_sql(self) -> str:
        names = ", ".join(f"{k} VARCHAR" for k in self.keys())
        answers = ", ".join(f"{c} VARCHAR" for c in (*RULE_TARGETS, "__node")) + ", __gn INTEGER"
        return f"CREATE OR REPLACE TEMP TABLE {self.table} ({names}, {answers})"

    def fill_sql(self, keys_sql: str) -> str:
        """INSERT the classification of the keys of `keys_sql` (rows with the key columns)
        that the table does not hold yet."""
        keys = self.keys()
        qenv = "__key_env" if "__key_env" in keys else _QUERY_ENV
        # the profile's expressions read the key columns by their own names
        named = ", ".join(f"{name} AS {name.removeprefix('__key_')}" for name in keys if name != "__key_env")
        # the keys the table lacks, then each once: most of a batch's keys are known, and
        # the DISTINCT ran over all of them. An ANTI JOIN, not NOT EXISTS: DuckDB took 35 ms
        # to plan the correlated subquery (12 ms this way), for every batch.
        keyed = f"SELECT {self.key_select()} FROM ({keys_sql})"
        lacking = (
            f"SELECT DISTINCT __n.* FROM ({keyed}) AS __n"
            f" ANTI JOIN {self.table} AS __c ON {self.on('__n', '__c')}"
        )
        new = f"SELECT *, {named} FROM ({lacking})"
        classified = self.answers_sql(new, qenv)
        return f"INSERT INTO {self.table} SELECT {', '.join([*keys, *ANSWERS])} FROM ({classified})"

    def answers_sql(
        self,
        rows_sql: str,
        qenv: str = _QUERY_ENV,
        made: tuple[str, str] | None = None,
        parts: bool = False,
    ) -> str:
        """SELECT *, and the ANSWERS for each row of `rows_sql` (path, vhost, the columns
        rules read, by their own names; `qenv`: the SQL of the Puppet environment over them).
        `made`: the columns of `rows_sql` that hold each row's route template and its
        indirector already (what ROUTE_FUNCTION and INDIRECTOR_FUNCTION make of its path;
        the generic profile only). `parts`: its rows carry native.PUPPET_PARTS, the
        Puppet parse of their path and query made in C, which then replace the regex."""
        puppet = self.profile == "puppet"  # its path parsed once, in a layer of its own
        if puppet and parts:
            prefix, ind, key, env = PUPPET_PARTS
            qenv, parse = env, f"struct_pack(prefix := {prefix}, ind := {ind}, key := {key})"
        else:
            parse = puppet_parse_sql()
        indirector = "__ind" if self.native else None
        what = _what(self.profile, self.rules, qenv, "__pp" if puppet else None, "__tmpl", indirector)
        answers = ", ".join(f"{what[c]} AS {c}" for c in ANSWERS)
        parsed = f"SELECT *, {parse} AS __pp FROM ({rows_sql})" if puppet else rows_sql
        # the generic template, in a layer of its own: outside the CASEs that read it (a
        # Puppet path has none: NULL, for nothing); and its indirector in C, in another
        path = "CASE WHEN __pp.ind = '' THEN path END" if puppet else "path"
        template = f"{ROUTE_FUNCTION}({path})" if self.native else route_template_sql(path)
        rel = f"SELECT *, {template} AS __tmpl FROM ({parsed})"
        if made is not None and indirector and not puppet:  # made in C by the reader thread
            rel = f"SELECT *, {made[0]} AS __tmpl, {made[1]} AS {indirector} FROM ({parsed})"
        elif indirector:
            rel = f"SELECT *, {INDIRECTOR_FUNCTION}(__tmpl) AS {indirector} FROM ({rel})"
        return f"SELECT *, {answers} FROM ({rel})"


def _per_client(rules: Rules, trusted_proxies: Sequence[str]) -> tuple[str, str, str, str]:
    """(requester address, its group index, CTE, join) for classified_sql: the address
    and group computed once per distinct client and joined back, or, with neither trusted
    proxies nor groups, the client itself and no join (a fifth of classifying a batch)."""
    if not trusted_proxies and not rules.groups:
        return "__r.client", "CAST(NULL AS INTEGER)", "", ""
    who = ["client", "forwarded_for"] if trusted_proxies else ["client"]
    by_addr = _group_index_sql(rules.groups, "__addr", addresses=True)
    cte = (
        f",\n__a AS (SELECT {', '.join(who)}, {requester_address_sql(trusted_proxies)} AS __addr, "
        f"{by_addr} AS __ga\n        FROM (SELECT DISTINCT {', '.join(who)} FROM __r))"
    )
    on = " AND ".join(f"__r.{k} IS NOT DISTINCT FROM __a.{k}" for k in who)
    return "__a.__addr", "__a.__ga", cte, f" LEFT JOIN __a ON {on}"


def detect_profile(paths: Sequence[str]) -> str:
    """'puppet' when at least half of the sample paths are Puppet master requests."""
    sample = [p for p in paths if p]
    hits = sum(1 for p in sample if _PUPPET_SAMPLE.search(p))
    return "puppet" if sample and hits * 2 >= len(sample) else "generic"


# The rows reclassify classifies at a time: their new classes are held until they are
# written, so memory grows with this, not with the store (all of 2.6 M rows at once took
# 1.6 GiB).
RECLASSIFY_ROWS = 1 << 20


def reclassify(
    con: duckdb.DuckDBPyConnection,
    profile: str,
    rules: Rules | str | Path | None = None,
    trusted_proxies: Sequence[str] = (),
) -> int:
    """Recompute the classification columns of every row in `requests`; returns the row count.

    profile may be 'auto': a sample of the store's paths decides.
    """
    if profile == "auto":
        sample = con.execute("SELECT path FROM requests WHERE path IS NOT NULL LIMIT 5000")
        profile = detect_profile([r[0] for r in sample.fetchall()])
    # Only the columns classification reads, keyed by rowid, so the answer joins back.
    read = ", ".join(sorted({"path", "vhost", "query", "method", "client", "forwarded_for",
                             *RULE_FIELDS}))  # fmt: skip
    ensure_columns(con, CLASSIFIED)
    stored = stored_columns(con)
    # the request line as the view shows it: a rule on it matches as it did at ingest
    made = {"request": f"{schema.request_sql(stored)} AS request"} if "request" in stored else {}
    read = ", ".join(made.get(c, c if c in stored else f"NULL AS {c}") for c in read.split(", "))
    assignments = ", ".join(f"{c} = c.{c}" for c in CLASSIFIED)
    # stored whole now: a flag left true would show the path, the client instead
    assignments += "".join(f", {flag} = false" for _, flag in schema.COPIES.values() if flag in stored)
    first, last = con.execute(f"SELECT min(rowid), max(rowid) FROM {schema.REQUESTS_TABLE}").fetchall()[0]
    for start in range(first or 0, (last or -1) + 1, RECLASSIFY_ROWS):
        rows = f"rowid BETWEEN {start} AND {start + RECLASSIFY_ROWS - 1}"
        rel = f"SELECT rowid AS __rowid, {read} FROM {schema.REQUESTS_TABLE} WHERE {rows}"
        con.execute(
            "CREATE OR REPLACE TEMP TABLE logan_classified AS SELECT __rowid, "
            f"{', '.join(CLASSIFIED)} FROM ({classified_sql(rel, profile, rules, trusted_proxies)})"
        )
        con.execute(
            f"UPDATE {schema.REQUESTS_TABLE} AS r SET {assignments} FROM logan_classified AS c"
            " WHERE r.rowid = c.__rowid"
        )
    con.execute("DROP TABLE IF EXISTS logan_classified")
    # every route is new: learn their templates again (the next fold starts from the first
    # ingest when this one does not finish)
    con.execute("DELETE FROM logan_meta WHERE key IN (?, ?)", [ROUTES_FOLDED, ROUTES_ALONE])
    con.execute("DELETE FROM routes")
    fold_new_routes(con)
    return con.execute("SELECT count(*) FROM requests").fetchone()[0]
