"""Varnish dialect (varnishncsa): lines written from the varnishncsa documentation, and a
real varnishd + varnishncsa on loopback (Debian package `varnish`)."""

from __future__ import annotations

import contextlib
import http.server
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from logan.read.compile import compile_format
from logan.read.dialects import get_dialect
from logan.read.ingest import ingest as run_ingest

DEFAULT = '%h %l %u %t "%r" %s %b "%{Referer}i" "%{User-agent}i"'


def ingest(tmp_path: Path, lines: list[str] | Path, fmt: str):
    if isinstance(lines, list):
        path = tmp_path / "varnishncsa.log"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        path = lines
    s = run_ingest([str(path)], format=fmt, dialect="varnish", profile="none")
    assert s.rows + s.rejects == s.lines
    return s, s.store.con


def rows(con, cols: str) -> list[tuple]:
    return con.execute(f"SELECT {cols} FROM requests ORDER BY line_no").fetchall()


# ---- from the documentation -------------------------------------------------------------


def test_default_format_absolute_url_gives_host_path_query(tmp_path):
    line = '192.0.2.7 - - [22/Nov/2026:12:00:00 +0100] "GET http://www.example.com/a/b?x=1 HTTP/1.1" 200 6 "-" "curl/8.0"'  # noqa: E501
    s, con = ingest(tmp_path, [line], "varnish:default")
    assert (s.rows, s.rejects) == (1, 0)
    assert rows(
        con, "ts_start, client, method, vhost, path, query, protocol, status, bytes_sent, user_agent"
    ) == [
        (
            datetime(2026, 11, 22, 11, 0, 0),
            "192.0.2.7",
            "GET",
            "www.example.com",
            "/a/b",
            "x=1",
            "HTTP/1.1",
            200,
            6,
            "curl/8.0",
        )
    ]


def test_default_preset_is_the_documented_default():
    assert get_dialect("varnish").presets["default"] == DEFAULT


def test_t_is_the_start_and_D_gives_the_end(tmp_path):
    fmt = DEFAULT + " %D %{Varnish:time_firstbyte}x %{Varnish:hitmiss}x %{Varnish:handling}x"
    lines = [
        '::1 - - [01/Jan/2024:00:00:00 +0000] "GET http://h/ HTTP/1.1" 200 - "-" "-" 4540 0.004441 miss miss',
        '::1 - - [01/Jan/2024:00:00:01 +0000] "GET http://h/ HTTP/1.1" 200 6 "-" "-" 78 0.000050 hit hit',
        '::1 - - [01/Jan/2024:00:00:02 +0000] "POST http://h/f HTTP/1.1" 501 357 "-" "-" 790 0.000772 miss pass',  # noqa: E501
        '::1 - - [01/Jan/2024:00:00:03 +0000] "GET http://h/s HTTP/1.1" 200 0 "-" "-" 12 0.000010 miss synth',
    ]
    s, con = ingest(tmp_path, lines, fmt)
    assert (s.rows, s.rejects) == (4, 0)
    start = datetime(2024, 1, 1)
    cols = "ts_start, ts_end, duration_us, ttfb_us, cache_status, bytes_sent, extra['varnish.hitmiss']"
    # (second of the line, %D, time_firstbyte in us, verdict, %b, hitmiss)
    expected = [(0, 4540, 4441, "MISS", None, "miss"), (1, 78, 50, "HIT", 6, "hit"),
                (2, 790, 772, "PASS", 357, "miss"), (3, 12, 10, "SYNTH", 0, "miss")]  # fmt: skip
    assert rows(con, cols) == [
        (start + timedelta(seconds=k), start + timedelta(seconds=k, microseconds=d), d, fb, cache, b, hm)
        for k, d, fb, cache, b, hm in expected
    ]


def test_hitmiss_alone_fills_cache_status(tmp_path):
    s, con = ingest(tmp_path, ["1.2.3.4 hit", "1.2.3.4 miss"], "%h %{Varnish:hitmiss}x")
    assert rows(con, "cache_status") == [("HIT",), ("MISS",)]


@pytest.mark.parametrize(
    ("fmt", "text", "us"),
    [
        ("%T", "2", 2_000_000),
        ("%{s}T", "0", 0),
        ("%{ms}T", "15", 15_000),
        ("%{us}T", "1500", 1500),
        ("%D", "7", 7),
    ],
)
def test_duration_units(tmp_path, fmt, text, us):
    _, con = ingest(tmp_path, [f"1.2.3.4 {text}"], f"%h {fmt}")
    assert rows(con, "duration_us") == [(us,)]


def test_strftime_and_epoch_times(tmp_path):
    fmt = "%{%Y-%m-%dT%H:%M:%S}t.%{usec_frac}t %{sec}t %{msec}t %s"
    s, con = ingest(tmp_path, ["2024-05-06T07:08:09.123456 1714979289 1714979289123 200"], fmt)
    assert (s.rows, s.rejects) == (1, 0)
    assert rows(con, "ts_start") == [(datetime(2024, 5, 6, 7, 8, 9, 123456),)]
    _, con2 = ingest(tmp_path, ["1714979289123 200"], "%{msec}t %s")
    assert rows(con2, "ts_start") == [(datetime(2024, 5, 6, 7, 8, 9, 123000),)]


def test_url_query_and_extended_variables(tmp_path):
    fmt = '%m %U %q %H %s "%{VCL_Log:backend}x" %{Varnish:side}x %{Varnish:vxid}x %{X-Cache}o %{VSL:Timestamp:Resp[2]}x'  # noqa: E501
    lines = [
        'GET http://example.org/img/a.png ?w=10 HTTP/1.1 200 "be one" c 32770 HIT 1700000000.000001',
        'GET /x  HTTP/1.0 404 "-" c 5 MISS -',
    ]
    s, con = ingest(tmp_path, lines, fmt)
    assert (s.rows, s.rejects) == (2, 0)
    assert rows(con, "method, path, query, protocol, cache_status, extra") == [
        (
            "GET",
            "/img/a.png",
            "w=10",
            "HTTP/1.1",
            "HIT",
            {
                "vcl_log.backend": "be one",
                "varnish.side": "c",
                "varnish.vxid": "32770",
                "vsl.Timestamp:Resp[2]": "1700000000.000001",
            },
        ),
        (
            "GET",
            "/x",
            None,
            "HTTP/1.0",
            "MISS",
            # every extra field of the format is an entry, NULL where the line has "-"
            {
                "vcl_log.backend": None,
                "varnish.side": "c",
                "varnish.vxid": "5",
                "vsl.Timestamp:Resp[2]": None,
            },
        ),
    ]


def test_c_style_escapes(tmp_path):
    # varnishncsa writes \" \\ and \xXX in values; we decode \" and \\ only.
    line = (
        r'1.2.3.4 - - [01/Jan/2024:00:00:00 +0000] "GET http://h/ HTTP/1.1" 200 6 "-" "ua \"quoted\" \\ \x01"'
    )
    s, con = ingest(tmp_path, [line], "varnish:default")
    assert (s.rows, s.rejects) == (1, 0)
    assert rows(con, "user_agent") == [('ua "quoted" \\ \\x01',)]


def test_json_mode(tmp_path):
    # varnishncsa -j -F '{"t":"%t","s":%s,"D":%D,"ua":"%{User-agent}i"}'
    fmt = 'escape=json {"t":"%{%Y-%m-%dT%H:%M:%S%z}t","s":%s,"D":%D,"ua":"%{User-agent}i","h":"%{Varnish:handling}x"}'  # noqa: E501
    lines = ['{"t":"2024-01-01T01:00:00+0100","s":200,"D":120,"ua":"a \\"b\\" \\u0001","h":"hit"}']
    s, con = ingest(tmp_path, lines, fmt)
    assert (s.rows, s.rejects) == (1, 0)
    assert rows(con, "ts_start, status, duration_us, user_agent, cache_status") == [
        (datetime(2024, 1, 1), 200, 120, 'a "b" \\u0001', "HIT")
    ]


def test_tab_escape_in_F_string_and_split_path():
    cf = compile_format(get_dialect("varnish"), "%h\\t%s\\t%D", "x")
    assert [x for x in cf.items if isinstance(x, str)] == ["\t", "\t"]
    assert ", '\t')" in cf.fast_raw_sql("t")  # split on tabs
    for preset in ("default", "timed"):
        assert compile_format(
            get_dialect("varnish"), get_dialect("varnish").presets[preset], preset
        ).fast_raw_sql("t")


# ---- a real varnishd ---------------------------------------------------------------------

VARNISHD = shutil.which("varnishd") or next(
    (p for p in ("/usr/sbin/varnishd", "/usr/local/sbin/varnishd") if Path(p).exists()), None
)
VARNISHNCSA = shutil.which("varnishncsa")
REAL_FMT = (
    DEFAULT + " %D %{Varnish:time_firstbyte}x %{Varnish:hitmiss}x %{Varnish:handling}x %U %q %{X-Backend}o"
)


class _Backend(http.server.BaseHTTPRequestHandler):
    """A tiny origin: cacheable 200s, a 404 for /missing; POSTs are answered too."""

    def _answer(self) -> None:
        code = 404 if self.path.startswith("/missing") else 200
        body = f"path {self.path}\n".encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "max-age=60")
        self.send_header("X-Backend", "py")
        self.end_headers()
        self.wfile.write(body)

    do_GET = _answer

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._answer()

    def log_message(self, *args) -> None:  # noqa: ANN002
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, method: str = "GET", ua: str = "logan-test") -> int:
    req = urllib.request.Request(
        url, method=method, headers={"User-Agent": ua}, data=b"x" if method == "POST" else None
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


@contextlib.contextmanager
def _varnish(tmp_path: Path):
    """varnishd on loopback in front of an in-process backend; yields (port, workdir)."""
    backend = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Backend)
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    port = _free_port()
    workdir = tmp_path / "varnish"  # private -n directory: no clash with a system varnishd
    proc = subprocess.Popen(
        [
            VARNISHD,
            "-F",
            "-j",
            "none",
            "-n",
            str(workdir),
            "-a",
            f"127.0.0.1:{port}",
            "-b",
            f"127.0.0.1:{backend.server_address[1]}",
            "-s",
            "malloc,16m",
            "-T",
            "none",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                _get(f"http://127.0.0.1:{port}/ready")
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    out = proc.stdout.read().decode(errors="replace") if proc.poll() is not None else ""
                    pytest.skip(f"varnishd did not start on 127.0.0.1:{port}: {out[-500:]}")
                time.sleep(0.2)
        yield port, workdir
    finally:
        proc.terminate()  # only the varnishd we started, by its pid; it stops its own child
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        proc.stdout.close()
        backend.shutdown()
        backend.server_close()


@pytest.mark.server
@pytest.mark.skipif(
    VARNISHD is None or VARNISHNCSA is None,
    reason="varnishd/varnishncsa not installed (Debian: apt-get install varnish)",
)
def test_real_varnishd_and_varnishncsa(tmp_path):
    paths = [f"/item/{k}?v={k}" for k in range(5)]
    with _varnish(tmp_path) as (port, workdir):
        base = f"http://127.0.0.1:{port}"
        sent = []
        for rep in range(3):  # first time a miss, then two hits each
            for p in paths:
                assert _get(base + p, ua='agent "q" \\ x') == 200
                sent.append(("GET", p, 200, "MISS" if rep == 0 else "HIT"))
        assert _get(base + "/missing") == 404
        sent.append(("GET", "/missing", 404, "MISS"))
        assert _get(base + "/form", method="POST") == 200
        sent.append(("POST", "/form", 200, "PASS"))
        log = tmp_path / "varnishncsa.log"
        # -d: read the shared-memory log from its head and exit once it is processed.
        subprocess.run(
            [VARNISHNCSA, "-d", "-n", str(workdir), "-F", REAL_FMT, "-w", str(log)],
            check=True,
            timeout=60,
        )
    lines = [x for x in log.read_text().splitlines() if "/ready" not in x]
    assert len(lines) == len(sent)
    s, con = ingest(tmp_path, log, REAL_FMT)
    assert s.rejects == 0
    got = con.execute(
        "SELECT method, path || coalesce('?' || query, ''), status, cache_status FROM requests "
        "WHERE path <> '/ready'"
    ).fetchall()
    assert sorted(got) == sorted(sent)  # varnishncsa -d replays the log in its own order
    # Timers: the sum of %D and of time_firstbyte, computed from the file without logan.
    d_sum = sum(int(x.rsplit('"', 1)[1].split()[0]) for x in lines)
    fb_sum = sum(round(float(x.rsplit('"', 1)[1].split()[1]) * 1e6) for x in lines)
    assert con.execute(
        "SELECT sum(duration_us), sum(ttfb_us), count(*) FILTER (WHERE vhost = ?), "
        "count(*) FILTER (WHERE user_agent = 'agent \"q\" \\ x') FROM requests WHERE path <> '/ready'",
        [f"127.0.0.1:{port}"],
    ).fetchall() == [(d_sum, fb_sum, len(sent), 15)]
    assert con.execute(
        "SELECT count(*) FROM requests WHERE ts_end = ts_start + to_microseconds(duration_us)"
    ).fetchall() == [(s.rows,)]
