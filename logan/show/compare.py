"""How a before/after comparison (logan.answer.compare) is shown: for people, one line per
group with A → B cells, the ratio of p95 and the change of total time, under a heading that
names both sides and counts the verdicts; for programs, every column of the answer (times
in microseconds) through logan.show.writers.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from logan.show.writers import Output, write_frame_data, write_human
from logan.units import format_count, format_us, missing

if TYPE_CHECKING:
    import pandas as pd

# (heading, statistic, how a value is written, how readily the column gives way: 0 never,
# the largest first). 80 columns keep the groups, the verdict, p95, its ratio and Δ total.
_PAIRS = [
    ("requests", "requests", format_count, 2),
    ("p50", "p50_us", format_us, 4),
    ("p95", "p95_us", format_us, 0),
    ("p99", "p99_us", format_us, 5),
    ("avg", "avg_us", format_us, 6),
    ("max", "max_us", format_us, 7),
    ("total", "total_us", format_us, 3),
]


def write_compare(table: pd.DataFrame, output: Output, dims: list[str], head: str, top: int | None) -> None:
    """The compare_sides() table in the chosen form; `top` rows for people (None: all)."""
    if not output.human:
        write_frame_data(table if top is None else table.head(top), output)
        return
    shown = table if top is None else table.head(top)
    cols = [*dims, "verdict", *(h for h, *_ in _PAIRS), "×p95", "Δ total"]
    left = [True] * (len(dims) + 1) + [False] * (len(_PAIRS) + 2)
    give = [0] * (len(dims) + 1) + [g for *_, g in _PAIRS] + [1, 0]
    rows = [_cells(r, dims) for r in shown.to_dict("records")]
    footer = (
        f"{len(shown):,} of {len(table):,} groups shown (--top 0 shows all)"
        if len(shown) < len(table)
        else ""
    )
    write_human(cols, rows, left, output, head, give, footer)


def _cells(r: dict, dims: list[str]) -> list[str]:
    cells = ["-" if missing(r[d]) else str(r[d]) for d in dims]
    cells.append(r["verdict"])
    cells += [f"{fmt(r[f'a_{stat}'])} → {fmt(r[f'b_{stat}'])}" for _, stat, fmt, _ in _PAIRS]
    cells.append("-" if missing(r["ratio_p95"]) else f"×{r['ratio_p95']:.2f}")
    delta = r["delta_total_us"]
    cells.append("-" if missing(delta) else ("+" if delta > 0 else "") + format_us(delta))
    return cells


def heading(table: pd.DataFrame, a: str, b: str, alpha: float, min_requests: int, min_change: float) -> str:
    """Which sides, how many requests each, and what changed beyond noise."""
    counts = table["verdict"].value_counts()
    found = [f"{counts[v]} {v}{'s' if counts[v] > 1 else ''}" for v in ("regression", "improvement")
             if v in counts]  # fmt: skip
    test = (f"Mann-Whitney U, false discovery rate {alpha:g}, median moved {min_change:.0%} or more, "
            f"at least {min_requests} timed requests a side")  # fmt: skip
    return (
        f"A: {a}, {format_count(table['a_requests'].sum())} requests\n"
        f"B: {b}, {format_count(table['b_requests'].sum())} requests\n"
        f"{', '.join(found) or 'no change'} beyond noise ({test})."
    )


def side_label(filters: dict, files: list[str] | None = None) -> str:
    """A side in words: its files, or its period."""
    if files:
        return ", ".join(files)
    since, until = filters.get("since"), filters.get("until")
    if since is None and until is None:
        return "every request"
    start = "the start" if since is None else _when(since)
    return f"{start} to {'the end' if until is None else _when(until)}"


def _when(t: str | datetime) -> str:
    return f"{t:%Y-%m-%d %H:%M:%S} UTC" if isinstance(t, datetime) else str(t)
