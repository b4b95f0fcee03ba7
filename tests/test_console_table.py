"""The terminal table drawn line by line where it fits is the table rich draws.

rich is the second method: the same cells, as control-escaped text, through rich's own
Table on a console wide enough, must come out character for character, hostile content
(wide and combining characters, emoji, escapes, bidi marks, markup) included."""

from __future__ import annotations

import io
import random
import re

import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text

from logan.show import console

ALPHABET = [*"abc XYZ/?=&[]\\", "中", "文", "e\u0301", "😀", "\x1b", "\t", "\u202e", "  ", "ß", "ｱ", "[bold]"]


def draw(
    cols: list[str], rows: list[list[str]], left: list[bool], width: int, fit: console.Fit, tty: bool = False
) -> str:
    """What logan prints on a console `width` columns wide."""
    buf = io.StringIO()
    term = Console(
        highlight=False, width=width, file=buf, force_terminal=tty, color_system="standard" if tty else None
    )
    saved, console.out = console.out, term
    try:
        console.print_table(cols, rows, left, None, fit)
    finally:
        console.out = saved
    return buf.getvalue()


def rich_draws(cols: list[str], rows: list[list[str]], left: list[bool], width: int) -> str:
    """rich's own Table of the same escaped cells on a console `width` columns wide."""
    t = Table(show_lines=False)
    for name, at_left in zip(cols, left, strict=True):
        if at_left:
            t.add_column(Text(console.inert(name)), overflow="fold")
        else:
            t.add_column(Text(console.inert(name)), justify="right", no_wrap=True)
    for row in rows:
        t.add_row(*[Text(console.inert(v)) for v in row])
    buf = io.StringIO()
    Console(highlight=False, width=width, file=buf, color_system=None).print(t)
    return buf.getvalue()


def random_table(rng: random.Random, n_rows: int) -> tuple[list[str], list[list[str]], list[bool]]:
    n = rng.randint(1, 6)
    word = lambda k: "".join(rng.choices(ALPHABET, k=rng.randint(0, k)))  # noqa: E731
    cols = [word(6) or "c" for _ in range(n)]
    return cols, [[word(12) for _ in range(n)] for _ in range(n_rows)], [rng.random() < 0.5 for _ in range(n)]


@pytest.mark.parametrize("seed", range(300))
def test_a_table_that_fits_is_drawn_as_rich_draws_it(seed):
    cols, rows, left = random_table(random.Random(seed), random.randint(0, 15))
    want = rich_draws(cols, rows, left, 400)
    assert draw(cols, rows, left, 400, console.Fit()) == want
    # --wide on a narrow terminal: the whole table, no column squeezed to nothing
    assert draw(cols, rows, left, 20, console.Fit(wide=True)) == want


def test_at_the_terminal_width_exactly_and_one_short():
    cols, rows, left = ["path", "requests"], [["/a/very/long/path/of/a/request", "1,234"]], [True, False]
    want = rich_draws(cols, rows, left, 400)
    width = max(len(x) for x in want.splitlines())
    assert draw(cols, rows, left, width, console.Fit()) == want
    folded = draw(cols, rows, left, width - 1, console.Fit())  # rich's folding takes over
    assert folded == rich_draws(cols, rows, left, width - 1) and folded != want
    assert max(len(x) for x in folded.splitlines()) <= width - 1


def test_many_rows_and_a_bold_header_on_a_terminal():
    rng = random.Random(7)
    cols, _, left = random_table(rng, 0)
    rows = [[f"{rng.random():.{rng.randint(1, 9)}f}" for _ in cols] for _ in range(3000)]
    assert draw(cols, rows, left, 400, console.Fit()) == rich_draws(cols, rows, left, 400)
    shown = draw(cols, rows, left, 400, console.Fit(), tty=True)
    header = shown.splitlines()[1]
    assert re.search(r"\x1b\[1m [^\x1b]* \x1b\[0m", header)  # the header cells bold
    plain = re.sub(r"\x1b\[[0-9;]*m", "", shown)
    assert plain == rich_draws(cols, rows, left, 400)
    assert "\x1b" not in "".join(shown.splitlines()[2:])  # the rows plain
