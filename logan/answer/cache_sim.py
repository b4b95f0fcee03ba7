"""The cache simulator: replay requests through a modelled cache and count what it answers.

A request is a hit when a copy filled by an earlier miss of its key is still fresh. The copy
is filled when the miss *ends* (its `ts_end`), so requests that arrive while the fill is in
flight either wait for it and count as hits (coalescing: Varnish's waiting list, nginx
`proxy_cache_lock on`) or go to the backend too (`coalesce=False`); nginx waits only for
the first fill of a key, not for a refill after expiry (`coalesce_new_only`). After expiry the next
request is a full miss, or with `revalidate_us` a conditional request answered 304 at that
cost. `workers` independent caches model per-process caches (Apache's mod_mem_cache) or one
cache per host behind a balancer; `max_objects`/`max_bytes` bound each with LRU eviction.

The replay itself is one compiled pass (logan/answer/_replay.c): whether a request hits
depends on when the previous miss of its key ended, which depended on the one before, a
recursion no window function expresses, and LRU is sequential by nature. Everything around
it (assigning workers) is numpy, never a Python loop per request; the per-key sums of a
replay are one more compiled pass (`tally`), and those that do not depend on the replay
(requests, server time per key) are counted once per trace (`key_totals`), not per TTL.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from logan.errors import LoganError

try:
    from logan.answer import _replay
except ImportError:  # built by setup.py; optional like the C reader
    _replay = None

MISS, HIT, WAITED, REVALIDATED = 0, 1, 2, 3
ASSIGNMENTS = ("random", "round-robin", "client")


@dataclass(frozen=True)
class Trace:
    """Requests in start order: key ids (0..keys-1), client ids, times in microseconds
    (start, end), the server time of each answer and its size in bytes."""

    key: np.ndarray
    client: np.ndarray
    start: np.ndarray
    end: np.ndarray
    duration: np.ndarray
    size: np.ndarray
    keys: int

    def __len__(self) -> int:
        return len(self.key)


@dataclass(frozen=True)
class Model:
    """One cache set-up: a TTL, how many independent caches and how requests reach them,
    coalescing (`coalesce_new_only`: only the first fill of a key is waited for, as nginx's
    proxy_cache_lock without proxy_cache_use_stale updating), revalidation and the LRU
    bounds (0: unbounded)."""

    ttl_us: int
    workers: int = 1
    assign: str = "random"
    seed: int = 0
    coalesce: bool = True
    coalesce_new_only: bool = False
    revalidate_us: int | None = None
    max_objects: int = 0
    max_bytes: int = 0

    def __post_init__(self) -> None:
        if self.ttl_us < 0:
            raise LoganError("a TTL cannot be negative")
        if self.workers < 1:
            raise LoganError("--workers must be at least 1")
        if self.assign not in ASSIGNMENTS:
            raise LoganError(f"unknown --assign {self.assign!r}; use {', '.join(ASSIGNMENTS)}")
        if self.max_objects < 0 or self.max_bytes < 0:
            raise LoganError("--max-objects and --max-bytes cannot be negative")


def workers_of(trace: Trace, model: Model) -> np.ndarray:
    """The cache (0..workers-1) each request reaches: at random with the model's seed, in
    turn (round robin, in start order), or by client (a multiplicative hash of its id, so
    one client always reaches the same cache)."""
    n = len(trace)
    if model.workers == 1:
        return np.zeros(n, np.int64)
    if model.assign == "random":
        return np.random.default_rng(model.seed).integers(0, model.workers, n, dtype=np.int64)
    if model.assign == "round-robin":
        return np.arange(n, dtype=np.int64) % model.workers
    hashed = (trace.client.astype(np.uint64) * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)
    return (hashed % np.uint64(model.workers)).astype(np.int64)


def slots_of(trace: Trace, model: Model) -> np.ndarray:
    """The cache entry each request reads: worker * keys + key (the key itself with one
    cache). It depends on the workers and how requests reach them, not on the TTL: replays
    of several TTLs share it."""
    if model.workers == 1:
        return trace.key
    return workers_of(trace, model) * trace.keys + trace.key


def _built() -> None:
    if _replay is None:
        raise LoganError("the cache simulator is not built (reinstall logan with a C compiler)")


def replay(trace: Trace, model: Model, slot: np.ndarray | None = None) -> np.ndarray:
    """The outcome of every request (MISS, HIT, WAITED, REVALIDATED) under `model`; `slot`
    is slots_of(trace, model) when the caller has it already."""
    _built()
    slot = slots_of(trace, model) if slot is None else slot
    outcome = np.zeros(len(trace), np.int8)
    reval = -1 if model.revalidate_us is None else int(model.revalidate_us)
    _replay.replay(
        np.ascontiguousarray(slot, np.int64),
        np.ascontiguousarray(trace.start, np.int64),
        np.ascontiguousarray(trace.end, np.int64),
        np.ascontiguousarray(trace.size, np.int64),
        trace.keys * model.workers,
        model.workers,
        int(model.ttl_us),
        (2 if model.coalesce_new_only else 1) if model.coalesce else 0,
        reval,
        int(model.max_objects),
        int(model.max_bytes),
        outcome,
    )
    return outcome


def since_last(trace: Trace) -> np.ndarray:
    """For each request, the microseconds since the previous request of its key (-1 for a
    key's first): the reuse distance, in one compiled pass."""
    _built()
    out = np.empty(len(trace), np.int64)
    _replay.since_last(np.ascontiguousarray(trace.key, np.int64), np.ascontiguousarray(trace.start, np.int64),
                       trace.keys, out)  # fmt: skip
    return out


def medians(values: np.ndarray, group: np.ndarray, groups: int) -> np.ndarray:
    """Per group 0..groups-1, the median of `values` whose `group` is that one (a negative
    group: left out), NaN for a group without any; the mean of the two middle values for
    an even count, as pandas and numpy give it. One compiled pass and a selection per group."""
    _built()
    out = np.empty(groups, np.float64)
    values, group = (np.ascontiguousarray(v, np.int64) for v in (values, group))
    _replay.medians(values, group, groups, out)
    return out


def key_totals(trace: Trace, group_of_key: np.ndarray | None = None, groups: int = 0) -> dict:
    """Per key, or per group of keys (`group_of_key` numbers them 0..groups-1), what no
    replay changes: requests and total_us (its server time)."""
    at, n = (trace.key, trace.keys) if group_of_key is None else (group_of_key[trace.key], groups)
    return {
        "requests": np.bincount(at, minlength=n).astype(np.int64),
        "total_us": np.bincount(at, weights=trace.duration.astype(np.float64), minlength=n),
    }


def per_key(
    trace: Trace,
    outcome: np.ndarray,
    hit_cost: np.ndarray,
    revalidate_us: int | None,
    totals: dict | None = None,
    group_of_key: np.ndarray | None = None,
    groups: int = 0,
) -> dict:
    """Per key (arrays of length trace.keys), or per group of keys when `group_of_key`
    numbers them 0..groups-1 (arrays of length `groups`): requests, hits (waited included),
    waited, revalidations, backend_requests, total_us and saved_us; `totals` is
    key_totals(trace, group_of_key, groups) when the caller has it (it is the same for
    every TTL).

    A hit saves its server time minus `hit_cost` of its key; a revalidation its time minus
    the revalidation's cost; never below zero.
    """
    _built()
    n = trace.keys if group_of_key is None else groups
    totals = key_totals(trace, group_of_key, groups) if totals is None else totals
    hits, waited, revalidations = (np.zeros(n, np.int64) for _ in range(3))
    saved = np.zeros(n, np.float64)
    key, duration = (np.ascontiguousarray(v, np.int64) for v in (trace.key, trace.duration))
    group = None if group_of_key is None else np.ascontiguousarray(group_of_key, np.int64)
    reval = -1 if revalidate_us is None else int(revalidate_us)
    outcome, cost = np.ascontiguousarray(outcome, np.int8), np.ascontiguousarray(hit_cost, np.float64)
    _replay.tally(key, outcome, duration, cost, reval, group, hits, waited, revalidations, saved)
    return {
        "requests": totals["requests"],
        "hits": hits,
        "waited": waited,
        "revalidations": revalidations,
        "backend_requests": totals["requests"] - hits,
        "total_us": totals["total_us"],
        "saved_us": saved,
    }
