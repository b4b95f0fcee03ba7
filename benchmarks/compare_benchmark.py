"""How long `logan compare` and `logan plot` take on a store of millions of requests, and
where the time goes.

    python benchmarks/compare_benchmark.py --rows 2000000 --runs 3

Builds (once) a store from a generated Puppet log of ROWS lines (benchmarks/data/), then
times in a fresh process per run (what a user waits for, Python start-up included):
`logan compare --db STORE` of the first half of the log against the second, and
`logan plot histogram|heatmap|pareto --db STORE`; then, on an open store, the stages of
compare: the statistics of both sides (SQL), reading the requests themselves (Arrow) and
the tests (scipy). Medians printed, with the peak memory of the fresh processes.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from logan.answer import compare as cmp
from logan.read.ingest import ingest
from logan.store import open_store

DATA = Path(__file__).resolve().parent / "data"


def store_for(rows: int) -> Path:
    db = DATA / f"compare_{rows}.duckdb"
    if not db.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        log = db.with_suffix(".log")
        subprocess.run(
            [sys.executable, "-m", "logan.generate", "--lines", str(rows), "-o", str(log)], check=True
        )
        s = ingest([str(log)], store=str(db), format="combined_D", profile="puppet")
        s.store.close()
        log.unlink()
    return db


def timed(args: list[str], runs: int) -> tuple[float, float, float]:
    """Median wall and CPU seconds of `args` in a fresh process, and its largest peak memory
    (MB), as /usr/bin/time measures them: a child forked from this process would count the
    memory this process had at the fork. CPU time is the fairer figure on a shared machine."""
    wall, cpu, peak = [], [], 0.0
    with tempfile.NamedTemporaryFile("r") as report:
        for _ in range(runs):
            subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", report.name, *args], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
            e, u, s, m = report.read().split()[-4:]
            report.seek(0)
            wall.append(float(e))
            cpu.append(float(u) + float(s))
            peak = max(peak, int(m) / 1024)
    return statistics.median(wall), statistics.median(cpu), peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--by", default="indirector")
    a = ap.parse_args()
    db = store_for(a.rows)
    with open_store(db, read_only=True) as store:
        first, last = store.con.execute("SELECT min(ts_start), max(ts_start) FROM requests").fetchone()
        n = store.con.execute("SELECT count(*) FROM requests").fetchone()[0]
    mid = (first + (last - first) / 2).isoformat()
    print(f"{n:,} requests, {first} .. {last}; A before {mid}, B after; --by {a.by}")
    logan = [sys.executable, "-m", "logan"]
    print(f"{'fresh process':28s}{'wall':>8s}{'CPU':>8s}{'peak':>9s}")
    with tempfile.TemporaryDirectory() as tmp:
        commands = {"logan compare": ["compare", "--a-until", mid, "--b-since", mid]}
        for kind in ("histogram", "heatmap", "pareto"):
            commands[f"logan plot {kind}"] = ["plot", kind, "-o", str(Path(tmp) / f"{kind}.png")]
        for name, args in commands.items():
            wall, cpu, peak = timed([*logan, *args, "--db", str(db), "--by", a.by], a.runs)
            print(f"{name:28s}{wall:7.2f}s{cpu:7.2f}s{peak:6.0f} MB")
    print("compare on an open store, by stage (CPU seconds):")
    with open_store(db, read_only=True) as store:
        a_side, b_side = cmp.Side(store.con, {"until": mid}), cmp.Side(store.con, {"since": mid})
        stages = {
            "statistics of both sides (SQL)": lambda: (cmp._stats(a_side, a.by), cmp._stats(b_side, a.by)),
            "counts per duration, both sides (SQL)": lambda: [
                cmp.duration_counts(side, a.by) for side in (a_side, b_side)
            ],
        }
        found = {}
        for name, run in stages.items():
            t = time.process_time()
            found[name] = run()
            print(f"  {name:36s}{time.process_time() - t:6.2f} s")
        counts = found["counts per duration, both sides (SQL)"]
        t = time.process_time()
        cmp._tests(counts, [c for c in counts[0].columns if c not in ("duration_us", "n")], cmp.Criteria())
        print(f"  {'Mann-Whitney U per group (numpy)':36s}{time.process_time() - t:6.2f} s")


if __name__ == "__main__":
    main()
