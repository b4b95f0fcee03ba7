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

What differs from `logan ingest` (docs/spark.md): event lines and lines cut by a syslog
length limit stop the ingest (not read on Spark yet); bytes that are not UTF-8 read as
U+FFFD, not `\\xhh`; a .gz is known by its name; the folder must be new (no incremental
re-read).
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
from logan.engines.spark import SparkConnection, spark_ddl, table_path
from logan.engines.transpile import NotPortable
from logan.errors import LoganError
from logan.read import events, rows
from logan.read.classify import Rules, classified_sql, collapse_routes, key_columns, load_rules
from logan.read.compile import CompiledFormat, compile_format
from logan.read.dialects import get_dialect
from logan.read.ingest import ingest
from logan.read.sources import expand
from logan.store import open_store

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

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


@dataclass
class SparkIngestSummary:
    sources: list[SparkSourceSummary] = field(default_factory=list)
    profile: str | None = None
    seconds: float = 0.0


@dataclass
class _Read:
    """What one source gave: its rows and rejects as DataFrames (no events: see
    _refuse_unread)."""

    requests: DataFrame
    rejects: DataFrame


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
    if _has_requests(to):
        raise LoganError(
            f"{table_path(to, 'requests')} exists: logan ingest --engine spark writes a new folder"
        )
    bound = load_rules(read.rules) if read.rules is not None else Rules()  # type: ignore[arg-type]
    summary, reads, ingests = SparkIngestSummary(), [], []
    for ingest_id, src in enumerate(_sources(paths), start=1):
        at = datetime.now(UTC).replace(tzinfo=None)
        con = SparkConnection(session, None)
        lines = numbered_lines(session, src[1])
        cf, chosen = choose(lines, read)
        summary.profile = summary.profile or chosen
        got = _read_source(con, lines, cf, read.tz, chosen, bound, read.trusted_proxies, ingest_id, src[0])
        one = SparkSourceSummary(src[0], cf.label, lines.count(), got.requests.count(), got.rejects.count())
        summary.sources.append(one)
        reads.append(got)
        ingests.append((ingest_id, one, cf, at, time.perf_counter() - started))
    _write(session, to, reads, ingests, summary.profile)
    summary.seconds = time.perf_counter() - started
    return summary


def _has_requests(to: str | Path) -> bool:
    path = table_path(to, "requests")
    return "://" not in path and Path(path).exists()


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

    text = session.read.option("lineSep", "\n").text(path)
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
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE __typed AS {rows.typed_sql(cf, cf.exact_raw_sql('__lines'), tz, True)}"
    )
    con.execute(rows.insert_from_typed_sql(cf, "__typed", _classification(profile, bound, trusted)), params)
    not_rows = (
        f"SELECT line_no, line, __reason, {events.matches_sql(cf)} AS __event FROM __typed WHERE NOT __ok"
    )
    con.execute(f"CREATE OR REPLACE TEMP TABLE __not_rows AS {not_rows}")
    _refuse_unread(con, cf, label)
    rejects = con.execute(
        "SELECT $source AS source, line_no, line AS raw, __reason AS reason FROM __not_rows "
        "WHERE NOT __event",
        {"source": label},
    ).frame.cache()
    requests = con.inserted.pop(schema.REQUESTS_TABLE)[0]
    for column in schema.FROM_INGESTS:  # the store reads them from `ingests`; the folder has them per row
        requests = requests.withColumn(column, F.lit(params[column]))
    return _Read(requests, rejects)


def _refuse_unread(con: SparkConnection, cf: CompiledFormat, label: str) -> None:
    """What logan ingest reads beyond the format's regex, and Spark not yet, stops the
    ingest rather than become rejects: the dialect's event lines (events.insert_events
    dates a syslog line by the requests around it: a window over lines, UNION BY NAME, the
    clock's year) and lines a syslog length limit cut inside their last field (read by
    CompiledFormat.cut_short)."""
    if con.execute("SELECT line_no FROM __not_rows WHERE __event LIMIT 1").fetchone():
        raise NotPortable(
            f"{label}: {cf.dialect.name}'s event lines (servers up and down) are read by DuckDB only"
        )
    unclosed = "NOT __event AND __reason = 'does not match format' AND NOT ends_with(line, '\"')"
    if (
        cf.cut_short() is not None
        and con.execute(f"SELECT line_no FROM __not_rows WHERE {unclosed} LIMIT 1").fetchone()
    ):
        raise NotPortable(f"{label}: lines cut short by a syslog length limit are read by DuckDB only")


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
    """The layout of `logan export`: requests by day, rejects and ingests whole (no events
    folder: a folder without one has none)."""
    from pyspark.sql import functions as F

    requests = _union([_canonical(r.requests, schema.REQUESTS) for r in reads])
    if profile in ("puppet", "generic"):
        requests = _with_templates(session, requests)
    day = F.coalesce(F.date_format("ts_start", "yyyy-MM-dd"), F.lit(UNDATED))
    requests.withColumn("day", day).write.partitionBy("day").parquet(table_path(to, "requests"))
    _union([_canonical(r.rejects, schema.REJECTS) for r in reads]).coalesce(1).write.parquet(
        table_path(to, "rejects")
    )
    session.createDataFrame(
        [(i, s.label, cf.dialect.name, cf.label, 1, s.lines, s.rows, s.rejects, 0, None, at, secs)
         for i, s, cf, at, secs in ingests],
        spark_ddl(schema.INGESTS),
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
