"""A nightly report (logan.nightly.report.Report) as Markdown or plain text: the same
sections, figures and tables as the HTML, for a terminal, a chat message or the text part
of the mail. Cells are formatted here once (`cell`), and the HTML uses the same words.

Every cell from a log line is data: Markdown escapes it (logan.show.writers), plain text
shows control characters escaped (logan.show.console.inert).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from logan.show.console import inert
from logan.show.writers import markdown_escape, markdown_table
from logan.units import format_count, format_us, missing

if TYPE_CHECKING:
    from logan.show.report_model import Figure, Report, Section, Table

FORMS = ("html", "markdown", "text")


def cell(value: object, kind: str | None) -> str:
    """A value as the report writes it: 1.2 s, 7.1M, 4.5%, ×1.40, 2026-11-23 04:10 UTC."""
    if missing(value):
        return "-"
    if kind == "us":
        return format_us(value)
    if kind == "count":
        return format_count(value)
    if kind == "share":
        return f"{float(value) * 100:.1f}%"
    if kind == "ratio":
        return f"×{float(value):.2f}"
    if kind == "time":
        return f"{value:%Y-%m-%d %H:%M} UTC"
    return str(value)


def heading(column: str) -> str:
    """A column's name for people: p95_us -> p95, error_share -> error share."""
    return column.removesuffix("_us").replace("_", " ")


def table_cells(table: Table) -> tuple[list[str], list[list[str]]]:
    cols = list(table.frame.columns)
    rows = [[cell(v, table.kinds.get(c)) for c, v in zip(cols, r, strict=True)]
            for r in table.frame.itertuples(index=False)]  # fmt: skip
    return [heading(c) for c in cols], rows


def figure_cells(f: Figure) -> list[str]:
    return [f.name, cell(f.value, f.kind), f"{f.vs_previous.arrow} {f.vs_previous.text}".strip(),
            f"{f.vs_week.arrow} {f.vs_week.text}".strip()]  # fmt: skip


FIGURE_HEADINGS = ["figure", "value", "vs the day before", "vs a week before"]


def period_line(report: Report) -> str:
    p = report.period
    return f"{p.label} ({p.tz}): {p.start:%Y-%m-%d %H:%M} to {p.end:%Y-%m-%d %H:%M} UTC"


def render_markdown(report: Report) -> str:
    out = [f"# {markdown_escape(report.subject())}", "", markdown_escape(period_line(report)), ""]
    for source, why in report.failed:
        out += [f"**Failed source**: {markdown_escape(source)}: {markdown_escape(why)}", ""]
    for s in report.sections:
        out += [
            f"## {markdown_escape(s.title)}",
            "",
            f"*{markdown_escape(s.verdict)}*" if s.verdict else "",
            "",
        ]
        if s.figures:
            out.append(markdown_table(FIGURE_HEADINGS, [figure_cells(f) for f in s.figures]))
        for t in s.tables:
            out += [markdown_escape(t.caption) + ":", "", markdown_table(*table_cells(t))]
    return "\n".join(out).rstrip() + "\n"


def _plain_table(cols: list[str], rows: list[list[str]]) -> list[str]:
    rows = [[inert(v) for v in r] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(cols, *rows, strict=True)]
    return ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in [cols, *rows]]


def render_text(report: Report) -> str:
    out = [inert(report.subject()), inert(period_line(report)), ""]
    out += [f"FAILED SOURCE {inert(source)}: {inert(why)}" for source, why in report.failed]
    for s in report.sections:
        out += _section_text(s)
    return "\n".join(out).rstrip() + "\n"


def _section_text(s: Section) -> list[str]:
    out = ["", inert(s.title.upper()), inert(s.verdict) if s.verdict else ""]
    if s.figures:
        out += _plain_table(FIGURE_HEADINGS, [figure_cells(f) for f in s.figures])
    for t in s.tables:
        out += ["", inert(t.caption) + ":", *_plain_table(*table_cells(t))]
    return out


def render(report: Report, form: str) -> str:
    """`form` markdown or text (logan.show.report_html writes html)."""
    return render_markdown(report) if form == "markdown" else render_text(report)
