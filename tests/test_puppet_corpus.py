"""The real Puppet 3 master log: logan's counts equal an independent regex count."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from logan.answer import stats as st

LOG = (Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "puppet_access_ssl"
       / "puppet_access_ssl.log")  # fmt: skip
# Deliberately simple and separate from logan.read.classify: "METHOD /env/indirection[/key]".
LINE = re.compile(r'^(\S+) .*?"(GET|POST|PUT|DELETE|HEAD) /(\w+)/(\w+)(?:/([^ ?]*))?[^"]*" (\d{3}) (\d+|-)')

pytestmark = pytest.mark.skipif(not LOG.is_file(), reason=f"corpus absent: {LOG}")


@pytest.fixture(scope="module")
def store():
    ingest = pytest.importorskip("logan.read.ingest", reason="logan.read.ingest is not written yet").ingest
    from logan.store import open_store

    s = open_store(None)
    summary = ingest([str(LOG)], s, format="combined", profile="auto")
    assert summary.profile == "puppet"  # detected from the paths
    yield s
    s.close()


@pytest.fixture(scope="module")
def lines() -> list[re.Match]:
    matches = [LINE.match(line) for line in LOG.read_text().splitlines()]
    assert all(matches)  # every line of this log is a Puppet request
    return matches  # type: ignore[return-value]


def counted(store, sql: str) -> Counter:
    return Counter({tuple(r[:-1]): r[-1] for r in store.con.execute(sql).fetchall()})


def test_every_line_is_a_request(store, lines) -> None:
    assert store.con.execute("SELECT count(*) FROM requests").fetchone()[0] == len(lines) == 2383
    assert store.con.execute("SELECT count(*) FROM rejects").fetchone()[0] == 0


def test_counts_per_environment_and_indirector(store, lines) -> None:
    want = Counter((m[3], m[2], m[4]) for m in lines)
    got = counted(store, "SELECT environment, method, indirector, count(*) FROM requests GROUP BY ALL")
    assert got == want
    assert want[("dev", "GET", "file_content")] == 1600  # the log's own PROVENANCE numbers
    table = st.stats(store.con, by=["environment", "indirector"], top=0)
    assert Counter({(r.environment, r.method, r.indirector): r.requests
                    for r in table.itertuples()}) == want  # fmt: skip


def test_environment_totals_and_bytes(store, lines) -> None:
    table = st.stats(store.con, by="environment", top=0)
    for env in ("production", "dev"):
        mine = [m for m in lines if m[3] == env]
        row = table[table["environment"] == env].iloc[0]
        assert row["requests"] == len(mine)
        assert row["bytes"] == sum(int(m[7]) for m in mine if m[7] != "-")
        assert row["error_share"] == 0.0  # the 6 failures are 404s, not 5xx
    assert table["total_us"].isna().all()  # this log has no response times


def test_agents_are_named_by_their_catalog_and_report_keys(store, lines) -> None:
    want = Counter(m[5] if m[4] in ("catalog", "report") else m[1] for m in lines)
    got = counted(store, "SELECT requester, count(*) FROM requests GROUP BY ALL")
    assert got == Counter({(k,): v for k, v in want.items()})
    nodes = [k for k in want if k.startswith("ec2-")]
    assert len(nodes) == 11  # grep -oE "/(catalog|report)/[^ ?]+" | sort -u


def test_statuses_and_resources(store, lines) -> None:
    got = counted(store, "SELECT status, count(*) FROM requests GROUP BY ALL")
    assert got == Counter({(int(k),): v for k, v in Counter(m[6] for m in lines).items()})
    missing = store.con.execute("SELECT DISTINCT resource FROM requests WHERE status = 404").fetchall()
    assert missing == [("modules/users/sudoers_xenu_open",)]
    text = st.headline(store.con)
    assert "2,383 requests" in text and "GET file_content: 77% of all requests" in text


def test_reclassify_gives_the_ingest_answer(store) -> None:  # noqa: ANN001
    from logan.read.classify import reclassify

    cols = "line_no, environment, indirector, resource, route, requester, requester_group"
    before = store.con.execute(f"SELECT {cols} FROM requests ORDER BY line_no").fetchall()
    store.con.execute("UPDATE requests_data SET environment = NULL, indirector = NULL, route = NULL")
    assert reclassify(store.con, "auto") == len(before)
    assert store.con.execute(f"SELECT {cols} FROM requests ORDER BY line_no").fetchall() == before
