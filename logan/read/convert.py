"""Converters: the SQL that turns a field's text into a typed canonical value.

Each converter takes the SQL expression of the raw text (never the text itself: log content
is data, not SQL) and returns the typed expression plus, when the text can be wrong, a
predicate that is true when it was acceptable. '-' always means "absent" and gives NULL.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import duckdb

from logan.errors import FormatError
from logan.schema import sql_str


@dataclass(frozen=True)
class Typed:
    sql: str
    ok: str | None = None  # SQL predicate: the text was acceptable
    flag: str | None = None  # SQL predicate: the text carried a marker (HAProxy logasap "+")


def absent(v: str, number: bool = False) -> str:
    """SQL predicate: the field `v` holds no value ("-"; NULL for a number the C split read)."""
    return f"{v} IS NULL" if number else f"{v} = '-'"


def _int(v: str, scale: int = 1, number: bool = False) -> Typed:
    given = v if number else f"nullif({v}, '-')"
    cast = f"TRY_CAST({given} AS BIGINT)"
    if scale != 1:  # scaled in 128 bits: a huge value is a bad value, not an overflow error
        cast = f"try(CAST(TRY_CAST({given} AS HUGEINT) * {scale} AS BIGINT))"
    return Typed(cast, f"({absent(v, number)} OR {cast} IS NOT NULL)")


def _seconds_to_us(seconds: str) -> str:
    """Seconds (a DECIMAL) as microseconds, NULL where they do not fit a BIGINT: a value
    too big is the line's fault, a reject, never an overflow error that stops the ingest."""
    return f"try(CAST({seconds} * 1000000 AS BIGINT))"


def _decimal_seconds(v: str) -> Typed:
    # "0.123" seconds with ms resolution (nginx) -> microseconds, exact (no float rounding).
    # In 18 digits the product is exact below 10^6 s and a fifth of the cost of 38 (a
    # 128-bit multiplication): the wide cast runs only where the narrow one gave nothing,
    # a text that is no number or a time of 11.6 days and more.
    text = f"nullif({v}, '-')"
    narrow = _seconds_to_us(f"TRY_CAST({text} AS DECIMAL(18,6))")
    us = f"coalesce({narrow}, {_seconds_to_us(f'TRY_CAST({text} AS DECIMAL(38,6))')})"
    return Typed(us, f"({v} = '-' OR {us} IS NOT NULL)")


def _local_to_utc(ts_sql: str, tz: str) -> str:
    if tz.upper() == "UTC":
        return ts_sql
    return f"CAST(timezone({sql_str(tz)}, {ts_sql}) AS TIMESTAMP)"


# Once per pattern (1 ms each): a format's typed columns are built again by each of their
# readers (107 times in a re-run) and detection tries many formats with the same patterns.
@cache
def check_time_pattern(pattern: str) -> None:
    """A strftime pattern DuckDB cannot read is the format's fault: say so up front."""
    try:
        duckdb.execute("SELECT try_strptime('', ?)", [pattern]).fetchall()
    except duckdb.Error as exc:
        raise FormatError(f"cannot read times written as {pattern!r}: {str(exc).splitlines()[0]}") from None


def _strptime(v: str, pattern: str, tz: str) -> Typed:
    check_time_pattern(pattern)
    parsed = f"try_strptime({v}, {sql_str(pattern)})"
    if "%z" in pattern or "%Z" in pattern:
        # An offset in the text: an instant; cast to TIMESTAMP in the session's UTC.
        typed = f"CAST({parsed} AS TIMESTAMP)"
    else:
        typed = _local_to_utc(parsed, tz)
    return Typed(typed, f"({parsed} IS NOT NULL)")


def _time_number(n: str, pattern: str, tz: str) -> Typed:
    """A time the C split read (microseconds since 1970: in UTC when the pattern has an
    offset, else as written, in `tz`)."""
    ts = f"make_timestamp({n})"
    return Typed(ts if "%z" in pattern or "%Z" in pattern else _local_to_utc(ts, tz))


# The times HTTP servers write: Apache's %t (in brackets), nginx's $time_local and
# $time_iso8601 (2017-09-18T00:00:02+03:00).
CLF_TIME = "%d/%b/%Y:%H:%M:%S %z"
ISO8601 = "%Y-%m-%dT%H:%M:%S%z"


def time_pattern(name: str, arg: str | None) -> str | None:
    """The strftime pattern that reads the whole text of a field under time converter
    `name`, or None for a time of another kind (epoch seconds)."""
    if name == "strftime":
        return strftime_pattern((arg or "").removeprefix("begin:").removeprefix("end:"))
    return {"clf_time": f"[{CLF_TIME}]", "clf_time_bare": CLF_TIME, "iso8601": ISO8601}.get(name)


def strftime_pattern(arg: str) -> str:
    """Apache strftime extras that DuckDB spells differently."""
    return arg.replace("%T", "%H:%M:%S").replace("%F", "%Y-%m-%d").replace("%D", "%m/%d/%y")


def convert(name: str, v: str, arg: str | None, tz: str, number: bool = False) -> Typed:
    """The typed value of raw text expression `v` under converter `name`. With `number`, `v`
    is the BIGINT the C split read the text as (logan/read/native.py: digits, "-" as NULL, "-1"
    as -1); a converter without a NUMBER_FORMS entry raises KeyError."""
    if number:
        return NUMBER_FORMS[name](v, arg, tz)
    if name == "text":
        return Typed(f"nullif({v}, '-')")
    if name == "user":
        # Apache writes an empty user name as "" (two quote characters).
        return Typed(f"CASE WHEN {v} = '\"\"' THEN '' ELSE nullif({v}, '-') END")
    if name == "int":
        return _int(v)
    if name == "ms":
        return _int(v, 1000)
    if name == "s":
        return _int(v, 1000000)
    if name == "s_decimal":
        return _decimal_seconds(v)
    if name == "query":
        # Apache %q: "?a=1" or "" -> "a=1" or NULL.
        return Typed(f"nullif(ltrim(nullif({v}, '-'), '?'), '')")
    if name == "clf_time":
        return _strptime(f"substr({v}, 2, length({v}) - 2)", CLF_TIME, tz)
    if name == "strftime":
        return _strptime(v, time_pattern(name, arg), tz)  # type: ignore[arg-type]
    if name in ("epoch_s", "epoch_ms", "epoch_us"):
        scale = {"epoch_s": 1000000, "epoch_ms": 1000, "epoch_us": 1}[name]
        us = _int(v, scale)
        ts = f"try(make_timestamp({us.sql}))"
        return Typed(ts, f"({v} = '-' OR {ts} IS NOT NULL)")
    if name == "frac_ms":
        return _int(v, 1000)
    if name == "frac_us":
        return _int(v)
    if name in PROXY_CONVERTERS:
        return PROXY_CONVERTERS[name](v, arg, tz)
    raise ValueError(f"unknown converter {name!r}")


# Converters whose value is a point in time, and those that refine one (a fraction).
TIME_BASE = {"clf_time", "strftime", "epoch_s", "epoch_ms", "epoch_us"}
TIME_FRACTION = {"frac_ms", "frac_us"}


# ---- nginx and Varnish ---------------------------------------------------------------

# nginx $upstream_* variables hold one value per upstream tried: ", " between tries and
# " : " where an internal redirect moved on to another upstream group; a try that got no
# answer is "-" ("0.100, -"), and "-" alone means no upstream was tried (a cache HIT);
# escape=json writes that as "" instead.
_LIST_SPLIT = sql_str(", | : ")


def _upstream_sum(v: str, arg: str | None, tz: str) -> Typed:
    """Seconds with ms resolution, summed over the tries, in microseconds (exact)."""
    one = _decimal_seconds(f"coalesce(nullif({v}, ''), '-')")
    parts = f"list_filter(regexp_split_to_array({v}, {_LIST_SPLIT}), lambda x: x <> '-')"
    total = _seconds_to_us(f"list_sum(list_transform({parts}, lambda x: TRY_CAST(x AS DECIMAL(38,6))))")
    good = f"list_bool_and(list_transform({parts}, lambda x: TRY_CAST(x AS DECIMAL(38,6)) IS NOT NULL))"
    many = f"(contains({v}, ', ') OR contains({v}, ' : '))"
    fits = f"({total} IS NOT NULL OR {parts} = [])"  # a sum too big for microseconds is a reject
    return Typed(
        f"CASE WHEN {many} THEN {total} ELSE {one.sql} END",
        f"CASE WHEN {many} THEN coalesce({good}, true) AND {fits} ELSE {one.ok} END",
    )


def _upstream_count(v: str, arg: str | None, tz: str) -> Typed:
    """How many upstreams were tried: the number of values; "-" alone is none (0), and so is
    "" (nginx escape=json writes an absent variable as an empty string)."""
    return Typed(f"CASE WHEN {v} IN ('-', '') THEN 0 ELSE len(regexp_split_to_array({v}, {_LIST_SPLIT})) END")


def _epoch_decimal(v: str, arg: str | None, tz: str) -> Typed:
    """nginx $msec: epoch seconds with ms resolution ("1505682002.098"). DECIMAL(38,6): the
    microseconds since 1970 overflow DECIMAL(18) during the multiplication."""
    seconds = f"TRY_CAST(nullif({v}, '-') AS DECIMAL(38,6))"
    ts = f"try(make_timestamp({_seconds_to_us(seconds)}))"
    return Typed(ts, f"({v} = '-' OR {ts} IS NOT NULL)")


def _upper(v: str, arg: str | None, tz: str) -> Typed:
    """Cache verdicts in one spelling: varnish writes hit/miss, nginx HIT/MISS."""
    return Typed(f"upper(nullif({v}, '-'))")


def _url_path(v: str, arg: str | None, tz: str) -> Typed:
    """A URL that may be absolute (varnishncsa %U: http://host/path): its path only."""
    rest = f"substr({v}, strpos({v}, '://') + 3)"
    absolute = f"(contains({v}, '://') AND NOT starts_with({v}, '/'))"
    path = f"coalesce(nullif(substr({rest}, strpos({rest} || '/', '/')), ''), '/')"
    return Typed(f"CASE WHEN {absolute} THEN {path} ELSE nullif({v}, '-') END")


PROXY_CONVERTERS = {
    # nginx $time_local has no brackets (they are literals of the format).
    "clf_time_bare": lambda v, arg, tz: _strptime(v, CLF_TIME, tz),
    "iso8601": lambda v, arg, tz: _strptime(v, ISO8601, tz),
    "epoch_decimal": _epoch_decimal,
    "upstream_sum": _upstream_sum,
    "upstream_count": _upstream_count,
    "upper": _upper,
    "url_path": _url_path,
    # nginx $request_uri: the path and the query of the URI as sent (the query may hold "?").
    "uri_path": lambda v, arg, tz: Typed(f"nullif(split_part({v}, '?', 1), '-')"),
    "uri_query": lambda v, arg, tz: Typed(
        f"CASE WHEN contains({v}, '?') THEN substr({v}, strpos({v}, '?') + 1) END"
    ),
}
TIME_BASE |= {"clf_time_bare", "iso8601", "epoch_decimal"}


# ---- HAProxy ---------------------------------------------------------------------------


def _timer_ms(v: str, arg: str | None = None, tz: str = "UTC", number: bool = False) -> Typed:
    """HAProxy timers: milliseconds, "-1" when the phase was never reached (NULL), and "+"
    before Ta/Tt with `option logasap` (the request was still running: a lower bound)."""
    # scaled in 128 bits: a huge value is a bad value, not an overflow error
    us = f"try(CAST(TRY_CAST({v} AS HUGEINT) * 1000 AS BIGINT))"
    minus_one = "-1" if number else "'-1'"
    return Typed(
        f"CASE WHEN {v} = {minus_one} THEN NULL ELSE {us} END",
        f"({v} = {minus_one} OR {us} >= 0)",
        "false" if number else f"starts_with({v}, '+')",  # a number has no "+"
    )


def _int_plus(v: str, arg: str | None = None, tz: str = "UTC", number: bool = False) -> Typed:
    """A count HAProxy may mark with "+": bytes under logasap, retries after a redispatch."""
    t = _int(v, number=number)
    return Typed(t.sql, t.ok, "false" if number else f"starts_with({v}, '+')")


def _hex_int(v: str, arg: str | None, tz: str) -> Typed:
    """A number written in hex by the +X flag (%{+X}cp: 0050)."""
    cast = f"TRY_CAST('0x' || nullif({v}, '-') AS BIGINT)"
    return Typed(cast, f"({v} = '-' OR {cast} IS NOT NULL)")


def _epoch_hex(v: str, arg: str | None, tz: str) -> Typed:
    """%{+X}Ts: epoch seconds in hex."""
    t = _hex_int(v, arg, tz)
    ts = f"try(make_timestamp({_seconds_to_us(t.sql)}))"
    return Typed(ts, f"({t.ok} AND ({v} = '-' OR {ts} IS NOT NULL))")


def _braces(v: str, arg: str | None, tz: str) -> Typed:
    """%hr/%hs "{a|b}": the captured headers without the braces, "|" between them."""
    braced = f"starts_with({v}, '{{') AND ends_with({v}, '}}')"
    inner = f"CASE WHEN {braced} THEN substr({v}, 2, length({v}) - 2) ELSE {v} END"
    return Typed(f"nullif(nullif({inner}, ''), '-')")


PROXY_CONVERTERS.update(
    timer_ms=_timer_ms,
    int_plus=_int_plus,
    hex_int=_hex_int,
    epoch_hex=_epoch_hex,
    braces=_braces,
)
TIME_BASE |= {"epoch_hex"}

# The converters of fields the C split may hand over as numbers, over that BIGINT: digits, or
# a time's microseconds. Each must give what the text form gives on the texts the split lets
# through: logan/read/native.py checks that on those texts before it hands any field over so.
NUMBER_FORMS = {
    "int": lambda n, arg, tz: _int(n, number=True),
    "ms": lambda n, arg, tz: _int(n, 1000, number=True),
    "s": lambda n, arg, tz: _int(n, 1000000, number=True),
    "timer_ms": lambda n, arg, tz: _timer_ms(n, number=True),
    "int_plus": lambda n, arg, tz: _int_plus(n, number=True),
}
for _name in ("strftime", "clf_time", "clf_time_bare", "iso8601"):
    NUMBER_FORMS[_name] = lambda n, arg, tz, name=_name: _time_number(n, time_pattern(name, arg), tz)  # type: ignore[arg-type]
# Converters that give text, applied also when their field lands in `extra`.
EXTRA_CONVERTERS = {"braces"}
