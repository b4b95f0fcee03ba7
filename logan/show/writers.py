"""Answers written for programs and documents: CSV, JSON, Parquet, Markdown.

Log content is data in every one: CSV cells cannot start a spreadsheet formula, Markdown has
its special characters escaped, JSON is JSON.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from logan.errors import LoganError
from logan.show import console

if TYPE_CHECKING:  # pandas is imported only for the data outputs: 0.4 s a table need not wait
    import pandas as pd

    from logan.answer.views import Records

OUTPUTS = ("table", "csv", "json", "markdown", "parquet")


def write_data(table: Records, output: str, out: Path | None = None) -> None:
    """The table as the library's DataFrame, for programs: parquet (to `out`), JSON or CSV."""
    df = table.frame()
    if output == "parquet":
        df.to_parquet(out, index=False)
        console.err.print(Text(f"wrote {len(df):,} rows to {out}"))
    elif output == "json":
        records = json.loads(df.to_json(orient="records", date_format="iso"))
        sys.stdout.write(json.dumps(records, indent=1) + "\n")
    else:
        safe_csv(df).to_csv(sys.stdout, index=False)


def write_human(
    cols: list[str], rows: list[list[str]], left: list[bool], output: str, head: str = ""
) -> None:
    """Cells for people as Markdown or a terminal table (none without `cols`), under an
    optional heading."""
    if output == "markdown":
        if head:
            sys.stdout.write("  \n".join(markdown_escape(x) for x in head.splitlines()) + "\n\n")
        if cols:
            sys.stdout.write(markdown_table(cols, rows))
        return
    if head:
        console.out.print(Text(head))
    if cols:
        console.print_table(cols, rows, left)


def write_frame(df, output: str) -> None:  # noqa: ANN001
    """A DataFrame to stdout as table, csv or json; cell text is data, never markup."""
    df = _integral_floats_as_ints(df)
    if output == "csv":
        df.to_csv(sys.stdout, index=False)
    elif output == "json":
        sys.stdout.write(json.dumps(json.loads(df.to_json(orient="records", date_format="iso")), indent=1))
        sys.stdout.write("\n")
    elif output == "table":
        rows = [["" if v is None else str(v) for v in row] for row in df.itertuples(index=False)]
        console.print_table([str(c) for c in df.columns], rows, [True] * len(df.columns))
    else:
        raise LoganError(f"unknown output {output!r}: table, csv or json")


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
    """Text cells that a spreadsheet would run as a formula get a leading apostrophe."""
    import pandas as pd

    df = df.copy()
    for col in df.columns:
        if df[col].dtype == object or pd.api.types.is_string_dtype(df[col]):
            df[col] = df[col].map(
                lambda v: "'" + v if isinstance(v, str) and v.startswith(_FORMULA_START) else v
            )
    return df


# Inline markup (emphasis, code, links, images, HTML, strikethrough, table cells); `[` and
# `<` cover links and HTML, so ( ) ! need no escape.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def markdown_escape(text: str) -> str:
    """Text shown literally by Markdown renderers (no links, HTML, emphasis or cell breaks)."""
    text = text.replace("\r", " ").replace("\n", " ").replace("&", "&amp;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    # a leading - + # = would start a list, heading or setext underline
    return "\\" + text if text[:1] in ("-", "+", "#", "=") else text


def markdown_table(cols: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(markdown_escape(c) for c in cols) + " |"]
    lines.append("|" + "|".join("---" for _ in cols) + "|")
    lines += ["| " + " | ".join(markdown_escape(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
