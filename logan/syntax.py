"""Tokenizers: a server's format string becomes a list of literals and directives.

Each server writes its format language differently (Apache `%{Referer}i`, nginx
`$http_referer`, HAProxy `%{+Q}r`, varnishncsa `%{Varnish:hitmiss}x`); after this step they
are all the same list, and the compiler does not care which server wrote it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from logan.errors import FormatError


@dataclass(frozen=True)
class Directive:
    key: str  # lookup key in the dialect's directive table: "h", ">s", "^FB", "i"
    arg: str | None  # the {ARG} of %{ARG}X, None when absent
    text: str  # as written, for messages


Token = str | Directive

# %[!][status,list][<|>][{arg}]X ; X is one letter, "%" or ^ and two letters (^ti, ^FB).
_APACHE = re.compile(
    r"%(?:!?\d{3}(?:,\d{3})*)?(?P<mod>[<>])?(?:\{(?P<arg>[^}]*)\})?"
    r"(?P<name>\^[A-Za-z]{2}|[A-Za-z%])"
)


def tokenize_apache(fmt: str) -> list[Token]:
    """Split an Apache LogFormat string; C-style escapes (\\" \\t \\n) are already undone
    by Apache's config parser, so a format pasted from a config has them decoded here too."""
    fmt = _unescape_config_string(fmt)
    tokens: list[Token] = []
    pos = 0
    for m in _APACHE.finditer(fmt):
        if m.start() > pos:
            _literal(tokens, fmt[pos : m.start()])
        name = m.group("name")
        if name == "%":
            _literal(tokens, "%")
        else:
            key = (m.group("mod") or "") + name
            tokens.append(Directive(key=key, arg=m.group("arg"), text=m.group(0)))
        pos = m.end()
    rest = fmt[pos:]
    if "%" in rest:
        bad = rest[rest.index("%") :][:12]
        raise FormatError(f"cannot read the directive at {bad!r} in format {fmt!r}")
    if rest:
        _literal(tokens, rest)
    return tokens


def _literal(tokens: list[Token], text: str) -> None:
    if tokens and isinstance(tokens[-1], str):
        tokens[-1] += text
    else:
        tokens.append(text)


def _unescape_config_string(fmt: str) -> str:
    # A LogFormat line copied from httpd.conf keeps \" around quoted fields; the server sees ".
    return fmt.replace('\\"', '"').replace("\\t", "\t").replace("\\n", "\n")


TOKENIZERS = {"apache": tokenize_apache}
