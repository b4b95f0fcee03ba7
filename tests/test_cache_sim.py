"""The cache simulator (logan/answer/cache_sim.py, its C replay) against a plain Python replay
written here from the rules in words, on small generated traces; hand-computed tiny cases;
and `logan cache` on Puppet-like logs, where per-process caches must fall short of a shared one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import OrderedDict

import numpy as np
import pandas as pd
import pytest

from logan.answer import cache_sim as cs

# --- the reference: one request at a time, as the rules say ---------------------------------


def reference(trace: cs.Trace, model: cs.Model, worker: np.ndarray) -> list[int]:
    """Each cache is an OrderedDict key -> (fill end, size), most recent last.

    A request hits when its cache holds a copy whose fill ended no later than TTL before it
    started, or (coalescing) whose fill is still in flight. Otherwise it goes to the backend:
    a 304 at the revalidation cost when a stale copy is held and revalidation is on, else a
    full miss; its answer fills the copy when it ends. Without coalescing the answers in
    flight land when the key is next asked for (the latest one wins), and only then enter
    the cache; with coalesce_new_only only a key's first fill (none held, none in flight) is
    waited for. Bounded caches drop their least recently used copies.
    """
    caches: list[OrderedDict] = [OrderedDict() for _ in range(model.workers)]
    in_flight: dict[tuple[int, int], list[tuple[int, int]]] = {}
    out = []

    def store(cache: OrderedDict, key: int, fill: int, size: int) -> None:
        cache.pop(key, None)
        if model.max_bytes and size > model.max_bytes:
            return
        cache[key] = (fill, size)
        while (model.max_objects and len(cache) > model.max_objects) or (
            model.max_bytes and sum(s for _, s in cache.values()) > model.max_bytes
        ):
            cache.popitem(last=False)

    for i in range(len(trace)):
        w, k, t = int(worker[i]), int(trace.key[i]), int(trace.start[i])
        cache = caches[w]
        waits_for_refills = model.coalesce and not model.coalesce_new_only
        if not waits_for_refills:
            flying = in_flight.get((w, k), [])
            landed = [f for f in flying if f[0] <= t]
            in_flight[(w, k)] = [f for f in flying if f[0] > t]
            if landed:
                fill, size = max(landed)
                if k not in cache or fill > cache[k][0]:
                    store(cache, k, fill, size)
        held = cache.get(k)
        if held is not None and t < held[0] + model.ttl_us:
            out.append(cs.WAITED if t < held[0] else cs.HIT)
            cache.move_to_end(k)
            continue
        if held is not None and model.revalidate_us is not None:
            out.append(cs.REVALIDATED)
            done = t + model.revalidate_us
        else:
            out.append(cs.MISS)
            done = int(trace.end[i])
        size = int(trace.size[i])
        new_key = held is None and not in_flight.get((w, k))
        if waits_for_refills or (model.coalesce and new_key):
            store(cache, k, done, size)
        else:
            in_flight.setdefault((w, k), []).append((done, size))
            if out[-1] == cs.REVALIDATED:
                cache.move_to_end(k)
    return out


def random_trace(seed: int, n: int = 3000, keys: int = 40, span_s: float = 120) -> cs.Trace:
    """Zipf-like keys, bursts of arrivals, durations from 1 ms to 2 s (long fills overlap)."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(span_s * 1e6 / n, n) * rng.choice([0.02, 1, 3], n, p=[0.3, 0.5, 0.2])
    start = np.cumsum(gaps).astype(np.int64)
    weights = 1 / np.arange(1, keys + 1)
    key = rng.choice(keys, n, p=weights / weights.sum()).astype(np.int64)
    duration = rng.lognormal(np.log(50_000), 1.5, n).clip(1000, 2_000_000).astype(np.int64)
    size = (100 + key * 37).astype(np.int64)
    client = rng.integers(0, 25, n).astype(np.int64)
    return cs.Trace(key, client, start, start + duration, duration, size, keys)


MODELS = [
    cs.Model(ttl_us=1_000_000),
    cs.Model(ttl_us=10_000_000),
    cs.Model(ttl_us=0),
    cs.Model(ttl_us=5_000_000, coalesce=False),
    cs.Model(ttl_us=1_000_000, coalesce_new_only=True),
    cs.Model(ttl_us=3_000_000, coalesce_new_only=True, revalidate_us=2000, workers=2, max_objects=6),
    cs.Model(ttl_us=2_000_000, revalidate_us=3000),
    cs.Model(ttl_us=2_000_000, revalidate_us=3000, coalesce=False),
    cs.Model(ttl_us=5_000_000, workers=4, assign="random", seed=7),
    cs.Model(ttl_us=5_000_000, workers=3, assign="round-robin"),
    cs.Model(ttl_us=5_000_000, workers=5, assign="client"),
    cs.Model(ttl_us=30_000_000, max_objects=5),
    cs.Model(ttl_us=30_000_000, max_objects=3, workers=2, assign="round-robin"),
    cs.Model(ttl_us=30_000_000, max_bytes=1500),
    cs.Model(ttl_us=30_000_000, max_objects=4, coalesce=False, revalidate_us=500),
    cs.Model(ttl_us=3_000_000, max_bytes=2000, revalidate_us=1000, workers=2, assign="client"),
]


def model_id(m: cs.Model) -> str:
    waits = ("new" if m.coalesce_new_only else "co") if m.coalesce else "noco"
    return f"ttl{m.ttl_us // 1000}ms-w{m.workers}-{waits}-r{m.revalidate_us}-lru{m.max_objects}/{m.max_bytes}"


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("model", MODELS, ids=model_id)
def test_replay_matches_the_plain_python_replay(seed: int, model: cs.Model):
    trace = random_trace(seed)
    got = cs.replay(trace, model)
    want = reference(trace, model, cs.workers_of(trace, model))
    assert got.tolist() == want
    # and the sums: hit ratio, backend requests and saved time from the reference outcomes
    cost = np.full(trace.keys, 1000.0)
    sums = cs.per_key(trace, got, cost, model.revalidate_us)
    hits = [o in (cs.HIT, cs.WAITED) for o in want]
    assert sums["hits"].sum() == sum(hits)
    assert sums["backend_requests"].sum() == len(want) - sum(hits)
    saved = sum(max(int(d) - 1000, 0) for d, h in zip(trace.duration, hits, strict=True) if h)
    if model.revalidate_us is not None:
        saved += sum(max(int(d) - model.revalidate_us, 0)
                     for d, o in zip(trace.duration, want, strict=True) if o == cs.REVALIDATED)  # fmt: skip
    assert sums["saved_us"].sum() == pytest.approx(saved, rel=1e-12)


def test_the_workers_spread_as_asked():
    trace = random_trace(4)
    rr = cs.workers_of(trace, cs.Model(1, workers=3, assign="round-robin"))
    assert rr[:7].tolist() == [0, 1, 2, 0, 1, 2, 0]
    by_client = cs.workers_of(trace, cs.Model(1, workers=5, assign="client"))
    for c in np.unique(trace.client):  # one client, one cache
        assert len(set(by_client[trace.client == c].tolist())) == 1
    a = cs.workers_of(trace, cs.Model(1, workers=4, seed=3))
    assert (a == cs.workers_of(trace, cs.Model(1, workers=4, seed=3))).all()
    assert not (a == cs.workers_of(trace, cs.Model(1, workers=4, seed=4))).all()
    assert set(np.bincount(a).tolist()) != {0} and np.bincount(a).min() > len(trace) / 4 * 0.8


def tiny(rows: list[tuple[int, int, int]], size: int = 10) -> cs.Trace:
    """(key, start ms, duration ms) rows."""
    key = np.array([r[0] for r in rows], np.int64)
    start = np.array([r[1] * 1000 for r in rows], np.int64)
    dur = np.array([r[2] * 1000 for r in rows], np.int64)
    return cs.Trace(key, np.zeros(len(rows), np.int64), start, start + dur, dur,
                    np.full(len(rows), size, np.int64), int(key.max()) + 1)  # fmt: skip


def test_hand_computed_fill_at_the_end_of_the_miss():
    # key 0: a miss at 0 ms taking 100 ms; TTL 1 s, so the copy is fresh 100..1100 ms
    rows = [(0, 0, 100), (0, 50, 100), (0, 100, 5), (0, 1099, 5), (0, 1100, 80), (0, 1150, 5), (0, 1181, 5)]
    t = tiny(rows)
    # 50 ms: the fill is in flight -> waits (coalesced); 100 and 1099: fresh; 1100: expired ->
    # miss, fill in flight until 1180; 1150 waits; 1181 fresh
    co = cs.replay(t, cs.Model(ttl_us=1_000_000))
    assert co.tolist() == [cs.MISS, cs.WAITED, cs.HIT, cs.HIT, cs.MISS, cs.WAITED, cs.HIT]
    # without coalescing the request at 50 ms goes to the backend too, and its answer (ending
    # at 150) is the latest fill: fresh until 1150, so 1100 hits and 1150 misses (until 1155)
    no = cs.replay(t, cs.Model(ttl_us=1_000_000, coalesce=False))
    assert no.tolist() == [cs.MISS, cs.MISS, cs.HIT, cs.HIT, cs.HIT, cs.MISS, cs.HIT]
    # nginx's lock: the first fill is waited for, the refill at 1100 is not: 1150 misses too
    # (until 1155, the latest fill landed)
    new = cs.replay(t, cs.Model(ttl_us=1_000_000, coalesce_new_only=True))
    assert new.tolist() == [cs.MISS, cs.WAITED, cs.HIT, cs.HIT, cs.MISS, cs.MISS, cs.HIT]
    # revalidation: at 1100 the stale copy is revalidated, a 304 in 2 ms: fresh from 1102
    rv = cs.replay(t, cs.Model(ttl_us=1_000_000, revalidate_us=2000))
    assert rv.tolist() == [cs.MISS, cs.WAITED, cs.HIT, cs.HIT, cs.REVALIDATED, cs.HIT, cs.HIT]
    # saved: hits save their time minus the hit cost (5 ms, the key's fastest answer)
    sums = cs.per_key(t, rv, np.array([5000.0]), 2000)
    assert sums["saved_us"][0] == (100 - 5) * 1000 + 0 + 0 + 0 + (80 - 2) * 1000 + 0
    assert (sums["hits"][0], sums["revalidations"][0], sums["backend_requests"][0]) == (5, 1, 2)


def test_hand_computed_lru_evicts_the_least_recent():
    # keys 0,1,2 each missed once (1 ms fills), then 0 again: with room for 2, key 0 was
    # evicted by key 2 -> miss; then 2 is a hit, 1 was evicted by 0 -> miss
    rows = [(0, 0, 1), (1, 10, 1), (2, 20, 1), (0, 30, 1), (2, 40, 1), (1, 50, 1)]
    got = cs.replay(tiny(rows), cs.Model(ttl_us=10**9, max_objects=2))
    assert got.tolist() == [cs.MISS, cs.MISS, cs.MISS, cs.MISS, cs.HIT, cs.MISS]
    unbounded = cs.replay(tiny(rows), cs.Model(ttl_us=10**9))
    assert unbounded.tolist() == [cs.MISS] * 3 + [cs.HIT] * 3
    # 25 bytes hold two 10-byte answers
    assert cs.replay(tiny(rows), cs.Model(ttl_us=10**9, max_bytes=25)).tolist() == got.tolist()
    # an answer larger than the whole cache is never kept
    assert set(cs.replay(tiny(rows, size=30), cs.Model(ttl_us=10**9, max_bytes=25)).tolist()) == {cs.MISS}


def test_bad_models_are_one_line_errors():
    with pytest.raises(cs.LoganError, match="workers"):
        cs.Model(ttl_us=1, workers=0)
    with pytest.raises(cs.LoganError, match="assign"):
        cs.Model(ttl_us=1, assign="nearest")


# --- the whole path: logs -> store -> `logan cache` -------------------------------------------


def logan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["logan", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def puppet_log(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("cache") / "puppet.log"
    generate = [sys.executable, "-m", "logan.generate", "--lines", "60000", "--seed", "3", "-o", str(path)]
    subprocess.run(generate, check=True)
    return str(path)


def test_per_process_caches_fall_short_of_one_shared_cache(puppet_log: str):
    run = logan("cache", puppet_log, "--by", "indirector", "--ttl", "5min", "--workers", "20",
                "--keep-varying", "--top", "0", "-o", "json")  # fmt: skip
    assert run.returncode == 0, run.stderr
    rows = {(r["indirector"], r["workers"]): r for r in json.loads(run.stdout)}
    shared, apart = rows[("file_metadata", 1)], rows[("file_metadata", 20)]
    for r in rows.values():  # the fields programs read
        assert {"ttl_s", "hit_ratio", "backend_requests", "saved_us"} <= set(r) and r["ttl_s"] == 300
    assert shared["requests"] == apart["requests"]
    assert shared["hit_ratio"] > 0.8 and shared["hit_ratio"] - apart["hit_ratio"] > 0.3
    assert shared["saved_us"] > 1.5 * apart["saved_us"]
    # the shared figure once more, from the raw rows of the log by the plain Python replay
    import logan as api

    with api.open(None) as store:
        api.ingest([puppet_log], store)
        raw = store.sql(
            "SELECT coalesce(vhost, '') || path || coalesce('?' || nullif(query, ''), '') AS k, "
            "epoch_us(ts_start) AS s, duration_us AS d, bytes_sent AS b, line_no FROM requests "
            "WHERE method IN ('GET', 'HEAD') AND status IN (200, 203, 204, 206, 300, 301, 308, 404, 405, "
            "410, 414, 501) AND indirector = 'file_metadata'"
        )
    raw = raw.sort_values(["s", "line_no"], kind="stable")  # start order, ties as the log wrote them
    ids = {k: i for i, k in enumerate(sorted(set(raw["k"])))}
    key = np.array([ids[k] for k in raw["k"]], np.int64)
    start = raw["s"].to_numpy(np.int64)
    t = cs.Trace(key, key * 0, start, start + raw["d"].to_numpy(np.int64), raw["d"].to_numpy(np.int64),
                 raw["b"].fillna(0).to_numpy(np.int64), len(ids))  # fmt: skip
    want = reference(t, cs.Model(ttl_us=300_000_000), np.zeros(len(t), np.int64))
    assert shared["requests"] == len(want)
    assert shared["hits"] == sum(o in (cs.HIT, cs.WAITED) for o in want)
    fastest = raw.groupby("k")["d"].min()
    saved = sum(
        max(d - fastest[k], 0) for k, d, o in zip(raw["k"], raw["d"], want, strict=True) if o != cs.MISS
    )
    assert shared["saved_us"] == round(saved)


def test_the_headline_says_it_in_words(puppet_log: str):
    run = logan(
        "cache", puppet_log, "--by", "indirector", "--ttl", "auto", "--workers", "4", "--keep-varying"
    )
    assert run.returncode == 0, run.stderr
    first = " ".join(run.stdout.split("┏")[0].split())  # the words above the table, unwrapped
    assert first.startswith("Caching file_metadata for ") and "as 4 per-process caches" in first
    assert "of its requests from the cache and saved" in first
    rows = json.loads(logan("cache", puppet_log, "--ttl", "auto", "--top", "1", "-o", "json").stdout)
    assert sorted({r["ttl_s"] for r in rows}) == [1, 5, 15, 60, 300, 900, 3600]


LINES = """\
10.0.0.1 - - [10/Oct/2024:13:55:36 +0000] "GET /a HTTP/1.1" 200 5 "-" 1000
10.0.0.1 - - [10/Oct/2024:13:55:37 +0000] "GET /a HTTP/1.1" 200 5 "-" 3000
10.0.0.1 - - [10/Oct/2024:13:55:38 +0000] "POST /a HTTP/1.1" 200 5 "-" 7000
10.0.0.1 - - [10/Oct/2024:13:55:39 +0000] "GET /r HTTP/1.1" 302 0 "-" 500
10.0.0.1 - - [10/Oct/2024:13:55:39 +0000] "GET /n HTTP/1.1" 404 9 "-" 400
10.0.0.1 - bob [10/Oct/2024:13:55:40 +0000] "GET /a HTTP/1.1" 200 5 "-" 900
10.0.0.1 - - [10/Oct/2024:13:55:41 +0000] "GET /a HTTP/1.1" 200 5 "sid=1" 800
10.0.0.1 - - [10/Oct/2024:13:55:42 +0000] "GET /v HTTP/1.1" 200 10 "-" 100
10.0.0.1 - - [10/Oct/2024:13:55:43 +0000] "GET /v HTTP/1.1" 200 11 "-" 100
10.0.0.1 - - [10/Oct/2024:13:55:44 +0000] "GET /a?x=1 HTTP/1.1" 200 5 "-" 2000
"""


def test_what_no_cache_would_answer_is_left_out_with_its_reason(tmp_path):
    log = tmp_path / "tiny.log"
    log.write_text(LINES)
    import logan as api

    with api.open(None) as store:
        api.ingest([str(log)], store, format='%h %l %u %t "%r" %>s %b "%{Cookie}i" %D')
        a = api.cache(store.con, by="url", ttl="10s", hit_cost="0ms")
        by_path = api.cache(store.con, by="url", key="path", ttl="10s", hit_cost="0ms")
    reasons = dict(zip(a.exclusions["reason"], a.exclusions["requests"], strict=True))
    # POST; 302 (not stored by default); bob and the cookie; /v answered 10 and 11 bytes
    assert reasons == {"cacheable": 4, "method": 1, "status": 1, "per user": 2, "size varies": 2}
    rows = {r["key"]: r for r in a.table.to_dict("records")}
    assert set(rows) == {"/a", "/n", "/a?x=1"}
    # /a: 1000 us at :36 is the miss, the 3000 us at :37 a hit saving all of it (hit cost 0)
    assert (rows["/a"]["hits"], rows["/a"]["saved_us"], rows["/a"]["backend_requests"]) == (1, 3000, 1)
    assert rows["/a"]["reuse_p50_us"] == 1_000_000
    # --key path: /a?x=1 is /a too, 7 s after the last /a miss: a hit
    path_rows = {r["key"]: r for r in by_path.table.to_dict("records")}
    assert (path_rows["/a"]["requests"], path_rows["/a"]["hits"], path_rows["/a"]["saved_us"]) == (
        3,
        2,
        5000,
    )
    assert a.headline.startswith("Caching /a for 10 s would have answered 50% of its requests")


def test_the_top_groups_are_the_first_of_every_group_ranked(tmp_path):
    """--top k shows the first k groups of a ranking of all of them by pandas: most saved by
    one shared cache at any TTL, then most requests, then by name (ties on both are the
    rule here); the totals are the sums of every group's rows."""
    import logan as api

    rng = np.random.default_rng(5)
    lines = []
    for i in range(60):  # each key asked 1-3 times, 2 s apart, each answer 500 or 3000 us
        asked, took = int(rng.integers(1, 4)), int(rng.choice([500, 3000]))
        for j in range(asked):
            at = i * 7 + 2 * j  # seconds after 13:00:00
            request = f'"GET /k{i:02d} HTTP/1.1" 200 5 "-" {took}'
            lines.append(
                (at, f"10.0.0.{i % 5} - - [10/Oct/2024:13:{at // 60:02d}:{at % 60:02d} +0000] {request}\n")
            )
    log = tmp_path / "keys.log"
    log.write_text("".join(text for _, text in sorted(lines)))
    options = dict(by="url", ttl=["1s", "60s"], hit_cost="0ms", workers=2)
    with api.open(None) as store:
        api.ingest([str(log)], store, format='%h %l %u %t "%r" %>s %b "%{Cookie}i" %D')
        every = api.cache(store.con, top=0, **options)
        tops = {k: api.cache(store.con, top=k, **options).table for k in (1, 5, 7, 20)}
    t = every.table
    shared = t[t["workers"] == 1]
    ranking = (
        shared.groupby("key")
        .agg(best=("saved_us", "max"), n=("requests", "max"))
        .reset_index()
        .sort_values(["best", "n", "key"], ascending=[False, False, True])["key"]
        .tolist()
    )
    assert len(ranking) == 60 and list(dict.fromkeys(t["key"])) == ranking
    assert shared.duplicated(["saved_us", "requests", "ttl_s"]).sum() > 20  # ties in both are many
    for k, table in tops.items():
        assert list(dict.fromkeys(table["key"])) == ranking[:k], k
        pd.testing.assert_frame_equal(table, t[t["key"].isin(ranking[:k])].reset_index(drop=True))
    sums = t.groupby(["ttl_s", "workers"])[
        ["requests", "hits", "backend_requests", "total_us", "saved_us"]
    ].sum()
    got = every.totals.set_index(["ttl_s", "workers"])[sums.columns]
    pd.testing.assert_frame_equal(got.sort_index(), sums.sort_index(), check_dtype=False)


@pytest.mark.parametrize(
    ("args", "needle"),
    [(["--ttl", "soon"], "--ttl"), (["--by", "colour"], "--by"), (["--key", "host"], "--key"),
     (["--assign", "nearest"], "--assign"), (["--revalidate", "x"], "--revalidate")],
)  # fmt: skip
def test_bad_options_are_one_line(args: list[str], needle: str):
    run = logan("cache", "sample_logs/puppet_access.log", *args)
    assert run.returncode == 2 and needle in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert "Traceback" not in run.stderr


def test_the_plot_is_a_picture_of_the_table(puppet_log: str, tmp_path):
    png = tmp_path / "saved.png"
    run = logan("cache", puppet_log, "--by", "indirector", "--ttl", "1s,1min", "--workers", "3",
                "--keep-varying", "--plot", str(png))  # fmt: skip
    assert run.returncode == 0, run.stderr
    import matplotlib.image

    picture = matplotlib.image.imread(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and picture.shape[0] > 400 and picture.shape[1] > 600
    assert picture.std() > 0.05  # lines and text, not a blank canvas


def test_the_candidates_view_has_the_rate_and_the_reuse_distance():
    import pandas as pd

    from logan.answer import stats as st
    from logan.store import open_store

    t0 = pd.Timestamp("2024-10-10 12:00:00")
    rows = [("/a", 0), ("/a", 10), ("/a", 40), ("/b", 5), ("/b", 65)]
    frame = pd.DataFrame({
        "method": "GET", "route": "/x", "vhost": "h", "path": [p for p, _ in rows], "status": 200,
        "duration_us": 1000, "bytes_sent": 10, "client": "c",
        "ts_start": [t0 + pd.Timedelta(seconds=s) for _, s in rows],
    })  # fmt: skip
    with open_store(None) as store:
        store.append(frame)
        got = st.view(store.con, "cache_candidates", by="route").iloc[0]
    # gaps within a URL: /a 10 s and 30 s, /b 60 s: median 30 s; 5 requests over 65 s
    assert got["reuse_p50_us"] == 30_000_000
    assert got["per_minute"] == pytest.approx(5 / (65 / 60))


def test_log_content_stays_data_in_every_output(tmp_path):
    # a path with an escape sequence, and one that a spreadsheet would read as a formula
    paths = ["/\x1b]0;owned\x07x", "/\x1b]0;owned\x07x", "=cmd|x", "=cmd|x"]
    lines = [f'10.0.0.1 - - [10/Oct/2024:13:55:{s:02d} +0000] "GET {p} HTTP/1.1" 200 5 1000\n'
             for s, p in enumerate(paths)]  # fmt: skip
    log = tmp_path / "hostile.log"
    log.write_text("".join(lines))
    fmt = ["--format", '%h %l %u %t "%r" %>s %b %D', "--by", "url", "--plot", str(tmp_path / "p.png")]
    table = logan("cache", str(log), *fmt)
    assert table.returncode == 0, table.stderr
    assert "\x1b" not in table.stdout and "\\x1b]0;owned\\x07x" in table.stdout
    csv = logan("cache", str(log), *fmt, "-o", "csv")
    assert "\x1b" not in csv.stdout and "'=cmd|x" in csv.stdout
    md = logan("cache", str(log), *fmt, "-o", "markdown")
    assert "\\|x" in md.stdout and "\x1b" not in md.stdout
