"""A logan store: one DuckDB file (or memory) holding requests, rejects, events, ingests."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd

from logan import schema
from logan.errors import LoganError


class Store:
    """An open store. `con` is a plain DuckDB connection: query it as you like."""

    def __init__(self, path: str | Path | None = None, read_only: bool = False):
        self.path = str(path) if path else ":memory:"
        try:
            self.con = duckdb.connect(self.path, read_only=read_only)
        except duckdb.Error as exc:
            raise LoganError(f"cannot open store {self.path}: {exc}") from exc
        # Timestamps are stored as UTC; TIMESTAMPTZ casts must happen in UTC.
        self.con.execute("SET TimeZone = 'UTC'")
        # Loads need no particular row order: 10-15% faster.
        self.con.execute("SET preserve_insertion_order = false")
        if not read_only:
            self._ensure_schema()
        self._check_version()

    def _ensure_schema(self) -> None:
        tables = {r[0] for r in self.con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if tables and "logan_meta" not in tables:
            raise LoganError(f"{self.path} is a DuckDB file but not a logan store: not touching it")
        self.con.execute("CREATE TABLE IF NOT EXISTS logan_meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
        for name in schema.TABLES:
            self.con.execute(schema.create_table_sql(name))
        self.con.execute(
            "INSERT INTO logan_meta VALUES ('schema_version', ?) ON CONFLICT DO NOTHING",
            [str(schema.SCHEMA_VERSION)],
        )

    def _check_version(self) -> None:
        try:
            row = self.con.execute("SELECT value FROM logan_meta WHERE key = 'schema_version'").fetchall()
            row = row[0] if row else None
        except duckdb.CatalogException as exc:
            raise LoganError(f"{self.path} is not a logan store (no logan_meta table)") from exc
        if row is None or int(row[0]) != schema.SCHEMA_VERSION:
            found = row[0] if row else "none"
            raise LoganError(
                f"{self.path} has schema version {found}; this logan reads {schema.SCHEMA_VERSION}"
            )

    def sql(self, query: str, params: list | dict | None = None) -> pd.DataFrame:
        """Run a query; the answer as a DataFrame."""
        return self.con.execute(query, params).df()

    def stats(self, **kwargs):  # noqa: ANN003, ANN201
        """Time spent by dimension: see logan.stats.stats for the options."""
        from logan.stats import stats

        return stats(self.con, **kwargs)

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_store(path: str | Path | None = None, read_only: bool = False) -> Store:
    """Open (creating when needed) the store at `path`; None for an in-memory store."""
    return Store(path, read_only=read_only)
