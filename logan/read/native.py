"""The split path compiled to C (logan/read/_split.c): a format's plan run over a batch's lines.

The plan is made from the same segments and words as the SQL split path
(logan/read/compile.py), so it takes the lines that path takes, or fewer, and reads them to the
same raw field texts. It also takes lines with an escape the exact path decodes (a user
agent with \" in it), which the SQL split leaves to it, and decodes them alike. The exact
path reads or rejects the rest. It is several times faster
than `string_split` in DuckDB and runs without the GIL. When the extension was not built
(no C compiler at install time) `available()` is False and the SQL split path does the work.
"""

from __future__ import annotations

import functools
import itertools
import random
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from logan.read.compile import (
    _CONT,
    DECODED_ESCAPES,
    NUMERIC_VALUES,
    QUOTE,
    CompiledFormat,
    Field,
    _never_empty,
    _segments,
    _without_optional,
    _word_groups,
    _words,
    prefix_regex,
    separator,
    value_pattern,
)
from logan.read.convert import NUMBER_FORMS, convert, sql_str, time_pattern
from logan.read.sources import BUFFERS, ROW_GROUP, Batch, int64_array, int64_values, scan_rows

try:
    from logan.read import _split
except ImportError:  # built without a C compiler
    _split = None

_LITERAL, _FIELD = 0, 1
_BAD, _STOP, _INNER_SEP, _LIST_SEP = 1, 2, 3, 4
# What a backslash is to a field's table, by the format's escape mode: text, unless it starts
# an escape the exact path decodes (compile.DECODED_ESCAPES; _split.c checks each kind). In
# another mode a line with a backslash is left to the regex.
_ESCAPE_CHECK = {('\\"', "\\\\"): 5, ("\\x22", "\\x5C"): 6}
_ESCAPE_CODE = {mode: _ESCAPE_CHECK[texts] for mode, texts in DECODED_ESCAPES.items()}
# ...and in a field whose escapes the exact path decodes, the C split decodes them alike
# (the code plus 2), so that a user agent with a quote in it does not send its line to the
# regex: that line's row was a second INSERT in its batch, which wrote the batch's last row
# group again, on one thread (a 1 GB Apache log with 463 such lines: 29.7 s against 19.0 s).
_DECODE = 2
_STEP = struct.Struct("<11i")
# Shapes the steps check (_split.c): a VALUE_PATTERNS entry whose check (a cast) would let
# wider texts through, and digits for a field checked here instead of by its check.
_SHAPES = {"int": 1, "signed": 2, "decimal": 3}
_DIGITS, _TIME = 4, 5
# The strftime directives _split.c reads a time with: numbers at their full width, months
# as Jan..Dec, offsets as +HHMM or +HH:MM.
TIME_DIRECTIVES = frozenset("YmdHMSgfbz")
# Bytes a field between separators never holds: what RE2's \S refuses, and the quote that
# ends a quoted field. (A backslash is what the format's escapes make it: _ESCAPE_CODE.)
_NOT_IN_WORD = frozenset(b' \t\n\f\r"')


def available() -> bool:
    return _split is not None


@dataclass
class Plan:
    steps: bytes
    literals: bytes
    forbidden: bytes  # one 256-byte table per field
    fields: list[Field]  # in output order
    absent: list[str]  # fields not cut out (optional, or not wanted): NULL on every line
    checked: frozenset[str]  # fields whose checks the steps made (digits, times)
    # fields of those handed over as BIGINT: digits ("-" NULL, "-1" -1), a time's microseconds
    numbers: frozenset[str]
    sep: int
    no_tab: bool
    has_prefix: bool
    # the fields whose distinct texts classification keys on (a request line, and a vhost
    # where the format has one): read_batch numbers each line's texts (KEY_ID) and hands
    # every distinct combination over once (see Read)
    keyed: tuple[str, ...] = ()
    # per keyed field, how its texts lose their query first, when classification reads none
    # (without_query: "request" for a request line, "target" for a request target; None:
    # kept whole)
    cut: tuple[str | None, ...] = ()
    # the reader hands each line's query over (ROW_QUERY), cut from the keyed request line
    # (cut "request") as rows.py derives it: the format's request is that field's text as is
    row_query: bool = False
    # and, where a batch is classified row by row (inline), each line's route template and
    # indirector (ROW_TEMPLATE, ROW_INDIRECTOR) from the path rows.py derives from it
    row_templates: bool = False
    # the keyed field whose texts are the format's request lines as they are: the reader
    # takes each distinct one apart as rows.py would (KEY_PARTS, KEY_JOINED, beside the
    # keys), and with `puppet`, parses it as the Puppet profile does (PUPPET_PARTS)
    request_of: str | None = None
    puppet: bool = False

    def sql(self, table: str) -> str:
        """The rows of read_batch() registered as `table`, with every field of the format:
        NULL where the plan cuts none out (not as Arrow columns of NULLs: 20 MB a batch)."""
        nulls = "".join(f", CAST(NULL AS VARCHAR) AS {a}" for a in self.absent)
        return f"SELECT *{nulls} FROM {table}"


@dataclass
class _Lit:
    text: str


@dataclass
class _Fld:
    field: Field
    also: frozenset[int] = frozenset()  # bytes it may not hold besides the word's own
    last: bool = False  # up to the last stop byte of its word (an IPv6 client before ":port")
    braced: bool = False  # the text within "{" and "}" (_braced)


def _braced(f: Field) -> bool:
    """A field written within braces whose converter takes them off (HAProxy's captured
    headers, "{a|b}"): the split hands over the text within them, which converts to the
    same value (convert._braces), and which may hold spaces and be empty, as the regex's
    pattern for it may (compile.VALUE_PATTERNS["braces"])."""
    return f.spec.value == "braces" and f.spec.convert == "braces"


# The lines of a batch that choose among a format's plans (plan's `sample`).
SAMPLE_LINES = 2048


def plan(
    cf: CompiledFormat,
    values: set[str] | None = None,
    checks: set[str] = frozenset(),
    tz: str = "UTC",
    sample: tuple[duckdb.DuckDBPyConnection, Batch] | None = None,
) -> Plan | None:
    """The format as C steps, or None when the SQL split path cannot take its lines either
    or their shape needs what the C steps lack.

    `values`: the fields (aliases) whose texts are wanted; None: all. A field a check reads
    (`checks`) whose check passes any text of a few digits is checked here instead, if the
    text is such digits (a line with another value goes to the exact path, which checks it
    in SQL): its check is in `Plan.checked`, and it is not cut out unless wanted. A wanted
    field so checked is handed over as a number when it can be (number_fields), and so is
    a wanted time of a pattern the steps can read (time_patterns).

    A format with optional fields (HAProxy's %hr %hs, which write nothing at all where no
    header is captured, or "{...}" on every line where one is) has a plan for each number
    of them present, from none: with `sample` (a cursor, a batch), the one that takes the
    most of SAMPLE_LINES of the batch's lines, else the one for none. Lines of the other
    shapes go to the exact path. A config either captures headers or not: every line of a
    log with captures went to the regex, 24.5 s for 323 MB of HAProxy lines (the same
    lines without captures, 250 MB: 4.7 s)."""
    if not available() or cf.fast_raw_sql("__batch") is None:
        return None
    digits = {} if values is None else digit_limits(cf, set(checks), tz)
    numbers = number_fields(cf, {a: d for a, d in digits.items() if values and a in values}, tz)
    times = {} if values is None else time_patterns(cf, values, tz)
    wanted = None if values is None else values | (set(checks) - set(digits))
    optional = sum(f.spec.optional for f in cf.fields) if sample is not None else 0
    made = [_plan(cf, k, wanted, digits, numbers, times) for k in range(optional + 1)]
    plans = [p for p in made if p is not None]
    if len(plans) <= 1 or sample is None:
        return plans[0] if plans else None
    some, line_no, body = _sample_lines(cf, *sample)
    # the first of equals: fewest present
    return max(plans, key=lambda p: split(p, some, line_no, body)[0].num_rows)


def _sample_lines(
    cf: CompiledFormat, con: duckdb.DuckDBPyConnection, batch: Batch
) -> tuple[pa.Array, np.ndarray, np.ndarray | None]:
    """SAMPLE_LINES lines spread over the batch (not its first ones only: a log may start
    with a server's messages), their line numbers and where each one's format begins (every
    plan of a format has the same syslog prefix or none): what split() reads."""
    lines = batch.table.column("line").combine_chunks()
    idx = np.unique(np.linspace(0, len(lines) - 1, min(len(lines), SAMPLE_LINES)).astype(np.int64))
    views, data = _views(lines)
    some = _taken_views(views, idx, data)
    line_no = int64_values(batch.table.column("line_no"))[idx]
    return some, line_no, header_lengths(con, cf, some, line_no) if cf.dialect.prefixes else None


def _plan(
    cf: CompiledFormat,
    present: int,
    wanted: set[str] | None,
    digits: dict[str, tuple[int, int]],
    numbers: frozenset[str],
    times: dict[str, str],
) -> Plan | None:
    """plan() for the lines where the first `present` optional fields are written."""
    items = _without_optional(cf.items, present)
    sep = separator(items)
    steps: list[_Lit | _Fld] = []
    for k, seg in enumerate(_segments(items)):
        if k:
            steps.append(_Lit(QUOTE))
        fields = [it for it in seg if isinstance(it, Field)]
        if not fields:
            steps.append(_Lit("".join(seg)))  # type: ignore[arg-type]
        elif k % 2 == 1:
            steps.append(_Fld(fields[0]))  # between quotes: the one field (fast_raw_sql checked)
        else:
            for start, group in _word_groups(_words(seg, sep)):
                if start:
                    steps.append(_Lit(sep))
                word = _word_steps(group, sep)
                if word is None:
                    return None
                steps += word
    return _pack(cf, _merged(steps), sep, wanted, digits, numbers, times)


def _word_steps(group: list[list], sep: str) -> list[_Lit | _Fld] | None:
    """The steps of one word (or of the words a field with spaces joins)."""
    template: list = []
    for j, w in enumerate(group):
        if j and w[0] is not _CONT:
            template.append(sep)
        template += [it for it in w if it is not _CONT]
    fields = [it for it in template if isinstance(it, Field)]
    if len(template) == 1 and fields and _braced(fields[0]):
        return [_Lit("{"), _Fld(fields[0], braced=True), _Lit("}")]
    if len(fields) <= 1 or _stops_alike(template):
        return [_Fld(it) if isinstance(it, Field) else _Lit(it) for it in template]
    seps = template[1::2]
    if template[0::2] != fields or len(set(seps)) != 1 or len(seps[0]) != 1:
        return None  # several fields in one word of another shape: the SQL path's regex
    c = ord(seps[0])
    out: list[_Lit | _Fld] = []
    for j, f in enumerate(fields):
        if j:
            out.append(_Lit(seps[0]))
        # client:port with an IPv6 client: the port is after the last ":" (as in SQL).
        ipv6 = j == 0 and len(fields) == 2 and fields[1].spec.value in NUMERIC_VALUES
        out.append(_Fld(f, last=True) if ipv6 else _Fld(f, also=frozenset([c])))
    return out


def _stops_alike(template: list) -> bool:
    """Several fields in one word, literal text between each two ([%{%F %T}t.%{usec_frac}t]),
    where stopping each at the first byte of the text after it reads as the SQL path's
    regex does: a lazy field (.+?) stops there too, and a number cannot hold that byte."""
    for k, it in enumerate(template[:-1]):
        if not isinstance(it, Field):
            continue
        nxt = template[k + 1]
        if not isinstance(nxt, str) or not nxt:
            return False
        lazy = it.spec.value in ("time", "text")
        number = it.spec.value in NUMERIC_VALUES and nxt[0] not in "0123456789+-"
        if not (lazy or number):
            return False
    return True


def _merged(steps: list[_Lit | _Fld]) -> list[_Lit | _Fld]:
    out: list[_Lit | _Fld] = []
    for s in steps:
        if isinstance(s, _Lit) and out and isinstance(out[-1], _Lit):
            out[-1] = _Lit(out[-1].text + s.text)
        elif not (isinstance(s, _Lit) and not s.text):
            out.append(s)
    return out


def _pack(
    cf: CompiledFormat,
    steps: list[_Lit | _Fld],
    sep: str,
    wanted: set[str] | None,
    digits: dict[str, tuple[int, int]],
    numbers: frozenset[str],
    times: dict[str, str],
) -> Plan | None:
    packed, literals, tables, fields, seen = [], b"", [], [], set()
    for i, s in enumerate(steps):
        if isinstance(s, _Lit):
            text = s.text.encode()
            if b"\\" in text or (sep == " " and b"\t" in text):
                return None  # the SQL split path takes no line of such a format either
            if i:
                text = text[1:]  # the field before took its first byte, its stop
            if text:
                packed.append(_STEP.pack(_LITERAL, len(literals), len(text), *[0] * 8))
                literals += text
            continue
        nxt = steps[i + 1] if i + 1 < len(steps) else None
        if isinstance(nxt, _Fld):
            return None  # two fields with nothing between them (%U%q): the SQL path's regex
        stop = nxt.text.encode()[0] if nxt is not None else -1
        quoted = s.field.quoted or s.braced  # runs to its closing byte, spaces and all
        bad = set(b"\t" if sep == " " else b"") if quoted else _word_bytes(s.field, sep) | s.also
        if s.braced:
            bad.add(ord("{"))
        if not quoted and s.last:
            bad.discard(stop)
        table = bytearray(256)  # what each byte is to the field; see _split.c
        for b in bad:
            table[b] = _BAD
        table[ord("\\")] = _ESCAPE_CODE.get(cf.escape, _BAD)
        if cf.decodes(s.field) and not s.last:
            table[ord("\\")] += _DECODE
        spaces = 0 if quoted else s.field.spec.spaces
        if spaces:
            table[ord(sep)] = _INNER_SEP
        if stop >= 0 and not s.last and not (spaces and stop == ord(sep)):
            table[stop] = _STOP
        if s.field.spec.value == "list" and sep == " " and not quoted:
            table[ord(sep)] = _LIST_SEP  # ", " and " : " go on (the SQL split's marks)
        packed.append(
            _STEP.pack(
                _FIELD,
                len(fields) if wanted is None or s.field.alias in wanted else -1,
                stop,
                spaces,
                int(_never_empty(s.field) and not s.braced),
                int(s.last),
                len(tables),
                *_shape(s.field, quoted, digits, numbers, times),
                len(literals),
                len(times.get(s.field.alias, "")),
            )
        )
        literals += times.get(s.field.alias, "").encode()
        tables.append(bytes(table))
        seen.add(s.field.alias)
        if wanted is None or s.field.alias in wanted:
            fields.append(s.field)
    if {f.alias for f in cf.fields if not f.spec.optional} - seen:
        return None
    return Plan(
        b"".join(packed),
        literals,
        b"".join(tables),
        fields,
        [f.alias for f in cf.fields if f not in fields],
        frozenset(digits) | set(times),
        numbers | set(times),
        ord(sep),
        sep == " ",
        bool(cf.dialect.prefixes),
    )


# The longest run of digits tried on a check: an 18-digit number still fits a BIGINT.
_MAX_DIGITS = 18


def digit_limits(cf: CompiledFormat, aliases: set[str], tz: str) -> dict[str, tuple[int, int]]:
    """For each integer field of `aliases` whose checks are about that field alone and pass
    texts of digits only: (the most digits such a text may have, which of "-" and "-1" the checks
    pass too: bits 1 and 2). Found by running the checks on those texts and on 0...0 and
    9...9 of each length: the checks that pass digits are casts and range tests, which a
    number between two that pass passes too. A field with a value of another look goes to
    the exact path."""
    texts = ["-", "-1"] + [d * n for n in range(1, _MAX_DIGITS + 1) for d in "09"]
    by_alias = {f.alias: f for f in cf.fields}
    # Integers only: a decimal ("0.002 s") also passes digits, but a line of it would never
    # be taken.
    integers = {a for a in aliases if by_alias[a].spec.value in NUMERIC_VALUES}
    checks: dict[str, list[str]] = {}
    for ok, _ in cf.typed(tz)[1]:
        fields = set(re.findall(r"\bf\d+\b", ok))
        if len(fields) == 1 and fields <= integers:
            checks.setdefault(fields.pop(), []).append(f"coalesce({ok}, false)")
    columns = {alias: texts for alias in checks}
    out: dict[str, tuple[int, int]] = {}
    answers = _evaluate(columns, [" AND ".join(c) for c in checks.values()])
    for alias, passed in zip(checks, answers, strict=True):
        # and the regex of the exact path reads them (%rc "-" passes a cast's check, not [+-]?\d+)
        shape = value_pattern(by_alias[alias], "")
        passed = [p and re.fullmatch(shape, t) is not None for p, t in zip(passed, texts, strict=True)]
        most = 0
        while most < _MAX_DIGITS and all(passed[2 + 2 * most : 4 + 2 * most]):
            most += 1
        if most:
            out[alias] = (most, passed[0] | passed[1] << 1)
    return out


def _evaluate(columns: dict[str, list], exprs: list[str]) -> list[list]:
    """Each SQL expression of `exprs` on every row of `columns` (name -> values, a list each,
    as long as one another, or shorter: repeated), in one query: a list of values each.
    Asked again the same, the answer is the one given before: an ingest of many files of
    one format plans each file (about 40 ms of checks a plan)."""
    if not exprs:
        return []
    return list(_evaluated(tuple((name, tuple(v)) for name, v in columns.items()), tuple(exprs)))


@functools.cache
def _evaluated(columns: tuple[tuple[str, tuple], ...], exprs: tuple[str, ...]) -> tuple[list, ...]:
    n = max(len(v) for _, v in columns)
    names = [name for name, _ in columns] + ["__i"]
    values = [list(itertools.islice(itertools.cycle(v), n)) for _, v in columns] + [list(range(n))]
    rows = ", ".join(f"unnest(${k + 1}) AS {name}" for k, name in enumerate(names))
    lists = ", ".join(f"list({e} ORDER BY __i)" for e in exprs)
    return _scratch().execute(f"SELECT {lists} FROM (SELECT {rows})", values).fetchall()[0]


def _scratch() -> duckdb.DuckDBPyConnection:
    """A connection for the plan's checks: a cursor of DuckDB's default in-memory database
    (a database of its own costs 16 ms to open), in UTC as a store is."""
    con = duckdb.default_connection().cursor()
    con.execute("SET TimeZone = 'UTC'")
    return con


def number_fields(cf: CompiledFormat, digits: dict[str, tuple[int, int]], tz: str) -> frozenset[str]:
    """The fields of `digits` (checked here: digit_limits) handed over as numbers instead of
    texts, so that DuckDB casts none of them: those whose value only their column reads
    (not `extra`, a time or a second column) through a converter with a number form
    (logan/read/convert.py NUMBER_FORMS) that gives what the text form gives, value and marker,
    on the texts the split lets through: "-", "-1" where they pass, and digits of every
    length up to the most."""
    elsewhere = {f.alias for f in cf.extras + cf.time_fields if f.alias in digits}
    columns: dict[str, list] = {}
    same: dict[str, str] = {}
    for f in cf.columns.values():
        if f.alias not in digits or f.alias in elsewhere or f.spec.also or f.spec.convert not in NUMBER_FORMS:
            continue
        texts = _number_probes(*digits[f.alias])
        columns[f"t{f.alias}"] = texts
        columns[f"n{f.alias}"] = [None if t == "-" else int(t) for t in texts]
        text = convert(f.spec.convert, f"t{f.alias}", f.spec.arg, tz)
        number = convert(f.spec.convert, f"n{f.alias}", f.spec.arg, tz, number=True)
        same[f.alias] = (
            f"({text.sql}) IS NOT DISTINCT FROM ({number.sql}) AND "
            f"({text.flag or 'false'}) IS NOT DISTINCT FROM ({number.flag or 'false'})"
        )
    answers = _evaluate(columns, list(same.values()))
    return frozenset(alias for alias, ok in zip(same, answers, strict=True) if all(ok))


def _number_probes(most: int, dashes: int) -> list[str]:
    rng = random.Random(most)
    texts = ["-"] * (dashes & 1) + ["-1"] * (dashes >> 1 & 1)
    for k in range(1, most + 1):
        texts += ["0" * k, "9" * k, "1" + "0" * (k - 1), "".join(rng.choice("0123456789") for _ in range(k))]
    return texts


def time_patterns(cf: CompiledFormat, values: set[str], tz: str) -> dict[str, str]:
    """The time fields of `values` the split reads itself, each with its strftime pattern:
    handed over as microseconds, their text neither cast nor checked in SQL. Those whose
    pattern has only TIME_DIRECTIVES, and whose reading here gives the time DuckDB's
    strptime gives on a few thousand texts of that pattern (a text read here but not by
    DuckDB, or read otherwise, and the field is left to SQL)."""
    out = {}
    fractions = {f.alias for f in cf.time_fields if f.spec.convert not in NUMBER_FORMS}
    for f in cf.time_fields:
        pattern = time_pattern(f.spec.convert, f.spec.arg)
        if f.alias not in values or f.alias in fractions or pattern is None:
            continue
        read = set(re.findall(r"%(.)", pattern)) <= TIME_DIRECTIVES
        if read and _reads_alike(f.spec.convert, f.spec.arg, pattern, tz):
            out[f.alias] = pattern
    return out


@functools.cache
def _reads_alike(converter: str, arg: str | None, pattern: str, tz: str) -> bool:
    """Whether the split reads a thousand texts of `pattern` as DuckDB does through the
    converter. Once per process: an ingest of many files of one format plans each file,
    and the texts took 27 ms to write."""
    texts = _time_probes(pattern)
    read = [_split.parse_time(t.encode(), pattern.encode()) for t in texts]
    text = convert(converter, "t", arg, tz)
    number = convert(converter, "n", arg, tz, number=True)
    alike = f"n IS NULL OR ({text.sql}) IS NOT DISTINCT FROM ({number.sql})"
    (same,) = _evaluate({"t": texts, "n": read}, [alike])
    return all(same) and any(r is not None for r in read)


def _time_probes(pattern: str, count: int = 1000) -> list[str]:
    """Texts of `pattern`: the edges of days, months and leap years, days and times that do
    not exist, then random times from 1000 to 9999 (most of them after 1970)."""
    rng = random.Random(0)
    days = [(2024, 2, 29), (2023, 2, 29), (2100, 2, 29), (2000, 2, 29), (2023, 4, 31), (2023, 12, 31)]
    days += [(1970, 1, 1), (1969, 12, 31), (1000, 1, 1), (9999, 12, 31), (2023, 1, 32), (2023, 13, 1)]
    times = [(0, 0, 0), (23, 59, 59), (24, 0, 0), (12, 60, 61)]
    moments = [day + t for day in days for t in times]
    while len(moments) < count:
        year = rng.randint(1000, 9999) if len(moments) % 10 == 0 else rng.randint(1970, 2100)
        moments.append(
            (year, *(rng.randint(lo, hi) for lo, hi in ((1, 12), (1, 31), (0, 23), (0, 59), (0, 59))))
        )
    return [_written(pattern, m, rng.randint(0, 999_999), rng.randint(-14 * 60, 14 * 60), k % 2 == 1)
            for k, m in enumerate(moments)]  # fmt: skip


def _written(pattern: str, moment: tuple[int, ...], us: int, offset_min: int, colon: bool) -> str:
    y, mo, d, h, mi, sec = moment
    oh, om = divmod(abs(offset_min), 60)
    parts = {
        "Y": f"{y:04d}", "m": f"{mo:02d}", "d": f"{d:02d}", "H": f"{h:02d}", "M": f"{mi:02d}",
        "S": f"{sec:02d}", "g": f"{us // 1000:03d}", "f": f"{us:06d}", "b": _MONTHS[(mo - 1) % 12],
        "z": f"{'-' if offset_min < 0 else '+'}{oh:02d}{':' if colon else ''}{om:02d}",
    }  # fmt: skip
    return re.sub(r"%(.)", lambda m: parts.get(m.group(1), m.group(0)), pattern)


_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def _shape(
    f: Field, quoted: bool, digits: dict[str, tuple[int, int]], numbers: frozenset[str], times: dict[str, str]
) -> tuple[int, int]:
    if f.alias in times:
        return _TIME, 0
    if f.alias in digits:
        most, dashes = digits[f.alias]
        return _DIGITS, most | dashes << 8 | (f.alias in numbers) << 10
    return (0 if quoted else _SHAPES.get(f.spec.value, 0)), 0


def _word_bytes(f: Field, sep: str) -> set[int]:
    """Bytes a field outside quotes may not hold: its separator, a quote, and
    whitespace when its shape refuses a space (RE2's \\S; a tab-separated format may have
    text with spaces between its tabs)."""
    spaced = re.fullmatch(value_pattern(f, ""), "a b") is not None
    return {ord(sep), ord('"')} | (set() if spaced and sep != " " else set(_NOT_IN_WORD))


def split(
    p: Plan, lines: pa.Array, line_no: np.ndarray, body: np.ndarray | None, most: int = -1
) -> tuple[pa.Table, int]:
    """(line_no, line, and the fields the plan cuts out) for the lines it reads, and how many
    of `lines` it went through: all, or up to the one that made `most` rows. `lines` is one
    string_view array; `body` the byte offset where each line's format begins (after a
    syslog header), or None. The other fields are NULL in `Plan.sql`."""
    views, data = _views(lines)
    offsets = b"" if body is None else np.ascontiguousarray(body, dtype=np.int32)
    n = len(lines) if most < 0 else min(most, len(lines))  # the rows a field's slot has room for
    at = _slots(p, n)
    out = BUFFERS.get(at[-1], slack=1.5)  # batches of 2 or 3 row groups
    m, taken, through, used, decoded = _split.split(
        views, data, offsets, p.steps, p.literals, p.forbidden, len(p.fields), p.sep, int(p.no_tab), out, most
    )
    if used != at[-1]:  # the plan's numbers and its steps disagree: the slots would be misread
        raise RuntimeError(f"the split laid out {used} bytes of fields where {at[-1]} were expected")
    idx = np.frombuffer(taken, np.int32, m)
    out_buf = pa.py_buffer(out)
    cols = {
        "line_no": int64_array(line_no[idx]),
        "line": _taken_views(views, idx, data),
    }
    # the texts the split decoded (an escape in them) lie in a buffer of their own, after the lines'
    texts = data if decoded is None else [*data, pa.py_buffer(decoded)]
    for k, f in enumerate(p.fields):
        slot = out_buf.slice(at[k], at[k + 1] - at[k])
        if f.alias in p.numbers:  # n values, then the validity bitmap
            cols[f.alias] = pa.Array.from_buffers(pa.int64(), m, [slot.slice(n * 8), slot.slice(0, m * 8)])
        else:
            cols[f.alias] = pa.Array.from_buffers(pa.string_view(), m, [None, slot.slice(0, m * 16), *texts])
    return pa.table(cols), through


def _slots(p: Plan, n: int) -> list[int]:
    """Where each field's slot of `n` lines starts in split's output buffer, and where the
    last ends (_split.c says the same): n views of 16 bytes, or for a field handed over as
    numbers n int64 values and the validity bitmap, rounded up to 8 bytes. HAProxy's 16
    numbers of 24 fields: 60 MB a batch instead of 90."""
    bitmap = -(-n // 8)
    number = n * 8 + -(-bitmap // 8) * 8
    at = [0]
    for f in p.fields:
        at.append(at[-1] + (number if f.alias in p.numbers else n * 16))
    return at


def _taken_views(views: pa.Buffer, idx: np.ndarray, data: list) -> pa.Array:
    """The lines at `idx`, as views into the same buffers (pyarrow has no take for them)."""
    picked = np.frombuffer(views, np.dtype("V16"))[idx]
    return pa.Array.from_buffers(pa.string_view(), len(idx), [None, pa.py_buffer(picked), *data])


# The number read_batch gives each line's keyed text, the same for the same text.
KEY_ID = "__kid"
# Each line's query, and whether the line is its parts joined, when the plan's keyed
# request line loses its query (Plan.row_query).
ROW_QUERY = "__row_query"
ROW_REBUILT = "__row_rebuilt"
# Each line's route template and indirector, for a batch classified row by row (Plan.
# row_templates): made in the reader thread, in C, instead of by SQL functions per row.
ROW_TEMPLATE = "__row_tmpl"
ROW_INDIRECTOR = "__row_ind"
# What rows.py derives from each key's request line (Plan.request_of): its method, path,
# query, protocol and absolute URI's host (rows.REQUEST_FROM_KEY names the columns), and
# whether it is those parts joined (rows.REBUILT_TEST). Made by the reader in C instead of
# by splitting each key in the INSERT (the part of classifying a batch's keys the Puppet
# parse left: 0.05 of 0.08 s a batch on the realistic log).
KEY_PARTS = ("__k_method", "__k_path", "__k_query", "__k_protocol", "__k_host")
KEY_JOINED = "__k_joined"
# The Puppet profile's parse of each key's request line (Plan.puppet): the parts of its path
# classify.PUPPET_PATH extracts, and its query's environment parameter. Made by the reader
# in C instead of by a regex per key in the INSERT: that regex and the query's split were
# two thirds of classifying the keys, a third of a Puppet batch's INSERT on one thread.
PUPPET_PARTS = ("__pp_prefix", "__pp_ind", "__pp_key", "__pp_env")
# Past this share of a batch's lines as keys, its rows are classified where they are
# (logan/read/ingest.py: _classify_inline).
INLINE_KEY_SHARE = 0.5


def inline(keys: int, lines: int) -> bool:
    """Whether a batch of `lines` lines with `keys` distinct keys is classified row by row."""
    return keys > INLINE_KEY_SHARE * lines


# What makes the route templates and indirectors of paths: (int32 offsets, data, count) ->
# (offsets, data, offsets, data) of both, as Arrow strings (classify.templates_of_paths).
Templates = Callable[[bytes | bytearray, bytes, int], tuple[bytes, bytes, bytes, bytes]]


@dataclass
class Read:
    """What read_batch makes of a batch: the fields of the lines the plan reads, and, when
    the plan is keyed, each distinct text of its keyed field once (`keys`: KEY_ID and the
    field), the lines carrying the KEY_ID of theirs. Classification then works on the
    distinct texts and joins back on a number: hashing and comparing request lines in
    DuckDB (a DISTINCT, then a join) was a third of a classified ingest on varied logs."""

    raw: pa.Table
    keys: pa.Table | None = None
    lines: int | None = None  # the batch's first lines these are, when not all of them


def read_batch(
    con,  # noqa: ANN001
    cf: CompiledFormat,
    p: Plan,
    batch: Batch,
    whole_rows: bool = False,
    templates: Templates | None = None,
) -> Read:
    """split() over a batch, after its syslog headers are measured (header_lengths), in the
    reader thread. `whole_rows`: read the batch up to its last whole row group of rows
    (sources.Prepare), unless it is the last. `templates`: what makes Plan.row_templates."""
    lines = batch.table.column("line").combine_chunks()
    line_no = int64_values(batch.table.column("line_no"))
    body = header_lengths(con, cf, lines, line_no) if p.has_prefix else None
    # as many rows as the lines would make whole row groups if each were one (most are)
    most = len(lines) - len(lines) % ROW_GROUP if whole_rows and not batch.last else 0
    raw, through = split(p, lines, line_no, body, most=most or -1)
    kept = None
    if most:
        raw, kept = _whole_row_groups(con, cf, lines, raw, through, batch.first_line, most)
    keys = None
    if p.keyed:
        texts, queries, rebuilt, lines_of = [], None, None, None
        for field, cut in zip(p.keyed, p.cut, strict=True):
            t = raw.column(field).combine_chunks()
            if cut == "request" and p.row_query:
                lines_of = t
                t, queries, rebuilt = request_without_query(t)
            elif cut is not None:
                t = without_query(t, cut == "request")
            texts.append(t)
        indices, distinct = number_keys(texts)
        raw = raw.append_column(KEY_ID, indices)
        if queries is not None:
            raw = raw.append_column(ROW_QUERY, queries).append_column(ROW_REBUILT, rebuilt)
        if p.row_templates and lines_of is not None and inline(len(distinct[0]), len(raw)):
            assert templates is not None
            tmpl, ind = request_templates(lines_of, templates)
            raw = raw.append_column(ROW_TEMPLATE, tmpl).append_column(ROW_INDIRECTOR, ind)
        n = len(distinct[0])  # pa.array() of numpy data would import pandas (0.2 s)
        ids = pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(np.arange(n, dtype=np.int32))])
        made = {}
        if p.request_of is not None:
            names = (*KEY_PARTS, KEY_JOINED, *(PUPPET_PARTS if p.puppet else ()))
            parts = request_parts(distinct[p.keyed.index(p.request_of)], p.puppet)
            made = dict(zip(names, parts, strict=True))
        keys = pa.table({KEY_ID: ids, **dict(zip(p.keyed, distinct, strict=True)), **made})
    return Read(
        pa.Table.from_batches(raw.to_batches(max_chunksize=scan_rows(raw.num_rows)), raw.schema), keys, kept
    )


def _whole_row_groups(
    con,  # noqa: ANN001
    cf: CompiledFormat,
    lines: pa.Array,
    raw: pa.Table,
    through: int,
    first: int,
    most: int,
) -> tuple[pa.Table, int | None]:
    """The split's rows of a batch and how many of its lines to keep (None: all), so that
    the batch's rows fill whole row groups, at most `most` rows: those the split took from
    its first `through` lines, and the lines among them the exact path will read (the
    format's regex matches them; lines only the regex reads, such as those with a tab in a
    quoted field, are rows too)."""
    taken = int64_values(raw.column("line_no")) - first
    left = np.setdiff1d(np.arange(through), taken, assume_unique=True)
    rows_at = taken
    if len(left):
        views, data = _views(lines)
        left_lines = pa.table({"i": int64_array(left), "line": _taken_views(views, left, data)})
        con.register("__left_now", left_lines)
        try:
            read = con.execute(f"SELECT i FROM __left_now WHERE {cf.match_sql()}").fetchnumpy()["i"]
        finally:
            con.unregister("__left_now")
        rows_at = np.sort(np.concatenate([taken, np.asarray(read, np.int64)]))
    whole = min(len(rows_at) - len(rows_at) % ROW_GROUP, most)
    if 0 < whole < len(rows_at):  # the lines from the first row past the last whole group on
        kept = int(rows_at[whole])
        return raw.slice(0, int(np.searchsorted(taken, kept))), kept
    return raw, (through if through < len(lines) else None)


def number_keys(texts: list[pa.Array]) -> tuple[pa.Array, list[pa.Array]]:
    """(each line's number for its texts, one per field of `texts`; each distinct
    combination's texts once, per field). One field is dictionary_encode's answer; with
    more (a request line and a vhost), each field's numbers are combined into one per line
    and numbered again, so a DISTINCT over both texts is never made in SQL: a batch of
    Apache's extended lines (245,760 lines, 190,000 distinct request lines and vhosts) spent
    0.6 s in it and ran out of the ingest's memory limit."""
    numbers, first = dictionary_encode(texts[0])
    if len(texts) == 1:
        return numbers, [first]
    line_key = np.frombuffer(numbers.buffers()[1], np.int32, len(numbers)).astype(np.int64)
    for t in texts[1:]:
        n, d = dictionary_encode(t)
        # at most lines x lines distinct pairs before they are numbered again: fits 64 bits
        pairs = line_key * len(d) + np.frombuffer(n.buffers()[1], np.int32, len(n))
        _, at, line_key = np.unique(pairs, return_index=True, return_inverse=True)
    ids = line_key.astype(np.int32)
    numbers = pa.Array.from_buffers(pa.int32(), len(ids), [None, pa.py_buffer(ids)])
    return numbers, [_taken_views(views, at, data) for views, data in map(_views, texts)]


def dictionary_encode(texts: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(each text's number, the distinct texts in the order they first occur): what
    pyarrow's Array.dictionary_encode gives, in C (_split.dictionary_encode) for a string
    view array without NULLs. pyarrow's imports pyarrow.compute on its first call, 0.05-0.15
    s of every ingest (a re-run's first batch waits for it)."""
    if texts.null_count or _split is None:
        coded = texts.dictionary_encode()
        return coded.indices, coded.dictionary
    views, data = _views(texts)
    ids = np.empty(len(texts), np.int32)
    first = np.frombuffer(_split.dictionary_encode(views, data, ids), np.int32)
    numbers = pa.Array.from_buffers(pa.int32(), len(texts), [None, pa.py_buffer(ids)])
    return numbers, _taken_views(views, first, data)


def without_query(texts: pa.Array, request: bool) -> pa.Array:
    """The texts without their query strings (_split.without_query: of the request line's
    target when `request`, else of the target itself), as string views: most are views
    into the same bytes, a request line that loses the middle of its text is copied."""
    views, data = _views(texts)
    out = bytearray(views.size)
    made = _split.without_query(views, data, request, out)
    return _string_views(len(texts), _validity(texts), out, [*data, pa.py_buffer(made)])


def request_without_query(lines: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array]:
    """(without_query of request lines, each line's query, whether each line is its parts
    joined), all in one pass, as rows.py derives them from the whole line: the query is
    the text after the '?' of a line "A B HTTP/..." whose target has one, else NULL (views
    into the lines' own bytes); a line is its method, path, query and protocol joined when
    it is "A B HTTP/..." and its target no absolute URI. A row's query and its
    `request_rebuilt` then need no split of its line in SQL, nor a comparison of the line
    with its parts joined (the two were a quarter of a HAProxy batch's INSERT, and a tenth
    of one of a log whose every path is its own)."""
    views, data = _views(lines)
    valid = _validity(lines)
    n = len(lines)
    out, queries = bytearray(views.size), bytearray(views.size)
    q_valid, rebuilt = bytearray((n + 7) // 8), bytearray((n + 7) // 8)
    made = _split.without_query(views, data, True, out, queries, q_valid, rebuilt)
    _only_valid(q_valid, valid)
    _only_valid(rebuilt, valid)
    return (
        _string_views(n, valid, out, [*data, pa.py_buffer(made)]),
        _string_views(n, pa.py_buffer(q_valid), queries, data),
        pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(rebuilt)]),
    )


def request_templates(lines: pa.Array, templates: Templates) -> tuple[pa.Array, pa.Array]:
    """The route template and indirector of each request line's path (_split.request_paths:
    the path rows.py derives, NULL unless the line is "A B HTTP/..."), by `templates`."""
    views, data = _views(lines)
    n = len(lines)
    offsets, valid = bytearray(4 * (n + 1)), bytearray((n + 7) // 8)
    paths = _split.request_paths(views, data, offsets, valid)
    _only_valid(valid, _validity(lines))
    t_off, t_data, i_off, i_data = templates(offsets, paths, n)
    made = pa.py_buffer(valid)
    return tuple(
        pa.Array.from_buffers(pa.string(), n, [made, pa.py_buffer(o), pa.py_buffer(d)])
        for o, d in ((t_off, t_data), (i_off, i_data))
    )


def request_parts(lines: pa.Array, puppet: bool = False) -> list[pa.Array]:
    """KEY_PARTS and KEY_JOINED of each request line (_split.request_parts): its method,
    path, query, protocol and absolute URI's host as rows.py derives them (NULL unless the
    line is "A B HTTP/..."), as views into the lines' own bytes, and whether it is its
    parts joined. With `puppet`, PUPPET_PARTS after them: the prefix, indirection and key of
    its path as classify.puppet_parse_sql() extracts them ('' where it does not match,
    NULL with the path), and its query's environment as classify's _QUERY_ENV."""
    views, data = _views(lines)
    n, bits = len(lines), (len(lines) + 7) // 8
    # the Puppet parts share one bitmap (NULL with the path), the environment has its own
    parts, n_bitmaps = (9, 7) if puppet else (5, 5)
    out, valid, joined = bytearray(parts * views.size), bytearray(n_bitmaps * bits), bytearray(bits)
    _split.request_parts(views, data, out, valid, joined, puppet)
    line_valid = _validity(lines)
    bitmaps = [valid[k * bits : (k + 1) * bits] for k in range(n_bitmaps)]
    for b in (*bitmaps, joined):
        _only_valid(b, line_valid)
    by_bitmap = list(range(5)) + ([5, 5, 5, 6] if puppet else [])
    made = [
        _string_views(
            n, pa.py_buffer(bitmaps[b]), memoryview(out)[k * views.size : (k + 1) * views.size], data
        )
        for k, b in enumerate(by_bitmap)
    ]
    return [*made[:5], pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(joined)]), *made[5:]]


def _only_valid(bits: bytearray, valid: pa.Buffer | None) -> None:
    """Clear the bits of `bits` where `valid` says NULL: a NULL line makes nothing, whatever
    its view holds."""
    if valid is not None:
        b = np.frombuffer(bits, np.uint8)
        np.bitwise_and(b, np.frombuffer(valid, np.uint8, len(b)), out=b)


def _string_views(n: int, valid: pa.Buffer | None, views: bytearray | memoryview, data: list) -> pa.Array:
    return pa.Array.from_buffers(pa.string_view(), n, [valid, pa.py_buffer(views), *data])


def _validity(texts: pa.Array) -> pa.Buffer | None:
    """The validity bitmap of `texts` from its first element on (None: no NULLs)."""
    if not texts.null_count:
        return None
    buf = texts.buffers()[0]
    if texts.offset % 8 == 0:
        return buf.slice(texts.offset // 8, (len(texts) + 7) // 8)
    bits = np.unpackbits(np.frombuffer(buf, np.uint8), bitorder="little")
    return pa.py_buffer(np.packbits(bits[texts.offset : texts.offset + len(texts)], bitorder="little"))


def header_lengths(con, cf: CompiledFormat, lines: pa.Array, line_no: np.ndarray) -> np.ndarray:  # noqa: ANN001
    """How long each line's syslog header is (0: none), as DuckDB's RE2 measures it with the
    dialect's prefix regex, the exact path's (on `con`, a cursor of the reader thread's
    own). Lines that start with a capital letter are measured in C instead (RFC 3164
    headers, the common case) when the C reading gives RE2's lengths (rfc3164_in_c)."""
    prefix = prefix_regex(cf.dialect)
    assert prefix is not None
    views, data = _views(lines)
    body = np.full(len(lines), -1, np.int32)
    left = _split.syslog_headers(views, data, body) if rfc3164_in_c(prefix) else len(lines)
    if left:
        idx = np.flatnonzero(body < 0)
        body[idx] = _re2_lengths(con, prefix, _taken_views(views, idx, data), line_no[idx])
    return body


def _views(lines: pa.Array) -> tuple[pa.Buffer, list]:
    """A string_view array's own 16-byte views (past its offset) and its data buffers."""
    bufs = lines.buffers()
    return bufs[1].slice(lines.offset * 16, len(lines) * 16), bufs[2:]


def _re2_lengths(con, prefix: str, lines: pa.Array, line_no: np.ndarray) -> np.ndarray:  # noqa: ANN001
    # the header's text alone: cutting it off (strip_prefix_sql) copies the rest
    header = f"regexp_extract(line, {sql_str('^' + prefix)})"
    con.register("__headed", pa.table({"line_no": int64_array(line_no), "line": lines}))
    try:
        got = con.execute(f"SELECT line_no, strlen({header}) AS o FROM __headed").fetchnumpy()
    finally:
        con.unregister("__headed")
    out = np.zeros(len(lines), np.int32)
    out[np.searchsorted(line_no, got["line_no"])] = got["o"]
    return out


@functools.cache
def rfc3164_in_c(prefix: str) -> bool:
    """Whether _split.c measures the headers of lines that start with a capital letter for
    the prefix regex `prefix`. It reads them as the RFC 3164 header of rsyslog's file
    format ("Nov  5 19:00:00 host program[pid]: "), without looking at `prefix`: so only
    when RE2 gives the lengths it gives on a few thousand headers, real and crafted."""
    block = "\n".join(_header_probes()).encode()
    views = _split.line_views(block)
    n = len(views) // 16
    lines = pa.Array.from_buffers(pa.string_view(), n, [None, pa.py_buffer(views), pa.py_buffer(block)])
    mine = np.full(n, -1, np.int32)
    _split.syslog_headers(views, [block], mine)
    theirs = _re2_lengths(_scratch(), prefix, lines, np.arange(n, dtype=np.int64))
    decided = mine >= 0
    return bool(decided.sum() > n / 2 and (mine[decided] == theirs[decided]).all())


def _header_probes(count: int = 3000) -> list[str]:
    """Lines with RFC 3164 headers as rsyslog writes them, and near misses: lowercase or
    unknown months, no host, no pid, a pid that is not digits, hosts and programs with
    odd bytes, tabs, a message that looks like a header of its own, no header at all."""
    rng = random.Random(0)
    months = [*_MONTHS, *_MONTHS, "nov", "NOV", "Xyz", "Nov5"]
    hosts = ["lb1", "10.0.0.1", "host.example.org", "h:1", "h[1]", "h]", "ü", "", "a\tb", "-"]
    programs = ["haproxy", "haproxy[14389]", "haproxy[]", "haproxy[x]", "ha:proxy", "[1]", "h]x", "prog-1.2"]
    seps = [": ", ": ", ": ", ":", " ", ":  ", ":\t", "]: "]
    messages = ["10.0.1.2:33317 [06/Feb/2009:12:14:14.655] x", "foo: bar", "Nov  5 19:00:00 lb2 x: y", ""]
    lines = ["GET / HTTP/1.1", "Hello world", "N", "Nov  5 19:00:00", "Nov  5 19:00:00 "]
    while len(lines) < count:
        day = rng.choice([" 5", "15", "05", " 5", "15", "5 ", "x5"])
        time = rng.choice(["19:00:00", "23:59:59", "19:00:00", "9:00:00", "19:00:0x"])
        host = rng.choice(hosts)
        head = f"{rng.choice(months)} {day} {time} " + (f"{host} " if host else "")
        lines.append(head + rng.choice(programs) + rng.choice(seps) + rng.choice(messages))
    return lines
