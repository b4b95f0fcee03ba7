"""What to cache, and what it would really save: `logan cache` as DataFrames.

queries/cache_requests.sql keys every request (vhost + path + query, or vhost + path) and
says why a cache could not answer it (method, status, per user, size varies, no time); the
cacheable ones become a Trace (ids and microseconds in numpy) that logan.answer.cache_sim
replays for each TTL and cache set-up asked. The answer, per key or per route/indirector
and TTL: hit ratio, backend requests and server time saved, beside the requests per minute
and the reuse distance (median time between two requests of one key) that decide which
TTL pays; the excluded requests by reason; and a headline in words.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np

from logan.answer import cache_sim as cs
from logan.answer.filters import filter_sql
from logan.answer.views import columns_named, narrowed, series_sql
from logan.errors import LoganError
from logan.store import ANSWER_MEMORY_MB, within_memory
from logan.units import format_count, format_us, missing, parse_duration

if TYPE_CHECKING:
    import pandas as pd

# --key: the parts of queries/cache_requests.sql a cache keys on. A whitelist: these names
# are the only text that enters the SQL around it.
KEYS = {"url": ("key_host", "key_path", "key_query"), "path": ("key_host", "key_path")}
# --by: the column of the answer's groups.
BY = {"url": "cache_key", "route": "route", "indirector": "indirector"}
# --ttl auto: where the saving of most sites flattens lies somewhere on this ladder.
TTL_LADDER = ("1s", "5s", "15s", "1min", "5min", "15min", "1h")
# the TTL a headline names: the shortest that gives this share of the largest saving
FLAT = 0.9


def parse_ttls(text: str | Sequence[str] | None) -> list[int]:
    """'1s,5s,60s' or 'auto' (the ladder) -> distinct TTLs in microseconds, ascending."""
    if text is None:
        text = "60s"
    parts = text.split(",") if isinstance(text, str) else list(text)
    if [p.strip() for p in parts] == ["auto"]:
        parts = list(TTL_LADDER)
    ttls = sorted({parse_duration(p.strip(), "--ttl") for p in parts if p.strip()})
    if not ttls:
        raise LoganError("--ttl: give one or more durations (60s, 1s,5s,5min) or auto")
    return ttls


def requests_sql(key: str = "url", by: str = "route") -> str:
    """queries/cache_requests.sql with a key_hash per request (the key's parts hashed: no
    string built per request) and the group asked for as cache_group."""
    if key not in KEYS:
        raise LoganError(f"unknown --key {key!r}; use {', '.join(KEYS)}")
    if by not in BY:
        raise LoganError(f"unknown --by {by!r}; use {', '.join(BY)}")
    group = "CAST(NULL AS VARCHAR)" if by == "url" else BY[by]
    parts = ", ".join(KEYS[key])
    view = series_sql("cache_requests", [] if by == "url" else [BY[by]])
    return (
        f"SELECT hash({parts}) AS key_hash, {parts}, {group} AS cache_group, client, line_no, duration_us, "
        f"bytes_sent, start_us, end_us, excluded, get_size FROM (\n{view}\n) AS c"
    )


def key_label(host: str, path: str, query: str = "") -> str:
    """A key as a cache would write it: "host /path?query" ("/path?query" without a host)."""
    return (f"{host} " if host else "") + path + (f"?{query}" if query else "")


def columns_read(key: str = "url", by: str = "route", source: str | None = None, **filters: Any) -> set[str]:
    """The `requests` columns `cache()` reads: all a store made for it needs."""
    return columns_named(requests_sql(key, by), filter_sql(filters)[0]) | ({"source"} if source else set())


def check_options(
    by: str = "route",
    key: str = "url",
    ttl: str | Sequence[str] | None = "60s",
    assign: str = "random",
    revalidate: str | None = None,
    hit_cost: str | None = None,
) -> None:
    """The options of cache(), checked before any log is read."""
    requests_sql(key, by)
    parse_ttls(ttl)
    cs.Model(ttl_us=0, assign=assign)
    for text, option in ((revalidate, "--revalidate"), (hit_cost, "--hit-cost")):
        if text is not None:
            parse_duration(text, option)


@dataclass(frozen=True)
class Loaded:
    """The cacheable requests as a Trace, their keys (key_id order: key_hash, cache_group,
    fastest_us), the excluded requests by reason, and the log's span. `key_names` gives the
    keys of some key_ids as a cache writes them (read back from the store: --by url shows
    a few of millions)."""

    trace: cs.Trace
    keys: pd.DataFrame
    exclusions: pd.DataFrame
    span_us: int
    key_names: Callable[[np.ndarray], np.ndarray] | None = None


def load(
    con: duckdb.DuckDBPyConnection,
    key: str = "url",
    by: str = "route",
    source: str | None = None,
    keep_varying: bool = False,
    clients: bool = False,
    sizes: bool = True,
    **filters: Any,
) -> Loaded:
    """Read the requests the filters keep (and `source`, a tier of a multi-log store), their
    keys grouped `by`. `keep_varying` replays the keys whose size varies too (said in the
    exclusions); `clients` numbers the clients (for workers assigned by client; else 0);
    `sizes` reads the answers' sizes (for a cache bounded in bytes; else 0).

    Two passes over the rows and a scan of their starts: one GROUP BY per key and reason
    (the keys, their groups, the exclusions), the log's span, and one fetch of the requests
    replayed as arrays in start order, requests that started in the same microsecond
    (Apache's %t has whole seconds) in the order their log wrote them: by line number.
    Keys are told apart by a 64-bit hash of their parts, clients by a hash of the address:
    two keys of a log share one with a chance of about n^2 / 2^65 (3e-6 for ten million
    distinct keys)."""

    loaded = within_memory(
        con, ANSWER_MEMORY_MB, lambda: _load(con, key, by, source, keep_varying, clients, sizes, filters)
    )
    _arrow_let_go()
    return loaded


def _load(
    con: duckdb.DuckDBPyConnection,
    key: str,
    by: str,
    source: str | None,
    keep_varying: bool,
    clients: bool,
    sizes: bool,
    filters: dict,
) -> Loaded:
    where, params = filter_sql(filters)
    if source is not None:
        where, params = " AND ".join(x for x in (where, "source = ?") if x), [*params, source]
    rows = narrowed(con, requests_sql(key, by), where)
    # The groups and reasons come as pandas categories (a code per key), not a Python string
    # per key: 4.8 M keys took 1.2 GB as objects, and each copy of them as much again.
    per = (
        con.sql(
            "SELECT key_hash, excluded, count(*) AS requests, CAST(sum(duration_us) AS DOUBLE) AS total_us, "
            "min(cache_group) AS cache_group, min(duration_us) AS fastest_us, "
            "coalesce(min(get_size) <> max(get_size), false) AS varies "
            f"FROM ({rows}) AS r GROUP BY key_hash, excluded",
            params=params,
        )
        .to_arrow_table()
        .to_pandas(strings_to_categorical=True)
    )
    _arrow_let_go()
    # the span alone: a first and a last start per key cost the GROUP BY 0.2 s on 10 M rows
    first, last = con.execute(f"SELECT min(start_us), max(start_us) FROM ({rows}) AS r", params).fetchall()[0]
    span = int(last - first) if first is not None else 0
    exclusions = _exclusions(per, keep_varying)
    # a key whose 200 answers differ in size is one no TTL should serve, unless asked to keep it
    kept = np.flatnonzero(per["excluded"].isna().to_numpy() & (keep_varying | ~per["varies"].to_numpy()))
    kept = kept[np.argsort(per["key_hash"].to_numpy()[kept], kind="stable")]  # key_id order
    keys = per[["key_hash", "cache_group", "fastest_us"]].iloc[kept].reset_index(drop=True)  # the one copy
    del per
    keys.insert(0, "key_id", np.arange(len(keys), dtype=np.int64))
    hashes = keys["key_hash"].to_numpy()
    a = _cacheable_arrays(con, rows, params, hashes, clients, sizes)
    end = a["start_us"] + a["duration_us"]  # as the view's end_us: the answer's end
    client = a["client"] if clients else np.zeros(len(end), np.int64)
    size = a["bytes_sent"] if sizes else np.zeros(len(end), np.int64)
    trace = cs.Trace(a["key"], client, a["start_us"], end, a["duration_us"], size, len(keys))

    def key_names(ids: np.ndarray) -> np.ndarray:
        named = hashes[ids]
        return within_memory(con, ANSWER_MEMORY_MB, lambda: _key_names(con, rows, params, KEYS[key], named))

    return Loaded(trace, keys, exclusions, span, key_names)


def _key_names(
    con: duckdb.DuckDBPyConnection, rows: str, params: list, parts: Sequence[str], hashes: np.ndarray
) -> np.ndarray:
    """The keys of `hashes` as a cache writes them (key_label), in that order: their parts
    read back from one row of each."""
    import pyarrow as pa

    con.register("__logan_named_keys", pa.table({"key_hash": hashes, "i": np.arange(len(hashes))}))
    try:
        texts = con.sql(
            f"SELECT n.i, {', '.join(f'any_value({p}) AS {p}' for p in parts)} FROM ({rows}) AS r "
            "JOIN __logan_named_keys AS n USING (key_hash) GROUP BY n.i",
            params=params,
        ).fetchall()
    finally:
        con.unregister("__logan_named_keys")
    names = np.empty(len(hashes), object)
    for i, *part in texts:
        names[i] = key_label(*part)
    return names


def _arrow_let_go() -> None:
    """pyarrow's allocator keeps what it freed for its next tables: 0.2 GB after a load of
    20 M rows, through the replays."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def _cacheable_arrays(
    con: duckdb.DuckDBPyConnection,
    rows: str,
    params: list,
    hashes: np.ndarray,
    clients: bool,
    sizes: bool,
) -> dict:
    """The requests of the keys replayed (`hashes`, in key_id order) as int64 arrays in
    start order, requests that started in the same microsecond in the order their log wrote
    them (by line number): only the columns the replay reads (the end is the start plus the
    duration; the client and the size only when asked for). The key_id comes from a join
    in DuckDB, which leaves out the keys not replayed; numpy sorts (see start_order)."""
    import pyarrow as pa

    client = ", hash(client) AS client" if clients else ""
    size = ", bytes_sent" if sizes else ""
    ids = np.arange(len(hashes), dtype=np.int32)
    con.register("__logan_cache_keys", pa.table({"key_hash": hashes, "key": ids}))
    try:
        table = con.sql(
            f"SELECT k.key{client}, start_us, duration_us{size}, line_no FROM ({rows}) AS r "
            "JOIN __logan_cache_keys AS k USING (key_hash) WHERE excluded IS NULL",
            params=params,
        ).to_arrow_table()
    finally:
        con.unregister("__logan_cache_keys")
    a = {c: table.column(c).to_numpy() for c in table.column_names}
    del table  # its columns are copied out when they came in several chunks
    order = start_order(a.pop("line_no"), a["start_us"])
    # gathered as they came (the key is int32: half the bytes to move), then made int64; each
    # column let go once gathered
    return {c: np.take(a.pop(c), order).astype(np.int64, copy=False) for c in list(a)}


def start_order(line_no: np.ndarray, start_us: np.ndarray) -> np.ndarray:
    """The permutation that sorts requests by start, then line number. A log's rows come
    nearly in that order, which a stable sort (timsort) on one key finds in a tenth of a
    second over 10 M rows, where DuckDB's ORDER BY took 0.7 s and np.lexsort as long: so
    the two keys become one, the start's offset times the lines' range plus the line, when
    that fits in 63 bits (a day of 10 M lines uses 60); else two stable sorts, the line's
    first (whole seconds make every start a tie of many, as Apache's %t does)."""
    if len(start_us) == 0:
        return np.arange(0, dtype=np.intp)
    s0, l0 = int(start_us.min()), int(line_no.min())
    lines = int(line_no.max()) - l0 + 1
    if (int(start_us.max()) - s0 + 1) * lines < 2**63:
        key = start_us - s0  # one array made in place: four temporaries were 190 MB at 5.8 M
        key *= lines
        key += line_no
        key -= l0
        return np.argsort(key, kind="stable")
    by_line = np.argsort(line_no, kind="stable")
    return by_line[np.argsort(start_us[by_line], kind="stable")]


def _exclusions(per: pd.DataFrame, keep_varying: bool) -> pd.DataFrame:
    """Requests and server time by reason no cache would answer them ('cacheable' for the
    rest), largest first: `per` is a row per key and exclusion (load)."""
    varies = "size varies (kept)" if keep_varying else "size varies"
    by = per.groupby(["excluded", "varies"], observed=True, dropna=False)[["requests", "total_us"]].sum()
    by = by.reset_index()
    kept = np.where(by["varies"], varies, "cacheable")
    by["reason"] = np.where(by["excluded"].isna(), kept, by["excluded"].astype(object))
    found = by.groupby("reason", as_index=False)[["requests", "total_us"]].sum()
    found = found.sort_values(["requests", "reason"], ascending=[False, True], ignore_index=True)
    found["share"] = found["requests"] / max(int(found["requests"].sum()), 1)
    return found


def simulate(
    loaded: Loaded,
    ttls: Sequence[int],
    models: Sequence[cs.Model],
    hit_cost_us: int | None,
    group_of_key: np.ndarray | None = None,
) -> pd.DataFrame:
    """Per group of keys, TTL and cache set-up (`models` give all but the TTL): one row each
    with `group`, ttl_s, workers and the sums of cache_sim.per_key over the group's keys.
    `group_of_key` numbers each key's group (_groups); None: each key is its own, numbered
    by key_id. The replays run on threads (the compiled replay and tally let go of the
    GIL): each reads the trace and writes its own outcomes, and keeps its group sums only
    (a frame per key and TTL was 0.4 GB for 4.8 M keys)."""
    import pandas as pd

    t = loaded.trace
    cost = (
        np.full(t.keys, float(hit_cost_us))
        if hit_cost_us is not None
        else loaded.keys["fastest_us"].to_numpy(np.float64)
    )
    groups = t.keys if group_of_key is None else _count(group_of_key)
    # Summed per group in the tally, not per key then grouped: a key's five sums were five
    # arrays of 39 MB a replay on 4.85 M keys, two replays at once (360 MB of the report's
    # cache section on the 5 GB HAProxy store).
    totals = cs.key_totals(t, group_of_key, groups)  # the same for every TTL and set-up
    slots = {m.workers: cs.slots_of(t, m) for m in models}  # the same for every TTL

    def one(m: cs.Model) -> pd.DataFrame:
        outcome = cs.replay(t, m, slots[m.workers])
        # (copy=False: the arrays become the frame's columns, not copied into one block)
        frame = pd.DataFrame(
            cs.per_key(t, outcome, cost, m.revalidate_us, totals, group_of_key, groups), copy=False
        )
        frame.insert(0, "group", np.arange(groups))
        frame.insert(1, "ttl_s", m.ttl_us / 1e6)
        frame.insert(2, "workers", m.workers)
        return frame

    asked = [replace(model, ttl_us=ttl) for model in models for ttl in ttls]
    with ThreadPoolExecutor(max_workers=min(len(asked), os.cpu_count() or 1)) as pool:
        return pd.concat(list(pool.map(one, asked)), ignore_index=True)


def _count(codes: np.ndarray) -> int:
    """How many groups codes 0..n-1 number."""
    return int(codes.max()) + 1 if len(codes) else 0


def reuse_p50_us(trace: cs.Trace, group_of_key: np.ndarray) -> np.ndarray:
    """Per group: the median time between two consecutive requests of one key (NaN when
    no key of the group was asked twice)."""
    groups = _count(group_of_key)
    gap = cs.since_last(trace)
    group = np.asarray(group_of_key, np.int64)[trace.key]
    group[gap < 0] = -1  # a key's first request has no gap before it: left out of the medians
    return cs.medians(gap, group, groups)


@dataclass
class CacheAnswer:
    """`logan cache`: `table` (per group, TTL and workers), `totals` (all cacheable requests
    per TTL and workers), `exclusions` (requests no cache would answer, by reason) and the
    headline in words."""

    table: pd.DataFrame
    totals: pd.DataFrame
    exclusions: pd.DataFrame
    headline: str


def cache(
    con: duckdb.DuckDBPyConnection,
    by: str = "route",
    key: str = "url",
    ttl: str | Sequence[str] | None = "60s",
    workers: int = 1,
    assign: str = "random",
    seed: int = 0,
    coalesce: bool = True,
    revalidate: str | None = None,
    hit_cost: str | None = None,
    max_objects: int = 0,
    max_bytes: int = 0,
    top: int | None = 20,
    source: str | None = None,
    keep_varying: bool = False,
    coalesce_new_only: bool = False,
    **filters: Any,
) -> CacheAnswer:
    """What a cache with each TTL would have answered and saved, per `by` (url, route,
    indirector). With workers > 1 the rows of one shared cache come too, to compare.
    `coalesce_new_only`: only a key's first fill is waited for (nginx's proxy_cache_lock).
    `keep_varying`: replay keys whose answers vary in size too (by default they are left
    out: an answer that changes is not one a TTL should serve).
    `top` groups (None or 0: all), largest saving of one shared cache first."""
    check_options(by, key, ttl, assign, revalidate, hit_cost)
    ttls = parse_ttls(ttl)
    base = cs.Model(
        ttl_us=0, workers=workers, assign=assign, seed=seed, coalesce=coalesce,
        coalesce_new_only=coalesce_new_only,
        revalidate_us=parse_duration(revalidate, "--revalidate") if revalidate else None,
        max_objects=max_objects, max_bytes=max_bytes,
    )  # fmt: skip
    models = [replace(base, workers=1), base] if workers > 1 else [base]
    loaded = load(
        con, key, by, source, keep_varying, assign == "client" and workers > 1, max_bytes > 0, **filters
    )
    codes, names = _groups(loaded, by)
    with ThreadPoolExecutor(max_workers=1) as beside:  # the reuse distances, beside the replays
        reuse = beside.submit(reuse_p50_us, loaded.trace, codes)
        cost = parse_duration(hit_cost, "--hit-cost") if hit_cost else None
        per_group = simulate(loaded, ttls, models, cost, codes)
        totals = _totals(per_group)
        rank = _ranked(per_group, top, _count(codes))
        # only the rows shown are kept while the names are read: --by url has a row per
        # key, TTL and set-up (388 MB of 4.85 M keys), and the names are a query of DuckDB's
        per_group = per_group[per_group["group"].isin(rank.index)]
        table = _grouped(loaded, per_group, rank, by, top, codes, names, reuse.result())
    return CacheAnswer(table, totals, loaded.exclusions, headline(table, totals, loaded.exclusions, by))


def _groups(loaded: Loaded, by: str) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
    """Each key's group number, and what names groups by their numbers: --by url, each key is
    its own group, named from the store when shown (Loaded.key_names)."""
    import pandas as pd

    if by == "url":
        assert loaded.key_names is not None
        return np.arange(loaded.trace.keys), loaded.key_names
    column = loaded.keys["cache_group"]
    codes, names = pd.factorize(column.astype(object).where(column.notna(), None), use_na_sentinel=False)
    return codes, lambda ids: np.asarray(names, object)[ids]


def _ranked(per_group: pd.DataFrame, top: int | None, groups: int) -> pd.DataFrame:
    """The groups in the order shown (best, their largest saving by one shared cache at
    any TTL; n, their requests), cut after the `top`-th and the groups tied with it:
    only these are named. Ties by requests, then (in _grouped) by name. In arrays of a
    value per group: --by url has a group per key, and the rows of one shared cache
    copied out of `per_group` and grouped again took 340 MB of 4.85 M keys."""
    import pandas as pd

    workers = per_group["workers"].to_numpy()
    one = workers == (workers.min() if len(workers) else 0)  # no rows: no key is cacheable
    group, saved, n_of = (per_group[c].to_numpy() for c in ("group", "saved_us", "requests"))
    if not one.all():
        group, saved, n_of = group[one], saved[one], n_of[one]
    best = np.full(groups, -np.inf)
    np.fmax.at(best, group, saved)
    n = np.zeros(groups, np.int64)
    np.maximum.at(n, group, n_of)
    # most saved first, then most requests (groups alike in both are named, then ordered
    # by name: their order here changes nothing shown)
    order = np.lexsort((n, best))[::-1]
    if top and len(order) > top:
        last = order[top - 1]
        shown = (best > best[last]) | ((best == best[last]) & (n >= n[last]))  # a flag per group
        order = order[shown[order]]
    return pd.DataFrame({"best": best[order], "n": n[order]}, index=order)


def _grouped(
    loaded: Loaded,
    per_group: pd.DataFrame,
    rank: pd.DataFrame,
    by: str,
    top: int | None,
    codes: np.ndarray,
    names: Callable[[np.ndarray], np.ndarray],
    reuse: np.ndarray,
) -> pd.DataFrame:
    """The top groups' rows of `per_group` (simulate's rows, per group, TTL and workers;
    those of the groups of `rank` at least), in the order of `rank` (_ranked) then of
    their names: each key's group number and what names groups (_groups), their reuse
    distances (reuse_p50_us). Names are needed only for the groups of `rank` (--by url
    reads them back from the store: 4.8 M of them took 23 s and 6 GB)."""
    rank["label"] = names(rank.index.to_numpy())
    rank["name"] = [str(x) for x in rank["label"]]
    rank = rank.sort_values(["best", "n", "name"], ascending=[False, False, True])
    order = rank.index.to_list()[:top] if top else rank.index.to_list()
    g = per_group[per_group["group"].isin(order)].copy()
    name = "key" if by == "url" else by
    g.insert(1, name, rank.loc[g["group"], "label"].to_numpy())
    if by != "url":
        g.insert(2, "keys", np.bincount(codes)[g["group"].to_numpy()])
    minutes = max(loaded.span_us / 60e6, 1.0)
    g["per_minute"] = g["requests"] / minutes
    g["reuse_p50_us"] = reuse[g["group"].to_numpy()] if len(g) else []
    g["hit_ratio"] = g["hits"] / g["requests"]
    g["saved_share"] = g["saved_us"] / g["total_us"].where(g["total_us"] > 0)
    g = g.assign(_rank=g["group"].map({grp: i for i, grp in enumerate(order)}))
    g = g.sort_values(["_rank", "workers", "ttl_s"]).drop(columns=["_rank", "group"])
    cols = [c for c in ("key", "route", "indirector", "keys") if c in g.columns]
    rest = ["ttl_s", "workers", "requests", "per_minute", "reuse_p50_us", "hit_ratio", "hits", "waited",
            "revalidations", "backend_requests", "total_us", "saved_us", "saved_share"]  # fmt: skip
    g = g[cols + rest].reset_index(drop=True)
    for c in ("total_us", "saved_us"):
        g[c] = g[c].round().astype("int64")
    return g


# What _totals adds up over the groups (the rest of its columns are ratios of these).
_SUMS = ["requests", "hits", "waited", "revalidations", "backend_requests", "total_us", "saved_us"]


def _totals(per_group: pd.DataFrame) -> pd.DataFrame:
    """The sums of all groups per TTL and workers. simulate's rows come in runs of one TTL
    and set-up, summed run by run (reduceat) and then per TTL and workers: a groupby of
    every row took 150 MB of 4.85 M keys (--by url)."""
    ttl, workers = per_group["ttl_s"].to_numpy(), per_group["workers"].to_numpy()
    starts = np.flatnonzero(np.r_[len(ttl) > 0, (ttl[1:] != ttl[:-1]) | (workers[1:] != workers[:-1])])
    runs = per_group.iloc[starts][["ttl_s", "workers"]].reset_index(drop=True)  # no rows: no runs
    for c in _SUMS:
        runs[c] = np.add.reduceat(per_group[c].to_numpy(), starts) if len(starts) else []
    t = runs.groupby(["ttl_s", "workers"])[_SUMS].sum().reset_index()
    t["hit_ratio"] = t["hits"] / t["requests"].where(t["requests"] > 0)
    t["saved_share"] = t["saved_us"] / t["total_us"].where(t["total_us"] > 0)
    for c in ("total_us", "saved_us"):
        t[c] = t[c].round().astype("int64")
    return t.sort_values(["workers", "ttl_s"]).reset_index(drop=True)


def flat_ttl(rows: pd.DataFrame) -> float:
    """The shortest TTL (s) whose saving is within FLAT of the largest among `rows` (one
    group, one set-up): where the saving flattens."""
    best = rows["saved_us"].max()
    return (
        float(rows.loc[rows["saved_us"] >= FLAT * best, "ttl_s"].min())
        if best > 0
        else float(rows["ttl_s"].max())
    )


def headline(table: pd.DataFrame, totals: pd.DataFrame, exclusions: pd.DataFrame, by: str) -> str:
    """The answer in words: the best candidate at the TTL where its saving flattens, as one
    shared cache and as the per-worker caches asked for; then all cacheable requests."""
    if table.empty:
        why = _excluded_words(exclusions)
        return f"No request is cacheable: {why}." if why else "No requests match."
    name = "key" if by == "url" else by
    top = table[name].iloc[0]
    label = "-" if missing(top) else str(top)
    first = table[table[name].isna()] if missing(top) else table[table[name] == top]
    shared = first[first["workers"] == 1]
    ttl = flat_ttl(shared)
    s = shared[shared["ttl_s"] == ttl].iloc[0]
    text = (
        f"Caching {label} for {format_us(ttl * 1e6)} would have answered {s['hit_ratio']:.0%} of its "
        f"requests from the cache and saved {format_us(s['saved_us'])} of {format_us(s['total_us'])} "
        f"of server time"
    )
    many = first[(first["workers"] > 1) & (first["ttl_s"] == ttl)]
    if not many.empty:
        w = many.iloc[0]
        text += f"; as {w['workers']} per-process caches, {w['hit_ratio']:.0%} and {format_us(w['saved_us'])}"
    text += "."
    if len(shared) > 1 and ttl < shared["ttl_s"].max():
        longest = shared.iloc[-1]
        text += (
            f" The saving flattens there: {format_us(longest['ttl_s'] * 1e6)} would save "
            f"{format_us(longest['saved_us'])}."
        )
    all1 = totals[(totals["workers"] == 1) & (totals["ttl_s"] == ttl)].iloc[0]
    text += (
        f"\nAll {format_count(all1['requests'])} cacheable requests with a {format_us(ttl * 1e6)} TTL: "
        f"{all1['hit_ratio']:.0%} hits, {format_us(all1['saved_us'])} of {format_us(all1['total_us'])} saved."
    )
    if (~exclusions["reason"].isin(["cacheable", "size varies (kept)"])).any():
        text += "\nNot cacheable: " + _excluded_words(exclusions) + "."
    return text


def _excluded_words(exclusions: pd.DataFrame) -> str:
    rows = exclusions[~exclusions["reason"].isin(["cacheable", "size varies (kept)"])]
    return ", ".join(f"{r.reason} {r.share:.0%} of requests" for r in rows.itertuples())
