"""The terminal: answers on stdout, everything else (summaries, progress, errors) on stderr.

Cells are rich Text, never markup: a `[bold]` or `[link=...]` from a log line is shown as
written.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from logan.read.ingest import IngestSummary

# A report written to a file or pipe is not squeezed into 80 columns.
out = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True, highlight=False)


def print_table(cols: list[str], rows: list[list[str]], left: list[bool]) -> None:
    """Cells as a terminal table: text columns fold, number columns stay whole on the right."""
    t = Table(show_lines=False)
    for c, is_text in zip(cols, left, strict=True):
        if is_text:
            t.add_column(Text(c), overflow="fold")
        else:
            t.add_column(Text(c), justify="right", no_wrap=True)
    for row in rows:
        t.add_row(*[Text(v) for v in row])
    out.print(t)


def print_ingest_summary(s: IngestSummary) -> None:
    """The closing summary of an ingest, on stderr (stdout stays for answers)."""
    for src in s.sources:
        if src.detected:
            err.print(Text(f"{src.source}: {src.detected}"))
    t = Table(show_header=False, box=None, pad_edge=False)
    t.add_row("lines read", f"{s.lines:,}")
    t.add_row("requests", f"{s.rows:,}")
    t.add_row("rejects", f"{s.rejects:,}")
    if s.events:
        t.add_row("events", f"{s.events:,}")
    for reason, n in s.rejects_by_reason.items():
        t.add_row(Text(f"  {reason}"), f"{n:,}")
    bad = s.total("invalid_utf8")
    if bad:
        t.add_row("not UTF-8", f"{bad:,} lines kept, bytes written \\xhh")
    if s.ts_min is not None:
        t.add_row("time range", f"{s.ts_min:%Y-%m-%d %H:%M:%S} .. {s.ts_max:%Y-%m-%d %H:%M:%S} UTC")
    if s.tz_assumed:
        t.add_row("time zone", f"timestamps without an offset were read as {s.tz} (--tz)")
    if s.profile:
        t.add_row("profile", s.profile)
    mb = s.total("nbytes") / 1e6
    t.add_row("took", f"{s.seconds:.2f} s, {mb:,.1f} MB, {s.mb_per_s:,.0f} MB/s")
    err.print(t)
