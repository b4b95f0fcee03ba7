"""`logan timeline`: per-bucket statistics and requests in flight, checked against values
computed here from the raw rows (numpy percentiles, a brute-force count of the requests in
flight at every instant where the count can change, the overlap of each request with each
bucket), and the command as a user runs it."""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from logan.answer import in_flight as ifl
from logan.answer.timeline import bucket_width_us, saturation, story, timeline
from logan.answer.views import run_records, series_sql
from logan.store import append_requests, open_store

REPO = Path(__file__).resolve().parents[1]
T0 = pd.Timestamp("2024-03-01 23:40:00")
T0_US = T0.value // 1000


def us_of(ts: pd.Series) -> pd.Series:
    return ts.astype("datetime64[us]").astype("int64")


def store_of(rows: pd.DataFrame):  # noqa: ANN201
    store = open_store(None)
    append_requests(store.con, rows)
    return store


def random_rows(n: int = 4000, seed: int = 7, span_s: float = 600) -> pd.DataFrame:
    """Requests of log-normal durations, some seconds long (so they span buckets), a gap of
    a minute with no starts, two servers, some 5xx."""
    rng = np.random.default_rng(seed)
    start_us = np.sort(rng.integers(0, int(span_s * 1e6), n))
    start_us = start_us[(start_us < 200e6) | (start_us > 260e6)]  # the gap
    dur_us = np.round(rng.lognormal(11, 1.6, len(start_us))).astype("int64")
    dur_us[::97] = 0  # a request of no duration is never in flight
    return pd.DataFrame({
        "ts_start": pd.to_datetime(T0_US + start_us, unit="us"),
        "ts_end": pd.to_datetime(T0_US + start_us + dur_us, unit="us"),
        "duration_us": dur_us,
        "status": rng.choice([200, 200, 200, 304, 404, 500, 502, 503], len(start_us)),
        "bytes_sent": rng.integers(100, 5000, len(start_us)),
        "server": rng.choice(["app1", "app2"], len(start_us)),
        "backend": "be",
    })  # fmt: skip


def brute_in_flight(s: np.ndarray, e: np.ndarray, lo: int, width: int, buckets: int):  # noqa: ANN201
    """For each bucket: the most requests in flight at any instant (the count only changes
    at a start or an end, so every such instant in the bucket and its start are tried) and
    the mean (each request's overlap with the bucket, summed, over the width)."""
    most, mean = [], []
    for b in range(buckets):
        b0, b1 = lo + b * width, lo + (b + 1) * width
        instants = np.concatenate([[b0], s[(s >= b0) & (s < b1)], e[(e >= b0) & (e < b1)]])
        counts = [int(((s <= t) & (e > t)).sum()) for t in instants]
        most.append(max(counts))
        mean.append(np.clip(np.minimum(e, b1) - np.maximum(s, b0), 0, None).sum() / width)
    return np.array(most), np.array(mean)


def test_bucket_width_from_the_span_and_as_asked() -> None:
    assert bucket_width_us(0, 600_000_000) == 10_000_000  # 10 min: 60 buckets of 10 s
    assert bucket_width_us(0, 3_600_000_000) == 60_000_000  # 1 h: 60 of 1 min
    assert bucket_width_us(0, 86_400_000_000) == 900_000_000  # 1 day: 96 of 15 min
    assert bucket_width_us(0, 10**9, "5m") == 300_000_000


def test_per_bucket_counts_and_percentiles_match_numpy() -> None:
    rows = random_rows()
    got = timeline(store_of(rows).con, bucket="10s")
    width = 10_000_000
    start_us = us_of(rows["ts_start"])
    bucket = start_us // width * width
    lo, hi = bucket.min(), bucket.max() + width
    assert got["bucket_us"].tolist() == list(range(lo, hi, width))  # every bucket, the gap too
    assert (got["start"].dt.tz is not None) and got["width_us"].eq(width).all()
    for row in got.itertuples():
        mine = rows[bucket == row.bucket_us]
        assert row.requests == len(mine)
        assert row.rate == pytest.approx(len(mine) / 10)
        assert row.status_5xx == (mine["status"] >= 500).sum()
        assert row.status_503 == (mine["status"] == 503).sum()
        assert row.bytes == mine["bytes_sent"].sum()
        if len(mine) == 0:
            assert pd.isna(row.p95_us)
            continue
        d = mine["duration_us"].to_numpy()
        assert [row.p50_us, row.p95_us, row.p99_us] == pytest.approx(np.percentile(d, [50, 95, 99]))
        assert row.max_us == d.max()
    assert (got["requests"] == 0).sum() >= 5  # the minute without starts is there, as zeros


def test_requests_in_flight_exact_against_a_brute_force_count() -> None:
    rows = random_rows(n=2500)
    got = timeline(store_of(rows.sample(frac=1, random_state=0)).con, bucket="10s")  # in no order
    s = us_of(rows["ts_start"]).to_numpy()
    e = us_of(rows["ts_end"]).to_numpy()
    most, mean = brute_in_flight(s, e, int(got["bucket_us"].iloc[0]), 10_000_000, len(got))
    assert got["in_flight_max"].tolist() == most.tolist()
    assert got["in_flight_mean"].to_numpy() == pytest.approx(mean, rel=1e-9)
    assert most.max() > 5
    assert (got.loc[got["requests"] == 0, "in_flight_max"] > 0).any()  # long requests span the gap
    # the same answer from the SQL sweep (queries/in_flight.sql, what an engine without numpy runs)
    lo, width = int(got["bucket_us"].iloc[0]), 10_000_000
    con = store_of(rows).con
    sql = run_records(con, series_sql("in_flight", []), "", [lo, lo + len(got) * width, width]).frame()
    assert sql.sort_values("bucket_us")["in_flight_max"].tolist() == most.tolist()
    assert sql.sort_values("bucket_us")["in_flight_mean"].to_numpy() == pytest.approx(mean, rel=1e-9)


@pytest.mark.skipif(ifl._sweep is None, reason="the compiled sweep (logan/answer/_sweep.c) is not built here")
def test_the_compiled_sweep_and_the_numpy_form_agree_with_a_brute_force_count() -> None:
    """Ties on starts, ends and bucket edges, requests of no length, requests that outlast
    the last bucket: both forms of in_flight, each against the brute force."""
    rng = np.random.default_rng(11)
    width, buckets = 1_000, 40
    s = np.sort(rng.integers(0, 40, 3000) * 1_000 // 4 + rng.choice([0, 1, 250], 3000))  # many ties, edges
    e = s + rng.choice([0, 0, 1, 250, 1_000, 5_000, 60_000], 3000)  # some of no length, some past the end
    most, mean = brute_in_flight(s, e, 0, width, buckets)
    edges = np.arange(0, (buckets + 1) * width, width)
    c_most, c_area = ifl.swept(s, e, edges)
    assert c_most.tolist() == most.tolist()
    assert c_area / width == pytest.approx(mean, rel=1e-12)
    assert ifl.most_in_flight(s, np.sort(e), edges).tolist() == most.tolist()
    assert ifl.overlap_sums(s, e, edges) / width == pytest.approx(mean, rel=1e-12)
    with pytest.raises(ValueError, match="sorted"):
        ifl.swept(s[::-1].copy(), e, edges)


def test_a_log_written_as_requests_end_and_a_store_read_in_runs_are_exact() -> None:
    """Apache and nginx write a line when the request ends (starts in order but for the
    requests in flight), and a parallel scan hands a store's row groups over in runs in
    another order: the pairs come out in start order, none lost or split, and requests in
    flight match the brute-force count."""
    rows = random_rows(n=2500, seed=5)
    written = rows.sort_values("ts_end", kind="stable")
    s, e = us_of(written["ts_start"]).to_numpy(), us_of(written["ts_end"]).to_numpy()
    runs = np.concatenate([part for part in np.array_split(np.arange(len(s)), 7)][::-1])  # 7 runs, reversed
    for order_given in (np.arange(len(s)), runs):
        given_s, given_e = s[order_given], e[order_given]
        assert not ifl._is_sorted(given_s)
        got_s, got_e = ifl.in_start_order(given_s, given_e)
        assert (np.diff(got_s) >= 0).all()
        pairs = sorted(zip(given_s.tolist(), given_e.tolist(), strict=True))
        assert sorted(zip(got_s.tolist(), got_e.tolist(), strict=True)) == pairs
    sorted_s = np.sort(s)
    assert ifl.in_start_order(sorted_s, sorted_s)[0] is sorted_s  # in order already: no copy
    got = timeline(store_of(written).con, bucket="10s")
    most, mean = brute_in_flight(s, e, int(got["bucket_us"].iloc[0]), 10_000_000, len(got))
    assert got["in_flight_max"].tolist() == most.tolist()
    assert got["in_flight_mean"].to_numpy() == pytest.approx(mean, rel=1e-9)


def test_series_by_server_each_exact() -> None:
    rows = random_rows(n=2000, seed=3)
    got = timeline(store_of(rows).con, by="server", bucket="30s")
    assert list(got.columns[:3]) == ["backend", "server", "start"]
    for server in ("app1", "app2"):
        mine, part = rows[rows["server"] == server], got[got["server"] == server]
        s = us_of(mine["ts_start"]).to_numpy()
        e = us_of(mine["ts_end"]).to_numpy()
        most, mean = brute_in_flight(s, e, int(part["bucket_us"].iloc[0]), 30_000_000, len(part))
        assert part["in_flight_max"].tolist() == most.tolist()
        assert part["in_flight_mean"].to_numpy() == pytest.approx(mean, rel=1e-9)
        assert part["requests"].sum() == len(mine)


def ceiling_rows(ceiling: int = 20) -> pd.DataFrame:
    """Ten minutes of light traffic (a request every 2 s, 50 ms each) around four minutes
    where `ceiling` workers serve requests back to back, each taking 2 s: the picture of a
    server at its concurrency limit, in flight held at exactly `ceiling`."""
    light = [(t, 50_000) for t in range(0, 900_000_000, 2_000_000) if not 300e6 <= t < 540e6]
    busy = [(300_000_000 + k * 2_000_000 + w * 1000, 2_000_000 - w * 1000) for w in range(ceiling)
            for k in range(120)]  # fmt: skip
    s, d = np.array([x for x, _ in light + busy]), np.array([y for _, y in light + busy])
    return pd.DataFrame({"ts_start": pd.to_datetime(T0_US + s, unit="us"),
                         "ts_end": pd.to_datetime(T0_US + s + d, unit="us"), "duration_us": d})  # fmt: skip


def test_saturation_found_with_its_ceiling() -> None:
    found = saturation(timeline(store_of(ceiling_rows()).con, bucket="30s"))
    assert len(found) == 1
    sat = found[0]
    assert sat.ceiling == 20
    assert abs((sat.start - (T0 + pd.Timedelta(seconds=300)).tz_localize("UTC")).total_seconds()) <= 30
    assert abs((sat.end - (T0 + pd.Timedelta(seconds=540)).tz_localize("UTC")).total_seconds()) <= 30
    assert sat.latency_ratio == pytest.approx(2_000_000 / 50_000, rel=0.05)
    assert "held at 20 for 4 min" in str(sat)


def test_no_saturation_in_random_traffic() -> None:
    assert saturation(timeline(store_of(random_rows()).con, bucket="10s")) == []


def logan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["logan", *args], capture_output=True, text=True, timeout=300)


def test_cli_json_and_events_from_haproxy_sample() -> None:
    log = REPO / "sample_logs" / "haproxy.log"
    r = logan("timeline", str(log), "--bucket", "1m", "-o", "json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert sum(b["requests"] for b in got) == 5000  # every request line, none of the event line
    assert got[0]["start"] == "2013-11-05T19:00:00.000Z" and got[1]["start"].startswith("2013-11-05T19:01:00")
    assert all(isinstance(b["p95_us"], float) and isinstance(b["in_flight_max"], int) for b in got)
    table = logan("timeline", str(log), "--bucket", "1m")
    assert "Server be_puppet/app1 is UP" in table.stdout
    events = story(store_with(log).con, bucket="1m").events
    assert events["kind"].tolist() == ["server_up"]


def store_with(log: Path):  # noqa: ANN201
    import logan as api

    store = api.open(None)
    api.ingest([str(log)], store)
    return store


CORPUS = Path("/work/shared/corpus/haproxy_no7dw/haproxy.log.1")


@pytest.mark.skipif(not CORPUS.exists(), reason=f"the real HAProxy log is not here: {CORPUS}")
def test_server_events_of_a_real_haproxy_log() -> None:
    import re

    # the health messages as the log writes them, read here with a plain regex
    want = []
    for line in CORPUS.read_text(errors="replace").splitlines():
        if m := re.match(r"(\w{3} \d\d \d\d:\d\d:\d\d) \S+ haproxy\[\d+\]: Server (\S+) is (DOWN|UP)", line):
            want.append((pd.Timestamp(f"2014 {m.group(1)}"), m.group(2), m.group(3)))
    told = story(store_with(CORPUS).con, bucket="1h")
    state = told.events[told.events["kind"].isin(["server_down", "server_up"])]
    got = [(e.ts, e.server, "DOWN" if e.kind == "server_down" else "UP") for e in state.itertuples()]
    assert got == want and len(want) == 8
    assert "connect" not in set(told.events["kind"])  # per-connection messages are traffic, not events
    r = logan("timeline", str(CORPUS), "--bucket", "1h")
    assert r.stdout.count(" is DOWN") == sum(1 for w in want if w[2] == "DOWN")


def test_a_log_without_durations_has_no_requests_in_flight(tmp_path: Path) -> None:
    lines = (REPO / "sample_logs" / "puppet_access.log").read_text().splitlines()[:500]
    log = tmp_path / "combined.log"  # the same requests without %D
    log.write_text("".join(" ".join(x.split(" ")[:-3] + x.split(" ")[-2:]) + "\n" for x in lines))
    r = logan("timeline", str(log), "--bucket", "10s", "-o", "json")
    got = json.loads(r.stdout)
    assert sum(b["requests"] for b in got) == 500
    assert "in_flight_max" not in got[0] and "p95_us" not in got[0]
    r = logan("timeline", str(log), "--by", "requester", "-o", "csv")  # requester_group: none at all
    assert r.returncode == 0, r.stderr
    assert sum(int(x["requests"]) for x in csv.DictReader(io.StringIO(r.stdout))) == 500
    r = logan("timeline", str(log), "--status", "599")
    assert r.returncode == 2 and "none the filters keep" in r.stderr


def test_cli_bad_bucket_is_one_line() -> None:
    r = logan("timeline", str(REPO / "sample_logs" / "haproxy.log"), "--bucket", "soon")
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "--bucket" in r.stderr


@pytest.mark.parametrize(("command", "said"), [("timeline", "in flight"), ("incidents", "1 incident found")])
def test_help_ends_with_an_example_that_runs(tmp_path: Path, command: str, said: str) -> None:
    r = subprocess.run(["logan", command, "--help"], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "COLUMNS": "300"})  # fmt: skip
    text = " ".join(r.stdout.split())
    assert "Example" in text.split("Options")[-1]  # after the options: the last thing shown
    first = text[text.index("Examples:") :].split(":", 1)[1].split("·")[0].split()
    assert first[:2] == ["logan", command]
    args = [a.replace("sample_logs/", f"{REPO}/sample_logs/") for a in first[2:]]
    ran = subprocess.run([*first[:2], *args], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert ran.returncode == 0 and said in ran.stdout, ran.stderr


def test_plot_shows_the_timeline_incidents_and_events(tmp_path: Path) -> None:
    import matplotlib.dates as mdates

    from logan.answer.incidents import incidents_of
    from logan.show.timeline_plot import timeline_figure

    store = store_with(REPO / "sample_logs" / "haproxy.log")
    told = story(store.con, bucket="2s")
    found = incidents_of(store.con, told)
    fig = timeline_figure(told, found)
    rate, latency, errors, flight = fig.axes
    frame = told.frame
    lines = {ax: {ln.get_label(): ln.get_ydata() for ln in ax.get_lines()} for ax in fig.axes}
    assert lines[rate]["requests/s"].tolist() == pytest.approx(frame["rate"].tolist())
    assert np.allclose(lines[latency]["p95"], frame["p95_us"] / 1000, equal_nan=True)
    assert lines[flight]["in flight (max)"].tolist() == frame["in_flight_max"].tolist()
    assert lines[errors]["5xx"].tolist() == pytest.approx((frame["status_5xx"] / 2).tolist())
    assert [ax.get_ylabel() for ax in fig.axes] == ["requests/s", "ms (log scale)", "responses/s", "requests"]
    assert latency.get_yscale() == "log" and "UTC" in flight.get_xlabel()
    assert rate.get_legend() is not None and "requests/s" in [
        t.get_text() for t in rate.get_legend().get_texts()
    ]
    # the incident shaded on every panel, where it was found
    want = [
        mdates.date2num(found["start"].iloc[0].tz_localize(None)),
        mdates.date2num(found["end"].iloc[0].tz_localize(None)),
    ]
    for ax in fig.axes:
        spans = [p.get_x() for p in ax.patches], [p.get_x() + p.get_width() for p in ax.patches]
        assert [spans[0][0], spans[1][0]] == pytest.approx(want)
    # the server event (app1 UP) as a vertical line at its time
    ev = mdates.date2num(told.events["ts"].iloc[0])
    assert any(
        np.allclose(mdates.date2num(ln.get_xdata()), ev)
        for ln in rate.get_lines()
        if ln.get_linestyle() == ":"
    )
    r = logan("timeline", str(REPO / "sample_logs" / "haproxy.log"), "--plot", str(tmp_path / "t.png"))
    assert r.returncode == 0 and (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"
    bad = logan("timeline", str(REPO / "sample_logs" / "haproxy.log"), "--plot", str(tmp_path / "t.txt"))
    assert bad.returncode == 2 and ".png or .svg" in bad.stderr


def test_a_flapping_server_is_ticked_not_drawn_line_by_line() -> None:
    """Past NAMED_EVENTS server events (a server flapping all day) each is a tick at the foot
    of the last panel, all in one collection, and the x axis says how many: a line and a
    label each took matplotlib 100 s for 7,379 events and hid the data."""
    import matplotlib.dates as mdates
    from matplotlib.collections import LineCollection

    from logan.show.timeline_plot import NAMED_EVENTS, timeline_figure

    told = story(store_of(random_rows()).con, bucket="10s")
    first = told.frame["start"].iloc[0].tz_localize(None)
    at = [first + pd.Timedelta(seconds=5 * k) for k in range(NAMED_EVENTS + 70)]
    told.events = pd.DataFrame({"ts": at, "kind": ["server_down", "server_up"] * (len(at) // 2),
                                "server": "be/app1", "text": "Server be/app1 is DOWN"})  # fmt: skip
    fig = timeline_figure(told, None)
    *upper, last = fig.axes
    ticks = [c for c in last.collections if isinstance(c, LineCollection)]
    assert len(ticks) == 1
    xs = [seg[0][0] for seg in ticks[0].get_segments()]
    assert xs == pytest.approx(mdates.date2num(at).tolist())
    assert not [ln for ln in upper[0].get_lines() if ln.get_linestyle() == ":"]  # no line per event
    assert not [t for t in last.texts if "server_" in t.get_text()]
    assert last.get_xlabel().endswith(f"; {len(at):,} server events, ticked at the foot")
    assert not any(isinstance(c, LineCollection) for ax in upper for c in ax.collections)


def test_plot_labels_are_log_content_not_math(tmp_path: Path) -> None:
    from logan.show.timeline_plot import timeline_figure

    t = pd.to_datetime(T0_US + np.arange(0, 600_000_000, 1_000_000), unit="us")
    names = ["$\\frac{", "a$b$c\x1b[31m"]  # a broken formula and a terminal escape, as a log could hold
    servers = [names[i % 2] for i in range(len(t))]
    ends = t + pd.Timedelta(milliseconds=5)
    rows = pd.DataFrame(
        {"ts_start": t, "ts_end": ends, "duration_us": 5000, "backend": "be", "server": servers}
    )
    store = store_of(rows)
    fig = timeline_figure(story(store.con, by="server"), None, ["backend", "server"])
    fig.savefig(tmp_path / "t.png")  # matplotlib would stop at the formula
    labels = sorted(ln.get_label() for ln in fig.axes[0].get_lines())
    assert labels == ["be \\$\\frac{ requests/s", "be a\\$b\\$c\\x1b[31m requests/s"]


def test_plot_names_each_source_by_its_file_and_keeps_the_legends_off_the_data() -> None:
    import logan as api
    from logan.show.timeline_plot import timeline_figure

    store = api.open(None)
    logs = [REPO / "sample_logs" / "nginx_access.log", REPO / "sample_logs" / "varnish_access.log"]
    api.ingest([str(p) for p in logs], store)
    told = story(store.con, by="source")
    fig = timeline_figure(told, None, ["source"])
    rate, latency = fig.axes[0], fig.axes[1]
    # the series named by file, not by the folder both share; each the rate of its own rows
    counts = told.frame.groupby("source")["rate"].apply(list)
    got = {ln.get_label(): ln for ln in rate.get_lines()}
    assert set(got) == {"nginx_access.log requests/s", "varnish_access.log requests/s"}
    for p in logs:
        assert got[f"{p.name} requests/s"].get_ydata().tolist() == pytest.approx(counts[str(p)])
    # a series keeps its colour on every panel; p50, p95 and p99 differ by line style
    for p in logs:
        lines = {ln.get_label(): ln for ln in latency.get_lines()}
        ps = [lines[f"{p.name} {q}"] for q in ("p50", "p95", "p99")]
        assert {ln.get_color() for ln in ps} == {got[f"{p.name} requests/s"].get_color()}
        assert len({ln.get_linestyle() for ln in ps}) == 3
    assert got["nginx_access.log requests/s"].get_color() != got["varnish_access.log requests/s"].get_color()
    # every legend right of its panel, clear of the plotted area
    fig.canvas.draw()
    for ax in fig.axes:
        box, legend = ax.get_window_extent(), ax.get_legend().get_window_extent()
        assert legend.x0 >= box.x1


@pytest.mark.skipif(ifl._sweep is None, reason="the compiled sweep (logan/answer/_sweep.c) is not built here")
def test_the_compiled_sweep_fed_in_pieces_is_the_brute_force_count() -> None:
    """A long store is swept a slice of time after another: the requests still in flight at
    a cut (some outlasting many buckets, some ending on an edge) are carried over, pieces
    may cut a run of equal starts, and a piece may be empty."""
    rng = np.random.default_rng(12)
    width, buckets = 1_000, 40
    s = np.sort(rng.integers(0, 40, 3000) * 1_000 // 4 + rng.choice([0, 1, 250], 3000))
    e = s + rng.choice([0, 0, 1, 250, 1_000, 5_000, 60_000], 3000)
    most, mean = brute_in_flight(s, e, 0, width, buckets)
    anywhere = sorted(rng.integers(0, 3000, 25).tolist() + [0, 3000])
    for cuts in ([0, 3000], [0, 0, 1, 1500, 1501, 3000], anywhere):
        sweep = ifl._sweep.Sweeper(0, width, buckets)
        for a, b in itertools.pairwise(cuts):
            sweep.feed(s[a:b], e[a:b])
        got_most, got_area = ifl._finished(sweep, buckets)
        assert got_most.tolist() == most.tolist()
        assert got_area / width == pytest.approx(mean, rel=1e-12)
    sweep = ifl._sweep.Sweeper(0, width, buckets)
    sweep.feed(s[1000:], e[1000:])
    with pytest.raises(ValueError, match="sorted"):  # a piece that goes back in time
        sweep.feed(s[:1000], e[:1000])


def test_a_timeline_in_slices_is_the_timeline_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past SLICE_REQUESTS a timeline is answered whole buckets at a time: the same frame,
    value for value, for one series and by a column with missing values (one series read
    in several slices stays one), and slices of whole buckets, none over the bound but a
    bucket that alone is."""
    import logan.answer.timeline as tl

    rows = random_rows(n=4000, seed=9)
    rows["environment"] = np.where(np.arange(len(rows)) % 3 == 0, None, "prod")
    rows.loc[rows.index[1500:1800], "ts_start"] = rows["ts_start"].iloc[1500]  # one crowded bucket
    rows.loc[rows.index[1500:1800], "ts_end"] = rows["ts_start"].iloc[1500] + pd.Timedelta(seconds=45)
    store = store_of(rows.sample(frac=1, random_state=1))  # in no order
    whole = {by: timeline(store.con, by=by, bucket="10s") for by in ((), "environment")}
    monkeypatch.setattr(tl, "SLICE_REQUESTS", 250)
    lo, width = int(whole[()]["bucket_us"].iloc[0]), 10_000_000
    hi = lo + len(whole[()]) * width
    cuts = tl.time_slices(store.con, lo, hi, width, "", [])
    assert cuts[0][0] == lo and cuts[-1][1] == hi and len(cuts) > 10
    assert all(a < b and b == c for (a, b), (c, _) in itertools.pairwise(cuts))  # contiguous, in order
    starts = us_of(rows["ts_start"]).to_numpy()
    for a, b in cuts:
        assert (a - lo) % width == 0 and (b - lo) % width == 0  # whole buckets
        inside = starts[(starts >= a) & (starts < b)]
        assert len(inside) <= 250 or len(np.unique(inside // width)) == 1  # over it only as one bucket
    for by, want in whole.items():
        got = timeline(store.con, by=by, bucket="10s")
        pd.testing.assert_frame_equal(got, want)
    assert whole["environment"]["environment"].isna().any()
