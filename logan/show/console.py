"""The terminal: answers on stdout, everything else (summaries, progress, errors) on stderr.

Log content reaches the terminal as data: cells are rich Text, never markup (a `[bold]` or
`[link=...]` from a log line is shown as written), and control characters are shown
escaped (`inert`): an ESC from a user agent would otherwise recolour the terminal, retitle
it (OSC) or worse.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from logan.errors import LoganError

if TYPE_CHECKING:
    from logan.read.ingest import IngestSummary

# A report written to a file or pipe is not squeezed into 80 columns (unless COLUMNS says
# how wide to write, which rich reads itself).
out = Console(highlight=False, width=None if sys.stdout.isatty() or "COLUMNS" in os.environ else 200)
err = Console(stderr=True, highlight=False)

# C0 and C1 controls, DEL, and the Unicode marks that reorder or hide text (bidirectional
# overrides and isolates, as in "Trojan source"): never written as themselves.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def inert(text: object) -> str:
    """`text` with every control character written as an escape (\\x1b, \\n, \\u202e):
    what a terminal, a spreadsheet or a Markdown renderer shows as text."""
    return _CONTROLS.sub(lambda m: _NAMED.get(m.group(0)) or _escape(m.group(0)), str(text))


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def say(text: object, console: Console = out) -> None:
    """A line (or lines) of text from an answer, control characters escaped."""
    console.print(Text("\n".join(inert(line) for line in str(text).split("\n"))))


def say_error(message: str) -> None:
    """What a failed command leaves on stderr: one line, or a few when the message shows
    an example (a line of the log no format reads)."""
    text = "\n".join(inert(line) for line in message.split("\n"))
    err.print(Text(f"logan: {text}", style="red"), soft_wrap=True)


@dataclass(frozen=True)
class Fit:
    """How a table meets a narrow terminal: `wide` prints every column however wide the
    table gets; `columns` names the columns to print besides the ones that never give way."""

    wide: bool = False
    columns: tuple[str, ...] = ()


def print_table(
    cols: list[str],
    rows: list[list[str]],
    left: list[bool],
    give: list[int] | None = None,
    fit: Fit = Fit(),
    footer: str = "",
) -> None:
    """Cells as a terminal table: text columns fold, number columns stay whole on the right.

    `give` says how readily each column gives way to a narrow terminal (0: never; the
    largest first): a number is never cut to fit, its column is left out, and a line under
    the table says which and how to see them."""
    give = give or [0] * len(cols)
    cols = [inert(c) for c in cols]  # a `logan sql` PIVOT names columns after log content
    cells = [[inert(v) for v in row] for row in rows]
    widths = [max([cell_len(c), *(cell_len(r[i]) for r in cells)]) for i, c in enumerate(cols)]
    keep = _chosen(cols, give, fit)
    hidden: list[str] = []
    while not fit.wide and _table_width(widths, keep) > out.width:
        droppable = [i for i in keep if give[i] > 0]
        if not droppable:
            break  # the text columns fold to fit
        drop = max(droppable, key=lambda i: (give[i], i))
        keep.remove(drop)
        hidden.append(cols[drop])
    if fit.wide or _table_width(widths, keep) <= out.width:
        _print_ruled(
            [cols[i] for i in keep],
            [[r[i] for i in keep] for r in cells],
            [widths[i] for i in keep],
            [left[i] for i in keep],
        )
    else:
        out.print(_folding_table(cols, cells, left, widths, keep))
    notes = [footer] if footer else []
    if hidden:
        notes.append(
            f"left out to fit {out.width} columns: {', '.join(reversed(hidden))} "
            "(--wide shows every column, --columns picks them)"
        )
    for note in notes:
        out.print(Text(note, style="dim"))


def _table_width(widths: list[int], shown: list[int]) -> int:
    """What rich's default box makes of these columns: each its text, a space each side
    and a rule, and the rule that closes the row."""
    return sum(widths[i] + 3 for i in shown) + 1


def _print_ruled(cols: list[str], cells: list[list[str]], widths: list[int], left: list[bool]) -> None:
    """A table whose columns all fit, line by line as rich's Table draws it (its default
    box, a bold header). rich lays a table out cell by cell: 58.6 s for the 60,775 rows of
    `logan stats --by resource --top 0` on a realistic store, where nothing has to fold,
    against 6.0 s in all so. (And rich's print never draws wider than the terminal, so
    --wide squeezed the text columns to nothing on a narrow one.)"""
    edges = [w + 2 for w in widths]
    shape = box.HEAVY_HEAD

    def line(texts: list[str]) -> str:
        padded = (_pad(t, w, at_left) for t, w, at_left in zip(texts, widths, left, strict=True))
        return "│ " + " │ ".join(padded) + " │"

    header = Text(shape.get_top(edges) + "\n")
    for name, width, at_left in zip(cols, widths, left, strict=True):
        header.append(shape.head_left)
        header.append(f" {_pad(name, width, at_left)} ", style="bold")  # the cell bold, as rich's
    header.append(shape.head_right)
    out.print(header, crop=False, no_wrap=True, overflow="ignore")
    body = [
        shape.get_row(edges, "head"),
        *(line(row) for row in cells),
        shape.get_bottom(edges),
    ]
    out.file.write("\n".join(body) + "\n")


def _pad(text: str, width: int, at_left: bool) -> str:
    if at_left:
        return text + " " * (width - cell_len(text))
    text = text.rstrip()  # as rich's right justification
    return " " * (width - cell_len(text)) + text


def _folding_table(
    cols: list[str], cells: list[list[str]], left: list[bool], widths: list[int], keep: list[int]
) -> Table:
    """rich's Table where text columns must fold to fit the terminal."""
    t = Table(show_lines=False)
    for i in keep:
        if left[i]:
            t.add_column(Text(cols[i]), overflow="fold")
        else:
            t.add_column(Text(cols[i]), justify="right", no_wrap=True, min_width=widths[i])
    for row in cells:
        t.add_row(*[Text(row[i]) for i in keep])
    return t


def _chosen(cols: list[str], give: list[int], fit: Fit) -> list[int]:
    if not fit.columns:
        return list(range(len(cols)))
    unknown = [c for c in fit.columns if c not in cols]
    if unknown:
        raise LoganError(f"--columns {', '.join(unknown)}: not a column here; use {', '.join(cols)}")
    return [i for i, c in enumerate(cols) if give[i] == 0 or c in fit.columns]


def said_read(s: IngestSummary) -> None:
    """One line on stderr after logs were read for an answer: lines, and what they became."""
    parts = [f"{s.rows:,} requests" if s.rows else "no requests"]
    parts += [f"{s.events:,} events"] if s.events else []
    parts += [f"{s.rejects:,} rejected"] if s.rejects else []
    profile = f" (profile {s.profile})" if s.profile else ""
    say(f"read {s.lines:,} lines: {', '.join(parts)}{profile}", err)
    said_skipped(s)


def said_skipped(s: IngestSummary) -> bool:
    """A warning on stderr for each file that was skipped; whether there was one."""
    for source, why in s.skipped:
        say(f"skipped {source}: {why}", err)
    return bool(s.skipped)


def said_too_many_rejects(s: IngestSummary, limit: float | None) -> bool:
    """A warning when more of the lines read than `limit` (a share) were rejects."""
    if limit is None or not s.lines or s.rejects / s.lines <= limit:
        return False
    say(f"{s.rejects / s.lines:.1%} of the lines read were rejects: over --max-reject-ratio {limit:g}", err)
    return True


def print_ingest_summary(s: IngestSummary) -> None:
    """The closing summary of an ingest, on stderr (stdout stays for answers)."""
    for src in s.sources:
        if src.detected:
            say(f"{src.source}: {src.detected}", err)
        if src.resumed_at and not src.lines:
            say(f"{src.source}: nothing new since line {src.resumed_at:,} (--reread reads it again)", err)
        elif src.resumed_at:
            say(f"{src.source}: read on from line {src.resumed_at + 1:,}, after what was read before", err)
    t = Table(show_header=False, box=None, pad_edge=False)
    t.add_row("lines read", f"{s.lines:,}")
    t.add_row("requests", f"{s.rows:,}")
    t.add_row("rejects", f"{s.rejects:,}")
    if s.events:
        t.add_row("events", f"{s.events:,}")
    for reason, n in s.rejects_by_reason.items():
        t.add_row(Text(f"  {inert(reason)}"), f"{n:,}")
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
