"""Options every command that reads logs takes (`logan ingest`, `logan stats FILES`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from logan.errors import LoganError

FormatOpt = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help="preset (combined_D, nginx:timed) or the format string from the server's config; auto detects",
    ),
]
DialectOpt = Annotated[str | None, typer.Option(help="apache | nginx | varnish | haproxy")]
TzOpt = Annotated[str, typer.Option(help="time zone of timestamps that carry no offset")]
ProfileOpt = Annotated[str, typer.Option(help="classification: auto | puppet | generic | none")]
RulesOpt = Annotated[Path | None, typer.Option(help="classification rules (TOML)")]
TrustedProxyOpt = Annotated[
    list[str] | None,
    typer.Option("--trusted-proxy", help="CIDR of a proxy whose X-Forwarded-For counts (repeatable)"),
]
NginxConfOpt = Annotated[Path | None, typer.Option(help="read the format from this nginx.conf")]
LogFormatNameOpt = Annotated[
    str | None, typer.Option(help="the log_format name in --nginx-conf (default: combined)")
]


def format_from_options(
    format: str, dialect: str | None, nginx_conf: Path | None, log_format_name: str | None
) -> tuple[str, str | None]:
    """--nginx-conf/--log-format-name name a format as the server's config writes it."""
    if nginx_conf is None:
        if log_format_name:
            raise LoganError("--log-format-name needs --nginx-conf")
        return format, dialect
    from logan.read.nginx_conf import format_from_nginx_conf

    return format_from_nginx_conf(nginx_conf, log_format_name or "combined"), "nginx"
