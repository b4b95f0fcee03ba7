"""`logan ingest --engine spark --to DIR FILES`: Spark parses the raw logs itself, with the
SQL DuckDB runs, into the Parquet layout `logan export` writes (logan.engines.export).

The lines are a text source numbered in the JVM (each partition's count, summed on the
driver: no Python per line). The format and the profile are chosen as `logan ingest` does,
by DuckDB on the driver over the first lines; the reading itself is logan/read's SQL: the
format's regex (the exact path of logan.read.compile, which reads every line the split
path reads, the same way), the converters, the derived columns, the classification and
the reject reasons, translated by logan.engines.transpile and run through
logan.engines.spark.SparkConnection (its INSERTs kept as DataFrames). Route templates are
learned as the DuckDB ingest learns them (logan.read.classify.collapse_routes), on the
driver over the distinct routes only, and applied to the rows as `logan export` applies
them.

The lines the regex does not read and `logan ingest` reads further, HAProxy's event lines
and lines a syslog length limit cut (few: a server's messages, a long request now and
then), are read on the driver by logan ingest's own code (logan.read.ingest.read_not_rows)
in a DuckDB store in memory: the cut lines' rows and reject reasons, the events dated by the
requests around them. Bytes that are not UTF-8 are written \\xhh in the JVM, as
logan.read.sources writes them.

What differs from `logan ingest` (docs/spark.md): a .gz is known by its name; the folder
must be new (no record of the files read, no incremental re-read).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from logan import schema
from logan.answer.inputs import ReadOptions
from logan.engines.export import UNDATED
from logan.engines.spark import SparkConnection, table_path
from logan.errors import LoganError
from logan.read import events, rows
from logan.read.classify import Rules, classified_sql, collapse_routes, key_columns, load_rules
from logan.read.compile import CompiledFormat, compile_format
from logan.read.dialects import get_dialect
from logan.read.events import NEAR_LINES
from logan.read.ingest import ingest, read_not_rows
from logan.read.sources import expand
from logan.store import open_store, stored_columns

if TYPE_CHECKING:
    import duckdb
    from pyspark.sql import Column, DataFrame, SparkSession

# Lines the driver reads to choose the format and the profile (logan ingest reads a batch).
SAMPLE_LINES = 2000
_SPARK_TYPES = {
    "VARCHAR": "string", "TIMESTAMP": "timestamp_ntz", "BIGINT": "bigint", "INTEGER": "int",
    "SMALLINT": "smallint", "DOUBLE": "double", "MAP(VARCHAR, VARCHAR)": "map<string,string>",
}  # fmt: skip


@dataclass
class SparkSourceSummary:
    """One file read by Spark: what `ingests` says of it."""

    label: str
    format: str
    lines: int = 0
    rows: int = 0
    rejects: int = 0
    events: int = 0


@dataclass
class SparkIngestSummary:
    sources: list[SparkSourceSummary] = field(default_factory=list)
    profile: str | None = None
    seconds: float = 0.0


@dataclass
class _Read:
    """What one source gave, as DataFrames."""

    requests: DataFrame
    rejects: DataFrame
    events: DataFrame | None = None


def spark_ingest(
    session: SparkSession,
    paths: Sequence[str],
    to: str | Path,
    read: ReadOptions | None = None,
) -> SparkIngestSummary:
    """Parse `paths` on Spark into the Parquet folder `to` (a new one), with the options of
    `logan ingest` (format, dialect, tz, profile, rules, trusted proxies)."""
    read = read or ReadOptions()
    started = time.perf_counter()
    _refuse_written(session, to)
    bound = load_rules(read.rules) if read.rules is not None else Rules()  # type: ignore[arg-type]
    summary, reads, ingests = SparkIngestSummary(), [], []
    for ingest_id, src in enumerate(_sources(paths), start=1):
        at = datetime.now(UTC).replace(tzinfo=None)
        con = SparkConnection(session, None)
        lines = numbered_lines(session, src[1])
        cf, chosen = choose(lines, read)
        summary.profile = summary.profile or chosen
        got = _read_source(con, lines, cf, read.tz, chosen, bound, read.trusted_proxies, ingest_id, src[0])
        n_events = 0 if got.events is None else got.events.count()
        one = SparkSourceSummary(
            src[0], cf.label, lines.count(), got.requests.count(), got.rejects.count(), n_events
        )
        if one.rows + one.rejects + one.events != one.lines:  # as logan ingest checks each batch
            raise RuntimeError(f"{one.label}: {one.lines} lines gave {one.rows} rows, {one.rejects} rejects"
                               f" and {one.events} events")  # fmt: skip
        summary.sources.append(one)
        reads.append(got)
        ingests.append((ingest_id, one, cf, at, time.perf_counter() - started))
    _write(session, to, reads, ingests, summary.profile)
    summary.seconds = time.perf_counter() - started
    return summary


def _refuse_written(session: SparkSession, to: str | Path) -> None:
    """A folder already holding tables is refused before anything is read: a Spark ingest
    writes a new folder each time (it keeps no record of the files read, so a file read
    into the same folder twice would count twice). Local paths and cluster URLs alike,
    through Hadoop's file system as Spark writes them."""
    jvm = session.sparkContext._jvm
    conf = session.sparkContext._jsc.hadoopConfiguration()
    for table in ("requests", "events", "rejects", "ingests"):
        path = jvm.org.apache.hadoop.fs.Path(table_path(to, table))
        if path.getFileSystem(conf).exists(path):
            raise LoganError(
                f"{table_path(to, table)} exists: logan ingest --engine spark writes a new folder each "
                "time (it keeps no record of the files read there); give --to a folder of its own, "
                "or read into a store (logan ingest --db) and `logan export` it"
            )


def _sources(paths: Sequence[str]) -> list[tuple[str, str]]:
    """(label, path) per file: local paths expanded as logan ingest does (globs, folders);
    a cluster URL as it is."""
    local = [p for p in paths if "://" not in p]
    found = [(s.label, s.path or "") for s in expand(local)] if local else []
    if any(s == "" for _, s in found):
        raise LoganError("logan ingest --engine spark reads files, not stdin")
    return found + [(p, p) for p in paths if "://" in p]


def numbered_lines(session: SparkSession, path: str) -> DataFrame:
    """(line_no, line) of a text file, numbered from 1 in the JVM: a partition's lines are
    numbered from the sum of the counts of the partitions before it."""
    from pyspark.sql import functions as F

    text = session.read.option("lineSep", "\n").text(path).select(_as_utf8(F.col("value")).alias("value"))
    # as logan ingest reads them: "\r\n" ends a line too, a "\r" inside one is kept
    crlf = F.col("value").endswith("\r")
    line = F.when(crlf, F.expr("substring(value, 1, length(value) - 1)")).otherwise(F.col("value"))
    ided = text.select(line.alias("line"), F.monotonically_increasing_id().alias("__id"))
    ided = ided.select("line", (F.col("__id") / F.lit(1 << 33)).cast("bigint").alias("__part"),
                       F.col("__id").bitwiseAND(F.lit((1 << 33) - 1)).alias("__at"))  # fmt: skip
    counts = sorted(ided.groupBy("__part").count().collect())
    offsets, total = [], 0
    for part, n in counts:
        offsets.append((part, total))
        total += n
    starts = session.createDataFrame(offsets or [(0, 0)], "__part bigint, __start bigint")
    numbered = ided.join(F.broadcast(starts), "__part")
    return numbered.select((F.col("__start") + F.col("__at") + 1).alias("line_no"), "line").cache()


# A character of UTF-8 as its bytes read one a character (ISO-8859-1), RFC 3629's table (no
# overlong form, no surrogate, nothing past U+10FFFF: what Python's decoder takes), or a run
# of ASCII; any other byte of 0x80 or more is a piece alone.
_UTF8_PIECE = (
    r"[\x00-\x7f]+|[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}"
    r"|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}"
    r"|\xf4[\x80-\x8f][\x80-\xbf]{2}|[\x80-\xff]"
)


def _as_utf8(value: Column) -> Column:
    """A line of the text source (its bytes as they are) as `logan ingest` reads it
    (logan.read.sources): bytes that are not UTF-8 written \\xhh, each, the rest as it is.
    Only lines that are not valid UTF-8 are taken apart, in the JVM."""
    from pyspark.sql import functions as F

    def piece(p: Column) -> Column:
        raw = F.encode(p, "ISO-8859-1")
        bad = F.concat(F.lit("\\x"), F.lower(F.hex(raw)))
        return F.when(p.rlike(r"^[\x80-\xff]$"), bad).otherwise(F.decode(raw, "UTF-8"))

    pieces = F.regexp_extract_all(F.decode(value.cast("binary"), "ISO-8859-1"), F.lit(_UTF8_PIECE), F.lit(0))
    return F.when(F.is_valid_utf8(value), value).otherwise(F.array_join(F.transform(pieces, piece), ""))


def choose(lines: DataFrame, read: ReadOptions) -> tuple[CompiledFormat, str]:
    """The format and profile `logan ingest` would choose, from the first lines: DuckDB on
    the driver reads them into a store in memory and says what it chose."""
    first = [r.line for r in lines.where(f"line_no <= {SAMPLE_LINES}").orderBy("line_no").collect()]
    with tempfile.NamedTemporaryFile("w", suffix=".log", encoding="utf-8") as sample:
        sample.write("".join(f"{line}\n" for line in first))
        sample.flush()
        said = ingest(
            [sample.name], open_store(None), format=read.format, dialect=read.dialect, tz=read.tz,
            profile=read.profile, rules=read.rules, trusted_proxies=read.trusted_proxies,
        )  # fmt: skip
        name, fmt, label = said.store.con.execute(
            "SELECT dialect, format, format_label FROM files"
        ).fetchall()[0]
    return compile_format(get_dialect(name), fmt, label), said.profile or read.profile


def _read_source(
    con: SparkConnection,
    lines: DataFrame,
    cf: CompiledFormat,
    tz: str,
    profile: str,
    bound: Rules,
    trusted: Sequence[str],
    ingest_id: int,
    label: str,
) -> _Read:
    from pyspark.sql import functions as F

    lines.createOrReplaceTempView("__lines")
    params = {"ingest_id": ingest_id, "source": label, "dialect": cf.dialect.name, "format": cf.label}
    classification = _classification(profile, bound, trusted)
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE __typed AS {rows.typed_sql(cf, cf.exact_raw_sql('__lines'), tz, True)}"
    )
    con.execute(rows.insert_from_typed_sql(cf, "__typed", classification), params)
    not_rows = (
        f"SELECT line_no, line, __reason, {events.matches_sql(cf)} AS __event, "
        f"{_on_the_driver_sql(cf)} AS __driver FROM __typed WHERE NOT __ok"
    )
    con.execute(f"CREATE OR REPLACE TEMP TABLE __not_rows AS {not_rows}")
    rejects = con.execute(
        "SELECT $source AS source, line_no, line AS raw, __reason AS reason FROM __not_rows "
        "WHERE NOT __driver",
        {"source": label},
    ).frame
    requests = con.inserted.pop(schema.REQUESTS_TABLE)[0]
    rest = _read_rest(con, requests, cf, tz, classification, params)
    requests = _canonical(requests, schema.REQUESTS)
    if rest is not None:
        requests = requests.unionByName(rest.requests)
        rejects = rejects.unionByName(rest.rejects)
    for column in schema.FROM_INGESTS:  # the store reads them from `ingests`; the folder has them per row
        requests = requests.withColumn(column, F.lit(params[column]))
    return _Read(requests.cache(), rejects.cache(), None if rest is None else rest.events)


def _on_the_driver_sql(cf: CompiledFormat) -> str:
    """The lines the regex did not read that `logan ingest` reads further
    (ingest.read_not_rows): the dialect's event lines, and when the format may be cut by a
    syslog limit (CompiledFormat.cut_short), the lines that do not end its last quote."""
    if cf.cut_short() is None:
        return events.matches_sql(cf)
    unclosed = "__reason = 'does not match format' AND NOT ends_with(line, '\"')"
    return f"({events.matches_sql(cf)} OR ({unclosed}))"


def _read_rest(
    con: SparkConnection,
    requests: DataFrame,
    cf: CompiledFormat,
    tz: str,
    classification: rows.Classifier,
    params: dict,
) -> _Read | None:
    """The event lines and the cut lines (few: a server's messages, a long request now and
    then), read on the driver by `logan ingest`'s own code (ingest.read_not_rows) in a store
    in memory: the cut lines' rows and reasons, the events dated by the requests around them
    (their line numbers and start times, fetched from Spark). None when there are none."""
    from pyspark.sql import functions as F

    lines = con.execute("SELECT line_no, line, __reason, __event FROM __not_rows WHERE __driver").frame
    taken = lines.collect()
    if not taken:
        return None
    near = lines.where("__event").select(
        F.explode(F.sequence(F.col("line_no") - NEAR_LINES, F.col("line_no") + NEAR_LINES)).alias("line_no")
    )
    refs = requests.join(F.broadcast(near.distinct()), "line_no").select("line_no", "ts_start").collect()
    session = requests.sparkSession
    with open_store(None) as store:
        duck = store.con
        store.ensure_columns(rows.stored_columns(cf, classification is not None))
        _table(duck, "__refs", ["line_no BIGINT", "ts_start TIMESTAMP"], refs)
        duck.execute(
            f"INSERT INTO {schema.REQUESTS_TABLE} (ingest_id, line_no, ts_start) "
            "SELECT $ingest_id, line_no, ts_start FROM __refs",
            {"ingest_id": params["ingest_id"]},
        )
        _table(
            duck,
            "__not_rows",
            ["line_no BIGINT", "line VARCHAR", "__reason VARCHAR", "__event BOOLEAN"],
            taken,
        )
        read_not_rows(duck, cf, tz, classification, params)
        stored = [c for c in stored_columns(duck) if c in schema.REQUEST_TYPES]
        cut_rows = duck.execute(  # the rows read_not_rows added: not those of Spark's requests
            f"SELECT {', '.join(stored)} FROM {schema.REQUESTS_TABLE} "
            "WHERE line_no NOT IN (SELECT line_no FROM __refs)"
        ).fetchall()
        said = duck.execute(
            "SELECT $source, line_no, line, __reason FROM __not_rows WHERE NOT __event",
            {"source": params["source"]},
        ).fetchall()
        found = duck.execute(f"SELECT {', '.join(n for n, _, _ in schema.EVENTS)} FROM events").fetchall()
    typed = [(n, schema.REQUEST_TYPES[n], "") for n in stored]
    return _Read(
        _canonical(session.createDataFrame(cut_rows, _ddl(typed)), schema.REQUESTS),
        session.createDataFrame(said, _ddl(schema.REJECTS)),
        session.createDataFrame(found, _ddl(schema.EVENTS)) if found else None,
    )


def _table(con: duckdb.DuckDBPyConnection, name: str, columns: list[str], values: list) -> None:
    """A temp table of DuckDB holding `values` (rows collected from Spark)."""
    con.execute(f"CREATE TEMP TABLE {name} ({', '.join(columns)})")
    if values:
        marks = ", ".join("?" for _ in columns)
        con.executemany(f"INSERT INTO {name} VALUES ({marks})", [tuple(v) for v in values])


def _ddl(columns: Sequence[tuple[str, str, str]]) -> str:
    """A logan/schema.py column list as a Spark schema string, maps included."""
    return ", ".join(f"{name} {_SPARK_TYPES.get(typ, typ.lower())}" for name, typ, _ in columns)


def _classification(profile: str, bound: Rules, trusted: Sequence[str]) -> rows.Classifier:
    if profile == "none":
        return None
    return rows.Classification(
        lambda rel, keyed=None: classified_sql(rel, profile, bound, trusted, None),
        tuple(key_columns(profile, bound)),
    )


def _write(
    session: SparkSession, to: str | Path, reads: list[_Read], ingests: list, profile: str | None
) -> None:
    """The layout of `logan export`: requests and events by day (no events folder when
    there are none: a folder without one has none), rejects and ingests whole."""
    from pyspark.sql import functions as F

    requests = _union([_canonical(r.requests, schema.REQUESTS) for r in reads])
    if profile in ("puppet", "generic"):
        requests = _with_templates(session, requests)
    day = F.coalesce(F.date_format("ts_start", "yyyy-MM-dd"), F.lit(UNDATED))
    requests.withColumn("day", day).write.partitionBy("day").parquet(table_path(to, "requests"))
    found = [r.events for r in reads if r.events is not None]
    if found:
        by_day = F.coalesce(F.date_format("ts", "yyyy-MM-dd"), F.lit(UNDATED))
        _union(found).withColumn("day", by_day).write.partitionBy("day").parquet(table_path(to, "events"))
    _union([_canonical(r.rejects, schema.REJECTS) for r in reads]).coalesce(1).write.parquet(
        table_path(to, "rejects")
    )
    session.createDataFrame(
        [(i, s.label, cf.dialect.name, cf.label, 1, s.lines, s.rows, s.rejects, s.events, None, at, secs)
         for i, s, cf, at, secs in ingests],
        _ddl(schema.INGESTS),
    ).coalesce(1).write.parquet(table_path(to, "ingests"))  # fmt: skip


def _canonical(frame: DataFrame, columns: Sequence[tuple[str, str, str]]) -> DataFrame:
    """`frame` with every column of a schema table, in its order and type (NULL where the
    format has none)."""
    from pyspark.sql import functions as F

    have = set(frame.columns)
    return frame.select([
        (F.col(name) if name in have else F.lit(None)).cast(_SPARK_TYPES.get(typ, typ.lower())).alias(name)
        for name, typ, _ in columns
    ])  # fmt: skip


def _union(frames: list[DataFrame]) -> DataFrame:
    out = frames[0]
    for more in frames[1:]:
        out = out.unionByName(more)
    return out


def _with_templates(session: SparkSession, requests: DataFrame) -> DataFrame:
    """Each route as its template (`/tags/{name}`), learned by collapse_routes over the
    distinct routes (few: collected on the driver)."""
    import pandas as pd
    from pyspark.sql import functions as F

    routes = [r.route for r in requests.select("route").where("route IS NOT NULL").distinct().collect()]
    if not routes:
        return requests
    with open_store(None) as store:
        store.append(pd.DataFrame({"route": routes, "source": "routes", "line_no": range(len(routes))}))
        collapse_routes(store.con)
        learned = store.con.execute("SELECT route, template FROM routes WHERE template <> route").fetchall()
    if not learned:
        return requests
    templates = session.createDataFrame(learned, "route string, __template string")
    joined = requests.join(F.broadcast(templates), "route", "left")
    return joined.withColumn("route", F.coalesce("__template", "route")).select(requests.columns)
