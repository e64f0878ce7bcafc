"""No import circle in the product (issue 27): not between modules, not between packages.

The graph is read from the source with :mod:`ast`: every ``import`` and ``from … import``
anywhere in a module counts (inside functions and ``TYPE_CHECKING`` blocks too), because a
circle that only a late import hides is still a circle in the design. A package's edges are
its modules' edges to modules of other packages (``haytham.runs`` → ``haytham.pipeline``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("haytham", "frontend_streamlit")


def _modules(root: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for top in PRODUCT:
        for path in (root / top).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _owner(name: str, modules: Mapping[str, Path]) -> str | None:
    """The product module that ``name`` (a dotted import target) lives in, if any."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the product modules it imports (itself excluded)."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                targets = [f"{stem}.{alias.name}" for alias in node.names] + [stem]
            for target in targets:
                owner = _owner(target, modules)
                if owner and owner != module:
                    graph[module].add(owner)
                    break
    return graph


def package_graph(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """The same edges between packages (``haytham.runs``), top-level modules standing alone."""

    def package(module: str) -> str:
        return ".".join(module.split(".")[:2])

    collapsed: dict[str, set[str]] = {package(m): set() for m in graph}
    for module, targets in graph.items():
        for target in targets:
            if package(target) != package(module):
                collapsed[package(module)].add(package(target))
    return collapsed


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph.get(start, ())))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circle_between_modules() -> None:
    graph = import_graph()
    assert len(graph) > 100  # the walk found the product
    assert cycles(graph) == []


def test_no_import_circle_between_packages() -> None:
    assert cycles(package_graph(import_graph())) == []


def test_nothing_below_the_pipeline_imports_it() -> None:
    """The layers under the pipeline (its parts) never reach up into it."""
    below = (
        "haytham.agents",
        "haytham.state",
        "haytham.stages",
        "haytham.schemas",
        "haytham.storage",
        "haytham.models",
        "haytham.validate",
        "haytham.verify",
        "haytham.idea",
        "haytham.changes",
    )
    graph = import_graph()
    up = sorted(
        (m, t)
        for m, targets in graph.items()
        if m.startswith(below)
        for t in targets
        if t.startswith("haytham.pipeline")
    )
    assert up == []


def test_the_checks_find_a_circle(tmp_path: Path) -> None:
    """The walk sees a circle made through a late import inside a function."""
    pkg = tmp_path / "haytham"
    (pkg / "sub").mkdir(parents=True)
    (tmp_path / "frontend_streamlit").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from haytham.sub.b import x\n")
    (pkg / "sub" / "b.py").write_text("def x():\n    from haytham import a\n    return a\n")
    graph = import_graph(tmp_path)
    assert cycles(graph) == [["haytham.a", "haytham.sub.b"]]
    assert cycles(package_graph(graph)) == [["haytham.a", "haytham.sub"]]
