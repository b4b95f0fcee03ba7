"""logan compare on generated Apache logs whose changes are known: one endpoint twice as slow
in period B, one unchanged with ordinary noise, one slower but too small to test. Every
number is recomputed here with numpy from the durations written into the log."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import logan
from logan.answer.compare import Criteria, Side, compare_sides
from logan.show.compare import write_compare
from logan.show.writers import Output
from logan.store import append_requests, open_store

REPO = Path(__file__).resolve().parents[1]
T0 = datetime(2024, 1, 1, 10)  # period A: 10:00-11:00, period B: 11:00-12:00
SPLIT = "2024-01-01T11:00:00"
# indirector -> (method, path, requests a side, median ms in A, factor in B)
ENDPOINTS = {
    "catalog": ("POST", "/production/catalog/node{}", 300, 500.0, 2.0),
    "file_metadata": ("GET", "/production/file_metadata/modules/ssh/f{}", 400, 10.0, 1.0),
    "node": ("GET", "/production/node/n{}", 12, 40.0, 3.0),
}


def draw(seed: int) -> dict[tuple[str, str], np.ndarray]:
    """Durations in µs per (indirector, side): lognormal (sigma 0.5) around the median."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, (_, _, n, median_ms, factor) in ENDPOINTS.items():
        for side, f in (("a", 1.0), ("b", factor)):
            out[name, side] = np.round(rng.lognormal(np.log(median_ms * 1000 * f), 0.5, n)).astype(np.int64)
    return out


def apache_lines(durations: dict[tuple[str, str], np.ndarray], side: str, start: datetime) -> list[str]:
    """combined_D lines (%D: µs), the requests of each endpoint spread over the hour."""
    lines = []
    for name, (method, path, _, _, _) in ENDPOINTS.items():
        us = durations[name, side]
        for i, d in enumerate(us):
            t = start + timedelta(seconds=int(i * 3599 / len(us)))
            lines.append(f'10.0.0.{i % 250} - - [{t:%d/%b/%Y:%H:%M:%S} +0000] '
                         f'"{method} {path.format(i)} HTTP/1.1" 200 512 {d} "-" "Ruby"')  # fmt: skip
    return sorted(lines, key=lambda x: x.split("[")[1][:20])


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("compare")
    durations = draw(7)
    a, b = apache_lines(durations, "a", T0), apache_lines(durations, "b", T0 + timedelta(hours=1))
    paths = {"a": d / "before.log", "b": d / "after.log", "all": d / "all.log"}
    paths["a"].write_text("\n".join(a) + "\n")
    paths["b"].write_text("\n".join(b) + "\n")
    paths["all"].write_text("\n".join(a + b) + "\n")
    return {"durations": durations, **{k: str(v) for k, v in paths.items()}}


def run(*args: str, columns: int = 200) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS=str(columns))
    return subprocess.run(["logan", "compare", *args], capture_output=True, text=True, timeout=120, env=env)


def as_json(*args: str) -> pd.DataFrame:
    r = run(*args, "--format", "combined_D", "-o", "json")
    assert r.returncode == 0, r.stderr
    return pd.DataFrame(json.loads(r.stdout)).set_index("indirector")


# --- The verdicts --------------------------------------------------------------------------
def test_the_slower_endpoint_is_a_regression_the_unchanged_one_is_not(logs):
    got = as_json(logs["all"], "--a-until", SPLIT, "--b-since", SPLIT)
    assert got.loc["catalog", "verdict"] == "regression"
    assert got.loc["file_metadata", "verdict"] == "same"
    assert got.loc["node", "verdict"] == "too few"  # 3x slower, but 12 requests a side
    assert got.loc["catalog", "p_slower"] > 0.5 and got.loc["catalog", "q_value"] < 0.01
    assert list(got.index[:1]) == ["catalog"]  # regressions first


def test_a_too_small_group_is_tested_once_the_minimum_allows_it(logs):
    got = as_json(logs["all"], "--a-until", SPLIT, "--b-since", SPLIT, "--min-requests", "10")
    assert got.loc["node", "verdict"] == "regression"
    assert pd.notna(got.loc["node", "p_value"])


def test_an_improvement_is_the_same_change_read_backwards(logs):
    got = as_json("--a", logs["b"], "--b", logs["a"])
    assert got.loc["catalog", "verdict"] == "improvement"
    assert got.loc["file_metadata", "verdict"] == "same"


def test_noise_alone_is_not_flagged():
    # 20 draws of the same distribution on both sides, 5 groups each: with a false
    # discovery rate of 1% and a 10% median change required, not one of 100 groups flagged
    rng = np.random.default_rng(3)
    flagged = 0
    for _ in range(20):
        sides = []
        for _side in "ab":
            us = rng.lognormal(np.log(20_000), 0.8, 5 * 200).round().astype("int64")
            rows = pd.DataFrame({"method": "GET", "indirector": np.repeat([f"e{i}" for i in range(5)], 200),
                                 "duration_us": us, "ts_start": T0})  # fmt: skip
            con = open_store(None).con
            append_requests(con, rows)
            sides.append(Side(con))
        got = compare_sides(*sides, by="indirector", criteria=Criteria())
        flagged += int(got["verdict"].isin(["regression", "improvement"]).sum())
    assert flagged == 0


# --- The numbers against numpy ---------------------------------------------------------------
def test_every_number_against_numpy_on_the_raw_durations(logs):
    got = as_json(logs["all"], "--a-until", SPLIT, "--b-since", SPLIT)
    for name in ENDPOINTS:
        row = got.loc[name]
        x = {s: logs["durations"][name, s].astype(float) for s in "ab"}
        for s in "ab":
            assert row[f"{s}_requests"] == len(x[s])
            assert row[f"{s}_total_us"] == x[s].sum()
            assert row[f"{s}_max_us"] == x[s].max()
            assert row[f"{s}_avg_us"] == pytest.approx(x[s].mean(), rel=1e-9)
            for q in (50, 95, 99):
                assert row[f"{s}_p{q}_us"] == pytest.approx(np.percentile(x[s], q), rel=1e-9)
        for stat, f in (("p95_us", lambda v: np.percentile(v, 95)), ("total_us", np.sum), ("max_us", np.max)):
            assert row[f"delta_{stat}"] == pytest.approx(f(x["b"]) - f(x["a"]), rel=1e-9)
            assert row[f"ratio_{stat.removesuffix('_us')}"] == pytest.approx(f(x["b"]) / f(x["a"]), rel=1e-9)
        # the chance that a B request is slower than an A one, by counting every pair
        pairs = (x["b"][:, None] > x["a"][None, :]).mean() + 0.5 * (x["b"][:, None] == x["a"][None, :]).mean()
        assert row["p_slower"] == pytest.approx(pairs, rel=1e-9)


def test_p_and_q_values_are_scipys_on_the_raw_durations():
    """The test is computed from counts per duration; scipy's, from every request, says the
    same: six groups, durations with many ties, one group on one side only."""
    from scipy.stats import false_discovery_control, mannwhitneyu

    rng = np.random.default_rng(5)
    raw, sides = {}, []
    for s, shift in (("a", 0), ("b", 15)):
        names = np.repeat([f"e{i}" for i in range(6)], 150)
        us = (rng.integers(0, 40, len(names)) + np.where(names == "e2", shift, 0)) * 1000  # ties
        rows = pd.DataFrame({"method": "GET", "indirector": names, "duration_us": us, "ts_start": T0})
        rows = rows[~((rows["indirector"] == "e5") & (s == "b"))]  # e5: only on side A
        raw[s] = rows
        con = open_store(None).con
        append_requests(con, rows)
        sides.append(Side(con))
    got = compare_sides(*sides, by="indirector", criteria=Criteria()).set_index("indirector")
    want = {}
    for name in [f"e{i}" for i in range(5)]:
        xa, xb = (raw[s].loc[raw[s]["indirector"] == name, "duration_us"].to_numpy() for s in "ab")
        r = mannwhitneyu(xb, xa, alternative="two-sided", method="asymptotic")
        want[name] = r.pvalue
        assert got.loc[name, "p_value"] == pytest.approx(r.pvalue, rel=1e-9)
        assert got.loc[name, "p_slower"] == pytest.approx(r.statistic / (len(xa) * len(xb)), rel=1e-12)
    assert got.loc["e2", "p_value"] < 1e-6 < got.loc["e0", "p_value"]  # the shifted one stands out
    q = false_discovery_control(list(want.values()), method="bh")
    assert got.loc[list(want), "q_value"].to_numpy() == pytest.approx(q, rel=1e-9)
    assert pd.isna(got.loc["e5", "p_value"]) and got.loc["e5", "verdict"] == "only A"


def test_two_sides_without_timed_requests_give_no_verdict_and_no_error():
    sides = [Side(open_store(None).con) for _ in "ab"]
    got = compare_sides(*sides, by="indirector", criteria=Criteria())
    assert got.empty


# --- The ways of naming the two sides --------------------------------------------------------
def test_two_files_equal_two_periods_of_one_file(logs):
    periods = as_json(logs["all"], "--a-until", SPLIT, "--b-since", SPLIT)
    files = as_json(logs["a"], logs["b"])
    named = as_json("--a", logs["a"], "--b", logs["b"])
    pd.testing.assert_frame_equal(periods, files)
    pd.testing.assert_frame_equal(periods, named)


def test_baseline_compares_the_same_window_a_day_earlier(tmp_path, logs):
    # the same log a day earlier, then a day later with B's durations: --baseline 1d
    # over day 2 compares day 2 with day 1
    durations = logs["durations"]
    day1 = apache_lines(durations, "a", T0)
    day2 = apache_lines(durations, "b", T0 + timedelta(days=1))
    log = tmp_path / "two_days.log"
    log.write_text("\n".join(day1 + day2) + "\n")
    got = as_json(str(log), "--baseline", "1d", "--since", "2024-01-02T09:00", "--until", "2024-01-02T12:00")
    for name in ENDPOINTS:
        assert got.loc[name, "a_requests"] == len(durations[name, "a"])
        assert got.loc[name, "b_p50_us"] == pytest.approx(np.percentile(durations[name, "b"], 50))
    assert got.loc["catalog", "verdict"] == "regression"
    # without --since: the last day of the log against the day before, the same here
    last = as_json(str(log), "--baseline", "1d")
    assert (last["a_requests"] == got["a_requests"]).all()


def test_library_function_returns_the_same_frame(logs):
    with logan.open(None) as store:
        logan.ingest([logs["all"]], store, format="combined_D")
        got = logan.compare(store.con, a_until=SPLIT, b_since=SPLIT).set_index("indirector")
    cli = as_json(logs["all"], "--a-until", SPLIT, "--b-since", SPLIT)
    assert list(got.index) == list(cli.index)
    assert got["verdict"].tolist() == cli["verdict"].tolist()
    assert got["b_p95_us"].astype(float).tolist() == pytest.approx(cli["b_p95_us"].tolist())


# --- For people ----------------------------------------------------------------------------------
def test_the_table_fits_80_columns_and_says_what_changed(logs):
    r = run(logs["a"], logs["b"], "--format", "combined_D", columns=80)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert "1 regression beyond noise" in r.stdout
    catalog = next(line for line in lines if "catalog" in line)
    p95 = [np.percentile(logs["durations"]["catalog", s], 95) for s in "ab"]
    assert "regression" in catalog and f"×{p95[1] / p95[0]:.2f}" in catalog


def test_markdown_and_csv(logs):
    r = run(logs["a"], logs["b"], "--format", "combined_D", "-o", "markdown")
    assert r.returncode == 0 and "| method | indirector | verdict |" in r.stdout
    r = run(logs["a"], logs["b"], "--format", "combined_D", "-o", "csv")
    assert r.returncode == 0 and r.stdout.splitlines()[0].startswith("method,indirector,verdict,p_value")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ([], "name the two sides"),
        (["--baseline", "2d"], "--baseline '2d'"),
        (["--a", "x.log"], "--a and --b go together"),
        (["--baseline", "1d", "--a-since", "1h"], "not both"),
        (["--a-since", "2h", "--since", "1h"], "--since/--until go with --baseline"),
        (["--by", "nothing", "--baseline", "1d"], "unknown --by"),
    ],
)
def test_bad_options_are_one_line(logs, args, needle):
    r = run(logs["all"], *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = [x for x in r.stderr.splitlines() if x.startswith("logan:")]
    assert len(lines) == 1 and needle in lines[0], r.stderr


def test_an_overlapping_baseline_is_refused(logs):
    r = run(logs["all"], "--baseline", "1d", "--since", "2d")
    assert r.returncode == 2 and "would overlap" in r.stderr


def test_the_help_example_runs():
    text = " ".join(run("--help", columns=300).stdout.split())
    first = text[text.index("Examples:") :].split(":", 1)[1].split("·")[0].split()
    assert first[:2] == ["logan", "compare"]
    r = run(*[a.replace("sample_logs/", f"{REPO}/sample_logs/") for a in first[2:]])
    assert r.returncode == 0 and "regression" in r.stdout, r.stderr


def test_groups_without_a_value_without_times_or_on_one_side_only():
    # no environment (NULL) on both sides; an untimed group; a group only in B
    rng = np.random.default_rng(5)

    def side(factor: float, extra: list[dict]) -> Side:
        us = (rng.lognormal(np.log(30_000), 0.4, 100) * factor).round().astype("int64")
        rows = [{"environment": None, "status": 200, "duration_us": int(d), "ts_start": T0} for d in us]
        rows += [{"environment": "prod", "status": 404, "duration_us": None, "ts_start": T0}] * 40
        con = open_store(None).con
        append_requests(con, pd.DataFrame(rows + extra))
        return Side(con)

    a = side(1.0, [])
    b = side(1.5, [{"environment": "dev", "status": 500, "duration_us": 5, "ts_start": T0}])
    got = compare_sides(a, b, by=["environment", "status"], criteria=Criteria())
    verdicts = {(r.environment, r.status): r.verdict for r in got.itertuples()}
    assert verdicts == {(None, 200): "regression", ("prod", 404): "no times", ("dev", 500): "only B"}
    only_b = got[got.verdict == "only B"].iloc[0]
    assert (only_b.a_requests, only_b.b_requests, only_b.b_max_us) == (0, 1, 5)
    # an empty side: every group is only on the other
    empty = Side(a.con, {"status": "3xx"})
    assert set(compare_sides(empty, b, by="status")["verdict"]) == {"only B"}


def test_log_content_stays_data_in_every_output(capsys):
    hostile = "=cmd|' /C calc'!A0\x1b[31m"
    sides = []
    for factor in (1, 2):
        con = open_store(None).con
        us = np.arange(1, 41) * 1000 * factor
        append_requests(con, pd.DataFrame({"method": "GET", "route": [hostile] * 40, "duration_us": us,
                                           "ts_start": T0}))  # fmt: skip
        sides.append(Side(con))
    table = compare_sides(*sides, by="route")
    for form in ("table", "csv", "markdown"):
        write_compare(table, Output(form), ["method", "route"], "A: a\nB: b", None)
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\\x1b" in out, form  # the escape shown, not obeyed
        if form == "csv":
            assert "\n'=cmd" in out or ",'=cmd" in out  # a spreadsheet shows it as text
