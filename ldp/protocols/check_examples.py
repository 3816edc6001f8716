"""What the conformance checks (:mod:`ldp.protocols.checks`) run on, read from the protocol's hooks: its example
params, their audit inputs, simulated users drawn from those, and the exact audit of one report (memoized: the
privacy and batch checks share it); with the suite's fixed seed and error rate. A hook that is missing or answers
wrongly raises ``AssertionError`` naming it, so that the check calling it fails with a clear message.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ldp.privacy.audit import AuditResult, audit
from ldp.protocols.registry import Protocol

__all__ = ["ALPHA", "SEED", "draw_users", "examples_of", "exact_audit", "inputs_of"]

ALPHA = 1e-6
"""Probability that a correct protocol fails one family of statistical tests (an example on one simulation path; the
goodness of fit of a check), Bonferroni within it. The seeds are fixed: a run passes or fails, always the same."""
SEED = 20_240_229


def examples_of(proto: Protocol, audit_sized: bool = False) -> list[Any]:
    """``examples()`` of the protocol's params (``audit_examples()`` if ``audit_sized``): a non-empty list of
    its params type."""
    kind = "audit_examples" if audit_sized else "examples"
    try:
        found = getattr(proto.params_type, kind)()
    except NotImplementedError as exc:
        raise AssertionError(f"{proto.name}: {exc}") from None
    assert found and all(isinstance(p, proto.params_type) for p in found), \
        f"{proto.name}: {kind}() must return a non-empty list of {proto.params_type.__name__}"
    return list(found)


def inputs_of(params: Any) -> list[Any]:
    """``params.audit_inputs()``, at least two (``AssertionError`` naming the hook otherwise)."""
    try:
        inputs = list(params.audit_inputs())
    except NotImplementedError as exc:
        raise AssertionError(f"{params.protocol}: {exc}") from None
    assert len(inputs) >= 2, f"{params!r}: audit_inputs() must give at least two values"
    return inputs


def draw_users(params: Any, n: int, seed: int) -> list[Any]:
    """``n`` users' values drawn from ``audit_inputs`` (weights 1, 2, 3, …: not uniform)."""
    values = inputs_of(params)
    w = np.arange(1, len(values) + 1, dtype=float)
    return [values[i] for i in np.random.default_rng(seed).choice(len(values), n, p=w / w.sum())]


@lru_cache(maxsize=64)
def exact_audit(proto: Protocol, params: Any) -> tuple[list[Any], AuditResult]:
    """The exact audit of one report over ``audit_inputs`` (by index: inputs need not be hashable)."""
    inputs = inputs_of(params)

    def run(i: int, src: Any) -> str:
        return proto.encoder_type.for_audit(params, src).encode(inputs[i]).to_json()

    return inputs, audit(range(len(inputs)), run)
