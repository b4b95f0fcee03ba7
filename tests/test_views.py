"""The SQL files of queries/: their form, and their answers on hand-computable tables."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from logan.answer import stats as st
from logan.resources import parsers_dirs, queries_dir
from logan.store import append_requests, open_store

REPO = Path(__file__).resolve().parents[1]
FILES = sorted(queries_dir().glob("*.sql"))
# The views must also run on Spark (transpiled by sqlglot): no DuckDB-only spellings. (`//`
# is allowed: sqlglot writes it as Spark's DIV, and both truncate toward zero.)
NOT_PORTABLE = [r"::", r"\bGROUP BY ALL\b", r"\bcount_if\b", r"\blist_\w+", r"\bregexp_\w+",
                r"\bquantile_disc\b", r"\bmedian\b", r"\bQUALIFY\b", r"\bMACRO\b", r"\$\w",
                r"\bEXCLUDE\b", r"\bilike\b", r"\bstrftime\b", r";"]  # fmt: skip


def con_with(durations: list[int | None], **columns: list) -> object:
    con = open_store(None).con
    append_requests(con, pd.DataFrame({"duration_us": durations, **columns}))
    return con


def test_queries_found_from_the_checkout() -> None:
    assert queries_dir() == REPO / "queries"
    assert parsers_dirs() == [REPO / "parsers"]
    assert {p.stem for p in FILES} >= {"by_dimension", "apdex", "pareto", "percentiles",
                                       "histogram", "slowest", "summary"}  # fmt: skip


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_one_question_one_portable_select(path: Path) -> None:
    text = path.read_text()
    first = text.splitlines()[0]
    assert first.startswith("-- ") and first.endswith("?"), first
    code = "\n".join(line.split("--")[0] for line in text.splitlines())
    for pattern in NOT_PORTABLE:
        assert not re.search(pattern, code, re.IGNORECASE), pattern
    assert re.match(r"\s*(WITH|SELECT)\b", code, re.IGNORECASE)


@pytest.mark.parametrize("path", sorted((queries_dir() / "parts").glob("*.sql")), ids=lambda p: p.name)
def test_parts_of_views_are_portable_ctes(path: Path) -> None:
    code = "\n".join(line.split("--")[0] for line in path.read_text().splitlines())
    for pattern in NOT_PORTABLE:
        assert not re.search(pattern, code, re.IGNORECASE), pattern
    assert re.match(r"\s*\w+ AS \(", code)  # CTEs to splice into a view's WITH


def test_every_view_runs_and_is_created() -> None:
    con = con_with([5, 7], method=["GET", "GET"], indirector=["a", "b"], status=[200, 500])
    names = st.create_views(con)
    assert {"by_indirector", "by_server", "pareto_route", "histogram", "slowest"} <= set(names)
    for name in names:
        con.execute(f"SELECT * FROM {name}").fetchall()
    assert con.execute("SELECT requests FROM summary").fetchone() == (2,)


def test_percentiles_like_ab() -> None:
    durations = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3, 3]
    got = st.view(con_with([d * 1000 for d in durations] + [None]), "percentiles").iloc[0]
    assert got["requests"] == len(durations)
    for q in (50, 66, 75, 80, 90, 95, 98, 99):
        assert got[f"p{q}_us"] == pytest.approx(np.percentile(durations, q) * 1000, rel=1e-12)
    assert got["p100_us"] == 9000


def test_histogram_buckets_are_exact_at_their_edges() -> None:
    durations = [0, 1, 2, 4, 5, 9, 10, 19, 20, 49, 50, 99, 999, 1000, 1999, 2000, 4999, 5000,
                 4_999_999, 10**12]  # fmt: skip

    def bucket(us: int) -> tuple[int, int]:  # the rule, spelled with plain integers
        if us < 1:
            return 0, 1
        power = 1
        while power * 10 <= us:
            power *= 10
        step = 1 if us < 2 * power else 2 if us < 5 * power else 5
        lo = step * power
        return lo, (lo * 5 // 2 if step == 2 else lo * 2)

    want: dict[tuple[int, int], int] = {}
    for d in durations:
        want[bucket(d)] = want.get(bucket(d), 0) + 1
    got = st.view(con_with(durations + [None]), "histogram")
    assert [(r.lo_us, r.hi_us, r.requests) for r in got.itertuples()] == [
        (lo, hi, n) for (lo, hi), n in sorted(want.items())]  # fmt: skip
    shares = [n / len(durations) for _, n in sorted(want.items())]
    assert got["share"].tolist() == pytest.approx(shares)
    assert got["cumulative_share"].iloc[-1] == pytest.approx(1.0)


def test_slowest_first() -> None:
    con = con_with([30, None, 10, 20], path=["/c", "/none", "/a", "/b"], line_no=[1, 2, 3, 4])
    got = st.view(con, "slowest")
    assert list(got["path"]) == ["/c", "/b", "/a"]


def test_pareto_cumulative_share() -> None:
    totals = {"a": [600, 300], "b": [50], "c": [40, 10], "d": [None]}
    paths = [k for k, v in totals.items() for _ in v]
    durations = [d for v in totals.values() for d in v]
    got = st.view(con_with(durations, method=["GET"] * len(paths), route=paths), "pareto",
                  by="route")  # fmt: skip
    assert list(got["route"]) == ["a", "c", "b", "d"]
    assert got["cumulative_share"].tolist()[:3] == pytest.approx([0.9, 0.95, 1.0])
    assert got["group_share"].tolist() == pytest.approx([0.25, 0.5, 0.75, 1.0])
    # an untimed group adds no time: no share of its own, the running total stays at 100%
    assert pd.isna(got["share"].iloc[3]) and got["cumulative_share"].iloc[3] == 1.0


def test_filtered_view_shadows_requests() -> None:
    con = con_with([1, 2, 3], status=[200, 500, 502])
    assert st.view(con, "summary", status="5xx")["requests"].iloc[0] == 2
    assert st.view(con, "summary")["requests"].iloc[0] == 3


def test_templates_take_only_whitelisted_names() -> None:
    with pytest.raises(ValueError, match="unknown --by"):
        st.query_sql("by_dimension", ["indirector) FROM requests; --"])
    with pytest.raises(ValueError, match="needs a threshold"):
        st.query_sql("apdex", ["status"])
    assert "duration_us <= 1500" in st.query_sql("apdex", ["status"], slo_us="1500")
