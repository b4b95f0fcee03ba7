"""`logan mail` against a real SMTP server (aiosmtpd) on loopback: STARTTLS and implicit
TLS with a certificate made here (trustme), AUTH, and what the server received read back
with the standard library's parser; each way sending fails gives one line and its exit
status (docs/reliability.md)."""

from __future__ import annotations

import email
import email.policy
import os
import re
import socket
import ssl
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")
aiosmtpd = pytest.importorskip("aiosmtpd", reason="aiosmtpd is in the dev extra: pip install -e '.[dev]'")
trustme = pytest.importorskip("trustme", reason="trustme is in the dev extra: pip install -e '.[dev]'")
from aiosmtpd.controller import Controller  # noqa: E402
from aiosmtpd.smtp import AuthResult, LoginPassword  # noqa: E402

from logan.nightly.report import ReportOptions, report_of  # noqa: E402
from logan.show import mail  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PUPPET = REPO / "sample_logs" / "puppet_access.log"
USER, PASSWORD = "logan", "s3cret pass"
REJECTED = "nobody@example.com"


@dataclass
class Inbox:
    """What the server accepted: (sender, recipients, message bytes) per mail."""

    mails: list[tuple[str, list[str], bytes]] = field(default_factory=list)

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):  # noqa: ANN001, ANN201, N802
        if address == REJECTED:
            return "550 5.1.1 no such user here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):  # noqa: ANN001, ANN201, N802
        self.mails.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.original_content))
        return "250 Message accepted"


def check_login(server, session, envelope, mechanism, auth_data) -> AuthResult:  # noqa: ANN001
    ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
        USER.encode(),
        PASSWORD.encode(),
    )
    return AuthResult(success=ok, handled=False)  # handled=False: the server answers 535


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    authority = trustme.CA()
    cert = authority.issue_cert("127.0.0.1", "localhost")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    pem = tmp_path_factory.mktemp("ca") / "ca.pem"
    authority.cert_pem.write_to_path(str(pem))
    return context, pem


class Server:
    """An aiosmtpd server on 127.0.0.1: STARTTLS required and AUTH after it, or implicit TLS."""

    def __init__(self, context: ssl.SSLContext, implicit: bool = False):
        self.inbox = Inbox()
        self.port = free_port()
        # aiosmtpd counts only STARTTLS as TLS for auth_require_tls; implicit TLS is TLS throughout
        login = dict(authenticator=check_login, auth_required=True, auth_require_tls=not implicit)
        tls = dict(ssl_context=context) if implicit else dict(tls_context=context, require_starttls=True)
        self.controller = Controller(self.inbox, hostname="127.0.0.1", port=self.port, **tls, **login)
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()


@pytest.fixture
def starttls_server(ca):
    server = Server(ca[0])
    yield server
    server.stop()


def logan_mail(port: int, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["logan", "mail", str(PUPPET), "--day", "latest", "--label", "puppet01",
         "--from", "logan@example.com", "--to", "ops@example.com", "--to", "dev@example.com",
         "--smtp", f"127.0.0.1:{port}", *extra],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "SMTP_PASSWORD": PASSWORD, **(env or {})},
    )  # fmt: skip


def parts_of(raw: bytes) -> email.message.EmailMessage:
    return email.message_from_bytes(raw, policy=email.policy.default)


def check_report_mail(msg: email.message.EmailMessage, charts: dict[str, bytes] | None = None) -> None:
    """multipart/alternative: text/plain, then multipart/related of the HTML and its PNGs,
    every image the HTML names by cid: present (with the chart's bytes, when given)."""
    assert msg.get_content_type() == "multipart/alternative"
    text, related = msg.get_payload()
    assert text.get_content_type() == "text/plain" and related.get_content_type() == "multipart/related"
    html, *images = related.get_payload()
    assert html.get_content_type() == "text/html" and images
    assert {i.get_content_type() for i in images} == {"image/png"}
    cids = set(re.findall(r'src="cid:([^"]+)"', html.get_content()))
    assert cids == {i["Content-ID"].strip("<>") for i in images}
    assert all(i.get_content().startswith(b"\x89PNG") for i in images)
    if charts is not None:
        assert sorted(i.get_content() for i in images) == sorted(charts.values())
    assert "WHERE THE TIME WENT" in text.get_content() and "Where the time went" in html.get_content()


def test_the_message_has_both_parts_and_its_charts_inline():
    report = report_of([str(PUPPET)], None, "latest", "UTC", ReportOptions(label="puppet01"))
    msg = mail.message(report, "logan@example.com", ["ops@example.com"])
    parsed = parts_of(bytes(msg))  # what a mail client reads
    check_report_mail(parsed, report.charts())
    assert len(report.charts()) == 3  # the day, its incident on the timeline, where the time went
    assert parsed["Subject"] == report.subject() and parsed["Subject"].startswith(
        "logan: puppet01 2013-11-05: p95"
    )


def test_sent_over_starttls_with_login(starttls_server, ca):
    r = logan_mail(starttls_server.port, "--starttls", "--ca-file", str(ca[1]), "--user", USER,
                   "--password-env", "SMTP_PASSWORD")  # fmt: skip
    assert r.returncode == 0, r.stderr
    (sender, recipients, raw), *more = starttls_server.inbox.mails
    assert not more and sender == "logan@example.com"
    assert recipients == ["ops@example.com", "dev@example.com"]
    msg = parts_of(raw)
    check_report_mail(msg)
    assert msg["Subject"].startswith("logan: puppet01 2013-11-05: p95 ")
    assert msg["From"] == "logan@example.com" and msg["To"] == "ops@example.com, dev@example.com"


def test_sent_over_implicit_tls_with_the_password_from_a_file(ca, tmp_path):
    server = Server(ca[0], implicit=True)
    try:
        secret = tmp_path / "password"
        secret.write_text(PASSWORD + "\n")
        r = logan_mail(
            server.port, "--ssl", "--ca-file", str(ca[1]), "--user", USER, "--password-file", str(secret)
        )
        assert r.returncode == 0, r.stderr
        check_report_mail(parts_of(server.inbox.mails[0][2]))
    finally:
        server.stop()


def one_line(r: subprocess.CompletedProcess, status: int, *needles: str) -> None:
    assert r.returncode == status, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    for n in needles:
        assert n in r.stderr, r.stderr


def test_each_failure_is_one_line_with_its_exit_status(starttls_server, ca):
    login = ["--user", USER, "--password-env", "SMTP_PASSWORD", "--section", "headline", "--no-charts"]
    closed = free_port()  # nothing listens there
    one_line(
        logan_mail(closed, "--section", "headline"),
        mail.EXIT_MAIL_CONNECT,
        f"127.0.0.1:{closed}",
        "Connection refused",
    )
    # the test's certificate is not one the system trusts
    one_line(logan_mail(starttls_server.port, *login), mail.EXIT_MAIL_TLS, "TLS", "certificate verify failed")
    trusted = ["--ca-file", str(ca[1])]
    r = logan_mail(starttls_server.port, *trusted, *login, env={"SMTP_PASSWORD": "wrong"})
    one_line(r, mail.EXIT_MAIL_AUTH, "refused the login of logan", "535")
    r = logan_mail(starttls_server.port, *trusted, *login, "--to", REJECTED)
    one_line(r, mail.EXIT_MAIL_REFUSED, f"refused the recipient {REJECTED}", "550")
    assert starttls_server.inbox.mails[0][1] == ["ops@example.com", "dev@example.com"]  # the others got it
    # no login where the server requires one: the server refuses the sender
    r = logan_mail(starttls_server.port, *trusted, "--section", "headline")
    one_line(r, mail.EXIT_MAIL_REFUSED, "refused the sender", "530")


def test_the_password_is_never_an_option(tmp_path):
    r = logan_mail(free_port(), "--user", USER, "--password", PASSWORD)
    assert r.returncode == 2 and "No such option" in r.stderr and PASSWORD not in r.stderr
    one_line(logan_mail(free_port(), "--user", USER, "--password-env", "NO_SUCH_VARIABLE_HERE"), 2,
             "--password-env NO_SUCH_VARIABLE_HERE")  # fmt: skip
    one_line(logan_mail(free_port(), "--ssl", "--starttls"), 2, "one of --starttls, --ssl")
    no_to = ["logan", "mail", str(PUPPET), "--from", "l@example.com"]
    r = subprocess.run(no_to, capture_output=True, text=True)
    one_line(r, 2, "a recipient: --from ADDR --to ADDR")
    one_line(logan_mail(free_port(), "--password-file", str(tmp_path / "absent")), 2, "--password-file")


def test_dry_run_writes_the_mail_and_sends_nothing(tmp_path):
    out = tmp_path / "report.eml"
    r = logan_mail(free_port(), "--dry-run", str(out))
    assert r.returncode == 0, r.stderr
    check_report_mail(parts_of(out.read_bytes()))
