"""Read a `log_format` from a real nginx configuration.

    log_format main escape=json '{"t":"$time_iso8601",'
                                '"rt":$request_time}';

nginx joins the quoted pieces of a log_format into one string; a piece may be quoted with
'...' or "..." or not at all. `include` pulls in other files (globs allowed); a relative
include is relative to the directory of the main configuration file (nginx's conf prefix),
wherever the include itself is written.

The result is the format string as `resolve_format(..., dialect="nginx")` reads it: the
pieces joined *as written* (their \\" \\t escapes are undone once, by the nginx tokenizer),
preceded by `escape=MODE ` when the log_format names an escape mode. So a format pasted
from the config by hand and one read from the config are the same string.
"""

from __future__ import annotations

import glob
from collections.abc import Iterator
from pathlib import Path

from logan.errors import FormatError

# Nested includes deeper than this are a loop (nginx itself has no limit but would recurse).
_MAX_DEPTH = 16


def format_from_nginx_conf(path: str | Path, name: str | None = None) -> str:
    """The log_format called `name` in the configuration at `path` (and its includes); with
    no name, the one its `access_log` lines write (asked for when they write several)."""
    main = Path(path)
    found: dict[str, str] = {}
    used: dict[str, list[str]] = {}  # format name -> the access_log paths that write it
    for args in _directives(main, main.parent, 0):
        if args[0][0] == "log_format" and len(args) >= 3:
            found.setdefault(args[1][0], _format(args[2:]))
        elif args[0][0] == "access_log" and len(args) >= 2 and args[1][0] != "off":
            fmt = args[2][0] if len(args) >= 3 and "=" not in args[2][0] else "combined"
            used.setdefault(fmt, []).append(args[1][0])
    if name is None:
        if len(used) > 1:
            each = "; ".join(f"{n} ({', '.join(paths)})" for n, paths in sorted(used.items()))
            raise FormatError(f"the access_log lines of {main} write several formats: {each}; "
                              "choose one with --log-format-name")  # fmt: skip
        name = next(iter(used), "combined")
    if name in found:
        return found[name]
    if name == "combined":  # nginx's built-in, never written in a config
        from logan.read.dialects import get_dialect

        return get_dialect("nginx").presets["combined"]
    known = ", ".join(sorted(found)) or "none"
    raise FormatError(f"no log_format {name!r} in {main} (found: {known})")


def _format(pieces: list[tuple[str, bool]]) -> str:
    escape = ""
    first, quoted = pieces[0]
    if not quoted and first.startswith("escape="):
        escape, pieces = first + " ", pieces[1:]
    return escape + "".join(text for text, _ in pieces)


def _directives(conf: Path, prefix: Path, depth: int) -> Iterator[list[tuple[str, bool]]]:
    """Every simple directive of a file, includes expanded in place: [(text, quoted), ...]."""
    if depth > _MAX_DEPTH:
        raise FormatError(f"nginx include nesting deeper than {_MAX_DEPTH} at {conf}")
    try:
        text = conf.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise FormatError(f"cannot read nginx configuration {conf}: {e}") from e
    for args in _statements(text):
        if args[0][0] == "include" and len(args) == 2:
            pattern = args[1][0]
            full = pattern if Path(pattern).is_absolute() else str(prefix / pattern)
            for inc in sorted(glob.glob(full)):
                yield from _directives(Path(inc), prefix, depth + 1)
        else:
            yield args


def _statements(text: str) -> Iterator[list[tuple[str, bool]]]:
    """nginx's config tokenizer, reduced: words and quoted strings up to ';', with '{' and
    '}' ending a statement too (block openers are not needed here) and '#' comments."""
    args: list[tuple[str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif c in ";{}":
            if args:
                yield args
            args = []
            i += 1
        elif c in "'\"":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                raise FormatError("unterminated quoted string in nginx configuration")
            args.append((text[i + 1 : j], True))  # escapes kept as written
            i = j + 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in ";{}'\"":
                if text.startswith("${", j) and "}" in text[j:]:  # ${var} is not a block
                    j = text.index("}", j) + 1
                else:
                    j += 2 if text[j] == "\\" else 1
            args.append((text[i:j], False))
            i = j
    if args:
        yield args
