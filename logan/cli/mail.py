"""`logan mail`: a day's report (the options of `logan report`) sent as an e-mail over
SMTP, or written to a .eml file with --dry-run. A thin layer over logan.show.mail; a mail
that cannot be sent exits with the status docs/reliability.md gives for why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from logan.cli import options as opt
from logan.cli import report as rep
from logan.show import mail
from logan.show.console import err, say, say_error

EXAMPLES = (
    "Examples: logan mail sample_logs/puppet_access.log --day latest --to ops@example.com "
    "--from logan@example.com --dry-run report.eml  ·  "
    "SMTP_PASSWORD=... logan mail --db web.duckdb --label web01 --to ops@example.com "
    "--from logan@example.com --smtp mail.example.com:587 --user logan --password-env SMTP_PASSWORD"
)


@opt.command
def mail_command(
    asked: rep.Asked,
    to: Annotated[list[str] | None, typer.Option("--to", help="recipient (repeatable)")] = None,
    sender: Annotated[str, typer.Option("--from", help="the sender's address")] = "",
    smtp: Annotated[str, typer.Option("--smtp", help="HOST[:PORT] of the SMTP server")] = "localhost",
    starttls: Annotated[bool, typer.Option("--starttls", help="STARTTLS (the default; port 587)")] = False,
    ssl: Annotated[bool, typer.Option("--ssl", help="implicit TLS (port 465)")] = False,
    plain: Annotated[bool, typer.Option("--no-tls", help="no TLS at all (a relay on this machine)")] = False,
    user: Annotated[str | None, typer.Option("--user", help="log in as this user")] = None,
    password_env: Annotated[
        str | None, typer.Option("--password-env", help="the password's variable")
    ] = None,
    password_file: Annotated[
        Path | None, typer.Option("--password-file", help="file holding the password")
    ] = None,
    ca_file: Annotated[Path | None, typer.Option("--ca-file", help="trust this CA for the server")] = None,
    dry_run: Annotated[
        Path | None, typer.Option("--dry-run", help="write the mail here, send nothing")
    ] = None,
) -> None:
    """Mail a day's report: text and HTML with the charts inline, over SMTP."""
    asked.warm()
    security = "ssl" if ssl else "none" if plain else "starttls"
    if starttls + ssl + plain > 1:
        raise mail.LoganError("choose one of --starttls, --ssl, --no-tls")
    server = mail.smtp_server(smtp, security, user, mail.password_from(password_env, password_file),
                              str(ca_file) if ca_file else None)  # fmt: skip
    if not sender or not to:
        raise mail.LoganError("give the sender and a recipient: --from ADDR --to ADDR")
    report = asked.make()
    msg = mail.message(report, sender, to or [])
    if dry_run is not None:
        dry_run.write_bytes(bytes(msg))
        say(f"wrote {dry_run}: {msg['Subject']}", err)
        return
    try:
        mail.send(msg, server)
    except mail.MailError as exc:
        say_error(str(exc))
        raise typer.Exit(exc.exit_code) from None
    say(f"sent to {', '.join(to or [])}: {msg['Subject']}", err)
