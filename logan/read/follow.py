"""`logan ingest --follow`: keep a store current while its logs grow, like `tail -F`.

Each round is an incremental ingest (logan/read/registry.py): the globs are expanded again,
so a file created by a rotation is found, and a rotated one is known by its first bytes and
read on from where it was. Every batch commits as it is read. Between rounds the store is
closed, so that `logan stats --db` can query it (DuckDB lets one process at a time open a
file; a reader waits for the round to end, store.LOCK_WAIT at most).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from logan.errors import LoganError, interrupted
from logan.read.ingest import IngestSummary, ingest, merge_summaries
from logan.store import open_store

# A round that finds a reader holding the store waits this long for it.
ROUND_WAIT = 120.0


def follow(
    paths: Sequence[str | Path],
    db: str | Path,
    interval: float = 2.0,
    stop: threading.Event | None = None,
    each_round: Callable[[IngestSummary], None] | None = None,
    **options: object,
) -> IngestSummary:
    """Ingest `paths` into the store at `db` every `interval` seconds until `stop` is set
    or the process is interrupted; what all the rounds read, merged. `options` are those
    of `ingest`."""
    stop = stop or threading.Event()
    rounds: list[IngestSummary] = []
    try:
        while not stop.is_set():
            summary = _round(paths, db, options)
            if summary is not None:
                summary.sources = [s for s in summary.sources if s.lines]  # not the files unchanged
                rounds.append(summary)
                if each_round is not None:
                    each_round(summary)
            stop.wait(interval)
    except (KeyboardInterrupt, RuntimeError) as exc:  # SIGINT (or SIGTERM made one): the batch
        if not interrupted(exc):  # in flight was rolled back, every batch before it is
            raise  # committed; the next run reads on from there
    return merge_summaries(rounds) if rounds else IngestSummary()


def _round(paths: Sequence[str | Path], db: str | Path, options: dict) -> IngestSummary | None:
    store = open_store(db, wait=ROUND_WAIT)
    try:
        return ingest(paths, store=store, **options)
    except LoganError as exc:
        if str(exc).startswith("no file matches"):  # between a rotation's rename and create
            return None
        raise
    finally:
        store.close()
