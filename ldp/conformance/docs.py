"""The parts of docs/conformance.md that the built-in protocols' own declarations determine, generated so that
adding a protocol edits no page by hand: the refusal codes and the words of ``expected``
(:mod:`ldp.conformance.refusals`), the rules and limits each protocol's refusals may name (its params class's
``refusal_rules``), the table of k sequences (each params class's ``draw_rule`` text), the table of float fields
(the params dataclass's annotations) and a draw-order section for each protocol the page does not describe in
prose (its rule, and the predictor the documentation test replays, as written in its module).

Each part sits between ``<!-- generated: NAME ... -->`` and ``<!-- end generated: NAME -->`` in the page;
:func:`render_page` rewrites them all. ``python conformance/docs_tables.py`` (:data:`COMMAND`) writes the page;
``tests/docs/test_conformance_doc.py`` checks that the page is what :func:`render_page` makes of it.
Standard library only.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import textwrap
import typing
from typing import Any

from ldp.conformance.refusals import codes_table, words_table
from ldp.encoders.base_checks import BASE_RULES
from ldp.protocols import builtin_client_protocols

__all__ = ["BLOCKS", "COMMAND", "float_fields", "hand_sections", "render_page"]

COMMAND = "python conformance/docs_tables.py"
"""The command that rewrites the generated parts (and the clients' tables), from the repository root."""

BLOCKS = ("refusal-codes", "refusal-expected", "refusal-rules", "k-sequences", "float-fields", "draw-order")
"""The generated parts, in page order."""

_SECTION = re.compile(r"^### `([a-z0-9-]+)`$", re.M)


def _begin(name: str) -> str:
    return f"<!-- generated: {name} ({COMMAND} writes this from the protocols' own modules; do not edit) -->"


def _end(name: str) -> str:
    return f"<!-- end generated: {name} -->"


def _rule(name: str, params_type: Any) -> Any:
    rule = params_type.draw_rule
    if rule is None:
        raise ValueError(
            f"{name}: {params_type.__name__} ({params_type.__module__}) declares no draw_rule: the k sequence of "
            "one report and its predictor, DrawRule(text, replay) of ldp.encoders.base_draws (docs/architecture.md, "
            "How to add a protocol)")
    return rule


def _refusal_rules() -> list[str]:
    """Each ``rule`` (``param_relation``) and ``limit`` (``param_limit``) id with its meaning and the protocols that
    declare it (:meth:`~ldp.encoders.base.ProtocolParams.declared_rules`; those of every protocol first)."""
    rows = ["| `rule` or `limit` | meaning | protocols |", "|---|---|---|"]
    rows += [f"| `{rule}` | {text} | every protocol |" for rule, text in BASE_RULES.items()]
    declared: dict[tuple[str, str], list[str]] = {}
    for name, (params_type, _) in sorted(builtin_client_protocols().items()):
        for rule, text in params_type.declared_rules().items():
            if rule not in BASE_RULES:
                declared.setdefault((rule, text), []).append(name)
    for (rule, text), names in sorted(declared.items()):
        rows.append(f"| `{rule}` | {text} | {', '.join(f'`{n}`' for n in names)} |")
    return rows


def _k_sequences() -> list[str]:
    rows = ["| protocol | k sequence of one report |", "|---|---|"]
    for name, (params_type, _) in sorted(builtin_client_protocols().items()):
        rows.append(f"| `{name}` | {_rule(name, params_type).text} |")
    return rows


def float_fields(params_type: Any) -> str:
    """The float fields of a params dataclass, in field order, as the page's table writes them: `name`, or
    `name` (a list of floats) for a tuple of floats."""
    hints = typing.get_type_hints(params_type)
    out = []
    for f in dataclasses.fields(params_type):
        hint = str(hints[f.name])
        if "float" in hint:
            out.append(f"`{f.name}` (a list of floats)" if "tuple" in hint else f"`{f.name}`")
    return ", ".join(out) or "none"


def _float_fields() -> list[str]:
    groups: dict[str, list[str]] = {}
    for name, (params_type, _) in sorted(builtin_client_protocols().items()):
        groups.setdefault(float_fields(params_type), []).append(name)
    rows = ["| protocol | float fields |", "|---|---|"]
    rows += [f"| {', '.join(f'`{n}`' for n in names)} | {fields} |" for fields, names in groups.items()]
    return rows


def _outside_blocks(text: str) -> str:
    for name in BLOCKS:
        begin, end = _begin(name), _end(name)
        if begin in text and end in text:
            head, rest = text.split(begin, 1)
            text = head + rest.split(end, 1)[1]
    return text


def hand_sections(text: str) -> list[str]:
    """The protocols with a draw-order section written by hand (a ``### `name``` heading outside the generated
    parts), in page order."""
    return _SECTION.findall(_outside_blocks(text))


def _section(name: str, params_type: Any) -> list[str]:
    rule = _rule(name, params_type)
    path = params_type.__module__.replace(".", "/") + ".py"
    try:
        source = textwrap.dedent(inspect.getsource(rule.replay)).strip("\n")
    except (OSError, TypeError):  # no source to show (a compiled module): the rule's text alone
        source = ""
    lines = [f"### `{name}`", "", f"k sequence: {rule.text}. The probabilities are the properties of "
             f"`{params_type.__name__}` (`{path}`); the rule, as the documentation test replays it on the "
             "primitives above (`draws.B`, `draws.BB`, `draws.R`):"]
    if source:
        lines += ["", "```python", *source.split("\n"), "```"]
    return [*lines, ""]


def _draw_order(text: str) -> list[str]:
    hand = set(hand_sections(text))
    out: list[str] = []
    for name, (params_type, _) in sorted(builtin_client_protocols().items()):
        if name not in hand:
            out += _section(name, params_type)
    return out


def render_page(text: str) -> str:
    """``text`` (docs/conformance.md) with every generated part rewritten from the protocols' declarations;
    ``ValueError`` if a part's markers are missing, naming the protocol and the hook if one declares no draw rule."""
    makers = {"refusal-codes": codes_table, "refusal-expected": words_table, "refusal-rules": _refusal_rules,
              "k-sequences": _k_sequences, "float-fields": _float_fields, "draw-order": lambda: _draw_order(text)}
    for name in BLOCKS:
        begin, end = _begin(name), _end(name)
        if text.count(begin) != 1 or text.count(end) != 1:
            raise ValueError(f"docs/conformance.md needs one line {begin!r} and one {end!r}")
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1]
        text = "\n".join([head + begin, *makers[name](), end]) + tail
    return text
