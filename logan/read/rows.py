"""From raw field texts to `requests` rows: types, derived columns, classification.

One projection serves both parsing paths (logan/read/compile.py), so a line reads the same
whichever path took it. Constants (source, dialect, format) are bound parameters; the
stored table does not keep them per row (the `requests` view reads them from `ingests`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass

from logan import schema
from logan.read.compile import CompiledFormat, extra_entry
from logan.read.native import (
    KEY_ID,
    KEY_JOINED,
    KEY_PARTS,
    PUPPET_PARTS,
    ROW_INDIRECTOR,
    ROW_QUERY,
    ROW_REBUILT,
    ROW_TEMPLATE,
)

# What classification may read of a row (logan.read.classify: paths, rules, requesters).
CLASSIFIER_READS = ("path", "query", "vhost", "method", "request", "user_agent", "client", "forwarded_for")
CLASS_COLUMNS = ["environment", "indirector", "resource", "route", "requester", "requester_group"]
# The columns a store keeps (a one-shot report's), or None for every one a format fills.
Keep = frozenset[str] | None
PARAMS = {"ingest_id": "$ingest_id", "source": "$source", "dialect": "$dialect", "format": "$format"}


def typed_sql(
    cf: CompiledFormat,
    raw_sql: str,
    tz: str,
    with_reason: bool,
    checked: frozenset[str] = frozenset(),
    numbers: frozenset[str] = frozenset(),
    carry: tuple[str, ...] = (),
    entries: bool = False,
) -> str:
    """SELECT line_no, line, <typed canonical columns>, __ok [, __reason] FROM (raw).
    `checked`: fields the C split checked itself (logan/read/native.py), left out of __ok;
    `numbers`: fields of those it handed over as numbers; `carry`: raw columns passed on;
    `entries`: the `extra` map as its entries (schema.EXTRA_SET), not as a map."""
    assert numbers <= checked
    cols, checks = cf.typed(tz, numbers)
    if "extra" in cols:
        split = [schema.EXTRA_SET, *(extra_entry(i) for i in range(len(cf.extra_keys())))]
        for c in ["extra"] if entries else split:
            del cols[c]
    checks = [(ok, r) for ok, r in checks if not _aliases(ok) <= checked]
    # a check that is NULL (a cast that overflowed) fails: the line is a reject, not lost
    ok = " AND ".join(f"coalesce({c}, false)" for c, _ in checks) or "true"
    parts = [f"{sql} AS {schema.quoted(col)}" for col, sql in cols.items()]
    reason = ""
    if with_reason:
        whens = " ".join(f"WHEN NOT coalesce({c}, false) THEN '{r}'" for c, r in checks)
        reason = f", {reason_sql('matched', whens)} AS __reason"
        ok = f"matched AND {ok}"
    carried = "".join(f", {c}" for c in carry)
    return f"SELECT line_no, line, {', '.join(parts)}{carried}, ({ok}) AS __ok{reason} FROM ({raw_sql})"


def reason_sql(matched: str, whens: str = "") -> str:
    """Why a line is no row: empty, not read by the format's regex (`matched`), or one of
    `whens` (a field's check)."""
    unread = f"WHEN NOT {matched} THEN 'does not match format'"
    return f"CASE WHEN line = '' THEN 'empty line' {unread} {whens} END"


def _uri(uri: str) -> dict[str, str]:
    """path, query and host of a request URI; an absolute URI (proxies, Varnish) carries the
    host, which is the vhost when the log has none."""
    absolute = f"(contains({uri}, '://') AND NOT starts_with({uri}, '/'))"
    rest = f"substr({uri}, strpos({uri}, '://') + 3)"
    host = f"CASE WHEN {absolute} THEN split_part({rest}, '/', 1) END"
    after_host = f"substr({rest}, strpos({rest} || '/', '/'))"
    target = f"CASE WHEN {absolute} THEN coalesce(nullif({after_host}, ''), '/') ELSE {uri} END"
    return {**_path_query(target), "host": host, "target": target}


def _path_query(target: str) -> dict[str, str]:
    """path and query of a request target (origin form: /path?query)."""
    return {
        "path": f"split_part({target}, '?', 1)",
        "query": f"CASE WHEN contains({target}, '?') THEN substr({target}, strpos({target}, '?') + 1) END",
    }


def _derived_columns(cf: CompiledFormat) -> dict[str, str]:
    """The SQL of each column this format fills (derived ones included), over the typed
    projection; the columns missing here are NULL for every row of the format."""
    have = set(cf.typed("UTC")[0])
    out: dict[str, str] = {c: f"{p}" for c, p in PARAMS.items()}
    out["line_no"] = "line_no"
    for col in schema.REQUEST_COLUMNS:
        if col in have:
            out.setdefault(col, col)
    if schema.EXTRA_SET in have:  # the `extra` map as the store keeps it (schema.EXTRA_SET)
        out[schema.EXTRA_SET] = schema.EXTRA_SET
        out |= {schema.extra_column(k): extra_entry(i) for i, k in enumerate(cf.extra_keys())}
    if "request" in have:
        ok3 = "(len(__rq) = 3 AND starts_with(__rq[3], 'HTTP/'))"
        uri = _path_query("__target")  # __target and __host: computed once, below
        for col, sql in (
            ("method", "__rq[1]"),
            ("protocol", "__rq[3]"),
            ("path", uri["path"]),
            ("query", uri["query"]),
        ):
            if col not in have:
                out[col] = f"CASE WHEN {ok3} THEN {sql} END"
        if "vhost" not in have:
            out["vhost"] = f"CASE WHEN {ok3} THEN __host END"
    elif "path" in have and "query" not in have:
        out["query"] = _uri("path")["query"]
        out["path"] = _uri("path")["path"]
    if "duration_us" in have:
        if "ts_start" in have and "ts_end" not in have:
            out["ts_end"] = "ts_start + to_microseconds(duration_us)"
        if "ts_end" in have and "ts_start" not in have:
            out["ts_start"] = "ts_end - to_microseconds(duration_us)"
    elif "ts_end" in have and "ts_start" not in have:
        # The log marks only the end (nginx combined) and has no duration: the end is the
        # best start we know, off by the request's own (unlogged) time.
        out["ts_start"] = "ts_end"
    return out


def stored_columns(
    cf: CompiledFormat,
    classified: bool,
    keep: Keep = None,
    rebuild: bool = False,
    unfilled: Collection[str] = (),
    entries: bool = False,
) -> list[str]:
    """The columns a batch of this format writes to the stored table: those it fills, or
    only those of them in `keep` (a one-shot report's store). `rebuild`: a request line
    that is its parts joined is left for the view to rebuild, when they are all stored
    (schema.REQUEST_PARTS): `request_rebuilt` is written too; and so is the flag of a
    resource or requester that copies its path or client (schema.COPIES). `entries`: the
    `extra` map is written an entry a column (schema.EXTRA_SET): for a format whose rows
    mostly have one (a map NULL on most rows costs less than a column per entry).

    `unfilled`: classification columns no row gets a value of its own in
    (Classification.unfilled). They are not written: DuckDB spends as much on a column that
    is NULL on every row as on a full one (the generic profile's environment and
    requester_group, and with `rebuild` its resource and requester, left to their flags:
    a fifteenth of the Apache corpus shape's write)."""
    out = _derived_columns(cf)
    canonical = [
        c
        for c in schema.REQUEST_COLUMNS
        if (c in out or (classified and c in CLASS_COLUMNS))
        and c not in schema.FROM_INGESTS
        and (keep is None or c in keep or c in schema.ALWAYS_STORED)
    ]
    parts = rebuild and {"request", *schema.REQUEST_PARTS} <= set(canonical)
    copies = [c for c, (of, _) in schema.COPIES.items() if rebuild and {c, of} <= set(canonical)]
    # an unfilled copy of a column the format fills is written whole where no flag says it is one
    whole = {c for c, (of, _) in schema.COPIES.items() if of in out and c not in copies}
    written = [c for c in canonical if c not in unfilled or c in whole]
    flags = [schema.COPIES[c][1] for c in copies]
    if entries and "extra" in written:
        written.remove("extra")
        written += _entries(out)
    return ["ingest_id", *written, *(["request_rebuilt"] if parts else []), *flags]


def _entries(derived: dict[str, str]) -> list[str]:
    """The stored columns of the `extra` map (schema.EXTRA_SET) among derived columns."""
    return [c for c in derived if c == schema.EXTRA_SET or c.startswith(schema.EXTRA_PREFIX)]


def extra_set_of(cf: CompiledFormat) -> dict[int, list[str]]:
    """The `extra_sets` row of this format's entries, by id (none when it has none)."""
    keys = cf.extra_keys()
    return {schema.extra_set_id(keys): keys} if keys else {}


def fields_read(cf: CompiledFormat, classified: bool, keep: Keep) -> tuple[set[str], set[str]]:
    """(the raw fields, f0, f1, ..., that the stored columns come from; those a check reads):
    the others need not be cut out of the lines at all."""
    typed, checks = cf.typed("UTC")
    wanted = set(stored_columns(cf, classified, keep)) | (set(CLASSIFIER_READS) if classified else set())
    used = _typed_sources(cf, wanted)
    return _aliases(*(typed[t] for t in used)), _aliases(*(ok for ok, _ in checks))


def _typed_sources(cf: CompiledFormat, columns: Collection[str]) -> set[str]:
    """The typed columns (cf.typed) that the derived `columns` are made of."""
    typed = cf.typed("UTC")[0]
    derived = _derived_columns(cf)
    text = " ".join(derived.get(c, "") for c in columns)
    used = {t for t in typed if re.search(rf"\b{t}\b", text)}
    if re.search(r"\b__(rq|target|host)\b", text):
        used.add("request")  # method, path, query, vhost cut from the request line
    return used


def _aliases(*sql: str) -> set[str]:
    return set(re.findall(r"\bf\d+\b", " ".join(sql)))


def derived_sql(cf: CompiledFormat, typed: str, carry: tuple[str, ...] = (), entries: bool = False) -> str:
    """Every column of `requests` except classification, from the typed projection (the
    classifier reads any of them; the insert keeps only the stored ones), and `carry`;
    with `entries`, the `extra` map's entry columns in its place (schema.EXTRA_SET)."""
    out = _derived_columns(cf)
    have = set(cf.typed("UTC")[0])
    if ROW_QUERY in carry:  # each row's query as the C split's reader cut it (row_query)
        out["query"] = ROW_QUERY
    if KEY_PARTS[0] in carry:  # a key's request line taken apart by the reader (KEY_PARTS)
        out |= {c: made for c, made in REQUEST_FROM_KEY.items() if c not in have}
    # The filled columns, and NULL for those the classifier reads that the format lacks
    # (carrying 40 NULL columns through the classifier's materialized batch costs memory).
    wanted = set(out) | set(CLASSIFIER_READS)
    cols = [f"{PARAMS['ingest_id']} AS ingest_id"]
    cols += [
        f"{out.get(c, f'CAST(NULL AS {schema.REQUEST_TYPES[c]})')} AS {c}"
        for c in schema.REQUEST_COLUMNS
        if c not in CLASS_COLUMNS and c in wanted and not (entries and c == "extra")
    ]
    if entries:
        cols += [f"{out[c]} AS {schema.quoted(c)}" for c in _entries(out)]
    split = ", string_split(request, ' ') AS __rq" if "request" in have else ""
    rel = f"SELECT *{split} FROM ({typed}) WHERE __ok"
    if "request" in have:
        # Its own layer: DuckDB would evaluate the absolute-URI CASE again in every column
        # that uses it (Varnish's %r is absolute: 1.7x slower without this).
        uri = _uri("__rq[2]")
        rel = f"SELECT *, {uri['target']} AS __target, {uri['host']} AS __host FROM ({rel})"
    return f"SELECT {', '.join([*cols, *carry])} FROM ({rel})"


# The columns _derived_columns cuts from a request line, and the KEY_PARTS that hold them
# when the reader took a key's line apart: the vhost is an absolute URI's host.
REQUEST_FROM_KEY = dict(zip(("method", "path", "query", "protocol", "vhost"), KEY_PARTS, strict=True))


# (SQL of one row per distinct key, the typed columns to join on, columns to take from it)
Keyed = tuple[str, list[str], list[str]]


@dataclass(frozen=True)
class Classification:
    """A profile bound to its rules: `sql` turns the SQL of unclassified rows into that of
    classified ones (logan.read.classify.classified_sql), reading `keys` of each row.
    When the answers are cached across batches (logan.read.classify.ClassCache), `setup`
    makes the cache once, and `fill` gives the statement that classifies the new keys of a
    batch's keyed relation; `direct` is `sql` with the keys classified where they are,
    the cache neither filled nor read (for numbered keys); `inline` classifies every row
    where it is, no keys at all (for batches whose keys are nearly all distinct)."""

    sql: Callable[[str, Keyed | None], str]
    keys: tuple[str, ...]
    setup: str | None = None
    fill: Callable[[str], str] | None = None  # its INSERT gives how many keys it added
    # (its third argument: whether the keys carry native.PUPPET_PARTS, see Numbered)
    direct: Callable[[str, Keyed, bool], str] | None = None
    inline: Callable[[str, tuple[str, str] | None], str] | None = None
    # its `inline` reads each row's route template and indirector from columns the rows
    # carry, when they do (native.Plan.row_templates)
    templates: bool = False
    # its `direct` reads the Puppet parse of each key's request line from the columns the
    # reader made (native.Plan.puppet), when the keys carry them
    parts: bool = False
    # the classification columns no row gets a value of its own in (classify.unfilled_columns):
    # not written (stored_columns)
    unfilled: frozenset[str] = frozenset()


# None leaves the classification columns NULL.
Classifier = Classification | None


@dataclass(frozen=True)
class Numbered:
    """The distinct texts of the keyed fields that the C split's reader numbered
    (native.Read.keys), registered as `rel`; `cut`: a request line or target among them
    lost its query string first (native.Plan.cut); `query`: see native.Plan.row_query."""

    rel: str
    cut: bool = False
    query: bool = False  # the rows carry their query as the reader cut it (ROW_QUERY)
    templates: bool = False  # rows classified row by row carry ROW_TEMPLATE, ROW_INDIRECTOR
    request: bool = False  # the keys carry their request line's parts (KEY_PARTS, KEY_JOINED)
    parts: bool = False  # the keys carry the Puppet parse of their request line (PUPPET_PARTS)


def insert_sql(
    cf: CompiledFormat,
    raw_sql: str,
    tz: str,
    classify: Classifier,
    keep: Keep = None,
    checked: frozenset[str] = frozenset(),
    numbers: frozenset[str] = frozenset(),
    numbered: Numbered | None = None,
    direct: bool = False,
    rebuild: bool = False,
    inline: bool = False,
    entries: bool = False,
) -> str:
    """The INSERT of the rows a split reads (`raw_sql`); `numbered`: the keys, when
    `raw_sql` carries their numbers; `direct`: classified by the classification's `direct`
    (with `numbered` keys), no prepare_sql before it; `inline`: by its `inline`, each row
    where it is (no prepare_sql either); `rebuild`, `entries`: see stored_columns."""
    row_query = numbered is not None and numbered.query  # and whether the row is its parts joined
    carry = (KEY_ID, ROW_QUERY, ROW_REBUILT) if row_query else (KEY_ID,) if numbered is not None else ()
    made = (ROW_TEMPLATE, ROW_INDIRECTOR) if inline and numbered is not None and numbered.templates else None
    carry += made or ()
    typed = typed_sql(cf, raw_sql, tz, False, checked, numbers, carry, entries)
    derived = derived_sql(cf, typed, carry, entries)
    keyed = _keyed(cf, raw_sql, tz, classify, numbered)
    if keyed is not None and _cached(classify) and numbered is None:
        keyed = (f"SELECT * FROM {KEYS_TABLE}", *keyed[1:])  # made by prepare_sql
    assert not direct or (numbered is not None and keyed is not None)
    by_row = row_query and cut_from_request(cf, schema.REQUEST_PARTS)
    parts = numbered is not None and numbered.parts
    return _insert(cf, derived, classify, keep, keyed, direct, rebuild, inline, by_row, made, entries, parts)


# A batch's keys (its distinct request lines and what follows from them), when the
# classification is cached and the keys come from a DISTINCT in SQL: read by the cache's
# fill and by the insert, made once. Keys the C split's reader numbered are few rows
# already and are read twice instead (storing them cost more than reading them again).
KEYS_TABLE = "__batch_keys"


def _cached(classify: Classifier) -> bool:
    return classify is not None and classify.fill is not None


def prepare_sql(
    cf: CompiledFormat, raw_sql: str, tz: str, classify: Classifier, numbered: Numbered | None = None
) -> list[tuple[str, bool]]:
    """The statements to run before insert_sql's, when the classification is cached: the
    classification of the batch's keys that the cache lacks (after the keys are made into
    KEYS_TABLE, unless they are `numbered`). With each, whether it takes the batch's
    parameters."""
    keyed = _keyed(cf, raw_sql, tz, classify, numbered)
    if keyed is None or not _cached(classify):
        return []
    assert classify is not None and classify.fill is not None
    if numbered is not None:
        return [(classify.fill(keyed[0]), True)]
    made = f"CREATE OR REPLACE TEMP TABLE {KEYS_TABLE} AS {keyed[0]}"
    return [(made, True), (classify.fill(f"SELECT * FROM {KEYS_TABLE}"), False)]


def key_fields(cf: CompiledFormat, classify: Classifier) -> list[str]:
    """The raw fields (f0, f1...) whose texts classification keys on: the request line, and
    the vhost field where the format has one."""
    if classify is None:
        return []
    typed, _ = cf.typed("UTC")
    return sorted(_aliases(*(typed[t] for t in _typed_sources(cf, classify.keys))))


def _keyed(
    cf: CompiledFormat, raw_sql: str, tz: str, classify: Classifier, numbered: Numbered | None = None
) -> Keyed | None:
    """For classify's `keyed`: the distinct raw texts of the fields its key columns come
    from (a batch's request lines), read like rows; the columns to join on; and the
    derived columns that follow from those alone (method, path, query...: taken from the
    key's row instead of cut out of every row's request line). With `numbered` texts (the
    C split's reader's) the keys are its rows and the join is on their number; else a
    DISTINCT over `raw_sql` makes them and the join is on the typed texts."""
    if classify is None:
        return None
    on = sorted(_typed_sources(cf, classify.keys))
    fields = key_fields(cf, classify)
    if not on or not fields:
        return None
    others = ", ".join(f"CAST(NULL AS VARCHAR) AS {f.alias}" for f in cf.fields if f.alias not in fields)
    others = f", {others}" if others else ""
    every = frozenset(f.alias for f in cf.fields)  # no check: a key's row is never stored
    if numbered is not None:
        made = (KEY_ID, *((*KEY_PARTS, KEY_JOINED) if numbered.request else ()))
        made += PUPPET_PARTS if numbered.parts else ()
        texts = f"{', '.join(fields)}{others}, {', '.join(made)}"
        rows = f"SELECT 0 AS line_no, '' AS line, {texts} FROM {numbered.rel}"
        typed = typed_sql(cf, rows, tz, with_reason=False, checked=every, carry=made)
        keys_sql, join_on = derived_sql(cf, typed, made), [KEY_ID]
    else:
        texts = f"SELECT DISTINCT {', '.join(fields)} FROM ({raw_sql})"
        distinct = f"SELECT 0 AS line_no, '' AS line, {', '.join(fields)}{others} FROM ({texts})"
        keys_sql = derived_sql(cf, typed_sql(cf, distinct, tz, with_reason=False, checked=every))
        # Two raw texts may type alike ($request_uri "/a?x=1" and "/a?x=2" are both path
        # "/a"): one row per key, or the join back would give every such row twice. Numbered
        # keys are one row per number already (a GROUP BY of 300,000 keys, 0.24 s, spared).
        keys_sql = f"SELECT DISTINCT ON ({', '.join(on)}) * FROM ({keys_sql})"
        join_on = on
    derived = _derived_columns(cf)
    sources = {c: _typed_sources(cf, [c]) for c in schema.REQUEST_COLUMNS if c in derived and c not in on}
    carried = [c for c, made_of in sources.items() if made_of and made_of <= set(on)]
    cut = numbered is not None and numbered.cut
    if cut:  # the query and the raw text: each row's own
        carried = [c for c in carried if c not in WITH_QUERY]
    if not cut and all(c in on or c in carried for c in ("request", *schema.REQUEST_PARTS)):
        # Whether a row's request line is its parts joined, from its key's row, which
        # holds the same line and parts: compared once per key, not once per row (an
        # eighth of a HAProxy batch's INSERT). Keys that lost their query have the rows'
        # answer from the reader instead (ROW_REBUILT).
        test = KEY_JOINED if numbered is not None and numbered.request else REBUILT_TEST
        keys_sql = f"SELECT *, {test} AS {KEY_REBUILT} FROM ({keys_sql})"
        carried.append(KEY_REBUILT)
    return keys_sql, join_on, carried


# Whether a row's request line is its REQUEST_PARTS joined (the view then rebuilds it), and
# the name of that test's answer made from a key's row (its keyed relation carries it).
REBUILT_TEST = f"coalesce(request = ({schema.rebuilt_request_sql()}), false)"
KEY_REBUILT = "__request_rebuilt"


def cut_from_request(cf: CompiledFormat, columns: Collection[str]) -> bool:
    """Whether the format cuts all of `columns` from its request line (none is a field of
    its own): what the C pass over the line makes of them is then the row's (the path
    native.request_templates reads; the parts whose join ROW_REBUILT answers for)."""
    typed, _ = cf.typed("UTC")
    return "request" in typed and not set(columns) & set(typed)


# The columns that hold a request's query string: a row's own, never its key's when the keys
# lost their query (native.without_query).
WITH_QUERY = ("query", "request")
# The key columns classification may read for the keys to lose their query.
QUERYLESS_KEYS = {"path", "vhost", "method"}


def query_cut(cf: CompiledFormat, classify: Classifier, keyed: str) -> str | None:
    """How the texts of the keyed field may lose their query before they are numbered
    (native.Plan.cut): "request" for a request line, "target" for a request target
    ($request_uri); None when classification reads the query (the Puppet profile's
    environment, a rule) or the field is another. A log whose query strings rarely repeat
    then has a key per path, not per line."""
    if classify is None or not set(classify.keys) <= QUERYLESS_KEYS:
        return None
    typed, _ = cf.typed("UTC")
    fed = sorted(name for name, sql in typed.items() if keyed in _aliases(sql))
    if fed == ["request"]:
        return "request"
    if fed in (["path"], ["path", "query"]):  # a path is the text before its first '?'
        return "target"
    return None


def query_as_cut(cf: CompiledFormat, keyed: str) -> bool:
    """Whether a row's query is what native.request_without_query cuts from the text of the
    keyed field (a request line): the format derives it from its request, which is that
    text as is ("-": none)."""
    typed, _ = cf.typed("UTC")
    return cut_from_request(cf, ["query"]) and typed.get("request") in (keyed, f"nullif({keyed}, '-')")


def _insert(
    cf: CompiledFormat,
    derived: str,
    classify: Classifier,
    keep: Keep,
    keyed: Keyed | None = None,
    direct: bool = False,
    rebuild: bool = False,
    inline: bool = False,
    by_row: bool = False,
    templates: tuple[str, str] | None = None,
    entries: bool = False,
    parts: bool = False,
) -> str:
    """`by_row`: the rows carry ROW_REBUILT (the reader's answer to REBUILT_TEST);
    `templates`: the columns of each row's route template and indirector, for `inline`;
    `parts`: the keys carry PUPPET_PARTS, for `direct`."""
    unfilled = classify.unfilled if classify is not None else frozenset()
    names = stored_columns(cf, classify is not None, keep, rebuild, unfilled, entries)
    cols = ", ".join(map(schema.quoted, names))
    values = cols
    if classify is None:
        source = derived
    elif inline:
        assert classify.inline is not None
        source = classify.inline(derived, templates)
    elif direct:
        assert classify.direct is not None and keyed is not None
        source = classify.direct(derived, keyed, parts)
    else:
        source = classify.sql(derived, keyed)
    flags = _left_to_the_view(names, unfilled)
    if flags:
        # each compared once, in a layer of its own, for both of its columns
        made = {}
        for flag, (column, _) in flags.items():
            made |= {column: f"CASE WHEN __{flag} THEN NULL ELSE {column} END", flag: f"__{flag}"}
        values = ", ".join(made.get(c, schema.quoted(c)) for c in names)
        by_key = set() if inline or keyed is None else set(keyed[2])  # the key's row's answers
        if by_row and "request_rebuilt" in flags:
            flags["request_rebuilt"] = ("request", ROW_REBUILT)
        tests = ", ".join(f"{same} AS __{f}" for f, (_, same) in flags.items() if f"__{f}" not in by_key)
        source = f"SELECT *, {tests} FROM ({source})" if tests else source
    return f"INSERT INTO {schema.REQUESTS_TABLE} ({cols}) SELECT {values} FROM ({source})"


def _left_to_the_view(names: list[str], unfilled: Collection[str] = ()) -> dict[str, tuple[str, str]]:
    """{flag: (the column a true flag leaves NULL, SQL: whether the view can make its value)}
    for the flags among the stored columns `names` (stored_columns); an `unfilled` copy is
    its source on every row."""
    out = {}
    if "request_rebuilt" in names:
        out["request_rebuilt"] = ("request", REBUILT_TEST)
    for column, (of, flag) in schema.COPIES.items():
        if flag in names:
            out[flag] = (column, "true" if column in unfilled else f"{column} IS NOT DISTINCT FROM {of}")
    return out


def insert_from_typed_sql(
    cf: CompiledFormat,
    typed_rel: str,
    classify: Classifier,
    keep: Keep = None,
    rebuild: bool = False,
    entries: bool = False,
) -> str:
    """INSERT the accepted rows of an already typed (materialized) relation (typed_sql
    with the same `entries`)."""
    derived = derived_sql(cf, f"SELECT * FROM {typed_rel}", entries=entries)
    return _insert(cf, derived, classify, keep, rebuild=rebuild, entries=entries)
