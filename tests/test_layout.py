"""The package's layout as docs/architecture.md describes it: a few parts a newcomer can see,
arrows that point one way, and every module saying first what it holds.

The imports are read off the source (every `import` and `from ... import`, at any depth of
a function), so a lazy import inside a function counts like one at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "logan"

# What each part may import besides itself. The shared modules at the top import only each
# other; reading knows nothing of what asks questions of its rows; the answers may read
# (a one-shot store is read before it is asked); the outputs show what both give; only
# the command (and `python -m logan`) knows the command.
TOP = {"errors", "schema", "store", "resources", "units", "generate"}
ALLOWED = {
    "top": {"top"},
    "read": {"top"},
    "answer": {"top", "read"},
    "show": {"top", "read", "answer"},  # an ingest's summary is shown too
    "engines": {"top", "read", "answer"},  # the same reading and views on Spark
    "nightly": {"top", "read", "answer", "show"},
    "cli": {"api", "top", "read", "answer", "show", "engines", "nightly"},
    "api": {"top", "read", "answer", "show", "engines", "nightly"},
}


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(("logan", *parts)).removesuffix(".__init__")
        found[name] = path
    return found


def part(module: str) -> str:
    names = module.split(".")
    if module == "logan.__main__":
        return "cli"
    if len(names) == 1:
        return "api"
    return "top" if len(names) == 2 and names[1] in TOP else names[1]


def imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The logan modules `module` imports (a `from package import name` of a submodule
    counts as that submodule)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("logan")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("logan"):
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.add(sub if sub in known else node.module)
    return {m for m in found if m in known and m != module}


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {m: imports(m, p, set(mods)) for m, p in mods.items()}


def test_few_modules_stand_directly_in_the_package():
    top = [p.name for p in PACKAGE.glob("*.py")]
    assert len(top) <= 12, top
    assert {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()} >= {
        "read",
        "answer",
        "show",
        "cli",
    }


def test_every_module_opens_with_what_it_holds():
    for name, path in modules().items():
        doc = ast.get_docstring(ast.parse(path.read_text()))
        assert doc and len(doc.split()) >= 5, f"{name} has no docstring saying what it holds"


def test_no_import_cycle():
    g = graph()
    # Tarjan's strongly connected components: a component of more than one module is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in g:
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_arrows_point_one_way():
    wrong = []
    for module, targets in graph().items():
        mine = part(module)
        for t in targets:
            theirs = part(t)
            if theirs != mine and theirs not in ALLOWED[mine]:
                wrong.append(f"{module} ({mine}) imports {t} ({theirs})")
    assert not wrong, wrong


def test_the_store_does_not_know_its_readers():
    assert graph()["logan.store"] <= {"logan.errors", "logan.schema"}


def test_the_checker_reads_the_imports():
    # the rules above would pass on a checker that reads no import at all
    g = graph()
    assert "logan.read.ingest" in g["logan.cli.ingest"]
    assert "logan.answer.views" in g["logan.answer.stats"]
    assert "logan.read._split" not in g  # C, not Python
    assert part("logan.read.ingest") == "read" and part("logan.units") == "top" and part("logan") == "api"
