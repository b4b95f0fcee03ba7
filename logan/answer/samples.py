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
from logan.answer.views import dimension_columns, query_sql, run_arrow

if TYPE_CHECKING:
    import pandas as pd


def samples(
    con: duckdb.DuckDBPyConnection, by: Sequence[str] | str = ("indirector",), start: bool = True, **filters
) -> pd.DataFrame:
    """One row per timed request that `filters` keep: the `by` columns, ts_start (unless
    `start` is False: a test of durations needs none) and duration_us (int64 µs)."""
    where, params = filter_sql(filters)
    sql = query_sql("samples", by)
    if not start:  # the names are the whitelisted group columns
        sql = f"SELECT {', '.join(dimension_columns(by))}, duration_us FROM ({sql}) AS s"
    return run_arrow(con, sql, where, params).to_pandas()  # text as Arrow strings: no object per request
