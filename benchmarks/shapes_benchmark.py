"""Ingest speed and memory on logs logan did not shape, beside the peers, in the same run.

    python benchmarks/shapes_benchmark.py --gb 1 --runs 3              # every shape
    python benchmarks/shapes_benchmark.py --gb 5 --runs 1 --shape realistic haproxy_httplog
    python benchmarks/shapes_benchmark.py --gb 1 --shape haproxy_httplog --stats   # against halog

The shapes: `realistic` (logan.generate --realistic: a large Puppet fleet, long queries,
node names that keep coming), `generator` (the sample traffic's compact lines) and the
real lines of ../shared/corpus scaled up (benchmarks/corpus_logs.py). Logs are made once
and cached under benchmarks/data/.

Every figure is a whole command as a user runs it, in a fresh process: `logan ingest LOG
--format F --db FILE` with the default profile (wall time until the process has exited,
checkpoint and close included; peak RSS of the process). Beside it, in the same run and
alternating with it: GoAccess on the same file where it can read the format, and the
write floor: DuckDB writing the very table that ingest stored into a new file, nothing to
parse (no ingest into a file can beat it). With --stats: `logan stats LOG` against
`halog -ut` on the HAProxy shape. Medians of --runs runs.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_logs  # noqa: E402
from ingest_benchmark import DATA, count_lines, run  # noqa: E402

# shape -> (--format for logan, GoAccess's --log-format/--date-format/--time-format or None)
GOACCESS = {
    "combined_D": ('%h %^[%d:%t %^] "%r" %s %b %D "%R" "%u"', "%d/%b/%Y", "%T"),
    "combined": ("COMBINED", None, None),
    "nginx_timed": ('%h [%d:%t %^] "%r" %s %^ %b %T "%^" %^ %^', "%d/%b/%Y", "%T"),
    "apache_extended": (
        '%h %^ %^ [%d %t.%^] "%r" %s %b "%R" "%u" %v %^ %^ %^ %^ %^ "%^" %^ %^ %^ %^ %^ %^ %D %^ %^ %^ %^ %^',
        "%Y-%m-%d",
        "%T",
    ),
}
SHAPES = ["realistic", "generator", *corpus_logs.SHAPES]

WRITE_FLOOR = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[2])
con.execute("SET preserve_insertion_order = false")
con.execute(f"ATTACH '{sys.argv[1]}' AS src (READ_ONLY)")
con.execute("CREATE TABLE t AS SELECT * FROM src.requests_data")
con.execute("CHECKPOINT")
"""


def shape_log(shape: str, gb: float) -> tuple[Path, str, str | None]:
    """(the log, logan's --format for it, the GoAccess key) for a shape, made once."""
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"shape_{shape}_{gb:g}GB.log"
    if shape in ("realistic", "generator"):
        fmt, goaccess = "combined_D", "combined_D"
    else:
        s = corpus_logs.SHAPES[shape]
        fmt = s.format
        goaccess = {
            "apache_combined": "combined",
            "apache_escaped": "combined",
            "apache_extended": "apache_extended",
            "nginx_timed": "nginx_timed",
        }.get(shape)
    if not path.exists():
        print(f"making {path.name}...", file=sys.stderr)
        tmp = path.with_suffix(".part")
        if shape in ("realistic", "generator"):
            per_line = 250 if shape == "realistic" else 139
            cmd = [
                sys.executable,
                "-m",
                "logan.generate",
                "--lines",
                str(int(gb * 1e9 / per_line)),
                "-o",
                str(tmp),
            ]
            cmd += ["--realistic"] if shape == "realistic" else []
        else:
            cmd = [
                sys.executable,
                str(Path(corpus_logs.__file__)),
                "--shape",
                shape,
                "--gb",
                str(gb),
                "-o",
                str(tmp),
            ]
        subprocess.run(cmd, check=True)
        tmp.rename(path)
    return path, fmt, goaccess


def commands(shape: str, log: Path, fmt: str, goaccess: str | None, work: Path, stats: bool) -> dict:
    logan = [sys.executable, "-c", "from logan.cli import program; program()"]
    dialect = ["--dialect", corpus_logs.FORMAT_DIALECT[shape]] if shape in corpus_logs.FORMAT_DIALECT else []
    if stats:
        found = {"logan stats": [*logan, "stats", str(log), "--format", fmt, *dialect]}
        if shutil.which("halog") and shape.startswith("haproxy"):
            found["halog -ut"] = ["sh", "-c", f"halog -ut < {log}"]
        return found
    found = {
        "logan ingest": [
            *logan,
            "ingest",
            str(log),
            "--format",
            fmt,
            *dialect,
            "--db",
            str(work / "s.duckdb"),
        ]
    }
    if goaccess and shutil.which("goaccess"):
        log_format, date, tm = GOACCESS[goaccess]
        dates = ["--date-format", date, "--time-format", tm] if date else []
        out = ["-o", str(work / "g.json"), "--no-progress"]
        found["goaccess"] = ["goaccess", str(log), "--log-format", log_format, *dates, *out]
    found["write floor"] = [
        sys.executable,
        "-c",
        WRITE_FLOOR,
        str(work / "s.duckdb"),
        str(work / "floor.duckdb"),
    ]
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shape", nargs="+", default=SHAPES, choices=SHAPES)
    ap.add_argument("--stats", action="store_true", help="`logan stats LOG` against halog -ut")
    ap.add_argument(
        "--peer-runs", type=int, help="runs of GoAccess (default: --runs; it takes minutes a GB; 0: none)"
    )
    a = ap.parse_args()
    print(f"\nmedians of {a.runs} runs, logs of about {a.gb:g} GB; every command in a fresh process\n")
    print("| shape | tool | seconds | MB/s | lines/s | peak RSS | runs |")
    print("|---|---|---|---|---|---|---|")
    for shape in a.shape:
        log, fmt, goaccess = shape_log(shape, a.gb)
        size, lines = log.stat().st_size, count_lines(log)
        with tempfile.TemporaryDirectory(dir=DATA) as tmp:
            work = Path(tmp)
            cmds = commands(shape, log, fmt, goaccess, work, a.stats)
            walls: dict[str, list[float]] = {n: [] for n in cmds}
            rss = dict.fromkeys(cmds, 0)
            for k in range(a.runs):
                for name, cmd in cmds.items():  # in this order: the floor copies ingest's store
                    if name == "goaccess" and k >= (a.runs if a.peer_runs is None else a.peer_runs):
                        continue
                    for db in ("s.duckdb", "floor.duckdb") if name == "logan ingest" else ("floor.duckdb",):
                        (work / db).unlink(missing_ok=True)
                    wall, peak = run(cmd)
                    walls[name].append(wall)
                    rss[name] = max(rss[name], peak)
        for name, w in walls.items():
            if not w:  # a peer not run (--peer-runs 0)
                continue
            wall = statistics.median(w)
            each = ", ".join(f"{x:.2f}" for x in w)
            print(f"| {shape} | {name} | {wall:.2f} | {size / 1e6 / wall:,.0f} | {lines / wall:,.0f} "
                  f"| {rss[name] / 2**20:,.0f} MiB | {each} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
