"""`logan report`: the day's figures against pandas/numpy on the store's raw rows, log text
shown as text in every form, and the HTML page as a real headless Chromium renders it (a
screenshot of the expected size that is not blank, no network request, no script run)."""

from __future__ import annotations

import html.parser
import os
import re
import shutil
import socket
import struct
import subprocess
import threading
from datetime import date, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from logan.answer import stats as st
from logan.nightly import report as rp
from logan.show.report_html import render_html
from logan.show.report_text import render
from logan.store import append_requests, open_store

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_logs"
TZ = "Europe/Berlin"  # UTC+1 in November: the local day starts at 23:00 UTC the day before
DAY = date(2026, 11, 23)


def logan(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["logan", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


# --- A store of known rows ----------------------------------------------------------------
def shaped_rows(seed: int = 7) -> pd.DataFrame:
    """Requests on the report's day, the day before and a week before (and the hours
    around their local midnights), with slower times and more errors on the report's day."""
    rng = np.random.default_rng(seed)
    frames = []
    for day, n, scale, errors in ((DAY, 900, 40_000, 0.05), (DAY - timedelta(1), 700, 25_000, 0.01),
                                  (DAY - timedelta(7), 800, 30_000, 0.02)):  # fmt: skip
        local_midnight = datetime.combine(day, datetime.min.time()) - timedelta(hours=1)  # in UTC
        offsets = rng.uniform(-2 * 3600, 26 * 3600, n)  # also 2 h either side of the day
        frames.append(
            pd.DataFrame({
                "ts_start": [local_midnight + timedelta(seconds=float(s)) for s in offsets],
                "duration_us": rng.exponential(scale, n).astype("int64") + 100,
                "status": np.where(rng.uniform(size=n) < errors, 503, 200),
                "method": rng.choice(["GET", "POST"], n, p=[0.8, 0.2]),
                "indirector": rng.choice(["catalog", "file_metadata", "report"], n),
                "requester": rng.choice([f"node{i}" for i in range(12)], n),
                "path": rng.choice([f"/a/{i}" for i in range(30)], n),
            })
        )  # fmt: skip
    rows = pd.concat(frames, ignore_index=True)
    rows.loc[rows.index[:5], "ts_start"] = [datetime(2026, 11, 22, 23, 0, 0)] * 5  # the first instant of DAY
    rows.loc[rows.index[5:8], "ts_start"] = [datetime(2026, 11, 23, 23, 0, 0)] * 3  # the first of the next
    rows.loc[rows.index[8], "duration_us"] = None  # an untimed request counts, has no time
    return rows


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    return shaped_rows()


@pytest.fixture(scope="module")
def con(rows):
    store = open_store(None)
    append_requests(store.con, rows)
    yield store.con
    store.close()


def on_local_day(rows: pd.DataFrame, day: date) -> pd.DataFrame:
    local = rows["ts_start"].dt.tz_localize("UTC").dt.tz_convert(TZ).dt.date
    return rows[local == day]


def figures_by_hand(rows: pd.DataFrame) -> dict:
    d = rows["duration_us"].dropna().to_numpy(float)
    return {
        "requests": len(rows),
        "total_us": d.sum(),
        "p50_us": np.percentile(d, 50),
        "p95_us": np.percentile(d, 95),
        "p99_us": np.percentile(d, 99),
        "error_share": (rows["status"] >= 500).mean(),
    }


def test_the_period_is_the_local_day_in_utc():
    p = rp.day_period(DAY, TZ)
    assert (p.start, p.end) == (datetime(2026, 11, 22, 23), datetime(2026, 11, 23, 23))
    summer = rp.day_period(date(2026, 3, 29), TZ)  # clocks go forward: a 23-hour day
    assert (summer.start, summer.end, summer.hours) == (
        datetime(2026, 3, 28, 23),
        datetime(2026, 3, 29, 22),
        23,
    )
    now = datetime(2026, 11, 24, 0, 30)  # 01:30 in Berlin: the 23rd is the last complete day there
    assert rp.last_complete_day(TZ, now).day == DAY and rp.last_complete_day("UTC", now).day == DAY


def test_headline_figures_match_numpy_on_the_raw_rows(con, rows):
    report = rp.build_report(con, rp.day_period(DAY, TZ), rp.ReportOptions(charts=False), ["headline"])
    got = {f.key: f for f in report.section("headline").figures}
    now = figures_by_hand(on_local_day(rows, DAY))
    before = figures_by_hand(on_local_day(rows, DAY - timedelta(1)))
    week = figures_by_hand(on_local_day(rows, DAY - timedelta(7)))
    for key, want in now.items():
        assert got[key].value == pytest.approx(want, rel=1e-9), key
    # each figure against the day before and a week before, as the report words it
    for key in ("requests", "total_us", "p95_us", "p99_us"):
        for change, then in ((got[key].vs_previous, before), (got[key].vs_week, week)):
            assert change.text == f"{(now[key] - then[key]) / then[key]:+.0%}", key
    assert (
        got["error_share"].vs_previous.text == f"{(now['error_share'] - before['error_share']) * 100:+.2g} pp"
    )
    # more time and more errors are worse (red), more requests neither
    assert got["p95_us"].vs_previous.worse is True and got["p95_us"].vs_previous.arrow == "▲"
    assert got["error_share"].vs_previous.worse is True
    assert got["requests"].vs_previous.worse is None
    assert report.subject() == f"logan: 2026-11-23: p95 {got['p95_us'].vs_previous.text}"


def test_the_day_picture_has_each_hours_figures_as_numpy_gives_them(con, rows):
    """queries/hourly.sql: requests, server time, p50 and p95 (from counts of each time, not
    quantile_cont) and 5xx share of every UTC hour of the local day."""
    got = st.view(con, "hourly", **rp.day_period(DAY, TZ).filters())
    day = on_local_day(rows, DAY)
    hours = day.groupby(day["ts_start"].dt.floor("h"))
    assert list(got["hour"]) == list(hours.groups) and len(got) == 24
    for (hour, group), (_, row) in zip(hours, got.iterrows(), strict=True):
        d = group["duration_us"].dropna().to_numpy(float)  # some rows have no time
        assert (row["requests"], row["total_us"]) == (len(group), d.sum()), hour
        assert row["p50_us"] == pytest.approx(np.percentile(d, 50), rel=1e-12), hour
        assert row["p95_us"] == pytest.approx(np.percentile(d, 95), rel=1e-12), hour
        assert row["error_share"] == pytest.approx((group["status"] >= 500).mean()), hour


def test_change_words():
    assert rp.change(140, 100, "us", True) == rp.Change("+40%", "▲", True)
    assert rp.change(60, 100, "us", True) == rp.Change("-40%", "▼", False)
    assert rp.change(101, 100, "us", True).arrow == "="  # within 2%: the same
    assert rp.change(5, 0, "count", None).text == "new"
    assert rp.change(None, 100, "us", True).text == "-"
    assert rp.change(0.031, 0.01, "share", True) == rp.Change("+2.1 pp", "▲", True)


def test_where_the_time_went_and_requesters_that_grew_match_pandas(con, rows):
    period = rp.day_period(DAY, TZ)
    report = rp.build_report(con, period, rp.ReportOptions(top=3, charts=False), ["time", "requesters"])
    day = on_local_day(rows, DAY)
    by_hand = day.groupby(["method", "indirector"])["duration_us"].sum().sort_values(ascending=False)
    table = report.section("time").tables[0].frame
    assert list(zip(table["method"], table["indirector"], strict=True)) == list(by_hand.index[:3])
    assert list(table["total_us"]) == [pytest.approx(v) for v in by_hand.iloc[:3]]
    assert table["share"].iloc[0] == pytest.approx(by_hand.iloc[0] / day["duration_us"].sum())

    now = day.groupby("requester").size()
    then = on_local_day(rows, DAY - timedelta(1)).groupby("requester").size()
    added = (now - then.reindex(now.index, fill_value=0)).sort_values(ascending=False)
    added = added[added > 0]
    grew = report.section("requesters").tables[0].frame
    want = sorted(added.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    assert list(zip(grew["requester"], grew["added"], strict=True)) == want
    assert list(grew["requests"]) == [now[r] for r, _ in want]


def requester_store(day_before: list, day: list):
    """A store of one request per name (None: no requester) at noon UTC of DAY - 1 and DAY."""
    frames = [
        pd.DataFrame({
            "ts_start": datetime.combine(d, datetime.min.time()) + timedelta(hours=12),
            "duration_us": 1000, "status": 200, "method": "GET", "path": "/a", "requester": names,
        })
        for d, names in ((DAY - timedelta(1), day_before), (DAY, day))
        if names
    ]  # fmt: skip
    store = open_store(None)
    append_requests(store.con, pd.concat(frames, ignore_index=True))
    return store


@pytest.mark.parametrize(
    ("day_before", "day", "verdict"),
    [
        (["a", "b", "b"], ["a", "a", "b", "c"], "2 grew, 1 new"),  # b: one fewer
        ([], ["a", "b"], "no requests the day before to compare with"),
        (["a", "b"], [None, None, None], "no requesters in the log"),  # the NULL group grew
        (["a", "b"], [], "no requesters in the log"),
        (["a", "a", "b", "c"], ["a", "b"], "none sent more requests than the day before"),
    ],
)
def test_requesters_that_grew_say_why_when_none_did(day_before, day, verdict):
    store = requester_store(day_before, day)
    report = rp.build_report(
        store.con, rp.day_period(DAY, "UTC"), rp.ReportOptions(charts=False), ["requesters"]
    )
    section = report.section("requesters")
    assert section.verdict == verdict
    if section.tables:  # a and c one more each (c new), tied: by name; b left out
        frame = section.tables[0].frame
        assert frame[["requester", "requests", "before", "added"]].values.tolist() == [
            ["a", 2, 1, 1],
            ["c", 1, 0, 1],
        ]


def test_sections_this_version_lacks_say_so(con):
    report = rp.build_report(con, rp.day_period(DAY, TZ), rp.ReportOptions(charts=False))
    assert [s.key for s in report.sections] == rp.SECTION_KEYS
    lacking = [s for s in report.sections if not s.available]
    assert {s.key for s in lacking} == {s.key for s in rp.SECTIONS if s.build is None}
    page, text = render_html(report), render(report, "text")
    for s in lacking:
        assert s.title in page and s.title.upper() in text
    assert page.count(rp.NOT_AVAILABLE) == len(lacking) == text.count(rp.NOT_AVAILABLE)


# --- What got slower, what a cache would save ----------------------------------------------
def test_a_day_without_requests_is_a_report_that_says_so(con):
    """cron runs the report of yesterday even when the server was down all day: every
    section is there and says it has nothing, none stops the report."""
    empty = rp.day_period(DAY + timedelta(days=30), "UTC")
    report = rp.build_report(con, empty, rp.ReportOptions(charts=False))
    assert [s.key for s in report.sections] == rp.SECTION_KEYS
    assert report.section("incidents").verdict.startswith("no requests")
    assert report.section("slower").verdict == "nothing changed beyond noise"
    assert report.section("cache").verdict == "nothing a cache could answer"
    assert not any(s.tables for s in report.sections if s.key not in ("headline", "health"))


def test_a_day_without_requests_names_the_days_the_store_holds(con, rows):
    """A log of last month reported on yesterday: the headline says which local days the
    store's requests are of, and how to report on the last."""
    local = rows["ts_start"].dt.tz_localize("UTC").dt.tz_convert(TZ).dt.date
    report = rp.build_report(con, rp.day_period(DAY + timedelta(days=30), TZ), rp.ReportOptions(charts=False))
    days = f"{local.min()} to {local.max()}"
    assert (
        report.section("headline").verdict
        == f"no requests; the store's are of {days} (--day latest reports on the last)"
    )
    assert report.subject().endswith(days + " (--day latest reports on the last)")
    untimed = open_store(None)  # a request without a start time is on no day
    try:
        append_requests(untimed.con, pd.DataFrame({"ts_start": [pd.NaT], "path": ["/a"]}))
        report = rp.build_report(untimed.con, rp.day_period(DAY, TZ), rp.ReportOptions(charts=False))
        assert report.section("headline").verdict == "no requests"
    finally:
        untimed.close()


def test_slower_names_the_endpoint_made_slower_against_the_day_before():
    rng = np.random.default_rng(3)
    frames = []
    for day, slow in ((DAY - timedelta(1), 1.0), (DAY, 2.0)):  # catalog twice as slow on DAY
        start = datetime.combine(day, datetime.min.time())
        for name, median_us, factor in (("catalog", 200_000, slow), ("node", 30_000, 1.0)):
            n = 400
            frames.append(pd.DataFrame({
                "ts_start": [start + timedelta(seconds=float(s)) for s in rng.uniform(0, 86_000, n)],
                "duration_us": rng.lognormal(np.log(median_us * factor), 0.4, n).astype("int64"),
                "status": 200, "method": "GET", "indirector": name, "path": f"/x/{name}",
            }))  # fmt: skip
    rows = pd.concat(frames, ignore_index=True)
    store = open_store(None)
    append_requests(store.con, rows)
    report = rp.build_report(store.con, rp.day_period(DAY, "UTC"), rp.ReportOptions(charts=False), ["slower"])
    table = report.section("slower").tables[0].frame
    assert table[["indirector", "verdict"]].values.tolist() == [["catalog", "regression"]]  # node: not
    day = rows[(rows.indirector == "catalog") & (rows.ts_start >= datetime.combine(DAY, datetime.min.time()))]
    assert table["b_p95_us"][0] == pytest.approx(np.percentile(day.duration_us, 95))
    assert report.section("slower").verdict == "1 slower, 0 faster"
    store.close()


def test_cache_candidates_replay_a_key_asked_every_10_s_through_a_60_s_cache():
    # one URL every 10 s for 10 min, 100 ms each: a copy lands 0.1 s after a miss and is
    # fresh for 60 s, so each miss is followed by 6 hits (by hand: misses at 0, 70, 140, ...,
    # 560 s: 9 of 60 requests)
    start = datetime.combine(DAY, datetime.min.time()) + timedelta(hours=12)
    rows = pd.DataFrame({
        "ts_start": [start + timedelta(seconds=10 * i) for i in range(60)],
        "duration_us": 100_000, "status": 200, "method": "GET", "indirector": "file_metadata",
        "route": "/x/{name}", "path": "/x/a", "bytes_sent": 300,
    })  # fmt: skip
    store = open_store(None)
    append_requests(store.con, rows)
    report = rp.build_report(store.con, rp.day_period(DAY, "UTC"), rp.ReportOptions(charts=False), ["cache"])
    table = report.section("cache").tables[0].frame
    assert table["ttl_s"].tolist() == [60, 3600]
    # 1 h: the first request misses, every other one finds the copy (59 of 60)
    assert table["backend_requests"].tolist() == [9, 1]
    assert table["hit_ratio"].tolist() == [pytest.approx(51 / 60), pytest.approx(59 / 60)]
    store.close()


# --- Ingest health ------------------------------------------------------------------------
def test_health_counts_rejects_by_reason_and_sees_a_source_go_missing(tmp_path):
    good = [f'192.0.2.{i} - - [23/Nov/2026:10:{i:02d}:00 +0000] "GET /p HTTP/1.1" 200 5 {i * 100} "-" "ua"'
            for i in range(20)]  # fmt: skip
    early = [line.replace("10:", "03:", 1) for line in good[:4]]  # a source whose last line is at 03:03
    (tmp_path / "a.log").write_text("\n".join(good + ["garbage one", "garbage two"]) + "\n")
    (tmp_path / "b.log").write_text("\n".join(early) + "\n")
    db = tmp_path / "s.duckdb"
    for name in ("a.log", "b.log"):
        r = logan("ingest", str(tmp_path / name), "--db", str(db), "--format", "combined_D", "--keep-going")
        assert r.returncode in (0, 3), r.stderr
    (tmp_path / "b.log").unlink()
    with open_store(db, read_only=True) as store:
        reasons = store.sql("SELECT reason, count(*) AS n FROM rejects GROUP BY reason")
        section = rp.health_section(
            store.con, rp.day_period(DAY, "UTC"), rp.ReportOptions(stale_us=6 * 3600e6)
        )
    sources, by_reason = (t.frame for t in section.tables)
    state = dict(zip(sources["source"].map(lambda s: Path(s).name), sources["state"], strict=True))
    assert state == {"a.log": "stopped growing", "b.log": "missing"}  # 10:19 is 13 h before midnight
    assert dict(zip(sources["source"].map(lambda s: Path(s).name), sources["lines"], strict=True)) == {
        "a.log": 22, "b.log": 4}  # fmt: skip
    assert dict(zip(by_reason["reason"], by_reason["lines"], strict=True)) == dict(
        zip(reasons["reason"], reasons["n"], strict=True)
    )
    assert by_reason["lines"].sum() == 2
    assert section.verdict == "26 lines, 2 rejected; 2 sources not ok"


# --- Log text is text ---------------------------------------------------------------------
SCRIPT_PATH = "/<script>document.title='PWNED'</script>"
IMG_AGENT = "\"><img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">"


@pytest.fixture(scope="module")
def hostile_log(tmp_path_factory) -> Path:
    """A combined_D log whose paths and user agents are markup (and one path with a
    dollar sign, which matplotlib would read as mathematics)."""
    folder = tmp_path_factory.mktemp("hostile")
    lines = []
    for i in range(60):
        path = (SCRIPT_PATH, "/$x$^{", "/plain")[i % 3]
        agent = IMG_AGENT.replace('"', '\\"') if i % 2 else "curl/8"
        lines.append(f'192.0.2.{i % 5} - - [23/Nov/2026:10:{i:02d}:00 +0000] "GET {path} HTTP/1.1" 200 5 '
                     f'{1000 + i * 50} "-" "{agent}"')  # fmt: skip
    log = folder / "hostile.log"
    log.write_text("\n".join(lines) + "\n")
    return log


@pytest.fixture(scope="module")
def hostile_page(hostile_log, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("page") / "report.html"
    r = logan("report", str(hostile_log), "--day", "2026-11-23", "--by", "route", "--by", "user_agent",
              "--out", str(out))  # fmt: skip
    assert r.returncode == 0, r.stderr
    return out


class Elements(html.parser.HTMLParser):
    """Every start tag with its attributes, and the text between tags."""

    def __init__(self, page: str):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):  # noqa: ANN001, ANN201
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):  # noqa: ANN001, ANN201
        self.text.append(data)


def test_markup_from_the_log_is_shown_as_text(hostile_page):
    page = Elements(hostile_page.read_text())
    assert not [t for t, _ in page.tags if t in ("script", "iframe", "object", "embed", "link", "base")]
    imgs = [a for t, a in page.tags if t == "img"]
    assert imgs and all(a["src"].startswith("data:image/png;base64,") for a in imgs)
    assert not [a for _, a in page.tags if any(k.startswith("on") for k in a)]  # no event handlers
    text = "".join(page.text)
    assert SCRIPT_PATH in text and IMG_AGENT in text  # shown, as written
    styled = [a for t, a in page.tags if t == "td" and "style" in a]
    assert styled, "the styles are inlined on the cells (mail clients drop <style>)"


def test_markdown_and_text_forms_keep_markup_inert(hostile_log):
    md = logan("report", str(hostile_log), "--day", "2026-11-23", "--by", "route", "--by", "user_agent",
               "--format", "markdown")  # fmt: skip
    assert md.returncode == 0, md.stderr
    assert not re.search(r"(?<!\\)<(script|img)", md.stdout)  # every < of the log escaped
    assert r"\<script\>document.title='PWNED'\</script\>" in md.stdout
    text = logan("report", str(hostile_log), "--day", "2026-11-23", "--by", "route", "--format", "text")
    assert text.returncode == 0 and SCRIPT_PATH in text.stdout


# --- A real browser -----------------------------------------------------------------------
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
needs_chromium = pytest.mark.skipif(
    not os.access(CHROMIUM, os.X_OK),
    reason="Chromium is not installed (Debian package chromium; .ci/run installs it)",
)


class Proxy:
    """A listener on loopback that Chromium is told to use as its proxy for every request:
    any http(s) request becomes a connection here, whose host is noted (from `CONNECT
    host:443` or `GET http://host/...`) before it is closed unanswered."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.hosts: list[str] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            # each on its own: a connection Chromium opens ahead may wait unused
            threading.Thread(target=self._note, args=(conn,), daemon=True).start()

    def _note(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                data = conn.recv(4096)
            except OSError:
                data = b""
            if not data:  # opened ahead and closed, or left, unused: no request
                return
            try:
                target = data.split(b"\r\n")[0].split(b" ")[1].decode()
            except (IndexError, UnicodeDecodeError):
                target = "?"
        self.hosts.append(re.sub(r"^\w+://", "", target).split("/")[0].split(":")[0])

    def close(self) -> None:
        self.sock.close()


def chromium(page: Path, proxy: Proxy, *mode: str, tmp: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp / 'profile'}",
         f"--proxy-server=http://127.0.0.1:{proxy.port}", "--proxy-bypass-list=<-loopback>",
         "--disable-background-networking", "--disable-component-update", "--no-first-run",
         "--disable-sync", "--disable-default-apps", "--virtual-time-budget=3000", *mode,
         page.as_uri()],
        capture_output=True, text=True, timeout=120, cwd=tmp,
    )  # fmt: skip


def hosts_asked(page: Path, tmp: Path, *mode: str) -> tuple[set[str], subprocess.CompletedProcess]:
    """The hosts Chromium asked for while showing `page`, beyond those it asks for on its
    own (update and account services, seen here on an empty page with the same profile and
    flags): what the page itself made it fetch."""
    empty = tmp / "empty.html"
    empty.write_text("<!DOCTYPE html><html><body>empty</body></html>")
    proxy = Proxy()
    try:
        chromium(empty, proxy, "--dump-dom", tmp=tmp)
        own = set(proxy.hosts)
        proxy.hosts.clear()
        r = chromium(page, proxy, *mode, tmp=tmp)
        return set(proxy.hosts) - own, r
    finally:
        proxy.close()


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@needs_chromium
def test_chromium_renders_the_report_without_network_or_script(hostile_page, tmp_path):
    """Chromium shows the page through a proxy that notes every host asked for (a page's
    request for anything but itself would be one); --dump-dom gives the DOM after the page
    ran whatever it would run, where a script from the log would have marked the body."""
    import matplotlib.image

    shot = tmp_path / "shot.png"
    asked, r = hosts_asked(hostile_page, tmp_path, f"--screenshot={shot}", "--window-size=800,1400")
    assert shot.is_file(), r.stderr[-2000:]
    assert png_size(shot.read_bytes()) == (800, 1400)
    pixels = matplotlib.image.imread(shot)[..., :3]
    inked = (pixels < 0.9).any(axis=2).mean()  # share of pixels that are not near-white
    assert 0.01 < inked < 0.6, inked  # text, tables and charts: neither blank nor a flood
    assert not asked, f"the report made the browser ask for {asked}"
    asked, dom = hosts_asked(hostile_page, tmp_path, "--dump-dom")
    assert not asked and dom.returncode == 0 and "</html>" in dom.stdout, dom.stderr[-2000:]
    rendered = Elements(dom.stdout)
    body = next(attrs for tag, attrs in rendered.tags if tag == "body")
    assert "data-pwned" not in body
    assert not [t for t, _ in rendered.tags if t == "script"]
    assert "PWNED" not in re.search(r"<title>(.*?)</title>", dom.stdout, re.S).group(1)
    assert SCRIPT_PATH.replace("<", "&lt;").replace(">", "&gt;") in dom.stdout  # shown as text
    # and nothing in the page names anything to fetch: images are data: URIs, no links
    urls = [
        v for _, a in Elements(hostile_page.read_text()).tags for k, v in a.items() if k in ("src", "href")
    ]
    assert urls and all(u.startswith("data:image/png;base64,") for u in urls)


@needs_chromium
def test_the_browser_checks_would_see_a_request_and_a_script(tmp_path):
    """The checks above are not blind: a page that loads a remote image makes the browser
    ask for its host, and a script in a page does change its DOM in this browser."""
    bad = tmp_path / "bad.html"
    bad.write_text('<html><body><img src="http://example.com/x.png"><script>'
                   "document.body.setAttribute('data-pwned','1')</script></body></html>")  # fmt: skip
    asked, dom = hosts_asked(bad, tmp_path, "--dump-dom")
    assert asked == {"example.com"}
    assert 'data-pwned="1"' in dom.stdout


# --- The command --------------------------------------------------------------------------
def test_report_command_forms_and_errors(tmp_path):
    r = logan("report", str(SAMPLES / "puppet_access.log"), "--day", "latest", "--format", "text")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("logan: 2013-11-05: p95 ") and "WHERE THE TIME WENT" in r.stdout
    for args, needle in (
        (["--day", "someday"], "--day 'someday'"),
        (["--tz", "Mars/Olympus"], "unknown time zone 'Mars/Olympus'"),
        (["--section", "gossip"], "unknown report section 'gossip'"),
        (["--format", "pdf"], "--format 'pdf'"),
    ):
        r = logan("report", str(SAMPLES / "puppet_access.log"), *args)
        assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["report", "mail"])
def test_help_ends_with_an_example_that_runs(tmp_path, command):
    env = dict(os.environ, COLUMNS="300")
    help_text = subprocess.run(["logan", command, "--help"], capture_output=True, text=True, env=env).stdout
    text = " ".join(help_text.split())
    first = text[text.index("Example") :].split(":", 1)[1].split("·")[0].strip().split(" ")
    assert first[:2] == ["logan", command]
    r = logan(command, *[a.replace("sample_logs/", f"{SAMPLES}/") for a in first[2:]], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    made = [p for p in tmp_path.iterdir() if p.suffix in (".html", ".eml")]
    assert made and made[0].stat().st_size > 10_000


def test_slo_breaches_are_in_the_verdict(con, rows):
    p95 = np.percentile(on_local_day(rows, DAY)["duration_us"].dropna(), 95)
    options = rp.ReportOptions(charts=False, slos={"p95_us": p95 - 1, "p99_us": 10**12, "error_share": 0.5})
    verdict = rp.build_report(con, rp.day_period(DAY, TZ), options, ["headline"]).section("headline").verdict
    assert verdict.endswith(", p95 over its SLO")
    options = rp.ReportOptions(charts=False, slos={"p95_us": p95 + 1})
    assert "SLO" not in rp.build_report(con, rp.day_period(DAY, TZ), options, ["headline"]).subject()


def test_an_incident_of_the_day_is_listed_and_in_the_subject():
    """A quiet day (a request every 10 s, 10 ms each) with a slow burst from 14:00 to 14:20
    (5 a second, 500 ms each): the incidents section lists an incident over that burst."""
    start = datetime(2026, 11, 23)
    quiet = [start + timedelta(seconds=10 * i) for i in range(8640)]
    burst = [datetime(2026, 11, 23, 14) + timedelta(milliseconds=200 * i) for i in range(6000)]
    rows = pd.DataFrame({
        "ts_start": quiet + burst,
        "duration_us": [10_000] * len(quiet) + [500_000] * len(burst),
        "status": 200, "method": "GET", "path": "/a",
    })  # fmt: skip
    store = open_store(None)
    append_requests(store.con, rows)
    report = rp.build_report(
        store.con, rp.day_period(DAY), rp.ReportOptions(charts=False), ["headline", "incidents"]
    )
    section = report.section("incidents")
    table = section.tables[0].frame
    t14, t1420 = pd.Timestamp("2026-11-23 14:00", tz="UTC"), pd.Timestamp("2026-11-23 14:20", tz="UTC")
    over = table[(table["start"] < t1420) & (table["end"] > t14)]
    assert len(over) >= 1, table
    assert section.verdict == f"{len(table)} incident{'s' if len(table) > 1 else ''}"
    assert report.subject().endswith(section.verdict)


def test_the_incidents_section_draws_the_day_with_its_incidents_shaded():
    """The slow burst of the test above, with charts: the section's picture is the day's
    timeline at a mail column's width, the incident shaded where it was found, and the
    requests per second drawn are the timeline's."""
    import matplotlib.dates as mdates

    from logan.answer.incidents import incidents_of
    from logan.answer.timeline import story
    from logan.show import charts

    start = datetime(2026, 11, 23)
    quiet = [start + timedelta(seconds=10 * i) for i in range(8640)]
    burst = [datetime(2026, 11, 23, 14) + timedelta(milliseconds=200 * i) for i in range(6000)]
    durations = [10_000] * len(quiet) + [500_000] * len(burst)
    rows = pd.DataFrame({"ts_start": quiet + burst, "duration_us": durations, "status": 200, "method": "GET",
                         "path": "/a"})  # fmt: skip
    store = open_store(None)
    append_requests(store.con, rows)
    period = rp.day_period(DAY)
    section = rp.build_report(store.con, period, rp.ReportOptions(), ["incidents"]).section("incidents")
    told = story(store.con, (), **period.filters())
    found = incidents_of(store.con, told, period.filters())
    assert not found.empty
    assert png_size(section.chart) == (round(charts.WIDTH_IN * charts.DPI), 700)
    assert section.chart == charts.timeline_chart(told, found)  # drawn from this timeline
    fig = charts.timeline_report_figure(told, found)
    rate = fig.axes[0]
    drawn = {ln.get_label(): ln.get_ydata() for ln in rate.get_lines()}["requests/s"]
    assert drawn.tolist() == pytest.approx(told.frame["rate"].tolist())
    want = [mdates.date2num(found[c].iloc[0].tz_localize(None)) for c in ("start", "end")]
    for ax in fig.axes:
        span = ax.patches[0]
        assert [span.get_x(), span.get_x() + span.get_width()] == pytest.approx(want)
