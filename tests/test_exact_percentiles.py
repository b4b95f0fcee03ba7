"""Exact percentiles from counts of each time (queries/parts/timer_percentiles.sql): the same
answers as numpy, in memory that does not grow with the requests when their times repeat."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from logan.answer import stats as st
from logan.answer.views import query_sql
from logan.resources import queries_dir
from logan.store import append_requests, open_store

TIMERS = {"": "duration_us", "upstream_": "upstream_us", "ttfb_": "ttfb_us", "queue_": "queue_us"}


def _requests(n: int, seed: int) -> pd.DataFrame:
    """Groups of every size from one request up, an environment that is NULL, times with
    many ties and some with none, and timers missing on some requests."""
    rng = np.random.default_rng(seed)
    env = rng.choice(np.array(["production", "staging", None], dtype=object), n, p=[0.6, 0.3, 0.1])
    env[:3] = ["solo", "pair", "pair"]  # groups of one and two requests
    frame = pd.DataFrame({
        "method": "GET",
        "indirector": rng.choice(["catalog", "node", "report"], n),
        "environment": env,
        "status": rng.choice([200, 500], n, p=[0.97, 0.03]),
        "duration_us": rng.integers(1, 400, n) * 1000,  # milliseconds: ties everywhere
        "upstream_us": rng.integers(1, 10**9, n),  # microseconds: every time its own
        "ttfb_us": rng.integers(0, 5, n) * 1000,
        "queue_us": rng.integers(0, 3, n) * 1000,
    })  # fmt: skip
    for col, share in (("upstream_us", 0.2), ("ttfb_us", 0.5)):
        missing = rng.random(n) < share
        frame[col] = frame[col].astype("Int64").mask(missing)
    frame.loc[frame["environment"] == "solo", "queue_us"] = pd.NA  # a group without a timer
    return frame


@pytest.mark.parametrize("by", [["environment"], ["indirector"], ["environment", "indirector"]])
def test_every_timers_percentiles_per_group_are_numpys(by: list[str]) -> None:
    frame = _requests(20_000, seed=len(by))
    con = open_store(None).con
    append_requests(con, frame)
    got = st.stats_records(con, by, top=None).frame()
    dims = st.dimension_columns(by)
    assert len(got) == frame.groupby(dims, dropna=False).ngroups
    for _, row in got.iterrows():
        key = np.ones(len(frame), bool)
        for d in dims:
            key &= frame[d].isna().to_numpy() if pd.isna(row[d]) else (frame[d] == row[d]).to_numpy()
        for prefix, col in TIMERS.items():
            values = frame.loc[key, col].dropna().to_numpy(dtype=np.float64)
            for q in (50, 90, 95, 99):
                name = f"{prefix}p{q}_us"
                if name not in got.columns or not len(values):
                    assert name not in got.columns or pd.isna(row[name]), (name, row[dims].tolist())
                    continue
                want = np.percentile(values, q)  # linear, numpy's default
                assert row[name] == pytest.approx(want, rel=1e-13, abs=1e-6), (name, row[dims].tolist())
                if want == int(want):  # between two equal times the answer is that time exactly
                    assert row[name] == want


def test_the_headline_and_the_percentiles_view_agree_with_numpy() -> None:
    frame = _requests(5_000, seed=9)
    con = open_store(None).con
    append_requests(con, frame)
    values = frame["duration_us"].to_numpy(dtype=np.float64)
    assert st.summary(con)["p99_us"] == pytest.approx(np.percentile(values, 99), rel=1e-13)
    view = st.view(con, "percentiles").iloc[0]
    for q in (50, 66, 75, 80, 90, 95, 98, 99):
        assert view[f"p{q}_us"] == pytest.approx(np.percentile(values, q), rel=1e-13)
    assert view["p100_us"] == values.max()


def test_stats_answer_where_holding_every_time_runs_out_of_memory(tmp_path: Path) -> None:
    """2 M requests of four timers under a 48 MB DuckDB limit: holding their times (what
    quantile_cont does) runs out of memory; counting them does not."""
    rng = np.random.default_rng(3)
    n = 2_000_000
    store = open_store(tmp_path / "big.duckdb")
    append_requests(store.con, pd.DataFrame({
        "method": "GET",
        "indirector": rng.choice(["catalog", "node", "report"], n),
        "status": 200,
        "duration_us": rng.integers(1, 3000, n) * 1000,
        "upstream_us": rng.integers(1, 2000, n) * 1000,
        "ttfb_us": rng.integers(0, 500, n) * 1000,
        "queue_us": rng.integers(0, 50, n) * 1000,
    }))  # fmt: skip
    store.con.execute("CHECKPOINT")
    store.con.execute("SET memory_limit = '48MB'")
    held = ", ".join(f"quantile_cont({t}, 0.5)" for t in TIMERS.values())
    with pytest.raises(duckdb.OutOfMemoryException):
        store.con.execute(f"SELECT indirector, {held} FROM requests GROUP BY indirector").fetchall()
    got = {r["indirector"]: r for r in st.stats_records(store.con, ["indirector"]).rows}
    assert sum(r["requests"] for r in got.values()) == n
    store.con.execute("RESET memory_limit")
    held = "quantile_cont(duration_us, 0.99), quantile_cont(queue_us, 0.5)"
    want = store.con.execute(f"SELECT indirector, {held} FROM requests GROUP BY 1").fetchall()
    for indirector, p99, queue_p50 in want:
        assert got[indirector]["p99_us"] == pytest.approx(p99, rel=1e-13)
        assert got[indirector]["queue_p50_us"] == pytest.approx(queue_p50, rel=1e-13)
    store.close()


def test_the_part_is_spliced_with_only_whitelisted_names() -> None:
    sql = query_sql("by_dimension", ["environment", "route"])
    assert "{" not in re.sub(r"--[^\n]*", "", sql)  # every slot filled
    assert "PARTITION BY gid, timer" in sql  # the groups numbered, joined on their columns
    assert "SELECT DISTINCT environment, method, route, 1 AS one" in sql
    assert "s.route IS NOT DISTINCT FROM k.route" in sql
    assert "p.environment IS NOT DISTINCT FROM g.environment" in sql
    part = (queries_dir() / "parts" / "timer_percentiles.sql").read_text()
    assert "quantile_cont" not in re.sub(r"--[^\n]*", "", part)


@pytest.mark.parametrize("sort", ["total", "count", "avg", "max", "p95", "p99"])
def test_a_cut_answer_is_the_top_of_the_whole_answer(sort: str) -> None:
    """Grouped by a many-valued column, ranked by a column that is no percentile and cut to
    `top`, an answer works its statistics out over the groups it shows only, found by a
    ranking of its own; its rows are the first rows of the uncut answer, every column the
    same (the shares of the totals over every row; ties of max broken by the groups, a NULL
    resource among them), and it says how many groups there are."""
    frame = _requests(20_000, seed=11)
    rng = np.random.default_rng(11)
    nodes = np.array([f"node{i}" for i in range(300)] + [None], dtype=object)
    frame["resource"] = rng.choice(nodes, len(frame))
    con = open_store(None).con
    append_requests(con, frame)
    by = ["resource"]
    assert st.cut_to_top(st.dimension_columns(by), 4)
    assert not st.cut_to_top(st.dimension_columns("indirector"), 4)
    every = st.stats_records(con, by, sort=sort, top=None)
    groups = frame.groupby(st.dimension_columns(by), dropna=False).ngroups
    assert every.total == groups == len(every.rows)
    for top in (1, 4, len(every.rows) - 1):
        cut = st.stats_records(con, by, sort=sort, top=top)
        assert cut.rows == every.rows[:top], top
        assert cut.total == every.total
    with_slo = st.stats_records(con, by, sort=sort, top=None, slo_us=200_000).rows
    assert st.stats_records(con, by, sort=sort, top=4, slo_us=200_000).rows == with_slo[:4]
    assert {r["apdex"] for r in with_slo[:4]} - {None}  # the Apdex of the groups shown


def test_a_cut_answer_works_out_the_top_groups_over_their_rows_alone() -> None:
    """The groups a cut answer ranks first (stats._rank_groups): the top groups by total
    time, counted by pandas, a NULL group included; by p99, every group within a hair of
    the last one shown too; the shares those groups' totals over every row's."""
    frame = _requests(5_000, seed=12)
    frame.loc[frame["environment"].isna(), "duration_us"] *= 50  # the NULL group on top
    frame["resource"], frame["indirector"] = frame["environment"], "catalog"  # a group a resource
    con = open_store(None).con
    append_requests(con, frame)
    dims = st.dimension_columns("resource")
    on = "r.resource IS NOT DISTINCT FROM t.resource"
    shown_rows = f"SELECT count(*) FROM requests AS r JOIN {st.SHOWN_TABLE} AS t ON {on}"
    keys = [("total_us", True), ("requests", True), *((d, False) for d in dims)]
    shown = st._rank_groups(con, dims, keys, 2, "", [])
    totals = frame.groupby("resource", dropna=False)["duration_us"].agg(["sum", "size"])
    top_two = totals.sort_values("sum", ascending=False).head(2)
    assert pd.isna(top_two.index[0])
    assert shown.groups == len(totals)
    assert shown.timers == {"upstream", "ttfb", "queue"}
    assert con.execute(shown_rows).fetchall() == [(int(top_two["size"].sum()),)]
    con.execute(f"DROP TABLE {st.SHOWN_TABLE}")
    got = st.stats_records(con, "resource", top=2).rows
    assert [r["share"] for r in got] == pytest.approx(list(top_two["sum"] / frame["duration_us"].sum()))
    # by p99: the second group's, and every group at or above it less a hair
    keys = [("p99_us", True), ("requests", True), *((d, False) for d in dims)]
    st._rank_groups(con, dims, keys, 2, "", [])
    p99 = frame.groupby("resource", dropna=False)["duration_us"].quantile(0.99)
    second = p99.sort_values(ascending=False).iloc[1]
    near = p99[p99 >= second * (1 - 1e-9)]
    assert len(near) >= 2
    assert con.execute(shown_rows).fetchall() == [(int(totals.loc[near.index, "size"].sum()),)]


@pytest.mark.parametrize("by", ["resource", "indirector"])
@pytest.mark.parametrize("sort", ["count", "avg", "max", "p95", "p99", "total"])
def test_the_headline_names_the_most_server_time_whatever_the_sort(by: str, sort: str) -> None:
    """The headline's group comes from the same ranking and answer as the table (a cut one
    for a many-valued column, a whole one otherwise): the group pandas finds the most
    server time in, with its share, requests and p99 as the table sorted by total says,
    where that group is far below the top rows of the table shown."""
    frame = _requests(6_000, seed=13)
    rng = np.random.default_rng(13)
    frame["resource"] = rng.choice(np.array([f"node{i}" for i in range(200)], dtype=object), len(frame))
    busy = frame.index[:3_000]  # many quick requests: the most time, the lowest p99 and avg
    frame.loc[busy, ["resource", "indirector", "duration_us"]] = ["busy", "status", 90_000]
    con = open_store(None).con
    append_requests(con, frame)
    sums = frame.groupby(by, dropna=False)["duration_us"].sum()
    lead = {"resource": "busy", "indirector": "status"}[by]
    assert sums.idxmax() == lead
    a = st.answer(con, [by], sort=sort, top=3, with_headline=True)
    assert a.table.rows == st.stats_records(con, [by], sort=sort, top=3).rows
    if sort not in ("total", "count"):
        assert lead not in {r[by] for r in a.table.rows}
    first = st.stats_records(con, [by], sort="total", top=None).rows[0]
    assert first[by] == lead and first["total_us"] == sums.max()
    label = " ".join(str(first[d]) for d in st.dimension_columns(by))
    share = sums.max() / frame["duration_us"].sum()
    p99 = st.format_us(np.percentile(frame.loc[frame[by] == lead, "duration_us"], 99))
    assert (
        a.headline.splitlines()[1] == f"{label}: {share:.0%} of all server time, 3,000 requests, p99 {p99}."
    )
