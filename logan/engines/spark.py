"""The rows of a Parquet folder (`logan export`, `logan ingest --engine spark`) on Spark,
behind the calls logan.answer makes of a DuckDB connection: `execute(sql, params)`, `sql`,
`register`/`unregister` of a DataFrame, and a cursor's `description`, `fetchall()`,
`fetchone()`, `fetchnumpy()`, `df()` and Arrow table.

So `logan stats|timeline|incidents|compare|cache --engine spark` run the very functions
their `--db` forms run (the same views, filters, ranking and cuts); only the SQL text is
translated (logan.engines.transpile) on its way to Spark. The folder's `requests` becomes
the views `requests` and `requests_data` (the stored table's name), with an empty `routes`
(the export wrote the templates into `route` already), its `events` (empty when it has
none) and a `duckdb_columns` catalog of the requests' columns.

Arrays come back typed as DuckDB gives them: timestamps as microseconds (UTC, no zone),
integers as int64 (pandas' nullable Int64 where a column has NULLs, numpy masked arrays in
fetchnumpy), so the numpy code of an answer (in flight, the cache replay) runs unchanged.
A temporary table an answer makes (`CREATE OR REPLACE TEMP TABLE x AS ...`) becomes a
cached temporary view; `DROP TABLE IF EXISTS x` drops it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import sqlglot
from sqlglot import exp

from logan import schema
from logan.engines.session import running_session
from logan.engines.transpile import to_spark
from logan.errors import LoganError

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
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
# logan/schema.py's DuckDB types as Spark DDL (an empty table of a schema's columns).
_SPARK_TYPES = {"VARCHAR": "string", "TIMESTAMP": "timestamp_ntz", "DOUBLE": "double", "BOOLEAN": "boolean"}


def table_path(data: str | Path, table: str) -> str:
    """Where `table` lies under a Parquet folder (local or a cluster's file system URL)."""
    return f"{str(data).rstrip('/')}/{table}"


def _is_local(path: str) -> bool:
    return "://" not in path


def spark_ddl(columns: Sequence[tuple[str, str, str]]) -> str:
    """A logan/schema.py column list as a Spark schema string (`ts timestamp_ntz, ...`)."""
    return ", ".join(f"{name} {_SPARK_TYPES.get(typ, typ.lower())}" for name, typ, _ in columns)


class SparkCursor:
    """An answer of Spark with what logan.answer reads of a DuckDB result."""

    def __init__(self, frame: DataFrame):
        self.frame = frame
        self.description = [(f.name, _duckdb_type(f.dataType.simpleString())) for f in frame.schema.fields]

    def fetchall(self) -> list[tuple]:
        with _said_in_one_line("Spark"):
            return [tuple(row) for row in self.frame.collect()]

    def fetchone(self) -> tuple | None:
        with _said_in_one_line("Spark"):
            rows = self.frame.take(1)
        return tuple(rows[0]) if rows else None

    def to_arrow_table(self) -> pa.Table:
        """The answer as Arrow (timestamps in microseconds, integers as Spark typed them)."""
        with _said_in_one_line("Spark"):
            return self.frame.toArrow()

    arrow = fetch_arrow_table = to_arrow_table

    def df(self) -> pd.DataFrame:
        """As DuckDB's df(): an integer column with NULLs is pandas' nullable integer."""
        table = self.to_arrow_table()
        frame = table.to_pandas()
        for name, column in zip(table.column_names, table.columns, strict=True):
            if column.null_count and _is_integer(column.type):
                frame[name] = column.to_pandas(types_mapper=_nullable_integer)
        return frame

    def fetchnumpy(self) -> dict[str, np.ndarray]:
        """As DuckDB's fetchnumpy(): a column with NULLs is a numpy masked array."""
        table = self.to_arrow_table()
        return {name: _numpy(column) for name, column in zip(table.column_names, table.columns, strict=True)}


def _is_integer(arrow_type: pa.DataType) -> bool:
    import pyarrow as pa

    return pa.types.is_integer(arrow_type)


def _nullable_integer(arrow_type: pa.DataType) -> object:
    # int64 -> pandas' Int64, int16 -> Int16, ...: what DuckDB's df() gives a column with NULLs
    import pandas as pd

    return pd.api.types.pandas_dtype(str(arrow_type).capitalize()) if _is_integer(arrow_type) else None


def _numpy(column: pa.ChunkedArray) -> np.ndarray:
    if not column.null_count:
        return column.to_numpy()
    mask = column.is_null().to_numpy(zero_copy_only=False)
    filled = column.fill_null(_zero(column.type)).to_numpy()
    return np.ma.MaskedArray(filled, mask=mask)


def _zero(arrow_type: pa.DataType) -> object:
    import pyarrow as pa

    if pa.types.is_timestamp(arrow_type):
        return pa.scalar(0, arrow_type)
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return ""
    return False if pa.types.is_boolean(arrow_type) else 0


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


def spark_param(value: object) -> object:
    """A bound value as Spark's sql(args=...) takes it: numpy and pandas scalars as the
    Python value they hold (a pandas Timestamp as a naive datetime: TIMESTAMP_NTZ)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, dt.datetime) and hasattr(value, "to_pydatetime"):
        value = value.to_pydatetime()
    if isinstance(value, list | tuple):
        return [spark_param(v) for v in value]
    return value


class SparkConnection:
    """The `requests` of a Parquet folder, queried in DuckDB's SQL on a SparkSession."""

    def __init__(self, session: SparkSession, data: str | Path | None):
        self.session = session
        self._cached: dict[str, DataFrame] = {}
        self.inserted: dict[str, list[DataFrame]] = {}  # INSERT INTO t: the rows, per table
        if data is not None:
            self._open(data)

    def _open(self, data: str | Path) -> None:
        session = self.session
        path = table_path(data, "requests")
        if _is_local(path) and not Path(path).is_dir():
            raise LoganError(f"no requests under {data}: write them with logan export --db STORE --to {data}")
        rows = self._read(path)
        rows.createOrReplaceTempView("requests_data")
        rows.createOrReplaceTempView("requests")
        self._empty("routes", schema.ROUTES)  # the export wrote the templates into `route`
        self._events(table_path(data, "events"))
        catalog = [(schema.REQUESTS_TABLE, "main", c) for c in rows.columns]
        session.createDataFrame(catalog, "table_name string, schema_name string, column_name string") \
            .createOrReplaceTempView("duckdb_columns")  # fmt: skip

    def _read(self, path: str) -> DataFrame:
        with _said_in_one_line(f"cannot read {path} on Spark"):
            return self.session.read.parquet(path)

    def _empty(self, name: str, columns: Sequence[tuple[str, str, str]]) -> None:
        self.session.createDataFrame([], spark_ddl(columns)).createOrReplaceTempView(name)

    def _events(self, path: str) -> None:
        # a store without HAProxy's messages exports no events folder
        if _is_local(path) and not Path(path).is_dir():
            self._empty("events", schema.EVENTS)
        else:
            self._read(path).createOrReplaceTempView("events")

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> SparkCursor:
        """Run DuckDB SQL (`?` parameters) on Spark; what Spark refuses is a LoganError."""
        statement = sqlglot.parse_one(sql, read="duckdb")
        if isinstance(statement, exp.Create) and statement.args.get("kind") == "TABLE":
            return self._create_temp(statement, params)
        if isinstance(statement, exp.Drop):
            return self._drop_temp(statement.find(exp.Table).name)
        if isinstance(statement, exp.Insert):
            return self._insert(statement, params)
        return self._query(sql, params)

    def sql(self, sql: str, params: Sequence[Any] | None = None) -> SparkCursor:
        """DuckDB's con.sql(): a query whose answer is fetched later (to_arrow_table())."""
        return self._query(sql, params)

    def _query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None) -> SparkCursor:
        if isinstance(params, Mapping):  # $name parameters
            args: list | dict | None = {k: spark_param(v) for k, v in params.items()}
        else:
            args = [spark_param(p) for p in params] if params else None
        with _said_in_one_line("Spark"):
            return SparkCursor(self.session.sql(to_spark(sql), args=args))

    def _create_temp(self, statement: exp.Create, params: Sequence[Any] | None) -> SparkCursor:
        """CREATE [OR REPLACE] TEMP TABLE name AS query: the query's rows, computed once
        (cached) under that name."""
        if not statement.args.get("properties") or not statement.args["properties"].find(
            exp.TemporaryProperty
        ):
            raise LoganError("Spark: logan writes no table into a Parquet folder, only temporary ones")
        name = statement.this.name
        cursor = self._query(statement.expression.sql(dialect="duckdb"), params)
        self._drop_temp(name)
        with _said_in_one_line("Spark"):
            self._cached[name] = cursor.frame.cache()
            self._cached[name].createOrReplaceTempView(name)
        return cursor

    def _insert(self, statement: exp.Insert, params: Sequence[Any] | Mapping[str, Any] | None) -> SparkCursor:
        """INSERT INTO t (columns) SELECT ...: the rows kept (cached) in `inserted[t]` and
        readable as the view t (what a later statement of the same ingest reads); the
        cursor holds their count, as DuckDB's does."""
        table = statement.find(exp.Table)
        assert table is not None
        name = table.name
        columns = (
            [c.name for c in statement.this.expressions] if isinstance(statement.this, exp.Schema) else []
        )
        frame = self._query(statement.expression.sql(dialect="duckdb"), params).frame
        if columns:
            frame = frame.toDF(*columns)
        with _said_in_one_line("Spark"):
            frame = frame.cache()
            self.inserted.setdefault(name, []).append(frame)
            every = self.inserted[name][0]
            for more in self.inserted[name][1:]:
                every = every.unionByName(more, allowMissingColumns=True)
            every.createOrReplaceTempView(name)
            return SparkCursor(self.session.createDataFrame([(frame.count(),)], "count bigint"))

    def _drop_temp(self, name: str) -> SparkCursor:
        frame = self._cached.pop(name, None)
        if frame is not None:
            frame.unpersist()
        self.session.catalog.dropTempView(name)
        return SparkCursor(self.session.createDataFrame([], "dropped boolean"))

    def register(self, name: str, frame: pd.DataFrame) -> None:
        """A pandas DataFrame as a temporary view `name` (DuckDB's register)."""
        self.session.createDataFrame(frame).createOrReplaceTempView(name)

    def unregister(self, name: str) -> None:
        self.session.catalog.dropTempView(name)

    def close(self) -> None:
        """Drops the tables cached here; the session outlives the connection."""
        for name in list(self._cached):
            self._drop_temp(name)


@dataclass
class SparkStore:
    """What an answer takes of a store: its connection (here, to Spark)."""

    con: SparkConnection


@contextmanager
def spark_store(data: str | Path, master: str | None = None) -> Iterator[SparkStore]:
    """The Parquet folder `data` on a Spark session (see logan.engines.session.running_session)."""
    with running_session(master) as session:
        store = SparkStore(SparkConnection(session, data))
        yield store
        store.con.close()
