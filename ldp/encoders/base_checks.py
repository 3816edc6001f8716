"""The checks of what a protocol is given, shared by every protocol's parameters and encoder: each refusal is a
:class:`~ldp.errors.Refusal` with a stable code and fields (docs/conformance.md, "Refusals"), its message the
Python text it always had. Re-exported by :mod:`ldp.encoders.base`; standard library only."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ldp.errors import Refusal, RefusalTypeError, RefusalValueError, kind_of

__all__ = ["check_epsilon", "check_finite", "check_int", "check_bool", "check_choice", "check_string_value", "plain",
           "refuse_type", "refuse_range", "refuse_relation", "renamed", "renaming", "BASE_RULES"]

BASE_RULES: Mapping[str, str] = {
    "distinct": "the entries (or characters) of the parameter must be distinct",
    "below_resolution": "a probability in (0, 2^-64): the client would draw it with probability 0",
    "epsilon_too_large": "ε is so large that a probability derived from it rounds to 0 or 1 at the client's 2^-64 "
                         "resolution (reports would not be private)",
    "epsilon_too_small": "ε is so small that the probabilities derived from it are equal at the client's 2^-64 "
                         "resolution (reports would carry no information)",
    "line_bytes": "(a limit) the bytes of the longest upload line of one report (servers refuse longer lines)",
    "aggregate_cells": "(a limit) the counters of the server aggregate of one metric",
}
"""The ``rule`` of ``param_relation`` refusals and the ``limit`` of ``param_limit`` refusals any protocol may raise
(each protocol declares its own beside them: :attr:`~ldp.encoders.base.ProtocolParams.refusal_rules`)."""


def plain(value: Any) -> Any:
    """``value`` as JSON would carry it, for a refusal's fields: tuples as lists, mappings as dicts."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def refuse_type(message: str, value: Any, expected: str, param: str | None = None,
                **fields: Any) -> RefusalTypeError:
    """The ``TypeError`` refusing ``value`` (``param_type`` of ``param``, or ``value_type`` of a value when
    ``param`` is ``None``), ``expected`` being one of docs/conformance.md's words (``"int"``, ``"float"``, …)."""
    if param is None:
        return RefusalTypeError(message, "value_type", expected=expected, got=kind_of(value), **fields)
    return RefusalTypeError(message, "param_type", param=param, expected=expected, got=kind_of(value), **fields)


def refuse_range(message: str, value: Any, param: str | None = None, **bounds: Any) -> RefusalValueError:
    """The ``ValueError`` refusing the number ``value`` (``param_range`` of ``param``, or ``value_range`` of a value
    when ``param`` is ``None``): ``bounds`` are ``min``, ``max``, ``min_exclusive``, ``max_exclusive``, ``finite``."""
    if param is None:
        return RefusalValueError(message, "value_range", got=value, **bounds)
    return RefusalValueError(message, "param_range", param=param, got=value, **bounds)


def refuse_relation(message: str, rule: str, *params: str) -> RefusalValueError:
    """The ``ValueError`` of parameters ``params`` that break ``rule`` together (``param_relation``; the rule one
    of :data:`BASE_RULES` or of the protocol's :attr:`~ldp.encoders.base.ProtocolParams.refusal_rules`)."""
    return RefusalValueError(message, "param_relation", params=list(params), rule=rule)


def renamed(exc: Refusal, names: Mapping[str, str], message: str | None = None, **fields: Any) -> Refusal:
    """``exc`` restated under ``message`` (by default its own) with the parameter names of its fields mapped by
    ``names`` and ``fields`` added: a composite protocol's refusal of one of its parts (SFP's word sketch's ``width``
    is its ``word_width``)."""
    out = dict(exc.fields)
    if "param" in out:
        out["param"] = names.get(out["param"], out["param"])
    if "params" in out:
        out["params"] = [names.get(n, n) for n in out["params"]]
    return type(exc)(str(exc) if message is None else message, exc.code, **{**out, **fields})


@contextmanager
def renaming(names: Mapping[str, str], prefix: str = "", **fields: Any) -> Iterator[None]:
    """A refusal raised inside, :func:`renamed` (``names``, ``fields``) and its message after ``prefix``: the checks
    of a part a protocol is built from, in the protocol's own terms."""
    try:
        yield
    except Refusal as exc:
        raise renamed(exc, names, prefix + str(exc), **fields) from None


def check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """``float(epsilon)`` if it is a finite real > 0, else ``TypeError``/``ValueError`` naming the rule
    (``param_type`` with ``expected: "float"``, ``param_range`` with ``min: 0, min_exclusive, finite``)."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
        raise RefusalTypeError(f"{name} must be a real number, got {type(epsilon).__name__}", "param_type",
                               param=name, expected="float", got=kind_of(epsilon))
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise RefusalValueError(f"{name} must be finite and > 0, got {epsilon}", "param_range", param=name,
                                got=epsilon, min=0, min_exclusive=True, finite=True)
    return float(epsilon)


def check_finite(value: Any, name: str) -> float:
    """``float(value)`` if it is a finite real number, else ``TypeError`` (``param_type``, ``expected: "float"``) or
    ``ValueError`` (``param_range`` with ``finite: true``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise refuse_type(f"{name} must be a real number, got {type(value).__name__}", value, "float", name)
    if not math.isfinite(value):
        raise refuse_range(f"{name} must be finite, got {value}", value, name, finite=True)
    return float(value)


def check_int(value: int, name: str, low: int, high: int | None = None, *, param: str | None = None,
              **fields: Any) -> int:
    """``value`` if it is an int in ``[low, high]``, else a ``TypeError``/``ValueError`` naming it (``param_type``
    with ``expected: "int"``, ``param_range`` with ``min`` and ``max``). ``param``: the parameter's name in the
    refusal's fields (by default the first word of ``name``: ``"width (m)"`` is ``width``); ``fields``: more
    fields (``index`` of a list's entry)."""
    param = param or name.split(" ", 1)[0]
    if isinstance(value, bool) or not isinstance(value, int):
        raise RefusalTypeError(f"{name} must be an int, got {type(value).__name__}", "param_type", param=param,
                               expected="int", got=kind_of(value), **fields)
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        bounds = {"min": low} if high is None else {"min": low, "max": high}
        raise RefusalValueError(f"{name} must be {bound}, got {value}", "param_range", param=param, got=value,
                                **bounds, **fields)
    return value


def check_bool(value: Any, name: str) -> bool:
    """``value`` if it is a bool, else ``TypeError`` (``param_type`` with ``expected: "bool"``)."""
    if not isinstance(value, bool):
        raise RefusalTypeError(f"{name} must be a bool, got {type(value).__name__}", "param_type", param=name,
                               expected="bool", got=kind_of(value))
    return value


def check_choice(value: Any, name: str, choices: Iterable[str], message: str, **fields: Any) -> str:
    """``value`` if it is one of the strings ``choices``, else ``ValueError`` with ``message`` (``param_choice``:
    ``choices`` and ``got``, the value given, whatever its type; ``fields``: more fields)."""
    options = list(choices)
    if not (isinstance(value, str) and value in options):
        raise RefusalValueError(message, "param_choice", param=name, choices=options, got=plain(value), **fields)
    return value


def check_string_value(value: Any, protocol: str) -> Any:
    """``value`` if it is str or bytes (what the string protocols hash), else a ``TypeError`` (``value_type`` with
    ``expected: "string_or_bytes"``)."""
    if not isinstance(value, (str, bytes, bytearray)):
        raise RefusalTypeError(f"{protocol} values must be str or bytes, got {type(value).__name__}", "value_type",
                               expected="string_or_bytes", got=kind_of(value))
    return value
