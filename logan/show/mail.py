"""A nightly report as an e-mail, and sending it over SMTP (the standard library only).

The message is multipart/alternative: the plain-text report, then the HTML report inside a
multipart/related with its charts as inline images the HTML names by Content-ID (mail
clients block data: URIs). Sending speaks SMTP with STARTTLS or implicit TLS, the
certificate checked against the system's authorities (or `ca_file`), and logs in when a
user is given. The password comes from an environment variable or a file, never from the
command line (where every user of the machine can read it in `ps`).

Each way sending can fail is a MailError with its own exit status (docs/reliability.md).
"""

from __future__ import annotations

import os
import smtplib
import socket
import ssl
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path
from typing import TYPE_CHECKING

from logan.errors import LoganError
from logan.show.console import inert
from logan.show.report_html import render_html
from logan.show.report_text import render_text

if TYPE_CHECKING:
    from logan.show.report_model import Report

# Exit statuses of a mail that could not be sent (0-3: logan.errors).
EXIT_MAIL_CONNECT = 4  # no connection: refused, unknown host, timed out, dropped
EXIT_MAIL_TLS = 5  # TLS failed: certificate not trusted, no STARTTLS offered, handshake
EXIT_MAIL_AUTH = 6  # the server refused the login (or offers none)
EXIT_MAIL_REFUSED = 7  # the server refused the sender or a recipient

SECURITY = ("starttls", "ssl", "none")
DEFAULT_PORTS = {"starttls": 587, "ssl": 465, "none": 25}


class MailError(LoganError):
    """A mail that could not be sent: the one-line reason and the exit status."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class Smtp:
    host: str
    port: int
    security: str = "starttls"
    user: str | None = None
    password: str | None = None
    ca_file: str | None = None
    timeout: float = 30.0

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"


def smtp_server(
    address: str,
    security: str = "starttls",
    user: str | None = None,
    password: str | None = None,
    ca_file: str | None = None,
) -> Smtp:
    """'mail.example.com' or 'HOST:PORT' (the port defaults to 587, 465 or 25 by security)."""
    if security not in SECURITY:
        raise LoganError(f"SMTP security {security!r}: use {', '.join(SECURITY)}")
    host, _, port = address.strip().rpartition(":") if ":" in address else (address.strip(), "", "")
    if not host or (port and not port.isdigit()):
        raise LoganError(f"--smtp {address!r}: use HOST or HOST:PORT")
    if password and not user:
        raise LoganError("a password needs a user (--user)")
    return Smtp(host, int(port) if port else DEFAULT_PORTS[security], security, user, password, ca_file)


def password_from(env: str | None = None, file: str | Path | None = None) -> str | None:
    """The SMTP password from the environment variable `env` or the first line of `file`."""
    if env and file:
        raise LoganError("give --password-env or --password-file, not both")
    if env:
        if env not in os.environ:
            raise LoganError(f"--password-env {env}: no such environment variable")
        return os.environ[env]
    if file:
        try:
            return Path(file).read_text().splitlines()[0] if Path(file).stat().st_size else ""
        except OSError as exc:
            raise LoganError(f"--password-file {file}: {exc.strerror or exc}") from None
    return None


def message(report: Report, sender: str, to: list[str], now: datetime | None = None) -> EmailMessage:
    """The report as a mail: text and HTML alternatives, the charts inline by Content-ID."""
    if not to:
        raise LoganError("no recipient: give --to ADDR")
    msg = EmailMessage()
    msg["Subject"] = inert(report.subject())
    msg["From"] = sender
    msg["To"] = ", ".join(to)
    msg["Date"] = format_datetime(now or datetime.now(UTC))
    domain = sender.rpartition("@")[2] or "logan.invalid"
    msg["Message-ID"] = make_msgid("logan", domain=domain)
    msg.set_content(render_text(report))
    cids = {key: make_msgid(key, domain=domain)[1:-1] for key in report.charts()}
    msg.add_alternative(render_html(report, image_src=lambda key, _png: f"cid:{cids[key]}"), subtype="html")
    html = msg.get_payload()[1]
    for key, png in report.charts().items():
        html.add_related(
            png, "image", "png", cid=f"<{cids[key]}>", disposition="inline", filename=f"{key}.png"
        )
    return msg


def send(msg: EmailMessage, smtp: Smtp) -> None:
    """Send over SMTP; a MailError says in one line why it was not sent."""
    context = ssl.create_default_context(cafile=smtp.ca_file)
    try:
        with _connect(smtp, context) as client:
            if smtp.security == "starttls":
                client.starttls(context=context)
            if smtp.user:
                client.login(smtp.user, smtp.password or "")
            refused = client.send_message(msg)
    except MailError:
        raise
    except smtplib.SMTPAuthenticationError as exc:
        raise MailError(
            f"{smtp.where} refused the login of {smtp.user}: {_said(exc)}", EXIT_MAIL_AUTH
        ) from None
    except smtplib.SMTPNotSupportedError as exc:
        what, code = ("STARTTLS", EXIT_MAIL_TLS) if "STARTTLS" in str(exc) else ("AUTH", EXIT_MAIL_AUTH)
        raise MailError(f"{smtp.where} does not offer {what}", code) from None
    except smtplib.SMTPRecipientsRefused as exc:
        raise MailError(f"{smtp.where} refused {_refused(exc.recipients)}", EXIT_MAIL_REFUSED) from None
    except smtplib.SMTPSenderRefused as exc:
        raise MailError(
            f"{smtp.where} refused the sender {exc.sender}: {_said(exc)}", EXIT_MAIL_REFUSED
        ) from None
    except ssl.SSLError as exc:
        why = exc.reason or str(exc)
        if isinstance(exc, ssl.SSLCertVerificationError):  # say which CA to give it
            why = f"certificate verify failed: {exc.verify_message} (--ca-file trusts another CA)"
        raise MailError(f"TLS with {smtp.where} failed: {why}", EXIT_MAIL_TLS) from None
    except (smtplib.SMTPException, OSError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else _said(exc)
        raise MailError(f"cannot send through {smtp.where}: {why}", EXIT_MAIL_CONNECT) from None
    if refused:
        raise MailError(f"sent, but {smtp.where} refused {_refused(refused)}", EXIT_MAIL_REFUSED)


def _connect(smtp: Smtp, context: ssl.SSLContext) -> smtplib.SMTP:
    try:
        if smtp.security == "ssl":
            return smtplib.SMTP_SSL(smtp.host, smtp.port, timeout=smtp.timeout, context=context)
        return smtplib.SMTP(smtp.host, smtp.port, timeout=smtp.timeout)
    except ssl.SSLError:
        raise
    except (OSError, smtplib.SMTPException) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
        if isinstance(exc, socket.gaierror):
            why = f"unknown host ({why})"
        raise MailError(f"cannot connect to SMTP server {smtp.where}: {why}", EXIT_MAIL_CONNECT) from None


def _said(exc: smtplib.SMTPException | OSError) -> str:
    """An SMTP reply as one line: '535 5.7.8 Authentication credentials invalid'."""
    code, text = getattr(exc, "smtp_code", None), getattr(exc, "smtp_error", None)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    said = f"{code} {text}" if code else str(exc) or type(exc).__name__
    return " ".join(said.split())


def _refused(recipients: dict) -> str:
    parts = []
    for addr, (code, text) in recipients.items():
        text = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
        parts.append(f"{addr} ({code} {' '.join(text.split())})")
    return f"the recipient{'s' if len(parts) > 1 else ''} " + ", ".join(parts)
