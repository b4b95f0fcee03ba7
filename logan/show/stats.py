"""How the stats answers are shown to people: which columns, in which units, as what.

A stats table gets ms/s, 7.1M and % cells, and only the timers the log has; a view gets the
picture it is known for (ab's percentile list, hey's histogram, the slowest requests...).
Each column says how readily it gives way to a narrow terminal: the groups, the counts and
the total time never do, the bytes first. Programs get the answer's own columns instead
(logan.show.writers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from logan.answer.stats import TIMERS
from logan.answer.views import Records
from logan.errors import LoganError
from logan.show.writers import Output, write_data, write_human
from logan.units import format_bytes, format_count, format_us, missing


@dataclass(frozen=True)
class Col:
    """A column for people: its heading, the answer's column it shows, how, and how readily
    it gives way to a narrow terminal (0: never; the largest first)."""

    heading: str
    source: str
    fmt: Callable[[Any], str]
    give: int = 0


Cells = tuple[list[str], list[list[str]], list[bool], list[int]]


def _text(value: object) -> str:
    # log content as it is: console.inert, markdown_escape and safe_csv make it inert later
    return str(value)


def write_stats(
    table: Records,
    output: Output,
    dims: list[str] | None = None,
    head: str = "",
    total_requests: int = 0,
) -> None:
    """Write a stats_records() table to stdout (or a file for parquet) in the chosen form."""
    if output.human and not table.rows:
        write_human([], [], [], output, head)  # "No requests match.": no empty table under it
    elif output.human:
        cols, rows, left, give = human_rows(table, dims or [], total_requests)
        write_human(cols, rows, left, output, head, give, shown_of(table, "groups"))
    else:
        write_data(table, output)


def shown_of(table: Records, what: str) -> str:
    """'20 of 798 groups shown' when `top` cut the answer, else ''."""
    if table.total <= len(table.rows):
        return ""
    return f"{len(table.rows):,} of {table.total:,} {what} shown (--top 0 shows all)"


def spec_rows(table: Records, dims: list[str], spec: list[Col]) -> Cells:
    """Headings, cells, which columns are text, and how readily each gives way: `dims` as
    they are (never), then each spec column the data fills (a column the log cannot fill,
    e.g. no upstream timer, is left out)."""
    spec = [s for s in spec if s.source in table.columns and not _empty(table, s.source)]
    cols = dims + [s.heading for s in spec]
    left = [True] * len(dims) + [s.fmt is _text for s in spec]
    give = [0] * len(dims) + [s.give for s in spec]
    rows = []
    for r in table.rows:
        cells = ["-" if missing(r[d]) else str(r[d]) for d in dims]
        cells += ["-" if missing(r[s.source]) else s.fmt(r[s.source]) for s in spec]
        rows.append(cells)
    return cols, rows, left, give


def _empty(table: Records, column: str) -> bool:
    return all(missing(r[column]) for r in table.rows)


def check_columns(chosen: tuple[str, ...], view: str | None) -> None:
    """Refuse --columns that name no column of this answer, before any log is read."""
    spec = _stats_spec(1) if view is None else _view_specs().get(view, [])
    known = [s.heading for s in spec]
    unknown = [c for c in chosen if c not in known]
    if unknown:
        raise LoganError(f"--columns {', '.join(unknown)}: not a column here; use {', '.join(known)}")


def human_rows(table: Records, dims: list[str], total_requests: int) -> Cells:
    """Columns and cells for people: ms/s, 7.1M, %; only the timers the log has."""
    no_share = total_requests and ("share" not in table.columns or _empty(table, "share"))
    # no times in the log: the share of requests is the next best answer
    return spec_rows(table, dims, _stats_spec(total_requests if no_share else 0))


def _stats_spec(total_requests: int) -> list[Col]:
    pct = _percent
    spec = [Col("requests", "requests", format_count)]
    if total_requests:
        spec.append(Col("% req", "requests", lambda n: pct(n / total_requests)))
    spec += [
        Col("% time", "share", pct), Col("total", "total_us", format_us),
        Col("avg", "avg_us", format_us, 5), Col("p50", "p50_us", format_us, 6),
        Col("p95", "p95_us", format_us, 2), Col("p99", "p99_us", format_us, 1),
        Col("max", "max_us", format_us, 4), Col("5xx", "error_share", pct, 3),
        Col("bytes", "bytes", format_bytes, 9),
    ]  # fmt: skip
    for timer in TIMERS:
        spec += [Col(f"{timer} avg", f"{timer}_avg_us", format_us, 8),
                 Col(f"{timer} p95", f"{timer}_p95_us", format_us, 7)]  # fmt: skip
    spec += [Col("in SLO", "slo_share", pct, 1), Col("apdex", "apdex", _fixed2, 1)]
    return spec


# --- Views (--view) -------------------------------------------------------------------------
def write_view(table: Records, name: str, output: Output, dims: list[str], question: str) -> None:
    """Write a named_records() table: the DataFrame for programs, a shaped table for people."""
    if not output.human:
        write_data(table, output)
        return
    if not table.rows or (name == "percentiles" and not table.rows[0]["requests"]):
        write_human([], [], [], output, f"{question}\nNo request matches (with a response time).")
        return
    if name == "percentiles":
        cols, rows, left, give = percentile_rows(table)
    elif name == "histogram":
        cols, rows, left, give = histogram_rows(table)
    else:
        grouped = dims if name in ("pareto", "apdex", "cache") else []
        cols, rows, left, give = spec_rows(table, grouped, _view_specs()[name])
        if name == "pareto":  # the rank reads first
            cols, left, give = ["rank", *cols], [False, *left], [0, *give]
            rows = [[str(r["rank"]), *row] for r, row in zip(table.rows, rows, strict=True)]
    write_human(cols, rows, left, output, question, give, shown_of(table, "rows"))


def percentile_rows(table: Records) -> Cells:
    """ab's 'Percentage of the requests served within a certain time' as rows."""
    r = table.rows[0]
    rows = []
    for q in (50, 66, 75, 80, 90, 95, 98, 99, 100):
        label = f"{q}%" + (" (longest request)" if q == 100 else "")
        rows.append([label, format_us(r[f"p{q}_us"])])
    return ["served within", f"time ({format_count(r['requests'])} requests)"], rows, [True, False], [0, 0]


BAR_WIDTH = 40
_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(fraction: float, width: int = BAR_WIDTH) -> str:
    """A bar `fraction` of `width` long, in eighths of a character (█ and ▏..▉)."""
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    return "█" * (eighths // 8) + (_EIGHTHS[eighths % 8] if eighths % 8 else "")


def histogram_rows(table: Records) -> Cells:
    """hey's response time histogram: one row per log-scale bucket, bars scaled to the
    largest bucket (the bars give way first, then the cumulative share)."""
    most = max((r["requests"] for r in table.rows), default=0)
    rows = [
        [f"{format_us(r['lo_us'])} - {format_us(r['hi_us'])}", format_count(r["requests"]),
         _percent(r["share"]), _percent(r["cumulative_share"]), bar(r["requests"] / most)]
        for r in table.rows
    ]  # fmt: skip
    return (
        ["latency", "requests", "%", "cumulative", ""],
        rows,
        [True, False, False, False, True],
        [0, 0, 0, 1, 2],
    )


def _view_specs() -> dict[str, list[Col]]:
    count, us, pct, text = format_count, format_us, _percent, _text
    return {
        "slowest": [
            Col("start (UTC)", "ts_start", text), Col("duration", "duration_us", us),
            Col("ttfb", "ttfb_us", us, 5), Col("upstream", "upstream_us", us, 4),
            Col("queue", "queue_us", us, 6), Col("status", "status", text),
            Col("method", "method", text), Col("vhost", "vhost", text, 7), Col("path", "path", text),
            Col("query", "query", text, 8), Col("bytes", "bytes_sent", format_bytes, 9),
            Col("requester", "requester", text, 3), Col("indirector", "indirector", text, 2),
            Col("source", "source", text, 10), Col("line", "line_no", text, 1),
        ],
        "pareto": [
            Col("requests", "requests", count), Col("total", "total_us", us), Col("% time", "share", pct),
            Col("cumulative", "cumulative_share", pct), Col("% groups", "group_share", pct, 1),
        ],
        "apdex": [
            Col("timed", "timed_requests", count), Col("in SLO", "slo_share", pct),
            Col("apdex", "apdex", _fixed2),
        ],
        "cache": [
            Col("requests", "requests", count), Col("ok", "ok_share", pct, 6),
            Col("304", "not_modified_share", pct, 7), Col("per min", "per_minute", _fixed2, 12),
            Col("reuse p50", "reuse_p50_us", us, 12), Col("clients", "clients", count, 5),
            Col("urls", "urls", count, 4), Col("total", "total_us", us), Col("% time", "share", pct, 3),
            Col("p50", "p50_us", us, 8), Col("p95", "p95_us", us, 9),
            Col("sizes/url", "sizes_per_url", _fixed2, 10), Col("size cv", "size_cv", _fixed2, 11),
            Col("hits", "hit_share", pct, 2), Col("saved", "saved_us", us),
            Col("% saved", "saved_share", pct, 1),
        ],
    }  # fmt: skip


def _fixed2(x: float) -> str:
    return f"{x:.2f}"


def _percent(x: float) -> str:
    return "-" if missing(x) else f"{100 * x:.1f}%"
