"""Ingest throughput and memory of every dialect, against the peers measured in the same run.

    python benchmarks/ingest_benchmark.py --gb 1 --runs 3                 # Apache combined_D
    python benchmarks/ingest_benchmark.py --gb 0.2 --dialect apache nginx varnish haproxy
    python benchmarks/ingest_benchmark.py --gb 5 --runs 1 --only logan    # RSS at 5 GB
    python benchmarks/ingest_benchmark.py --gb 1 --stats                  # logan stats FILE, end to end

Generates each dialect's log of the asked size with logan's own generator (the same
requests in each server's layout; cached under benchmarks/data/), runs every tool in a
fresh process per run, alternating tools so a busy machine slows all alike, and prints the
median wall time, MB/s, lines/s and peak RSS, and the ratios. Peers: GoAccess (Debian
package goaccess) and a plain Python regex loop on the Apache log, `halog -ut` (Debian
package haproxy) on the HAProxy log. logan ingests into an on-disk DuckDB file,
classification off (with --stats: `logan stats FILE`, ingest and report, profile auto).
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

from logan.generate import FORMATTERS

DATA = Path(__file__).resolve().parent / "data"

# GoAccess's spelling of combined_D: %D is microseconds in both.
GOACCESS_FORMAT = '%h %^[%d:%t %^] "%r" %s %b %D "%R" "%u"'

PY_LOOP = r"""
import re, sys
q = r'"((?:[^"\\]|\\.)*)"'
pat = re.compile(r'^(\S+) (\S+) (\S+) \[([^\]]+)\] ' + q + r' (\d{3}|-) (\d+|-) (\d+|-) ' + q + ' ' + q + '$')
n = total = 0
with open(sys.argv[1], encoding="utf-8", errors="backslashreplace") as fh:
    for line in fh:
        m = pat.match(line.rstrip("\r\n"))
        if m:
            n += 1
            total += int(m.group(8)) if m.group(8) != "-" else 0
print(n, total)
"""


DUCKDB_FLOOR = """
import sys, duckdb
con = duckdb.connect(sys.argv[2])
con.execute("SET preserve_insertion_order = false")
con.execute("CREATE OR REPLACE TABLE raw AS SELECT line FROM read_csv(?, columns={'line': 'VARCHAR'}, "
            "delim='\\0', quote='', escape='', header=false, auto_detect=false)", [sys.argv[1]])
"""


def log_file(dialect: str, gb: float) -> Path:
    """The generated log of about `gb` GB in the dialect's layout (made once, then reused)."""
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"{dialect}_{gb:g}GB.log"
    if path.exists():
        return path
    sample = subprocess.run(
        [sys.executable, "-m", "logan.generate", "--dialect", dialect, "--lines", "20000"],
        check=True, capture_output=True,
    ).stdout  # fmt: skip
    lines = int(gb * 1e9 / (len(sample) / 20000))
    print(f"generating {path} ({lines:,} lines)...", file=sys.stderr)
    tmp = path.with_suffix(".part")
    subprocess.run(
        [sys.executable, "-m", "logan.generate", "--dialect", dialect, "--lines", str(lines), "-o", str(tmp)],
        check=True,
    )
    tmp.rename(path)
    return path


def run(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one command run in a fresh process.

    The peak is GNU time's, taken where the command starts from a small process: the
    ru_maxrss that wait4 gives for a child starts at what its parent held when it forked, so a
    benchmark that has opened a store itself would count its own memory as the command's."""
    gnu_time = "/usr/bin/time" if Path("/usr/bin/time").exists() else None
    timed = [gnu_time, "-f", "peak-rss-kb %M", *cmd] if gnu_time else cmd
    t0 = time.perf_counter()
    proc = subprocess.Popen(timed, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{cmd[0]} failed: {err[-2000:]}")
    said = [line for line in err.splitlines() if line.startswith("peak-rss-kb ")]
    return wall, int(said[-1].split()[1]) * 1024 if said else usage.ru_maxrss * 1024


def tools(dialect: str, log: Path, workdir: Path, stats: bool) -> dict[str, list[str]]:
    preset = FORMATTERS[dialect][0]
    logan = [sys.executable, "-c", "from logan.cli import program; program()"]
    if stats:
        found = {f"logan stats ({dialect})": [*logan, "stats", str(log), "--format", preset]}
    else:
        found = {
            f"logan ({dialect})": [*logan, "ingest", str(log), "--db", str(workdir / "bench.duckdb"),
                                   "--format", preset, "--profile", "none"],
        }  # fmt: skip
    if dialect == "apache":
        found["python-re"] = [sys.executable, "-c", PY_LOOP, str(log)]
        # The floor: DuckDB itself writing the raw lines, unparsed, into a file.
        found["duckdb raw lines"] = [sys.executable, "-c", DUCKDB_FLOOR, str(log), str(workdir / "raw.db")]
        if shutil.which("goaccess"):
            found["goaccess"] = ["goaccess", str(log), "--log-format", GOACCESS_FORMAT, "--date-format",
                                 "%d/%b/%Y", "--time-format", "%T", "-o", str(workdir / "goaccess.json"),
                                 "--no-progress"]  # fmt: skip
    if dialect == "haproxy" and shutil.which("halog"):
        found["halog -ut"] = ["sh", "-c", f"halog -ut < {log}"]
    return found


def count_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(buf.count(b"\n") for buf in iter(lambda: fh.read(1 << 24), b""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dialect", nargs="+", default=["apache"], choices=sorted(FORMATTERS))
    ap.add_argument("--only", nargs="*", help="tool names to run (logan, goaccess, python-re, duckdb, halog)")
    ap.add_argument("--stats", action="store_true", help="time `logan stats FILE` instead of ingest")
    a = ap.parse_args()
    logs = {d: log_file(d, a.gb) for d in a.dialect}
    results: dict[str, tuple[float, int, Path]] = {}
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        cmds = {
            name: (cmd, log)
            for d, log in logs.items()
            for name, cmd in tools(d, log, Path(tmp), a.stats).items()
            if not a.only or name.split(" ")[0] in a.only
        }
        walls: dict[str, list[float]] = {n: [] for n in cmds}
        rss: dict[str, int] = dict.fromkeys(cmds, 0)
        for _ in range(a.runs):
            for name, (cmd, _log) in cmds.items():
                for db in ("bench.duckdb", "raw.db"):
                    (Path(tmp) / db).unlink(missing_ok=True)
                w, r = run(cmd)
                walls[name].append(w)
                rss[name] = max(rss[name], r)
        for name, (_cmd, log) in cmds.items():
            results[name] = (statistics.median(walls[name]), rss[name], log)
            print(f"{name:22s} runs={[round(w, 2) for w in walls[name]]}", file=sys.stderr)
    print(f"\nmedian of {a.runs} runs, logs of about {a.gb:g} GB made by logan.generate\n")
    print("| tool | input | seconds | MB/s | lines/s | peak RSS |")
    print("|---|---|---|---|---|---|")
    sizes = {log: (log.stat().st_size, count_lines(log)) for log in logs.values()}
    for name, (wall, r, log) in results.items():
        size, n = sizes[log]
        print(
            f"| {name} | {log.name} | {wall:.2f} | {size / 1e6 / wall:,.0f} | {n / wall:,.0f} "
            f"| {r / 2**20:,.0f} MiB |"
        )
    mbs = {name: sizes[log][0] / 1e6 / wall for name, (wall, _, log) in results.items()}
    base = next((n for n in mbs if n.startswith("logan") and "apache" in n), None)
    print()
    for name, v in mbs.items():
        if base and name != base:
            print(f"- {name}: {v / mbs[base]:.2f}x the MB/s of {base}")


if __name__ == "__main__":
    main()
