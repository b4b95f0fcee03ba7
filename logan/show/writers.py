"""Answers written for programs and documents: CSV, JSON, Parquet, Markdown; and the one
place every command's output goes through, so `logan sql` and `logan stats` write alike.

Log content is data in every one: CSV cells cannot start a spreadsheet formula and show
control characters escaped (unless raw output is asked for), Markdown has its special
characters escaped, JSON is JSON.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rich.text import Text

from logan.errors import LoganError
from logan.show import console

if TYPE_CHECKING:  # pandas is imported only for the data outputs: 0.4 s a table need not wait
    import pandas as pd

    from logan.answer.views import Records

OUTPUTS = ("table", "csv", "json", "markdown", "parquet")
HUMAN = ("table", "markdown")


@dataclass(frozen=True)
class Output:
    """Where and how an answer is written: the form (OUTPUTS), the file for Parquet, how a
    table meets the terminal, and `raw` CSV (cells as logged: no apostrophe before a
    formula, no escapes)."""

    form: str = "table"
    file: Path | None = None
    fit: console.Fit = field(default_factory=console.Fit)
    raw: bool = False

    def __post_init__(self) -> None:
        if self.form not in OUTPUTS:
            raise LoganError(f"unknown --output {self.form!r}; use one of {', '.join(OUTPUTS)}")
        if self.form == "parquet" and self.file is None:
            raise LoganError("--output parquet needs --out FILE")

    @property
    def human(self) -> bool:
        return self.form in HUMAN


def write_data(table: Records, output: Output) -> None:
    """The table as the library's DataFrame, for programs: parquet (to a file), JSON or CSV."""
    write_frame_data(table.frame(), output)


def write_frame_data(df: pd.DataFrame, output: Output) -> None:
    if output.form == "parquet":
        df.to_parquet(output.file, index=False)
        console.err.print(Text(f"wrote {len(df):,} rows to {console.inert(output.file)}"))
    elif output.form == "json":
        write_json(df, sys.stdout)
    else:
        (df if output.raw else safe_csv(df)).to_csv(sys.stdout, index=False)


# Rows a JSON answer is made of at a time: `logan cache --by url -o json` of 5 M keys and
# two TTLs, made whole (its text, its records as dicts, the text again), ran out of 24 GB.
JSON_ROWS = 50_000


def write_json(df: pd.DataFrame, out: TextIO) -> None:
    """The frame as a JSON array of records (json.dumps(records, indent=1), byte for byte),
    written JSON_ROWS records at a time."""
    if len(df) == 0:
        out.write("[]\n")
        return
    out.write("[\n")
    for at in range(0, len(df), JSON_ROWS):
        records = json.loads(df.iloc[at : at + JSON_ROWS].to_json(orient="records", date_format="iso"))
        text = json.dumps(records, indent=1)  # "[\n {...},\n {...}\n]"
        out.write((",\n" if at else "") + text[2:-2])
    out.write("\n]\n")


def write_human(
    cols: list[str],
    rows: list[list[str]],
    left: list[bool],
    output: Output | str,
    head: str = "",
    give: list[int] | None = None,
    footer: str = "",
) -> None:
    """Cells for people as Markdown or a terminal table (none without `cols`), under an
    optional heading and over an optional footer. `give`: see console.print_table."""
    form = output.form if isinstance(output, Output) else output
    if form == "markdown":
        if head:
            sys.stdout.write("  \n".join(markdown_escape(x) for x in head.splitlines()) + "\n\n")
        if cols:
            sys.stdout.write(markdown_table(cols, rows))
        if footer:
            sys.stdout.write(f"\n{markdown_escape(footer)}\n")
        return
    if head:
        console.say(head)
    if cols:
        fit = output.fit if isinstance(output, Output) else console.Fit()
        console.print_table(cols, rows, left, give, fit, footer)


def write_frame(df: pd.DataFrame, output: Output) -> None:
    """Any DataFrame (`logan sql`) in the chosen form; for people, every cell as text."""
    df = _integral_floats_as_ints(df)
    if output.human:
        rows = [["" if v is None else str(v) for v in row] for row in df.itertuples(index=False)]
        write_human([str(c) for c in df.columns], rows, [True] * len(df.columns), output)
    else:
        write_frame_data(df, output)


def _integral_floats_as_ints(df):  # noqa: ANN001, ANN202
    # DuckDB's sum(BIGINT) is a 128-bit integer, which pandas holds as float: 7800.0.
    for col in df.columns:
        s = df[col]
        if s.dtype.kind == "f" and s.notna().any():
            vals = s.dropna()
            if (vals == vals.round()).all() and vals.abs().max() < 2**53:
                df[col] = s.astype("Int64")
    return df


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_csv(df: pd.DataFrame) -> pd.DataFrame:
    """Text cells as a spreadsheet shows them as text: control characters escaped, and a
    leading apostrophe where the cell would start a formula."""
    import pandas as pd

    df = df.copy()
    for col in df.columns:
        if df[col].dtype == object or pd.api.types.is_string_dtype(df[col]):
            df[col] = df[col].map(_safe_cell)
    return df


def _safe_cell(v: object) -> object:
    if not isinstance(v, str):
        return v
    return "'" + console.inert(v) if v.startswith(_FORMULA_START) else console.inert(v)


# Inline markup (emphasis, code, links, images, HTML, strikethrough, table cells); `[` and
# `<` cover links and HTML, so ( ) ! need no escape.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def markdown_escape(text: str) -> str:
    """Text shown literally by Markdown renderers (no links, HTML, emphasis or cell breaks),
    control characters escaped."""
    text = console.inert(text).replace("&", "&amp;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    # a leading - + # = would start a list, heading or setext underline
    return "\\" + text if text[:1] in ("-", "+", "#", "=") else text


def markdown_table(cols: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(markdown_escape(c) for c in cols) + " |"]
    lines.append("|" + "|".join("---" for _ in cols) + "|")
    lines += ["| " + " | ".join(markdown_escape(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
