"""logan.toml: what `logan nightly` reads, ingests, reports and mails, checked before
anything is done. Every mistake is one message naming the file, the line and the key
(tomllib gives the line of a syntax error; for a wrong value the key's line is found in
the text).

    store = "/var/lib/logan/web.duckdb"
    label = "web01"
    tz = "Europe/Berlin"          # whose day is reported

    [[sources]]
    path = "/var/log/nginx/access.log.1"
    format = "nginx:timed"

    [report]   by = ["route"], top = 10, sections = [...], stale = "1h"
    [read]     tz, profile, rules, trusted_proxies (as `logan ingest`)
    [slo]      p95 = "300ms", p99 = "2s", error_share = 0.01
    [mail]     to, from, smtp, security, user, password_env | password_file, ca_file
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logan.answer.inputs import ReadOptions
from logan.answer.views import dimension_columns
from logan.errors import LoganError
from logan.nightly.report import ReportOptions, chosen
from logan.read.classify import load_rules
from logan.show.mail import SECURITY, Smtp, password_from, smtp_server
from logan.show.report_model import zone
from logan.units import parse_duration

STR, STRS, INT, NUM = "a string", "a list of strings", "a whole number", "a number"
# table -> key -> what its value must be; "" is the top level
KEYS: dict[str, dict[str, str]] = {
    "": {"store": STR, "label": STR, "tz": STR},
    "sources": {"path": STR, "format": STR, "dialect": STR},
    "read": {"tz": STR, "profile": STR, "rules": STR, "trusted_proxies": STRS},
    "report": {"sections": STRS, "by": STRS, "top": INT, "stale": STR},
    "slo": {"p50": STR, "p95": STR, "p99": STR, "error_share": NUM},
    "mail": {
        "to": STRS,
        "from": STR,
        "smtp": STR,
        "security": STR,
        "user": STR,
        "password_env": STR,
        "password_file": STR,
        "ca_file": STR,
    },  # fmt: skip
}
TABLES = {"sources", "read", "report", "slo", "mail"}


@dataclass(frozen=True)
class SourceConfig:
    path: str  # a file or a glob
    format: str = "auto"
    dialect: str | None = None


@dataclass(frozen=True)
class MailConfig:
    to: list[str]
    sender: str
    smtp: Smtp


@dataclass(frozen=True)
class Config:
    path: Path
    store: Path
    tz: str
    sources: list[SourceConfig]
    read: ReadOptions
    report: ReportOptions
    sections: list[str] | None = None
    mail: MailConfig | None = None


class Checker:
    """The text of a logan.toml, to say where a key is when its value is wrong."""

    def __init__(self, path: Path, text: str):
        self.path, self.lines = path, text.splitlines()

    def line_of(self, table: str, key: str | None, index: int = 0) -> int | None:
        """The line of `key` in `[table]` (the `index`-th `[[table]]`), or of the table's
        header when key is None."""
        current, seen = "", -1
        for n, line in enumerate(self.lines, 1):
            header = re.match(r"\s*\[\[?\s*([\w.-]+)\s*\]\]?", line)
            if header:
                current = header.group(1)
                seen = seen + 1 if current == table else seen
                if key is None and current == table and seen == index:
                    return n
            elif (
                key is not None
                and current == table
                and (seen == index or not table)
                and re.match(rf"\s*\"?{re.escape(key)}\"?\s*=", line)
            ):
                return n
        return None

    def error(self, message: str, table: str = "", key: str | None = None, index: int = 0) -> LoganError:
        line = self.line_of(table, key, index)
        where = f"{self.path}" + (f" line {line}" if line else "")
        name = ".".join(p for p in (table, key) if p)
        return LoganError(f"{where}: {name}: {message}" if name else f"{where}: {message}")

    def table(self, data: dict, table: str, index: int = 0) -> dict:
        """`data` with every key known and of its kind."""
        allowed = KEYS[table]
        for key, value in data.items():
            if table == "" and key in TABLES:
                continue
            if key not in allowed:
                known = ", ".join(allowed) if table else ", ".join([*allowed, *sorted(TABLES)])
                raise self.error(f"unknown key (known: {known})", table, key, index)
            if not _is(value, allowed[key]):
                raise self.error(f"should be {allowed[key]}, not {value!r}", table, key, index)
        return data


def _is(value: Any, kind: str) -> bool:
    if kind == STR:
        return isinstance(value, str)
    if kind == STRS:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == INT:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, int | float) and not isinstance(value, bool)


def load_config(path: str | Path) -> Config:
    """Read and check a logan.toml."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LoganError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LoganError(f"{path}: not TOML: {exc}") from None  # the message names line and column
    return _checked(Checker(path, text), data)


def _checked(c: Checker, data: dict) -> Config:
    c.table(data, "")
    for name in TABLES - {"sources"}:
        if name in data and not isinstance(data[name], dict):
            raise c.error("should be a table: [" + name + "]", "", name)
    if "store" not in data:
        raise c.error('store is missing: the DuckDB file the sources are read into (store = "...")')
    tz = data.get("tz", "UTC")
    _value(c, zone, tz, "", "tz")
    sources = _sources(c, data.get("sources"))
    base = c.path.parent
    return Config(
        path=c.path,
        store=Path(data["store"]) if data["store"] == ":memory:" else base / data["store"],
        tz=tz,
        sources=sources,
        read=_read(c, c.table(data.get("read", {}), "read"), base),
        report=_report(c, data),
        sections=_sections(c, data.get("report", {})),
        mail=_mail(c, c.table(data.get("mail", {}), "mail"), base) if "mail" in data else None,
    )


def _value(c: Checker, check: Any, value: Any, table: str, key: str) -> Any:
    """check(value), a LoganError from it said at the key's line."""
    try:
        return check(value)
    except LoganError as exc:
        raise c.error(str(exc), table, key) from None


def _sources(c: Checker, given: Any) -> list[SourceConfig]:
    if not isinstance(given, list) or not given or not all(isinstance(s, dict) for s in given):
        raise c.error('no [[sources]]: give at least one, with path = "/var/log/..."', "", "sources")
    out = []
    for i, s in enumerate(given):
        c.table(s, "sources", i)
        if "path" not in s:
            raise c.error("path is missing", "sources", None, i)
        out.append(SourceConfig(s["path"], s.get("format", "auto"), s.get("dialect")))
    return out


def _read(c: Checker, r: dict, base: Path) -> ReadOptions:
    rules = _value(c, load_rules, base / r["rules"], "read", "rules") if "rules" in r else None
    return ReadOptions(tz=r.get("tz", "UTC"), profile=r.get("profile", "auto"), rules=rules,
                       trusted_proxies=tuple(r.get("trusted_proxies", ())))  # fmt: skip


def _report(c: Checker, data: dict) -> ReportOptions:
    r = c.table(data.get("report", {}), "report")
    slo = c.table(data.get("slo", {}), "slo")
    by = r.get("by", ["indirector"])
    _value(c, dimension_columns, by, "report", "by")
    if r.get("top", 10) < 1:
        raise c.error("should be 1 or more", "report", "top")
    stale = _value(c, lambda v: parse_duration(v, "stale"), r.get("stale", "1h"), "report", "stale")
    slos = {f"{k}_us": _value(c, parse_duration, v, "slo", k) for k, v in slo.items() if k != "error_share"}
    if "error_share" in slo:
        slos["error_share"] = float(slo["error_share"])
    return ReportOptions(label=data.get("label", ""), by=tuple(by), top=r.get("top", 10), stale_us=stale,
                         slos=slos)  # fmt: skip


def _sections(c: Checker, r: dict) -> list[str] | None:
    if "sections" not in r:
        return None
    _value(c, chosen, r["sections"], "report", "sections")
    return r["sections"]


def _mail(c: Checker, m: dict, base: Path) -> MailConfig:
    for key in ("to", "from"):
        if not m.get(key):
            raise c.error(f"{key} is missing", "mail", None)
    security = m.get("security", "starttls")
    if security not in SECURITY:
        raise c.error(f"use one of {', '.join(SECURITY)}", "mail", "security")
    password_file = base / m["password_file"] if "password_file" in m else None
    key = "password_env" if "password_env" in m else "password_file"
    password = _value(c, lambda _: password_from(m.get("password_env"), password_file), None, "mail", key)
    ca_file = str(base / m["ca_file"]) if "ca_file" in m else None
    smtp = _value(c, lambda v: smtp_server(v, security, m.get("user"), password, ca_file),
                  m.get("smtp", "localhost"), "mail", "smtp")  # fmt: skip
    return MailConfig(m["to"], m["from"], smtp)
