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


# nginx: $name or ${name}; a name is letters, digits and "_" (ngx_http_log_compile). A "$"
# with no name after it is an error in nginx too.
_NGINX = re.compile(r"\$(?:\{(?P<braced>[A-Za-z0-9_]+)\}|(?P<name>[A-Za-z0-9_]+))|\$")
_NGINX_CONF_ESCAPE = re.compile(r"\\(.)")
_NGINX_CONF_CHARS = {'"': '"', "'": "'", "\\": "\\", "t": "\t", "r": "\r", "n": "\n"}
# A format pasted from nginx.conf may start with the log_format's escape= parameter
# ("escape=json {...}"): see Dialect.split_escape.


def tokenize_nginx(fmt: str) -> list[Token]:
    """Split an nginx log_format string (the quoted pieces already joined, as nginx does).
    nginx's config parser undoes \\" \\' \\\\ \\t \\r \\n inside a quoted piece; a format pasted
    from nginx.conf (or given by logan.read.nginx_conf, which returns pieces as written) has them
    undone here, once."""
    fmt = _NGINX_CONF_ESCAPE.sub(lambda m: _NGINX_CONF_CHARS.get(m.group(1), m.group(0)), fmt)
    tokens: list[Token] = []
    pos = 0
    for m in _NGINX.finditer(fmt):
        name = m.group("braced") or m.group("name")
        if name is None:
            raise FormatError(f"a '$' without a variable name at {fmt[m.start() :][:12]!r} in {fmt!r}")
        if m.start() > pos:
            _literal(tokens, fmt[pos : m.start()])
        tokens.append(Directive(key=name.lower(), arg=None, text=m.group(0)))
        pos = m.end()
    if pos < len(fmt):
        _literal(tokens, fmt[pos:])
    return tokens


# varnishncsa -F: %X or %{ARG}X with one letter, no Apache modifiers. %{Varnish:hitmiss}x,
# %{VCL_Log:key}x and %{VSL:tag}x name a family before the colon: the key becomes
# "x:Varnish" and the argument what follows it, so the table lists each family once.
_VARNISH = re.compile(r"%(?:\{(?P<arg>[^}]*)\})?(?P<name>[A-Za-z%])")


def tokenize_varnish(fmt: str) -> list[Token]:
    """Split a varnishncsa -F string; varnishncsa itself undoes \\t and \\n in it."""
    fmt = fmt.replace("\\t", "\t").replace("\\n", "\n")
    tokens: list[Token] = []
    pos = 0
    for m in _VARNISH.finditer(fmt):
        if m.start() > pos:
            _literal(tokens, fmt[pos : m.start()])
        name, arg = m.group("name"), m.group("arg")
        if name == "%":
            _literal(tokens, "%")
        elif name == "x" and arg and ":" in arg:
            family, _, rest = arg.partition(":")
            tokens.append(Directive(key=f"x:{family}", arg=rest, text=m.group(0)))
        else:
            tokens.append(Directive(key=name, arg=arg, text=m.group(0)))
        pos = m.end()
    rest = fmt[pos:]
    if "%" in rest:
        raise FormatError(f"cannot read the directive at {rest[rest.index('%') :][:12]!r} in format {fmt!r}")
    if rest:
        _literal(tokens, rest)
    return tokens


TOKENIZERS = {"apache": tokenize_apache}
TOKENIZERS.update(nginx=tokenize_nginx, varnish=tokenize_varnish)


# ---- HAProxy log-format ---------------------------------------------------------------
# %var, %{flags}var, %[sample expression], %{flags}[sample]; a var name is letters (%Ta,
# %hrl, %sslv). Flags: +Q quotes a string, +X writes IPs, ports, %Ts, %rt, %pid in hex, +E
# escapes '"', '\\' and ']' (not decoded: rare, and meant for RFC 5424 structured data).
_HAPROXY = re.compile(
    r"%(?:\{(?P<flags>[^}]*)\})?(?:(?P<name>[A-Za-z]+)|\[(?P<sample>(?:[^\]()]|\([^)]*\))*)\]|%)"
)
# What +Q quotes: HAProxy's string and IP variables (log.c lf_text/lf_ip). Numbers, dates
# and the termination state never get quotes, and %hrl/%hsl quote each header themselves.
_HAPROXY_QUOTABLE = frozenset(
    ["CC", "CS", "H", "HM", "HP", "HPO", "HQ", "HU", "HV", "ID", "b", "bi", "ci", "f", "fi", "ft"]
    + ["hr", "hs", "r", "s", "si", "sslc", "sslv", "["]
)
# What +X writes in hex: the variable's key gets a "+X" suffix (its own table entry).
_HAPROXY_HEXABLE = frozenset(["ci", "cp", "fi", "fp", "bi", "bp", "si", "sp", "Ts", "rt", "pid"])
_HAPROXY_KEYWORD = re.compile(r"^\s*(?:error-)?log-format(?:-sd)?\s+")


def tokenize_haproxy(fmt: str) -> list[Token]:
    """Split an HAProxy log-format string, as written in haproxy.cfg (with or without the
    `log-format` keyword and its config quoting) or as the log-format parser sees it.

    HAProxy merges runs of spaces into one separator, and a field that writes nothing (%hr
    without captures) drops the separator after it: the compiler does that part (the
    directive table marks such fields `optional`). Quotes from +Q are emitted as literal
    '"' around the field, so the compiler treats it like any quoted field.
    """
    fmt = _haproxy_config_text(fmt)
    tokens: list[Token] = []
    default_flags: set[str] = set()
    pos = 0
    for m in _HAPROXY.finditer(fmt):
        if m.start() > pos:
            _literal(tokens, fmt[pos : m.start()])
        pos = m.end()
        if m.group(0) == "%%":
            _literal(tokens, "%")
            continue
        name = m.group("name")
        flags = _haproxy_flags(m.group("flags") or "", default_flags)
        if name == "o":  # %{+Q}o: the flags become the default for every later variable
            default_flags = flags
            continue
        key = "[" if name is None else name
        if "X" in flags and key in _HAPROXY_HEXABLE:
            key += "+X"
        quote = "Q" in flags and key in _HAPROXY_QUOTABLE
        if quote:
            _literal(tokens, '"')
        tokens.append(Directive(key=key, arg=m.group("sample"), text=m.group(0)))
        if quote:
            _literal(tokens, '"')
    rest = fmt[pos:]
    if "%" in rest:
        raise FormatError(f"cannot read the variable at {rest[rest.index('%') :][:12]!r} in format {fmt!r}")
    if rest:
        _literal(tokens, rest)
    if tokens and isinstance(tokens[0], str):  # "%{+Q}o %ci": nothing written before the space
        tokens[0] = tokens[0].lstrip(" ")
    return [t for t in tokens if t != ""]


def _haproxy_flags(text: str, default: set[str]) -> set[str]:
    """Flags of one variable: "+Q", "-Q", "+Q,+E" (also "+Q+E") over the %o defaults."""
    flags = set(default)
    for sign, flag in re.findall(r"([+-])([A-Za-z]+)", text):
        (flags.add if sign == "+" else flags.discard)(flag)
    return flags


def _haproxy_config_text(fmt: str) -> str:
    """The log-format string as HAProxy's log-format parser receives it, separators merged.

    With the `log-format` keyword, or written as one quoted config word ("..." or '...',
    pieces may follow each other: "%t"' %s'), the config parser's rules apply: quotes
    group, \\" and \\\\ are escapes inside "...", a backslash outside quotes escapes the next
    character, and a backslash at a line end continues the line. Otherwise the text is
    taken as the format itself, with only \\" and "\\ " (escaped space) undone."""
    fmt = re.sub(r"\\\r?\n", " ", fmt)
    keyword = _HAPROXY_KEYWORD.match(fmt)
    if keyword:
        fmt = " ".join(_haproxy_config_words(fmt[keyword.end() :]))
    elif fmt[:1] in "\"'" and len(words := _haproxy_config_words(fmt)) == 1:
        fmt = words[0]
    else:
        fmt = re.sub(r"\\([\"' \\])", r"\1", fmt)
    # A separator before anything was written is skipped (log.c starts with last_isspace).
    return re.sub(r"\s+", " ", fmt).strip()


def _haproxy_config_words(text: str) -> list[str]:
    words: list[str] = []
    word: list[str] | None = None
    i, n = 0, len(text)
    quote = ""
    while i < n:
        c = text[i]
        if quote:
            if c == quote:
                quote = ""
            elif c == "\\" and quote == '"' and i + 1 < n and text[i + 1] in '"\\':
                i += 1
                word.append(text[i])  # type: ignore[union-attr]
            else:
                word.append(c)  # type: ignore[union-attr]
        elif c in " \t":
            if word is not None:
                words.append("".join(word))
                word = None
        else:
            word = [] if word is None else word
            if c in "\"'":
                quote = c
            elif c == "\\" and i + 1 < n:
                i += 1
                word.append(text[i])
            else:
                word.append(c)
        i += 1
    if quote:
        raise FormatError(f"unterminated {quote} in log-format {text!r}")
    if word is not None:
        words.append("".join(word))
    return words


TOKENIZERS["haproxy"] = tokenize_haproxy
