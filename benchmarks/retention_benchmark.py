"""What a store fed every night costs on disk and in query time, over weeks, with --keep.

    python benchmarks/retention_benchmark.py --per-day 1000000 --days 45 --keep 35
    python benchmarks/retention_benchmark.py --per-day 10000000 --days 1     # a day of 10 M

Each night is a day of `logan.generate --realistic` traffic (the same lines, their times
spread evenly over that day), ingested by `logan ingest --db` in a fresh process; then the
store is pruned to the last --keep days (Store.prune with that day's midnight as "now": the
command's --keep counts back from the clock). After every night: the store file's size; on
some nights `logan stats --db S --by indirector` in a fresh process, timed. Prints one row
per night shown.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest_benchmark import DATA, run  # noqa: E402

import logan  # noqa: E402

LOGAN = [sys.executable, "-c", "from logan.cli import program; program()"]
FIRST_DAY = datetime(2026, 1, 1)


def day_lines(per_day: int) -> list[tuple[str, str]]:
    """The lines of one day, cut around their time ([...]) so that any day can be written."""
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"realistic_{per_day}.log"
    if not path.exists():
        cmd = [sys.executable, "-m", "logan.generate", "--realistic", "--lines", str(per_day)]
        subprocess.run([*cmd, "-o", str(path)], check=True)
    out = []
    with path.open() as fh:
        for line in fh:
            head, _, rest = line.partition(" [")
            out.append((head, rest.partition("] ")[2]))
    return out


def write_day(lines: list[tuple[str, str]], day: datetime, path: Path) -> None:
    date = day.strftime("%d/%b/%Y")
    step = 86400 / len(lines)
    with path.open("w") as fh:
        for i, (head, tail) in enumerate(lines):
            s = int(i * step)
            fh.write(f"{head} [{date}:{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d} +0000] {tail}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-day", type=int, default=1_000_000)
    ap.add_argument("--days", type=int, default=45)
    ap.add_argument("--keep", type=int, default=35, help="days kept")
    ap.add_argument("--query-every", type=int, default=7, help="time the stats every N nights")
    args = ap.parse_args()
    lines = day_lines(args.per_day)
    print(f"{args.per_day:,} requests a day, --keep {args.keep}d")
    print("| night | requests held | store file | ingest (wall, peak RSS) | `stats --by indirector` |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        db, log = Path(tmp) / "nightly.duckdb", Path(tmp) / "day.log"
        for night in range(args.days):
            day = FIRST_DAY + timedelta(days=night)
            write_day(lines, day, log)
            wall, rss = run([*LOGAN, "ingest", str(log), "--format", "combined_D", "--db", str(db)])
            t0 = time.perf_counter()
            st = logan.open(db)
            st.prune(day + timedelta(days=1) - timedelta(days=args.keep))
            held = st.sql("SELECT count(*) n FROM requests")["n"][0]
            st.close()
            prune = time.perf_counter() - t0
            shown = night in (0, args.days - 1) or (night + 1) % args.query_every == 0
            if shown:
                q, _ = run([*LOGAN, "stats", "--db", str(db), "--by", "indirector"])
                size = db.stat().st_size / 1e9
                print(
                    f"| {night + 1} | {held:,} | {size:.2f} GB | {wall:.1f} s, {rss / 1e9:.2f} GB "
                    f"(+ prune {prune:.1f} s) | {q:.2f} s |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
