"""logan: where does the time go? Web-server access logs into DuckDB.

    import logan
    store = logan.open("puppet.duckdb")                 # a Store; store.con is DuckDB
    logan.ingest(["/var/log/httpd/puppet.log*"], store, format="combined_D")
    store.stats(by=["indirector"], sort="p99")          # a DataFrame
    store.sql("SELECT count(*), sum(duration_us) FROM requests")
    logan.timeline(store, bucket="1m")                  # per-bucket rate, percentiles, in flight
    logan.incidents(store)                              # when it went wrong, and why

Every CLI command is one of these functions; the CLI only prints what they return. The
parts below: logan.read (lines -> rows), logan.answer (rows -> DataFrames), logan.show
(DataFrames -> terminal, files), logan.cli (the `logan` command).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from logan import store as _store
from logan.answer import incidents as _incidents
from logan.answer import stats  # the module, as notebooks use it: logan.stats.headline(con)
from logan.answer import timeline as _timeline
from logan.answer.cache import cache
from logan.answer.compare import compare
from logan.errors import FormatError, LoganError
from logan.read.ingest import IngestSummary, ingest

if TYPE_CHECKING:
    import pandas as pd

__version__ = "0.1.0"


class Store(_store.Store):
    """An open store with the answers as methods; `con` is a plain DuckDB connection."""

    def stats(self, **kwargs: Any) -> pd.DataFrame:
        """Time spent by dimension: see logan.stats.stats for the options."""
        return stats.stats(self.con, **kwargs)

    def cache(self, **kwargs: Any) -> Any:
        """What a cache would answer and save: see logan.cache (a CacheAnswer of DataFrames)."""
        return cache(self.con, **kwargs)


def timeline(store: _store.Store, **kwargs: Any) -> pd.DataFrame:
    """Per time bucket: rate, percentiles of every timer, statuses, bytes, cache hits, queues
    and requests in flight; see logan.answer.timeline.timeline for the options (by, bucket,
    since, until, env, method, status, path_glob)."""
    return _timeline.timeline(store.con, **kwargs)


def incidents(store: _store.Store, **kwargs: Any) -> pd.DataFrame:
    """The incidents and their causes; see logan.answer.incidents.incidents (bucket and the
    filters of `timeline`)."""
    return _incidents.incidents(store.con, **kwargs)


def open(path: str | Path | None = None, read_only: bool = False) -> Store:  # noqa: A001
    """Open (creating when needed) the store at `path`; None for an in-memory store."""
    return Store(path, read_only=read_only)


open_store = open


def sql(db: str, query: str, params: list | dict | None = None) -> pd.DataFrame:
    """Run one query against the store file `db`; the answer as a pandas DataFrame."""
    with open(db, read_only=True) as store:
        return store.sql(query, params)


__all__ = [
    "FormatError",
    "IngestSummary",
    "LoganError",
    "Store",
    "compare",
    "incidents",
    "cache",
    "ingest",
    "open",
    "open_store",
    "sql",
    "stats",
    "timeline",
]
