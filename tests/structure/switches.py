"""Places that branch on a protocol's name or params type, read from the source with :mod:`ast`.

A *name switch* compares something called ``protocol`` (a name, an attribute, a ``["protocol"]`` item) with a
registered protocol's name, tests membership in a literal collection of such names, or keys a literal dict by
two or more of them. A *type switch* is ``isinstance(x, P)`` (or ``issubclass``) with ``P`` a protocol's params,
encoder or aggregate class. Either is allowed only in the protocol's own modules.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from import_graph import modules


@dataclass(frozen=True)
class Switch:
    module: str
    line: int
    kind: str
    names: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.module}:{self.line}: {self.kind} on {', '.join(self.names)}"


def _names_in(node: ast.AST, protocols: set[str]) -> tuple[str, ...]:
    if isinstance(node, ast.Constant) and node.value in protocols:
        return (node.value,)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        found = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in protocols]
        return tuple(found)
    return ()


def _is_protocol_expr(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id in {"protocol", "name", "proto"}
    if isinstance(node, ast.Attribute):
        return node.attr in {"protocol", "name"}
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "protocol"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "protocol"
    return False


def switches_in(module: str, path: Path, protocols: set[str], classes: set[str]) -> list[Switch]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_protocol_expr(s) for s in sides):
                names = tuple(n for s in sides for n in _names_in(s, protocols))
                if names:
                    out.append(Switch(module, node.lineno, "name switch", names))
        elif isinstance(node, ast.Tuple | ast.List | ast.Set) and len(_names_in(node, protocols)) >= 2:
            out.append(Switch(module, node.lineno, "list of names", _names_in(node, protocols)))
        elif isinstance(node, ast.Dict):
            names = tuple(k.value for k in node.keys if isinstance(k, ast.Constant) and k.value in protocols)
            if len(names) >= 2:
                out.append(Switch(module, node.lineno, "table by name", names))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {
                "isinstance", "issubclass"} and len(node.args) == 2:
            target = node.args[1]
            elts = target.elts if isinstance(target, ast.Tuple) else [target]
            names = tuple(e.id if isinstance(e, ast.Name) else e.attr for e in elts
                          if isinstance(e, ast.Name | ast.Attribute)
                          and (e.id if isinstance(e, ast.Name) else e.attr) in classes)
            if names:
                out.append(Switch(module, node.lineno, "type switch", names))
    return out


def registry() -> tuple[dict[str, set[str]], set[str], dict[str, str]]:
    """``(owned modules by protocol, names of protocol classes, protocol of each class)``."""
    from ldp.protocols import protocols

    owned: dict[str, set[str]] = {}
    owner: dict[str, str] = {}
    for name, proto in protocols().items():
        types = [proto.params_type, proto.encoder_type, proto.aggregate_type]
        mods = set()
        for t in types:
            if t is None:
                continue
            owner[t.__name__] = name
            mods.add(t.__module__)
        owned[name] = mods
    return owned, set(owner), owner


def family_stems() -> set[str]:
    """The file stems of the protocol families: the basenames of the modules that define a registered protocol's
    params, encoder or aggregate (``rappor``, ``sketch``, ``cms``, ``pem``, …)."""
    owned, _, _ = registry()
    return {m.rsplit(".", 1)[-1] for mods in owned.values() for m in mods}


def is_protocol_module(module: str, stems: set[str]) -> bool:
    """A protocol's own module: its basename is a family stem or starts with one and ``_`` (``rappor_decode``,
    ``rappor_output``), in any package (``ldp.simulation.pem``, ``ldp.cli.pem``, ``ldp.batch.rappor``). A
    protocol's files may name the protocols it is built from (PEM's oracles, SFP's sketches, ``multi``'s
    attributes)."""
    base = module.rsplit(".", 1)[-1]
    return any(base == s or base.startswith(s + "_") for s in stems)


def all_switches(*, outside_protocols: bool = True) -> list[Switch]:
    """Every switch; with ``outside_protocols`` only those outside the protocols' own modules (the ones to fix)."""
    owned, classes, _ = registry()
    protocols = set(owned)
    stems = family_stems()
    found = []
    for module, path in modules().items():
        if outside_protocols and is_protocol_module(module, stems):
            continue
        found.extend(switches_in(module, path, protocols, classes))
    return found


if __name__ == "__main__":
    import sys

    found = all_switches(outside_protocols="--all" not in sys.argv)
    for s in found:
        print(s)
    print(len(found))
