"""The timeline as one picture for a post-mortem (`logan timeline --plot t.png`): stacked
panels sharing the time axis (requests/s; latency percentiles on a log axis; errors/s;
requests in flight and the queue), incidents shaded, server events marked, with titles,
units and legends. matplotlib's Agg backend: no display needed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from logan.errors import LoganError
from logan.show.console import inert

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from logan.answer.timeline import Story

FORMATS = (".png", ".svg")
MAX_SERIES = 8  # lines a panel can hold and still be read
PERCENTILES = (("p50_us", "p50"), ("p95_us", "p95"), ("p99_us", "p99"))
ERRORS = (("status_5xx", "5xx"), ("status_499", "499"), ("status_502", "502"), ("status_503", "503"),
          ("status_504", "504"))  # fmt: skip
STYLES = (":", "-", "--")  # p50, p95, p99: the p95 the strongest line
ERROR_STYLES = ("-", ":", "--", "-.", (0, (5, 1, 1, 1, 1, 1)))  # 5xx solid, then 499 ... 504


def check_plot_path(path: Path) -> None:
    """--plot must name a .png or .svg in a folder that exists (said before any reading)."""
    if Path(path).suffix.lower() not in FORMATS:
        raise LoganError(f"--plot {path}: give a file ending in {' or '.join(FORMATS)}")
    if not Path(path).resolve().parent.is_dir():
        raise LoganError(f"--plot {path}: no folder {Path(path).parent}")


def timeline_figure(
    told: Story, incidents: pd.DataFrame | None = None, dims: list[str] | None = None
) -> Figure:
    """The figure: one panel per question, one line per series (--by) and measure."""
    from matplotlib.figure import Figure

    frame = told.frame
    fig = Figure(figsize=(11, 10), layout="constrained")
    axes = fig.subplots(4, 1, sharex=True)
    series = list(frame.groupby(dims, dropna=False, sort=True)) if dims else [("", frame)]
    shown_of = f" (the {MAX_SERIES} busiest of {len(series)} series)" if len(series) > MAX_SERIES else ""
    series = sorted(series, key=lambda s: -s[1]["requests"].sum())[:MAX_SERIES]
    width_s = int(frame["width_us"].iloc[0]) / 1e6
    if dims and "source" in dims:
        series = _short_sources(series, dims.index("source"))
    # a series keeps its colour on every panel; a measure keeps its line style
    for i, (key, rows) in enumerate(series):
        name, colour = _name(key), f"C{i % 10}"
        _line(axes[0], rows, rows["rate"], f"{name}requests/s", colour)
        for (col, label), style in zip(PERCENTILES, STYLES, strict=True):
            if col in rows and rows[col].notna().any():
                _line(axes[1], rows, rows[col] / 1000, f"{name}{label}", colour, style)
        for (col, label), style in zip(ERRORS, ERROR_STYLES, strict=True):
            if col in rows and (rows[col] > 0).any():
                _line(axes[2], rows, rows[col] / width_s, f"{name}{label}", colour, style)
        if "in_flight_max" in rows:
            _line(axes[3], rows, rows["in_flight_max"], f"{name}in flight (max)", colour)
            _line(axes[3], rows, rows["in_flight_mean"], f"{name}in flight (mean)", colour, "--")
        for col, style in (("server_queue_max", "-."), ("backend_queue_max", ":")):
            if col in rows and (rows[col] > 0).any():
                _line(axes[3], rows, rows[col], f"{name}{col.split('_')[0]} queue (max)", colour, style)
    _dress(axes, width_s, _mark(axes, incidents, told.events))
    axes[1].set_yscale("log")
    fig.suptitle(_title(frame) + shown_of)
    return fig


def save_timeline_plot(told: Story, path: Path, incidents: pd.DataFrame | None = None,
                       dims: list[str] | None = None) -> None:  # fmt: skip
    """Draw the timeline to a .png or .svg file."""
    check_plot_path(path)
    timeline_figure(told, incidents, dims).savefig(path, dpi=110)


def _name(key: object) -> str:
    parts = key if isinstance(key, tuple) else (key,)
    shown = " ".join(_plain(p) for p in parts if p not in ("", None) and p == p)
    return f"{shown} " if shown else ""


def _short_sources(series: list, at: int) -> list:
    """The series with each source named without the folder all of them share: a legend of
    `/var/log/nginx/access.log`, `/var/log/nginx/error.log`... says it in the file names."""
    keys = [key if isinstance(key, tuple) else (key,) for key, _ in series]
    paths = [k[at] for k in keys if isinstance(k[at], str) and k[at].startswith("/")]
    if len(paths) < len(keys) or len(keys) < 2:
        return series
    common = os.path.commonpath(paths)
    cut = len(common) + 1 if common != "/" else 1
    return [((*k[:at], k[at][cut:], *k[at + 1 :]), rows) for k, (_, rows) in zip(keys, series, strict=True)]


def _plain(text: object) -> str:
    """Log content as literal text in a figure: control characters escaped, and no `$`
    starting matplotlib's math (a bad formula would stop the drawing)."""
    return inert(text).replace("$", r"\$")


def _line(
    ax: Axes, rows: pd.DataFrame, values: pd.Series, label: str, colour: str, style: object = "-"
) -> None:
    # times as naive UTC (matplotlib's dates): the axis is labelled UTC
    ax.plot(rows["start"].dt.tz_localize(None), values.astype("float64"), label=label, linewidth=1.2,
            drawstyle="steps-post", color=colour, linestyle=style)  # fmt: skip


def _dress(axes: list[Axes], width_s: float, note: str = "") -> None:
    titles = ("Request rate", "Latency percentiles (per bucket)", "Errors", "Requests in flight and queue")
    units = ("requests/s", "ms (log scale)", "responses/s", "requests")
    for ax, title, unit in zip(axes, titles, units, strict=True):
        ax.set_title(title, loc="left", fontsize=10)
        ax.set_ylabel(unit)
        ax.grid(True, alpha=0.3)
        _legend(ax)
    axes[-1].set_xlabel(f"request start, UTC (buckets of {width_s:g} s){note}")


# Server events drawn one by one with their kind, up to this many. A server flapping all
# day (7,379 events in a day of HAProxy lines from real logs) took matplotlib 100 s as a
# line and a label each and hid the data: more are ticks along the foot of the last panel.
NAMED_EVENTS = 30


def _mark(axes: list[Axes], incidents: pd.DataFrame | None, events: pd.DataFrame) -> str:
    """Incidents as shaded spans on every panel, labelled with their kind on the first;
    server events as vertical lines with their kind (or ticks, NAMED_EVENTS). What the x
    axis's label should add."""
    for inc in incidents.itertuples() if incidents is not None else []:
        a, b = inc.start.tz_localize(None), inc.end.tz_localize(None)
        for i, ax in enumerate(axes):
            ax.axvspan(a, b, color="tab:red", alpha=0.12, label=f"incident: {inc.kind}" if i == 0 else None)
        axes[0].annotate(inc.kind, (a, 1), xycoords=("data", "axes fraction"), va="top", fontsize=8)
    if len(events) > NAMED_EVENTS:  # ticks along the foot of the last panel
        last = axes[-1]
        last.vlines(events["ts"], 0, 0.05, transform=last.get_xaxis_transform(), colors="black",
                    linewidth=0.5, alpha=0.5)  # fmt: skip
        return f"; {len(events):,} server events, ticked at the foot"
    for e in events.itertuples() if len(events) else []:
        for ax in axes:
            ax.axvline(e.ts, color="black", linestyle=":", linewidth=1)
        axes[-1].annotate(f"{e.kind} {_plain(e.server or '')}", (e.ts, 0), xycoords=("data", "axes fraction"),
                          rotation=90, va="bottom", fontsize=7)  # fmt: skip
    return ""


def _legend(ax: Axes) -> None:
    """The legend beside its panel (the constrained layout makes room), never over a line:
    a spike hidden under a legend is the one a post-mortem looks for. One entry per label."""
    handles, labels = ax.get_legend_handles_labels()
    if not labels:  # a panel with nothing drawn (or only server events, unnamed lines)
        return
    shown = dict(zip(labels, handles, strict=True))
    ax.legend(shown.values(), shown.keys(), loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7,
              borderaxespad=0)  # fmt: skip


def _title(frame: pd.DataFrame) -> str:
    first, last = frame["start"].min(), frame["start"].max()
    requests = int(frame["requests"].sum())
    return f"Timeline {first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC, {requests:,} requests"
