"""Auto-detection: which preset reads a sample of lines best, and why not when none does."""

from __future__ import annotations

import pyarrow as pa

from logan import schema
from logan.errors import FormatError
from logan.read import events, rows
from logan.read.compile import CompiledFormat, Field, _regex, compile_format
from logan.read.convert import sql_str
from logan.read.dialects import dialects, get_dialect
from logan.store import Store

SAMPLE_LINES = 1000


def _sample(st: Store, table: pa.Table) -> str:
    st.con.register("__sample_src", table.slice(0, SAMPLE_LINES))
    return "(SELECT line FROM __sample_src WHERE line <> '')"


def _candidates(dialect: str | None) -> list[CompiledFormat]:
    ds = [get_dialect(dialect)] if dialect else list(dialects().values())
    return [compile_format(d, fmt, f"{d.name}:{name}") for d in ds for name, fmt in d.presets.items()]


def detect_format(st: Store, table: pa.Table, dialect: str | None = None) -> tuple[CompiledFormat, str]:
    """The preset that fully matches most sample lines (ties: the one with more fields)."""
    sample = _sample(st, table)
    try:
        n = st.con.execute(f"SELECT count(*) FROM {sample}").fetchall()[0][0]
        if n == 0:
            raise FormatError("cannot detect the format: the input has no non-empty lines")
        scored = []
        for cf in _candidates(dialect):
            # a line a dialect keeps as an event (HAProxy's "Server ... is DOWN") is read
            # too: a file of events only still has a format
            ok = f"regexp_full_match(line, {sql_str(cf.regex)}) OR {events.matches_sql(cf)}"
            hits = st.con.execute(f"SELECT count(*) FILTER (WHERE {ok}) FROM {sample}").fetchall()[0][0]
            scored.append((hits, len(cf.fields), cf))
        hits, fields, best = max(scored, key=lambda s: (s[0], s[1]))
        best, why = _tie_break(st, table, [s[2] for s in scored if (s[0], s[1]) == (hits, fields)])
        if hits == 0:
            raise FormatError(_no_match_message(st, sample, [s[2] for s in scored]))
        if hits * 2 < n:  # a preset that reads a few lines is a guess, not a detection
            raise FormatError(
                f"no known format reads most of this input: the closest, {best.label}, reads {hits} of"
                f" the first {n} lines;\n  e.g. not this one:\n    {_unread_line(st, sample, best)!r}\n"
                "  give the format string from the server's config: --format '<format string>'"
            )
        said = f"auto-detected {best.label}: {hits} of {n} sample lines match{why}"
        if hits * 10 < n * 9:
            said += f" (unsure; e.g. not this one: {_unread_line(st, sample, best)!r})"
        return best, said
    finally:
        st.con.unregister("__sample_src")


def _tie_break(st: Store, table: pa.Table, tied: list[CompiledFormat]) -> tuple[CompiledFormat, str]:
    """Of presets that read the sample alike, the one its dialect prefers for the sample's
    request paths ([preferred_when]), else the first without such a condition; and why."""
    if len(tied) == 1:
        return tied[0], ""
    plain = [cf for cf in tied if _preset(cf) not in cf.dialect.preferred_when]
    for cf in tied:
        regex = cf.dialect.preferred_when.get(_preset(cf))
        if regex is None:
            continue
        paths = sample_paths(st, table, cf)
        matched = st.con.execute(
            "SELECT count(*) FILTER (WHERE regexp_matches(p, ?)) FROM (SELECT unnest(?) AS p)", [regex, paths]
        ).fetchall()[0][0]
        if paths and matched * 2 > len(paths):
            others = ", ".join(o.label for o in tied if o is not cf)
            return cf, f" (as {others} would; {matched} of {len(paths)} paths match {regex})"
    return (plain or tied)[0], ""


def _preset(cf: CompiledFormat) -> str:
    return cf.label.split(":", 1)[-1]


def check_format(st: Store, table: pa.Table, cf: CompiledFormat) -> None:
    """Refuse a format given by name that reads none of the first lines (every line would
    be a reject), naming a preset that reads them when there is one."""
    sample = _sample(st, table)
    try:
        ok = f"regexp_full_match(line, {sql_str(cf.regex)}) OR {events.matches_sql(cf)}"
        n, hits = st.con.execute(f"SELECT count(*), count(*) FILTER (WHERE {ok}) FROM {sample}").fetchall()[0]
        unread = _unread_line(st, sample, cf) if n and not hits else ""
    finally:
        st.con.unregister("__sample_src")
    if n == 0 or hits:
        return
    try:
        best, _ = detect_format(st, table)
        hint = f"{best.label} reads them: --format {best.label}"
    except FormatError:
        hint = "nor does any preset: give the format string from the server's config"
    raise FormatError(
        f"--format {cf.label} reads none of the first {n} lines, e.g. {unread!r};"
        f" {hint} (or --keep-going: read it anyway, every line a reject)"
    )


def _unread_line(st: Store, sample: str, cf: CompiledFormat) -> str:
    line = st.con.execute(
        f"SELECT line FROM {sample} WHERE NOT regexp_full_match(line, {sql_str(cf.regex)}) LIMIT 1"
    ).fetchall()[0][0]
    return line if len(line) <= 300 else line[:300] + "..."


def _no_match_message(st: Store, sample: str, candidates: list[CompiledFormat]) -> str:
    """Name the closest preset (the one whose longest prefix matches), where it stops
    matching, and a line that shows it."""
    best: tuple[int, CompiledFormat] | None = None
    for cf in candidates:
        k = _matching_prefix(st, sample, cf)
        if best is None or k > best[0]:
            best = (k, cf)
    assert best is not None
    k, cf = best
    fields_in = [it for it in cf.items[:k] if isinstance(it, Field)]
    after = fields_in[-1].spec.directive if fields_in else "the start of the line"
    line = st.con.execute(
        f"SELECT line FROM {sample} WHERE NOT regexp_full_match(line, {sql_str(cf.regex)}) LIMIT 1"
    ).fetchall()[0][0]
    shown = line if len(line) <= 300 else line[:300] + "..."
    return (
        "no known format reads this input.\n"
        f"  closest preset: {cf.label}  ({cf.fmt})\n"
        f"  it stops matching after {after}, e.g. in this line:\n    {shown!r}\n"
        "  give the format string from the server's config: --format '<LogFormat string>'"
    )


def _matching_prefix(st: Store, sample: str, cf: CompiledFormat) -> int:
    best = 0
    for k in range(1, len(cf.items) + 1):
        prefix = _regex(cf.items[:k]).rstrip("$")
        hit = st.con.execute(
            f"SELECT bool_or(regexp_matches(line, {sql_str(prefix)})) FROM {sample}"
        ).fetchall()[0][0]
        if not hit:
            break
        best = k
    return best


def sample_paths(st: Store, table: pa.Table, cf: CompiledFormat) -> list[str]:
    """URI paths of the sample's requests, for choosing a classification profile."""
    sample = _sample(st, table)
    try:
        idx = {f.spec.column: f for f in cf.fields}
        if "request" in idx:
            expr = f"split_part(m.f{idx['request'].idx}, ' ', 2)"
        elif "path" in idx:
            expr = f"m.f{idx['path'].idx}"
        else:
            return []
        # an absolute URI (proxies, Varnish) starts with scheme://host: the path follows
        expr = f"regexp_replace({expr}, '^[A-Za-z][A-Za-z0-9+.-]*://[^/]*', '')"
        names = ", ".join(sql_str(f.alias) for f in cf.fields)
        rows = st.con.execute(
            f"SELECT {expr} FROM (SELECT regexp_extract(line, {sql_str(cf.regex)}, [{names}]) AS m "
            f"FROM {sample}) WHERE {expr} <> ''"
        ).fetchall()
        return [r[0] for r in rows]
    finally:
        st.con.unregister("__sample_src")


# The share of a sample's rows with an `extra` entry above which the map is stored an entry
# a column (rows.stored_columns' `entries`). DuckDB writes a NULL column as dearly as a
# full one, and a NULL map cheaply: HAProxy's httplog, whose six entries (captures, cookies)
# most logs leave empty, ingested 3% slower an entry a column; Apache's "extended" format,
# whose 17 are on every line, 28% faster, and HAProxy lines with captures 15%.
EXTRAS_FILLED = 0.25


def extras_filled(st: Store, table: pa.Table, cf: CompiledFormat) -> bool:
    """Whether at least EXTRAS_FILLED of the sample's rows have an `extra` entry."""
    if not cf.extra_keys():
        return False
    sample = _sample(st, table)
    try:
        lines = f"(SELECT 0 AS line_no, line FROM {sample})"
        typed = rows.typed_sql(cf, cf.exact_raw_sql(lines), "UTC", False, entries=True)
        got = st.con.execute(f"SELECT count(*), count({schema.EXTRA_SET}) FROM ({typed}) WHERE __ok")
        n, filled = got.fetchall()[0]
        return n > 0 and filled >= EXTRAS_FILLED * n
    finally:
        st.con.unregister("__sample_src")
