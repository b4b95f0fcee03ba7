"""`logan report`: a day's report as one self-contained HTML page, Markdown or text.

A thin layer over logan.nightly.report (the sections) and logan.show.report_html /
report_text (the forms). The report options are declared here once; `logan mail` takes
them too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from logan.cli import options as opt
from logan.errors import LoganError
from logan.nightly.report import SECTION_KEYS, Report, ReportOptions, report_of
from logan.show.charts import CHART_MODULES
from logan.show.report_html import render_html
from logan.show.report_text import FORMS, render

EXAMPLES = (
    "Examples: logan report sample_logs/puppet_access.log --day latest --out report.html  ·  "
    "logan report --db web.duckdb --day 2026-11-23 --tz Europe/Berlin --format text"
)

DayOpt = Annotated[str | None, typer.Option(help="the day: 2026-11-23, yesterday (default) or latest")]
TzOpt = Annotated[str, typer.Option("--tz", help="the time zone whose day it is")]
LabelOpt = Annotated[str, typer.Option(help="what the report is about, in its title: web01")]
ByOpt = Annotated[
    list[str] | None, typer.Option("--by", "-b", help="group the time and cache by (repeatable)")
]
TopOpt = Annotated[int, typer.Option(min=1, help="rows per table")]
SectionsOpt = Annotated[
    list[str] | None,
    typer.Option("--section", help=f"only these sections (repeatable): {', '.join(SECTION_KEYS)}"),
]
NoChartsOpt = Annotated[bool, typer.Option("--no-charts", help="leave the pictures out")]
LogFormatOpt = Annotated[str, typer.Option("--log-format", help="format of FILES (as logan stats --format)")]


@dataclass(frozen=True)
class ReportAsked:
    """The report the options ask for, made when the command is ready for it."""

    files: opt.FilesArg = None
    db: opt.StoreOpt = None
    day: DayOpt = None
    tz: TzOpt = "UTC"
    label: LabelOpt = ""
    by: ByOpt = None
    top: TopOpt = 10
    section: SectionsOpt = None
    no_charts: NoChartsOpt = False
    log_format: LogFormatOpt = "auto"

    def value(self) -> ReportAsked:
        return self

    def warm(self) -> None:
        """Start importing what making the report needs (opt.warm)."""
        opt.warm("pandas", *(() if self.no_charts else CHART_MODULES))

    def make(self) -> Report:
        """The report (logan.nightly.report.report_of)."""
        options = ReportOptions(label=self.label, by=tuple(self.by or ["indirector"]), top=self.top,
                                charts=not self.no_charts)  # fmt: skip
        read = opt.read_options(self.log_format, None, "UTC", "auto", None, None)
        return report_of(self.files, self.db, self.day, self.tz, options, self.section or None, read)


Asked = Annotated[ReportAsked, opt.Group(ReportAsked, "The report")]


@opt.command
def report_command(
    asked: Asked,
    format: Annotated[str, typer.Option("--format", help=" | ".join(FORMS))] = "html",
    out: Annotated[Path | None, typer.Option("--out", help="write to this file (default: stdout)")] = None,
) -> None:
    """A day's report: the headline against the day before and a week before, where the
    time went, cache candidates, requesters that grew, ingest health."""
    asked.warm()
    if format not in FORMS:
        raise LoganError(f"--format {format!r}: use {', '.join(FORMS)}")
    report = asked.make()
    text = render_html(report) if format == "html" else render(report, format)
    if out is None:
        typer.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")
