"""`logan stats FILES` on a log too big for an in-memory store reads it into a temporary
file instead: the same answer, and nothing left behind."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

import logan.answer.inputs as inputs
from logan.cli import app

SAMPLE = Path(__file__).resolve().parents[1] / "sample_logs" / "puppet_access.log"


def _stats_json() -> list[dict]:
    result = CliRunner().invoke(app, ["stats", str(SAMPLE), "--by", "environment", "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout[result.stdout.index("[") :])


def test_big_input_goes_through_a_temporary_file(monkeypatch, tmp_path):
    in_memory = _stats_json()
    monkeypatch.setattr(inputs, "IN_MEMORY_MAX_BYTES", SAMPLE.stat().st_size - 1)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    made = []
    real = tempfile.TemporaryDirectory

    def spy(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(inputs.tempfile, "TemporaryDirectory", spy)
    on_disk = _stats_json()
    assert len(made) == 1  # the answer was read into a temporary file, not memory
    # floating sums may add up in another order: equal to the last digits that matter
    assert [r.keys() for r in on_disk] == [r.keys() for r in in_memory]
    for got, want in zip(on_disk, in_memory, strict=True):
        for k, v in want.items():
            assert got[k] == (pytest.approx(v, rel=1e-9) if isinstance(v, float) else v), k
    assert sum(r["requests"] for r in on_disk) == sum(1 for _ in SAMPLE.open())
    assert list(tmp_path.iterdir()) == []  # the scratch store is gone
