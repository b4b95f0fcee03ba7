"""`logan stats --view NAME` on a small generated log; every printed number is recomputed
here from the generator's own values (numpy percentiles, plain Python counts)."""

from __future__ import annotations

import csv
import io
import json
import random
import re
import subprocess
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from logan.answer.stats import format_us
from logan.cli import app

T0 = datetime(2020, 3, 1, 12, 0, 0)
# The slowest request carries hostile text: rich markup, Markdown and a spreadsheet formula.
HOSTILE_PATH = "/x/[bold]b_o*o[/bold]"
HOSTILE_QUERY = "=1+2"
REL, ABS = 1e-9, 1e-10  # JSON carries 10 decimals (pandas' to_json)


def make_requests(n: int = 240, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        method = rng.choice(["GET"] * 6 + ["HEAD", "POST"])
        item = rng.randrange(12)
        out.append({
            "ts": T0 + timedelta(seconds=5 * i),
            "method": method,
            "path": f"/api/items/{item}",
            "query": None,
            "status": rng.choice([200] * 8 + [304, 404, 500]),
            "bytes": 100 + item,
            "us": int(rng.lognormvariate(9, 1.3)) + 1,  # about 8 ms, a long tail
        })  # fmt: skip
    out[17] |= {"method": "GET", "path": HOSTILE_PATH, "query": HOSTILE_QUERY,
                "status": 200, "us": 99_000_000}  # fmt: skip
    return out


def log_line(r: dict) -> str:
    uri = r["path"] + (f"?{r['query']}" if r["query"] else "")
    size = "-" if r["status"] == 304 else str(r["bytes"])
    return (
        f'10.0.0.{r["bytes"] % 7} - - [{r["ts"]:%d/%b/%Y:%H:%M:%S} +0000] "{r["method"]} {uri} '
        f'HTTP/1.1" {r["status"]} {size} {r["us"]} "-" "agent"\n'
    )


REQUESTS = make_requests()
DURATIONS = np.array([r["us"] for r in REQUESTS], float)


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> Path:  # noqa: ANN001
    path = tmp_path_factory.mktemp("views") / "access.log"
    path.write_text("".join(log_line(r) for r in REQUESTS))
    return path


def run(log: Path, *args: str) -> str:
    result = CliRunner().invoke(app, ["stats", str(log), "--format", "combined_D", *args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def rows_of(text: str) -> list[list[str]]:
    """The cells of a rich table, row by row (box characters and padding removed)."""
    return [[c.strip() for c in line.strip("│┃ ").split("│")] for line in text.splitlines()
            if line.startswith("│")]  # fmt: skip


# --- percentiles ----------------------------------------------------------------------------
def test_percentiles_json_equal_numpy(log: Path) -> None:
    got = json.loads(run(log, "--view", "percentiles", "-o", "json"))[0]
    assert got["requests"] == len(REQUESTS)
    for q in (50, 66, 75, 80, 90, 95, 98, 99, 100):
        assert got[f"p{q}_us"] == pytest.approx(np.percentile(DURATIONS, q), rel=REL, abs=ABS), q


def test_percentiles_table_like_ab(log: Path) -> None:
    rows = rows_of(run(log, "--view", "percentiles"))
    want = [[f"{q}%", format_us(np.percentile(DURATIONS, q))] for q in (50, 66, 75, 80, 90, 95, 98, 99)]
    assert rows[:8] == want
    assert rows[8] == ["100% (longest request)", format_us(DURATIONS.max())]


def test_filters_narrow_the_view(log: Path) -> None:
    got = json.loads(run(log, "--view", "percentiles", "--status", "2xx", "--method", "get",
                         "-o", "json"))[0]  # fmt: skip
    kept = [r["us"] for r in REQUESTS if r["method"] == "GET" and 200 <= r["status"] <= 299]
    assert got["requests"] == len(kept)
    assert got["p95_us"] == pytest.approx(np.percentile(kept, 95), rel=REL, abs=ABS)
    since = T0 + timedelta(seconds=600)
    got = json.loads(run(log, "--view", "percentiles", "--since", since.isoformat(), "-o", "json"))
    assert got[0]["requests"] == sum(r["ts"] >= since for r in REQUESTS)


# --- histogram ------------------------------------------------------------------------------
def bucket(us: int) -> tuple[int, int]:
    """1-2-5 buckets from the number of digits: [lo, hi)."""
    decade = 10 ** (len(str(us)) - 1)
    first = us // decade
    lo = decade * (1 if first == 1 else 2 if first < 5 else 5)
    return lo, (lo * 5 // 2 if first in (2, 3, 4) else lo * 2)


def test_histogram_counts_and_bars(log: Path) -> None:
    counts = Counter(bucket(r["us"]) for r in REQUESTS)
    data = list(csv.DictReader(io.StringIO(run(log, "--view", "histogram", "-o", "csv"))))
    assert [(int(d["lo_us"]), int(d["hi_us"]), int(d["requests"])) for d in data] == sorted(
        (lo, hi, n) for (lo, hi), n in counts.items())  # fmt: skip
    rows = rows_of(run(log, "--view", "histogram"))
    most = max(counts.values())
    for (lo, hi), row in zip(sorted(counts), rows, strict=True):
        label, n, share, _, drawn = row
        assert (label, n) == (f"{format_us(lo)} - {format_us(hi)}", str(counts[(lo, hi)]))
        assert share == f"{100 * counts[(lo, hi)] / len(REQUESTS):.1f}%"
        # a bar of 40 characters for the largest bucket, in eighths: full blocks + one part
        eighths = 8 * drawn.count("█") + (" ▏▎▍▌▋▊▉".index(drawn[-1]) if drawn.strip("█") else 0)
        assert eighths == round(counts[(lo, hi)] / most * 40 * 8)


# --- slowest --------------------------------------------------------------------------------
def test_slowest_top_n_and_log_text_as_data(log: Path) -> None:
    got = json.loads(run(log, "--view", "slowest", "--top", "5", "-o", "json"))
    assert [g["duration_us"] for g in got] == sorted(DURATIONS, reverse=True)[:5]
    assert got[0]["path"] == HOSTILE_PATH  # the markup is data, not bold text
    table = run(log, "--view", "slowest", "--top", "1")
    assert "[bold]b_o*o[/bold]" in table.replace("\n", "")
    md = run(log, "--view", "slowest", "--top", "1", "-o", "markdown")
    assert r"/x/\[bold\]b\_o\*o\[/bold\]" in md
    first = next(csv.DictReader(io.StringIO(run(log, "--view", "slowest", "--top", "1", "-o", "csv"))))
    assert first["query"] == "'" + HOSTILE_QUERY  # no formula for the spreadsheet


# --- pareto and apdex -----------------------------------------------------------------------
def test_pareto_by_status(log: Path) -> None:
    totals = Counter()
    for r in REQUESTS:
        totals[r["status"]] += r["us"]
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])
    got = json.loads(run(log, "--view", "pareto", "--by", "status", "-o", "json"))
    assert [g["status"] for g in got] == [s for s, _ in ranked]
    running = np.cumsum([t for _, t in ranked]) / DURATIONS.sum()
    assert [g["cumulative_share"] for g in got] == pytest.approx(running.tolist(), rel=REL, abs=ABS)
    rows = rows_of(run(log, "--view", "pareto", "--by", "status", "--top", "2"))
    assert [r[:2] for r in rows] == [["1", str(ranked[0][0])], ["2", str(ranked[1][0])]]
    assert rows[1][-2] == f"{100 * running[1]:.1f}%"


def test_apdex_worst_first(log: Path) -> None:
    slo = 5_000  # 5 ms
    want = {}
    for method in {r["method"] for r in REQUESTS}:
        rs = [r for r in REQUESTS if r["method"] == method]
        score = [0.0 if r["status"] >= 500 else 1.0 if r["us"] <= slo else 0.5 if r["us"] <= 4 * slo
                 else 0.0 for r in rs]  # fmt: skip
        want[method] = sum(score) / len(rs)
    got = json.loads(run(log, "--view", "apdex", "--by", "method", "--slo", "5ms", "-o", "json"))
    assert [g["method"] for g in got] == sorted(want, key=lambda m: want[m])
    assert {g["method"]: g["apdex"] for g in got} == pytest.approx(want, rel=REL, abs=ABS)
    rows = rows_of(run(log, "--view", "apdex", "--by", "method", "--slo", "5ms"))
    assert {r[0]: r[-1] for r in rows} == {m: f"{a:.2f}" for m, a in want.items()}


# --- cache ----------------------------------------------------------------------------------
def test_cache_by_method(log: Path) -> None:
    all_us = DURATIONS.sum()
    got = {g["method"]: g for g in json.loads(run(log, "--view", "cache", "--by", "method",
                                                     "-o", "json"))}  # fmt: skip
    assert set(got) == {"GET", "HEAD"}
    for method, g in got.items():
        ok = [r for r in REQUESTS if r["method"] == method and (200 <= r["status"] <= 299 or
                                                                 r["status"] == 304)]  # fmt: skip
        per_url: dict[str, list[int]] = {}
        for r in ok:
            per_url.setdefault(r["path"] + "?" + (r["query"] or ""), []).append(r["us"])
        saved = sum(sum(us) * (len(us) - 1) / len(us) for us in per_url.values())
        assert (g["requests"], g["urls"]) == (len(ok), len(per_url))
        assert g["total_us"] == sum(r["us"] for r in ok)
        assert g["p95_us"] == pytest.approx(np.percentile([r["us"] for r in ok], 95), rel=REL, abs=ABS)
        assert g["saved_us"] == round(saved)
        assert g["saved_share"] == pytest.approx(saved / all_us, rel=REL, abs=ABS)
    md = run(log, "--view", "cache", "--by", "method", "-o", "markdown")
    top = max(got, key=lambda m: got[m]["saved_us"])
    first = next(line for line in md.splitlines() if line.startswith("| GET") or line.startswith("| HEAD"))
    assert first.split(" | ")[0] == f"| {top}"
    assert f"| {format_us(got[top]['saved_us'])} |" in first


def test_parquet_output(log: Path, tmp_path: Path) -> None:
    out = tmp_path / "hist.parquet"
    run(log, "--view", "histogram", "-o", "parquet", "--out", str(out))
    assert pd.read_parquet(out)["requests"].sum() == len(REQUESTS)


# --- refusals -------------------------------------------------------------------------------
@pytest.mark.parametrize(("args", "needle"), [
    (["--view", "apdex"], "needs --slo"),
    (["--view", "nope"], "unknown --view"),
])  # fmt: skip
def test_bad_view_options_are_usage_errors(log: Path, args: list[str], needle: str) -> None:
    r = subprocess.run(["logan", "stats", str(log), *args], capture_output=True, timeout=120)
    err = " ".join(r.stderr.decode().split())
    assert r.returncode == 2 and "Traceback" not in err and needle in err, err
    assert re.search(r"\bread \d", err) is None  # refused before reading the log


def test_a_log_without_times_says_so(tmp_path: Path) -> None:
    untimed = tmp_path / "common.log"
    # the common log format: the same lines without %D, Referer and User-Agent
    untimed.write_text("".join(re.sub(r' \d+ "-" "agent"$', "\n", log_line(r).rstrip())
                               for r in REQUESTS[:5]))  # fmt: skip
    for view in ("percentiles", "histogram", "slowest"):
        r = CliRunner().invoke(app, ["stats", str(untimed), "--view", view, "-o", "markdown"])
        assert r.exit_code == 0 and "No request matches (with a response time)." in r.stdout, view
    got = json.loads(CliRunner().invoke(app, ["stats", str(untimed), "--view", "percentiles",
                                              "-o", "json"]).stdout)  # fmt: skip
    assert got[0]["requests"] == 0 and got[0]["p50_us"] is None
