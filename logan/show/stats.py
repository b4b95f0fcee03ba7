"""`logan stats`: where the time goes, as a table, CSV, JSON, Markdown or Parquet.

A thin layer over logan.stats; registered in cli.py with app.command("stats")(stats_command).
Log content is data in every output: rich Text cells (no markup), Markdown with its special
characters escaped, CSV cells that cannot start a spreadsheet formula.
"""

from __future__ import annotations

import glob
import json
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from logan.answer import stats as st
from logan.cli import options as opt
from logan.errors import LoganError
from logan.read.classify import collapse_routes
from logan.read.ingest import ingest
from logan.store import open_store

if TYPE_CHECKING:  # pandas is imported only for the data outputs: 0.4 s a table need not wait
    import pandas as pd

OUTPUTS = ("table", "csv", "json", "markdown", "parquet")
# A report written to a file or pipe is not squeezed into 80 columns.
_out = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
_err = Console(stderr=True, highlight=False)


def stats_command(
    files: Annotated[
        list[str] | None, typer.Argument(help="log files to read into a temporary store")
    ] = None,
    db: Annotated[Path | None, typer.Option("--db", help="DuckDB store file")] = None,
    by: Annotated[
        list[str] | None,
        typer.Option("--by", "-b", help=f"group by (repeatable): {', '.join(st.DIMENSIONS)}"),
    ] = None,
    sort: Annotated[str, typer.Option(help="total | count | avg | p95 | p99 | max")] = "total",
    top: Annotated[int, typer.Option(help="rows to show (0: all)")] = 20,
    since: Annotated[
        str | None, typer.Option(help="24h, 7d (before the last request) or a time (ISO, UTC unless given)")
    ] = None,
    until: Annotated[str | None, typer.Option(help="same forms as --since; exclusive")] = None,
    env: Annotated[list[str] | None, typer.Option(help="environment (repeatable)")] = None,
    method: Annotated[list[str] | None, typer.Option(help="HTTP method (repeatable)")] = None,
    status: Annotated[str | None, typer.Option(help="5xx, 404, 4xx,503, 500-504")] = None,
    path: Annotated[str | None, typer.Option("--path", help="path glob, e.g. '/api/*'")] = None,
    slo: Annotated[str | None, typer.Option(help="threshold for the SLO share and Apdex, e.g. 500ms")] = None,
    view: Annotated[
        str | None,
        typer.Option("--view", help=f"show one view instead: {' | '.join(st.VIEWS)}"),
    ] = None,
    output: Annotated[str, typer.Option("--output", "-o", help=" | ".join(OUTPUTS))] = "table",
    out: Annotated[Path | None, typer.Option("--out", help="file for --output parquet")] = None,
    format: opt.FormatOpt = "auto",
    dialect: opt.DialectOpt = None,
    tz: opt.TzOpt = "UTC",
    profile: opt.ProfileOpt = "auto",
    rules: opt.RulesOpt = None,
    trusted_proxy: opt.TrustedProxyOpt = None,
    nginx_conf: opt.NginxConfOpt = None,
    log_format_name: opt.LogFormatNameOpt = None,
) -> None:
    """Where the time goes: requests, total time, share and percentiles per group.

    Given FILES, they are read into a temporary store first (into --db when given too).
    --view shows one view instead: percentiles (ab), histogram (hey), slowest requests,
    pareto and apdex (needs --slo) per --by, cache (the GET/HEAD endpoints worth caching).
    """
    format, dialect = opt.format_from_options(format, dialect, nginx_conf, log_format_name)
    if output not in OUTPUTS:
        raise LoganError(f"unknown --output {output!r}; use one of {', '.join(OUTPUTS)}")
    if output == "parquet" and out is None:
        raise LoganError("--output parquet needs --out FILE")
    if not files and db is None:
        raise LoganError("give log FILES, or --db STORE")
    if db is not None and not files and not db.exists():
        raise LoganError(f"no store at {db}")
    by = by or ["indirector"]
    try:
        slo_us = st.parse_duration(slo) if slo else None
        filters = dict(
            since=since,
            until=until,
            env=env or None,
            method=method or None,
            status=status,
            path_glob=path,
        )
        st.filter_sql(filters)  # option errors before any reading
        st.dimension_columns(by)
        if sort not in st.SORTS:
            raise LoganError(f"unknown --sort {sort!r}; use one of {', '.join(st.SORTS)}")
        if view is not None and view not in st.VIEWS:
            raise LoganError(f"unknown --view {view!r}; use one of {', '.join(st.VIEWS)}")
        if view == "apdex" and slo_us is None:
            raise LoganError("--view apdex needs --slo, e.g. --slo 500ms")
    except ValueError as exc:
        raise LoganError(str(exc)) from None

    scratch = None
    if db is None and _input_bytes(files or []) > IN_MEMORY_MAX_BYTES:
        # A one-shot store in memory takes about 4x the log: big logs go to a file that is
        # removed afterwards (a little slower, RSS under 1.5 GB whatever the size).
        scratch = tempfile.TemporaryDirectory(prefix="logan-stats-")
        db = Path(scratch.name) / "stats.duckdb"
    # a store that is only read is opened read-only
    store = open_store(db, read_only=db is not None and not files)
    try:
        if files:
            # A store made for this one answer keeps only the columns it reads.
            keep = st.columns_read(by, view, slo_us, **filters) if db is None or scratch else None
            _ingest(files, store, format, dialect, tz, profile, rules, trusted_proxy or [], keep)
        if view is not None:
            table = _checked(st.named_records, store.con, view, by=by, top=top, slo_us=slo_us, **filters)
        else:
            table = _checked(st.stats_records, store.con, by=by, sort=sort, top=top, slo_us=slo_us, **filters)
        if view is None and output in ("table", "markdown"):
            # the table is the headline's ranking when it is sorted by total time
            ranked = table if sort == "total" else None
            totals = st.summary(store.con, **filters)
            head = st.headline(store.con, by=by, table=ranked, totals=totals, **filters)
            total = totals["requests"]
        else:
            head, total = "", 0
    finally:
        store.close()
        if scratch is not None:
            scratch.cleanup()
    if view is not None:
        write_view(table, view, output, out, st.dimension_columns(by), st.view_question(view, by, slo_us))
    else:
        write_stats(table, output, out, st.dimension_columns(by), head, total)


# Logs up to this size are read into an in-memory store (fastest); larger ones into a
# temporary file.
IN_MEMORY_MAX_BYTES = 1 << 30


def _input_bytes(files: list[str]) -> int:
    total = 0
    for pattern in files:
        for p in glob.glob(pattern) if any(c in pattern for c in "*?[") else [pattern]:
            path = Path(p)
            if path.is_dir():
                total += sum(f.stat().st_size for f in path.iterdir() if f.is_file())
            elif path.is_file():
                total += path.stat().st_size
    return total


def _checked(fn, *args, **kwargs) -> st.Records:  # noqa: ANN001, ANN002, ANN003
    # a bad option found late (by the SQL layer) is a usage error, not a traceback
    try:
        return fn(*args, **kwargs)
    except ValueError as exc:
        raise LoganError(str(exc)) from None


def _ingest(files, store, format, dialect, tz, profile, rules, trusted, keep) -> None:  # noqa: ANN001
    s = ingest(
        files,
        store,
        format=format,
        dialect=dialect,
        tz=tz,
        profile=profile,
        rules=rules,
        trusted_proxies=trusted,
        columns=keep,
    )
    if s.profile in ("puppet", "generic"):
        collapse_routes(store.con)
    rejected = f", {s.rejects:,} rejected" if s.rejects else ""
    _err.print(Text(f"read {s.lines:,} lines: {s.rows:,} requests{rejected} (profile {s.profile})"))


# --- Output ---------------------------------------------------------------------------------
# (heading, column, formatter) for the cells people read; a text column is left-aligned.
Spec = list[tuple[str, str, Callable[[Any], str]]]


def _text(value: object) -> str:
    # log content as it is: rich Text, markdown_escape and safe_csv make it inert later
    return str(value)


def write_stats(
    table: st.Records,
    output: str,
    out: Path | None = None,
    dims: list[str] | None = None,
    head: str = "",
    total_requests: int = 0,
) -> None:
    """Write a stats_records() table to stdout (or `out` for parquet) in the chosen form."""
    if output in ("table", "markdown"):
        cols, rows, left = human_rows(table, dims or [], total_requests)
        write_human(cols, rows, left, output, head)
    else:
        write_data(table, output, out)


def write_data(table: st.Records, output: str, out: Path | None = None) -> None:
    """The table as the library's DataFrame, for programs: parquet (to `out`), JSON or CSV."""
    df = table.frame()
    if output == "parquet":
        df.to_parquet(out, index=False)
        _err.print(Text(f"wrote {len(df):,} rows to {out}"))
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
        _out.print(Text(head))
    if not cols:
        return
    t = Table(show_lines=False)
    for c, is_text in zip(cols, left, strict=True):
        if is_text:
            t.add_column(Text(c), overflow="fold")
        else:
            t.add_column(Text(c), justify="right", no_wrap=True)
    for row in rows:
        t.add_row(*[Text(v) for v in row])
    _out.print(t)


def spec_rows(
    table: st.Records, dims: list[str], spec: Spec
) -> tuple[list[str], list[list[str]], list[bool]]:
    """Headings, cells and which columns are text: `dims` as they are, then each spec
    column the data fills (a column the log cannot fill, e.g. no upstream timer, is left out)."""
    spec = [s for s in spec if s[1] in table.columns and not _empty(table, s[1])]
    cols = dims + [s[0] for s in spec]
    left = [True] * len(dims) + [fmt is _text for _, _, fmt in spec]
    rows = []
    for r in table.rows:
        cells = ["-" if st.missing(r[d]) else str(r[d]) for d in dims]
        cells += ["-" if st.missing(r[src]) else fmt(r[src]) for _, src, fmt in spec]
        rows.append(cells)
    return cols, rows, left


def _empty(table: st.Records, column: str) -> bool:
    return all(st.missing(r[column]) for r in table.rows)


def human_rows(
    table: st.Records, dims: list[str], total_requests: int
) -> tuple[list[str], list[list[str]], list[bool]]:
    """Columns and cells for people: ms/s, 7.1M, %; only the timers the log has."""
    pct = _percent
    spec: Spec = [
        ("requests", "requests", st.format_count),
    ]
    if total_requests and ("share" not in table.columns or _empty(table, "share")):
        # no times in the log: the share of requests is the next best answer
        spec.append(("% req", "requests", lambda n: pct(n / total_requests)))
    spec += [
        ("% time", "share", pct), ("total", "total_us", st.format_us),
        ("avg", "avg_us", st.format_us), ("p50", "p50_us", st.format_us),
        ("p95", "p95_us", st.format_us), ("p99", "p99_us", st.format_us),
        ("max", "max_us", st.format_us), ("5xx", "error_share", pct),
        ("bytes", "bytes", st.format_bytes),
    ]  # fmt: skip
    for timer in st.TIMERS:
        spec += [(f"{timer} avg", f"{timer}_avg_us", st.format_us),
                 (f"{timer} p95", f"{timer}_p95_us", st.format_us)]  # fmt: skip
    spec += [("in SLO", "slo_share", pct), ("apdex", "apdex", _fixed2)]
    return spec_rows(table, dims, spec)


# --- Views (--view) -------------------------------------------------------------------------
def write_view(
    table: st.Records, name: str, output: str, out: Path | None, dims: list[str], question: str
) -> None:
    """Write a named_records() table: the DataFrame for programs, a shaped table for people."""
    if output not in ("table", "markdown"):
        write_data(table, output, out)
        return
    if not table.rows or (name == "percentiles" and not table.rows[0]["requests"]):
        write_human([], [], [], output, f"{question}\nNo request matches (with a response time).")
        return
    if name == "percentiles":
        cols, rows, left = percentile_rows(table)
    elif name == "histogram":
        cols, rows, left = histogram_rows(table)
    else:
        grouped = dims if name in ("pareto", "apdex", "cache") else []
        cols, rows, left = spec_rows(table, grouped, _view_spec(name))
        if name == "pareto":  # the rank reads first
            cols, left = ["rank", *cols], [False, *left]
            rows = [[str(r["rank"]), *row] for r, row in zip(table.rows, rows, strict=True)]
    write_human(cols, rows, left, output, question)


def percentile_rows(table: st.Records) -> tuple[list[str], list[list[str]], list[bool]]:
    """ab's 'Percentage of the requests served within a certain time' as rows."""
    r = table.rows[0]
    rows = []
    for q in (50, 66, 75, 80, 90, 95, 98, 99, 100):
        label = f"{q}%" + (" (longest request)" if q == 100 else "")
        rows.append([label, st.format_us(r[f"p{q}_us"])])
    return ["served within", f"time ({st.format_count(r['requests'])} requests)"], rows, [True, False]


BAR_WIDTH = 40
_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(fraction: float, width: int = BAR_WIDTH) -> str:
    """A bar `fraction` of `width` long, in eighths of a character (█ and ▏..▉)."""
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    return "█" * (eighths // 8) + (_EIGHTHS[eighths % 8] if eighths % 8 else "")


def histogram_rows(table: st.Records) -> tuple[list[str], list[list[str]], list[bool]]:
    """hey's response time histogram: one row per log-scale bucket, bars scaled to the
    largest bucket."""
    most = max((r["requests"] for r in table.rows), default=0)
    rows = [
        [f"{st.format_us(r['lo_us'])} - {st.format_us(r['hi_us'])}", st.format_count(r["requests"]),
         _percent(r["share"]), _percent(r["cumulative_share"]), bar(r["requests"] / most)]
        for r in table.rows
    ]  # fmt: skip
    return ["latency", "requests", "%", "cumulative", ""], rows, [True, False, False, False, True]


def _view_spec(name: str) -> Spec:
    count, us, pct = st.format_count, st.format_us, _percent
    specs: dict[str, Spec] = {
        "slowest": [
            ("start (UTC)", "ts_start", _text), ("duration", "duration_us", us),
            ("ttfb", "ttfb_us", us), ("upstream", "upstream_us", us), ("queue", "queue_us", us),
            ("status", "status", _text), ("method", "method", _text), ("vhost", "vhost", _text),
            ("path", "path", _text), ("query", "query", _text),
            ("bytes", "bytes_sent", st.format_bytes), ("requester", "requester", _text),
            ("indirector", "indirector", _text), ("source", "source", _text),
            ("line", "line_no", _text),
        ],
        "pareto": [
            ("requests", "requests", count), ("total", "total_us", us), ("% time", "share", pct),
            ("cumulative", "cumulative_share", pct), ("% groups", "group_share", pct),
        ],
        "apdex": [
            ("timed", "timed_requests", count), ("in SLO", "slo_share", pct),
            ("apdex", "apdex", _fixed2),
        ],
        "cache": [
            ("requests", "requests", count), ("ok", "ok_share", pct),
            ("304", "not_modified_share", pct), ("clients", "clients", count),
            ("urls", "urls", count), ("total", "total_us", us), ("% time", "share", pct),
            ("p50", "p50_us", us), ("p95", "p95_us", us), ("sizes/url", "sizes_per_url", _fixed2),
            ("size cv", "size_cv", _fixed2), ("hits", "hit_share", pct),
            ("saved", "saved_us", us), ("% saved", "saved_share", pct),
        ],
    }  # fmt: skip
    return specs[name]


def _fixed2(x: float) -> str:
    return f"{x:.2f}"


def _percent(x: float) -> str:
    return "-" if st.missing(x) else f"{100 * x:.1f}%"


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
