"""The one SparkSession builder: `--master` passed through (local[*], spark://, yarn,
k8s://), times in UTC, naive datetimes as TIMESTAMP_NTZ (the store's timestamps are UTC
without a zone), and a clear message when pyspark or Java is missing.

Under spark-submit, spark-submit's --master and --conf stand (its JVM is already running:
logan sets no master unless given one) and logan's SQL settings are added to them.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from logan.errors import LoganError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"

# What every logan session needs, whatever the cluster: the same instants as DuckDB's UTC
# store, the Parquet timestamps read as written (no zone), no progress bars on the
# terminal the answer is printed on.
BASE_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.timestampType": "TIMESTAMP_NTZ",
    "spark.sql.parquet.inferTimestampNTZ.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.ansi.enabled": "false",
    # a time that does not read is NULL (a reject), never an error asking for the legacy parser
    "spark.sql.legacy.timeParserPolicy": "CORRECTED",
    # `day=2013-11-05` and `day=undated` alike: the partition is a string, as written
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
}


def spark_available() -> str | None:
    """None when a Spark session can start here, else why not (for messages and skips)."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed: pip install 'logan[spark]'"
    if shutil.which("java") is None:
        return "Spark needs Java: install a JRE (Debian: apt-get install openjdk-17-jre-headless)"
    return None


def spark_session(
    master: str | None = None, conf: Mapping[str, str] | None = None, app: str = "logan"
) -> SparkSession:
    """The active SparkSession, or a new one on `master` (default local[*]) with BASE_CONF
    and `conf` on top."""
    missing = spark_available()
    if missing:
        raise LoganError(missing)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app)
    if master or not _under_spark_submit():
        builder = builder.master(master or DEFAULT_MASTER)
    for key, value in {**BASE_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    # Spark logs a failed query's whole stack; logan says what failed in one line instead
    session.sparkContext.setLogLevel("OFF")
    _quiet_python_loggers()
    for key, value in BASE_CONF.items():  # a session that existed already: ours for the SQL settings
        if key.startswith("spark.sql."):
            session.conf.set(key, value)
    return session


def _under_spark_submit() -> bool:
    # spark-submit starts the JVM first and tells pyspark where to find it
    return "PYSPARK_GATEWAY_PORT" in os.environ


def _quiet_python_loggers() -> None:
    # pyspark 4 also writes each failed query's Java stack as JSON on stderr, from Python
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # pyspark 3.5 logs no such thing
        return
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)


@contextmanager
def running_session(master: str | None = None) -> Iterator[SparkSession]:
    """A Spark session for one command: one made here is stopped afterwards, one that
    existed (spark-submit, a notebook) is not."""
    from pyspark.sql import SparkSession

    had = SparkSession.getActiveSession()
    session = spark_session(master)
    try:
        yield session
    finally:
        if had is None:
            session.stop()
