"""Auto-detection: which preset reads a sample of lines best, and why not when none does."""

from __future__ import annotations

import pyarrow as pa

from logan.errors import FormatError
from logan.read import events
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
        hits, _, best = max(scored, key=lambda s: (s[0], s[1]))
        if hits == 0:
            raise FormatError(_no_match_message(st, sample, [s[2] for s in scored]))
        return best, f"auto-detected {best.label}: {hits} of {n} sample lines match"
    finally:
        st.con.unregister("__sample_src")


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
