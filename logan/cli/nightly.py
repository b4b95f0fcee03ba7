"""`logan nightly --config logan.toml`: the unattended job of logan.nightly.job (ingest
every source, report on yesterday, mail it), for cron or a systemd timer (docs/nightly.md).
Exit status: 0 done, 3 done but a source failed (named on stderr and in the mail), 4-7 the
mail could not be sent (docs/reliability.md), 2 a bad logan.toml.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from logan.errors import LoganError
from logan.nightly.config import load_config
from logan.nightly.job import run_nightly
from logan.show import mail
from logan.show.console import err, inert, say_error

EXAMPLES = (
    "Examples: logan nightly --config sample_logs/logan.toml --day 2013-11-05 --dry-run report.eml  ·  "
    "logan nightly --config /etc/logan/logan.toml"
)


def nightly_command(
    config: Annotated[Path, typer.Option("--config", "-c", help="the logan.toml to run")],
    day: Annotated[str | None, typer.Option(help="report this day instead of yesterday: 2026-11-23")] = None,
    dry_run: Annotated[
        Path | None, typer.Option("--dry-run", help="write the mail here, send nothing")
    ] = None,
) -> None:
    """Ingest every configured source, report on the last complete day, mail it."""
    conf = load_config(config)
    if dry_run is not None and conf.mail is None:
        raise LoganError(f"--dry-run writes the mail: {config} has no [mail]")
    try:
        run = run_nightly(conf, day=day, send=None if dry_run else mail.send)
    except mail.MailError as exc:
        say_error(f"the report was not mailed: {exc}")
        raise typer.Exit(exc.exit_code) from None
    if dry_run is not None and run.message is not None:
        dry_run.write_bytes(bytes(run.message))
    mailed = "not mailed (no [mail])" if conf.mail is None else "written" if dry_run else "mailed"
    done = f"{run.report.subject()}: {mailed}; files read {len(run.read)}, already read {len(run.skipped)}"
    err.print(Text(inert(done)), soft_wrap=True)
    for source, why in run.failed:
        say_error(f"source {source} failed: {why}")
    raise typer.Exit(run.status)
