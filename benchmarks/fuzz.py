"""The hostile-input checks of tests/test_hostile.py at volume: a million lines a dialect and
more, on demand (the normal suite reads a few thousand).

    python benchmarks/fuzz.py --lines 1000000                  # every dialect
    python benchmarks/fuzz.py --lines 200000 --dialect haproxy --seed 3

Lines are real ones (sample logs, the corpus) mutated as tests/fuzzing.py says, written in
chunks; each chunk is read by the C split, the SQL split and the regex, and all three must
give the same rows and rejects, with rows + rejects + events = lines. Prints the volume
reached and the time; exits 1 at the first disagreement, with the chunk kept to replay
(in benchmarks/data/fuzz/).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import reading_with  # noqa: E402
from fuzzing import SEEDS, check_counts, hostile_lines, read, seed_lines  # noqa: E402

CHUNK = 100_000
# where a chunk the readers disagree on is kept, to replay (not in the repository)
KEPT = Path(__file__).resolve().parent / "data" / "fuzz"


def fuzz(dialect: str, lines: int, seed: int, work: Path) -> int:
    fmt = SEEDS[dialect][0]
    done = 0
    k = 0
    while done < lines:
        n = min(CHUNK, lines - done)
        path = work / f"{dialect}_{seed}_{k}.log"
        path.write_bytes(b"\n".join(hostile_lines(dialect, n, seed * 1000 + k)) + b"\n")
        s, req, rej = read(path, fmt)
        check_counts(s, n)
        for reader in ("sql", "regex"):
            with pytest.MonkeyPatch.context() as mp, reading_with(mp, reader):
                s2, req2, rej2 = read(path, fmt)
            check_counts(s2, n)
            try:
                pd.testing.assert_frame_equal(req, req2, obj=f"rows by {reader}")
                pd.testing.assert_frame_equal(rej, rej2, obj=f"rejects by {reader}")
            except AssertionError:
                kept = KEPT / path.name
                KEPT.mkdir(parents=True, exist_ok=True)
                kept.write_bytes(path.read_bytes())
                print(f"{dialect}: the {reader} reader disagrees on {kept}", file=sys.stderr)
                raise
        path.unlink()
        done += n
        k += 1
    return done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=1_000_000, help="lines a dialect")
    ap.add_argument("--dialect", nargs="+", default=sorted(SEEDS), choices=sorted(SEEDS))
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    print("| dialect | lines | each read by | seconds |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for d in a.dialect:
            if not seed_lines(d, limit=1):
                print(f"| {d} | skipped: no seed lines (the corpus is absent) | | |")
                continue
            t0 = time.perf_counter()
            n = fuzz(d, a.lines, a.seed, Path(tmp))
            print(f"| {d} | {n:,} | C split, SQL split, regex | {time.perf_counter() - t0:.0f} |", flush=True)


if __name__ == "__main__":
    main()
