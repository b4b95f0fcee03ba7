"""The report's pictures as PNG bytes (matplotlib's Agg backend: no display, no fonts
fetched): a day's requests and p95 per hour against an earlier day, and a bar per group.

A label from a log line is text here too: matplotlib reads `$...$` as mathematics (a
malformed one stops the drawing), so dollars are escaped and control characters shown.
"""

from __future__ import annotations

import io
from datetime import datetime
from typing import TYPE_CHECKING

from logan.show.console import inert

if TYPE_CHECKING:
    import pandas as pd

WIDTH_IN, DPI = 7.0, 100  # 700 px wide: a mail column
MAX_LABEL = 40


def _pyplot():  # noqa: ANN202 - the module, loaded only when a chart is drawn (0.3 s)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def label_text(value: object) -> str:
    """A group's name as a chart label: shown as written, cut to MAX_LABEL characters."""
    text = inert(value)
    text = text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"
    return text.replace("$", r"\$")


def _png(fig) -> bytes:  # noqa: ANN001
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    _pyplot().close(fig)
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
    plt = _pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(WIDTH_IN, 4.2), sharex=True, layout="constrained")
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
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 0.9 + 0.32 * len(labels)), layout="constrained")
    positions = list(range(len(labels)))[::-1]
    ax.barh(positions, values, color="#1f5fa8")
    ax.set_yticks(positions, [label_text(s) for s in labels], fontsize="small")
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)
