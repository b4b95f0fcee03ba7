"""A nightly report (logan.nightly.report.Report) as one self-contained HTML page: a jinja2
template with autoescape on (every value from a log line is text, never markup), the styles
inlined on each element by css-inline (Gmail and Outlook drop <style> blocks; the block
stays for browsers and print), charts as PNG data URIs or, in a mail, as cid: references
to the images beside it. No script, no external request of any kind.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from logan.show.report_text import FIGURE_HEADINGS, figure_cells, period_line, table_cells

if TYPE_CHECKING:
    from logan.show.report_model import Report

TEMPLATES = Path(__file__).resolve().parent / "templates"


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def render_html(report: Report, image_src: Callable[[str, bytes], str] | None = None) -> str:
    """The page. `image_src(section_key, png)` gives an image's src (default: a data URI;
    logan.show.mail passes cid: references)."""
    import css_inline
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined
    )
    src = image_src or (lambda _key, png: data_uri(png))
    html = env.get_template("report.html.j2").render(
        report=report,
        period=period_line(report),
        figure_headings=FIGURE_HEADINGS,
        figure_cells=figure_cells,
        table_cells=table_cells,
        image_src=src,
    )
    inliner = css_inline.CSSInliner(keep_style_tags=True, load_remote_stylesheets=False)
    return inliner.inline(html)
