"""Where the data directories that ship with logan live.

In an installed wheel `queries/` and `parsers/` sit inside the package; in a source checkout
they sit at the repository root. The package copy wins so an installed logan never picks up
a stray checkout.
"""

from __future__ import annotations

from pathlib import Path

# This module sits in the package itself, so its own location is the package's (this also
# works while logan/__init__.py does not exist and logan is a namespace package).
_PACKAGE = Path(__file__).resolve().parent
_REPO = _PACKAGE.parent


def _data_dir(name: str) -> Path:
    packaged = _PACKAGE / name
    return packaged if packaged.is_dir() else _REPO / name


def queries_dir() -> Path:
    """The directory of the SQL views (`queries/*.sql`)."""
    return _data_dir("queries")


def parsers_dirs() -> list[Path]:
    """Directories holding dialect files, the shipped one first."""
    return [_data_dir("parsers")]
