"""The notebooks run from a clean kernel, and the numbers they print are the ones plain SQL
over a fresh store of the same sample log gives."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

import logan

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
LOG = REPO / "sample_logs" / "puppet_access.log"


def run_notebook(name: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Execute notebooks/<name>.ipynb in its own folder; all it printed, as one text."""
    monkeypatch.setenv("MPLBACKEND", "Agg")  # the kernel inherits it: no display needed
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "stored with outputs"
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=300,
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})  # fmt: skip
    client.execute()  # raises CellExecutionError on any error
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
                   if o.output_type == "stream")  # fmt: skip


@pytest.fixture(scope="module")
def store():  # noqa: ANN201
    s = logan.open(None)
    logan.ingest([LOG], s)
    yield s
    s.close()


def test_postmortem_finds_the_spike(monkeypatch: pytest.MonkeyPatch, store) -> None:  # noqa: ANN001
    printed = run_notebook("postmortem", monkeypatch)
    # 10-second windows whose request count is more than twice the median count
    lo, hi = store.con.execute("""
        WITH w AS (SELECT CAST(floor(epoch(ts_start) / 10) AS BIGINT) AS k, count(*) AS n
                   FROM requests GROUP BY k)
        SELECT min(k) * 10, max(k) * 10 + 10 FROM w WHERE n > 2 * (SELECT median(n) FROM w)
    """).fetchone()  # fmt: skip
    start, end = (datetime.fromtimestamp(s, UTC).replace(tzinfo=None) for s in (lo, hi))
    assert f"spike: {start:%Y-%m-%d %H:%M:%S} to {end:%H:%M:%S} UTC" in printed
    assert (start, end) == (datetime(2013, 11, 5, 19, 5, 20), datetime(2013, 11, 5, 19, 5, 40))

    # the endpoint class with the largest share of server time inside the window
    label, share = store.con.execute("""
        SELECT method || ' ' || indirector, sum(duration_us) / sum(sum(duration_us)) OVER ()
        FROM requests WHERE ts_start >= ? AND ts_start < ?
        GROUP BY method, indirector ORDER BY 2 DESC LIMIT 1
    """, [start, end]).fetchone()  # fmt: skip
    m = re.search(r"during the spike (.+) took ([\d.]+)% of the server time", printed)
    assert m and (m.group(1), float(m.group(2))) == (label, round(100 * share, 1))

    slow_in_spike = store.con.execute("""
        SELECT count(*) FROM (SELECT ts_start FROM requests ORDER BY duration_us DESC LIMIT 10)
        WHERE ts_start >= ? AND ts_start < ?
    """, [start, end]).fetchone()[0]  # fmt: skip
    assert f"{slow_in_spike} of the 10 slowest requests started during the spike" in printed


def test_cache_hunting_saving(monkeypatch: pytest.MonkeyPatch, store) -> None:  # noqa: ANN001
    printed = run_notebook("cache_hunting", monkeypatch)
    # per URL (GROUP BY, where the view uses a window): all its successful GET/HEAD time but
    # one average request
    per_route = store.sql("""
        WITH u AS (
          SELECT method, route, sum(duration_us) * (count(*) - 1) / count(*) AS saved
          FROM requests
          WHERE method IN ('GET', 'HEAD') AND (status BETWEEN 200 AND 299 OR status = 304)
          GROUP BY method, route, vhost, path, query
        )
        SELECT method, route, sum(saved) AS saved FROM u GROUP BY method, route
        ORDER BY saved DESC
    """)  # fmt: skip
    total = store.con.execute("SELECT sum(duration_us) FROM requests").fetchone()[0]
    saved = per_route["saved"].sum()
    m = re.search(r"would save at most .+: ([\d.]+)% of all server time", printed)
    assert m and m.group(1) == f"{100 * saved / total:.2f}"
    top = per_route.iloc[0]
    want = f"top candidate: {top['method']} {top['route']}, {100 * top['saved'] / saved:.1f}%"
    assert want in printed
