"""The import graph of the ``ldp`` package, read from the source with :mod:`ast` (nothing is imported).

Every ``import`` counts, also one inside a function; one under ``if TYPE_CHECKING:`` does not (it never runs).
``from ldp.a import b`` is an edge to ``ldp.a.b`` when ``b`` is a submodule, else to ``ldp.a``. Importing
``ldp.a.b`` also runs ``ldp/a/__init__.py``, but only the edge to the module named is drawn: a package's
``__init__`` is one more module of the graph, with its own edges.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "ldp"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


@dataclass
class Import:
    source: str
    target: str
    line: int
    in_function: bool


def _walk(node: ast.AST, in_function: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for sub in child.orelse:
                yield sub, in_function
                yield from _walk(sub, in_function)
            continue
        inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        yield child, in_function
        yield from _walk(child, inner)


def _resolve_relative(name: str, node: ast.ImportFrom, is_package: bool) -> str:
    base = name.split(".") if is_package else name.split(".")[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(name: str, path: Path, known: set[str]) -> list[Import]:
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node, in_function in _walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "ldp":
                    out.append(Import(name, alias.name, node.lineno, in_function))
        elif isinstance(node, ast.ImportFrom):
            base = (_resolve_relative(name, node, path.name == "__init__.py") if node.level else node.module) or ""
            if base.split(".")[0] != "ldp":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.append(Import(name, sub if sub in known else base, node.lineno, in_function))
    return out


@dataclass
class Graph:
    edges: dict[str, set[str]] = field(default_factory=dict)
    imports: list[Import] = field(default_factory=list)

    @classmethod
    def build(cls) -> Graph:
        mods = modules()
        known = set(mods)
        g = cls({m: set() for m in mods})
        for name, path in mods.items():
            for imp in imports_of(name, path, known):
                target = imp.target
                while target not in known and "." in target:  # ``import ldp.x.y`` of a name that is no module
                    target = target.rsplit(".", 1)[0]
                if target != name and target in known:
                    g.edges[name].add(target)
                    g.imports.append(Import(name, target, imp.line, imp.in_function))
        return g

    def cycles(self) -> list[list[str]]:
        """The strongly connected components with more than one module (Tarjan, iterative)."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        out: list[list[str]] = []
        counter = 0
        for root in sorted(self.edges):
            if root in index:
                continue
            work = [(root, iter(sorted(self.edges[root])))]
            index[root] = low[root] = counter
            counter += 1
            stack.append(root)
            on_stack.add(root)
            while work:
                node, it = work[-1]
                advanced = False
                for nxt in it:
                    if nxt not in index:
                        index[nxt] = low[nxt] = counter
                        counter += 1
                        stack.append(nxt)
                        on_stack.add(nxt)
                        work.append((nxt, iter(sorted(self.edges[nxt]))))
                        advanced = True
                        break
                    if nxt in on_stack:
                        low[node] = min(low[node], index[nxt])
                if advanced:
                    continue
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
        return out

    def reachable(self, start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo.extend(self.edges.get(m, ()))
        return seen

    def why(self, a: str, b: str) -> list[Import]:
        return [i for i in self.imports if i.source == a and i.target == b]


if __name__ == "__main__":
    g = Graph.build()
    for comp in g.cycles():
        print(f"cycle of {len(comp)}:")
        for a in comp:
            for b in sorted(g.edges[a] & set(comp)):
                lines = ", ".join(f"{i.line}{'f' if i.in_function else ''}" for i in g.why(a, b))
                print(f"   {a} -> {b}  (line {lines})")
