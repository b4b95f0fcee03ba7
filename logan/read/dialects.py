"""Dialects: a server's directive table and named formats, read from parsers/*.toml.

The tables are data (see parsers/apache.toml); this module only reads them and answers
"what does this directive mean". A user adds formats with their own directory of TOML files
(`LOGAN_PARSERS=/path/dir`): a file naming an existing dialect adds presets to it.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from logan.errors import FormatError
from logan.read.convert import strftime_pattern
from logan.read.syntax import TOKENIZERS, Directive, Token
from logan.resources import parsers_dirs


@dataclass(frozen=True)
class FieldSpec:
    """What one directive in one format means."""

    directive: str  # as written, "%{Referer}i"
    column: str | None  # canonical column it may fill
    name: str  # key in `extra` when it does not fill a column
    value: str  # shape of its text: token, int, text, clf_time, time
    convert: str  # converter name in logan.read.convert
    arg: str | None  # the directive's argument (strftime pattern, header name...)
    spaces: int = 0
    priority: int = 0
    literal: str | None = None  # the directive stands for fixed text (%%)
    # "end": the time field marks the end of the request (nginx $time_local), not its start.
    role: str | None = None
    # Further canonical columns the same text fills: ((column, converter), ...), e.g. an
    # nginx $upstream_addr list also gives upstream_tries (the count of its values).
    also: tuple[tuple[str, str], ...] = ()
    # The field may write nothing at all, and then the separator after it is not written
    # either (HAProxy %hr without header captures).
    optional: bool = False
    # Name of an `extra` entry set to "true" when the converter sees its marker in the text
    # (HAProxy logasap "+" before Ta and B): the value keeps its column, the mark its entry.
    flag: str | None = None


@dataclass
class Dialect:
    name: str
    syntax: str
    escape: str
    directives: dict[str, dict]
    presets: dict[str, str] = field(default_factory=dict)
    # The server's own escape= words (nginx log_format escape=json) -> the decoder to use.
    escapes: dict[str, str] = field(default_factory=dict)
    # The entry for a directive the table does not know (nginx: any variable is loggable).
    fallback: dict | None = None
    # Line prefixes a log writer may put before every line (syslog headers), by name:
    # {"regex": RE2 without capture groups, "time": RE2 with one group, "time_format": ...}.
    prefixes: dict[str, dict] = field(default_factory=dict)
    # Messages that are not requests but worth keeping (server DOWN): {"kinds": [{kind,
    # regex}], "time": ...}, see logan/read/events.py.
    events: dict = field(default_factory=dict)
    # preset -> RE2 regex over request paths: see parsers/apache.toml [preferred_when]
    preferred_when: dict[str, str] = field(default_factory=dict)

    def tokenize(self, fmt: str) -> list[Token]:
        return TOKENIZERS[self.syntax](fmt)

    def split_escape(self, fmt: str) -> tuple[str, str]:
        """(decoder, format): a format may start with the server's `escape=MODE ` parameter,
        written as in the config (`escape=json {"t":"$msec"}`); without it, the default."""
        head, _, rest = fmt.partition(" ")
        if self.escapes and head.startswith("escape=") and rest:
            mode = head.removeprefix("escape=")
            if mode not in self.escapes:
                raise FormatError(f"unknown {self.name} escape={mode}; known: {', '.join(self.escapes)}")
            return self.escapes[mode], rest
        return self.escape, fmt

    def _entry(self, d: Directive) -> tuple[dict | None, str | None]:
        """The table entry and argument of a directive: an exact key, else the longest
        "prefix*" key (nginx $http_<name>: the rest is the argument), else the fallback."""
        if d.key in self.directives:
            return self.directives[d.key], d.arg
        stems = [k[:-1] for k in self.directives if k.endswith("*") and d.key.startswith(k[:-1])]
        if stems:
            stem = max(stems, key=len)
            return self.directives[stem + "*"], d.key[len(stem) :]
        if self.fallback is not None:
            # A variable of the config's own (map, set) is read as text; one a letter or two
            # from a known name is a typo that would lose a column ($request_tme).
            near = difflib.get_close_matches(
                d.key, [k for k in self.directives if not k.endswith("*")], 1, 0.85
            )
            if near:
                raise FormatError(
                    f"unknown {self.name} variable {d.text}: did you mean {d.text[0]}{near[0]}?"
                )
        return self.fallback, d.arg

    def spec(self, d: Directive) -> FieldSpec:
        entry, arg = self._entry(d)
        if entry is None:
            raise FormatError(f"unknown {self.name} directive {d.text}")
        merged = {k: v for k, v in entry.items() if k not in ("args", "with_arg", "arg_prefixes")}
        if arg is not None:
            for prefix, role in entry.get("arg_prefixes", {}).items():
                if arg.lower().startswith(prefix):
                    arg = arg[len(prefix) :]
                    merged["role"] = role
            merged.update(entry.get("with_arg", {}))
            merged.update(entry.get("args", {}).get(arg.lower(), {}))
        name = merged.get("name", d.key).replace("{arg}", arg or "").replace("{key}", d.key)
        spaces = merged.get("spaces", 0)
        if merged.get("value") == "int":
            spaces = 0  # %{usec_frac}t: digits, whatever spaces the directive's other forms hold
        elif merged.get("convert") == "strftime" and arg is not None:
            # as many as the pattern writes: %{%Y-%m-%d %H:%M:%S}t one, %{%s}t none
            spaces = strftime_pattern(arg.removeprefix("begin:").removeprefix("end:")).count(" ")
        return FieldSpec(
            directive=d.text,
            column=merged.get("column") or None,
            name=name,
            value=merged.get("value", "token"),
            convert=merged.get("convert", "text"),
            arg=arg if arg is not None else merged.get("arg"),  # a table may give a pattern
            spaces=spaces,
            priority=merged.get("priority", 0),
            literal=merged.get("literal"),
            role=merged.get("role"),
            also=tuple(merged.get("also", {}).items()),
            optional=merged.get("optional", False),
            flag=merged.get("flag"),
        )


def _toml_files() -> list[Path]:
    dirs = list(parsers_dirs())
    extra = os.environ.get("LOGAN_PARSERS")
    if extra:
        dirs += [Path(p) for p in extra.split(os.pathsep) if p]
    return [f for d in dirs for f in sorted(d.glob("*.toml"))]


@cache
def dialects() -> dict[str, Dialect]:
    found: dict[str, Dialect] = {}
    for path in _toml_files():
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
        name = data.get("dialect") or path.stem
        if name in found:  # a user's file adding presets or directives to a known dialect
            found[name].presets.update(data.get("presets", {}))
            found[name].directives.update(data.get("directives", {}))
            found[name].preferred_when.update(data.get("preferred_when", {}))
            continue
        found[name] = Dialect(
            name=name,
            syntax=data.get("syntax", name),
            escape=data.get("escape", "none"),
            directives=dict(data.get("directives", {})),
            presets=dict(data.get("presets", {})),
            escapes=dict(data.get("escapes", {})),
            fallback=data.get("fallback"),
            prefixes=dict(data.get("prefixes", {})),
            events=dict(data.get("events", {})),
            preferred_when=dict(data.get("preferred_when", {})),
        )
    return found


def get_dialect(name: str) -> Dialect:
    known = dialects()
    if name not in known:
        raise FormatError(f"unknown dialect {name!r}; known: {', '.join(sorted(known))}")
    return known[name]


def resolve_format(fmt: str, dialect: str | None) -> tuple[Dialect, str, str]:
    """Turn what the user typed into (dialect, format string, label).

    `combined_D`, `apache:combined_D`, or a format string as written in the server's config.
    """
    if ":" in fmt and fmt.split(":", 1)[0] in dialects() and "%" not in fmt.split(":")[0]:
        dialect, fmt = fmt.split(":", 1)
    candidates = [get_dialect(dialect)] if dialect else list(dialects().values())
    for d in candidates:
        if fmt in d.presets:
            return d, d.presets[fmt], f"{d.name}:{fmt}"
    if "%" not in fmt and "$" not in fmt:  # a name, not a format string: no preset has it
        names = sorted(f"{d.name}:{p}" for d in candidates for p in d.presets)
        where = f"{dialect}:" if dialect else ""
        raise FormatError(f"unknown format {where + fmt!r}; presets: {', '.join(names)}")
    if dialect is None:
        # A raw format string without --dialect: nginx's $variables, else Apache's % syntax.
        dialect = "nginx" if "$" in fmt and "%" not in fmt else "apache"
    return get_dialect(dialect), fmt, fmt
