"""Events: lines that are not requests but messages worth keeping, into table `events`.

HAProxy logs "Server be/app3 is DOWN", "Proxy fe started", "Connect from ..." among its
requests; a post-mortem needs the moment a server went down, so such lines are neither
requests nor rejects. What counts as an event is data: the `[events]` table of a dialect
(parsers/haproxy.toml), a list of (kind, RE2 regex) tried in order on the message (the line
without its syslog prefix), group 1 naming the server or proxy.

The ingest reads a batch as usual; the lines that are not requests are offered here before
they become rejects:

    ... CREATE TEMP TABLE __not_rows AS SELECT *, <events.matches_sql(cf)> AS __event ...
    n_events = events.insert_events(con, cf, "(SELECT * FROM __not_rows WHERE __event)", params, tz)
    ... INSERT INTO rejects ... FROM __not_rows WHERE NOT __event

so rows + rejects + events = lines holds.

Time of an event: HAProxy's own accept date in the message when it has one (connection
errors: ms, a year), else the syslog prefix's timestamp. RFC 3164 ("Nov 22 12:47:07") has
no year: it is the year that puts the event closest to the nearest request of the same
source (the previous one in the file, else the next one), so a log from 2014 read today
stays in 2014 and a file crossing New Year gets both years right. The nearest requests are
the lines just before and after the event's run of lines that are not requests (events
and rejects in a row), when the ingest gives those lines (`others`); else (Spark's driver,
which holds only the requests around its events) the requests within NEAR_LINES lines. An
event with no request that near (a file of events only) takes the latest year that does not
put it more than a day into the future.
"""

from __future__ import annotations

import re
from typing import Any

from logan import schema
from logan.read.compile import CompiledFormat, strip_prefix_sql
from logan.read.convert import Typed, _local_to_utc, _strptime, sql_str
from logan.store import filter_pushdown

_RFC3164 = "%Y %b %d %H:%M:%S"


def _kinds(cf: CompiledFormat) -> list[dict]:
    return list(cf.dialect.events.get("kinds", []))


def _message_sql(cf: CompiledFormat, line: str = "line") -> str:
    """The line without its prefix (the same cut the split path makes)."""
    return strip_prefix_sql(cf.dialect, line)


def matches_sql(cf: CompiledFormat, line: str = "line") -> str:
    """SQL predicate over a line: it is one of the dialect's events ('false' if it has none)."""
    kinds = _kinds(cf)
    if not kinds:
        return "false"
    any_kind = "|".join(f"(?:{k['regex']})" for k in kinds)
    return f"regexp_matches({_message_sql(cf, line)}, {sql_str(any_kind)})"


# How far (in lines) an event looks for the request whose year it takes, without `others`:
# the lines around it, not the whole batch (sorting a batch's requests per batch cost 50 ms).
NEAR_LINES = 50


def insert_events(
    con: Any, cf: CompiledFormat, rel: str, params: dict[str, Any], tz: str = "UTC", others: str | None = None
) -> int:
    """Insert the lines of `rel` (line_no, line) that are events into `events`; return how
    many. `params` needs "source" and "ingest_id" (the requests whose year an event may
    take are this ingest's own); the lines of `rel` that are not events are left alone.
    `others`: a relation of the line_no of every line of the batch that is not a request
    (its events and rejects); an event's year then comes from the requests just outside
    its run of such lines."""
    kinds = _kinds(cf)
    if not kinds:
        return 0
    # The first kind that matches, by its position: the server then comes from that kind's
    # regex alone (one regex per kind to plan, not one per kind for each column).
    which = " ".join(f"WHEN regexp_matches(msg, {sql_str(k['regex'])}) THEN {i}" for i, k in enumerate(kinds))
    names = [f"WHEN {i} THEN {sql_str(k['kind'])}" for i, k in enumerate(kinds)]
    servers = [
        f"WHEN {i} THEN nullif(regexp_extract(msg, {sql_str(k['regex'])}, 1), '')"
        for i, k in enumerate(kinds)
        if re.compile(k["regex"]).groups
    ]
    server_sql = f"CASE __kind {' '.join(servers)} END" if servers else "CAST(NULL AS VARCHAR)"
    msgs = f"SELECT line_no, line, {_message_sql(cf)} AS msg FROM {rel} WHERE {matches_sql(cf)}"
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE __events AS SELECT *, CASE {which} END AS __kind FROM ({msgs})"
    )
    n, lo, hi = con.execute(
        f"SELECT (SELECT count(*) FROM __events), min(line_no), max(line_no) FROM {others or '__events'}"
    ).fetchall()[0]
    if not n:
        con.execute("DROP TABLE __events")
        return 0
    found = (
        f"SELECT line_no, line, msg, CASE __kind {' '.join(names)} END AS kind, {server_sql} AS server "
        "FROM __events"
    )
    timed = _with_time(cf, found, tz, others)
    ingest_id = params["ingest_id"]
    params = {"source": params["source"]}
    if "$lo" in timed:
        near = 1 if others else NEAR_LINES
        params |= {"ingest_id": ingest_id, "lo": lo - near, "hi": hi + near}
    try:
        with filter_pushdown(con):  # or every batch scans every request stored so far
            n = con.execute(
                "INSERT INTO events (ts, source, line_no, kind, server, text) "
                f"SELECT ts, $source, line_no, kind, server, msg FROM ({timed})",
                params,
            ).fetchall()[0][0]
    finally:
        con.execute("DROP TABLE __events")
    return int(n)


def _with_time(cf: CompiledFormat, found: str, tz: str, others: str | None) -> str:
    """Add `ts`: the message's own date, else the prefix's (with a year for RFC 3164)."""
    ev = cf.dialect.events
    # Each date text is a column of its own layer: written out where it is used, the year
    # choice repeats it a dozen times and DuckDB plans every repeat (inserting a batch's
    # events took 20 ms, 14 ms in layers).
    texts: list[str] = []
    years: list[str] = []
    candidates: list[str] = []
    if ev.get("time"):
        texts.append(f"regexp_extract(msg, {sql_str(ev['time'])}, 1) AS __own_date")
        candidates.append(_strptime("__own_date", ev["time_format"], tz).sql)
    timed = [p for p in cf.dialect.prefixes.values() if p.get("time")]
    for i, p in enumerate(timed):
        text = f"__prefix_date{i}"  # NULL unless the line starts with this prefix
        is_it = f"regexp_matches(line, {sql_str('^(?:' + p['regex'] + ')')})"
        value = f"CASE WHEN {is_it} THEN regexp_extract(line, {sql_str(p['time'])}, 1) END"
        if p["time_format"] == "rfc3164":
            texts.append(f"regexp_replace({value}, '  +', ' ') AS {text}")  # "Nov  7": one space
            years += [f"{_in_year(text, k, tz)} AS {text}_{k}" for k in _YEARS]
            candidates.append(_rfc3164_sql(text))
        else:
            texts.append(f"{value} AS {text}")
            candidates.append(_iso8601(text, tz).sql)
    ts = f"coalesce({', '.join(candidates)})" if candidates else "CAST(NULL AS TIMESTAMP)"
    if texts:
        found = f"SELECT *, {', '.join(texts)} FROM ({found})"
    if not years:
        return f"SELECT *, {ts} AS ts FROM ({found})"
    # The nearest request of this source before the event, else after it: its year.
    near = (
        f"(SELECT line_no AS r_line, ts_start AS r_ts FROM {schema.REQUESTS_TABLE} "
        "WHERE ingest_id = $ingest_id AND ts_start IS NOT NULL AND line_no BETWEEN $lo AND $hi "
        f"AND line_no IN ({_candidates_sql(others)}))"
    )
    # One ordered pass over events and requests together (an ASOF join became a nested
    # loop here: events x requests rows).
    before = "last_value(r_ts IGNORE NULLS) OVER (ORDER BY line_no ROWS UNBOUNDED PRECEDING)"
    after = (
        "first_value(r_ts IGNORE NULLS) "
        "OVER (ORDER BY line_no ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)"
    )
    both = (
        f"SELECT *, true AS __ev, CAST(NULL AS TIMESTAMP) AS r_ts FROM ({found}) "
        f"UNION ALL BY NAME SELECT r_line AS line_no, r_ts, false AS __ev FROM {near}"
    )
    refs = f"SELECT *, coalesce({before}, {after}) AS __ref FROM ({both})"
    events_only = (
        f"SELECT * EXCLUDE (__ev, r_ts), __ref IS NOT NULL AS __ref_is_request FROM ({refs}) WHERE __ev"
    )
    return f"SELECT *, {ts} AS ts FROM (SELECT *, {', '.join(years)} FROM ({events_only}))"


def _candidates_sql(others: str | None) -> str:
    """The line numbers where an event's nearest requests may be: the line before and the
    line after each run of consecutive lines of `others` (two per run, where the NEAR_LINES
    lines around each event were 101: the window over them took 0.1 s a batch on HAProxy
    lines from the corpus, a fifth of the ingest), else the lines within NEAR_LINES."""
    if others is None:
        return f"SELECT unnest(range(line_no - {NEAR_LINES}, line_no + {NEAR_LINES} + 1)) FROM __events"
    runs = f"SELECT line_no, line_no - row_number() OVER (ORDER BY line_no) AS __run FROM {others}"
    return f"SELECT unnest([min(line_no) - 1, max(line_no) + 1]) FROM ({runs}) GROUP BY __run"


def _iso8601(text: str, tz: str) -> Typed:
    """2016-08-21T01:20:37+00:00, with a fraction or Z; local time in `tz` without an offset."""
    zoned = f"regexp_matches({text}, '(?:Z|[+-]\\d{{2}}:?\\d{{2}})$')"
    return Typed(
        f"CASE WHEN {zoned} THEN CAST(TRY_CAST({text} AS TIMESTAMPTZ) AS TIMESTAMP) "
        f"ELSE {_local_to_utc(f'TRY_CAST({text} AS TIMESTAMP)', tz)} END"
    )


# The years an RFC 3164 date may be in, around the reference's (see the module doc).
_YEARS = {"prev": -1, "same": 0, "next": 1}


def _in_year(day: str, which: str, tz: str) -> str:
    """The date `day` ("Nov 7 17:58:52") in the reference's year, or the one before or after."""
    year = f"CAST(year(coalesce(__ref, current_timestamp::TIMESTAMP)) + ({_YEARS[which]}) AS VARCHAR)"
    return _local_to_utc(f"try_strptime({year} || ' ' || {day}, {sql_str(_RFC3164)})", tz)


def _rfc3164_sql(day: str) -> str:
    """The instant of RFC 3164 date `day`, in the year chosen against __ref (see the module
    doc), from the columns <day>_prev, <day>_same and <day>_next (_in_year)."""
    prev, same, nxt = (f"{day}_{k}" for k in _YEARS)

    def dist(c: str) -> str:
        return f"coalesce(abs(epoch({c}) - epoch(__ref)), 1e18)"

    closest = (
        f"CASE WHEN {dist(same)} <= least({dist(prev)}, {dist(nxt)}) THEN {same} "
        f"WHEN {dist(prev)} <= {dist(nxt)} THEN {prev} ELSE {nxt} END"
    )
    not_future = (
        f"CASE WHEN {same} <= current_timestamp::TIMESTAMP + INTERVAL 1 DAY THEN {same} ELSE {prev} END"
    )
    return f"CASE WHEN __ref_is_request THEN {closest} ELSE {not_future} END"
