"""The layout rules of docs/architecture.md, read from the source (issue 29):

* no import cycle, imports inside functions included (:mod:`import_graph`);
* client code (encoders, client runtime, spec, privacy, reports) imports only the standard library, mmh3 and
  bitarray when it is imported — numpy comes in only through a batch path the caller asks for;
* no branch on a protocol's name or params type outside that protocol's own modules (:mod:`switches`);
* at most 12 top-level modules (the sizes of modules and functions: :mod:`test_sizes`).

Each rule is also checked against a deliberately broken input, so that a rule that could never fail is caught.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from import_graph import PACKAGE, Graph, _walk, modules
from switches import all_switches, family_stems, is_protocol_module, registry, switches_in

CLIENT_ROOTS = ("ldp.encoders", "ldp.client", "ldp.spec", "ldp.privacy", "ldp.reports", "ldp.hashing", "ldp.wire",
                "ldp.errors", "ldp.randomness", "ldp.protocols.registry")
CLIENT_THIRD_PARTY = {"mmh3", "bitarray"}
MAX_TOP_LEVEL = 12


@pytest.fixture(scope="module")
def graph() -> Graph:
    return Graph.build()


def test_no_import_cycles(graph: Graph) -> None:
    cycles = graph.cycles()
    described = ["  " + " <-> ".join(c) for c in cycles]
    assert not cycles, "import cycles (imports inside functions count):\n" + "\n".join(described)


def test_cycle_detection_finds_a_cycle() -> None:
    g = Graph({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert g.cycles() == [["a", "b", "c"]]


SEPARATE = ("ldp.ingest", "ldp.shuffler")
"""Packages that never import each other (issue 70): what they share (chunks, segment names, canonical lines, the
anonymity figures, the shuffler's status) lives below both, in ``ldp.pipeline``."""


def _crossings(graph: Graph, a: str, b: str) -> list[str]:
    return sorted(f"{imp.source} -> {imp.target} (line {imp.line})" for imp in graph.imports
                  if (imp.source.startswith(a + ".") or imp.source == a) and (imp.target.startswith(b + ".")
                                                                             or imp.target == b))


def test_the_collector_and_the_shuffler_never_import_each_other(graph: Graph) -> None:
    a, b = SEPARATE
    found = _crossings(graph, a, b) + _crossings(graph, b, a)
    assert not found, "ldp.ingest and the shuffler import each other (move the shared part to ldp.pipeline):\n" \
        + "\n".join(found)


def test_the_crossing_rule_catches_an_import() -> None:
    from import_graph import Import

    g = Graph({"ldp.ingest.x": {"ldp.shuffler.y"}, "ldp.shuffler.y": set()},
              [Import("ldp.ingest.x", "ldp.shuffler.y", 3, True)])
    assert _crossings(g, *SEPARATE) == ["ldp.ingest.x -> ldp.shuffler.y (line 3)"]


def _module_level_edges(graph: Graph) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {m: set() for m in graph.edges}
    for imp in graph.imports:
        if not imp.in_function:
            edges[imp.source].add(imp.target)
    return edges


def _third_party_at_import(path: Path) -> list[tuple[str, int]]:
    """Top-level packages outside the standard library that ``path`` imports when it is imported."""
    found = []
    for node, in_function in _walk(ast.parse(path.read_text(), str(path))):
        if in_function:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top not in {"ldp", "__future__"}:
                found.append((top, node.lineno))
    return found


def _client_violations(graph: Graph) -> list[str]:
    edges = _module_level_edges(graph)
    mods = modules()
    roots = [m for m in mods if any(m == r or m.startswith(r + ".") for r in CLIENT_ROOTS)]
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(edges.get(m, ()))
    out = []
    for m in sorted(seen):
        for top, line in _third_party_at_import(mods[m]):
            if top not in CLIENT_THIRD_PARTY:
                out.append(f"{m}:{line} imports {top} (reached from client code)")
    return out


def test_client_code_imports_no_numpy(graph: Graph) -> None:
    violations = _client_violations(graph)
    assert not violations, "\n".join(violations)


def test_client_rule_catches_a_numpy_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import json\nimport numpy as np\n\ndef f():\n    import scipy\n")
    assert _third_party_at_import(bad) == [("numpy", 2)]


def test_no_protocol_switch_outside_the_protocols_modules() -> None:
    found = all_switches()
    assert not found, ("branches on a protocol name or params type outside the protocol's own modules (give the "
                       "protocol a hook instead; docs/architecture.md):\n" + "\n".join(map(str, found)))


def test_switch_detection_finds_each_kind(tmp_path: Path) -> None:
    owned, classes, _ = registry()
    src = tmp_path / "m.py"
    src.write_text('if params.protocol == "rr":\n    pass\n'
                   'ok = proto in ("grr", "oue")\n'
                   'TABLE = {"cms": 1, "hcms": 2}\n'
                   'if isinstance(p, RapporParams):\n    pass\n'
                   'fine = protocol == "not-a-protocol"\n')
    kinds = {(s.line, s.kind) for s in switches_in("ldp.x", src, set(owned), classes)}
    assert kinds == {(1, "name switch"), (3, "name switch"), (3, "list of names"), (4, "table by name"),
                     (5, "type switch")}


def test_protocol_modules_follow_the_family_stems() -> None:
    stems = family_stems()
    assert {"rappor", "sketch", "pem", "randomized_response"} <= stems
    assert is_protocol_module("ldp.decoders.rappor_decode", stems)
    assert is_protocol_module("ldp.simulation.pem", stems)
    assert not is_protocol_module("ldp.jobs.decode", stems)
    assert not is_protocol_module("ldp.plan.frequency", stems)


def test_at_most_twelve_top_level_modules() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL, top
