"""The wheel a user installs: parsers/ and queries/ ship inside the package and are found
from outside the checkout. Build, install into a fresh venv, run from a temp dir."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run(cmd: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def under(path: str | Path, root: Path) -> bool:
    return Path(path).resolve().is_relative_to(root.resolve())


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("wheel")
    assert not under(base, REPO)
    dist = base / "dist"
    r = run([sys.executable, "-m", "pip", "wheel", "--no-deps", str(REPO), "-w", str(dist)], cwd=base)
    if r.returncode != 0 and "No matching distribution found for setuptools" in r.stdout + r.stderr:
        pytest.skip("the build backend (setuptools) cannot be installed here: no package index")
    assert r.returncode == 0, r.stdout + r.stderr
    wheels = list(dist.glob("logan-*.whl"))
    assert len(wheels) == 1, wheels
    venv = base / "venv"
    r = run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=base)
    assert r.returncode == 0, r.stderr
    py = venv / "bin" / "python"
    see_our_dependencies(py)
    r = run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(py),
            "install",
            "--no-deps",
            "--force-reinstall",
            str(wheels[0]),
        ],
        cwd=base,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    outside = base / "elsewhere"
    outside.mkdir()
    return {"wheel": wheels[0], "venv": venv, "py": py, "logan": venv / "bin" / "logan", "cwd": outside}


def see_our_dependencies(py: Path) -> None:
    """Let the fresh venv import what this interpreter imports (duckdb, pandas, ...), but not
    logan: a .pth file naming this interpreter's import directories. `--system-site-packages`
    would not do: from inside a venv (or a conda environment) it names the base
    interpreter's packages, not the ones the tests run with. The directories are added after
    the venv's own, and .pth files in them are not read, so the editable install of the
    checkout stays out. A virtualenv made inside the checkout (`python -m venv .venv`) is
    this interpreter's, not the checkout's: its directories are named too."""
    r = run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=py.parent)
    assert r.returncode == 0, r.stderr
    ours = [p for p in sys.path if p and Path(p).is_dir()]
    dirs = [p for p in ours if not under(p, REPO) or under(p, Path(sys.prefix))]
    Path(r.stdout.strip(), "logan-test-deps.pth").write_text("\n".join(dirs) + "\n")


def repo_names(folder: str, pattern: str) -> set[str]:
    return {p.relative_to(REPO / folder).as_posix() for p in (REPO / folder).glob(pattern)}


def test_wheel_contains_data(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    assert {f"logan/parsers/{n}" for n in repo_names("parsers", "*.toml")} <= names
    assert "logan/parsers/apache.toml" in names
    if (REPO / "queries").is_dir():
        assert {f"logan/queries/{n}" for n in repo_names("queries", "**/*.sql")} <= names
        assert "logan/queries/parts/timer_percentiles.sql" in names  # a part the views splice in
    templates = {f"logan/show/templates/{p.name}" for p in (REPO / "logan/show/templates").glob("*.j2")}
    assert templates and templates <= names  # the report's pages


def test_installed_package_is_not_the_checkout(installed):
    probe = (
        "import json, logan, logan.cli, logan.resources as r;"
        "print(json.dumps({'init': logan.__file__, 'path': list(logan.__path__), 'cli': logan.cli.__file__,"
        "'parsers': [str(p) for p in r.parsers_dirs()], 'queries': str(r.queries_dir())}))"
    )
    r = run([str(installed["py"]), "-c", probe], cwd=installed["cwd"])
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    venv = installed["venv"]
    assert info["init"] is None or (under(info["init"], venv) and not under(info["init"], REPO))
    assert under(info["cli"], venv) and not under(info["cli"], REPO)
    assert under(info["path"][0], venv)
    for d in info["parsers"][:1]:
        assert under(d, venv) and not under(d, REPO)
        assert {p.name for p in Path(d).glob("*.toml")} >= repo_names("parsers", "*.toml")
    if (REPO / "queries").is_dir():
        q = Path(info["queries"])
        assert under(q, venv) and not under(q, REPO)
        assert {p.name for p in q.glob("*.sql")} == repo_names("queries", "*.sql")


def test_installed_formats_lists_the_presets(installed):
    r = run([str(installed["logan"]), "formats"], cwd=installed["cwd"])
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())
    with open(REPO / "parsers" / "apache.toml", "rb") as fh:
        presets = tomllib.load(fh)["presets"]
    for name in ("common", "combined", "vhost_combined", "combined_D"):
        assert name in presets
    for name in presets:
        assert f"apache:{name} " in out + " ", name


def test_installed_ingest_and_sql(installed):
    cwd = installed["cwd"]
    lines = [
        f'192.0.2.{i} - - [10/Oct/2000:13:55:{i:02d} -0700] "GET /x/{i} HTTP/1.1" 200 {i} {i * 1000} "-" "t"'
        for i in range(1, 31)
    ]
    (cwd / "small.log").write_text("\n".join(lines) + "\n")
    logan = str(installed["logan"])
    r = run([logan, "ingest", "small.log", "--db", "s.duckdb", "--format", "combined_D"], cwd=cwd)
    assert r.returncode == 0, r.stderr
    r = run([str(installed["logan"]), "ingest", "small.log", "--db", "auto.duckdb"], cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert "combined_D" in r.stderr  # auto-detection read the presets from the installed package
    for db in ("s.duckdb", "auto.duckdb"):
        r = run(
            [
                str(installed["logan"]),
                "sql",
                "--db",
                db,
                "-o",
                "csv",
                "SELECT count(*) AS n, sum(duration_us) AS d, min(ts_start) AS t FROM requests",
            ],
            cwd=cwd,
        )
        assert r.returncode == 0, r.stderr
        row = next(csv.DictReader(io.StringIO(r.stdout)))
        assert int(row["n"]) == 30
        assert float(row["d"]) == sum(i * 1000 for i in range(1, 31))
        assert row["t"].startswith("2000-10-10 20:55:01")
    # the views and the part they splice in, from the installed package: 1..30 ms, whose p99
    # lies at rank 0.99 * 29 = 28.71, between 29 and 30 ms
    r = run([logan, "stats", "--db", "s.duckdb", "-o", "json"], cwd=cwd)
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)[0]
    assert row["requests"] == 30
    assert row["p99_us"] == pytest.approx(29_000 + 0.71 * 1_000)


def test_installed_wheel_has_the_c_split_when_a_compiler_is_here(installed):
    """With a C compiler at build time the wheel carries logan/read/_split and _route
    (setup.py); the installed logan then reads and templates routes with them."""
    if not shutil.which("cc") and not shutil.which("gcc"):
        pytest.skip("no C compiler: the wheel is built without the C split")
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    for part in ("logan/read/_split", "logan/read/_route"):
        assert any(n.startswith(part) and n.endswith(".so") for n in names), names
    probe = (
        "import duckdb, logan.read.native as n, logan.read.classify as c;"
        " print(n.available(), c.register_route_template(duckdb.connect()))"
    )
    r = run([str(installed["py"]), "-c", probe], cwd=installed["cwd"])
    assert r.stdout.strip() == "True True", r.stderr


def test_installed_report_finds_its_template(installed):
    cwd = installed["cwd"]
    line = '192.0.2.{i} - - [10/Oct/2000:13:55:{i:02d} +0000] "GET /x/{i} HTTP/1.1" 200 {i} {d} "-" "t"'
    lines = [line.format(i=i, d=i * 1000) for i in range(1, 31)]
    (cwd / "day.log").write_text("\n".join(lines) + "\n")
    r = run([str(installed["logan"]), "report", "day.log", "--day", "2000-10-10", "--out", "r.html"], cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert "<!DOCTYPE html>" in (cwd / "r.html").read_text() and "30" in (cwd / "r.html").read_text()
