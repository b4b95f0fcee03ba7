"""The nightly report as data: a list of sections, each a small function of a store's
connection, the period and the report's options that returns a Section (title, key figures
or tables, an optional chart, a one-line verdict). logan.show.report_html and
logan.show.report_text render a Report; neither computes anything.

SECTIONS is the one registry. A section listed without a function renders as "not
available in this version": plugging one in is giving it its function.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from logan import schema
from logan.answer import stats as st
from logan.answer.filters import filter_sql
from logan.answer.inputs import ReadOptions, requests_of
from logan.answer.views import ordered, query_path, run_records
from logan.errors import LoganError
from logan.show import charts
from logan.show.report_model import (
    NOT_AVAILABLE,
    Change,
    Figure,
    Period,
    Report,
    Section,
    Table,
    day_period,
    zone,
)
from logan.store import ANSWER_MEMORY_MB, within_memory
from logan.units import format_count, format_us, missing

if TYPE_CHECKING:
    import pandas as pd

# A change smaller than this (relative) is "about the same": no arrow says better or worse.
STEADY = 0.02


# --- The period ---------------------------------------------------------------------------
def last_complete_day(tz: str = "UTC", now: datetime | None = None) -> Period:
    """Yesterday in `tz`: the last day that is over."""
    now = now or datetime.now(UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return day_period(now.astimezone(zone(tz)).date() - timedelta(days=1), tz)


def parse_day(text: str | None, tz: str, con: duckdb.DuckDBPyConnection | None = None) -> Period:
    """--day: an ISO date, 'yesterday' (default) or 'latest' (the last day with requests)."""
    if text in (None, "", "yesterday"):
        return last_complete_day(tz)
    if text == "latest":
        newest = con.execute("SELECT max(ts_start) FROM requests").fetchall()[0][0] if con else None
        if newest is None:
            raise LoganError("--day latest: the store has no requests")
        return day_period(newest.replace(tzinfo=UTC).astimezone(zone(tz)).date(), tz)
    try:
        return day_period(date.fromisoformat(text), tz)
    except ValueError:
        raise LoganError(f"--day {text!r}: use a date (2026-11-23), yesterday or latest") from None


@dataclass(frozen=True)
class ReportOptions:
    """What a report shows: `by` groups where the time went and the cache candidates;
    `failed` and `missing` come from the job (sources it could not read or found no file
    for); `slos` are upper limits of headline figures (p95_us, error_share...)."""

    label: str = ""
    by: tuple[str, ...] = ("indirector",)
    top: int = 10
    charts: bool = True
    stale_us: int = 3_600_000_000  # a source whose newest request is this old stopped growing
    slos: dict[str, float] = field(default_factory=dict)
    failed: tuple[tuple[str, str], ...] = ()
    missing: tuple[str, ...] = ()
    # What sections of one report read alike, read once (see day_stats): build_report gives
    # every report an empty one.
    shared: dict = field(default_factory=dict, repr=False, compare=False)


SectionFn = Callable[[duckdb.DuckDBPyConnection, Period, ReportOptions], Section]


# --- Comparing figures --------------------------------------------------------------------
def change(now: float | None, before: float | None, kind: str, more_is_worse: bool | None) -> Change:
    """`now` against `before`: relative for counts and times, in percentage points for
    shares; within STEADY (2%) of each other it is the same."""
    if missing(now) or missing(before):
        return Change("-", "", None)
    if kind == "share":
        diff = (now - before) * 100
        text, same = f"{diff:+.2g} pp", abs(diff) < 0.05
    elif before == 0:
        return Change("new" if now else "=", "▲" if now else "=", more_is_worse if now else None)
    else:
        ratio = (now - before) / before
        text, same = f"{ratio:+.0%}", abs(ratio) < STEADY
    if same:
        return Change(text, "=", None)
    up = now > before
    return Change(text, "▲" if up else "▼", None if more_is_worse is None else up == more_is_worse)


# key, name, kind, more is worse
HEADLINE = [
    ("requests", "requests", "count", None),
    ("total_us", "server time", "us", True),
    ("p50_us", "p50", "us", True),
    ("p95_us", "p95", "us", True),
    ("p99_us", "p99", "us", True),
    ("error_share", "5xx share", "share", True),
]


def headline_figures(con: duckdb.DuckDBPyConnection, period: Period) -> dict[str, float | None]:
    """requests, total_us, p50/p95/p99_us and error_share (5xx) of the requests that
    started in `period` (queries/day_figures.sql)."""
    return st.view(con, "day_figures", **period.filters()).iloc[0].to_dict()


def headline_section(con: duckdb.DuckDBPyConnection, period: Period, options: ReportOptions) -> Section:
    now = headline_figures(con, period)
    prev = headline_figures(con, period.days_before(1))
    week = headline_figures(con, period.days_before(7))
    figures = [
        Figure(
            k, name, kind, now[k], change(now[k], prev[k], kind, worse), change(now[k], week[k], kind, worse)
        )
        for k, name, kind, worse in HEADLINE
    ]
    section = Section("headline", "The day in figures", headline_verdict(figures), figures)
    if not now["requests"]:
        section.verdict += days_held(con, period)
    breaches = [f"{f.name} over its SLO" for f in figures if f.key in options.slos and over(f, options)]
    if breaches:
        section.verdict += ", " + ", ".join(breaches)
    if options.charts and now["requests"]:
        this = st.view(con, "hourly", **period.filters())
        before = st.view(con, "hourly", **period.days_before(7).filters())
        week = period.days_before(7)
        section.chart = charts.day_chart(this, before, period.start, week.start, period.hours, period.tz)
        section.chart_alt = "requests and p95 per hour, against the same weekday a week before"
    return section


def days_held(con: duckdb.DuckDBPyConnection, period: Period) -> str:
    """When the day has no requests, which days the store's are of and how to report on
    the last: a log of last month reported on yesterday, or logs that stopped coming."""
    span = st.view(con, "span").iloc[0]
    if not span["requests"]:
        return ""
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    first, last = (
        (epoch + timedelta(microseconds=int(us))).astimezone(zone(period.tz)).date()
        for us in (span["first_us"], span["last_us"])
    )
    days = first.isoformat() if first == last else f"{first} to {last}"
    return f"; the store's are of {days} (--day latest reports on the last)"


def over(f: Figure, options: ReportOptions) -> bool:
    return not missing(f.value) and f.value > options.slos[f.key]


def headline_verdict(figures: list[Figure]) -> str:
    """The subject line's words: the p95 against the day before ('p95 +40%')."""
    by_key = {f.key: f for f in figures}
    if not by_key["requests"].value:
        return "no requests"
    p95 = by_key["p95_us"]
    if missing(p95.value):
        return f"{format_count(by_key['requests'].value)} requests, no response times"
    if p95.vs_previous.text in ("-", "new"):
        return f"p95 {format_us(p95.value)}"
    return f"p95 {p95.vs_previous.text}"


# --- The sections -------------------------------------------------------------------------
def day_stats(con: duckdb.DuckDBPyConnection, period: Period, options: ReportOptions) -> pd.DataFrame:
    """Every group of `by` in the period, most server time first (stats_records): the time
    section shows its top, the slower section compares it with the day before. Read once a
    report (options.shared): a pass over the day's requests with exact percentiles."""
    key = ("day_stats", period.start, period.end, options.by)
    if key not in options.shared:
        found = st.stats_records(con, by=options.by, sort="total", top=None, **period.filters())
        options.shared[key] = found.frame()
    return options.shared[key]


RANKED_KINDS = {"requests": "count", "total_us": "us", "share": "share", "p50_us": "us", "p95_us": "us",
                "p99_us": "us", "error_share": "share"}  # fmt: skip


def time_section(con: duckdb.DuckDBPyConnection, period: Period, options: ReportOptions) -> Section:
    """Where the time went: the groups of `by` with most server time."""
    dims = st.dimension_columns(options.by)
    frame = day_stats(con, period, options).head(options.top)
    section = Section("time", "Where the time went")
    if frame.empty:
        section.verdict = "no requests"
        return section
    frame = frame[[*dims, *RANKED_KINDS]]
    section.tables.append(Table(f"top {options.top} by server time", frame, RANKED_KINDS))
    first = frame.iloc[0]
    name = " ".join("-" if missing(first[d]) else str(first[d]) for d in dims)
    if not missing(first["share"]):
        section.verdict = f"{name}: {first['share']:.0%} of server time"
        if options.charts:
            labels = [
                " ".join("-" if missing(r[d]) else str(r[d]) for d in dims) for _, r in frame.iterrows()
            ]
            section.chart = charts.bar_chart(labels, list(frame["share"] * 100), "% of server time")
            section.chart_alt = "share of server time by group"
    return section


GROWTH_KINDS = {"requests": "count", "before": "count", "added": "count", "total_us": "us"}


def requesters_section(con: duckdb.DuckDBPyConnection, period: Period, options: ReportOptions) -> Section:
    """Requesters that sent more requests than the day before (new ones included), ranked
    in the engine (queries/requesters_grew.sql): only the top rows come out."""
    section = Section("requesters", "Requesters that grew")
    keys = [("added", True), ("requester", False), ("requester_group", False)]
    where, params = filter_sql({"since": period.days_before(1).start, "until": period.end})
    sql, top = ordered(query_path("requesters_grew").read_text(), keys, options.top)
    ranked = run_records(con, sql, where, [*params, period.start, *top]).frame()
    if ranked.empty or not ranked["day_requesters"].iloc[0]:
        section.verdict = "no requesters in the log"
        return section
    if not ranked["before_requests"].iloc[0]:
        section.verdict = "no requests the day before to compare with"
        return section
    grew = ranked[ranked["added"] > 0][["requester", "requester_group", *GROWTH_KINDS]]
    if grew.empty:
        section.verdict = "none sent more requests than the day before"
        return section
    table = Table("more requests than the day before", grew.reset_index(drop=True), GROWTH_KINDS)
    section.tables.append(table)
    new = int((grew["before"] == 0).sum())
    section.verdict = f"{len(grew)} grew" + (f", {new} new" if new else "")
    return section


def incidents_section(con: duckdb.DuckDBPyConnection, period: Period, options: ReportOptions) -> Section:
    """The day's incidents (logan.answer.incidents): bursts, slowdowns, errors, saturation,
    each with its most telling cause, and the day's timeline with them shaded."""
    from logan.answer.incidents import incidents_of
    from logan.answer.timeline import story

    section = Section("incidents", "Incidents", "no incidents")
    told = story(con, (), **period.filters())  # made once: the incidents are found on it, and it is drawn
    found = incidents_of(con, told, period.filters())
    if found.empty:
        return section
    cols = [c for c in ("start", "end", "kind", "change", "cause") if c in found.columns]
    table = found[cols].head(options.top).reset_index(drop=True)
    section.tables.append(Table("incidents of the day", table, {"start": "time", "end": "time"}))
    section.verdict = f"{len(found)} incident{'s' if len(found) > 1 else ''}"
    if options.charts:
        section.chart = charts.timeline_chart(told, found)
        section.chart_alt = (
            "the day's timeline (requests/s, latency, errors, requests in flight), incidents shaded"
        )
    return section


SLOWER_KINDS = {"a_requests": "count", "b_requests": "count", "a_p95_us": "us", "b_p95_us": "us",
                "ratio_p95": "ratio", "delta_total_us": "us"}  # fmt: skip


def slower_section(con: duckdb.DuckDBPyConnection, period: Period, options: ReportOptions) -> Section:
    """What got slower or faster than the day before, beyond noise (logan.answer.compare:
    a Mann-Whitney U test per group; A is the day before, B the day)."""
    from logan.answer.compare import Side, compare_sides

    section = Section("slower", "What got slower or faster", "nothing changed beyond noise")
    day_before = Side(con, period.days_before(1).filters())
    found = compare_sides(
        day_before, Side(con, period.filters(), day_stats(con, period, options)), options.by
    )
    changed = found[found["verdict"].isin(["regression", "improvement"])]
    if changed.empty:
        return section
    dims = st.dimension_columns(options.by)
    cols = [*dims, "verdict", *(c for c in SLOWER_KINDS if c in changed.columns)]
    table = changed[cols].head(options.top).reset_index(drop=True)
    section.tables.append(Table("against the day before (A: that day, B: this one)", table, SLOWER_KINDS))
    slower = int((changed["verdict"] == "regression").sum())
    section.verdict = f"{slower} slower, {len(changed) - slower} faster"
    return section


CACHE_KINDS = {"requests": "count", "hit_ratio": "share", "backend_requests": "count", "total_us": "us",
               "saved_us": "us", "saved_share": "share"}  # fmt: skip
CACHE_TTLS = "60s,1h"  # a micro-cache and one that holds an answer all hour: what is at stake


def cache_section(con: duckdb.DuckDBPyConnection, period: Period, options: ReportOptions) -> Section:
    """Cache candidates: what one shared cache with a 60 s and a 1 h TTL would have answered
    and saved, per route (or indirector), the requests of the day replayed through it
    (logan.answer.cache); its headline in words."""
    from logan.answer.cache import cache

    section = Section("cache", "Cache candidates", "nothing a cache could answer")
    by = next((b for b in options.by if b in ("route", "indirector")), "route")
    try:
        answer = cache(con, by=by, ttl=CACHE_TTLS, top=options.top, **period.filters())
    except LoganError as exc:  # no request a cache keeps, or the replay not built
        section.verdict = str(exc)
        return section
    if answer.table.empty:
        return section
    cols = [by, "ttl_s", *(c for c in CACHE_KINDS if c in answer.table.columns)]
    section.tables.append(Table("one shared cache, per TTL", answer.table[cols], CACHE_KINDS))
    section.verdict = answer.headline.splitlines()[0]
    return section


HEALTH_KINDS = {"lines": "count", "rows": "count", "rejects": "count", "requests": "count", "newest": "time"}


def source_health(con: duckdb.DuckDBPyConnection, period: Period) -> pd.DataFrame:
    """Per source (the `ingests` table): lines, rows and rejects read, the requests that
    started in the period and the newest request before its end."""
    return con.execute(
        f"""
        WITH r AS (
          SELECT ingest_id,
                 sum(CASE WHEN ts_start >= ? THEN 1 ELSE 0 END) AS requests,
                 max(ts_start) AS newest
          FROM {schema.REQUESTS_TABLE} WHERE ts_start < ? GROUP BY ingest_id
        )
        SELECT i.source, sum(i.lines) AS lines, sum(i.rows) AS rows, sum(i.rejects) AS rejects,
               CAST(coalesce(sum(r.requests), 0) AS BIGINT) AS requests, max(r.newest) AS newest
        FROM ingests AS i LEFT JOIN r ON r.ingest_id = i.ingest_id
        GROUP BY i.source ORDER BY i.source
        """,
        [period.start, period.end],
    ).df()


def source_state(row: pd.Series, period: Period, options: ReportOptions) -> str:
    source = row["source"]
    if isinstance(source, str) and Path(source).is_absolute() and not Path(source).exists():
        return "missing"
    if missing(row["newest"]):
        return "no requests"
    if (period.end - row["newest"].to_pydatetime()).total_seconds() * 1e6 > options.stale_us:
        return "stopped growing"
    return "ok"


def health_section(con: duckdb.DuckDBPyConnection, period: Period, options: ReportOptions) -> Section:
    """Ingest health: lines, rejects by reason, sources that failed, went missing or
    stopped growing."""
    import pandas as pd

    section = Section("health", "Ingest health")
    sources = source_health(con, period)
    sources["state"] = [source_state(r, period, options) for _, r in sources.iterrows()]
    extra = [(s, f"failed: {why}") for s, why in options.failed]
    extra += [(s, "missing: no file matches") for s in options.missing]
    if extra:
        added = pd.DataFrame({"source": [s for s, _ in extra], "state": [w for _, w in extra]})
        sources = pd.concat([added, sources], ignore_index=True)
    section.tables.append(Table("sources", sources, HEALTH_KINDS))
    reasons = con.execute(
        "SELECT reason, count(*) AS lines FROM rejects GROUP BY reason ORDER BY lines DESC, reason LIMIT ?",
        [options.top],
    ).df()
    if not reasons.empty:
        section.tables.append(Table("rejected lines by reason", reasons, {"lines": "count"}))
    bad = sources[sources["state"] != "ok"]
    lines, rejects = sources["lines"].fillna(0).sum(), sources["rejects"].fillna(0).sum()
    section.verdict = f"{format_count(lines)} lines, {format_count(rejects)} rejected"
    if len(bad):
        section.verdict += f"; {len(bad)} source{'s' if len(bad) > 1 else ''} not ok"
    return section


@dataclass(frozen=True)
class SectionSpec:
    key: str
    title: str
    build: SectionFn | None  # None: not in this version


SECTIONS: list[SectionSpec] = [
    SectionSpec("headline", "The day in figures", headline_section),
    SectionSpec("incidents", "Incidents", incidents_section),
    SectionSpec("slower", "What got slower or faster", slower_section),
    SectionSpec("time", "Where the time went", time_section),
    SectionSpec("cache", "Cache candidates", cache_section),
    SectionSpec("requesters", "Requesters that grew", requesters_section),
    SectionSpec("health", "Ingest health", health_section),
]
SECTION_KEYS = [s.key for s in SECTIONS]


def chosen(keys: Sequence[str] | None) -> list[SectionSpec]:
    """The sections named (all when None), in the report's order."""
    if keys is None:
        return list(SECTIONS)
    unknown = [k for k in keys if k not in SECTION_KEYS]
    if unknown:
        raise LoganError(f"unknown report section {unknown[0]!r}; use {', '.join(SECTION_KEYS)}")
    return [s for s in SECTIONS if s.key in keys]


def build_report(
    con: duckdb.DuckDBPyConnection,
    period: Period,
    options: ReportOptions = ReportOptions(),
    sections: Sequence[str] | None = None,
) -> Report:
    """The report of `period` over the store's `requests`: each chosen section's function
    run once, the ones this version lacks marked not available."""
    # cron mails whatever a job writes: no progress bar for the longer queries
    con.execute("SET enable_progress_bar = false")
    options = replace(options, shared={})
    made = []
    for spec in chosen(sections):
        if spec.build is None:
            made.append(Section(spec.key, spec.title, NOT_AVAILABLE, available=False))
        else:
            try:
                build = functools.partial(spec.build, con, period, options)
                section = within_memory(con, ANSWER_MEMORY_MB, build)  # what it reads let go after
            except LoganError as exc:  # nothing to say of this period (a day without requests)
                section = Section(spec.key, spec.title, str(exc))
            made.append(replace(section, title=spec.title))
    return Report(options.label, period, made, tuple(options.failed))


def report_of(
    files: Sequence[str] | None,
    db: str | Path | None,
    day: str | None = None,
    tz: str = "UTC",
    options: ReportOptions = ReportOptions(),
    sections: Sequence[str] | None = None,
    read: ReadOptions | None = None,
) -> Report:
    """The report of `day` (parse_day) over log FILES or a --db store, as every command
    reads them (logan.answer.inputs.requests_of)."""
    chosen(sections)  # unknown names, days and zones fail before any log is read
    if day != "latest":
        parse_day(day, tz)
    with requests_of(files, db, None, read) as store:
        return build_report(store.con, parse_day(day, tz, store.con), options, sections)
