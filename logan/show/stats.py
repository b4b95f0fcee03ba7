"""How the stats answers are shown to people: which columns, in which units, as what.

A stats table gets ms/s, 7.1M and % cells, and only the timers the log has; a view gets the
picture it is known for (ab's percentile list, hey's histogram, the slowest requests...).
Programs get the answer's own columns instead (logan.show.writers).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from logan.answer.stats import TIMERS
from logan.answer.views import Records
from logan.show.writers import write_data, write_human
from logan.units import format_bytes, format_count, format_us, missing

# (heading, column, formatter) for the cells people read; a text column is left-aligned.
Spec = list[tuple[str, str, Callable[[Any], str]]]


def _text(value: object) -> str:
    # log content as it is: rich Text, markdown_escape and safe_csv make it inert later
    return str(value)


def write_stats(
    table: Records,
    output: str,
    out: Path | None = None,
    dims: list[str] | None = None,
    head: str = "",
    total_requests: int = 0,
) -> None:
    """Write a stats_records() table to stdout (or `out` for parquet) in the chosen form."""
    if output in ("table", "markdown"):
        cols, rows, left = human_rows(table, dims or [], total_requests)
        write_human(cols, rows, left, output, head)
    else:
        write_data(table, output, out)


def spec_rows(table: Records, dims: list[str], spec: Spec) -> tuple[list[str], list[list[str]], list[bool]]:
    """Headings, cells and which columns are text: `dims` as they are, then each spec
    column the data fills (a column the log cannot fill, e.g. no upstream timer, is left out)."""
    spec = [s for s in spec if s[1] in table.columns and not _empty(table, s[1])]
    cols = dims + [s[0] for s in spec]
    left = [True] * len(dims) + [fmt is _text for _, _, fmt in spec]
    rows = []
    for r in table.rows:
        cells = ["-" if missing(r[d]) else str(r[d]) for d in dims]
        cells += ["-" if missing(r[src]) else fmt(r[src]) for _, src, fmt in spec]
        rows.append(cells)
    return cols, rows, left


def _empty(table: Records, column: str) -> bool:
    return all(missing(r[column]) for r in table.rows)


def human_rows(
    table: Records, dims: list[str], total_requests: int
) -> tuple[list[str], list[list[str]], list[bool]]:
    """Columns and cells for people: ms/s, 7.1M, %; only the timers the log has."""
    pct = _percent
    spec: Spec = [
        ("requests", "requests", format_count),
    ]
    if total_requests and ("share" not in table.columns or _empty(table, "share")):
        # no times in the log: the share of requests is the next best answer
        spec.append(("% req", "requests", lambda n: pct(n / total_requests)))
    spec += [
        ("% time", "share", pct), ("total", "total_us", format_us),
        ("avg", "avg_us", format_us), ("p50", "p50_us", format_us),
        ("p95", "p95_us", format_us), ("p99", "p99_us", format_us),
        ("max", "max_us", format_us), ("5xx", "error_share", pct),
        ("bytes", "bytes", format_bytes),
    ]  # fmt: skip
    for timer in TIMERS:
        spec += [(f"{timer} avg", f"{timer}_avg_us", format_us),
                 (f"{timer} p95", f"{timer}_p95_us", format_us)]  # fmt: skip
    spec += [("in SLO", "slo_share", pct), ("apdex", "apdex", _fixed2)]
    return spec_rows(table, dims, spec)


# --- Views (--view) -------------------------------------------------------------------------
def write_view(
    table: Records, name: str, output: str, out: Path | None, dims: list[str], question: str
) -> None:
    """Write a named_records() table: the DataFrame for programs, a shaped table for people."""
    if output not in ("table", "markdown"):
        write_data(table, output, out)
        return
    if not table.rows or (name == "percentiles" and not table.rows[0]["requests"]):
        write_human([], [], [], output, f"{question}\nNo request matches (with a response time).")
        return
    if name == "percentiles":
        cols, rows, left = percentile_rows(table)
    elif name == "histogram":
        cols, rows, left = histogram_rows(table)
    else:
        grouped = dims if name in ("pareto", "apdex", "cache") else []
        cols, rows, left = spec_rows(table, grouped, _view_spec(name))
        if name == "pareto":  # the rank reads first
            cols, left = ["rank", *cols], [False, *left]
            rows = [[str(r["rank"]), *row] for r, row in zip(table.rows, rows, strict=True)]
    write_human(cols, rows, left, output, question)


def percentile_rows(table: Records) -> tuple[list[str], list[list[str]], list[bool]]:
    """ab's 'Percentage of the requests served within a certain time' as rows."""
    r = table.rows[0]
    rows = []
    for q in (50, 66, 75, 80, 90, 95, 98, 99, 100):
        label = f"{q}%" + (" (longest request)" if q == 100 else "")
        rows.append([label, format_us(r[f"p{q}_us"])])
    return ["served within", f"time ({format_count(r['requests'])} requests)"], rows, [True, False]


BAR_WIDTH = 40
_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(fraction: float, width: int = BAR_WIDTH) -> str:
    """A bar `fraction` of `width` long, in eighths of a character (█ and ▏..▉)."""
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    return "█" * (eighths // 8) + (_EIGHTHS[eighths % 8] if eighths % 8 else "")


def histogram_rows(table: Records) -> tuple[list[str], list[list[str]], list[bool]]:
    """hey's response time histogram: one row per log-scale bucket, bars scaled to the
    largest bucket."""
    most = max((r["requests"] for r in table.rows), default=0)
    rows = [
        [f"{format_us(r['lo_us'])} - {format_us(r['hi_us'])}", format_count(r["requests"]),
         _percent(r["share"]), _percent(r["cumulative_share"]), bar(r["requests"] / most)]
        for r in table.rows
    ]  # fmt: skip
    return ["latency", "requests", "%", "cumulative", ""], rows, [True, False, False, False, True]


def _view_spec(name: str) -> Spec:
    count, us, pct = format_count, format_us, _percent
    specs: dict[str, Spec] = {
        "slowest": [
            ("start (UTC)", "ts_start", _text), ("duration", "duration_us", us),
            ("ttfb", "ttfb_us", us), ("upstream", "upstream_us", us), ("queue", "queue_us", us),
            ("status", "status", _text), ("method", "method", _text), ("vhost", "vhost", _text),
            ("path", "path", _text), ("query", "query", _text),
            ("bytes", "bytes_sent", format_bytes), ("requester", "requester", _text),
            ("indirector", "indirector", _text), ("source", "source", _text),
            ("line", "line_no", _text),
        ],
        "pareto": [
            ("requests", "requests", count), ("total", "total_us", us), ("% time", "share", pct),
            ("cumulative", "cumulative_share", pct), ("% groups", "group_share", pct),
        ],
        "apdex": [
            ("timed", "timed_requests", count), ("in SLO", "slo_share", pct),
            ("apdex", "apdex", _fixed2),
        ],
        "cache": [
            ("requests", "requests", count), ("ok", "ok_share", pct),
            ("304", "not_modified_share", pct), ("clients", "clients", count),
            ("urls", "urls", count), ("total", "total_us", us), ("% time", "share", pct),
            ("p50", "p50_us", us), ("p95", "p95_us", us), ("sizes/url", "sizes_per_url", _fixed2),
            ("size cv", "size_cv", _fixed2), ("hits", "hit_share", pct),
            ("saved", "saved_us", us), ("% saved", "saved_share", pct),
        ],
    }  # fmt: skip
    return specs[name]


def _fixed2(x: float) -> str:
    return f"{x:.2f}"


def _percent(x: float) -> str:
    return "-" if missing(x) else f"{100 * x:.1f}%"
