"""The import rules of docs/architecture.md hold: every unit of ``mau`` (a subpackage or a top-level module)
is on the map, imports only what its row allows, and no units import each other (directly or round a longer
cycle). The graph is read from the source (every import statement, lazy ones inside functions included), and
the map from the doc's table, so the doc and this test cannot disagree."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAP = ROOT / "docs" / "architecture.md"
BASE = "base"  # the doc's name for the group of base modules


def unit_of(root: Path, dotted: str) -> str | None:
    """The unit of a dotted module name under package ``root`` (``mau.eval.report`` -> ``eval``)."""
    parts = dotted.split(".")
    if parts[0] != root.name or len(parts) < 2:
        return None
    if (root / parts[1]).is_dir() or (root / f"{parts[1]}.py").is_file():
        return parts[1]
    return None


def units(root: Path) -> set[str]:
    found = {p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    return found | {p.stem for p in root.glob("*.py") if p.stem != "__init__"}


def imported_names(root: Path, f: Path) -> list[str]:
    """The dotted names every import statement of ``f`` names (lazy ones inside functions and TYPE_CHECKING
    blocks included; relative imports resolved)."""
    rel = f.relative_to(root.parent).with_suffix("")
    package = list(rel.parts[:-1])  # the package a relative import starts from
    names: list[str] = []
    for node in ast.walk(ast.parse(f.read_text(), str(f))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the importing file's package
                up = package[: len(package) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            names += [base] + [f"{base}.{a.name}" for a in node.names]  # `from mau import schema`
    return names


def import_graph(root: Path) -> dict[tuple[str, str], list[str]]:
    """(importing unit, imported unit) -> the files with such an import."""
    edges: dict[tuple[str, str], list[str]] = {}
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root.parent).with_suffix("")
        src = unit_of(root, ".".join(rel.parts))
        if src is None:
            continue
        for name in imported_names(root, f):
            dst = unit_of(root, name)
            if dst is not None and dst != src:
                edges.setdefault((src, dst), [])
                if str(f.relative_to(root.parent)) not in edges[(src, dst)]:
                    edges[(src, dst)].append(str(f.relative_to(root.parent)))
    return edges


def module_graph(root: Path) -> set[tuple[str, str]]:
    """(importing module, imported module) within one unit: the modules of a unit may not import each other
    round a cycle either (a package's ``__init__`` counts as the package)."""
    modules = {}
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.parts[-1] == "__init__" else rel.parts
        modules[".".join(parts)] = f
    edges = set()
    for src, f in modules.items():
        unit = unit_of(root, src)
        for name in imported_names(root, f):
            while name and name not in modules:  # `from mau.env.sim import SimWorld` -> mau.env.sim
                name = name.rpartition(".")[0]
            if name and name != src and unit is not None and unit_of(root, name) == unit:
                if not (src.startswith(name + ".") and f.name == "__init__.py"):
                    edges.add((src, name))
    return {(a, b) for a, b in edges if not a.startswith(b + ".")}  # a module importing its own package


def read_map(text: str) -> tuple[dict[str, set[str]], set[str]]:
    """The doc's table: {unit: units it may import} and the base group. A row names its units (backticked) in
    the first column and what they may import in the last: units, ``base``, or ``everything but`` a list."""
    rows: list[tuple[list[str], str]] = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`"):
            rows.append((re.findall(r"`([\w]+)`", cells[0]), cells[-1]))
    base = (
        set(next(us for us, _ in rows if BASE in us)) - {BASE} if any(BASE in us for us, _ in rows) else set()
    )
    every = {u for us, _ in rows for u in us if u != BASE}
    allowed: dict[str, set[str]] = {}
    for us, may in rows:
        named = set(re.findall(r"`([\w]+)`", may))
        if BASE in named:
            named = (named - {BASE}) | base
        if may.lower().startswith("everything but"):
            named = every - named
        for u in us:
            if u != BASE:
                allowed[u] = named - {u}
    return allowed, base


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components with more than one unit (Tarjan)."""
    graph: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def violations(root: Path, map_text: str) -> list[str]:
    """Every way the package at ``root`` breaks the map: units missing from it, forbidden arrows, cycles."""
    allowed, _ = read_map(map_text)
    problems = [f"{u}: not on the map (add its row to docs/architecture.md)"
                for u in sorted(units(root) - set(allowed))]
    graph = import_graph(root)
    for (a, b), files in sorted(graph.items()):
        if a in allowed and b not in allowed[a]:
            problems.append(f"{a} -> {b}: forbidden by docs/architecture.md ({', '.join(files)})")
    problems += [f"cycle: {' <-> '.join(c)}" for c in cycles(set(graph))]
    problems += [f"cycle inside {unit_of(root, c[0])}: {' <-> '.join(c)}" for c in cycles(module_graph(root))]
    return problems


def test_mau_keeps_to_the_map():
    assert violations(ROOT / "mau", MAP.read_text()) == []


def test_the_check_sees_a_forbidden_arrow_a_cycle_and_a_unit_off_the_map(tmp_path):
    """The checker itself, on a made-up package: a clean one passes; each kind of break is reported (a cycle
    between units, a cycle between two modules of one unit, a unit off the map)."""
    pkg = tmp_path / "mau"
    for d in ("low", "high"):
        (pkg / d).mkdir(parents=True)
        (pkg / d / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "schema.py").write_text("X = 1\n")
    (pkg / "low" / "a.py").write_text("from mau import schema\n")
    (pkg / "high" / "b.py").write_text("def f():\n    from mau.low.a import schema\n")
    doc = ("| unit | owns | may import |\n|---|---|---|\n| `base`: `schema` | names | nothing |\n"
           "| `low` | x | `base` |\n| `high` | y | `base`, `low` |\n")
    assert violations(pkg, doc) == []
    (pkg / "low" / "c.py").write_text("def g():\n    import mau.high.b\n")  # low -> high: forbidden, a cycle
    assert violations(pkg, doc) == ["low -> high: forbidden by docs/architecture.md (mau/low/c.py)",
                                    "cycle: high <-> low"]
    (pkg / "low" / "c.py").unlink()
    (pkg / "high" / "d.py").write_text("from typing import TYPE_CHECKING\n"
                                       "if TYPE_CHECKING:\n    from mau.high.b import f\n")
    (pkg / "high" / "b.py").write_text("def f():\n    from mau.high.d import "
                                       "TYPE_CHECKING\n")  # inside a unit
    assert violations(pkg, doc) == ["cycle inside high: mau.high.b <-> mau.high.d"]
    (pkg / "high" / "d.py").unlink()
    (pkg / "new.py").write_text("")
    assert violations(pkg, doc) == ["new: not on the map (add its row to docs/architecture.md)"]


MAX_FUNCTION_LINES = 100


def test_no_function_in_mau_is_longer_than_a_screen():
    """Functions over 100 lines split along their stages (issue 33); this keeps them so."""
    long = []
    for f in sorted((ROOT / "mau").rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{f.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)")
    assert not long, "split these along their stages: " + "; ".join(long)
