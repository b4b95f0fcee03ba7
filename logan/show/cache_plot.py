"""`logan cache --plot saved.png`: server time saved against TTL for the top groups, one line
each (solid: one shared cache; dashed: the per-process caches asked for), readable without
the table: a title, both axes with their units, a legend. Group names are log content:
they reach the picture as plain text (matplotlib's mathtext is off for them).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from logan.errors import LoganError
from logan.show.console import inert
from logan.units import format_us

if TYPE_CHECKING:
    from logan.answer.cache import CacheAnswer

LINES = 6  # groups drawn: more lines than this are not read
_UNITS = ((3600e6, "h"), (60e6, "min"), (1e6, "s"), (1e3, "ms"), (1, "us"))


def check_path(path: Path) -> None:
    """Refuse a place the chart cannot go before any log is read."""
    if not path.parent.is_dir():
        raise LoganError(f"--plot {path}: no directory {path.parent}")


def plot_saved(answer: CacheAnswer, path: Path) -> None:
    """Draw the chart into `path` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = answer.table
    if t.empty:
        raise LoganError("--plot: no cacheable requests to draw")
    group = next(c for c in ("key", "route", "indirector") if c in t.columns)
    names = list(dict.fromkeys(t[group].astype(str)))[:LINES]
    div, unit = next((u for u in _UNITS if t["saved_us"].max() >= u[0]), _UNITS[-1])
    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=110)
    for i, name in enumerate(names):
        mine = t[t[group].astype(str) == name]
        for workers, rows in mine.groupby("workers"):
            shared = workers == 1
            label = inert(name)[:60] + ("" if shared else f" ({workers} caches)")
            ax.plot(rows["ttl_s"], rows["saved_us"] / div, marker="o", color=f"C{i}",
                    linestyle="-" if shared else "--", label=label)  # fmt: skip
    ax.set_xscale("log")
    ttls = sorted(set(t["ttl_s"]))
    ax.set_xticks(ttls, [format_us(s * 1e6) for s in ttls])
    ax.minorticks_off()
    ax.set_xlabel("TTL (log scale)")
    ax.set_ylabel(f"server time saved ({unit})")
    ax.set_title(f"Server time a cache would have saved, by TTL: the top {len(names)} by {group}")
    ax.grid(True, which="both", alpha=0.3)
    legend = ax.legend(fontsize="small", loc="best")
    for text in legend.get_texts():
        text.set_usetex(False)
        text.set_parse_math(False)
    fig.tight_layout()
    try:
        fig.savefig(path, format="png")
    except OSError as exc:
        raise LoganError(f"--plot {path}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
