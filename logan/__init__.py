"""logan: where does the time go? Web-server access logs into DuckDB.

    import logan
    store = logan.open("puppet.duckdb")                 # a Store; store.con is DuckDB
    logan.ingest(["/var/log/httpd/puppet.log*"], store, format="combined_D")
    store.sql("SELECT count(*), sum(duration_us) FROM requests")   # a DataFrame

Every CLI command is one of these functions; the CLI only prints what they return.
"""

from __future__ import annotations

from logan.errors import FormatError, LoganError
from logan.ingest import IngestSummary, ingest
from logan.store import Store, open_store

__version__ = "0.1.0"

open = open_store  # noqa: A001 - logan.open(db) reads as intended


def sql(db: str, query: str, params: list | dict | None = None):  # noqa: ANN201
    """Run one query against the store file `db`; the answer as a pandas DataFrame."""
    with open_store(db, read_only=True) as store:
        return store.sql(query, params)


__all__ = ["FormatError", "IngestSummary", "LoganError", "Store", "ingest", "open", "open_store", "sql"]
