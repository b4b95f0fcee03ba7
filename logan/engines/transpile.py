"""The views of queries/ (DuckDB SQL) as Spark SQL: sqlglot's translation, plus the rules
for where the two dialects differ in meaning and sqlglot keeps the text alike.

sqlglot does the grammar (types, `[1]` -> `[0]` list indexes, NULLS LAST where the
defaults differ). The rules below fix what it translates word for word but would mean
something else on Spark:

- `quantile_cont` is computed exactly as DuckDB does from the sorted values (see
  _percentile: Spark's exact `percentile` picks the same two values but rounds its
  interpolation differently), never the approximate `percentile_approx`;
- a decimal literal (`1.0`) is a DOUBLE: Spark averages DECIMAL(2,1) to DECIMAL(6,5) and
  would round a share to five digits, where DuckDB's avg gives a DOUBLE;
- `regexp_replace` without the `g` flag replaces the first match in DuckDB, every match
  in Spark: the first-only form is anchored to the first match;
- `date_diff` counts unit boundaries crossed in DuckDB, whole units elapsed in Spark's
  timestampdiff: both ends are truncated to the unit first;
- `epoch_us`, `epoch_ms`, `epoch`, `time_bucket` (DuckDB's origin, 2000-01-03) and
  `to_microseconds` become integer microsecond arithmetic;
- a STRUCT cast to a MAP (how the readers build `extra`) becomes `map(k, v, ...)`: Spark
  casts no struct to a map;
- `x GLOB p` becomes LIKE (`*` and `?`; a `[...]` class has no LIKE form, see
  check_glob);
- `main.requests` (DuckDB's default schema) is the session's `requests`; the catalog
  table function `duckdb_columns()` is a view the Spark connection registers.

A construct with no faithful Spark form raises NotPortable: a view is then kept as a
reviewed variant in queries/spark/ (logan.engines.spark.view_sql), never a silent change.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from logan import schema
from logan.engines.java_regex import java_regex
from logan.errors import LoganError

# DuckDB's time_bucket counts buckets of less than a month from Monday 2000-01-03 UTC.
_BUCKET_ORIGIN_US = 946_857_600_000_000
_UNIT_US = {
    "MICROSECOND": 1,
    "MILLISECOND": 1_000,
    "SECOND": 1_000_000,
    "MINUTE": 60_000_000,
    "HOUR": 3_600_000_000,
    "DAY": 86_400_000_000,
    "WEEK": 7 * 86_400_000_000,
}


class NotPortable(LoganError):
    """A DuckDB construct with no Spark form of the same meaning."""


def to_spark(sql: str) -> str:
    """DuckDB SQL (one statement, `?` parameters) as Spark SQL of the same meaning."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.ParseError as exc:
        raise NotPortable(f"sqlglot cannot read the SQL: {str(exc).splitlines()[0]}") from None
    return _bottom_up(tree).sql(dialect="spark", comments=False)


def _bottom_up(node: exp.Expression) -> exp.Expression:
    """The rules applied children first: a rule's new node holds translated parts (sqlglot's
    own transform does not descend into the node a rule returns)."""
    for key, value in list(node.args.items()):
        if isinstance(value, exp.Expression):
            node.set(key, _bottom_up(value))
        elif isinstance(value, list):
            node.set(key, [_bottom_up(v) if isinstance(v, exp.Expression) else v for v in value])
    return _rule(node)


def _rule(node: exp.Expression) -> exp.Expression:
    for kind, rule in _RULES:
        if isinstance(node, kind):
            return rule(node)
    if isinstance(node, exp.Anonymous):
        name = str(node.this).lower()
        if name in _FUNCTIONS:
            return _FUNCTIONS[name](*node.expressions)
    return node


def _spark(template: str, **parts: exp.Expression) -> exp.Expression:
    """A Spark expression from `template`, its placeholder columns (a, b, ...) replaced by
    the given parts."""
    tree = sqlglot.parse_one(template, read="spark")

    def put(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not node.table and node.name in parts:
            return parts[node.name].copy()
        return node

    return tree.transform(put)


def _double_literal(node: exp.Literal) -> exp.Expression:
    text = str(node.this)
    if node.is_string or not any(c in text for c in ".eE"):
        return node
    return exp.Cast(this=node, to=exp.DataType.build("DOUBLE"))


# DuckDB's quantile_cont: with the values sorted, pos = (n - 1) * q, d = pos - floor(pos),
# lo and hi the values at floor(pos) and ceil(pos): lo * (1 - d) + hi * d in doubles, the
# first product fused with the sum (DuckDB's build contracts it to one multiply-add: on
# 400 random cases, fma(lo, 1 - d, hi * d) is DuckDB's answer every time, the unfused
# formula 366 times). Spark's `percentile` picks the same two values but weighs them
# (ceil(pos) - pos) and d, unfused, and differs in the last bit (3734.4399999999996
# against 3734.44): so the translation takes the values from the sorted list and computes
# DuckDB's formula, the multiply-add with Java's Math.fma. The list is bound once
# (`transform(array(list), ...)`), the fractions run over it.
_POS = "((size(logan_s) - 1) * logan_q)"
_D = f"({_POS} - floor({_POS}))"
_AT = "CAST(logan_s[CAST({f}(" + _POS + ") AS INT)] AS DOUBLE)"
_INTERPOLATED = (
    f"CAST(java_method('java.lang.Math', 'fma', {_AT.format(f='floor')}, 1.0D - {_D},"
    f" {_AT.format(f='ceil')} * {_D}) AS DOUBLE)"
)


def _percentile(node: exp.PercentileCont) -> exp.Expression:
    if node.args.get("expression") is None:  # percentile_cont(p) WITHIN GROUP: already Spark's
        return node
    fractions = node.expression.transform(lambda n: _double_literal(n) if isinstance(n, exp.Literal) else n)
    if isinstance(fractions, exp.Array):
        value = f"transform(b, logan_q -> {_INTERPOLATED})"
    else:
        value = f"transform(array(b), logan_q -> {_INTERPOLATED})[0]"
    return _spark(
        f"transform(array(array_sort(collect_list(a))), logan_s -> IF(size(logan_s) = 0, NULL, {value}))[0]",
        a=node.this, b=fractions,
    )  # fmt: skip


def _regexp_replace(node: exp.RegexpReplace) -> exp.Expression:
    flags = node.args.get("modifiers")
    flags_text = flags.name if isinstance(flags, exp.Literal) else ""
    if flags is not None and not isinstance(flags, exp.Literal):
        raise NotPortable("regexp_replace with computed flags")
    if set(flags_text) - {"g"}:
        raise NotPortable(f"regexp_replace flags {flags_text!r} (only 'g' has a Spark form)")
    pattern, replacement = _java(node.expression), node.args["replacement"]
    if "g" in flags_text:
        return _spark("regexp_replace(a, b, c)", a=node.this, b=pattern, c=_java_replacement(replacement))
    plain = isinstance(replacement, exp.Literal) and not set(replacement.name) & {"\\", "$"}
    if not plain:
        raise NotPortable("regexp_replace of the first match with back references")
    # The lazy prefix stops at the leftmost match, which is the one DuckDB replaces; anchored
    # at ^, the pattern cannot match a second time.
    return _spark(
        "regexp_replace(a, concat('(?s)^(.*?)(?:', b, ')'), concat('$1', c))",
        a=node.this, b=pattern, c=replacement,
    )  # fmt: skip


def _java_replacement(node: exp.Expression) -> exp.Expression:
    """A replacement's back references (RE2's \\1) as Java's ($1); a $ of the text escaped."""
    if not (isinstance(node, exp.Literal) and node.is_string):
        raise NotPortable("regexp_replace with a computed replacement")
    text = node.name.replace("$", "\\$")
    return exp.Literal.string(re.sub(r"\\(\d)", r"$\1", text))


def _java(node: exp.Expression, flags: str = "") -> exp.Expression:
    """A regex literal (RE2) as Java's (logan.engines.java_regex); a computed one as it is."""
    if isinstance(node, exp.Literal) and node.is_string:
        return exp.Literal.string(java_regex(node.name, flags))
    return node


def _regexp_like(node: exp.RegexpLike) -> exp.Expression:
    flag = node.args.get("flag")
    flags = flag.name if isinstance(flag, exp.Literal) else ""
    return exp.RegexpLike(this=node.this, expression=_java(node.expression, flags))


def _full_match(text: exp.Expression, pattern: exp.Expression) -> exp.Expression:
    # DuckDB's regexp_full_match: the whole text, as RLIKE anchored at both ends
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise NotPortable("regexp_full_match of a computed regex")
    return exp.RegexpLike(this=text, expression=exp.Literal.string(java_regex(f"^(?:{pattern.name})$")))


def _regexp_extract(node: exp.RegexpExtract) -> exp.Expression:
    """regexp_extract(s, p, ['a', 'b']) (a struct of the groups, by name) as a named_struct
    of one regexp_extract per group; the plain forms with the pattern as Java's."""
    group, pattern = node.args.get("group"), _java(node.expression)
    if not isinstance(group, exp.Array):
        return exp.RegexpExtract(this=node.this, expression=pattern, group=group)
    parts = []
    for k, name in enumerate(group.expressions, start=1):
        parts += [name, exp.RegexpExtract(this=node.this.copy(), expression=pattern.copy(),
                                          group=exp.Literal.number(k))]  # fmt: skip
    return exp.Anonymous(this="named_struct", expressions=parts)


def _length(node: exp.Length) -> exp.Expression:
    # DuckDB's len() of a list (logan writes len for lists, length for text): Spark's size
    arrays = (exp.Split, exp.RegexpSplit, exp.Array, exp.Filter, exp.Transform)
    of_list = (
        isinstance(node.this, arrays)
        or (isinstance(node.this, exp.Anonymous) and node.this.name.lower() == "regexp_split_to_array")
        or (isinstance(node.this, exp.Column) and node.this.name == "__rq")
    )
    return exp.Anonymous(this="size", expressions=[node.this]) if of_list else node


def _cte(node: exp.CTE) -> exp.Expression:
    # MATERIALIZED is DuckDB's hint; Spark plans a CTE its own way
    node.set("materialized", None)  # in place: a copy's subtree would not be transformed
    return node


def _int128(node: exp.DataType) -> exp.Expression:
    # DuckDB's HUGEINT (128 bits, to scale a value without overflow): Spark's widest exact type
    if node.this == exp.DataType.Type.INT128:
        return exp.DataType.build("DECIMAL(38, 0)")
    return node


def _strptime(text: exp.Expression, pattern: exp.Expression) -> exp.Expression:
    """try_strptime: a pattern with an offset reads an instant (as UTC, without a zone),
    one without it a wall time; what does not read is NULL (ANSI mode off)."""
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise NotPortable("strptime with a computed pattern")
    java = exp.Literal.string(java_time_pattern(pattern.name))
    if "%z" in pattern.name or "%Z" in pattern.name:
        return _spark("CAST(to_timestamp_ltz(a, b) AS TIMESTAMP_NTZ)", a=text, b=java)
    return _spark("to_timestamp_ntz(a, b)", a=text, b=java)


# strftime codes -> Java's DateTimeFormatter letters (Spark parses case-insensitively, in
# English): the codes the formats of parsers/ read times with.
_TIME_CODES = {
    "d": "dd", "g": "SSS", "m": "MM", "Y": "yyyy", "y": "yy", "H": "HH", "M": "mm", "S": "ss", "b": "MMM",
    "z": "[XXX][XX]",
}  # fmt: skip


def java_time_pattern(strftime: str) -> str:
    """A strftime pattern (DuckDB's strptime) as Spark's datetime pattern, literals quoted."""
    out, literal, i = [], "", 0
    while i < len(strftime):
        if strftime[i] == "%" and i + 1 < len(strftime):
            code = strftime[i + 1]
            if code not in _TIME_CODES:
                raise NotPortable(f"strptime code %{code} on Spark")
            if literal:
                out.append("'" + literal.replace("'", "''") + "'")
                literal = ""
            out.append(_TIME_CODES[code])
            i += 2
        else:
            literal += strftime[i]
            i += 1
    if literal:
        out.append("'" + literal.replace("'", "''") + "'")
    return "".join(out)


def _list_sum(a: exp.Expression) -> exp.Expression:
    # DuckDB's list_sum: NULLs skipped, NULL for none; decimals of seconds (logan.read.convert)
    return _spark(
        "aggregate(a, CAST(NULL AS DECIMAL(38, 6)), (acc, x) -> CAST(CASE WHEN x IS NULL THEN acc"
        " WHEN acc IS NULL THEN x ELSE acc + x END AS DECIMAL(38, 6)))",
        a=a,
    )


def _list_bool_and(a: exp.Expression) -> exp.Expression:
    return _spark(
        "aggregate(a, CAST(NULL AS BOOLEAN), (acc, x) -> CASE WHEN x IS NULL THEN acc"
        " WHEN acc IS NULL THEN x ELSE acc AND x END)",
        a=a,
    )


def _date_diff(node: exp.DateDiff) -> exp.Expression:
    unit = (node.text("unit") or "DAY").upper().rstrip("S")
    if unit not in _UNIT_US and unit not in ("MONTH", "QUARTER", "YEAR"):
        raise NotPortable(f"date_diff by {unit}")
    start, end = node.expression, node.this
    return _spark(f"timestampdiff({unit}, date_trunc('{unit}', a), date_trunc('{unit}', b))", a=start, b=end)


def _time_bucket(node: exp.DateBin) -> exp.Expression:
    width = node.this
    if not isinstance(width, exp.Interval) or node.args.get("origin") is not None:
        raise NotPortable("time_bucket needs a constant interval and DuckDB's origin")
    unit = width.text("unit").upper().rstrip("S")
    if unit not in _UNIT_US or not width.this.name.isdigit():
        raise NotPortable(f"time_bucket by {width.sql('duckdb')}")
    us = int(width.this.name) * _UNIT_US[unit]
    return _spark(
        f"timestamp_micros(unix_micros(a) - pmod(unix_micros(a) - {_BUCKET_ORIGIN_US}, {us}))",
        a=node.expression,
    )


def _glob(node: exp.Glob) -> exp.Expression:
    # \ % _ are LIKE's own: escaped first; then * and ? become % and _
    return _spark(
        "a LIKE replace(replace(replace(replace(replace(b, '\\\\', '\\\\\\\\'), '%', '\\\\%'),"
        " '_', '\\\\_'), '*', '%'), '?', '_')",
        a=node.this, b=node.expression,
    )  # fmt: skip


def _table(node: exp.Table) -> exp.Expression:
    if isinstance(node.this, exp.Anonymous) and str(node.this.this).lower() == "duckdb_columns":
        return exp.Table(this=exp.to_identifier("duckdb_columns"), alias=node.args.get("alias"))
    if node.text("db").lower() == "main" and not node.text("catalog"):
        node = node.copy()
        node.set("db", None)
    return node


_FUNCTIONS = {
    "try_strptime": _strptime,
    "timezone": lambda zone, ts: _spark("to_utc_timestamp(a, b)", a=ts, b=zone),
    "regexp_split_to_array": lambda a, p: exp.RegexpSplit(this=a, expression=_java(p)),
    "list_sum": _list_sum,
    "list_bool_and": _list_bool_and,
    "strlen": lambda a: _spark("octet_length(a)", a=a),
    "epoch_us": lambda a: _spark("unix_micros(a)", a=a),
    # a 64-bit hash (logan cache tells keys apart by it): Spark's own hash() has 32 bits,
    # where ten thousand keys already share one by chance
    "hash": lambda *a: exp.Anonymous(this="xxhash64", expressions=list(a)),
    "to_microseconds": lambda a: _spark(
        "make_dt_interval(0, 0, 0, CAST(a AS DECIMAL(18, 0)) / 1000000)",
        a=a,
    ),
}


# The timestamps of `requests` (logan/schema.py): what `epoch_ms(x)` is given decides its
# meaning in DuckDB (a timestamp: its milliseconds, rounded; a number: the timestamp), and
# sqlglot reads it as the second whatever x is.
_TIMESTAMPS = {name for name, typ in schema.REQUEST_TYPES.items() if typ == "TIMESTAMP"}


def _epoch_ms(node: exp.UnixToTime) -> exp.Expression:
    scale = node.args.get("scale")
    of_timestamp = any(c.name in _TIMESTAMPS for c in node.this.find_all(exp.Column))
    if isinstance(scale, exp.Literal) and scale.name == "3" and of_timestamp:
        # DuckDB rounds half away from zero; Spark's unix_millis truncates
        return _spark("CAST(round(CAST(unix_micros(a) AS DECIMAL(20, 0)) / 1000, 0) AS BIGINT)", a=node.this)
    return node


def _epoch(node: exp.TimeToUnix) -> exp.Expression:
    return _spark("unix_micros(a) / 1000000.0D", a=node.this)


def _try(node: exp.Try) -> exp.Expression:
    """DuckDB's try(CAST(x AS BIGINT)): Spark's TRY_CAST, as a cast of a DECIMAL past 64 bits
    wraps around with ANSI mode off (a value of 10^20 us read as 7.8e18). Other
    expressions as they are: with ANSI mode off, what overflows there is NULL already."""
    inner = node.this
    if isinstance(inner, exp.Cast):
        return exp.TryCast(this=inner.this, to=inner.to, safe=True)
    return inner


def _struct_as_map(node: exp.Cast) -> exp.Expression:
    """CAST({'k': v, ...} AS MAP(...)) as map('k', v, ...); other casts as they are."""
    if not (isinstance(node.this, exp.Struct) and node.to.is_type(exp.DataType.Type.MAP)):
        return node
    entries = node.this.expressions
    keys = exp.Array(expressions=[exp.Literal.string(e.this.name) for e in entries])
    return exp.VarMap(keys=keys, values=exp.Array(expressions=[e.expression for e in entries]))


_RULES: list[tuple[type, object]] = [
    (exp.PercentileCont, _percentile),
    (exp.Literal, _double_literal),
    (exp.RegexpReplace, _regexp_replace),
    (exp.DateDiff, _date_diff),
    (exp.DateBin, _time_bucket),
    (exp.Glob, _glob),
    (exp.TimeToUnix, _epoch),
    (exp.UnixToTime, _epoch_ms),
    (exp.Table, _table),
    (exp.RegexpLike, _regexp_like),
    (exp.RegexpFullMatch, lambda node: _full_match(node.this, node.expression)),
    (exp.RegexpExtract, _regexp_extract),
    (exp.Length, _length),
    (exp.CTE, _cte),
    (exp.DataType, _int128),
    (exp.Try, _try),
    (exp.Cast, _struct_as_map),
]


def check_glob(pattern: str | None) -> None:
    """A --path glob Spark's LIKE can read: `*` and `?`, no `[...]` class."""
    if pattern is not None and "[" in pattern:
        raise LoganError(f"--path {pattern!r}: a [...] class is read by DuckDB only; use * and ? on Spark")
