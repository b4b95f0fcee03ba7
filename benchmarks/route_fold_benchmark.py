"""The route fold alone (logan.read.classify.collapse_routes), on a copy of a store.

    python benchmarks/route_fold_benchmark.py STORE.duckdb [--runs 3]

The fold learns the route templates once an ingest's rows are in; on a log where every
path is its own (the nginx_timed shape: 7.1 M lines, 5.2 M routes a GB) it is a third of
the ingest. This times it apart from the batches: each run copies the store, empties its
`routes`, and folds every route again under the settings the ingest folds with (its
memory limit, its kept block memory, its optimizer settings), as the ingest's first fold
of such a store does. It prints the fold's time, its CPU, DuckDB's time per statement
and a digest of the templates, so that two versions of the code can be compared on the
same store: a component figure, not a whole command (shapes_benchmark.py has those).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from logan.read import classify, ingest  # noqa: E402
from logan.store import DISABLED_OPTIMIZERS  # noqa: E402


class _Timed:
    """A connection whose statements are timed, by their first 80 characters."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con
        self.seconds: dict[str, float] = collections.defaultdict(float)

    def execute(self, sql: str, *args: object) -> duckdb.DuckDBPyConnection:
        started = time.perf_counter()
        out = self._con.execute(sql, *args)
        self.seconds[re.sub(r"\s+", " ", sql).strip()[:80]] += time.perf_counter() - started
        return out

    def __getattr__(self, name: str) -> object:
        return getattr(self._con, name)


def fold_once(store: Path, work: Path) -> tuple[float, float, dict[str, float], str]:
    """Wall and CPU seconds of one fold of every route of a copy of `store`, the time of
    each statement, and a digest of the (route, template) pairs it wrote."""
    copy = work / "fold.duckdb"
    shutil.copy(store, copy)
    con = duckdb.connect(str(copy))
    con.execute("SET preserve_insertion_order = false")
    con.execute("DELETE FROM routes")
    con.execute("DELETE FROM route_params")
    con.execute("DELETE FROM logan_meta WHERE key IN (?, ?)", [classify.ROUTES_FOLDED, classify.ROUTES_ALONE])
    con.execute("CHECKPOINT")
    # what the ingest sets before its batches (logan.read.ingest.ingest)
    con.execute(f"SET disabled_optimizers = '{DISABLED_OPTIMIZERS}'")
    con.execute(f"SET memory_limit = '{ingest.INGEST_MEMORY_MB}MB'")
    ingest._keep_block_memory(con)
    timed = _Timed(con)
    cpu, started = os.times(), time.perf_counter()
    classify.collapse_routes(timed)  # type: ignore[arg-type]
    wall, after = time.perf_counter() - started, os.times()
    con.execute("RESET memory_limit")
    digest = con.execute(
        "SELECT count(*) || ' routes, ' || count(DISTINCT template) || ' templates, digest '"
        " || sum(hash(route || chr(0) || template)) FROM routes"
    ).fetchone()[0]
    con.close()
    copy.unlink()
    return wall, (after.user - cpu.user) + (after.system - cpu.system), timed.seconds, digest


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("store", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    walls = []
    with tempfile.TemporaryDirectory(dir=args.store.parent) as work:
        for _ in range(args.runs):
            wall, cpu, seconds, digest = fold_once(args.store, Path(work))
            walls.append(wall)
            print(f"fold {wall:.2f} s, CPU {cpu:.2f} s; {digest}")
    print(f"median of {args.runs}: {statistics.median(walls):.2f} s; the last run's statements:")
    for sql, spent in sorted(seconds.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {spent:6.2f} s  {sql}")


if __name__ == "__main__":
    main()
