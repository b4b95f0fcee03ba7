"""`logan nightly --config logan.toml` as cron runs it, against a real SMTP server
(aiosmtpd) on loopback: a failing source does not stop the mail, which names it, and the
status says so; a second run for the same day counts nothing twice; logan.toml mistakes
are named with their key and line."""

from __future__ import annotations

import email
import email.policy
import gzip
import os
import re
import socket
import subprocess
from pathlib import Path

import duckdb
import numpy as np
import pytest

from logan.errors import EXIT_PARTIAL
from logan.show.mail import EXIT_MAIL_CONNECT
from logan.units import format_count, format_us

pytest.importorskip("aiosmtpd", reason="aiosmtpd is in the dev extra: pip install -e '.[dev]'")
from aiosmtpd.controller import Controller  # noqa: E402

DAY = "2026-11-23"


def log_lines(n: int, start: int = 0) -> tuple[list[str], list[int]]:
    """combined_D lines on DAY (UTC), their %D times known here."""
    durations = [(i * 7919) % 50_000 + 100 for i in range(start, start + n)]
    lines = [
        f"192.0.2.{i % 9} - - [23/Nov/2026:{(i // 60) % 24:02d}:{i % 60:02d}:00 +0000] "
        f'"GET /item/{i % 13} HTTP/1.1" {500 if i % 17 == 0 else 200} 10 {d} "-" "agent"'
        for i, d in zip(range(start, start + n), durations, strict=True)
    ]
    return lines, durations


class Inbox:
    def __init__(self):
        self.mails: list[tuple[str, list[str], bytes]] = []

    async def handle_DATA(self, server, session, envelope):  # noqa: ANN001, ANN201, N802
        self.mails.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.original_content))
        return "250 OK"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def smtp():
    inbox, port = Inbox(), free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    yield inbox, port
    controller.stop()


def write_config(folder: Path, port: int, sources: str) -> Path:
    config = folder / "logan.toml"
    config.write_text(
        f"""store = "web.duckdb"
label = "web01"
tz = "UTC"
{sources}
[report]
by = ["route"]
top = 5

[mail]
to = ["ops@example.com"]
from = "logan@example.com"
smtp = "127.0.0.1:{port}"
security = "none"
"""
    )
    return config


TWO_SOURCES = """
[[sources]]
path = "access.log"
format = "combined_D"

[[sources]]
path = "error.log"
format = "combined_D"
"""


def nightly(config: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["logan", "nightly", "--config", str(config), "--day", DAY, *args],
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def text_part(raw: bytes) -> str:
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    return msg.get_body(("plain",)).get_content()


def headline_rows(text: str) -> list[str]:
    start = text.index("THE DAY IN FIGURES")
    return text[start:].split("\n\n")[0].splitlines()[2:]


@pytest.fixture
def two_sources(tmp_path, smtp):
    lines, durations = log_lines(600)
    (tmp_path / "access.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "error.log").write_text("[Mon Nov 23 10:00:00 2026] [error] not an access log\n")
    return write_config(tmp_path, smtp[1], TWO_SOURCES), durations


def test_a_failing_source_is_named_in_the_mail_and_the_status(two_sources, smtp, tmp_path):
    config, durations = two_sources
    r = nightly(config)
    assert r.returncode == EXIT_PARTIAL, r.stderr
    failed = [line for line in r.stderr.splitlines() if line.startswith("logan: source ")]
    assert len(failed) == 1 and "error.log" in failed[0] and "Traceback" not in r.stderr
    (sender, to, raw), *more = smtp[0].mails
    assert not more and sender == "logan@example.com" and to == ["ops@example.com"]
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    assert msg["Subject"].endswith(", 1 source failed") and msg["Subject"].startswith(f"logan: web01 {DAY}: ")
    text, page = text_part(raw), msg.get_body(("html",)).get_content()
    assert "FAILED SOURCE error.log" in text and "Failed source error.log" in page
    # the good source's day, against numpy on the times written into its lines
    d = np.array(durations, float)
    rows = {row.split("  ")[0]: row.split()[1:3] for row in headline_rows(text)}
    assert " ".join(rows["requests"][:1]) == format_count(len(d))
    assert rows["p95"][0] + " " + rows["p95"][1] == format_us(np.percentile(d, 95))
    assert rows["p99"][0] + " " + rows["p99"][1] == format_us(np.percentile(d, 99))


def test_a_second_run_counts_nothing_twice(two_sources, smtp, tmp_path):
    config, _ = two_sources
    first, second = nightly(config), nightly(config)
    assert first.returncode == second.returncode == EXIT_PARTIAL
    assert "files read 1, already read 0" in first.stderr and "files read 0, already read 1" in second.stderr
    a, b = (text_part(m[2]) for m in smtp[0].mails)
    assert headline_rows(a) == headline_rows(b) and re.search(r"^requests +600 ", a, re.M)
    with duckdb.connect(str(tmp_path / "web.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM requests").fetchone()[0] == 600
    # the log grows: the new lines are read, the old ones not again
    more, _ = log_lines(100, start=600)
    with (tmp_path / "access.log").open("a") as fh:
        fh.write("\n".join(more) + "\n")
    third = nightly(config)
    assert "files read 1" in third.stderr
    with duckdb.connect(str(tmp_path / "web.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*), count(DISTINCT source) FROM requests").fetchone() == (700, 1)
        assert con.execute("SELECT count(DISTINCT line_no) FROM requests").fetchone() == (700,)


def test_a_compressed_source_is_read_once(tmp_path, smtp):
    lines, _ = log_lines(300)
    with gzip.open(tmp_path / "access.log.1.gz", "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    config = write_config(tmp_path, smtp[1], '[[sources]]\npath = "access.log.*.gz"\n')
    first, second = nightly(config), nightly(config)
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert "files read 1, already read 0" in first.stderr and "files read 0, already read 1" in second.stderr
    with duckdb.connect(str(tmp_path / "web.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM requests").fetchone()[0] == 300


def test_a_mail_that_cannot_go_keeps_what_was_read(tmp_path):
    lines, _ = log_lines(50)
    (tmp_path / "access.log").write_text("\n".join(lines) + "\n")
    config = write_config(tmp_path, free_port(), '[[sources]]\npath = "access.log"\n')
    r = nightly(config)
    assert r.returncode == EXIT_MAIL_CONNECT and len(r.stderr.strip().splitlines()) == 1
    assert "the report was not mailed: cannot connect" in r.stderr
    with duckdb.connect(str(tmp_path / "web.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM requests").fetchone()[0] == 50


BASE = 'store = "s.duckdb"\n[[sources]]\npath = "a"\n'  # lines 1-3
MAIL = BASE + '[mail]\nto = ["a@b"]\nfrom = "c@d"\n'  # lines 4-6


@pytest.mark.parametrize(
    "text, said",
    [
        ('store = "s.duckdb"\n[[sources]\npath = "a"\n', "not TOML: Expected ']]'"),
        (
            'store = "s.duckdb"\n\n[[sources]]\npath = "a"\nformt = "x"\n',
            "line 5: sources.formt: unknown key",
        ),
        (BASE + "[[sources]]\npath = 5\n", "line 5: sources.path: should be a string"),
        (BASE + '[report]\ntop = "5"\n', "line 5: report.top: should be a whole number"),
        (BASE + '[report]\nby = ["colour"]\n', "line 5: report.by: unknown --by 'colour'"),
        (
            BASE + '[report]\nsections = ["gossip"]\n',
            "line 5: report.sections: unknown report section 'gossip'",
        ),
        (BASE + '[slo]\np95 = "fast"\n', "line 5: slo.p95: not a duration"),
        (
            'store = "s.duckdb"\ntz = "Mars/Olympus"\n[[sources]]\npath = "a"\n',
            "line 2: tz: unknown time zone",
        ),
        ('[[sources]]\npath = "a"\n', "store is missing"),
        ('store = "s.duckdb"\n', "no [[sources]]"),
        (MAIL + 'security = "tls"\n', "line 7: mail.security: use one of starttls, ssl, none"),
        (MAIL + 'password_env = "NO_SUCH_VARIABLE_HERE"\n', "line 7: mail.password_env"),
    ],
)
def test_config_mistakes_name_the_key_and_the_line(tmp_path, text, said):
    config = tmp_path / "logan.toml"
    config.write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "NO_SUCH_VARIABLE_HERE"}
    r = subprocess.run(["logan", "nightly", "--config", str(config)], capture_output=True, text=True, env=env)
    assert r.returncode == 2 and said in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and str(config) in r.stderr
    assert not (tmp_path / "s.duckdb").exists()  # nothing done before the file is right


def test_a_config_becomes_the_job_s_options(tmp_path, monkeypatch):
    from logan.nightly.config import load_config

    (tmp_path / "pw").write_text("hunter2\n")
    config = tmp_path / "logan.toml"
    config.write_text(
        'store = "s.duckdb"\nlabel = "web01"\ntz = "Europe/Berlin"\n[[sources]]\npath = "logs/*.log"\n'
        'format = "nginx:timed"\n[report]\nby = ["route"]\ntop = 7\nstale = "2h"\n'
        '[slo]\np95 = "300ms"\nerror_share = 0.01\n[mail]\nto = ["a@example.com"]\nfrom = "l@example.com"\n'
        'smtp = "mail.example.com"\nsecurity = "ssl"\nuser = "u"\npassword_file = "pw"\n'
    )
    c = load_config(config)
    assert c.store == tmp_path / "s.duckdb" and c.tz == "Europe/Berlin" and c.sections is None
    assert [(s.path, s.format) for s in c.sources] == [("logs/*.log", "nginx:timed")]
    r = c.report
    assert (r.label, r.by, r.top, r.stale_us) == ("web01", ("route",), 7, 2 * 3600 * 10**6)
    assert r.slos == {"p95_us": 300_000, "error_share": 0.01}
    smtp = c.mail.smtp
    assert (smtp.host, smtp.port, smtp.security, smtp.user, smtp.password) == (
        "mail.example.com",
        465,
        "ssl",
        "u",
        "hunter2",
    )
