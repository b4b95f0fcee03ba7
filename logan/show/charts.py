"""The report's pictures as PNG bytes (matplotlib's Agg backend: no display, no fonts
fetched): a day's requests and p95 per hour against an earlier day, a bar per group, and
the day's timeline with its incidents shaded.

A label from a log line is text here too: matplotlib reads `$...$` as mathematics (a
malformed one stops the drawing), so dollars are escaped and control characters shown.
"""

from __future__ import annotations

import io
from datetime import datetime
from typing import TYPE_CHECKING

from logan.show.console import inert

# What drawing a chart imports (0.8 s): a command that will draw starts on it early
# (logan.cli.options.warm).
CHART_MODULES = ("matplotlib.figure", "matplotlib.backends.backend_agg")

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from logan.answer.timeline import Story

WIDTH_IN, DPI = 7.0, 100  # 700 px wide: a mail column
MAX_LABEL = 40


def _figure(**kwargs: object):  # noqa: ANN202 - loaded only when a chart is drawn
    """A matplotlib Figure of its own: no pyplot, whose global figure list a page of PNGs
    does not need (and whose import costs another 0.1 s)."""
    from matplotlib.figure import Figure

    return Figure(layout="constrained", **kwargs)


def label_text(value: object) -> str:
    """A group's name as a chart label: shown as written, cut to MAX_LABEL characters."""
    text = inert(value)
    text = text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"
    return text.replace("$", r"\$")


def _png(fig) -> bytes:  # noqa: ANN001
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def _per_hour(frame: pd.DataFrame, start: datetime, column: str, hours: int, empty: float) -> list[float]:
    """`column` of queries/hourly.sql rows as one value per hour from `start` (`empty`
    where an hour had no request)."""
    values = [empty] * hours
    for hour, value in zip(frame["hour"], frame[column], strict=True):
        i = int((hour - start).total_seconds() // 3600)
        if 0 <= i < hours:
            values[i] = empty if value != value else float(value)  # NaN: no time logged
    return values


def day_chart(
    this: pd.DataFrame, before: pd.DataFrame, start: datetime, before_start: datetime, hours: int, tz: str
) -> bytes:
    """Requests and p95 per hour of a day of `hours` hours (queries/hourly.sql rows), the
    earlier day in grey."""
    fig = _figure(figsize=(WIDTH_IN, 4.2))
    top, bottom = fig.subplots(2, 1, sharex=True)
    edges = list(range(hours + 1))
    for frame, first, style in ((before, before_start, {"color": "#aaaaaa", "label": "a week before"}),
                                (this, start, {"color": "#1f5fa8", "label": "this day"})):  # fmt: skip
        if frame.empty:
            continue
        top.stairs(_per_hour(frame, first, "requests", hours, 0.0), edges, linewidth=1.5, **style)
        p95 = [v / 1000 for v in _per_hour(frame, first, "p95_us", hours, float("nan"))]
        bottom.stairs(p95, edges, linewidth=1.5, **style)
    top.set_ylabel("requests / hour")
    bottom.set_ylabel("p95 (ms)")
    bottom.set_xlabel(f"hour of the day (from midnight, {label_text(tz)})")
    bottom.set_xlim(0, hours)
    bottom.set_xticks(range(0, hours + 1, 3))
    top.legend(loc="upper left", fontsize="small", frameon=False)
    for ax in (top, bottom):
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    return _png(fig)


def bar_chart(labels: list[str], values: list[float], xlabel: str) -> bytes:
    """One horizontal bar per group, the first on top."""
    fig = _figure(figsize=(WIDTH_IN, 0.9 + 0.32 * len(labels)))
    ax = fig.subplots()
    positions = list(range(len(labels)))[::-1]
    ax.barh(positions, values, color="#1f5fa8")
    ax.set_yticks(positions, [label_text(s) for s in labels], fontsize="small")
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def timeline_chart(told: Story, incidents: pd.DataFrame) -> bytes:
    """The post-mortem picture (logan.show.timeline_plot) at a mail column's width."""
    return _png(timeline_report_figure(told, incidents))


def timeline_report_figure(told: Story, incidents: pd.DataFrame) -> Figure:
    from logan.show.timeline_plot import timeline_figure

    fig = timeline_figure(told, incidents)
    fig.set_size_inches(WIDTH_IN, 7.0)
    return fig
