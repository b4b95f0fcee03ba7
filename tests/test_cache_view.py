"""queries/cache_candidates.sql on a hand-made table; every number recomputed here in Python."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from logan.answer import stats as st
from logan.store import open_store

# method, route, vhost, path, query, requester, status, duration_us, bytes_sent, cache_status
ROWS = [
    ("GET", "/a/{id}", "x", "/a/1", None, "r1", 200, 1000, 100, None),
    ("GET", "/a/{id}", "x", "/a/1", None, "r2", 200, 3000, 100, "HIT"),
    ("GET", "/a/{id}", "x", "/a/1", None, "r2", 304, 500, None, "MISS"),
    ("GET", "/a/{id}", "x", "/a/2", None, "r1", 200, 8000, 120, "hit from proxy"),
    ("GET", "/a/{id}", "x", "/a/2", None, "r3", 200, 2000, 130, None),
    ("HEAD", "/a/{id}", "x", "/a/2", None, "r3", 200, 600, 0, "STALE"),
    ("GET", "/a/{id}", "x", "/a/3", None, "r1", 500, 9000, 50, None),  # failed: not cacheable
    ("GET", "/a/{id}", "x", "/a/3", None, "r1", 404, 700, 50, None),
    ("GET", "/a/{id}", "y", "/a/1", None, None, 200, 4000, 100, None),  # other vhost, no requester
    ("GET", "/s", "x", "/s", "q=1", "r1", 200, 20000, 900, None),
    ("GET", "/s", "x", "/s", "q=2", "r2", 200, 30000, 905, None),
    ("GET", "/s", "x", "/s", "q=1", "r2", 200, None, 900, None),  # untimed
    ("POST", "/a/{id}", "x", "/a/1", None, "r1", 200, 50000, 10, None),  # not a GET
    ("GET", None, "x", "/", None, "r9", 200, 100, 7, None),  # NULL route: a group of its own
    ("GET", "/bad", "x", "/bad", None, "r1", 500, 4000, 1, None),  # never succeeds: not listed
]
COLS = ["method", "route", "vhost", "path", "query", "requester", "status", "duration_us",
        "bytes_sent", "cache_status"]  # fmt: skip
RECORDS = [dict(zip(COLS, r, strict=True), client=f"10.0.0.{i}") for i, r in enumerate(ROWS)]


def make_con():  # noqa: ANN201
    store = open_store(None)
    store.append(pd.DataFrame(RECORDS))
    return store.con


def _served_from_cache(status: str | None) -> bool:
    return status is not None and (status.upper().startswith("HIT") or status.upper() in
                                   ("STALE", "UPDATING"))  # fmt: skip


def _ok(r: dict) -> bool:
    return 200 <= r["status"] <= 299 or r["status"] == 304


def expected_group(rs: list[dict], all_us: int) -> dict:
    """The view's columns for one group's GET/HEAD records, by plain Python and numpy."""
    ok = [r for r in rs if _ok(r)]
    two = [r["bytes_sent"] for r in ok if r["status"] < 300 and r["bytes_sent"] is not None]
    timed = np.array([r["duration_us"] for r in ok if r["duration_us"] is not None], float)
    urls: dict[tuple, list[dict]] = {}
    for r in ok:
        urls.setdefault((r["vhost"], r["path"], r["query"]), []).append(r)
    saved = sum(sum(r["duration_us"] or 0 for r in u) * (len(u) - 1) / len(u) for u in urls.values())
    sizes = [len({r["bytes_sent"] for r in u if r["status"] < 300 and r["bytes_sent"] is not None})
             for u in urls.values()]  # fmt: skip
    sized = [s for s in sizes if s]  # URLs with a 2xx answer that has a size
    known = [r for r in ok if r["cache_status"] is not None]
    return {
        "get_requests": len(rs),
        "requests": len(ok),
        "ok_share": len(ok) / len(rs),
        "not_modified_share": sum(r["status"] == 304 for r in ok) / len(ok),
        "clients": len({r["requester"] or r["client"] for r in ok}),
        "urls": len(urls),
        "total_us": timed.sum(),
        "share": timed.sum() / all_us,
        "avg_us": timed.mean(),
        "p50_us": np.percentile(timed, 50),
        "p95_us": np.percentile(timed, 95),
        "size_values": len(set(two)),
        "size_cv": np.std(two, ddof=1) / np.mean(two) if len(two) > 1 else None,
        "sizes_per_url": sum(sized) / len(sized) if sized else None,
        "cache_known": len(known),
        "hit_share": (
            sum(_served_from_cache(r["cache_status"]) for r in known) / len(known) if known else None
        ),  # fmt: skip
        "saved_us": round(saved),
        "saved_share": saved / all_us,
    }


def expected(keys: list[str]) -> dict[tuple, dict]:
    all_us = sum(r["duration_us"] for r in RECORDS if r["duration_us"] is not None)
    groups: dict[tuple, list[dict]] = {}
    for r in RECORDS:
        if r["method"] in ("GET", "HEAD"):
            groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    # a group none of whose requests succeeded is no candidate
    return {k: expected_group(rs, all_us) for k, rs in groups.items() if any(map(_ok, rs))}


def test_every_number_of_the_view() -> None:
    got = st.view(make_con(), "cache_candidates", by="route")
    want = expected(["method", "route"])
    # /bad never succeeded, POST is no candidate; HEAD /a/{id} is a group of its own
    assert len(got) == len(want) == 4
    for _, row in got.iterrows():
        w = want[(row["method"], None if pd.isna(row["route"]) else row["route"])]
        for col, value in w.items():
            if value is None:
                assert pd.isna(row[col]), col
            else:
                assert row[col] == pytest.approx(value, rel=1e-12), (row["route"], col)


def test_hand_checked_values() -> None:
    """A few of the numbers worked out on paper, so the test's own Python is checked too."""
    got = st.view(make_con(), "cache_candidates", by="route").set_index("route")
    a = got[got["method"] == "GET"].loc["/a/{id}"]
    # GET successes: /a/1 on x (1000, 3000, 304 in 500), /a/2 (8000, 2000), /a/1 on y (4000)
    assert (a["get_requests"], a["requests"], a["urls"], a["clients"]) == (8, 6, 3, 4)
    assert a["saved_us"] == round(4500 * 2 / 3 + 10000 / 2)  # 8000
    assert a["hit_share"] == pytest.approx(2 / 3)  # HIT, MISS, "hit from proxy"
    assert a["sizes_per_url"] == pytest.approx((1 + 2 + 1) / 3)  # /a/2 answered 120 and 130
    assert a["not_modified_share"] == pytest.approx(1 / 6)
    s = got.loc["/s"]
    assert (s["urls"], s["total_us"], s["saved_us"]) == (2, 50000, 10000)  # q=1 twice: 20000/2
    assert pd.isna(s["hit_share"])


def test_largest_saving_first_and_filters_apply() -> None:
    con = make_con()
    got = st.view(con, "cache_candidates", by="route")
    assert list(got["saved_us"]) == sorted(got["saved_us"], reverse=True)
    only_x = st.view(con, "cache_candidates", by="vhost", path_glob="/a/*")
    assert list(only_x["vhost"]) == ["x", "y"]
    assert only_x["requests"].tolist() == [6, 1]  # on x: /a/1 three times, /a/2 twice and a HEAD
