"""Events: lines that are not requests but messages worth keeping, into table `events`.

HAProxy logs "Server be/app3 is DOWN", "Proxy fe started", "Connect from ..." among its
requests; a post-mortem needs the moment a server went down, so such lines are neither
requests nor rejects. What counts as an event is data: the `[events]` table of a dialect
(parsers/haproxy.toml), a list of (kind, RE2 regex) tried in order on the message (the line
without its syslog prefix), group 1 naming the server or proxy.

The ingest reads a batch as usual; the lines that are not requests are offered here before
they become rejects:

    n_events = events.insert_events(con, cf, "(SELECT line_no, line FROM __left WHERE NOT __ok)",
                                    params, tz)
    ... INSERT INTO rejects ... WHERE NOT __ok AND NOT <events.matches_sql(cf)>

so rows + rejects + events = lines holds.

Time of an event: HAProxy's own accept date in the message when it has one (connection
errors: ms, a year), else the syslog prefix's timestamp. RFC 3164 ("Nov 22 12:47:07") has
no year: it is the year that puts the event closest to the nearest request of the same
source (the previous one in the file, else the next one, within NEAR_LINES lines), so a log
from 2014 read today stays in 2014 and a file crossing New Year gets both years right. An
event with no request that near (a file of events only) takes the latest year that does not
put it more than a day into the future.
"""

from __future__ import annotations

import re
from typing import Any

from logan.compile import CompiledFormat, prefix_regex
from logan.convert import Typed, _local_to_utc, _strptime, sql_str

_RFC3164 = "%Y %b %d %H:%M:%S"


def _kinds(cf: CompiledFormat) -> list[dict]:
    return list(cf.dialect.events.get("kinds", []))


def _message_sql(cf: CompiledFormat, line: str = "line") -> str:
    """The line without its prefix (the same cut the split path makes)."""
    prefix = prefix_regex(cf.dialect)
    if prefix is None:
        return line
    return f"substr({line}, length(regexp_extract({line}, {sql_str('^' + prefix)})) + 1)"


def matches_sql(cf: CompiledFormat, line: str = "line") -> str:
    """SQL predicate over a line: it is one of the dialect's events ('false' if it has none)."""
    kinds = _kinds(cf)
    if not kinds:
        return "false"
    any_kind = "|".join(f"(?:{k['regex']})" for k in kinds)
    return f"regexp_matches({_message_sql(cf, line)}, {sql_str(any_kind)})"


# How far (in lines) an event looks for the request whose year it takes: the lines around
# it, not the whole batch (sorting a batch's requests per batch cost 50 ms).
NEAR_LINES = 50


def insert_events(con: Any, cf: CompiledFormat, rel: str, params: dict[str, str], tz: str = "UTC") -> int:
    """Insert the lines of `rel` (line_no, line) that are events into `events`; return how
    many. `params` needs "source"; the lines of `rel` that are not events are left alone."""
    kinds = _kinds(cf)
    if not kinds:
        return 0
    kind_sql = (
        "CASE "
        + " ".join(
            f"WHEN regexp_matches(msg, {sql_str(k['regex'])}) THEN {sql_str(k['kind'])}" for k in kinds
        )
        + " END"
    )
    server_sql = (
        "CASE "
        + " ".join(
            f"WHEN regexp_matches(msg, {sql_str(k['regex'])}) THEN "
            + (
                f"nullif(regexp_extract(msg, {sql_str(k['regex'])}, 1), '')"
                if re.compile(k["regex"]).groups
                else "NULL"
            )
            for k in kinds
        )
        + " END"
    )
    msgs = f"SELECT line_no, line, {_message_sql(cf)} AS msg FROM {rel} WHERE {matches_sql(cf)}"
    con.execute(f"CREATE OR REPLACE TEMP TABLE __events AS {msgs}")
    lo, hi, n = con.execute("SELECT min(line_no), max(line_no), count(*) FROM __events").fetchall()[0]
    if not n:
        return 0
    found = f"SELECT line_no, line, msg, {kind_sql} AS kind, {server_sql} AS server FROM __events"
    timed = _with_time(cf, found, tz)
    params = {"source": params["source"]}
    if "$lo" in timed:
        params |= {"lo": lo - NEAR_LINES, "hi": hi + NEAR_LINES, "near": NEAR_LINES}
    # The ingest turns filter pushdown off for its parsing; the nearest-request lookup
    # needs it, or every batch scans every request of the source stored so far.
    con.execute("SET disabled_optimizers = ''")
    try:
        n = con.execute(
            "INSERT INTO events (ts, source, line_no, kind, server, text) "
            f"SELECT ts, $source, line_no, kind, server, msg FROM ({timed})",
            params,
        ).fetchall()[0][0]
    finally:
        con.execute("SET disabled_optimizers = 'filter_pushdown'")
        con.execute("DROP TABLE __events")
    return int(n)


def _with_time(cf: CompiledFormat, found: str, tz: str) -> str:
    """Add `ts`: the message's own date, else the prefix's (with a year for RFC 3164)."""
    ev = cf.dialect.events
    candidates: list[str] = []
    if ev.get("time"):
        own = _strptime(f"regexp_extract(msg, {sql_str(ev['time'])}, 1)", ev["time_format"], tz)
        candidates.append(own.sql)
    needs_year = False
    for p in cf.dialect.prefixes.values():
        if not p.get("time"):
            continue
        text = f"regexp_extract(line, {sql_str(p['time'])}, 1)"
        is_it = f"regexp_matches(line, {sql_str('^(?:' + p['regex'] + ')')})"
        if p["time_format"] == "rfc3164":
            needs_year = True
            value = _rfc3164_sql(text, tz)
        else:
            value = _iso8601(text, tz).sql
        candidates.append(f"CASE WHEN {is_it} THEN {value} END")
    ts = f"coalesce({', '.join(candidates)})" if candidates else "CAST(NULL AS TIMESTAMP)"
    if not needs_year:
        return f"SELECT *, {ts} AS ts FROM ({found})"
    # The nearest request of this source before the event, else after it (within
    # NEAR_LINES lines): its year.
    near = (
        "(SELECT line_no AS r_line, ts_start AS r_ts FROM requests "
        "WHERE source = $source AND ts_start IS NOT NULL AND line_no BETWEEN $lo AND $hi "
        "AND line_no IN (SELECT unnest(range(line_no - $near, line_no + $near + 1)) FROM __events))"
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
    return (
        f"SELECT *, {ts} AS ts FROM (SELECT * EXCLUDE (__ev, r_ts), __ref IS NOT NULL AS __ref_is_request "
        f"FROM ({refs}) WHERE __ev)"
    )


def _iso8601(text: str, tz: str) -> Typed:
    """2016-08-21T01:20:37+00:00, with a fraction or Z; local time in `tz` without an offset."""
    zoned = f"regexp_matches({text}, '(?:Z|[+-]\\d{{2}}:?\\d{{2}})$')"
    return Typed(
        f"CASE WHEN {zoned} THEN CAST(TRY_CAST({text} AS TIMESTAMPTZ) AS TIMESTAMP) "
        f"ELSE {_local_to_utc(f'TRY_CAST({text} AS TIMESTAMP)', tz)} END"
    )


def _rfc3164_sql(text: str, tz: str) -> str:
    """ "Nov  7 17:58:52" in `tz`, in the year chosen against __ref (see the module doc)."""
    day = f"regexp_replace({text}, '  +', ' ')"

    def in_year(offset: int) -> str:
        year = f"CAST(year(coalesce(__ref, current_timestamp::TIMESTAMP)) + ({offset}) AS VARCHAR)"
        return _local_to_utc(f"try_strptime({year} || ' ' || {day}, {sql_str(_RFC3164)})", tz)

    def dist(c: str) -> str:
        return f"coalesce(abs(epoch({c}) - epoch(__ref)), 1e18)"

    prev, same, nxt = in_year(-1), in_year(0), in_year(1)
    closest = (
        f"CASE WHEN {dist(same)} <= least({dist(prev)}, {dist(nxt)}) THEN {same} "
        f"WHEN {dist(prev)} <= {dist(nxt)} THEN {prev} ELSE {nxt} END"
    )
    not_future = (
        f"CASE WHEN {same} <= current_timestamp::TIMESTAMP + INTERVAL 1 DAY THEN {same} ELSE {prev} END"
    )
    return f"CASE WHEN __ref_is_request THEN {closest} ELSE {not_future} END"
