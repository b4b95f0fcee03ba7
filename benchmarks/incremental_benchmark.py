"""What a re-run costs: the nightly job's ingest of what was appended since the last run.

    python benchmarks/incremental_benchmark.py --gb 1 --runs 3
    python benchmarks/incremental_benchmark.py --gb 1 --shape haproxy_httplog

A log of the shape (benchmarks/shapes_benchmark.py makes and caches it) is cut in two:
all but its last 1% is ingested into a new store; then that last 1% is appended and
`logan ingest` runs again over the whole file, as cron would: it must read only the new
1%. The appended lines are the log's own continuation (later times, and on a log of
hashed paths, paths and routes the store has not seen), not lines it holds already.
Beside it, in the same run: the full ingest, a plain ingest of the appended 1% alone
into a new store (what reading those lines costs with no registry at all), and the same
command once more with nothing appended (what any re-run costs before it reads a line:
starting Python, the imports, opening the store). Every figure is the whole command in a
fresh process, wall time and peak RSS, median of --runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest_benchmark import run  # noqa: E402
from shapes_benchmark import SHAPES, shape_log  # noqa: E402

LOGAN = [sys.executable, "-c", "from logan.cli import program; program()"]


def tail_at(log: Path, share: float) -> int:
    """Where the last `share` of the log's bytes begins, at the start of a line."""
    size = log.stat().st_size
    with log.open("rb") as fh:
        fh.seek(max(0, size - int(size * share)))
        return fh.tell() + fh.read(1 << 20).index(b"\n") + 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--shape", default="realistic", choices=SHAPES)
    ap.add_argument("--share", type=float, default=0.01, help="what is appended, as a share of the log")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    source, fmt, _ = shape_log(args.shape, args.gb)
    cut = tail_at(source, args.share)
    with source.open("rb") as fh:
        fh.seek(cut)
        appended = fh.read()
    figures: dict[str, list[tuple[float, int]]] = {"full": [], "append": [], "alone": [], "nothing": []}
    with tempfile.TemporaryDirectory(dir=source.parent) as tmp:
        work = Path(tmp)
        for _ in range(args.runs):
            log, db = work / "a.log", work / "a.duckdb"
            alone_log, alone_db = work / "b.log", work / "b.duckdb"
            for p in (db, alone_db, Path(f"{db}.wal"), Path(f"{alone_db}.wal")):
                p.unlink(missing_ok=True)
            shutil.copyfile(source, log)
            os.truncate(log, cut)
            alone_log.write_bytes(appended)
            figures["full"].append(run([*LOGAN, "ingest", str(log), "--format", fmt, "--db", str(db)]))
            with log.open("ab") as fh:
                fh.write(appended)
            figures["append"].append(run([*LOGAN, "ingest", str(log), "--format", fmt, "--db", str(db)]))
            figures["nothing"].append(run([*LOGAN, "ingest", str(log), "--format", fmt, "--db", str(db)]))
            figures["alone"].append(
                run([*LOGAN, "ingest", str(alone_log), "--format", fmt, "--db", str(alone_db)])
            )
    full = statistics.median(w for w, _ in figures["full"])
    print(f"{args.shape}, {cut / 1e9:.2f} GB, +{len(appended) / 1e6:.1f} MB appended (the log's next lines)")
    print("| command | wall (median) | share of the full ingest | peak RSS |")
    print("|---|---|---|---|")
    names = {
        "full": "ingest the whole log into a new store",
        "append": f"ingest it again after {args.share:.0%} was appended",
        "alone": "ingest the appended lines alone, into a new store",
        "nothing": "ingest it again with nothing appended",
    }
    for key, label in names.items():
        wall = statistics.median(w for w, _ in figures[key])
        rss = statistics.median(r for _, r in figures[key])
        print(f"| {label} | {wall:.2f} s | {wall / full:.1%} | {rss / 1e9:.2f} GB |")


if __name__ == "__main__":
    main()
