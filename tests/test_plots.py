"""logan plot: each picture is drawn from known requests and read back from the figure (the
step heights, the heatmap's cells, the Pareto line and bars, titles and axis labels), then
checked against numpy and pandas on the same requests."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import QuadMesh
from matplotlib.dates import date2num
from matplotlib.patches import StepPatch

from logan.show import plots
from logan.store import append_requests, open_store

REPO = Path(__file__).resolve().parents[1]
T0 = datetime(2024, 3, 1, 8)
# indirector -> (requests, median µs, lognormal sigma): catalog has the most time, then report
GROUPS = {"catalog": (200, 2_000_000, 0.6), "report": (300, 400_000, 0.5),
          "file_metadata": (2000, 9_000, 0.4), "node": (50, 40_000, 0.3)}  # fmt: skip


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    parts = []
    for name, (n, median, sigma) in GROUPS.items():
        us = np.maximum(1, rng.lognormal(np.log(median), sigma, n).round()).astype("int64")
        start = T0 + pd.to_timedelta(rng.integers(0, 3 * 3600 * 1000, n), unit="ms")  # as stored: no ns
        parts.append(
            pd.DataFrame({"method": "GET", "indirector": name, "duration_us": us, "ts_start": start})
        )
    return pd.concat(parts, ignore_index=True)


@pytest.fixture(scope="module")
def con(rows):  # noqa: ANN201
    con = open_store(None).con
    append_requests(con, rows)
    return con


def by_total(rows: pd.DataFrame) -> pd.Series:
    return rows.groupby("indirector")["duration_us"].sum().sort_values(ascending=False)


def test_histogram_steps_are_numpy_histograms_of_each_group(con, rows):
    fig = plots.figure(con, "histogram", by=["indirector"], top=3)
    ax = fig.axes[0]
    steps = [p for p in ax.patches if isinstance(p, StepPatch)]
    # the three groups with the most time, largest first, named in the legend with their count
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    top3 = list(by_total(rows).index[:3])
    assert legend == [f"GET {g} ({(rows.indirector == g).sum():,})" for g in top3]
    for step, group in zip(steps, top3, strict=True):
        counts, edges, _ = step.get_data()
        us = rows.loc[rows.indirector == group, "duration_us"].to_numpy()
        assert counts.tolist() == np.histogram(us, edges)[0].tolist()
        assert counts.sum() == len(us)
    # log-scale bins, 10 a decade, on whole decades around every duration
    _, edges, _ = steps[0].get_data()
    assert np.allclose(np.diff(np.log10(edges)), 0.1)
    assert edges[0] <= rows.duration_us.min() and edges[-1] >= rows.duration_us.max()
    assert np.log10(edges[0]) == pytest.approx(round(np.log10(edges[0])))
    assert ax.get_xscale() == "log" and "response time" in ax.get_xlabel()
    assert "requests" in ax.get_ylabel() and "top 3 of 4 groups" in ax.get_title()


def test_heatmap_cells_are_a_numpy_2d_histogram(con, rows):
    fig = plots.figure(con, "heatmap")
    ax = fig.axes[0]
    mesh = next(c for c in ax.collections if isinstance(c, QuadMesh))
    xy = mesh.get_coordinates()
    t_edges, l_edges = xy[0, :, 0], xy[:, 0, 1]
    # time on x over the whole span, in 100 buckets; log latency bins on y
    t = date2num(rows["ts_start"].to_numpy())
    assert (
        len(t_edges) == 101 and t_edges[0] == pytest.approx(t.min()) and t_edges[-1] == pytest.approx(t.max())
    )
    assert np.allclose(np.diff(np.log10(l_edges)), 0.1)
    want = np.histogram2d(t, rows["duration_us"].to_numpy(), [t_edges, l_edges])[0].T
    got = np.ma.filled(mesh.get_array(), 0).reshape(want.shape)
    assert got.tolist() == want.tolist() and got.sum() == len(rows)
    assert ax.get_yscale() == "log" and ax.get_ylabel() == "response time"
    assert fig.axes[0].get_xlabel() == "request start (UTC)" and ax.get_title() == "all requests"
    assert any(a.get_ylabel() == "requests per cell" for a in fig.axes)  # the colour bar


def test_heatmap_by_group_has_a_panel_per_top_group(con, rows):
    fig = plots.figure(con, "heatmap", by=["indirector"], top=2)
    panels = [a for a in fig.axes if a.get_ylabel() == "response time"]  # not the colour bar
    top2 = list(by_total(rows).index[:2])
    assert [a.get_title() for a in panels] == [f"GET {g}" for g in top2]
    for ax, group in zip(panels, top2, strict=True):
        mesh = next(c for c in ax.collections if isinstance(c, QuadMesh))
        assert np.ma.filled(mesh.get_array(), 0).sum() == (rows.indirector == group).sum()


def test_pareto_line_is_the_cumulative_share_of_time(con, rows):
    fig = plots.figure(con, "pareto", by=["indirector"])
    ax = fig.axes[0]
    totals = by_total(rows)
    want_cumulative = (totals.cumsum() / totals.sum() * 100).to_numpy()
    line = ax.lines[0]
    assert line.get_ydata().tolist() == pytest.approx(want_cumulative.tolist())
    bars = [p.get_height() for p in ax.patches]
    assert bars == pytest.approx((totals / totals.sum() * 100).tolist())
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"GET {g}" for g in totals.index]
    assert ax.get_ylabel() == "share of total server time" and "4 groups" in ax.get_title()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["cumulative share", "share of server time"]


def test_group_names_from_logs_are_drawn_as_text(tmp_path):
    con = open_store(None).con
    hostile = "$\\frac{1}{0}$ \x1b[31m"
    append_requests(con, pd.DataFrame({"method": "GET", "indirector": [hostile, hostile, "ok"],
                                       "duration_us": [10, 20, 5], "ts_start": T0}))  # fmt: skip
    fig = plots.figure(con, "pareto", by=["indirector"])
    label = fig.axes[0].get_xticklabels()[0].get_text()
    assert "\x1b" not in label and "\\x1b" in label and "\\$" in label
    plots.save(fig, tmp_path / "p.svg")  # a `$` pair would otherwise be parsed as math
    assert "\\x1b[31m" in (tmp_path / "p.svg").read_text()


# --- The command ---------------------------------------------------------------------------------
def logan(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run(["logan", "plot", *args], capture_output=True, text=True, timeout=120, env=env)


def test_the_command_writes_png_and_svg(tmp_path):
    log = str(REPO / "sample_logs" / "puppet_access.log")
    r = logan("pareto", log, "-o", str(tmp_path / "p.png"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = logan("histogram", log, "--by", "environment", "-o", str(tmp_path / "h.svg"))
    assert r.returncode == 0, r.stderr
    svg = (tmp_path / "h.svg").read_text()
    assert "Response time by environment" in svg and "production" in svg


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["pie", "-o", "x.png"], "unknown picture 'pie'"),
        (["histogram", "-o", "x.jpg"], "write a .png or .svg file"),
        (["histogram", "--by", "nothing", "-o", "x.png"], "unknown --by"),
        (["histogram", "--path", "/nothing/*", "-o", "x.png"], "no timed requests"),
    ],
)
def test_bad_requests_are_one_line(tmp_path, args, needle):
    r = logan(*args[:1], str(REPO / "sample_logs" / "puppet_access.log"), *args[1:])
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.startswith("logan:")]
    assert len(lines) == 1 and needle in lines[0], r.stderr


def test_the_help_example_runs(tmp_path):
    r = logan("--help")
    text = " ".join(r.stdout.split())
    first = text[text.index("Examples:") :].split(":", 1)[1].split("·")[0].split()
    assert first[:2] == ["logan", "plot"]
    args = [a.replace("sample_logs/", f"{REPO}/sample_logs/") for a in first[2:]]
    args = [str(tmp_path / a) if a.endswith(".png") else a for a in args]
    assert logan(*args).returncode == 0 and (tmp_path / "histogram.png").is_file()
