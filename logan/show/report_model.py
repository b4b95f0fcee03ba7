"""The shape of a nightly report, as plain data: a Report is a period and a list of
Sections, each with its key figures (Figure, each against earlier days as a Change), its
tables and an optional chart. logan.nightly.report fills it; report_html, report_text and
mail render it. It lives here, beside its renderers, because the renderers may not import
the nightly part that imports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from logan.errors import LoganError

if TYPE_CHECKING:
    import pandas as pd

NOT_AVAILABLE = "not available in this version"


@dataclass(frozen=True)
class Period:
    """One local day as a UTC range [start, end) (naive, the store's convention)."""

    day: date
    tz: str
    start: datetime
    end: datetime

    @property
    def label(self) -> str:
        return self.day.isoformat()

    @property
    def hours(self) -> int:
        return round((self.end - self.start).total_seconds() / 3600)

    def days_before(self, days: int) -> Period:
        return day_period(self.day - timedelta(days=days), self.tz)

    def filters(self) -> dict:
        return {"since": self.start, "until": self.end}


def zone(tz: str) -> ZoneInfo:
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise LoganError(f"unknown time zone {tz!r} (use e.g. UTC, Europe/Berlin)") from None


def day_period(day: date, tz: str = "UTC") -> Period:
    """The local day `day` in `tz` (23 or 25 hours on the days clocks change)."""
    z = zone(tz)

    def utc(d: date) -> datetime:
        return datetime.combine(d, time(), z).astimezone(UTC).replace(tzinfo=None)

    return Period(day, tz, utc(day), utc(day + timedelta(days=1)))


@dataclass(frozen=True)
class Change:
    """A figure against an earlier one: `worse` is None where more is neither (a count)."""

    text: str  # "+40%", "+0.3 pp", "new", "-"
    arrow: str  # "▲", "▼", "=" or ""
    worse: bool | None


@dataclass(frozen=True)
class Figure:
    key: str  # requests, total_us, p50_us, p95_us, p99_us, error_share
    name: str
    kind: str  # count | us | share: how show/ writes the value
    value: float | None
    vs_previous: Change
    vs_week: Change


@dataclass
class Table:
    caption: str
    frame: pd.DataFrame
    kinds: dict[str, str] = field(default_factory=dict)  # column -> us | count | share | ratio | time


@dataclass
class Section:
    key: str
    title: str
    verdict: str = ""
    figures: list[Figure] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    chart: bytes | None = None  # PNG
    chart_alt: str = ""
    available: bool = True


@dataclass
class Report:
    label: str
    period: Period
    sections: list[Section]
    failed: tuple[tuple[str, str], ...] = ()

    def section(self, key: str) -> Section | None:
        return next((s for s in self.sections if s.key == key), None)

    def charts(self) -> dict[str, bytes]:
        """The PNG of each section that has one, by section key."""
        return {s.key: s.chart for s in self.sections if s.chart}

    def subject(self) -> str:
        """'logan: web01 2026-11-23: p95 +40%, 1 source failed'."""
        head = self.section("headline")
        parts = [head.verdict] if head and head.verdict else []
        incidents = self.section("incidents")
        if incidents and incidents.tables:  # only when there were some
            parts.append(incidents.verdict)
        if self.failed:
            parts.append(f"{len(self.failed)} source{'s' if len(self.failed) > 1 else ''} failed")
        name = f"{self.label} " if self.label else ""
        return f"logan: {name}{self.period.label}: {', '.join(parts) or 'no requests'}"
