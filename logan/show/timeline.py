"""How a timeline and its incidents are shown to people: one line per bucket with the few
columns that tell the story (rate, latency, errors, in flight), and the findings under it;
programs get every column (logan.show.writers), times in microseconds, timestamps in ISO
8601 UTC.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from logan.answer.views import Records
from logan.show.console import inert
from logan.show.stats import Col, spec_rows
from logan.show.writers import Output, write_frame_data, write_human
from logan.units import format_bytes, format_count, format_us

if TYPE_CHECKING:
    import pandas as pd


def _time(ts: object) -> str:
    return f"{ts:%Y-%m-%d %H:%M:%S}"


def _share(x: float) -> str:
    return f"{100 * x:.1f}%"


def _rate(x: float) -> str:
    return f"{x:,.1f}/s" if x < 100 else f"{x:,.0f}/s"


def _mean(x: float) -> str:
    return f"{x:.1f}"


TIMELINE_COLUMNS = [
    Col("start (UTC)", "start", _time),
    Col("requests", "requests", format_count),
    Col("rate", "rate", _rate),
    Col("p50", "p50_us", format_us, 4),
    Col("p95", "p95_us", format_us),
    Col("p99", "p99_us", format_us, 3),
    Col("max", "max_us", format_us, 5),
    Col("upstream p95", "upstream_p95_us", format_us, 6),
    Col("queue p95", "queue_p95_us", format_us, 6),
    Col("5xx", "status_5xx", format_count),
    Col("errors", "error_share", _share, 2),
    Col("bytes/s", "bytes_per_s", format_bytes, 7),
    Col("hits", "cache_hit_ratio", _share, 7),
    Col("in flight max", "in_flight_max", format_count),
    Col("in flight mean", "in_flight_mean", _mean, 1),
]
INCIDENT_COLUMNS = [
    Col("start (UTC)", "start", _time),
    Col("end (UTC)", "end", _time),
    Col("kind", "kind", str),
    Col("how much worse", "change", str),
    Col("first cause", "cause", str),
]


def records_of(df: pd.DataFrame) -> Records:
    """A DataFrame as the rows the table writers take (NaN and NA as None)."""
    rows = df.astype(object).where(df.notna(), None).to_dict("records")
    return Records(list(df.columns), [str(t) for t in df.dtypes], rows)


def write_timeline(df: pd.DataFrame, output: Output, dims: list[str], notes: list[str]) -> None:
    """The timeline for people (its notes, the saturation and events, under it) or programs."""
    if not output.human:
        write_frame_data(df, output)
        return
    cols, rows, left, give = spec_rows(records_of(df), dims, TIMELINE_COLUMNS)
    write_human(cols, rows, left, output, give=give, footer="\n".join(inert(n) for n in notes))


def write_incidents(df: pd.DataFrame, output: Output, head: str) -> None:
    """Incidents, one a line with its first cause, or every column for programs."""
    if not output.human:
        write_frame_data(df, output)
        return
    if df.empty:
        write_human([], [], [], output, head)
        return
    cols, rows, _, give = spec_rows(records_of(df), [], INCIDENT_COLUMNS)
    left = [c in ("kind", "how much worse", "first cause") for c in cols]  # text, folded to fit
    write_human(cols, rows, left, output, head, give)
