"""Ingest MB/s of an HAProxy httplog against the Apache combined_D path on generated logs of
the same size, and `halog -ut` (HAProxy's own log analyser) on the HAProxy log, in one run.

    python3 benchmarks/bench_haproxy.py [--mb 200] [--runs 3] [--workdir /tmp/logan-bench]

Both logs come from logan's generator (the same requests: logan.generate for Apache,
benchmarks/gen_haproxy.py for HAProxy, with an rsyslog prefix) and are cached in workdir.
Each ingest runs in a fresh process into a new on-disk store, classification off; the runs
alternate between the tools so that a busy machine slows all of them alike. Prints the
median MB/s of each and the ratios.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]

from gen_haproxy import write as write_haproxy  # noqa: E402

from logan.generate import write as write_apache  # noqa: E402

INGEST = """
import sys, time
from logan.ingest import ingest
t = time.perf_counter()
s = ingest([sys.argv[1]], store=sys.argv[2], format=sys.argv[3], profile="none")
print(time.perf_counter() - t, s.rows, s.rejects, s.events)
"""


def make_logs(workdir: Path, mb: float) -> tuple[Path, Path]:
    workdir.mkdir(parents=True, exist_ok=True)
    hap, apache = workdir / f"haproxy_{mb:g}mb.log", workdir / f"apache_{mb:g}mb.log"
    if not hap.exists():
        with open(hap, "w", encoding="utf-8") as fh:
            write_haproxy(fh, mb=mb)
    if not apache.exists():
        lines = int(mb * 1e6 / 138)  # the generator's combined_D lines average 138 bytes
        with open(apache, "w", encoding="utf-8") as fh:
            write_apache(lines, fh)
    return hap, apache


def ingest_seconds(path: Path, fmt: str, workdir: Path) -> float:
    db = workdir / "bench.duckdb"
    for p in workdir.glob("bench.duckdb*"):
        p.unlink()
    out = subprocess.run(
        [sys.executable, "-c", INGEST, str(path), str(db), fmt],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    ).stdout.splitlines()[-1].split()  # the last line: anything before it is progress
    return float(out[0])


def halog_seconds(path: Path) -> float:
    t = time.perf_counter()
    with open(path, "rb") as fh:
        subprocess.run(["halog", "-ut"], stdin=fh, check=True, capture_output=True)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/logan-bench"))
    a = ap.parse_args(argv)
    hap, apache = make_logs(a.workdir, a.mb)
    size = {hap: hap.stat().st_size / 1e6, apache: apache.stat().st_size / 1e6}
    times: dict[str, list[float]] = {"apache": [], "haproxy": [], "halog": []}
    has_halog = shutil.which("halog") is not None
    for _ in range(a.runs):
        times["apache"].append(ingest_seconds(apache, "apache:combined_D", a.workdir))
        times["haproxy"].append(ingest_seconds(hap, "haproxy:httplog", a.workdir))
        if has_halog:
            times["halog"].append(halog_seconds(hap))
    rate = {
        "apache": size[apache] / statistics.median(times["apache"]),
        "haproxy": size[hap] / statistics.median(times["haproxy"]),
    }
    print(f"apache combined_D  {size[apache]:7.1f} MB  {rate['apache']:7.1f} MB/s  (logan)")
    print(f"haproxy httplog    {size[hap]:7.1f} MB  {rate['haproxy']:7.1f} MB/s  (logan)")
    print(f"logan haproxy / apache: {rate['haproxy'] / rate['apache']:.2f}")
    if has_halog:
        rate["halog"] = size[hap] / statistics.median(times["halog"])
        print(f"halog -ut          {size[hap]:7.1f} MB  {rate['halog']:7.1f} MB/s")
        print(f"halog / logan haproxy: {rate['halog'] / rate['haproxy']:.1f}x")
    else:
        print("halog not found (Debian package haproxy): no halog figure")


if __name__ == "__main__":
    main()
