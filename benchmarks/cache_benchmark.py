"""How fast `logan cache` simulates: 10 M requests, several TTLs, shared and per-process caches,
and the bounded LRU beside a plain Python loop and libCacheSim on the same trace.

    python benchmarks/cache_benchmark.py                      # 10 M requests, 3 runs
    python benchmarks/cache_benchmark.py --rows 1000000 --runs 1

Builds (once) a store of --rows requests (benchmarks/data/): the generated Puppet-like
Apache log of up to 1 M lines, repeated with shifted times beyond that; then times, each
the median of --runs:
  - `logan cache --db STORE --ttl 1s,60s,5min,1h --keep-varying` (and --workers 20) in a
    fresh process, as a user runs it: wall time, CPU time and peak RSS
  - logan.cache(con, ttl=1s,60s,5min,1h) on the open store (reading the rows included)
  - the same with --workers 20 (which replays one shared cache and the 20 per-process ones)
  - the replay alone on the loaded trace, per TTL
  - over the first 1 M requests: the same TTL replay as a plain Python loop (the reference
    of tests/test_cache_sim.py), and a bounded LRU (--max-objects) in logan's compiled replay,
    as a Python OrderedDict loop, and in libCacheSim's LRU (PyPI libcachesim, when it is
    installed; its oracleGeneral trace is written from the same requests).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np
from timeline_benchmark import fresh  # this folder's: the same wall, CPU and peak RSS

import logan
from logan.answer import cache as ca
from logan.answer import cache_sim as cs

DATA = Path(__file__).resolve().parent / "data"
TTLS = "1s,60s,5min,1h"


BASE = 1_000_000  # generated lines; larger stores repeat them


def store_for(rows: int) -> Path:
    """A store of `rows` requests: the generated Puppet-like log of up to 1 M lines, and
    for more those requests again and again, each copy after the last (times shifted), so
    the store is 10 M requests in a day of traffic repeated, without writing 1.4 GB of log."""
    db = DATA / f"cache_{rows}rows.duckdb"
    if db.exists() or rows <= BASE:
        return db if db.exists() else generated(rows)
    base = generated(BASE)
    shutil.copy(base, db)
    con = duckdb.connect(str(db))
    con.execute(f"ATTACH '{base}' AS base (READ_ONLY)")  # a path this script chose
    span = con.execute("SELECT date_diff('microsecond', min(ts_start), max(ts_start)) + 1000000 "
                       "FROM base.requests_data").fetchone()[0]  # fmt: skip
    for k in range(1, rows // BASE):
        shift = k * span
        shifted = "ts_start + to_microseconds(?) AS ts_start, ts_end + to_microseconds(?) AS ts_end"
        copy = f"INSERT INTO requests_data SELECT * REPLACE ({shifted}) FROM base.requests_data"
        con.execute(copy, [shift, shift])
    con.close()
    return db


def generated(rows: int) -> Path:
    db = DATA / f"cache_{rows}rows.duckdb"
    if db.exists():
        return db
    DATA.mkdir(parents=True, exist_ok=True)
    log = db.with_suffix(".log")
    print(f"generating {rows:,} lines and reading them into {db.name}...", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "logan.generate", "--lines", str(rows), "-o", str(log)], check=True)
    logan.ingest([str(log)], str(db), format="combined_D", profile="puppet").store.close()
    log.unlink()
    return db


CPU: list[float] = []  # the median CPU seconds of the last timed() call


def timed(fn: Callable[[], object], runs: int) -> tuple[float, object]:
    """Median wall seconds of `runs` calls (and their median CPU seconds, every thread of
    this process, in CPU[0]: on a shared machine the wall time grows with others' load)."""
    times, cpu, out = [], [], None
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    CPU[:] = [statistics.median(cpu)]
    return statistics.median(times), out


def load_average() -> str:
    return f"load average {os.getloadavg()[0]:.1f}"


def python_ttl_replay(trace: cs.Trace, ttl: int) -> int:
    """The TTL replay as a plain loop (coalescing, one cache): hits."""
    fill: dict[int, int] = {}
    hits = 0
    for k, s, e in zip(trace.key.tolist(), trace.start.tolist(), trace.end.tolist(), strict=True):
        f = fill.get(k)
        if f is not None and s < f + ttl:
            hits += 1
        else:
            fill[k] = e
    return hits


def python_lru(keys: list[int], capacity: int) -> int:
    """Object-count LRU as an OrderedDict loop: hits."""
    cache: OrderedDict[int, None] = OrderedDict()
    hits = 0
    for k in keys:
        if k in cache:
            hits += 1
            cache.move_to_end(k)
        else:
            cache[k] = None
            if len(cache) > capacity:
                cache.popitem(last=False)
    return hits


def libcachesim_lru(keys: np.ndarray, capacity: int, runs: int) -> tuple[float, float] | None:
    """libCacheSim's LRU over the same keys (unit sizes, so its byte capacity counts objects):
    (seconds, hit ratio), or None when it is not installed."""
    try:
        import libcachesim as lcs
    except ImportError:
        return None
    rec = np.zeros(len(keys), dtype=[("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
    rec["t"], rec["id"], rec["size"], rec["next"] = np.arange(len(keys)) // 1000, keys + 1, 1, -1
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.oracleGeneral"
        rec.tofile(path)

        def run() -> float:
            reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE)
            return lcs.LRU(cache_size=capacity).process_trace(reader)[0]

        seconds, miss = timed(run, runs)
    return seconds, 1 - miss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--lru-objects", type=int, default=200, help="the LRU bound (objects)")
    a = ap.parse_args()
    db = store_for(a.rows)
    # The whole command as a user runs it; --keep-varying as the calls below: the generator
    # gives every answer a random size, so by default nearly every key would be left out.
    for workers in (1, 20):
        cmd = [sys.executable, "-m", "logan", "cache", "--db", str(db), "--ttl", TTLS, "--keep-varying"]
        cmd += ["--workers", str(workers)]
        wall, cpu, rss = fresh(cmd, a.runs)
        print(f"logan cache --db STORE --ttl {TTLS} --keep-varying --workers {workers}, fresh process: "
              f"{wall:.2f} s ({cpu:.2f} CPU-s), peak RSS {rss:,.0f} MB, {load_average()}")  # fmt: skip
    with logan.open(db, read_only=True) as store:
        n = store.con.execute("SELECT count(*) FROM requests").fetchone()[0]
        print(f"store: {db.name}, {n:,} requests; TTLs {TTLS}")
        for workers in (1, 20):
            s, ans = timed(lambda w=workers: ca.cache(store.con, by="indirector", ttl=TTLS, workers=w,
                                                      keep_varying=True), a.runs)  # fmt: skip
            n_cacheable = int(ans.totals["requests"].iloc[0])
            print(f"logan.cache(ttl={TTLS}, workers={workers}): {s:.2f} s ({CPU[0]:.2f} CPU-s, "
                  f"{load_average()}), {n_cacheable:,} cacheable requests replayed")  # fmt: skip
        s, loaded = timed(lambda: ca.load(store.con, by="indirector", keep_varying=True), a.runs)
    t = loaded.trace
    print(f"  of which reading the rows (load): {s:.2f} s ({CPU[0]:.2f} CPU-s, {load_average()})")
    for workers in (1, 20):
        m = cs.Model(ttl_us=60_000_000, workers=workers)
        s, _ = timed(lambda m=m: cs.replay(t, m), a.runs)
        print(f"  the replay alone, one TTL, workers={workers}: {s:.3f} s "
              f"({len(t) / s / 1e6:.0f} M requests/s, {CPU[0]:.3f} CPU-s)")  # fmt: skip

    m = min(1_000_000, len(t))
    one = cs.Trace(t.key[:m], t.client[:m], t.start[:m], t.end[:m], t.duration[:m], t.size[:m], t.keys)
    s_c, out = timed(lambda: cs.replay(one, cs.Model(ttl_us=60_000_000)), a.runs)
    s_py, hits = timed(lambda: python_ttl_replay(one, 60_000_000), 1)
    assert hits == int(((out == cs.HIT) | (out == cs.WAITED)).sum())
    print(f"TTL replay over {m:,} requests: compiled {s_c * 1e3:.0f} ms ({m / s_c / 1e6:.0f} M/s), "
          f"plain Python loop {s_py:.2f} s ({m / s_py / 1e6:.1f} M/s): {s_py / s_c:.0f}x")  # fmt: skip

    # LRU: no expiry, instant fills, so it is plain object-count LRU in every simulator
    lru = cs.Trace(one.key, one.client, one.start, one.start, one.duration, one.size, one.keys)
    model = cs.Model(ttl_us=2**62, max_objects=a.lru_objects)
    s_c, out = timed(lambda: cs.replay(lru, model), a.runs)
    ratio = float((out == cs.HIT).mean())
    s_py, hits = timed(lambda: python_lru(lru.key.tolist(), a.lru_objects), 1)
    assert hits == int((out == cs.HIT).sum())
    print(f"LRU of {a.lru_objects} objects over {m:,} requests (hit ratio {ratio:.3f}): "
          f"compiled {s_c * 1e3:.0f} ms ({m / s_c / 1e6:.0f} M/s), OrderedDict loop {s_py:.2f} s "
          f"({m / s_py / 1e6:.1f} M/s)")  # fmt: skip
    other = libcachesim_lru(lru.key, a.lru_objects, a.runs)
    if other is None:
        print("libCacheSim: not installed (pip install libcachesim) -- not compared")
    else:
        s_l, r_l = other
        print(f"libCacheSim LRU, same trace: {s_l * 1e3:.0f} ms ({m / s_l / 1e6:.0f} M/s, "
              f"hit ratio {r_l:.3f}); logan's replay takes {s_c / s_l:.2f}x its time")  # fmt: skip
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process: {peak:.0f} MiB; {load_average()}")


if __name__ == "__main__":
    main()
