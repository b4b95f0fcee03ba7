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

import re
import string
from dataclasses import dataclass, field, replace

from logan import schema
from logan.errors import FormatError
from logan.read.convert import EXTRA_CONVERTERS, TIME_FRACTION, Typed, absent, convert, sql_str
from logan.read.dialects import Dialect, FieldSpec
from logan.read.syntax import Directive

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
    # nginx $time_local: the CLF time without brackets (the brackets are the format's).
    "clf_time_bare": r"\d{2}/\w{3}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}",
    # nginx $upstream_*: one value per upstream tried, ", " between tries and " : " where an
    # internal redirect moved to another upstream group.
    "list": r"\S+(?:(?:, | : )\S+)*",
    # nginx writes nothing at all for a variable that is found but empty ("[]").
    "token0": r"\S*",
    # A host name never holds "/": "$host$request_uri" splits where the path begins.
    "host": r"[^\s/]+",
    # HAProxy timers and counts: "-1" (a timer never reached), "+123" (logasap: still
    # running when logged; retries: redispatched).
    "signed": r"[+-]?\d+",
    # HAProxy %tr/%t: 06/Feb/2009:12:14:14.655, local time with ms and no zone.
    "hap_date": r"\d{2}/\w{3}/\d{4}:\d{2}:\d{2}:\d{2}\.\d{3}",
    # HAProxy %hr/%hs: "{a|b}"; '{', '|', '}' and '"' inside are written #7B, #7C, #7D, #22.
    "braces": r"\{[^{}]*\}",
    # Apache %q: "?a=1", or nothing at all when there is no query string.
    "query": r"(?:\?\S*)?",
    # HAProxy %hrl/%hsl: one quoted value per captured header, spaces between them.
    "quoted_list": r'"[^"]*"(?: "[^"]*")*',
}
# Value shapes that can never contain a separator character such as "/" or ":".
NUMERIC_VALUES = {"int", "signed"}
QUOTED_PATTERN = r'(?:[^"\\]|\\.)*'
# A quoted field's text per escape mode: nginx's default escaping never leaves a raw '"' in
# a value; with no escaping at all (nginx escape=none, varnishncsa) a value may hold one.
QUOTED_BY_ESCAPE = {"nginx": r'[^"]*', "none": r".*?"}
# The texts that start an escape the exact path decodes (CompiledFormat._decode), per escape
# mode. A line holding one is left to the regex; any other backslash is text both paths keep
# as written (Apache's \xhh for a byte of a referer or user agent that is no ASCII). In a
# mode not named here a backslash may start anything: a line with one is left to the regex.
DECODED_ESCAPES = {"apache": ('\\"', "\\\\"), "json": ('\\"', "\\\\"), "nginx": ("\\x22", "\\x5C")}
# HAProxy writes '"' in a captured header as #22, but not in a sample fetch's value
# (%{+Q}[capture.req.hdr(1)] logs a user agent's quotes as they came): a quoted field ends
# at the first quote that the rest of the format can follow (the last runs to the end).
QUOTED_BY_ESCAPE["haproxy"] = r".*?"

# Columns a format can fill directly; the rest are derived or classified.
_TS = "ts"


def extra_entry(i: int) -> str:
    """The typed projection's name of the i-th `extra` entry's value (CompiledFormat.typed)."""
    return f"__extra_{i}"


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
    escape: str = "apache"  # decoder of the exact path: apache, json, nginx, none

    # ---- raw field texts -------------------------------------------------------------
    def fast_raw_sql(self, rel: str) -> str | None:
        """SELECT line_no, line, f0.. FROM rel for the lines the split path can read, or
        None when the format's shape does not allow splitting."""
        return _fast_plan(self, rel)

    def match_sql(self, line: str = "line") -> str:
        """SQL predicate: the exact path's regex reads the line."""
        return f"regexp_full_match({line}, {sql_str(self.regex)})"

    def exact_raw_sql(self, rel: str) -> str:
        names = ", ".join(sql_str(f.alias) for f in self.fields)
        cols = [f"{self._decode(f'm.{f.alias}', f)} AS {f.alias}" for f in self.fields]
        return (
            f"SELECT line_no, line, {self.match_sql()} AS matched, "
            + ", ".join(cols)
            + f" FROM (SELECT line_no, line, regexp_extract(line, {sql_str(self.regex)}, "
            f"[{names}]) AS m FROM {rel})"
        )

    def cut_short(self) -> CompiledFormat | None:
        """This format reading a line cut inside its last field, a quoted one, by a syslog
        line-length limit (HAProxy's `len`, 1024 bytes by default, cuts the request line of
        httplog, which comes last): the field runs to the end of the line, unclosed, and
        every field before the cut reads as usual. None when the format ends otherwise or
        its lines do not go through syslog (no prefixes in the dialect)."""
        if not self.dialect.prefixes:
            return None
        if len(self.items) < 3 or self.items[-1] != QUOTE or not isinstance(self.items[-2], Field):
            return None
        if not self.items[-2].quoted:
            return None
        # what was written of the field holds no quote: a line of a longer format (httpslog
        # read as httplog: `"GET / HTTP/1.1" 0/0/0/0/1 ...`) is no cut line
        regex = _regex(self.items[:-2], self.escape).removesuffix("$") + '([^"]*)$'
        return replace(self, regex=_with_prefix(regex, self.dialect))

    def decodes(self, f: Field) -> bool:
        """Whether the exact path decodes escapes (DECODED_ESCAPES) in the field's text."""
        return self.escape == "nginx" or (f.quoted and self.escape in ("apache", "json"))

    def _decode(self, expr: str, f: Field) -> str:
        if not self.decodes(f):
            return expr
        if self.escape == "nginx":
            # nginx escape=default writes '"', '\\' and bytes < 0x20 or >= 0x7f of every
            # variable as \xHH: undo \x22 and \x5C, keep the rest as written (like Apache's
            # \xhh). Every '\\' in the line starts an escape, so the two passes cannot mix.
            return f"replace(replace({expr}, '\\x22', '\"'), '\\x5C', '\\')"
        # \" -> " and \\ -> \ in one left-to-right pass; \xhh (JSON: \n, \u0001) stays.
        return f"regexp_replace({expr}, '\\\\([\"\\\\])', '\\1', 'g')"

    # ---- typed and derived columns ----------------------------------------------------
    def typed(
        self, tz: str, numbers: frozenset[str] = frozenset()
    ) -> tuple[dict[str, str], list[tuple[str, str]]]:
        """(canonical column -> SQL over raw fields, [(ok predicate, reject reason)]).
        `numbers`: fields that arrive as the BIGINT the C split read (logan/read/native.py)."""
        cols: dict[str, str] = {}
        checks: list[tuple[str, str]] = []
        for col, f in self.columns.items():
            number = f.alias in numbers
            t = convert(f.spec.convert, f.alias, f.spec.arg, tz, number)
            cols[col] = t.sql
            if t.ok:
                typ = schema.REQUEST_TYPES[col]
                if typ in ("SMALLINT", "INTEGER"):  # a status of 99999 is a bad line, not a crash
                    cols[col] = f"TRY_CAST({t.sql} AS {typ})"
                    none = absent(f.alias, number)
                    fits = f"({none} OR {cols[col]} IS NOT NULL)"
                    # When the wide check is the same test on the wide value, a value that fits
                    # passes it too: testing both cost 20 ms per 64 MB block of HAProxy lines.
                    wide_only = t.ok == f"({none} OR {t.sql} IS NOT NULL)"
                    t = Typed(cols[col], fits if wide_only else f"({t.ok} AND {fits})")
                checks.append((t.ok, f"bad {f.spec.directive} value"))
        for f in self.fields:  # columns a field fills besides its own (upstream_tries)
            for col, conv in f.spec.also:
                if col not in cols and col in schema.REQUEST_TYPES:
                    cols[col] = convert(conv, f.alias, f.spec.arg, tz).sql
        start, end, time_checks = self._times(tz, numbers)
        checks += time_checks
        if start:
            cols["ts_start"] = start
        if end:
            cols["ts_end"] = end
        pairs = self._extra_pairs(tz, numbers)
        if pairs:
            # Every entry of the format, NULL where the line has none ("-"), and no map at all
            # when none holds a value (%l "-" in combined). A struct cast to a MAP is the one
            # way DuckDB builds a map without checking each row's keys for duplicates:
            # map_from_entries over the entries that hold a value cost 3-4x more, 11 us a
            # row for the 17 extras of Apache's "extended" format (docs/benchmarks.md).
            entries = ", ".join(f"{sql_str(k)}: {v}" for k, v in pairs)
            # Most lines have no entry (HAProxy: "-" cookies, no captures): testing the values
            # first builds no map for them, 50 ms less per 64 MB block of HAProxy lines.
            some = " OR ".join(f"({v}) IS NOT NULL" for _, v in pairs)
            cols["extra"] = f"CASE WHEN {some} THEN CAST({{{entries}}} AS MAP(VARCHAR, VARCHAR)) END"
            # The same map as a store keeps it, an entry a column (schema.EXTRA_SET): which
            # of the two a batch writes is rows.stored_columns' choice.
            set_id = schema.extra_set_id([k for k, _ in pairs])
            cols[schema.EXTRA_SET] = f"CASE WHEN {some} THEN {set_id} END"
            cols |= {extra_entry(i): v for i, (_, v) in enumerate(pairs)}
        return cols, checks

    def extra_keys(self) -> list[str]:
        """The entries of this format's `extra` map, in order."""
        return [k for k, _ in self._extra_pairs("UTC")]

    def _extra_pairs(self, tz: str, numbers: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
        """(entry, SQL of its value) for each entry of the `extra` map."""
        pairs = [(f.spec.name, self._extra_value(f, tz)) for f in self.extras]
        flags = self._flags(tz, numbers)
        return pairs + [(name, f"CASE WHEN {flag} THEN 'true' END") for name, flag in flags]

    def _extra_value(self, f: Field, tz: str) -> str:
        if f.spec.convert in EXTRA_CONVERTERS:
            return convert(f.spec.convert, f.alias, f.spec.arg, tz).sql
        return f"nullif({f.alias}, '-')"

    def _flags(self, tz: str, numbers: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
        """(extra entry, predicate) for fields whose text may carry a marker (logasap)."""
        found: dict[str, list[str]] = {}
        for f in self.fields:
            number = f.alias in numbers
            flag = convert(f.spec.convert, f.alias, f.spec.arg, tz, number).flag if f.spec.flag else None
            if flag:
                found.setdefault(f.spec.flag, []).append(flag)  # type: ignore[arg-type]
        return [(name, "(" + " OR ".join(preds) + ")") for name, preds in found.items()]

    def _times(
        self, tz: str, numbers: frozenset[str] = frozenset()
    ) -> tuple[str | None, str | None, list[tuple[str, str]]]:
        starts: list[str] = []
        ends: list[str] = []
        checks: list[tuple[str, str]] = []
        fraction = ""
        # The most precise of several times first (nginx $msec over $time_local); stable.
        for f in sorted(self.time_fields, key=lambda f: -f.spec.priority):
            t: Typed = convert(f.spec.convert, f.alias, f.spec.arg, tz, f.alias in numbers)
            if t.ok:
                checks.append((t.ok, f"bad {f.spec.directive} value"))
            if f.spec.convert in TIME_FRACTION:
                fraction = f" + to_microseconds(coalesce({t.sql}, 0))"
            elif f.spec.role == "end" or (f.spec.arg or "").startswith("end:"):
                ends.append(t.sql)
            else:
                starts.append(t.sql)
        start = starts[0] + fraction if starts else None
        end = ends[0] + (fraction if not starts else "") if ends else None
        return start, end, checks


def compile_format(dialect: Dialect, fmt: str, label: str) -> CompiledFormat:
    items: list[str | Field] = []
    fields: list[Field] = []
    escape, body = dialect.split_escape(fmt)
    for tok in dialect.tokenize(body):
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
                isinstance(before, str)
                and before.endswith(QUOTE)
                and isinstance(after, str)
                and after.startswith(QUOTE)
            )
    regex = _with_prefix(_regex(items, escape), dialect)
    cf = CompiledFormat(dialect, fmt, label, items, fields, regex, escape=escape)
    _assign_columns(cf)
    return cf


def _append_literal(items: list[str | Field], text: str) -> None:
    if items and isinstance(items[-1], str):
        items[-1] += text
    else:
        items.append(text)


def _regex(items: list[str | Field], escape: str = "apache") -> str:
    parts = []
    absorbed = False  # an optional field took the space that starts this literal
    for i, it in enumerate(items):
        if isinstance(it, str):
            parts.append(regex_escape(it[1:] if absorbed else it))
            absorbed = False
        elif it.quoted:
            parts.append(f"({QUOTED_BY_ESCAPE.get(escape, QUOTED_PATTERN)})")
        else:
            pattern = value_pattern(it, items[i + 1] if i + 1 < len(items) else "")
            if it.spec.optional:
                # Absent, it writes nothing and the separator after it goes too.
                nxt = items[i + 1] if i + 1 < len(items) else ""
                absorbed = isinstance(nxt, str) and nxt.startswith(" ")
                parts.append(f"(?:({pattern}){' ' if absorbed else ''})?")
            else:
                parts.append(f"({pattern})")
    return "^" + "".join(parts) + "$"


def value_pattern(f: Field, following: str | Field) -> str:
    """The regex for a bare field's text. A shapeless token written right against the next
    field (%U%q) must stop as early as it can, or it swallows its neighbour; a field with a
    shape of its own ($host$request_uri: no "/" in a host) keeps its greed."""
    pattern = VALUE_PATTERNS.get(f.spec.value, r"\S+")
    if f.spec.value == "token" and f.spec.spaces:
        pattern = r"\S+(?: \S+){" + str(f.spec.spaces) + "}"
    if isinstance(following, Field) and pattern in (r"\S+", r"\S*"):
        pattern += "?"
    return pattern


def prefix_regex(dialect: Dialect) -> str | None:
    """One RE2 alternation of the line prefixes a dialect's lines may carry (syslog
    headers), or None. The prefixes have no capture groups, so field numbers stay."""
    if not dialect.prefixes:
        return None
    return "(?:" + "|".join(f"(?:{p['regex']})" for p in dialect.prefixes.values()) + ")"


def strip_prefix_sql(dialect: Dialect, line: str) -> str:
    """SQL for `line` without the dialect's prefix it starts with, if any: the cut both the
    split path and events make. Alone, RE2 picks the prefix that the exact path's regex
    ("prefix? format") picks too whenever the rest reads as the format, so a line the split
    path takes reads the same on both paths.

    regexp_replace takes the match off in one call: 15 ms less per 64 MB block of HAProxy
    lines than substr(line, length(regexp_extract(..)) + 1). A cut at the first ": " costs
    less still, but that is not the header's end when the host ends with ":" or, with no
    host, the tag is followed by what reads as another tag; and checking that the text
    before it is a header (the date character by character, host, tag, pid) costs DuckDB
    more than the regex."""
    prefix = prefix_regex(dialect)
    if prefix is None:
        return line
    return f"regexp_replace({line}, {sql_str('^' + prefix)}, '')"


def _with_prefix(regex: str, dialect: Dialect) -> str:
    prefix = prefix_regex(dialect)
    return regex if prefix is None else "^" + prefix + "?" + regex[1:]


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
    # Two directives may share an extra name (%s and %<s), or one told apart by case only
    # (%{Cookie}i and %{cookie}i): the map needs unique keys, and DuckDB's struct that
    # makes it unique names whatever their case.
    seen: dict[str, int] = {}
    for f in cf.extras:
        n = seen[f.spec.name.lower()] = seen.get(f.spec.name.lower(), 0) + 1
        if n > 1:
            f.spec = replace(f.spec, name=f"{f.spec.name}#{n}")


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


def _without_optional(items: list[str | Field], present: int = 0) -> list[str | Field]:
    """The format as written when every optional field is absent (the SQL split's case), or
    all but the first `present` of them (one of the C split's: logan/read/native.py)."""
    out: list[str | Field] = []
    drop_space = False
    for it in items:
        if isinstance(it, Field) and it.spec.optional and present > 0:
            present -= 1
        elif isinstance(it, Field) and it.spec.optional:
            drop_space = True
            continue
        if isinstance(it, str):
            _append_literal(out, it[1:] if drop_space and it.startswith(" ") else it)
        else:
            out.append(it)
        drop_space = False
    return out


def separator(items: list[str | Field]) -> str:
    """What separates the fields outside quotes: a tab when the format's literals have
    tabs and no space, else a space."""
    literals = "".join(it for it in items if isinstance(it, str))
    return "\t" if "\t" in literals and " " not in literals.replace(QUOTE, "") else " "


def _fast_plan(cf: CompiledFormat, rel: str) -> str | None:
    items = _without_optional(cf.items)
    sep = separator(items)
    segs = _segments(items)
    raw: dict[str, str] = {}
    conds: list[str] = []
    splits: list[str] = []
    subsplits: dict[str, str] = {}
    quoted_split = len(segs) > 1
    for k, seg in enumerate(segs):
        piece = f"p[{k + 1}]" if quoted_split else "__body"
        if k % 2 == 1 and not any(isinstance(it, Field) for it in seg):
            # Only literal text between two quotes: a JSON key ("t":"$msec").
            conds.append(f"{piece} = {sql_str(''.join(seg))}")  # type: ignore[arg-type]
            continue
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
        src, lists = _joined_lists(seg, piece, sep)
        if lists:  # a raw \x01 (escape=none) would come back as ", ": leave it to the regex
            conds += [f"NOT contains({piece}, {byte})" for _, byte in _LIST_MARKS]
        splits.append(f"string_split({src}, {sql_str(sep)}) AS {wname}")
        conds.append(f"len({wname}) = {len(words)}")
        for group in _word_groups(words):
            conds += _group_fields(group, wname, sep, raw, subsplits)
        conds += _restore_lists(seg, lists, raw)
    if len(raw) != sum(isinstance(it, Field) for it in items):
        return None
    conds += [c for f in cf.fields if f.alias in raw and (c := _shape_sql(f.spec.value, raw[f.alias]))]
    if quoted_split:
        conds.insert(0, f"len(p) = {len(segs)}")
    # Lines with an escape the exact path decodes are its own. A tab, CR or form feed would
    # stay inside its word, where the regex's \S takes none.
    split_quote = f", string_split(__body, {sql_str(QUOTE)}) AS p" if quoted_split else ""
    tab = "".join(f" AND NOT contains(line, chr({c}))" for c in (9, 13, 12)) if sep == " " else ""
    inner = (
        f"SELECT line_no, line, __body{split_quote} FROM (SELECT line_no, line, "
        f"{_body_sql(cf.dialect)} AS __body FROM {rel} WHERE {_no_decoded_escape(cf.escape)}{tab})"
    )
    mid = f"SELECT *{''.join(', ' + s for s in splits)} FROM ({inner})"
    if subsplits:
        mid = f"SELECT *{''.join(f', {sql} AS {name}' for name, sql in subsplits.items())} FROM ({mid})"
    cols = ", ".join(f"{raw.get(f.alias, 'CAST(NULL AS VARCHAR)')} AS {f.alias}" for f in cf.fields)
    return f"SELECT line_no, line, {cols} FROM ({mid}) WHERE {' AND '.join(conds) or 'true'}"


def _no_decoded_escape(escape: str) -> str:
    """SQL: the line holds no escape the exact path decodes (DECODED_ESCAPES)."""
    texts = DECODED_ESCAPES.get(escape, ("\\",))
    return " AND ".join(f"NOT contains(line, {sql_str(t)})" for t in texts)


_DIGITS = "'0123456789'"


def _digits(x: str) -> str:
    return f"({x} <> '' AND ltrim({x}, {_DIGITS}) = '')"


def _shape_sql(value: str, x: str) -> str | None:
    """The text `x` has the shape VALUE_PATTERNS gives `value`, in string functions (several
    times cheaper than a regex a row): a split reads a field only where the regex would.
    A cast alone lets `+5`, ` 5` or `0x10` through, and strptime a day written `5`."""
    unsigned = f"CASE WHEN starts_with({x}, '-') THEN substr({x}, 2) ELSE {x} END"
    if value == "int":
        return f"({x} = '-' OR {_digits(unsigned)})"
    if value == "signed":
        return _digits(f"CASE WHEN {x}[1] IN ('+', '-') THEN substr({x}, 2) ELSE {x} END")
    if value == "decimal":
        whole = f"split_part({unsigned}, '.', 1)"
        frac = f"CASE WHEN contains({unsigned}, '.') THEN substr({unsigned}, strpos({unsigned}, '.') + 1) END"
        return f"({x} = '-' OR ({_digits(whole)} AND ({frac} IS NULL OR {_digits(frac)})))"
    if value == "clf_time":
        inner = f"substr({x}, 2, length({x}) - 2)"
        brackets = f"starts_with({x}, '[') AND ends_with({x}, ']') AND length({x}) > 2"
        return f"({brackets} AND NOT contains({inner}, ']'))"
    if value in ("clf_time_bare", "hap_date"):  # fixed width: 05/Nov/2013:19:00:00 +0000, ...:00.022
        # every digit where the regex has \d (strptime would take "5\v" for a second), a word
        # for the month
        digits = f"translate({x}, '123456789', '000000000')"
        tails = (
            ("/0000:00:00:00 +0000", "/0000:00:00:00 -0000")
            if value == "clf_time_bare"
            else ("/0000:00:00:00.000",)
        )
        month = f"translate(substr({x}, 4, 3), {sql_str(_WORD_CHARS)}, '') = ''"
        return (
            f"(length({x}) = {26 if value == 'clf_time_bare' else 24} AND substr({digits}, 1, 3) = '00/' "
            f"AND substr({digits}, 7) IN ({', '.join(sql_str(t) for t in tails)}) AND {month})"
        )
    return None


_WORD_CHARS = string.ascii_letters + string.digits + "_"  # what the regex's \w takes


# nginx $upstream_* lists ("0.100, 0.004 : 0.010") hold spaces in an unquoted stretch. For
# the split, ", " and " : " become the bytes \x01 and \x02 (nginx never leaves them raw; a
# line that has one keeps to the regex), and the list fields get them back. Another field of
# that stretch holding one had a ", " the format does not allow: the line goes to the regex.
_LIST_MARKS = ((", ", "chr(1)"), (" : ", "chr(2)"))


def _joined_lists(seg: list[str | Field], piece: str, sep: str) -> tuple[str, bool]:
    lists = sep == " " and any(isinstance(it, Field) and it.spec.value == "list" for it in seg)
    if not lists or any(m in it for it in seg if isinstance(it, str) for m, _ in _LIST_MARKS):
        return piece, False
    for mark, byte in _LIST_MARKS:
        piece = f"replace({piece}, {sql_str(mark)}, {byte})"
    return piece, True


def _restore_lists(seg: list[str | Field], lists: bool, raw: dict[str, str]) -> list[str]:
    if not lists:
        return []
    conds = []
    for f in (it for it in seg if isinstance(it, Field)):
        if f.spec.value == "list":
            for mark, byte in _LIST_MARKS:
                raw[f.alias] = f"replace({raw[f.alias]}, {byte}, {sql_str(mark)})"
        else:
            conds.append(f"NOT regexp_matches({raw[f.alias]}, '[\x01\x02]')")
    return conds


def _never_empty(f: Field) -> bool:
    """A field the exact path's regex never reads as "": the split paths check it is not
    empty (`static/`, a missing field beside a doubled space), whatever its type check
    would say of "" (nginx's upstream time reads "" as "-"). A quoted field may be empty
    ("" is Apache's referer when a client sends an empty one): the regex reads it as it
    reads any quoted text, and so must the splits, or every such line (117 of netnea's
    first 300,000) leaves its batch to the regex."""
    return not f.quoted and re.fullmatch(VALUE_PATTERNS.get(f.spec.value, r"\S+"), "") is None


def _body_sql(dialect: Dialect) -> str:
    """The line without its prefix (syslog header), if it has one of the dialect's."""
    return strip_prefix_sql(dialect, "line")


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
    group: tuple[int, list[list]], wname: str, sep: str, raw: dict[str, str], subsplits: dict[str, str]
) -> list[str]:
    """Fill `raw` with the SQL for each field in a word group; return extra conditions."""
    start, words = group
    fields = [it for w in words for it in w if isinstance(it, Field)]
    if not fields:
        # A word of literal text only (or the empty word between two spaces): it must be
        # there as written, or a line with other spacing would shift every field after it.
        literal = "".join(t for w in words for t in w if isinstance(t, str))
        return [f"{wname}[{start + 1}] = {sql_str(literal)}"]
    n = len(words)
    text = (
        f"{wname}[{start + 1}]"
        if n == 1
        else "concat_ws("
        + sql_str(sep)
        + ", "
        + ", ".join(f"{wname}[{start + 1 + j}]" for j in range(n))
        + ")"
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
            return [f"{text} <> ''"] if n == 1 and _never_empty(fields[0]) else []
        raw[fields[0].alias] = f"substr({text}, {len(pre) + 1}, length({text}) - {len(pre) + len(post)})"
        # the literal text around the field must be there as written ("[" and "]" of [%tr])
        return [
            f"length({text}) >= {len(pre) + len(post)}",
            *([f"starts_with({text}, {sql_str(pre)})"] if pre else []),
            *([f"ends_with({text}, {sql_str(post)})"] if post else []),
        ]
    split = _split_fields(template, text, fields, f"{wname}_{start + 1}", raw, subsplits)
    if split is not None:
        return split
    # Several fields in one word (%v:%p): a small regex over that word only.
    pieces = [
        regex_escape(t) if isinstance(t, str) else f"({value_pattern(t, (template + [''])[k + 1])})"
        for k, t in enumerate(template)
    ]
    pattern = "^" + "".join(pieces) + "$"
    for g, f in enumerate(fields, start=1):
        raw[f.alias] = f"regexp_extract({text}, {sql_str(pattern)}, {g})"
    return [f"regexp_full_match({text}, {sql_str(pattern)})"]


def _split_fields(
    template: list, text: str, fields: list[Field], name: str, raw: dict[str, str], subsplits: dict[str, str]
) -> list[str] | None:
    """Several fields in one word joined by one separator character (HAProxy
    %TR/%Tw/%Tc/%Tr/%Ta, %b/%s, %ci:%cp): split it instead of running a regex, or None
    when the word has another shape."""
    seps = template[1::2]
    if (
        len(template) != 2 * len(fields) - 1
        or template[0::2] != fields
        or len(set(seps)) != 1
        or len(seps[0]) != 1
    ):
        return None
    c = sql_str(seps[0])
    last = fields[-1]
    if len(fields) == 2 and last.spec.value in NUMERIC_VALUES:
        # client:port with an IPv6 client (2001:db8::1:443): the port is after the last ":".
        raw[last.alias] = f"split_part({text}, {c}, -1)"
        raw[fields[0].alias] = f"left({text}, length({text}) - length({raw[last.alias]}) - 1)"
        first_set = [f"NOT starts_with({text}, {c})"] if _never_empty(fields[0]) else []
        return [f"contains({text}, {c})", *first_set]
    subsplits[name] = f"string_split({text}, {c})"
    for j, f in enumerate(fields, start=1):
        raw[f.alias] = f"{name}[{j}]"
    all_set = [f"NOT list_contains({name}, '')"] if any(_never_empty(f) for f in fields) else []
    return [f"len({name}) = {len(fields)}", *all_set]
