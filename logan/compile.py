"""Compile a format string into the SQL that turns a batch of lines into `requests` rows.

Two ways to read a line, one result:

* the fast path splits the line on `"` and the bare stretches on spaces (`string_split`,
  several times faster in DuckDB than a regex with capture groups). It takes lines without
  a backslash whose pieces have exactly the expected counts;
* the exact path is one RE2 regex built from the same tokens. It reads the rest (escaped
  quotes, odd spacing) and says why a line is rejected.

Both produce the same raw field texts; everything after that (types, units, derived
columns, classification) is one shared SQL projection.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from logan import schema
from logan.convert import TIME_BASE, TIME_FRACTION, Typed, convert, sql_str
from logan.dialects import Dialect, FieldSpec
from logan.errors import FormatError
from logan.syntax import Directive

QUOTE = '"'
_RE_META = set("\\.^$|?*+()[]{}")

# What the text of a field looks like, for the exact path (RE2 syntax: no lookbehind).
VALUE_PATTERNS = {
    "token": r"\S+",
    "int": r"-|-?\d+",
    "clf_time": r"\[[^\]]+\]",
    "time": r".+?",
    "text": r".*?",
    "decimal": r"-|-?\d+(?:\.\d+)?",
}
QUOTED_PATTERN = r'(?:[^"\\]|\\.)*'

# Columns a format can fill directly; the rest are derived or classified.
_TS = "ts"


def regex_escape(text: str) -> str:
    return "".join("\\" + c if c in _RE_META else c for c in text)


@dataclass
class Field:
    idx: int
    spec: FieldSpec
    quoted: bool = False

    @property
    def alias(self) -> str:
        return f"f{self.idx}"


@dataclass
class CompiledFormat:
    dialect: Dialect
    fmt: str
    label: str
    items: list[str | Field]
    fields: list[Field]
    regex: str
    columns: dict[str, Field] = field(default_factory=dict)  # canonical column -> field
    extras: list[Field] = field(default_factory=list)
    time_fields: list[Field] = field(default_factory=list)

    # ---- raw field texts -------------------------------------------------------------
    def fast_raw_sql(self, rel: str) -> str | None:
        """SELECT line_no, line, f0.. FROM rel for the lines the split path can read, or
        None when the format's shape does not allow splitting."""
        return _fast_plan(self, rel)

    def exact_raw_sql(self, rel: str) -> str:
        names = ", ".join(sql_str(f.alias) for f in self.fields)
        cols = [f"{self._decode(f'm.{f.alias}', f)} AS {f.alias}" for f in self.fields]
        return (
            f"SELECT line_no, line, regexp_full_match(line, {sql_str(self.regex)}) AS matched, "
            + ", ".join(cols)
            + f" FROM (SELECT line_no, line, regexp_extract(line, {sql_str(self.regex)}, "
            f"[{names}]) AS m FROM {rel})"
        )

    def _decode(self, expr: str, f: Field) -> str:
        if not f.quoted or self.dialect.escape != "apache":
            return expr
        # \" -> " and \\ -> \ in one left-to-right pass; \xhh stays as written.
        return f"regexp_replace({expr}, '\\\\([\"\\\\])', '\\1', 'g')"

    # ---- typed and derived columns ----------------------------------------------------
    def typed(self, tz: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
        """(canonical column -> SQL over raw fields, [(ok predicate, reject reason)])."""
        cols: dict[str, str] = {}
        checks: list[tuple[str, str]] = []
        for col, f in self.columns.items():
            t = convert(f.spec.convert, f.alias, f.spec.arg, tz)
            cols[col] = t.sql
            if t.ok:
                checks.append((t.ok, f"bad {f.spec.directive} value"))
        start, end, time_checks = self._times(tz)
        checks += time_checks
        if start:
            cols["ts_start"] = start
        if end:
            cols["ts_end"] = end
        if self.extras:
            # No map at all for the common row whose extras are all "-" (%l in combined).
            pairs = ", ".join(f"{sql_str(f.spec.name)}: nullif({f.alias}, '-')" for f in self.extras)
            none = " AND ".join(f"{f.alias} = '-'" for f in self.extras)
            cols["extra"] = f"CASE WHEN {none} THEN NULL ELSE MAP {{{pairs}}} END"
        return cols, checks

    def _times(self, tz: str) -> tuple[str | None, str | None, list[tuple[str, str]]]:
        starts: list[str] = []
        ends: list[str] = []
        checks: list[tuple[str, str]] = []
        fraction = ""
        for f in self.time_fields:
            t: Typed = convert(f.spec.convert, f.alias, f.spec.arg, tz)
            if t.ok:
                checks.append((t.ok, f"bad {f.spec.directive} value"))
            if f.spec.convert in TIME_FRACTION:
                fraction = f" + to_microseconds(coalesce({t.sql}, 0))"
            elif (f.spec.arg or "").startswith("end:"):
                ends.append(t.sql)
            else:
                starts.append(t.sql)
        start = starts[0] + fraction if starts else None
        end = ends[0] + (fraction if not starts else "") if ends else None
        return start, end, checks


def compile_format(dialect: Dialect, fmt: str, label: str) -> CompiledFormat:
    items: list[str | Field] = []
    fields: list[Field] = []
    for tok in dialect.tokenize(fmt):
        if isinstance(tok, Directive):
            spec = dialect.spec(tok)
            if spec.literal is not None:
                _append_literal(items, spec.literal)
                continue
            f = Field(idx=len(fields), spec=spec)
            fields.append(f)
            items.append(f)
        else:
            _append_literal(items, tok)
    if not fields:
        raise FormatError(f"format {fmt!r} has no fields")
    for i, it in enumerate(items):
        if isinstance(it, Field):
            before = items[i - 1] if i else ""
            after = items[i + 1] if i + 1 < len(items) else ""
            it.quoted = (
                isinstance(before, str) and before.endswith(QUOTE)
                and isinstance(after, str) and after.startswith(QUOTE)
            )
    cf = CompiledFormat(dialect, fmt, label, items, fields, _regex(items))
    _assign_columns(cf)
    return cf


def _append_literal(items: list[str | Field], text: str) -> None:
    if items and isinstance(items[-1], str):
        items[-1] += text
    else:
        items.append(text)


def _regex(items: list[str | Field]) -> str:
    parts = []
    for it in items:
        if isinstance(it, str):
            parts.append(regex_escape(it))
        elif it.quoted:
            parts.append(f"({QUOTED_PATTERN})")
        else:
            pattern = VALUE_PATTERNS.get(it.spec.value, r"\S+")
            if it.spec.value == "token" and it.spec.spaces:
                pattern = r"\S+(?: \S+){%d}" % it.spec.spaces
            parts.append(f"({pattern})")
    return "^" + "".join(parts) + "$"


def _assign_columns(cf: CompiledFormat) -> None:
    """Give each canonical column to its best field; the others become `extra` entries."""
    claims: dict[str, list[Field]] = {}
    for f in cf.fields:
        if f.spec.column == _TS:
            cf.time_fields.append(f)
        elif f.spec.column and f.spec.column in schema.REQUEST_TYPES:
            claims.setdefault(f.spec.column, []).append(f)
        else:
            cf.extras.append(f)
    for col, fs in claims.items():
        winner = max(fs, key=lambda f: (f.spec.priority, -f.idx))
        cf.columns[col] = winner
        cf.extras += [f for f in fs if f is not winner]
    cf.extras.sort(key=lambda f: f.idx)


# ---- the split path ------------------------------------------------------------------

_CONT = object()  # a word that continues the field of the word before (a field with spaces)


def _segments(items: list[str | Field]) -> list[list[str | Field]]:
    segs: list[list[str | Field]] = [[]]
    for it in items:
        if isinstance(it, str):
            pieces = it.split(QUOTE)
            for k, piece in enumerate(pieces):
                if k:
                    segs.append([])
                if piece:
                    segs[-1].append(piece)
        else:
            segs[-1].append(it)
    return segs


def _words(seg: list[str | Field], sep: str) -> list[list]:
    words: list[list] = [[]]
    for it in seg:
        if isinstance(it, str):
            parts = it.split(sep)
            if parts[0]:
                words[-1].append(parts[0])
            for p in parts[1:]:
                words.append([p] if p else [])
        else:
            words[-1].append(it)
            for _ in range(it.spec.spaces):
                words.append([_CONT])
    return words


def _fast_plan(cf: CompiledFormat, rel: str) -> str | None:
    literals = "".join(it for it in cf.items if isinstance(it, str))
    sep = "\t" if "\t" in literals and " " not in literals.replace(QUOTE, "") else " "
    segs = _segments(cf.items)
    raw: dict[str, str] = {}
    conds: list[str] = []
    splits: list[str] = []
    quoted_split = len(segs) > 1
    for k, seg in enumerate(segs):
        piece = f"p[{k + 1}]" if quoted_split else "line"
        if k % 2 == 1:  # between quotes: exactly one field
            if len(seg) != 1 or not isinstance(seg[0], Field):
                return None
            raw[seg[0].alias] = piece
            continue
        if not any(isinstance(it, Field) for it in seg):
            conds.append(f"{piece} = {sql_str(''.join(seg))}")  # type: ignore[arg-type]
            continue
        words = _words(seg, sep)
        wname = f"w{k}"
        splits.append(f"string_split({piece}, {sql_str(sep)}) AS {wname}")
        conds.append(f"len({wname}) = {len(words)}")
        for group in _word_groups(words):
            conds += _group_fields(group, wname, sep, raw)
    if len(raw) != len(cf.fields):
        return None
    if quoted_split:
        conds.insert(0, f"len(p) = {len(segs)}")
    # Lines with a backslash carry escapes: only the exact path decodes them.
    split_quote = f", string_split(line, {sql_str(QUOTE)}) AS p" if quoted_split else ""
    inner = f"SELECT line_no, line{split_quote} FROM {rel} WHERE NOT contains(line, '\\')"
    mid = f"SELECT *{''.join(', ' + s for s in splits)} FROM ({inner})"
    cols = ", ".join(f"{raw[f.alias]} AS {f.alias}" for f in cf.fields)
    return f"SELECT line_no, line, {cols} FROM ({mid}) WHERE {' AND '.join(conds) or 'true'}"


def _word_groups(words: list[list]) -> list[tuple[int, list[list]]]:
    """Runs of consecutive words joined by fields that contain spaces: (first index, words)."""
    groups: list[tuple[int, list[list]]] = []
    for i, w in enumerate(words):
        if w and w[0] is _CONT and groups:
            groups[-1][1].append(w)
        else:
            groups.append((i, [w]))
    return groups


def _group_fields(
    group: tuple[int, list[list]], wname: str, sep: str, raw: dict[str, str]
) -> list[str]:
    """Fill `raw` with the SQL for each field in a word group; return extra conditions."""
    start, words = group
    fields = [it for w in words for it in w if isinstance(it, Field)]
    if not fields:
        return []
    n = len(words)
    text = (
        f"{wname}[{start + 1}]"
        if n == 1
        else "concat_ws(" + sql_str(sep) + ", " + ", ".join(f"{wname}[{start + 1 + j}]" for j in range(n)) + ")"
    )
    template: list = []
    for j, w in enumerate(words):
        if j and w[0] is not _CONT:  # after a field with spaces the separator is its own text
            template.append(sep)
        template += [it for it in w if it is not _CONT]
    if len(fields) == 1:
        pre = "".join(t for t in template[: template.index(fields[0])] if isinstance(t, str))
        post = "".join(t for t in template[template.index(fields[0]) + 1 :] if isinstance(t, str))
        if not pre and not post:
            raw[fields[0].alias] = text
        else:
            raw[fields[0].alias] = f"substr({text}, {len(pre) + 1}, length({text}) - {len(pre) + len(post)})"
        return []
    # Several fields in one word (%v:%p): a small regex over that word only.
    pattern = "^" + "".join(
        regex_escape(t) if isinstance(t, str) else f"({VALUE_PATTERNS.get(t.spec.value, r'.+?')})"
        for t in template
    ) + "$"
    for g, f in enumerate(fields, start=1):
        raw[f.alias] = f"regexp_extract({text}, {sql_str(pattern)}, {g})"
    return [f"regexp_full_match({text}, {sql_str(pattern)})"]
