"""The timed requests themselves, per group: what a statistical test compares and a plot
bins, where the other answers only need a summary (queries/samples.sql).

Returned as a DataFrame of the group columns, `ts_start` and `duration_us`, read through
Arrow (no Python object per request).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import duckdb

from logan.answer.filters import filter_sql
from logan.answer.views import query_sql, run_arrow

if TYPE_CHECKING:
    import pandas as pd


def samples(
    con: duckdb.DuckDBPyConnection, by: Sequence[str] | str = ("indirector",), **filters
) -> pd.DataFrame:
    """One row per timed request that `filters` keep: the `by` columns, ts_start,
    duration_us (int64 microseconds)."""
    where, params = filter_sql(filters)
    table = run_arrow(con, query_sql("samples", by), where, params)
    return table.to_pandas()  # text as Arrow-backed strings: no Python object per request
