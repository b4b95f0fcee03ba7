"""The compiled parts of `logan cache` that make it fast, each against a second method: a
replay's per-key sums (cache_sim.per_key, the C tally) against numpy masks and bincounts,
the reuse-distance medians against pandas' groupby median, the start-then-line order
against numpy's lexsort, and the requests of a real log read in the same order every time,
ties of one second in the order of their lines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import logan
from logan.answer import cache as ca
from logan.answer import cache_sim as cs

SAMPLE = Path(__file__).resolve().parent.parent / "sample_logs" / "puppet_access.log"


def numpy_sums(
    trace: cs.Trace, outcome: np.ndarray, cost: np.ndarray, reval: int | None, group: np.ndarray | None = None
) -> dict:
    """The per-key sums as masks and bincounts (how they were computed before the tally);
    per group of keys when `group` numbers each key's (the cost stays the key's)."""
    k = trace.key
    at, n = (k, trace.keys) if group is None else (group[k], int(group.max()) + 1)
    hit = (outcome == cs.HIT) | (outcome == cs.WAITED)
    duration = trace.duration.astype(np.float64)
    saved = np.where(hit, np.maximum(duration - cost[k], 0), 0.0)
    if reval is not None:
        saved += np.where(outcome == cs.REVALIDATED, np.maximum(duration - reval, 0), 0.0)
    requests = np.bincount(at, minlength=n)
    hits = np.bincount(at[hit], minlength=n)
    return {
        "requests": requests,
        "hits": hits,
        "waited": np.bincount(at[outcome == cs.WAITED], minlength=n),
        "revalidations": np.bincount(at[outcome == cs.REVALIDATED], minlength=n),
        "backend_requests": requests - hits,
        "total_us": np.bincount(at, weights=duration, minlength=n),
        "saved_us": np.bincount(at, weights=saved, minlength=n),
    }


def trace_of(seed: int, n: int = 20_000, keys: int = 300) -> cs.Trace:
    rng = np.random.default_rng(seed)
    start = np.sort(rng.integers(0, 600_000_000, n))
    duration = rng.lognormal(np.log(20_000), 1.5, n).astype(np.int64) + 1
    key = rng.integers(0, keys, n)
    return cs.Trace(key, key * 0, start, start + duration, duration, 100 + key, keys)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize(
    "model",
    [cs.Model(ttl_us=1_000_000), cs.Model(ttl_us=30_000_000, revalidate_us=2_000),
     cs.Model(ttl_us=5_000_000, workers=4, coalesce=False, revalidate_us=50_000)],
)  # fmt: skip
def test_the_compiled_sums_are_numpys_to_the_bit(seed: int, model: cs.Model) -> None:
    trace = trace_of(seed)
    outcome = cs.replay(trace, model)
    assert set(np.unique(outcome)) >= {cs.MISS, cs.HIT}
    cost = np.random.default_rng(seed).uniform(0, 30_000, trace.keys)
    got = cs.per_key(trace, outcome, cost, model.revalidate_us, cs.key_totals(trace))
    want = numpy_sums(trace, outcome, cost, model.revalidate_us)
    for name, values in want.items():
        assert np.array_equal(got[name], values), name  # exact, floats included
    # summed per group of keys in the tally (each key's group: 7 groups, the last empty)
    group = np.random.default_rng(seed + 10).integers(0, 6, trace.keys)
    group[-1] = 6
    trace = cs.Trace(np.where(trace.key == trace.keys - 1, 0, trace.key), *fields_after_key(trace))
    outcome = cs.replay(trace, model)
    got = cs.per_key(trace, outcome, cost, model.revalidate_us, None, group, 7)
    want = numpy_sums(trace, outcome, cost, model.revalidate_us, group)
    for name, values in want.items():
        assert len(got[name]) == 7 and np.array_equal(got[name], values), name
        assert got[name][6] == 0, name  # a group no request reaches
    with pytest.raises(ValueError, match="out of range"):  # a group past the sums' rows
        cs.per_key(trace, outcome, cost, model.revalidate_us, None, group, 6)


def fields_after_key(trace: cs.Trace) -> tuple:
    return trace.client, trace.start, trace.end, trace.duration, trace.size, trace.keys


def test_medians_are_pandas_medians() -> None:
    rng = np.random.default_rng(5)
    n, groups = 50_000, 1_000
    values = rng.integers(0, 50, n) * rng.choice([1, 1_000_000], n)  # many equal values
    group = rng.integers(-1, groups - 10, n)  # -1: left out; the last ten groups empty
    group[:7] = groups - 10  # a group of seven, and one of one
    group[7] = groups - 9
    group[group >= groups - 8] = -1
    got = cs.medians(values, group, groups)
    kept = group >= 0
    want = pd.Series(values[kept]).groupby(group[kept]).median()
    expected = np.full(groups, np.nan)
    expected[want.index.to_numpy()] = want.to_numpy()
    assert np.array_equal(got, expected, equal_nan=True)
    assert np.isnan(got[-8:]).all() and not np.isnan(got[: groups - 10]).any()
    # by hand: an even count is the mean of its two middle values
    assert cs.medians(np.array([9, 1, 4, 7]), np.zeros(4, np.int64), 1).tolist() == [5.5]


def test_a_log_is_read_in_the_same_order_every_time(tmp_path: Path) -> None:
    """Apache's %t has whole seconds: most requests of the sample share their start with
    others. They are replayed in the order of their lines, run after run."""
    db = tmp_path / "s.duckdb"
    logan.ingest([str(SAMPLE)], str(db), format="combined_D", profile="puppet").store.close()
    with logan.open(db, read_only=True) as store:
        loads = [ca.load(store.con, by="url", keep_varying=True) for _ in range(3)]
        raw = store.con.execute(
            "SELECT line_no, duration_us, epoch_us(ts_start) AS start_us FROM requests "
            "WHERE method IN ('GET', 'HEAD') "
            "AND status IN (200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501)"
        ).df()
    first = loads[0].trace
    assert len(first) == len(raw) > 10_000
    assert pd.Series(first.start).duplicated().mean() > 0.5  # ties are the rule here
    for again in loads[1:]:
        for name in ("key", "start", "end", "duration", "size"):
            assert np.array_equal(getattr(again.trace, name), getattr(first, name)), name
    in_order = raw.sort_values(["start_us", "line_no"])
    assert np.array_equal(first.start, in_order["start_us"].to_numpy())
    assert np.array_equal(first.duration, in_order["duration_us"].to_numpy())


@pytest.mark.parametrize("span_s", [3_600, 10**9])  # one key of 63 bits; the two sorts
@pytest.mark.parametrize("shuffled", [False, True])
def test_start_order_is_lexsorts(span_s: int, shuffled: bool) -> None:
    """Starts in whole seconds (ties everywhere), lines nearly in order or shuffled, and
    repeated line numbers (two logs in one store): the order start_order finds is the one
    np.lexsort gives, ties of both keys left in the order they came."""
    rng = np.random.default_rng(span_s)
    n = 50_000
    line = np.concatenate([np.arange(n // 2), np.arange(n - n // 2)]) + 7
    start = (np.sort(rng.integers(0, span_s, n)) + 1_600_000_000) * 1_000_000
    start[rng.random(n) < 0.01] += 2_000_000  # a few requests out of their line's place
    if shuffled:
        perm = rng.permutation(n)
        line, start = line[perm], start[perm]
    got = ca.start_order(line, start)
    assert np.array_equal(got, np.lexsort((line, start)))
    assert len(ca.start_order(line[:0], start[:0])) == 0


def test_the_sums_of_a_group_are_its_keys_sums_added() -> None:
    """simulate keeps a replay's sums per group of keys only: they are the per-key sums
    (each key its own group) added up per group by pandas; counts stay integers."""
    trace = trace_of(3, keys=400)
    fastest = np.random.default_rng(4).integers(0, 3_000, trace.keys)
    keys = pd.DataFrame({"key_id": np.arange(trace.keys), "fastest_us": fastest})
    loaded = ca.Loaded(trace, keys, pd.DataFrame(), span_us=600_000_000)
    ttls, models = [1_000_000, 60_000_000], [cs.Model(ttl_us=0), cs.Model(ttl_us=0, workers=3)]
    per_key = ca.simulate(loaded, ttls, models, None)
    codes = np.random.default_rng(5).integers(0, 9, trace.keys)
    codes[codes == 4] = 3  # a group number without keys: a row of zeros
    got = ca.simulate(loaded, ttls, models, None, codes)
    want = (
        per_key.assign(group=codes[per_key["group"]])
        .groupby(["group", "ttl_s", "workers"])
        .sum()
        .reindex(pd.MultiIndex.from_frame(got[["group", "ttl_s", "workers"]]), fill_value=0)
        .reset_index()
    )
    assert len(got) == 9 * len(ttls) * len(models)
    assert got["hits"].sum() > 0 and (got.loc[got["group"] == 4, "requests"] == 0).all()
    for c in ("requests", "hits", "waited", "revalidations", "backend_requests"):
        assert got[c].dtype == np.int64 and np.array_equal(got[c], want[c]), c
    for c in ("total_us", "saved_us"):
        assert np.allclose(got[c], want[c], rtol=1e-12, atol=0), c
