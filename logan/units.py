"""Durations, counts and sizes: read from what a user types, written for people to read.

Every part uses these: the answers parse `--since 24h` and `--slo 500ms` and write the
headline; the outputs print 850 us, 7.1M, 3.0 MiB. Times are microseconds everywhere.
"""

from __future__ import annotations

import re

from logan.errors import LoganError

_UNITS_US = {"us": 1, "µs": 1, "ms": 1_000, "s": 1_000_000, "m": 60_000_000, "min": 60_000_000,
             "h": 3_600_000_000, "d": 86_400_000_000, "w": 604_800_000_000}  # fmt: skip
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|µs|ms|s|min|m|h|d|w)\s*$")


def parse_duration(text: str, option: str = "") -> int:
    """'500ms', '1.5s', '24h', '250us' -> microseconds. A bare number is milliseconds.
    `option`: the option it came from, named in the error."""
    text = str(text).strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return round(float(text) * 1_000)
    m = DURATION.match(text)
    if not m:
        where = f"{option}: " if option else ""
        raise LoganError(f"{where}not a duration: {text!r} (use e.g. 500ms, 2s, 24h)")
    return round(float(m.group(1)) * _UNITS_US[m.group(2)])


def missing(value: object) -> bool:
    """None, NaN, NaT or pandas' NA: a cell with nothing in it."""
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN and NaT differ from themselves
    except TypeError:  # pandas.NA refuses to be a bool
        return True


def format_us(us: float | None) -> str:
    """Microseconds for people: 850 us, 22 ms, 1.4 s, 3.2 min, 26.9 h, 4.1 days."""
    if missing(us):
        return "-"
    us = float(us)
    for limit, div, unit in (
        (1e3, 1, "us"), (1e6, 1e3, "ms"), (60e6, 1e6, "s"), (3600e6, 60e6, "min"),
        (86400e6 * 2, 3600e6, "h"),
    ):  # fmt: skip
        if abs(us) < limit:
            value = us / div
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{us / 86400e6:.1f} days"


def format_count(n: float | None) -> str:
    """7129326 -> 7.1M; 84108 -> 84.1k; 2383 -> 2,383."""
    if missing(n):
        return "-"
    n = float(n)
    if abs(n) < 10_000:
        return f"{n:,.0f}"
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.1f}{unit}"
    return f"{n:.0f}"


def format_bytes(n: float | None) -> str:
    if missing(n):
        return "-"
    n = float(n)
    for div, unit in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if abs(n) >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n:.0f} B"
