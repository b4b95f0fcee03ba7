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

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from logan import store as _store
from logan.errors import FormatError, LoganError

if TYPE_CHECKING:
    import pandas as pd

    from logan.answer import stats
    from logan.answer.cache import cache
    from logan.answer.compare import compare
    from logan.read.ingest import IngestSummary, ingest

# Imported when first used (PEP 562), so that `logan ingest` does not load the cache
# simulator, nor `logan timeline` the ingest: name -> (module, attribute; None for the
# module itself, as notebooks use it: logan.stats.headline(con)).
_LAZY = {
    "stats": ("logan.answer.stats", None),
    "cache": ("logan.answer.cache", "cache"),
    "compare": ("logan.answer.compare", "compare"),
    "ingest": ("logan.read.ingest", "ingest"),
    "IngestSummary": ("logan.read.ingest", "IngestSummary"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'logan' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = importlib.import_module(module)
    return value if attribute is None else getattr(value, attribute)


__version__ = "0.1.0"


class Store(_store.Store):
    """An open store with the answers as methods; `con` is a plain DuckDB connection."""

    def stats(self, **kwargs: Any) -> pd.DataFrame:
        """Time spent by dimension: see logan.stats.stats for the options."""
        from logan.answer.stats import stats

        return stats(self.con, **kwargs)

    def cache(self, **kwargs: Any) -> Any:
        """What a cache would answer and save: see logan.cache (a CacheAnswer of DataFrames)."""
        from logan.answer.cache import cache

        return cache(self.con, **kwargs)


def timeline(store: _store.Store, **kwargs: Any) -> pd.DataFrame:
    """Per time bucket: rate, percentiles of every timer, statuses, bytes, cache hits, queues
    and requests in flight; see logan.answer.timeline.timeline for the options (by, bucket,
    since, until, env, method, status, path_glob)."""
    from logan.answer.timeline import timeline

    return timeline(store.con, **kwargs)


def incidents(store: _store.Store, **kwargs: Any) -> pd.DataFrame:
    """The incidents and their causes; see logan.answer.incidents.incidents (bucket and the
    filters of `timeline`)."""
    from logan.answer.incidents import incidents

    return incidents(store.con, **kwargs)


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


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
