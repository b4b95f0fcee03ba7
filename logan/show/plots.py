"""Pictures of where the time goes, for a post-mortem document: a log-scale latency histogram
per group, a latency-over-time heatmap, and the time-spent Pareto (matplotlib, PNG or SVG).

Each function takes the answer's rows (logan.answer.samples for the requests themselves,
the pareto view for the groups) and returns a matplotlib Figure, so a notebook shows it and
a test reads back what it draws; `save` writes it. Figures are made without pyplot (no
global state, no display needed). Group names come from logs: they are drawn as plain text
(control characters escaped, `$` never starts math).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import numpy as np

from logan.answer.filters import filter_sql
from logan.answer.samples import samples
from logan.answer.stats import named_records
from logan.answer.views import columns_named, dimension_columns, query_sql
from logan.errors import LoganError
from logan.show.console import inert
from logan.units import format_us, missing

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

KINDS = ("histogram", "heatmap", "pareto")
FORMATS = (".png", ".svg")
BINS_PER_DECADE = 10  # latency bins: 10 a decade, each 26% wider than the one before
TIME_BINS = 100
LABEL_MAX = 48  # characters of a group name drawn


def latency_edges(us: np.ndarray) -> np.ndarray:
    """Bin edges in µs, BINS_PER_DECADE to a decade, on whole decades around the data (from
    1 µs: a duration of 0 is counted in the first bin)."""
    lo = np.floor(np.log10(max(float(us.min()), 1.0)))
    hi = np.ceil(np.log10(max(float(us.max()), 1.0)) + 1e-9)
    return 10 ** np.linspace(lo, hi, int(round((hi - lo) * BINS_PER_DECADE)) + 1)


def label(values: tuple) -> str:
    """A group as drawn: its values joined, log content shown as text."""
    text = " ".join("-" if missing(v) else str(v) for v in values)
    text = text if len(text) <= LABEL_MAX else text[: LABEL_MAX - 1] + "…"
    return inert(text).replace("$", r"\$")


def top_groups(samples: pd.DataFrame, dims: list[str], top: int) -> list[tuple]:
    """The `top` groups by total time (largest first), ties by name."""
    totals = samples.groupby(dims, dropna=False)["duration_us"].sum()
    keyed = [(k if isinstance(k, tuple) else (k,), v) for k, v in totals.items()]  # one column: no tuple
    return [k for k, _ in sorted(keyed, key=lambda kv: (-kv[1], label(kv[0])))[:top]]


def _rows_of(samples: pd.DataFrame, dims: list[str], key: tuple) -> pd.DataFrame:
    mask = np.ones(len(samples), dtype=bool)
    for d, v in zip(dims, key, strict=True):
        mask &= samples[d].isna().to_numpy() if missing(v) else (samples[d] == v).to_numpy()
    return samples[mask]


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _us_axis(ax: Axes, which: str) -> None:
    """A log axis of durations, ticks written as people read them (1 ms, 10 ms, 1 s)."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis.set_major_locator(LogLocator(base=10))
    axis.set_major_formatter(FuncFormatter(lambda v, _: format_us(v)))


def histogram(samples: pd.DataFrame, dims: list[str], top: int = 8) -> Figure:
    """One step line per group (the `top` by total time): requests per log-scale latency bin."""
    if samples.empty:
        raise LoganError("no timed requests to draw")
    fig = _figure(9, 5)
    ax = fig.add_subplot()
    edges = latency_edges(samples["duration_us"].to_numpy())
    groups = top_groups(samples, dims, top)
    for key in groups:
        us = np.clip(_rows_of(samples, dims, key)["duration_us"].to_numpy(), edges[0], None)
        counts, _ = np.histogram(us, edges)
        ax.stairs(counts, edges, label=f"{label(key)} ({len(us):,})", linewidth=1.5)
    _us_axis(ax, "x")
    ax.set_xlabel("response time (log scale)")
    ax.set_ylabel(f"requests per bin ({BINS_PER_DECADE} bins a decade)")
    ax.set_title(f"Response time by {', '.join(dims)}: {_of(len(groups), samples, dims)} by total time")
    ax.legend(title=", ".join(dims), fontsize="small")
    ax.grid(True, which="major", alpha=0.3)
    return fig


def heatmap(samples: pd.DataFrame, dims: list[str] | None = None, top: int = 4) -> Figure:
    """Time on x (TIME_BINS buckets of start time), log latency bins on y, requests as
    colour; one panel for all requests, or one per group (the `top` by total time)."""
    from matplotlib.colors import LogNorm
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter, date2num
    from matplotlib.ticker import FuncFormatter

    if samples.empty:
        raise LoganError("no timed requests to draw")
    keys = top_groups(samples, dims, top) if dims else [()]
    fig = _figure(10, 1.0 + 2.6 * len(keys))
    t_all = date2num(samples["ts_start"].to_numpy())
    t_edges = np.linspace(t_all.min(), max(t_all.max(), t_all.min() + 1 / 86400), TIME_BINS + 1)
    l_edges = latency_edges(samples["duration_us"].to_numpy())
    axes = fig.subplots(len(keys), 1, sharex=True, squeeze=False)[:, 0]
    counts = [_cells(_rows_of(samples, dims, key) if dims else samples, t_edges, l_edges) for key in keys]
    norm = LogNorm(vmin=1, vmax=max(1, max(c.max() for c in counts)))  # one colour scale for every panel
    for ax, key, cells in zip(axes, keys, counts, strict=True):
        mesh = ax.pcolormesh(t_edges, l_edges, np.ma.masked_equal(cells.T, 0), norm=norm, cmap="viridis")
        _us_axis(ax, "y")
        ax.set_ylabel("response time")
        ax.set_title(label(key) if dims else "all requests", fontsize="medium")
    fig.colorbar(mesh, ax=list(axes), label="requests per cell", format=FuncFormatter(lambda v, _: f"{v:g}"))
    axes[-1].xaxis.set_major_locator(locator := AutoDateLocator())
    axes[-1].xaxis.set_major_formatter(ConciseDateFormatter(locator))
    axes[-1].set_xlabel("request start (UTC)")
    scope = f" by {', '.join(dims)}: {_of(len(keys), samples, dims)} by total time" if dims else ""
    fig.suptitle(f"Response time over time{scope}")
    return fig


def _cells(rows: pd.DataFrame, t_edges: np.ndarray, l_edges: np.ndarray) -> np.ndarray:
    """Requests per (time bucket, latency bin)."""
    from matplotlib.dates import date2num

    us = np.clip(rows["duration_us"].to_numpy(), l_edges[0], None)
    return np.histogram2d(date2num(rows["ts_start"].to_numpy()), us, [t_edges, l_edges])[0]


def pareto(table: pd.DataFrame, dims: list[str], top: int = 20) -> Figure:
    """The pareto view (queries/pareto.sql): each group's share of all server time as a bar
    (largest first) and the cumulative share as a line, for the `top` groups."""
    from matplotlib.ticker import PercentFormatter

    timed = table[table["total_us"].notna()].head(top)
    if timed.empty:
        raise LoganError("no timed requests to draw")
    fig = _figure(10, 5.5)
    ax = fig.add_subplot()
    x = np.arange(1, len(timed) + 1)
    ax.bar(x, timed["share"].to_numpy(dtype=float) * 100, color="tab:blue", label="share of server time")
    ax.plot(x, timed["cumulative_share"].to_numpy(dtype=float) * 100, color="tab:red", marker="o",
            label="cumulative share")  # fmt: skip
    ax.set_xticks(x, [label(tuple(r)) for r in timed[dims].itertuples(index=False)], rotation=60,
                  ha="right", fontsize="small")  # fmt: skip
    ax.set_ylim(0, 100)
    ax.yaxis.set_major_formatter(PercentFormatter())
    ax.set_ylabel("share of total server time")
    ax.set_xlabel(f"{', '.join(dims)} (largest first)")
    shown = (
        f"the top {len(timed)} of {len(table)} groups" if len(timed) < len(table) else f"{len(timed)} groups"
    )
    ax.set_title(f"Where the server time goes, by {', '.join(dims)}: {shown}")
    ax.legend(loc="center right")
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def _of(shown: int, samples: pd.DataFrame, dims: list[str]) -> str:
    total = samples.groupby(dims, dropna=False).ngroups
    return f"the top {shown} of {total} groups" if shown < total else f"{total} groups"


def figure(con: duckdb.DuckDBPyConnection, kind: str, by: list[str] | None = None, top: int | None = None,
           **filters) -> Figure:  # fmt: skip
    """The picture `kind` (KINDS) of the requests `filters` keep: grouped by `by` (the
    histogram and the Pareto default to indirector; the heatmap to one panel of all
    requests), the `top` groups (default: 8, 4, 20)."""
    if kind not in KINDS:
        raise LoganError(f"unknown picture {kind!r}; use {' | '.join(KINDS)}")
    if kind == "heatmap":  # grouped by method when not asked: one panel of all requests
        rows = samples(con, by or ["method"], **filters)
        return heatmap(rows, dimension_columns(by) if by else None, top or 4)
    by = by or ["indirector"]
    if kind == "histogram":
        return histogram(samples(con, by, start=False, **filters), dimension_columns(by), top or 8)
    return pareto(named_records(con, "pareto", by, None, **filters).frame(), dimension_columns(by), top or 20)


def columns_read(kind: str, by: list[str] | None = None, **filters) -> set[str]:
    """The `requests` columns figure() reads: all a store made for it needs."""
    view = "pareto" if kind == "pareto" else "samples"
    return columns_named(query_sql(view, by or ["indirector"]), filter_sql(filters)[0])


def check_path(path: Path) -> None:
    """A picture's file must say its format: .png or .svg."""
    if path.suffix.lower() not in FORMATS:
        raise LoganError(f"-o {path}: write a {' or '.join(FORMATS)} file")


def save(fig: Figure, path: Path) -> None:
    """Write the figure (PNG at 150 dpi, or SVG with its text as text: searchable, and
    selectable in a document) where `path` says."""
    from matplotlib import rc_context

    check_path(path)
    with rc_context({"svg.fonttype": "none"}):
        fig.savefig(path, dpi=150)
