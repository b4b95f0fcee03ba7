"""How fast can an ingest be on this machine? The CPU it cannot avoid, shared over its cores.

    python benchmarks/ingest_bound.py --gb 1                  # every shape
    python benchmarks/ingest_bound.py --gb 1 --shape nginx_timed --runs 3

An ingest into a file does two things no ingest can skip: the reader turns the log's
bytes into fields (logan's reader thread: blocks, line ends, the C split, numbering the
request lines), and DuckDB writes the stored table (compression, the file). For each shape
of shapes_benchmark.py this measures, each in a fresh process:

- **logan ingest**: the whole command at default options, its wall time and its CPU (user
  and system, every thread);
- **reader alone**: the same command with every batch read and split as in an ingest, and
  nothing inserted (`READER_ONLY`), its CPU;
- **write floor**: the table that ingest stored, held in memory, written into a new file
  (as write_floor.py, with the ingest's `preserve_insertion_order = false`), its wall and
  CPU (median of --runs).

On C cores no ingest can take less wall time than (reader CPU + floor CPU) / C, even with
every core busy to the end and nothing classified: the bound. Its MB/s is the most any
ingest could read here; floor / bound is the best "floor / logan" ratio any ingest could
reach; bound / logan is how near logan comes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest_benchmark import DATA  # noqa: E402
from shapes_benchmark import SHAPES, commands, shape_log  # noqa: E402

# `logan ARGS` with every batch read and split by the reader thread as an ingest does it,
# then dropped: no INSERT, no classification, no checkpoint of rows.
READER_ONLY = """
import collections, sys
import logan.read.ingest as ingest

def dropped(st, r, batch, out):
    out.lines += batch.lines
    out.nbytes += batch.nbytes
    return collections.Counter()

ingest._ingest_batch = dropped
ingest._finish_summary = lambda *a, **k: None
from logan.cli import program
sys.argv = ["logan", *sys.argv[1:]]
program()
"""

# The stored table of argv[1] held in memory, then written into new files: wall and CPU.
FLOOR_CPU = """
import os, resource, sys, time, duckdb
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
con.execute("SET preserve_insertion_order = false")
con.execute(f"ATTACH '{sys.argv[1]}' AS src (READ_ONLY)")
con.execute("CREATE TABLE held AS SELECT * FROM src.requests_data")
for k in range(int(sys.argv[3])):
    target = os.path.join(sys.argv[2], f"floor{k}.duckdb")
    con.execute(f"ATTACH '{target}' AS dst")
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    con.execute("CREATE TABLE dst.t AS SELECT * FROM held")
    con.execute("DETACH dst")
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    print(f"{time.perf_counter() - t0:.3f} {cpu:.3f}")
    os.remove(target)
"""


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the process and all its threads, its stdout)."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err)
        out = proc.stdout.read() if proc.stdout else b""
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise RuntimeError(f"{cmd[:4]} failed: {err.read().decode(errors='replace')[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, out.decode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=3, help="runs of the write floor (median)")
    ap.add_argument("--shape", nargs="+", default=SHAPES, choices=SHAPES)
    a = ap.parse_args()
    cores = os.cpu_count() or 1
    print(f"\nlogs of about {a.gb:g} GB, {cores} cores; the floor a median of {a.runs}\n")
    print("| shape | logan: wall, CPU | reader CPU | floor: wall, CPU | bound | best MB/s | floor / bound "
          "| bound / logan |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for shape in a.shape:
        log, fmt, _ = shape_log(shape, a.gb)
        size = log.stat().st_size
        with tempfile.TemporaryDirectory(dir=DATA) as tmp:
            work = Path(tmp)
            ingest = commands(shape, log, fmt, None, work, stats=False)["logan ingest"]
            wall, cpu, _ = timed(ingest)
            reader = [sys.executable, "-c", READER_ONLY, *ingest[3:-1], str(work / "reader.duckdb")]
            _, reader_cpu, _ = timed(reader)
            _, _, said = timed([sys.executable, "-c", FLOOR_CPU, str(work / "s.duckdb"), tmp, str(a.runs)])
        runs = [tuple(map(float, line.split())) for line in said.split("\n") if line.strip()]
        floor_wall = statistics.median(w for w, _ in runs)
        floor_cpu = statistics.median(c for _, c in runs)
        bound = (reader_cpu + floor_cpu) / cores
        cells = [
            f"{wall:.2f} s, {cpu:.2f} s",
            f"{reader_cpu:.2f} s",
            f"{floor_wall:.2f} s, {floor_cpu:.2f} s",
            f"{bound:.2f} s",
            f"{size / 1e6 / bound:,.0f}",
            f"{floor_wall / bound:.2f}x",
            f"{bound / wall:.0%}",
        ]
        print(f"| {shape} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
