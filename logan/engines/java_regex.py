"""DuckDB's regexes (RE2) as Java's, which Spark runs: the same text matched the same way.

The formats' regexes (logan/read/compile.py) and the classification's use a part of RE2
that Java reads alike, but for three classes: RE2's `\\s` is [\\t\\n\\f\\r ] where Java's adds
the vertical tab (a `\\S+` field would stop at a \\v that RE2 takes), and RE2's `.` takes
every character but \\n where Java's also stops at \\r, \\u0085, \\u2028 and \\u2029 (`(?d)`,
UNIX_LINES, gives RE2's). A `\\S` inside a bracket class has no short Java form: refused.
"""

from __future__ import annotations

from logan.errors import LoganError

_SPACE = "\\t\\n\\f\\r "


def java_regex(pattern: str, flags: str = "") -> str:
    """`pattern` (RE2) for java.util.regex; `flags` as DuckDB's: 'i' (case-insensitive),
    'g' (every match: Spark's default, nothing to add)."""
    if set(flags) - {"i", "g"}:
        raise LoganError(f"regex flags {flags!r} have no Spark form")
    out, in_class, i = [], False, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out.append(_escape(nxt, in_class))
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            out.append(c)
            if pattern[i + 1 : i + 2] == "^":
                out.append("^")
                i += 1
            if pattern[i + 1 : i + 2] == "]":  # a ] first in a class is a literal
                out.append("\\]")
                i += 1
        elif c == "]" and in_class:
            in_class = False
            out.append(c)
        elif c == "[" and in_class:  # Java reads [ inside a class as a nested class
            out.append("\\[")
        elif c == "&" and in_class:  # and && as an intersection
            out.append("\\&")
        else:
            out.append(c)
        i += 1
    return "(?d" + ("i" if "i" in flags else "") + ")" + "".join(out)


def _escape(c: str, in_class: bool) -> str:
    if c == "s":
        return _SPACE if in_class else f"[{_SPACE}]"
    if c == "S":
        if in_class:
            raise LoganError("a \\S inside a [...] class has no Java form that means the same")
        return f"[^{_SPACE}]"
    return "\\" + c
