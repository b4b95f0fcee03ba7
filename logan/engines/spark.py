"""The rows of a Parquet folder (`logan export`, `logan ingest --engine spark`) on Spark,
behind the calls logan.answer makes of a DuckDB connection: `execute(sql, params)` and a
cursor's `description` and `fetchall()`.

So `logan stats --engine spark` runs the very functions `logan stats --db` runs (the same
views, filters, ranking and cuts); only the SQL text is translated (logan.engines.transpile)
on its way to Spark. The folder's `requests` becomes the views `requests` and
`requests_data` (the stored table's name), with an empty `routes` (the export wrote the
templates into `route` already) and a `duckdb_columns` catalog of its columns.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from logan import schema
from logan.engines.session import spark_session
from logan.engines.transpile import to_spark
from logan.errors import LoganError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Spark's type names -> DuckDB's, as logan.answer.views reads a cursor's description.
_TYPES = {
    "double": "DOUBLE",
    "float": "FLOAT",
    "bigint": "BIGINT",
    "int": "INTEGER",
    "smallint": "SMALLINT",
    "tinyint": "TINYINT",
    "string": "VARCHAR",
    "boolean": "BOOLEAN",
    "timestamp_ntz": "TIMESTAMP",
    "timestamp": "TIMESTAMP",
    "date": "DATE",
}


def table_path(data: str | Path, table: str) -> str:
    """Where `table` lies under a Parquet folder (local or a cluster's file system URL)."""
    return f"{str(data).rstrip('/')}/{table}"


def _is_local(path: str) -> bool:
    return "://" not in path


class SparkCursor:
    """An answer of Spark with the two things logan.answer reads of a DuckDB result."""

    def __init__(self, frame: DataFrame):
        self.frame = frame
        self.description = [(f.name, _duckdb_type(f.dataType.simpleString())) for f in frame.schema.fields]

    def fetchall(self) -> list[tuple]:
        with _said_in_one_line("Spark"):
            return [tuple(row) for row in self.frame.collect()]


@contextmanager
def _said_in_one_line(what: str) -> Iterator[None]:
    """A Spark failure (a Java stack of a hundred lines) as a LoganError: its first line."""
    from pyspark.errors import PySparkException

    try:
        yield
    except PySparkException as exc:
        raise LoganError(f"{what}: {str(exc).strip().splitlines()[0]}") from None


def _duckdb_type(spark_type: str) -> str:
    if spark_type.startswith("decimal"):
        return spark_type.upper()
    if spark_type.startswith(("array", "map", "struct")):
        return spark_type.split("<")[0].upper()
    return _TYPES.get(spark_type, spark_type.upper())


class SparkConnection:
    """The `requests` of a Parquet folder, queried in DuckDB's SQL on a SparkSession."""

    def __init__(self, session: SparkSession, data: str | Path):
        self.session = session
        path = table_path(data, "requests")
        if _is_local(path) and not Path(path).is_dir():
            raise LoganError(f"no requests under {data}: write them with logan export --db STORE --to {data}")
        with _said_in_one_line(f"cannot read {path} on Spark"):
            rows = session.read.parquet(path)
        rows.createOrReplaceTempView("requests_data")
        rows.createOrReplaceTempView("requests")
        session.sql("SELECT CAST(NULL AS STRING) AS route, CAST(NULL AS STRING) AS template WHERE false") \
            .createOrReplaceTempView("routes")  # fmt: skip
        catalog = [(schema.REQUESTS_TABLE, "main", c) for c in rows.columns]
        session.createDataFrame(catalog, "table_name string, schema_name string, column_name string") \
            .createOrReplaceTempView("duckdb_columns")  # fmt: skip

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> SparkCursor:
        """Run DuckDB SQL (`?` parameters) on Spark; what Spark refuses is a LoganError."""
        with _said_in_one_line("Spark"):
            return SparkCursor(self.session.sql(to_spark(sql), args=list(params) if params else None))

    def close(self) -> None:
        """Nothing to close: the session outlives the connection."""


@dataclass
class SparkStore:
    """What an answer takes of a store: its connection (here, to Spark)."""

    con: SparkConnection


@contextmanager
def spark_store(data: str | Path, master: str | None = None) -> Iterator[SparkStore]:
    """The Parquet folder `data` on a Spark session (see logan.engines.session); a session
    made here is stopped afterwards, one that existed (spark-submit, a notebook) is not."""
    from pyspark.sql import SparkSession

    had = SparkSession.getActiveSession()
    session = spark_session(master)
    try:
        yield SparkStore(SparkConnection(session, data))
    finally:
        if had is None:
            session.stop()
