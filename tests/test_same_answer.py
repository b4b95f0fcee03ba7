"""The same question gets the same answer by every path: `logan stats FILE` (a store made
for the one answer) and `logan ingest FILE --db S` followed by `logan stats --db S`, for every
profile and every view, on the sample logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from logan.answer import stats as st
from logan.cli import app

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"
PROFILES = ("auto", "puppet", "generic", "none")
# (--view or None, extra options): every view of `logan stats`, and the plain table
VIEWS = [(None, [])] + [(v, ["--slo", "200ms"] if v == "apdex" else []) for v in st.VIEWS]


def run(args: list[str]) -> list[dict]:
    result = CliRunner().invoke(app, [*args, "-o", "json", "--top", "0"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout[result.stdout.index("[") :])


def same(a: list[dict], b: list[dict]) -> None:
    # sums of floats may be added in another order: equal to the digits that matter
    assert [r.keys() for r in a] == [r.keys() for r in b]
    for x, y in zip(a, b, strict=True):
        for k, v in y.items():
            assert x[k] == (pytest.approx(v, rel=1e-9) if isinstance(v, float) else v), k


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("log", ["puppet_access.log", "nginx_access.log"])
def test_one_shot_and_stored_answers_agree(tmp_path, log, profile):
    path = str(SAMPLES / log)
    db = str(tmp_path / "s.duckdb")
    result = CliRunner().invoke(app, ["ingest", path, "--db", db, "--profile", profile])
    assert result.exit_code == 0, result.output
    for view, extra in VIEWS:
        for by in ("route", "indirector"):
            shown = ["--by", by, *extra] + (["--view", view] if view else [])
            one_shot = run(["stats", path, "--profile", profile, *shown])
            stored = run(["stats", "--db", db, *shown])
            same(one_shot, stored)
            if view in (None, "pareto"):
                assert one_shot, (view, by)  # the comparison compared something


def test_routes_fold_alike_on_both_paths(tmp_path):
    """A Puppet log with a dozen requests of one shop route: the words in the last segment
    fold into one route on both paths (the Puppet profile classifies the rest generically)."""
    words = [
        "apple",
        "pear",
        "plum",
        "fig",
        "kiwi",
        "lime",
        "date",
        "lemon",
        "melon",
        "grape",
        "mango",
        "peach",
    ]
    lines = [
        f"10.0.0.{i} - - [05/Nov/2013:19:00:{i:02d} +0000] "
        f'"GET /production/file_metadata/modules/m{i} HTTP/1.1" 200 10 {1000 + i} "-" "Puppet/3.8"'
        for i in range(30)
    ]
    lines += [
        f"10.0.1.{i} - - [05/Nov/2013:19:01:{i:02d} +0000] "
        f'"GET /shop/v2/items/{w} HTTP/1.1" 200 10 {2000 + i} "-" "x"'
        for i, w in enumerate(words)
    ]
    log = tmp_path / "mixed.log"
    log.write_text("\n".join(lines) + "\n")
    db = str(tmp_path / "s.duckdb")
    assert CliRunner().invoke(app, ["ingest", str(log), "--db", db, "--profile", "puppet"]).exit_code == 0
    one_shot = run(["stats", str(log), "--profile", "puppet", "--by", "route"])
    stored = run(["stats", "--db", db, "--by", "route"])
    same(one_shot, stored)
    shop = [r for r in stored if r["route"].startswith("/shop")]
    assert [(r["route"], r["requests"]) for r in shop] == [("/shop/v2/items/{name}", 12)]
