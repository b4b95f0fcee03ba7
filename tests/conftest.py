"""Shared fixtures: the real-log corpus, and a one-call ingest of literal text."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from logan.read import native
from logan.read.compile import CompiledFormat
from logan.read.ingest import ingest

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"


def count_lines(data: bytes) -> int:
    """Lines as a reader must count them, computed without logan: a line ends at \\n, and a
    last piece without a terminator is a line too."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture
def ingest_text(tmp_path):  # noqa: ANN001, ANN201
    """ingest_text(text, fmt, tz='UTC', **kw) -> (summary, requests, rejects).

    Writes `text` (str or bytes, as written: no newline is added) to a file, ingests it with
    profile='none' and returns both tables as DataFrames ordered by line_no. Checks on every
    input that rows + rejects (+ events) equals the lines counted here, independently."""
    counter = iter(range(1_000_000))

    def run(text: str | bytes, fmt: str, tz: str = "UTC", **kw):  # noqa: ANN202
        data = text.encode() if isinstance(text, str) else text
        path = tmp_path / f"input{next(counter)}.log"
        path.write_bytes(data)
        kw.setdefault("profile", "none")
        summary = ingest([path], format=fmt, tz=tz, **kw)
        store = summary.store
        requests = store.sql("SELECT * FROM requests ORDER BY source, line_no")
        rejects = store.sql("SELECT * FROM rejects ORDER BY source, line_no")
        n = count_lines(data)
        assert summary.lines == n, f"read {summary.lines} lines, the input has {n}"
        assert summary.rows + summary.rejects + summary.events == n
        assert (len(requests), len(rejects)) == (summary.rows, summary.rejects)
        return summary, requests, rejects

    return run


# The three readers of a line: the C split (logan/read/_split.c), the SQL split, the regex. The
# ingest takes the first that can: a line reads the same whichever it is.
READERS = ("native", "sql", "regex")


@contextmanager
def reading_with(monkeypatch: pytest.MonkeyPatch, reader: str) -> Iterator[None]:
    """Within the block, ingests take lines with `reader` first (the regex reads the rest)."""
    with monkeypatch.context() as m:
        if reader == "native" and not native.available():
            pytest.skip("the C split (logan.read._split) was not built")
        if reader in ("sql", "regex"):
            m.setattr(native, "_split", None)
        if reader == "regex":
            m.setattr(CompiledFormat, "fast_raw_sql", lambda self, rel: None)
        yield
