"""Filters: which requests an answer looks at (`--since`, `--until`, `--env`, `--method`,
`--status`, `--path`), as one WHERE condition with bound parameters: a value a user or a
log gives never becomes SQL text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from logan.errors import LoganError
from logan.units import DURATION, parse_duration


def parse_time(text: str | datetime, now: datetime | None = None) -> datetime:
    """An instant as naive UTC (the store's convention).

    '24h', '90m', '7d' mean that long before `now` (default: the current time; filters
    count back from the last request instead, see filter_sql);
    otherwise ISO 8601 ('2013-11-05', '2013-11-05 19:52', '...T19:52:21+01:00') or Apache's
    '05/Nov/2013:19:52:21 +0000'. A time without offset is UTC.
    """
    if isinstance(text, datetime):
        when = text
    else:
        text = text.strip()
        if DURATION.match(text):
            now = now or datetime.now(UTC)
            if now.tzinfo is None:
                now = now.replace(tzinfo=UTC)
            when = now - timedelta(microseconds=parse_duration(text))
        else:
            try:
                when = datetime.fromisoformat(text)
            except ValueError:
                try:
                    when = datetime.strptime(text, "%d/%b/%Y:%H:%M:%S %z")
                except ValueError:
                    raise LoganError(f"not a time: {text!r} (use 24h, 2013-11-05T19:52:21, ...)") from None
    if when.tzinfo is not None:
        when = when.astimezone(UTC).replace(tzinfo=None)
    return when


def parse_status(spec: str) -> list[tuple[int, int]]:
    """'5xx' -> [(500, 599)]; '404' -> [(404, 404)]; '4xx,503' and '500-504' too."""
    ranges = []
    for part in str(spec).split(","):
        part = part.strip().lower()
        if re.fullmatch(r"[1-5]xx", part):
            lo = int(part[0]) * 100
            ranges.append((lo, lo + 99))
        elif re.fullmatch(r"\d{3}", part):
            ranges.append((int(part), int(part)))
        elif m := re.fullmatch(r"(\d{3})-(\d{3})", part):
            ranges.append((int(m.group(1)), int(m.group(2))))
        else:
            raise LoganError(f"not a status: {part!r} (use 5xx, 404, 500-504)")
    return ranges


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


FILTERS = ("since", "until", "env", "method", "status", "path_glob")


def filter_sql(filters: dict | None = None) -> tuple[str, list]:
    """A WHERE condition with ? placeholders and its parameters (values never enter SQL).

    `filters` holds any of FILTERS, as stats() takes them; None values are no filter.
    """
    filters = {k: v for k, v in (filters or {}).items() if v is not None}
    unknown = set(filters) - set(FILTERS)
    if unknown:
        raise LoganError(f"unknown filter {sorted(unknown)}; use {', '.join(FILTERS)}")
    since, until, env, method, status, path_glob = (filters.get(k) for k in FILTERS)
    conds: list[str] = []
    params: list = []
    for value, op in ((since, ">="), (until, "<")):
        if value is None:
            continue
        if isinstance(value, str) and DURATION.match(value.strip()):
            # "24h" counts back from the last request in the store, not from now: a
            # post-mortem reads yesterday's logs, and for a fresh log the two agree.
            conds.append(f"ts_start {op} (SELECT max(ts_start) FROM requests) - to_microseconds(?)")
            params.append(parse_duration(value.strip()))
        else:
            conds.append(f"ts_start {op} ?")
            params.append(parse_time(value))
    for column, values in (("environment", _as_list(env)), ("method", _as_list(method))):
        if values:
            conds.append(f"{column} IN ({', '.join('?' * len(values))})")
            params += [v.upper() if column == "method" else v for v in values]
    if status is not None:
        ranges = parse_status(status)
        conds.append("(" + " OR ".join("status BETWEEN ? AND ?" for _ in ranges) + ")")
        params += [v for r in ranges for v in r]
    if path_glob is not None:
        conds.append("path GLOB ?")
        params.append(path_glob)
    return " AND ".join(conds), params


def within(where: str, params: Sequence, first_us: int, end_us: int) -> tuple[str, list]:
    """`where` narrowed to the requests that start in [first_us, end_us) (epoch
    microseconds): one slice of an answer read a stretch of time at a time."""
    epoch = datetime(1970, 1, 1)
    conds = [f"({where})"] if where else []
    conds.append("ts_start >= ? AND ts_start < ?")
    bounds = [epoch + timedelta(microseconds=first_us), epoch + timedelta(microseconds=end_us)]
    return " AND ".join(conds), [*params, *bounds]
