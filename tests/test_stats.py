"""logan.answer.stats on a small table whose every statistic is recomputed here with numpy."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pandas as pd
import pytest

from logan.answer import stats as st
from logan.store import append_requests, open_store

T0 = datetime(2024, 1, 1)
# method, indirector, environment, path, status, duration_us, upstream_us, bytes_sent
ROWS = [
    ("GET", "file_metadata", "production", "/production/file_metadata/a", 200, 1000, None, 100),
    ("GET", "file_metadata", "production", "/production/file_metadata/b", 200, 2000, 500, 200),
    ("GET", "file_metadata", "production", "/production/file_metadata/c", 500, 4000, 700, None),
    ("GET", "file_metadata", "production", "/production/file_metadata/a", 200, 10000, 900, 300),
    ("GET", "file_metadata", "production", "/production/file_metadata/b", 503, 13000, None, 400),
    ("POST", "catalog", "production", "/production/catalog/n1", 200, 250000, 200000, 5000),
    ("POST", "catalog", "production", "/production/catalog/n2", 200, 750000, 600000, 7000),
    ("PUT", "report", "dev", "/dev/report/n1", 200, 30000, None, 10),
    ("PUT", "report", "dev", "/dev/report/n2", 404, 10000, None, 10),
    ("PUT", "report", "dev", "/dev/report/n3", 200, 20000, None, 10),
    ("GET", "catalog", "dev", "/dev/catalog/n4", 200, None, None, 99),
]
COLS = ["method", "indirector", "environment", "path", "status", "duration_us", "upstream_us",
        "bytes_sent"]  # fmt: skip
RECORDS = [dict(zip(COLS, r, strict=True), ts_start=T0 + timedelta(minutes=i))
           for i, r in enumerate(ROWS)]  # fmt: skip


def make_con(records: list[dict] = RECORDS):
    con = open_store(None).con
    append_requests(con, pd.DataFrame(records))
    return con


# --- The independent computation -----------------------------------------------------------
def expected(records: list[dict], keys: list[str]) -> dict[tuple, dict]:
    """Every per-group statistic, by plain Python and numpy (linear percentiles)."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    timed_total = sum(r["duration_us"] for r in records if r["duration_us"] is not None)
    up_total = sum(r["upstream_us"] for r in records if r["upstream_us"] is not None)
    out = {}
    for key, rs in groups.items():
        d = np.array([r["duration_us"] for r in rs if r["duration_us"] is not None], float)
        u = np.array([r["upstream_us"] for r in rs if r["upstream_us"] is not None], float)
        sent = [r["bytes_sent"] for r in rs if r["bytes_sent"] is not None]
        e = {"requests": len(rs),
             "error_share": sum(500 <= r["status"] <= 599 for r in rs) / len(rs),
             "bytes": sum(sent) if sent else None}  # fmt: skip
        e |= _timer(d, timed_total, "")
        if len(u):
            e |= _timer(u, up_total, "upstream_") | {"upstream_requests": len(u)}
        out[key] = e
    return out


def _timer(x: np.ndarray, total: float, prefix: str) -> dict:
    if not len(x):
        return {f"{prefix}total_us": None, f"{prefix}avg_us": None, f"{prefix}p50_us": None}
    return {
        f"{prefix}total_us": x.sum(),
        f"{prefix}share": x.sum() / total,
        f"{prefix}avg_us": x.mean(),
        f"{prefix}stddev_us": x.std(ddof=1) if len(x) > 1 else None,
        f"{prefix}min_us": x.min(),
        f"{prefix}max_us": x.max(),
    } | {f"{prefix}p{q}_us": np.percentile(x, q) for q in (50, 90, 95, 99)}


def assert_matches(table: pd.DataFrame, want: dict[tuple, dict], keys: list[str]) -> None:
    assert len(table) == len(want)
    for _, row in table.iterrows():
        e = want[tuple(row[k] for k in keys)]
        for col, value in e.items():
            if value is None:
                assert pd.isna(row[col]), (col, row[col])
            else:
                assert row[col] == pytest.approx(value, rel=1e-12), (col, row[col], value)


# --- stats() ------------------------------------------------------------------------------------
def test_every_statistic_per_indirector() -> None:
    table = st.stats(make_con(), by=["indirector"], top=0)
    keys = ["method", "indirector"]
    assert list(table.columns[:16]) == keys + [
        "requests", "total_us", "share", "avg_us", "stddev_us", "min_us", "p50_us", "p90_us",
        "p95_us", "p99_us", "max_us", "error_share", "bytes", "upstream_requests",
    ]  # fmt: skip
    assert "ttfb_total_us" not in table.columns  # the log has no such timer
    assert_matches(table, expected(RECORDS, keys), keys)
    assert table["share"].sum() == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("filters", "keep"),
    [
        ({"since": "2024-01-01T00:03:00", "until": "2024-01-01 00:08"},
         lambda r: 3 <= (r["ts_start"] - T0).seconds // 60 < 8),
        ({"since": "2024-01-01T01:05:00+01:00"},
         lambda r: r["ts_start"] >= T0 + timedelta(minutes=5)),
        # relative times count back from the last request (T0 + 10 min), not from now
        ({"since": "4m"}, lambda r: r["ts_start"] >= T0 + timedelta(minutes=6)),
        ({"since": "1h", "until": "150s"}, lambda r: r["ts_start"] < T0 + timedelta(minutes=7, seconds=30)),
        ({"env": "dev"}, lambda r: r["environment"] == "dev"),
        ({"env": ["dev", "production"], "method": "put"}, lambda r: r["method"] == "PUT"),
        ({"status": "5xx"}, lambda r: 500 <= r["status"] <= 599),
        ({"status": "404,503"}, lambda r: r["status"] in (404, 503)),
        ({"status": "200-299"}, lambda r: r["status"] == 200),
        ({"path_glob": "/production/*/a"}, lambda r: r["path"] == "/production/file_metadata/a"),
        ({"env": "production' OR '1'='1"}, lambda r: False),
    ],
)  # fmt: skip
def test_filters(filters: dict, keep) -> None:
    records = [r for r in RECORDS if keep(r)]
    table = st.stats(make_con(), by=["environment", "indirector"], top=0, **filters)
    keys = ["environment", "method", "indirector"]
    assert list(table.columns[:3]) == keys
    assert_matches(table, expected(records, keys), keys)


@pytest.mark.parametrize(
    ("sort", "column"),
    [("total", "total_us"), ("count", "requests"), ("avg", "avg_us"), ("p95", "p95_us"),
     ("p99", "p99_us"), ("max", "max_us")],
)  # fmt: skip
def test_sort_and_top(sort: str, column: str) -> None:
    want = expected(RECORDS, ["method", "indirector"])
    # largest first, untimed last, ties by requests then name
    order = sorted(want, key=lambda k: (want[k].get(column) is None, -(want[k].get(column) or 0),
                                        -want[k]["requests"], k))  # fmt: skip
    table = st.stats(make_con(), by="indirector", sort=sort, top=3)
    assert [tuple(r) for r in table[["method", "indirector"]].itertuples(index=False)] == order[:3]


def test_slo_share_and_apdex() -> None:
    slo = 12_000
    table = st.stats(make_con(), by=["environment"], slo_us=slo, top=0)
    for _, row in table.iterrows():
        rs = [r for r in RECORDS if r["environment"] == row["environment"] and r["duration_us"]]
        ok = [r["status"] < 500 and r["duration_us"] <= slo for r in rs]
        tol = [r["status"] < 500 and slo < r["duration_us"] <= 4 * slo for r in rs]
        assert row["timed_requests"] == len(rs)
        assert row["slo_share"] == pytest.approx(sum(ok) / len(rs))
        assert row["apdex"] == pytest.approx((sum(ok) + sum(tol) / 2) / len(rs))


def test_several_dimensions_and_unknown_ones() -> None:
    assert st.dimension_columns(["route", "indirector", "server"]) == [
        "method", "route", "indirector", "backend", "server"]  # fmt: skip
    with pytest.raises(ValueError, match="unknown --by"):
        st.stats(make_con(), by=["path; DROP TABLE requests"])
    with pytest.raises(ValueError, match="unknown sort"):
        st.stats(make_con(), sort="median")


def test_untimed_log_sorts_by_requests() -> None:
    records = [r | {"duration_us": None, "upstream_us": None} for r in RECORDS]
    con = make_con(records)
    table = st.stats(con, by="indirector", top=0)
    assert list(table["requests"]) == [5, 3, 2, 1]
    assert table["total_us"].isna().all()
    text = st.headline(con)
    assert "no response times" in text
    assert "GET file_metadata: 45% of all requests, 5." in text


def test_timer_columns_follow_the_whole_answer_not_the_top_rows() -> None:
    # Only PUT report (not the largest total) has an upstream time: --top 1 shows the catalog
    # row, whose upstream cells are empty, and still has the upstream columns.
    records = [r | {"upstream_us": 77 if r["indirector"] == "report" else None} for r in RECORDS]
    top1 = st.stats(make_con(records), by="indirector", top=1)
    assert list(top1["indirector"]) == ["catalog"]
    assert "upstream_avg_us" in top1.columns and top1["upstream_avg_us"].isna().all()
    untimed = [r | {"upstream_us": None} for r in RECORDS]
    assert not any(c.startswith("upstream_") for c in st.stats(make_con(untimed)).columns)


def test_records_and_frame_hold_the_same_rows() -> None:
    con = make_con()
    rec = st.stats_records(con, by="environment", top=0, slo_us=12_000)
    df = st.stats(con, by="environment", top=0, slo_us=12_000)
    assert rec.columns == list(df.columns)
    for row, (_, frow) in zip(rec.rows, df.iterrows(), strict=True):
        for col in rec.columns:
            assert (st.missing(row[col]) and pd.isna(frow[col])) or row[col] == pytest.approx(frow[col])


def test_cli_table_from_a_store_does_not_load_pandas(tmp_path) -> None:  # noqa: ANN001
    # pandas takes longer to import than the report takes on 5 M rows
    db = tmp_path / "s.duckdb"
    with open_store(db) as store:
        append_requests(store.con, pd.DataFrame(RECORDS))
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('pandas' in sys.modules, file=sys.stderr))\n"
        "from logan.cli import main\n"
        f"sys.argv = ['logan', 'stats', '--db', {str(db)!r}]\n"
        "main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "POST catalog" in out.stdout
    assert out.stderr.strip().splitlines()[-1] == "False"


# --- headline and units -------------------------------------------------------------------------
def test_headline_names_the_top_consumer() -> None:
    timed = [r["duration_us"] for r in RECORDS if r["duration_us"] is not None]
    catalog = 250000 + 750000
    share = catalog / sum(timed)
    p99 = np.percentile([250000, 750000], 99)
    text = st.headline(make_con())
    lines = text.splitlines()
    assert lines[0] == (
        f"2024-01-01 00:00 to 2024-01-01 00:10 UTC (10 min), 11 requests, "
        f"{st.format_us(sum(timed))} of server time, p99 {st.format_us(np.percentile(timed, 99))}."
    )
    assert lines[1] == (f"POST catalog: {share:.0%} of all server time, 2 requests, p99 {st.format_us(p99)}.")
    assert st.format_us(p99) == "745 ms"


def test_summary() -> None:
    s = st.summary(make_con(), env="dev")
    dev = [r for r in RECORDS if r["environment"] == "dev"]
    assert s["requests"] == len(dev) == 4
    assert s["timed_requests"] == 3
    assert s["total_us"] == 60000
    assert s["bytes"] == sum(r["bytes_sent"] for r in dev)
    assert s["first_ts"] == dev[0]["ts_start"] and s["last_ts"] == dev[-1]["ts_start"]


@pytest.mark.parametrize(
    ("us", "text"),
    [(850, "850 us"), (22_000, "22 ms"), (1_400_000, "1.4 s"), (192_000_000, "3.2 min"),
     (26.9 * 3600e6, "26.9 h"), (5 * 86400e6, "5.0 days"), (None, "-")],
)  # fmt: skip
def test_format_us(us, text: str) -> None:
    assert st.format_us(us) == text


def test_format_count_and_bytes() -> None:
    counts = [st.format_count(n) for n in (7129326, 84108, 2383, 0)]
    assert counts == ["7.1M", "84.1k", "2,383", "0"]
    assert [st.format_bytes(n) for n in (512, 2048, 3 * 2**20)] == ["512 B", "2.0 KiB", "3.0 MiB"]


# --- parsing -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "us"),
    [("500ms", 500_000), ("1.5s", 1_500_000), ("250us", 250), ("24h", 86_400_000_000),
     ("2m", 120_000_000), ("250", 250_000)],
)  # fmt: skip
def test_parse_duration(text: str, us: int) -> None:
    assert st.parse_duration(text) == us


def test_parse_time() -> None:
    now = datetime(2024, 5, 2, 12, 0, tzinfo=UTC)
    assert st.parse_time("24h", now=now) == datetime(2024, 5, 1, 12, 0)
    assert st.parse_time("2024-05-01T14:00:00+02:00") == datetime(2024, 5, 1, 12, 0)
    assert st.parse_time("2024-05-01") == datetime(2024, 5, 1)
    assert st.parse_time("05/Nov/2013:19:52:21 -0500") == datetime(2013, 11, 6, 0, 52, 21)
    aware = datetime(2024, 1, 1, 1, tzinfo=timezone(timedelta(hours=1)))
    assert st.parse_time(aware) == datetime(2024, 1, 1)
    for bad in ("yesterday", "12 parsecs"):
        with pytest.raises(ValueError, match="not a time"):
            st.parse_time(bad)


def test_parse_status() -> None:
    assert st.parse_status("5xx") == [(500, 599)]
    assert st.parse_status("4xx, 503") == [(400, 499), (503, 503)]
    with pytest.raises(ValueError, match="not a status"):
        st.parse_status("error")


def test_filter_values_are_parameters() -> None:
    where, params = st.filter_sql({"env": "x' OR 1=1 --", "path_glob": "/a'*", "status": "5xx"})
    assert "x'" not in where and "/a'" not in where
    assert params == ["x' OR 1=1 --", 500, 599, "/a'*"]
    with pytest.raises(ValueError, match="unknown filter"):
        st.filter_sql({"colour": "red"})


# --- the CLI ------------------------------------------------------------------------------------
HOSTILE = [
    '10.0.0.1 - - [05/Nov/2013:19:52:21 +0000] "GET /[bold]x[/bold]?a=1 HTTP/1.1" 200 10 "-" '
    '"=HYPERLINK(\\"http://evil\\")"',
    '10.0.0.2 - - [05/Nov/2013:19:52:22 +0000] "GET /<script>alert(1)</script> HTTP/1.1" 500 20 "-" "curl/8"',
    '10.0.0.2 - - [05/Nov/2013:19:52:23 +0000] "GET /<script>alert(1)</script> HTTP/1.1" 200 30 "-" "curl/8"',
]


@pytest.fixture()
def hostile_log(tmp_path):  # noqa: ANN201
    pytest.importorskip("logan.read.ingest", reason="logan.read.ingest is not written yet")
    path = tmp_path / "access.log"
    path.write_text("\n".join(HOSTILE) + "\n")
    return str(path)


def run_cli(*args: str) -> str:
    from typer.testing import CliRunner

    from logan.cli import app

    result = CliRunner().invoke(app, ["stats", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_cli_json_uses_the_view_columns(hostile_log: str) -> None:
    import json

    rows = json.loads(run_cli(hostile_log, "--format", "combined", "--by", "route", "-o", "json"))
    assert list(rows[0])[:5] == ["method", "route", "requests", "total_us", "share"]
    assert {r["route"]: (r["requests"], r["error_share"], r["bytes"]) for r in rows} == {
        "/[bold]x[/bold]": (1, 0.0, 10),
        "/<script>alert(1)</script>": (2, 0.5, 50),
    }


def test_cli_outputs_keep_log_text_as_data(hostile_log: str, tmp_path) -> None:  # noqa: ANN001
    table = run_cli(hostile_log, "--format", "combined", "--by", "route")
    assert "/[bold]x[/bold]" in table  # shown, not interpreted as rich markup
    csv = run_cli(hostile_log, "--format", "combined", "--by", "user_agent", "-o", "csv")
    assert "'=HYPERLINK" in csv and "\n=HYPERLINK" not in csv
    md = run_cli(hostile_log, "--format", "combined", "--by", "route", "-o", "markdown")
    assert "<script>" not in md and r"\<script\>" in md
    out = tmp_path / "stats.parquet"
    run_cli(hostile_log, "-f", "combined", "--by", "route", "-o", "parquet", "--out", str(out))
    assert sorted(pd.read_parquet(out)["requests"]) == [1, 2]
