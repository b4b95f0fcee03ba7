"""Ingest throughput and memory: logan against GoAccess and a plain Python regex loop.

    python benchmarks/ingest_benchmark.py --gb 1 --runs 3
    python benchmarks/ingest_benchmark.py --gb 5 --runs 1 --only logan     # RSS at 5 GB

Generates a combined_D log of the asked size with logan's own generator (cached under
benchmarks/data/), ingests it into an on-disk DuckDB file in a fresh process per run, and
prints the median wall time, MB/s, lines/s and peak RSS of each tool measured in the same
run, and the ratio against each peer. The machine is shared: trust ratios over absolutes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
LINE_BYTES = 138  # average line length of the generator's combined_D output

# GoAccess's spelling of combined_D: %D is microseconds in both.
GOACCESS_FORMAT = '%h %^[%d:%t %^] "%r" %s %b %D "%R" "%u"'

PY_LOOP = r"""
import re, sys
pat = re.compile(r'^(\S+) (\S+) (\S+) \[([^\]]+)\] "((?:[^"\\]|\\.)*)" (\d{3}|-) (\d+|-) (\d+|-) "((?:[^"\\]|\\.)*)" "((?:[^"\\]|\\.)*)"$')
n = total = 0
with open(sys.argv[1], encoding="utf-8", errors="backslashreplace") as fh:
    for line in fh:
        m = pat.match(line.rstrip("\r\n"))
        if m:
            n += 1
            total += int(m.group(8)) if m.group(8) != "-" else 0
print(n, total)
"""


def log_file(gb: float) -> Path:
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"combined_D_{gb:g}GB.log"
    if not path.exists():
        lines = int(gb * 1e9 / LINE_BYTES)
        print(f"generating {path} ({lines:,} lines)...", file=sys.stderr)
        tmp = path.with_suffix(".part")
        subprocess.run([sys.executable, "-m", "logan.generate", "--lines", str(lines), "-o", str(tmp)], check=True)
        tmp.rename(path)
    return path


def run(cmd: list[str], **kw) -> tuple[float, int]:  # noqa: ANN003
    """Wall seconds and peak RSS (bytes) of one command run in a fresh process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{cmd[0]} failed: {proc.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_maxrss * 1024


def tools(log: Path, workdir: Path) -> dict[str, list[str]]:
    db = workdir / "bench.duckdb"
    found = {
        "logan": [sys.executable, "-c", "from logan.cli import main; main()", "ingest", str(log),
                  "--db", str(db), "--format", "combined_D", "--profile", "none"],
        "python-re": [sys.executable, "-c", PY_LOOP, str(log)],
    }
    if shutil.which("goaccess"):
        found["goaccess"] = ["goaccess", str(log), "--log-format", GOACCESS_FORMAT, "--date-format", "%d/%b/%Y",
                             "--time-format", "%T", "-o", str(workdir / "goaccess.json"), "--no-progress"]
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", nargs="*", help="tools to run (logan, goaccess, python-re)")
    a = ap.parse_args()
    log = log_file(a.gb)
    size = log.stat().st_size
    with open(log, "rb") as fh:
        lines = sum(buf.count(b"\n") for buf in iter(lambda: fh.read(1 << 24), b""))
    results: dict[str, tuple[float, int]] = {}
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        for name, cmd in tools(log, Path(tmp)).items():
            if a.only and name not in a.only:
                continue
            walls, rss = [], []
            for _ in range(a.runs):
                (Path(tmp) / "bench.duckdb").unlink(missing_ok=True)
                w, r = run(cmd)
                walls.append(w)
                rss.append(r)
            results[name] = (statistics.median(walls), max(rss))
            print(f"{name:10s} runs={[round(w, 2) for w in walls]}", file=sys.stderr)
    print(f"\ninput: {log.name}, {size / 1e6:,.0f} MB, {lines:,} lines, median of {a.runs} runs\n")
    print(f"| tool | seconds | MB/s | lines/s | peak RSS |")
    print("|---|---|---|---|---|")
    for name, (wall, rss) in results.items():
        print(f"| {name} | {wall:.2f} | {size / 1e6 / wall:,.0f} | {lines / wall:,.0f} | {rss / 2**20:,.0f} MiB |")
    if "logan" in results:
        for name, (wall, _) in results.items():
            if name != "logan":
                print(f"\nlogan is {wall / results['logan'][0]:.1f}x the speed of {name}")


if __name__ == "__main__":
    main()
