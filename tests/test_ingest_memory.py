"""An ingest into a file on a log whose request lines never repeat (hashed file names):
a batch that does not fit the memory limit runs again with a larger one; keys the C split
numbered are classified past the cache of classified keys, alike; and the cache, which
serves the SQL split's keys, stays bounded, with the same rows as one never emptied."""

from __future__ import annotations

import random

import duckdb
import pytest

from logan.read import ingest, native

CLASS_COLUMNS = "line_no, path, route, indirector, resource, environment"


def unique_paths_log(path, lines: int, seed: int = 7) -> None:
    """nginx-like lines: thumbnails of hashed paths, every path its own, a few repeated."""
    rng = random.Random(seed)
    out = []
    for i in range(lines):
        h = f"{rng.getrandbits(96):024x}" if i % 10 else "0" * 24  # one line in ten repeats a path
        out.append(
            f"10.0.{i % 250}.{i % 7} - - [29/Mar/2026:00:{i // 6000 % 60:02d}:{i // 100 % 60:02d} +0000] "
            f'"GET /t/{i % 900}x{i % 77}/{h[:2]}/{h[2:4]}/{h[4:]}.jpeg?w={i % 13} HTTP/1.1" 200 {i % 5000} '
            f'"-" "ua/{i % 5}" {i % 997 / 1000:.3f}'
        )
    path.write_text("\n".join(out) + "\n")


FORMAT = (
    '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent '
    '"$http_referer" "$http_user_agent" $request_time'
)


def read(tmp_path, log, name: str, **kw):
    db = tmp_path / f"{name}.duckdb"
    s = ingest.ingest([str(log)], store=str(db), format=FORMAT, dialect="nginx", block_size=1 << 20, **kw)
    s.limit = s.store.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    s.store.con.close()
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute(f"SELECT {CLASS_COLUMNS} FROM requests ORDER BY line_no").fetchall()
    con.close()
    return s, rows


def test_a_batch_past_the_memory_limit_runs_again_with_more(tmp_path, monkeypatch):
    log = tmp_path / "thumbs.log"
    unique_paths_log(log, 30_000)
    _, want = read(tmp_path, log, "roomy")
    # 8 MB: too little for a batch of 1 MB of lines joined to their classes (classified row
    # by row, as keys this many would be, it fits)
    monkeypatch.setattr(ingest, "_classify_inline", lambda read: False)
    monkeypatch.setattr(ingest, "BATCH_MEMORY_MB", 8)
    tried = []
    real = ingest._ingest_batch

    def counting(st, *a):
        tried.append(st.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])
        return real(st, *a)

    monkeypatch.setattr(ingest, "_ingest_batch", counting)
    s, got = read(tmp_path, log, "tight")
    assert s.lines == s.rows == 30_000
    assert got == want  # every line once, classified alike
    assert len(tried) > len(set(tried)) or len(set(tried)) > 1, tried  # a batch ran again, with more
    assert ingest._mib(tried[0]) < ingest._mib(tried[-1])
    assert ingest._mib(s.limit) > 1000  # the ingest put the store's own limit back


def test_batches_have_less_memory_than_the_fold_after_them(tmp_path, monkeypatch):
    # Batches run under BATCH_MEMORY_MB (two of them in memory beside DuckDB's), the route
    # fold and the checkpoint after the last under INGEST_MEMORY_MB, and a limit an
    # ingest had to raise past that stays raised.
    log = tmp_path / "thumbs.log"
    unique_paths_log(log, 5_000)
    limits: dict[str, list[int]] = {"batch": [], "fold": []}

    def under(what, real):
        def run(st_or_con, *a):
            con = getattr(st_or_con, "con", st_or_con)
            limits[what].append(ingest._limit_mb(con))
            return real(st_or_con, *a)

        return run

    monkeypatch.setattr(ingest, "_ingest_batch", under("batch", ingest._ingest_batch))
    monkeypatch.setattr(ingest, "fold_new_routes", under("fold", ingest.fold_new_routes))
    read(tmp_path, log, "limits")
    batch, fold = ingest.BATCH_MEMORY_MB, ingest.INGEST_MEMORY_MB
    assert batch < fold and set(limits["batch"]) == {batch} and limits["fold"] == [fold]
    monkeypatch.setattr(ingest, "INGEST_MEMORY_MB", batch // 2)  # below the batches': kept
    limits = {"batch": [], "fold": []}
    read(tmp_path, log, "raised")
    assert set(limits["batch"]) == {batch} and limits["fold"] == [batch]


def repeated_paths_log(path, lines: int, repeat: int) -> None:
    """Lines whose paths come `repeat` times each, in turn (a log that repeats its paths)."""
    out = []
    for i in range(lines):
        n = i // repeat
        h = f"{random.Random(n).getrandbits(96):024x}"
        out.append(
            f"10.0.0.{i % 7} - - [29/Mar/2026:00:{i // 6000 % 60:02d}:{i // 100 % 60:02d} +0000] "
            f'"GET /t/{n % 900}x{n % 77}/{h[:2]}/{h[4:]}.jpeg HTTP/1.1"'
            f' 200 {i % 5000} "-" "ua" 0.{i % 997:03d}'
        )
    path.write_text("\n".join(out) + "\n")


def watch_cache(monkeypatch) -> list[int]:
    """The keys the class cache holds as each batch starts, once emptied or kept. The split
    is SQL's, whose keys the cache serves (the C split's are classified past it)."""
    monkeypatch.setattr(native, "_split", None)
    sizes: list[int] = []
    real = ingest._empty_cache_when_useless

    def watching(con, classes):
        real(con, classes)
        held = con.execute(f"SELECT count(*) FROM {classes.table}").fetchall()[0][0]
        assert classes.size == held  # the count the ingest keeps is the table's
        sizes.append(held)

    monkeypatch.setattr(ingest, "_empty_cache_when_useless", watching)
    return sizes


def test_the_class_cache_is_emptied_when_full_and_answers_alike(tmp_path, monkeypatch):
    log = tmp_path / "repeats.log"
    repeated_paths_log(log, 24_000, repeat=3)  # a third of each batch's lines bring a new key
    _, want = read(tmp_path, log, "unbounded")
    monkeypatch.setattr(ingest, "CLASS_CACHE_KEYS", 3_000)
    sizes = watch_cache(monkeypatch)
    s, got = read(tmp_path, log, "bounded")
    assert s.rows == 24_000 and got == want
    assert len(sizes) >= 3 and max(sizes) <= 3_000 + 8_000  # at most the bound and one batch's keys
    assert 0 in sizes[1:]  # emptied at least once after the first batch
    assert sizes[1] > 0  # kept after the first batch: its keys were not mostly new


def test_the_class_cache_is_emptied_when_keys_never_repeat(tmp_path, monkeypatch):
    log = tmp_path / "thumbs.log"
    unique_paths_log(log, 20_000)  # nine lines in ten bring a new key
    sizes = watch_cache(monkeypatch)
    s, got = read(tmp_path, log, "unique")
    assert s.rows == 20_000
    assert len(sizes) >= 3 and sizes == [0] * len(sizes)  # far under the bound, emptied each time
    monkeypatch.setattr(ingest, "_empty_cache_when_useless", lambda *a: None)  # never emptied
    _, kept = read(tmp_path, log, "kept")
    assert got == kept


def watch_choice(monkeypatch, choice: str) -> list[bool]:
    """What ingest.`choice` said for each batch: `_classify_direct`, whether it was classified
    past the class cache; `_classify_inline`, whether row by row, without its keys."""
    taken: list[bool] = []
    real = getattr(ingest, choice)

    def watching(*a):
        taken.append(real(*a))
        return taken[-1]

    monkeypatch.setattr(ingest, choice, watching)
    return taken


def puppet_nodes_log(path, lines: int) -> None:
    """Puppet agents asking for their catalogs, a node of its own per line but one in four."""
    path.write_text(
        "".join(
            f"10.1.{i % 200}.{i % 9} - - [29/Mar/2026:01:{i // 600 % 60:02d}:{i // 10 % 60:02d} +0000] "
            f'"POST /puppet/v3/catalog/node{i if i % 4 else 7}.example.com?environment=prod{i % 3} HTTP/1.1" '
            f'200 {i % 7000} {i % 4000} "-" "Puppet/8.4.0 Ruby/3.2.2-p53 (x86_64-linux)"\n'
            for i in range(lines)
        )
    )


def repeats_log(path, lines: int) -> None:
    repeated_paths_log(path, lines, repeat=3)


@pytest.mark.parametrize(
    "make, profile", [(unique_paths_log, "generic"), (repeats_log, "generic"), (puppet_nodes_log, "puppet")]
)
def test_numbered_keys_are_classified_past_the_cache_alike(tmp_path, monkeypatch, make, profile):
    log = tmp_path / "keys.log"
    make(log, 20_000)  # keys nine lines in ten, a third of the lines, three in four
    fmt = "combined_D" if make is puppet_nodes_log else FORMAT
    dialect = "apache" if make is puppet_nodes_log else "nginx"
    taken = watch_choice(monkeypatch, "_classify_direct")
    inline = watch_choice(monkeypatch, "_classify_inline")
    filled: list[int] = []  # the keys in the cache after each batch
    real = ingest._ingest_batch

    def batch(st, r, *a):
        said = real(st, r, *a)
        filled.append(st.con.execute(f"SELECT count(*) FROM {r.classes.table}").fetchall()[0][0])
        return said

    monkeypatch.setattr(ingest, "_ingest_batch", batch)

    def stored(name: str) -> list[tuple]:
        db = tmp_path / f"{name}.duckdb"
        s = ingest.ingest([str(log)], store=str(db), format=fmt, dialect=dialect, block_size=1 << 20)
        assert s.profile == profile and s.rows == 20_000
        got = s.store.con.execute(f"SELECT {CLASS_COLUMNS} FROM requests ORDER BY line_no").fetchall()
        s.store.con.close()
        return got

    direct = stored("direct")
    assert len(taken) >= 3 and all(taken), taken
    # keys more than half of the lines: each row classified where it is
    assert set(inline) == {make is not repeats_log}, inline
    assert set(filled) == {0}  # the cache never filled
    monkeypatch.setattr(ingest, "_classify_inline", lambda read: not inline[0])  # the other way
    assert stored("the other way") == direct
    assert set(filled) == {0}
    filled.clear()
    monkeypatch.setattr(ingest, "_classify_direct", lambda *a: False)
    cached = stored("cached")
    assert min(filled) > 0  # this time through the cache
    assert direct == cached
    assert all(r[2] and r[3] and r[4] for r in direct)  # a route, indirector and resource each


def test_the_sql_splits_keys_are_classified_through_the_cache(tmp_path, monkeypatch):
    log = tmp_path / "repeats.log"
    repeats_log(log, 24_000)
    _, want = read(tmp_path, log, "c_split")  # past the cache
    sizes = watch_cache(monkeypatch)
    s, got = read(tmp_path, log, "sql_split")
    assert s.rows == 24_000 and len(sizes) >= 3 and all(sizes[1:])  # the cache holds keys
    assert got == want


def test_the_files_of_one_ingest_share_the_class_cache(tmp_path, monkeypatch):
    # rotated logs of one server: each file asks for the same 600 paths
    words = ["cart", "item", "shop", "help", "news", "tags"]
    lines = [
        f"10.0.0.{i % 9} - - [29/Mar/2026:00:{i // 600 % 60:02d}:{i // 10 % 60:02d} +0000] "
        f'"GET /{words[i % 6]}/{i % 100}/page{i % 600 // 100} HTTP/1.1" 200 {i % 50} "-" "ua" 0.{i % 997:03d}'
        for i in range(9_000)
    ]
    whole, rotated = tmp_path / "whole.log", tmp_path / "rotated"
    whole.write_text("\n".join(lines) + "\n")
    rotated.mkdir()
    for k in range(3):
        (rotated / f"access.log.{k}").write_text("\n".join(lines[k * 3000 : (k + 1) * 3000]) + "\n")
    _, want = read(tmp_path, whole, "whole")
    sizes = watch_cache(monkeypatch)
    s, got = read(tmp_path, rotated, "rotated")
    assert len(s.sources) == 3 and s.rows == 9_000
    # one batch a file: the second and third find every key the first classified
    assert sizes == [0, 600, 600]
    without_line = sorted(r[1:] for r in got)
    assert without_line == sorted(r[1:] for r in want)  # classified as one file is


@pytest.mark.parametrize("setting, mib", [("244.1 MiB", 244), ("1.9 GiB", 1945), ("512.0 KiB", 0)])
def test_memory_setting_in_mib(setting, mib):
    assert ingest._mib(setting) == mib
