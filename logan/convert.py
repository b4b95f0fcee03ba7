"""Converters: the SQL that turns a field's text into a typed canonical value.

Each converter takes the SQL expression of the raw text (never the text itself: log content
is data, not SQL) and returns the typed expression plus, when the text can be wrong, a
predicate that is true when it was acceptable. '-' always means "absent" and gives NULL.
"""

from __future__ import annotations

from dataclasses import dataclass


def sql_str(value: str) -> str:
    """A SQL string literal for a value that comes from the user's options or our own tables
    (a time zone, a strftime pattern), never from a log line."""
    return "'" + value.replace("'", "''") + "'"


@dataclass(frozen=True)
class Typed:
    sql: str
    ok: str | None = None  # SQL predicate: the text was acceptable


def _int(v: str, scale: int = 1) -> Typed:
    cast = f"TRY_CAST(nullif({v}, '-') AS BIGINT)"
    return Typed(f"({cast} * {scale})" if scale != 1 else cast, f"({v} = '-' OR {cast} IS NOT NULL)")


def _decimal_seconds(v: str) -> Typed:
    # "0.123" seconds with ms resolution (nginx) -> microseconds, exact (no float rounding).
    cast = f"TRY_CAST(nullif({v}, '-') AS DECIMAL(18,6))"
    return Typed(f"CAST({cast} * 1000000 AS BIGINT)", f"({v} = '-' OR {cast} IS NOT NULL)")


def _local_to_utc(ts_sql: str, tz: str) -> str:
    if tz.upper() == "UTC":
        return ts_sql
    return f"CAST(timezone({sql_str(tz)}, {ts_sql}) AS TIMESTAMP)"


def _strptime(v: str, pattern: str, tz: str) -> Typed:
    parsed = f"try_strptime({v}, {sql_str(pattern)})"
    if "%z" in pattern or "%Z" in pattern:
        # An offset in the text: an instant; cast to TIMESTAMP in the session's UTC.
        typed = f"CAST({parsed} AS TIMESTAMP)"
    else:
        typed = _local_to_utc(parsed, tz)
    return Typed(typed, f"({parsed} IS NOT NULL)")


def strftime_pattern(arg: str) -> str:
    """Apache strftime extras that DuckDB spells differently."""
    return arg.replace("%T", "%H:%M:%S").replace("%F", "%Y-%m-%d").replace("%D", "%m/%d/%y")


def convert(name: str, v: str, arg: str | None, tz: str) -> Typed:
    """The typed value of raw text expression `v` under converter `name`."""
    if name == "text":
        return Typed(f"nullif({v}, '-')")
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
        return _strptime(f"substr({v}, 2, length({v}) - 2)", "%d/%b/%Y:%H:%M:%S %z", tz)
    if name == "strftime":
        pattern = (arg or "").removeprefix("begin:").removeprefix("end:")
        return _strptime(v, strftime_pattern(pattern), tz)
    if name in ("epoch_s", "epoch_ms", "epoch_us"):
        scale = {"epoch_s": 1000000, "epoch_ms": 1000, "epoch_us": 1}[name]
        us = _int(v, scale)
        return Typed(f"make_timestamp({us.sql})", us.ok)
    if name == "frac_ms":
        return _int(v, 1000)
    if name == "frac_us":
        return _int(v)
    raise ValueError(f"unknown converter {name!r}")


# Converters whose value is a point in time, and those that refine one (a fraction).
TIME_BASE = {"clf_time", "strftime", "epoch_s", "epoch_ms", "epoch_us"}
TIME_FRACTION = {"frac_ms", "frac_us"}
