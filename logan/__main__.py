"""`python -m logan`: the same command as `logan`."""

from logan.cli import program

program()
