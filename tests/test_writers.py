"""JSON answers are written a slice of rows at a time (logan.show.writers.write_json): the
text is the one json.dumps gives the whole answer's records, byte for byte, wherever the
slices fall."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from logan.show import writers


def whole(df: pd.DataFrame) -> str:
    """The JSON of the whole frame made at once (how it was written before)."""
    return json.dumps(json.loads(df.to_json(orient="records", date_format="iso")), indent=1) + "\n"


def frame(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(rows)
    return pd.DataFrame({
        "key": [f'/p/{i}?q="x\\u0007{i}"é' if i % 3 else None for i in range(rows)],
        "requests": rng.integers(0, 10**12, rows),
        "hit_ratio": np.where(np.arange(rows) % 4 == 0, np.nan, rng.random(rows)),
        "start": pd.date_range("2026-03-29", periods=rows, freq="37s", tz="UTC"),
        "cached": np.arange(rows) % 2 == 0,
    })  # fmt: skip


@pytest.mark.parametrize("rows", [0, 1, 2, 3, 6, 7, 10])
def test_json_in_slices_is_the_whole_answers_json(rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writers, "JSON_ROWS", 3)
    df = frame(rows)
    out = io.StringIO()
    writers.write_json(df, out)
    assert out.getvalue() == whole(df)
    assert len(json.loads(out.getvalue())) == rows
