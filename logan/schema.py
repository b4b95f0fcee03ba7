"""The canonical tables of a logan store: one place that says what every column means.

Units are fixed so that no query guesses: times are microseconds (BIGINT), sizes are bytes,
timestamps are UTC (TIMESTAMP without zone, always UTC). A field the log does not carry is
NULL, never 0.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

SCHEMA_VERSION = 9
# Versions a store may be in and still be opened: an older one is migrated in place when
# opened for writing (logan.store: version 4 lacks the `files` table, 8 and older the
# `extra_sets` table, which are added; the rows of 4 to 8 need no change: their request
# lines, resources and requesters are stored whole or flagged as copies, their `extra`
# maps whole, and every classification column exists, all of which version 9 reads as
# well), and read as it is. Version 8 may leave out a column no row filled, `resource`
# and `requester` beside their flags among them, which the view of 7 cannot read; 9
# keeps `extra` as a column per entry, which the view of 8 cannot read.
MIGRATES_FROM = (4, 5, 6, 7, 8)

# `requests` is a view over the table `requests_data`, which holds only the columns some
# ingested format fills (and provenance): a column no log carried is not stored at all, and
# the view shows it as NULL. DuckDB spends as much writing an all-NULL column as a full one:
# an Apache store written with all 50 columns ingested 1.7x slower.
REQUESTS_TABLE = "requests_data"
ALWAYS_STORED = ["ingest_id", "line_no"]
# Stored but not part of the canonical view: which ingest (table `ingests`) wrote the row;
# whether its request line is REQUEST_PARTS joined again, its resource its path, its
# requester its client (below).
STORED_ONLY = {
    "ingest_id": "BIGINT",
    "request_rebuilt": "BOOLEAN",
    "resource_is_path": "BOOLEAN",
    "requester_is_client": "BOOLEAN",
}
# A request line that is its method, path, query and protocol joined again (all but an
# absolute URI or a malformed line) is not stored: `request` holds NULL, `request_rebuilt`
# true, and the view joins the parts. It is most rows' longest text, and was written twice
# (path and query hold it too): the 1 GB realistic log's store went from 246 to 138 MB,
# its ingest from 8.1 to 7.4 s.
REQUEST_PARTS = ("method", "path", "query", "protocol")


# Columns most rows copy from another: the generic profile's resource is the path, and the
# requester is the client but for Puppet node names and forwarded addresses. A row whose
# value is the other column's stores NULL and true in the flag; the view shows the other
# column. Written twice, they were a tenth of what DuckDB spends writing a HAProxy log's
# table and a sixth of an nginx log's whose every path is new, and a third of its store.
COPIES = {"resource": ("path", "resource_is_path"), "requester": ("client", "requester_is_client")}


# The `extra` map is not stored as a map: each of its entries is a VARCHAR column of its own
# (extra_column), and `extra_set` says which entries a row's map has (the format's: one
# row of `extra_sets` per list of entries, its id made from the list), NULL for a row
# whose entries are all NULL (no map). The view makes the map again. DuckDB writes a map
# as lists of key and value strings: the 17 entries of Apache's "extended" format were
# three quarters of what DuckDB spent writing its table (13.5 s against 4.0 s a GB), the
# three of an nginx log a third.
EXTRA_SET = "extra_set"
EXTRA_PREFIX = "extra:"
EXTRA_LOOKUP = "__extra_lookup_"  # requests_select_sql's `lookups`


def extra_column(key: str) -> str:
    """The stored column of the `extra` entry `key`. DuckDB's names are case-insensitive
    (in.Cookie and in.cookie are two entries): a key with capitals (or a '#') is followed
    by # and 8 hex digits of its sha256, so that no two keys share a column."""
    if key == key.lower() and "#" not in key:
        return EXTRA_PREFIX + key
    return f"{EXTRA_PREFIX}{key}#{hashlib.sha256(key.encode()).hexdigest()[:8]}"


def extra_set_id(keys: list[str]) -> int:
    """The id of a list of `extra` entries: the same in every store, so a batch's SQL needs
    no store to say it (a positive 31-bit number from the list's sha256)."""
    digest = hashlib.sha256("\x1f".join(keys).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def quoted(name: str) -> str:
    """A stored column's name as SQL: quoted when it is no plain identifier (extra_column)."""
    if re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        return name
    return '"' + name.replace('"', '""') + '"'


def stored_type(name: str) -> str:
    """The DuckDB type of a column `requests_data` may hold."""
    if name.startswith(EXTRA_PREFIX):
        return "VARCHAR"
    return "INTEGER" if name == EXTRA_SET else STORED_TYPES[name]


def extra_map_sql(sets: dict[int, list[str]], stored: set[str], t: str = "r.") -> str:
    """The `extra` map of a row from its entry columns (`sets`: the store's extra_sets), or
    the map a store of version 8 or older kept whole."""
    whole = f"{t}extra" if "extra" in stored else "CAST(NULL AS MAP(VARCHAR, VARCHAR))"
    if not sets or EXTRA_SET not in stored:
        return whole
    arms = []
    for set_id, keys in sorted(sets.items()):
        entries = ", ".join(f"{sql_str(k)}: {t}{quoted(extra_column(k))}" for k in keys)
        arms.append(f"WHEN {set_id} THEN CAST({{{entries}}} AS MAP(VARCHAR, VARCHAR))")
    return f"CASE {t}{EXTRA_SET} {' '.join(arms)} ELSE {whole} END"


def extra_lookup_sql(key: str, sets: dict[int, list[str]], stored: set[str], t: str = "r.") -> str:
    """extra['key'] of a row without making its map: the entry's column for the rows whose
    list of entries has it, NULL for the other lists, the whole map's entry in a store of
    version 8 or older. Making a row's map to read one entry costs 0.2 us: four lookups of
    `logan cache` were 2.5 s over the 2.56 M rows of the 1 GB apache_extended log."""
    whole = f"{t}extra[{sql_str(key)}]" if "extra" in stored else "CAST(NULL AS VARCHAR)"
    if not sets or EXTRA_SET not in stored:
        return whole
    ids = ", ".join(str(i) for i, keys in sorted(sets.items()) if key in keys)
    has = f"WHEN {t}{EXTRA_SET} IN ({ids}) THEN {t}{quoted(extra_column(key))} " if ids else ""
    return f"CASE {has}WHEN {t}{EXTRA_SET} IS NOT NULL THEN NULL ELSE {whole} END"


def sql_str(text: str) -> str:
    """A SQL string literal for a value that comes from the user's options or our own tables
    (a time zone, a strftime pattern, a format's entry names), never from a log line."""
    return "'" + text.replace("'", "''") + "'"


def rebuilt_request_sql(t: str = "") -> str:
    """The request line of a row from its REQUEST_PARTS (`t`: their table's prefix, "r.")."""
    m, p, q, v = (f"{t}{c}" for c in REQUEST_PARTS)
    return f"{m} || ' ' || {p} || CASE WHEN {q} IS NOT NULL THEN '?' || {q} ELSE '' END || ' ' || {v}"


def request_sql(stored: set[str], t: str = "") -> str:
    """A row's request line as logged, its parts joined again where the store left it to
    the view (`stored`: the stored table's columns)."""
    if "request_rebuilt" not in stored:
        return f"{t}request"
    return f"CASE WHEN {t}request_rebuilt THEN {rebuilt_request_sql(t)} ELSE {t}request END"


# Constant for a whole ingest of one source: kept once in `ingests`, never per row (writing
# them per row was 18% of the table-writing time); the view joins them in by ingest_id.
FROM_INGESTS = ["source", "dialect", "format"]

# (column, DuckDB type, meaning). Order is the table's column order.
REQUESTS: list[tuple[str, str, str]] = [
    # provenance
    ("source", "VARCHAR", "file path or label the line came from"),
    ("line_no", "BIGINT", "1-based line number within the source"),
    ("dialect", "VARCHAR", "apache | nginx | varnish | haproxy"),
    ("format", "VARCHAR", "preset name or the format string as given"),
    # when
    ("ts_start", "TIMESTAMP", "UTC instant the request started"),
    ("ts_end", "TIMESTAMP", "UTC instant the request ended (start + duration)"),
    # who
    ("client", "VARCHAR", "peer address (or hostname) as logged"),
    ("client_port", "INTEGER", "peer port"),
    ("forwarded_for", "VARCHAR", "X-Forwarded-For as logged (a comma list)"),
    ("remote_user", "VARCHAR", "authenticated user"),
    ("user_agent", "VARCHAR", "User-Agent request header"),
    ("referer", "VARCHAR", "Referer request header"),
    # what
    ("request", "VARCHAR", 'request line as logged, \\" and \\\\ decoded'),
    ("method", "VARCHAR", "NULL when the request line is not METHOD URI PROTOCOL"),
    ("path", "VARCHAR", "URI path, without the query string"),
    ("query", "VARCHAR", "query string without the leading '?'"),
    ("protocol", "VARCHAR", "HTTP/1.1, HTTP/2.0, ..."),
    ("vhost", "VARCHAR", "virtual host / Host header"),
    ("status", "SMALLINT", "final HTTP status"),
    ("bytes_sent", "BIGINT", "response bytes (body unless the log only has the total)"),
    ("bytes_received", "BIGINT", "request bytes including headers"),
    # how long (microseconds)
    ("duration_us", "BIGINT", "the whole request as the server saw it"),
    ("ttfb_us", "BIGINT", "time to first byte of the response"),
    ("upstream_us", "BIGINT", "time spent waiting for upstreams (sum over tries)"),
    ("upstream_connect_us", "BIGINT", "time connecting to upstreams (sum over tries)"),
    ("upstream_header_us", "BIGINT", "time until upstream response headers (sum over tries)"),
    ("queue_us", "BIGINT", "time waiting in queues (HAProxy Tw)"),
    ("connect_us", "BIGINT", "time to connect to the server (HAProxy Tc)"),
    ("request_read_us", "BIGINT", "time to read the request (HAProxy TR/Tq)"),
    # proxies and caches
    ("cache_status", "VARCHAR", "HIT, MISS, PASS, EXPIRED, ..."),
    ("upstream_addr", "VARCHAR", "upstream(s) tried, as logged"),
    ("upstream_status", "VARCHAR", "upstream status(es), as logged"),
    ("upstream_tries", "SMALLINT", "number of upstreams tried (NULL when not logged)"),
    ("frontend", "VARCHAR", "frontend / listener that accepted the request (HAProxy)"),
    ("backend", "VARCHAR", "backend / pool name"),
    ("server", "VARCHAR", "server within the backend"),
    ("termination_state", "VARCHAR", "HAProxy termination state"),
    ("active_conns", "INTEGER", "process-wide concurrent connections"),
    ("frontend_conns", "INTEGER", "concurrent connections on the frontend"),
    ("backend_conns", "INTEGER", "concurrent connections on the backend"),
    ("server_conns", "INTEGER", "concurrent connections on the server"),
    ("retries", "INTEGER", "connection retries"),
    ("server_queue", "INTEGER", "requests queued before this one on the server"),
    ("backend_queue", "INTEGER", "requests queued before this one on the backend"),
    # classification (filled by a profile at ingest time)
    ("environment", "VARCHAR", "deployment environment (Puppet: production, ...)"),
    ("indirector", "VARCHAR", "endpoint class (Puppet indirection, or a route's first word)"),
    ("resource", "VARCHAR", "the thing asked for within the endpoint class"),
    ("route", "VARCHAR", "route template, /api/users/{id}"),
    ("requester", "VARCHAR", "who asked: client, or the first forwarded address behind a trusted proxy"),
    ("requester_group", "VARCHAR", "group of the requester from user rules"),
    # everything else the format carried, as text
    (
        "extra",
        "MAP(VARCHAR, VARCHAR)",
        "fields without a canonical column, by name: NULL where the line has '-', the map NULL"
        " when every field is",
    ),
]

REJECTS: list[tuple[str, str, str]] = [
    ("source", "VARCHAR", "file path or label"),
    ("line_no", "BIGINT", "1-based line number"),
    ("raw", "VARCHAR", "the line; bytes that are not UTF-8 are written \\xhh"),
    ("reason", "VARCHAR", "why the line is not a request"),
]

EVENTS: list[tuple[str, str, str]] = [
    ("ts", "TIMESTAMP", "UTC instant of the event"),
    ("source", "VARCHAR", "file path or label"),
    ("line_no", "BIGINT", "1-based line number"),
    ("kind", "VARCHAR", "server_down, server_up, proxy_started, ..."),
    ("server", "VARCHAR", "backend/server the event is about"),
    ("text", "VARCHAR", "the message"),
]

# One row per ingest of one source: what was read, how far, and what came of it.
INGESTS: list[tuple[str, str, str]] = [
    ("ingest_id", "BIGINT", "increasing id"),
    ("source", "VARCHAR", "file path or label"),
    ("dialect", "VARCHAR", "dialect used"),
    ("format", "VARCHAR", "format used"),
    ("first_line", "BIGINT", "first line number read in this ingest"),
    ("lines", "BIGINT", "lines read"),
    ("rows", "BIGINT", "rows added to requests"),
    ("rejects", "BIGINT", "rows added to rejects"),
    ("events", "BIGINT", "rows added to events"),
    ("bytes", "BIGINT", "bytes read (uncompressed)"),
    ("started_at", "TIMESTAMP", "UTC"),
    ("seconds", "DOUBLE", "wall time"),
]

# Route templates learned across rows (`/blog/tags/{name}`: many words between the same
# prefix and suffix), one row per route as classification gave it. The stored rows keep
# that route; the `requests` view shows the template. Learning more (a later ingest brings
# more words) rewrites this small table, never the rows.
ROUTES: list[tuple[str, str, str]] = [
    ("route", "VARCHAR", "a route as classified, e.g. /blog/tags/puppet"),
    ("template", "VARCHAR", "what `requests` shows for it, e.g. /blog/tags/{name}"),
]

# Where the last whole fold of the routes found parameters (logan.read.classify): the
# segment `level` of the routes between `prefix` and `suffix` takes many words. A few new
# routes are folded beside these alone, not with every route again.
ROUTE_PARAMS: list[tuple[str, str, str]] = [
    ("level", "INTEGER", "the segment, 1-based over the route split on '/' (1 is the vhost)"),
    ("prefix", "VARCHAR", "the segments before it, joined by '/'"),
    ("suffix", "VARCHAR", "the segments after it"),
]

# The lists of `extra` entries the rows of a store have (EXTRA_SET above): what makes the
# view build each row's map with its format's keys.
EXTRA_SETS: list[tuple[str, str, str]] = [
    ("set_id", "INTEGER", "extra_set_id of the list"),
    ("keys", "VARCHAR[]", "the entries, in the format's order"),
]

# The files a store has read and how far (logan/read/registry.py): what makes a re-run
# read only what is new. One row per file content, known by its first bytes.
FILES: list[tuple[str, str, str]] = [
    ("file_id", "BIGINT", "increasing id"),
    ("path", "VARCHAR", "where it was read last"),
    ("source", "VARCHAR", "its label in `requests.source`"),
    ("device", "BIGINT", "the file system's device number, when last read"),
    ("inode", "BIGINT", "the file's inode, when last read"),
    ("fingerprint", "VARCHAR", "sha256 of its first fp_len bytes of content (decompressed)"),
    ("fp_len", "INTEGER", "how many first bytes the fingerprint covers (up to 1024)"),
    ("compressed", "BOOLEAN", "gzip when last read"),
    ("resume_offset", "BIGINT", "bytes of content a resumed read skips (a line starts there)"),
    ("resume_line", "BIGINT", "lines before resume_offset"),
    ("lines", "BIGINT", "lines of it the store holds (rows, rejects or events)"),
    ("dialect", "VARCHAR", "the dialect it was read with: a re-run reads on with the same"),
    ("format", "VARCHAR", "the format string it was read with"),
    ("format_label", "VARCHAR", "that format's name, e.g. apache:combined_D"),
    ("profile", "VARCHAR", "the classification profile it was read with"),
    ("ingest_id", "BIGINT", "the last ingest that read it"),
    ("updated_at", "TIMESTAMP", "UTC"),
]

TABLES = {
    "requests": REQUESTS, "rejects": REJECTS, "events": EVENTS, "ingests": INGESTS, "routes": ROUTES,
    "route_params": ROUTE_PARAMS, "files": FILES, "extra_sets": EXTRA_SETS,
}  # fmt: skip
PLAIN_TABLES = ["rejects", "events", "ingests", "routes", "route_params", "files", "extra_sets"]

REQUEST_COLUMNS = [name for name, _, _ in REQUESTS]
REQUEST_TYPES = {name: typ for name, typ, _ in REQUESTS}
# Every column `requests_data` may hold, with its type.
STORED_TYPES = {**REQUEST_TYPES, **STORED_ONLY}


def create_table_sql(name: str) -> str:
    cols = ",\n  ".join(f"{c} {t}" for c, t, _ in TABLES[name])
    return f"CREATE TABLE IF NOT EXISTS {name} (\n  {cols}\n)"


def requests_view_sql(stored: set[str], sets: dict[int, list[str]] | None = None) -> str:
    """The canonical `requests` view: every column, NULL where no ingested log had it; the
    provenance constants from the row's `ingests` row (a LEFT JOIN: no row ever drops out,
    one without an ingest shows NULL there)."""
    return f"CREATE OR REPLACE VIEW requests AS {requests_select_sql(stored, sets=sets)}"


def requests_select_sql(
    stored: set[str],
    provenance: bool = True,
    routes: bool = True,
    sets: dict[int, list[str]] | None = None,
    lookups: Sequence[str] = (),
) -> str:
    """The rows of the `requests` view; without `provenance`, without source, dialect and
    format, and so without the join to `ingests` that DuckDB makes even when no column of
    it is read (60 ms a scan of 4.6 M rows); without `routes`, without the join to the
    route templates (the `route` column is then as classified); `sets`: the store's
    `extra_sets` (extra_map_sql); `lookups`: `extra` entries also given as columns of their
    own, __extra_lookup_0, ... (extra_lookup_sql), for a query that reads them."""
    templates = routes and "route" in stored

    def stored_or_null(name: str, typ: str) -> str:
        return f"r.{name}" if name in stored else f"CAST(NULL AS {typ})"

    def col(name: str, typ: str) -> str:
        if name in FROM_INGESTS:
            return f"i.{name} AS {name}"
        if name == "route" and templates:
            return "coalesce(t.template, r.route) AS route"
        if name == "request" and "request_rebuilt" in stored:
            return f"{request_sql(stored, 'r.')} AS request"
        if name == "extra" and EXTRA_SET in stored:
            return f"{extra_map_sql(sets or {}, stored)} AS extra"
        if name in COPIES and COPIES[name][1] in stored:
            of, flag = COPIES[name]
            # a column no row had a value of its own in is not stored: its flag alone is
            return f"CASE WHEN r.{flag} THEN r.{of} ELSE {stored_or_null(name, typ)} END AS {name}"
        return f"{stored_or_null(name, typ)} AS {name}"

    cols = ",\n  ".join(col(n, t) for n, t, _ in REQUESTS if provenance or n not in FROM_INGESTS)
    for i, key in enumerate(lookups):
        cols += f",\n  {extra_lookup_sql(key, sets or {}, stored)} AS {EXTRA_LOOKUP}{i}"
    join = " LEFT JOIN ingests AS i ON r.ingest_id = i.ingest_id" if provenance else ""
    if templates:
        join += " LEFT JOIN routes AS t ON r.route = t.route"
    return f"SELECT\n  {cols}\nFROM {REQUESTS_TABLE} AS r{join}"
