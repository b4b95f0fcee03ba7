"""What the tests/test_spark_*.py files share: one Spark session for the whole run (local[1],
one shuffle partition, no UI, modest memory: a few minutes for every Spark test), skipped
with the reason when pyspark or Java is absent, and a store shaped to exercise every view
(four dialects, every timer, 5xx, cache statuses, three days and undated rows)."""

from __future__ import annotations

import math
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from logan.engines.session import spark_available, spark_session
from logan.store import open_store

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_logs"
TEST_CONF = {
    "spark.sql.shuffle.partitions": "1",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "1g",
    "spark.default.parallelism": "1",
}


def same_json(a: list[dict], b: list[dict]) -> None:
    """Two JSON answers alike: the same rows, keys and values, floats to 1e-9 relative
    (sums run in another order on the two engines)."""
    assert len(a) == len(b) and a
    for x, y in zip(a, b, strict=True):
        assert x.keys() == y.keys()
        for k in x:
            if isinstance(x[k], float) and isinstance(y[k], float):
                assert math.isclose(x[k], y[k], rel_tol=1e-9), (k, x[k], y[k])
            else:
                assert x[k] == y[k], (k, x[k], y[k])


@pytest.fixture(scope="session")
def spark():  # noqa: ANN201
    missing = spark_available()
    if missing:
        pytest.skip(missing)
    return spark_session("local[1]", TEST_CONF, app="logan-tests")


def generated(tmp: Path, dialect: str, lines: int) -> Path:
    path = tmp / f"{dialect}.log"
    cmd = [
        sys.executable,
        "-m",
        "logan.generate",
        "--dialect",
        dialect,
        "--lines",
        str(lines),
        "-o",
        str(path),
    ]
    subprocess.run(cmd, check=True, timeout=120)
    return path


def days_frame() -> pd.DataFrame:
    """Rows over three days and two undated ones, with NULL groups and NULL timers: the
    partitions and the NULL handling no generated log has."""
    start = datetime(2024, 3, 1, 23, 59, 0)
    rows = []
    for i in range(300):
        ts = None if i >= 298 else start + timedelta(minutes=7 * i)
        rows.append(
            dict(
                source="days.log",
                line_no=i + 1,
                dialect="nginx",
                format="test",
                ts_start=ts,
                ts_end=None if ts is None else ts + timedelta(microseconds=1000 + 37 * i),
                method=["GET", "HEAD", "POST", None][i % 4],
                path=f"/p/{i % 9}",
                query=None if i % 3 else "a=1",
                vhost=None if i % 5 == 0 else "example.org",
                status=[200, 304, 503, 404, 200][i % 5],
                bytes_sent=100 * (i % 7),
                duration_us=None if i % 11 == 0 else 1000 + 37 * i,
                upstream_us=None if i % 2 else 500 + 11 * i,
                ttfb_us=(i * 13) % 900 if i % 3 else None,
                cache_status=[None, "HIT", "MISS", "STALE", "hit-stale"][i % 5],
                indirector=None if i % 6 == 0 else f"ind{i % 4}",
                environment=f"env{i % 2}",
                requester=f"10.0.0.{i % 13}",
                route=f"/p/{{id}}/{i % 2}",
                server=f"s{i % 3}",
                backend="b",
            )  # fmt: skip
        )
    return pd.DataFrame(rows)


def shaped_store(tmp: Path) -> Path:
    """A store holding generated logs of every dialect, the sample logs and days_frame()."""
    db = tmp / "shaped.duckdb"
    logs = [generated(tmp, "apache", 6000)] + [
        generated(tmp, d, 3000) for d in ("nginx", "varnish", "haproxy")
    ]
    for log in [*logs, *sorted(SAMPLES.glob("*.log"))]:
        r = subprocess.run(["logan", "ingest", str(log), "--db", str(db)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    with open_store(db) as store:
        store.append(days_frame())
    return db
