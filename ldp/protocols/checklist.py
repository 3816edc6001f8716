"""What a protocol has of its optional parts, and the file each missing one goes in: the list
:func:`ldp.protocols.checks.check_protocol` ends with (printed, and part of its ``AssertionError``).

The conformance checks say whether what a protocol has is right; this says what it has. Each :class:`Item` is read
from the protocol's hooks (docs/architecture.md, "The registry and the hooks") and, for a protocol built into a
checkout of the repository, from the files the repository keeps per protocol (its vector file, documentation page,
tests). A part that does not apply is ``None`` (a protocol from another distribution has no file in this repository;
an open-domain protocol has no IBU channel).
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ldp.encoders.base import ProtocolParams, plans_for_epsilon
from ldp.protocols.registry import Protocol

__all__ = ["Item", "checklist", "format_checklist", "repository_root"]


@dataclass(frozen=True)
class Item:
    """One optional part: ``present`` (``None``: does not apply), what it gives, and where it goes."""

    part: str
    present: bool | None
    gives: str
    where: str

    def __str__(self) -> str:
        mark = {True: "[x]", False: "[ ]", None: "[-]"}[self.present]
        tail = f" -> {self.where}" if self.present is False else ""
        return f"{mark} {self.part}: {self.gives}{tail}"


def repository_root() -> Path | None:
    """The checkout of the repository: the one ``ldp`` runs from, else the working directory when it is one (a
    contributor with the package installed, running from the repository's root); ``None`` otherwise."""
    for root in (Path(__file__).resolve().parents[2], Path.cwd()):
        if (root / "conformance" / "vectors").is_dir() and (root / "ldp" / "protocols").is_dir():
            return root
    return None


def _stem(cls: type) -> str:
    return cls.__module__.rpartition(".")[2]


def _overrides(cls: Any, name: str, base: Any) -> bool:
    return cls is not None and getattr(cls, name) is not getattr(base, name)


def _channel(params_type: type[ProtocolParams]) -> bool | None:
    try:
        examples = params_type.examples()
    except NotImplementedError:
        return False
    if all(p.domain_size is None for p in examples):
        return None  # open domain: no IBU
    return any(p.support_probabilities is not None or p.response_matrix is not None for p in examples)


def _attack(params_type: type) -> bool:
    from ldp.simulation.attack import Attacker, attacker_for

    try:
        example = params_type.examples()[0]  # type: ignore[attr-defined]
    except NotImplementedError:
        return False
    return type(attacker_for(example)).mga is not Attacker.mga


def _documented(root: Path, name: str, stem: str) -> bool:
    pages = root / "docs" / "protocols"
    if (pages / f"{stem.replace('_', '-')}.md").exists():
        return True
    named = re.compile(rf"`{re.escape(name)}`")
    return any(named.search(page.read_text(encoding="utf-8")) for page in pages.glob("*.md"))


def checklist(proto: Protocol, root: Path | None = None) -> list[Item]:
    """The optional parts of ``proto``, in the order a contributor adds them; ``root``: the repository to look in
    for its files (default :func:`repository_root`, used only for a built-in protocol)."""
    from ldp.decoders.base import Aggregate

    params, agg, stem, name = proto.params_type, proto.aggregate_type, _stem(proto.encoder_type), proto.name
    module = f"ldp/encoders/{stem}.py" if proto.origin == "ldp" else proto.params_type.__module__
    decoder = f"ldp/decoders/{stem}.py" if proto.origin == "ldp" else getattr(agg, "__module__", "its aggregate")
    items = [
        Item("aggregate", agg is not None, "the server fold, ldp decode, the conformance checks",
             f"{decoder}: an Aggregate subclass with params_type = {params.__name__}"),
        Item("planner (for_epsilon)", plans_for_epsilon(params), "ldp plan / recommend choose its parameters",
             f"{module}: {params.__name__}.for_epsilon(epsilon, domain_size)"),
        Item("planner variance (count_variance)", _overrides(agg, "count_variance", Aggregate),
             "the planner's predicted error", f"{decoder}: count_variance(params, n, count, d, f2)"),
        Item("joint estimation (report_loglik)", agg is not None and params in agg.report_loglik_types,
             "ldp associate (association of two attributes)",
             f"{decoder}: report_loglik_types and report_loglik"),
        Item("IBU channel (support_probabilities / response_matrix)", _channel(params),
             "consistency post-processing by IBU", f"{module}: {params.__name__}.support_probabilities"),
        Item("attack model (maximal gain attack)", _attack(params) if proto.origin == "ldp" else None,
             "ldp simulate --attack mga (attack models live in ldp/simulation)",
             f"ldp/simulation/{stem}_attack.py: an Attacker with params_type = {params.__name__}"),
        Item("draw rule (draw_rule)", params.draw_rule is not None,
             "docs/conformance.md's k sequence and the draw-order test",
             f"{module}: draw_rule = DrawRule(text, replay) (ldp.encoders.base_draws)"),
    ]
    where = root if root is not None else repository_root()
    if proto.origin != "ldp" or where is None:
        for part in ("batch kernel", "vector file", "documentation page", "tests file"):
            items.append(Item(part, None, "kept in the ldp repository for its built-in protocols", "-"))
        return items
    kernel = importlib.util.find_spec(f"ldp.batch.{stem}") is not None
    items += [
        Item("batch kernel", kernel, "fast encode_batch for simulations and checks",
             f"ldp/batch/{stem}.py (imported by {proto.encoder_type.__name__}.encode_batch)"),
        Item("vector file", (where / "conformance" / "vectors" / f"{name}.json").exists(),
             "the other clients' byte-for-byte conformance",
             f"conformance/vectors/{name}.json: python -m ldp.conformance generate conformance/vectors"),
        Item("documentation page", _documented(where, name, stem), "docs/protocols/ (mkdocs.yml's nav)",
             f"docs/protocols/{stem.replace('_', '-')}.md"),
        Item("tests file", (where / "tests" / "protocols" / f"test_{stem}.py").exists(),
             "tests of what is specific to the protocol", f"tests/protocols/test_{stem}.py"),
    ]
    return items


def format_checklist(proto: Protocol, items: list[Item]) -> str:
    """The list as text: one line per part, ``[x]`` present, ``[ ]`` missing (with the file to write), ``[-]``
    not applicable."""
    missing = sum(item.present is False for item in items)
    head = f"{proto.name}: {missing} optional part{'s' if missing != 1 else ''} missing" if missing else \
        f"{proto.name}: every optional part present"
    return "\n".join([head, *(f"  {item}" for item in items)])
