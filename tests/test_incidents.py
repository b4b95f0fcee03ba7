"""`logan incidents`: generated traffic with incidents injected where and how the test
chooses (a burst from one requester group, a slowdown of one endpoint, a server down, a
concurrency ceiling, several in one log), found with their boundaries within one bucket
and the injected cause ranked first; none in steady traffic with ordinary noise; the spike
the sample logs were generated with, found where the generator put it."""

from __future__ import annotations

import heapq
import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from logan.answer.incidents import incidents
from logan.store import append_requests, open_store

REPO = Path(__file__).resolve().parents[1]
T0 = pd.Timestamp("2024-03-01 23:00:00")
WIDTH = pd.Timedelta(seconds=60)  # an hour of traffic: the timeline's own choice of bucket

# endpoint -> (share of requests, median duration in ms)
ENDPOINTS = {
    "catalog": (0.15, 300.0),
    "file_metadata": (0.50, 20.0),
    "report": (0.30, 80.0),
    "node": (0.05, 150.0),
}
GROUPS = {"fleet-a": 0.45, "fleet-b": 0.30, "fleet-c": 0.15, "bots": 0.10}
SERVERS = ("app1", "app2", "app3")


@dataclass
class Traffic:
    """An hour of requests at `rate` a second: endpoints, requester groups (50 requesters
    each), environments and servers drawn at their shares, durations log-normal about each
    endpoint's median, 0.3% 500s; the injections applied in order."""

    rate: float = 20.0
    minutes: int = 60
    seed: int = 1
    rows: pd.DataFrame = field(init=False)

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)
        self.rows = self.requests(0, self.minutes * 60, self.rate)

    def requests(self, t0: float, t1: float, rate: float, group: str | None = None) -> pd.DataFrame:
        rng = self.rng
        n = rng.poisson(rate * (t1 - t0))
        start = np.sort(rng.uniform(t0, t1, n))
        endpoint = rng.choice(list(ENDPOINTS), n, p=[s for s, _ in ENDPOINTS.values()])
        median_ms = np.array([ENDPOINTS[e][1] for e in endpoint])
        groups = np.full(n, group) if group else rng.choice(list(GROUPS), n, p=list(GROUPS.values()))
        return pd.DataFrame({
            "start_s": start,
            "duration_us": np.round(median_ms * 1000 * rng.lognormal(0, 0.5, n)).astype("int64"),
            "method": "GET",
            "indirector": endpoint,
            "requester_group": groups,
            "requester": [f"{g}-{k}" for g, k in zip(groups, rng.integers(0, 50, n), strict=True)],
            "environment": rng.choice(["production", "staging"], n, p=[0.8, 0.2]),
            "backend": "be_app",
            "server": rng.choice(SERVERS, n),
            "status": np.where(rng.random(n) < 0.003, 500, 200),
        })  # fmt: skip

    def window(self, a_min: float, b_min: float) -> np.ndarray:
        return (self.rows["start_s"] >= a_min * 60) & (self.rows["start_s"] < b_min * 60)

    def burst(self, a: float, b: float, group: str = "bots", factor: float = 4.0) -> Traffic:
        """`factor` times the rate, the extra all from one requester group."""
        extra = self.requests(a * 60, b * 60, self.rate * (factor - 1), group)
        self.rows = pd.concat([self.rows, extra]).sort_values("start_s", ignore_index=True)
        return self

    def slowdown(self, a: float, b: float, endpoint: str = "catalog", factor: float = 15.0) -> Traffic:
        hit = self.window(a, b) & (self.rows["indirector"] == endpoint)
        self.rows.loc[hit, "duration_us"] *= int(factor)
        return self

    def server_down(self, a: float, b: float, server: str = "app2") -> Traffic:
        """The server answers nothing: the balancer sends its share to the others."""
        hit = self.window(a, b) & (self.rows["server"] == server)
        others = [s for s in SERVERS if s != server]
        self.rows.loc[hit, "server"] = self.rng.choice(others, int(hit.sum()))
        return self

    def errors(self, a: float, b: float, endpoint: str = "report", share: float = 0.6) -> Traffic:
        hit = (
            self.window(a, b)
            & (self.rows["indirector"] == endpoint)
            & (self.rng.random(len(self.rows)) < share)
        )
        self.rows.loc[hit, "status"] = 503
        return self

    def ceiling(self, workers: int) -> float:
        """Serve every request with `workers` workers, first come first served: a request
        waits (unlogged, as Apache's backlog) until a worker is free; its logged start is
        when a worker takes it. Returns the second the last wait ended."""
        free = [0.0] * workers
        starts, last_wait = [], 0.0
        for arrival, d in zip(self.rows["start_s"], self.rows["duration_us"], strict=True):
            begin = max(arrival, heapq.heappop(free))
            if begin > arrival:
                last_wait = begin
            heapq.heappush(free, begin + d / 1e6)
            starts.append(begin)
        self.rows["start_s"] = starts
        return last_wait

    def store(self):  # noqa: ANN201
        rows = self.rows.copy()
        start_us = (T0.value // 1000 + np.round(rows.pop("start_s") * 1e6)).astype("int64")
        rows["ts_start"] = pd.to_datetime(start_us, unit="us")
        rows["ts_end"] = pd.to_datetime(start_us + rows["duration_us"], unit="us")
        store = open_store(None)
        append_requests(store.con, rows)
        return store


def at(minute: float) -> pd.Timestamp:
    return (T0 + pd.Timedelta(minutes=minute)).tz_localize("UTC")


def found_in(traffic: Traffic) -> pd.DataFrame:
    got = incidents(traffic.store().con)
    assert (got["end"] > got["start"]).all()
    return got


def the_one_at(got: pd.DataFrame, a: float, b: float) -> pd.Series:
    """The incident found for an injection from minute a to b: its boundaries within one
    bucket of the injected ones."""
    near = got[(abs(got["start"] - at(a)) <= WIDTH) & (abs(got["end"] - at(b)) <= WIDTH)]
    assert len(near) == 1, (a, b, got[["start", "end", "kind"]])
    return near.iloc[0]


def first_cause(incident: pd.Series) -> tuple[str, str]:
    c = incident["causes"][0]
    return c["dimension"], c["value"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_no_incident_in_steady_noisy_traffic(seed: int) -> None:
    assert found_in(Traffic(seed=seed)).empty


def test_a_burst_from_one_requester_group() -> None:
    got = found_in(Traffic().burst(20, 27, "bots"))
    inc = the_one_at(got, 20, 27)
    assert inc["kind"] == "burst" and len(got) == 1
    assert first_cause(inc) == ("requester_group", "bots")
    assert inc["causes"][0]["explains"] == pytest.approx(1.0, abs=0.15)  # all the extra requests
    assert inc["rate_ratio"] == pytest.approx(4.0, rel=0.3)


def test_a_slowdown_of_one_endpoint() -> None:
    got = found_in(Traffic().slowdown(30, 36, "catalog"))
    inc = the_one_at(got, 30, 36)
    assert inc["kind"] == "slowdown" and len(got) == 1
    assert first_cause(inc) == ("indirector", "catalog")
    assert inc["causes"][0]["measure"] == "time"


def test_one_server_down() -> None:
    got = found_in(Traffic().server_down(40, 46, "app2"))
    inc = the_one_at(got, 40, 46)
    assert inc["kind"] == "backend down" and len(got) == 1
    assert first_cause(inc) == ("server", "app2")
    assert inc["causes"][0]["incident_share"] == 0 and "app2 stopped answering" in inc["change"]


def test_errors_from_one_endpoint() -> None:
    got = found_in(Traffic().errors(10, 14, "report"))
    inc = the_one_at(got, 10, 14)
    assert inc["kind"] == "errors" and len(got) == 1
    assert first_cause(inc) in {("indirector", "report"), ("status", "503")}
    dims = {c["dimension"]: c["value"] for c in inc["causes"]}
    assert dims["indirector"] == "report"
    assert inc["error_share"] == pytest.approx(0.3 * 0.6, abs=0.05)


def test_a_concurrency_ceiling() -> None:
    traffic = Traffic().slowdown(25, 31, "catalog", factor=12)
    drained = traffic.ceiling(workers=12) / 60  # the minute the backlog was served
    got = found_in(traffic)
    inc = the_one_at(got, 25, drained)
    assert inc["kind"] == "saturation" and inc["in_flight_max"] == 12
    assert "held at 12" in inc["saturation"]
    assert first_cause(inc) == ("indirector", "catalog")


def test_several_in_one_log() -> None:
    traffic = Traffic(seed=5).burst(8, 12, "fleet-c", factor=3).slowdown(22, 27, "report", factor=10)
    got = found_in(traffic.server_down(38, 44, "app3").burst(50, 53, "bots", factor=5))
    assert len(got) == 4, got[["start", "end", "kind", "cause"]]
    for (a, b), kind, cause in [
        ((8, 12), "burst", ("requester_group", "fleet-c")),
        ((22, 27), "slowdown", ("indirector", "report")),
        ((38, 44), "backend down", ("server", "app3")),
        ((50, 53), "burst", ("requester_group", "bots")),
    ]:
        inc = the_one_at(got, a, b)
        assert inc["kind"] == kind and first_cause(inc) == cause


def spike_of_sample(name: str) -> tuple[pd.Timestamp, pd.Timestamp]:
    """Where logan.generate put the spike: the tenth of the lines from 40% on (its
    docstring), read here off the log's own timestamps."""
    import re

    lines = (REPO / "sample_logs" / name).read_text().splitlines()
    lines = [x for x in lines if '"' in x]  # requests, not HAProxy's server messages
    n = len(lines)

    def ts(line: str) -> pd.Timestamp:
        m = re.search(r"\[(\d\d/\w\w\w/\d{4}:\d\d:\d\d:\d\d(?:\.\d+)?)", line)
        return pd.to_datetime(m.group(1).split(".")[0], format="%d/%b/%Y:%H:%M:%S").tz_localize("UTC")

    return ts(lines[int(0.4 * n)]), ts(lines[int(0.5 * n) - 1])


@pytest.mark.parametrize(
    "name", ["puppet_access.log", "nginx_access.log", "haproxy.log", "varnish_access.log"]
)
def test_the_spike_in_the_sample_logs(name: str) -> None:
    r = subprocess.run(["logan", "incidents", str(REPO / "sample_logs" / name), "-o", "json"],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    a, b = spike_of_sample(name)
    assert len(got) == 1 and got[0]["kind"] == "burst"
    start, end = pd.Timestamp(got[0]["start"]), pd.Timestamp(got[0]["end"])
    width = pd.Timedelta(microseconds=got[0]["width_us"])  # the log's seconds: a bucket and a second
    assert abs(start - a) <= width + pd.Timedelta(seconds=1) and abs(end - b) <= width + pd.Timedelta(
        seconds=1
    )
    assert got[0]["start"].endswith("Z") and isinstance(got[0]["causes"], list)


def test_the_statistics_are_scipys() -> None:
    from scipy.spatial.distance import jensenshannon
    from scipy.stats import median_abs_deviation

    from logan.answer.incidents import robust_z, surprises

    rng = np.random.default_rng(4)
    x = rng.lognormal(3, 1, 101)
    want = (x - np.median(x)) / median_abs_deviation(x, scale="normal")
    assert robust_z(x) == pytest.approx(want, rel=1e-12)
    p, q = rng.dirichlet(np.ones(7)), rng.dirichlet(np.ones(7))
    q[2] = 0
    q /= q.sum()
    assert surprises(p, q).sum() == pytest.approx(jensenshannon(p, q) ** 2, rel=1e-12)


def test_a_server_down_all_day_leaves_no_baseline(tmp_path: Path) -> None:
    """HAProxy said a server went down in the first second and never up again: every
    bucket is in the incident, none is left to compare with. The incident is told with what
    it shows (the server that stopped answering), its ratios empty and its cause saying why,
    in the library and on the command line (this was a traceback)."""
    from logan.answer.incidents import NO_BASELINE

    traffic = Traffic(seed=4).server_down(0, 60, "app2")
    db = tmp_path / "s.duckdb"
    with open_store(db) as store:
        append_requests(store.con, traffic.store().con.execute("SELECT * FROM requests").df())
        store.con.execute(
            "INSERT INTO events (ts, source, line_no, kind, server, text) VALUES (?, 'haproxy.log', 1,"
            " 'server_down', 'be_app/app2', 'Server be_app/app2 is DOWN')",
            [(T0 + pd.Timedelta(seconds=1)).to_pydatetime()],
        )
        got = incidents(store.con)
    assert len(got) == 1
    inc = got.iloc[0]
    assert inc["kind"] == "backend down" and inc["change"] == "app2 stopped answering"
    assert inc["start"] == at(0) and inc["end"] == at(60)  # the whole hour, bucket for bucket
    assert inc["cause"] == NO_BASELINE and inc["causes"] == []
    assert inc["rate_ratio"] is None and inc["p95_ratio"] is None and inc["baseline_error_share"] is None
    for output in ("json", "table"):
        r = subprocess.run(["logan", "incidents", "--db", str(db), "-o", output], capture_output=True,
                           text=True, timeout=300, env={**os.environ, "COLUMNS": "300"})  # fmt: skip
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        assert "app2 stopped answering" in r.stdout and NO_BASELINE in r.stdout
