"""`logan formats`: the named formats logan knows, by dialect."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from logan.read.dialects import dialects
from logan.show.console import out

EXAMPLES = "Example: logan formats"


def formats_command() -> None:
    """The named formats logan knows, by dialect."""
    t = Table("preset", "format string")
    for d in dialects().values():
        for name, fmt in d.presets.items():
            t.add_row(Text(f"{d.name}:{name}"), Text(fmt))
    out.print(t)
