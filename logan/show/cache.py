"""How `logan cache` is shown to people: the headline, the table of what each TTL saves
(TTL and times in s/min/h, ratios in %, counts as 7.1M) and the requests no cache would
answer, by reason. Programs get the answer's own columns (logan.show.writers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from logan.show.writers import Output, write_frame_data, write_human
from logan.units import format_count, format_us, missing

if TYPE_CHECKING:
    from logan.answer.cache import CacheAnswer


def _pct(x: object) -> str:
    return "-" if missing(x) else f"{float(x):.0%}"


def _us(x: object) -> str:
    return format_us(None if missing(x) else float(x))


# (heading, column, format, how readily it gives way to a narrow terminal: 0 never)
_COLUMNS = [
    ("keys", "keys", format_count, 3),
    ("ttl", "ttl_s", lambda s: format_us(float(s) * 1e6), 0),
    ("caches", "workers", str, 0),
    ("requests", "requests", format_count, 0),
    ("per min", "per_minute", lambda x: f"{float(x):,.0f}" if float(x) >= 10 else f"{float(x):.2g}", 2),
    ("reuse p50", "reuse_p50_us", _us, 2),
    ("hit ratio", "hit_ratio", _pct, 0),
    ("waited", "waited", format_count, 4),
    ("revalidated", "revalidations", format_count, 4),
    ("backend", "backend_requests", format_count, 1),
    ("server time", "total_us", _us, 1),
    ("saved", "saved_us", _us, 0),
    ("saved %", "saved_share", _pct, 0),
]


def write_cache(answer: CacheAnswer, output: Output) -> None:
    """The answer's table for programs; for people the headline, the table and the
    exclusions."""
    if not output.human:
        write_frame_data(answer.table, output)
        return
    t = answer.table
    if t.empty:  # the headline says why; no empty table under it
        write_human([], [], [], output, answer.headline)
        _write_exclusions(answer, output)
        return
    group = next(c for c in ("key", "route", "indirector") if c in t.columns)
    shown = [c for c in _COLUMNS if c[1] in t.columns and (c[1] != "revalidations" or t[c[1]].any())]
    cols = [group, *(c[0] for c in shown)]
    rows = [
        ["-" if missing(r[group]) else str(r[group]), *(fmt(r[col]) for _, col, fmt, _ in shown)]
        for r in t.to_dict("records")
    ]
    left = [True] + [False] * len(shown)
    give = [0, *(c[3] for c in shown)]
    write_human(cols, rows, left, output, answer.headline, give)
    _write_exclusions(answer, output)


def _write_exclusions(answer: CacheAnswer, output: Output) -> None:
    ex = answer.exclusions
    if len(ex):
        rows = [[r.reason, format_count(r.requests), _pct(r.share), _us(r.total_us)] for r in ex.itertuples()]
        write_human(["reason", "requests", "share", "server time"], rows, [True, False, False, False], output)
