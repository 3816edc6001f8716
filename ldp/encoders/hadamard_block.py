"""Blocked Hadamard Response (Acharya, Sun, Zhang, AISTATS 2019, §5, "general privacy"). Client side.

The ``d`` values are dealt into ``B`` blocks, value ``x`` to block ``x mod B`` as row ``⌊x/B⌋ + 1`` of that
block's ``b×b`` Sylvester Hadamard matrix ``H[i, j] = (−1)^popcount(i & j)`` (row 0 unused), ``b`` the smallest
power of 2 above ``m = ⌈d/B⌉``, the most values a block holds. A report is ``j`` in ``[0, K)``, ``K = B·b``
(block ``⌊j/b⌋``, position ``j mod b``). ``C_x``, the ``s = b/2`` outputs of ``x``'s block whose position has
``H[row, pos] = +1``, has ``Pr[j | x] ∝ e^ε`` on ``C_x`` and ``∝ 1`` elsewhere (the paper's law, §3):

    ``Pr[j | x] = γ/K + (1 − γ)/s`` on ``C_x``, ``γ/K`` elsewhere, ``γ = K/(s·e^ε + K − s) = 2B/(2B + e^ε − 1)``,

drawn as the mixture "uniform on ``[0, K)`` with probability ``γ``, else uniform on ``C_x``". ``B = 1`` is
plain Hadamard Response (:mod:`ldp.encoders.hadamard_response`). Blocks trade the ``e^ε``-to-1 odds for
fewer competing outputs: the paper takes ``B ≈ e^ε`` (order-optimal for ε > 1); here ``B`` minimizes the
exact variance of a rare value's count (:func:`best_blocks`), about ``(e^ε − 1)/2``.

Privacy: an output of ``C_x`` outside ``C_u`` (another block's, or a row that differs) has ratio
``ε* = ln(1 + 2B(1 − γ)/γ)`` for the realized ``γ`` (:func:`~ldp.randomness.realized_probability`); the
charge is ``max(ε, ε*)``.

Draw order: one ``bernoulli(γ)``; if true, ``j = randbelow(K)``; else ``pos = randbelow(b)`` (``log2 b``
bits), flipped at the lowest set bit of the row when ``popcount(pos & row)`` is odd (a bijection between
the halves, so ``pos`` is uniform on the row's ``+1`` half), and ``j = (x mod B)·b + pos``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

from ldp.encoders.base import DomainPrepare, Encoder, LabeledDomain, ProtocolParams, check_epsilon, check_int
from ldp.encoders.base_checks import refuse_relation
from ldp.encoders.base_draws import DrawRule
from ldp.encoders.base_fields import ParamInfo, Range
from ldp.encoders.base_mixture import OwnSetMixture
from ldp.encoders.hadamard_response import hr_order
from ldp.randomness import realized_probability
from ldp.reports import Report, ReportBatch

__all__ = ["HRBlockParams", "HRBlockEncoder", "best_blocks", "block_layout", "uniform_share", "rare_variance"]


def block_layout(domain_size: int, blocks: int) -> tuple[int, int]:
    """``(m, b)``: the most values a block holds, ``⌈d/B⌉``, and the block's Hadamard order, the smallest
    power of 2 above it."""
    m = -(-domain_size // blocks)
    return m, hr_order(m)


def uniform_share(epsilon: float, blocks: int) -> float:
    """``γ = 2B/(2B + e^ε − 1)``, the probability of the uniform branch, before rounding (0 past ``ε = 700``,
    where any ``B`` this protocol allows rounds it to 0 anyway)."""
    return 0.0 if epsilon > 700.0 else 2.0 * blocks / (2.0 * blocks + math.expm1(epsilon))


def rare_variance(gamma: float, blocks: int, domain_size: int) -> float:
    """Per-user ``Var[ĉ_x]/n`` of a value nobody holds in a block of ``m = ⌈d/B⌉`` values, the other users spread
    evenly over the other ``d − 1`` values (the planner's population): ``γ/(B(1−γ)²) + (m−1)/((d−1)(1−γ))``
    (:func:`ldp.decoders.hadamard_block.hrb_variance` with ``F = n(m−1)/(d−1)``, ``f = 0``)."""
    m, _ = block_layout(domain_size, blocks)
    return gamma / (blocks * (1.0 - gamma) ** 2) + (m - 1) / ((domain_size - 1) * (1.0 - gamma))


def best_blocks(epsilon: float, domain_size: int) -> int:
    """The ``B`` in ``[1, d]`` of least :func:`rare_variance` (the smallest on a tie). Only the smallest ``B`` of
    each ``m = ⌈d/B⌉`` can win (the variance grows with ``B`` at fixed ``m``): every ``B ≤ 2√d`` and every
    ``⌈d/m⌉``, ``O(√d)`` candidates."""
    d = domain_size
    root = math.isqrt(d) + 1
    candidates = sorted({*range(1, min(d, 2 * root) + 1), *(-(-d // m) for m in range(1, root + 1))})
    best, best_var = 1, math.inf
    for blocks in candidates:
        gamma = uniform_share(epsilon, blocks)
        if not 0.0 < gamma < 1.0:
            continue
        var = rare_variance(gamma, blocks, d)
        if var < best_var * (1 - 1e-12):
            best, best_var = blocks, var
    return best


@dataclass(frozen=True)
class HRBlockParams(OwnSetMixture, LabeledDomain, ProtocolParams):
    """Blocked Hadamard Response at ``epsilon`` over ``domain_size`` values in ``blocks`` blocks (``None``: the
    planner's :func:`best_blocks`), optionally named by ``labels``."""

    epsilon: float
    domain_size: int
    blocks: int | None = None
    labels: tuple[str, ...] | None = None
    protocol: ClassVar[str] = "hr-block"
    value_class: ClassVar[str | None] = "category"
    param_info: ClassVar[Mapping[str, ParamInfo]] = {
        "blocks": ParamInfo("the number of blocks the domain is split into (null: the best for ε)",
                            (Range(min=1, dynamic="at most domain_size"),))}
    draw_rule = DrawRule("`B(γ)`, then `R(K)` if true, `R(b)` if false",
                         lambda s, pr, v: s.R(pr.order) if s.B(pr.gamma) else s.R(pr.block_order))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = ({"epsilon": 4.0, "domain_size": 100},)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        check_int(self.domain_size, "domain_size", 2, 2**32)
        if self.blocks is None:
            object.__setattr__(self, "blocks", best_blocks(self.epsilon, self.domain_size))
        check_int(self.nblocks, "blocks", 1, self.domain_size)
        if self.gamma <= 0.0:
            raise refuse_relation(f"epsilon={self.epsilon} is too large for hr-block with {self.blocks} blocks: the "
                                  "uniform branch rounds to probability 0 at the client's resolution, so reports "
                                  "would not be private", "epsilon_too_large", "epsilon", "domain_size", "blocks")
        if self.gamma >= 1.0:
            raise refuse_relation(f"epsilon={self.epsilon} is too small for hr-block with {self.blocks} blocks: the "
                                  "uniform branch rounds to probability 1, so reports would carry no information",
                                  "epsilon_too_small", "epsilon", "domain_size", "blocks")
        self._check_labels()
        self.check_collectable()

    @classmethod
    def from_labels(cls, epsilon: float, labels: Sequence[str], blocks: int | None = None) -> HRBlockParams:
        return cls(epsilon, len(labels), blocks, tuple(labels))

    @classmethod
    def examples(cls) -> list[HRBlockParams]:
        """One block (plain HR's law, K = 4), five blocks of one value (K = 10, b = 2) and seven labelled values in
        three blocks of 3, 2 and 2 (a partial block; K = 12, b = 4): small enough to audit every output
        (conformance suite)."""
        return [cls(1.0, 3), cls(4.0, 5), cls(3.0, 7, 3, tuple("abcdefg"))]

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> HRBlockParams:
        """The planner's choice: :func:`best_blocks` blocks."""
        return cls(epsilon, domain_size)

    @classmethod
    def frequency_oracle_for(cls, domain_size: int) -> bool:
        return True

    @property
    def nblocks(self) -> int:
        """``B`` (``blocks``, resolved)."""
        return self.blocks  # type: ignore[return-value]  # resolved in __post_init__

    @property
    def block_order(self) -> int:
        """``b``: the Hadamard order of a block, the smallest power of 2 above ``⌈d/B⌉``."""
        return block_layout(self.domain_size, self.nblocks)[1]

    @property
    def order(self) -> int:
        """``K = B·b``: reports are ``j`` in ``[0, K)``."""
        return self.nblocks * self.block_order

    @cached_property
    def gamma(self) -> float:
        """``γ``: realized probability of the uniform branch, ``2B/(2B + e^ε − 1)``."""
        return realized_probability(uniform_share(self.epsilon, self.nblocks))

    @property
    def own_set_size(self) -> int:
        """``s = b/2``: the outputs of a value's own set (its row's ``+1`` half in its block); ``K/s = 2B``, so the
        mixture's ratio is ``1 + 2B(1 − γ)/γ``."""
        return self.block_order // 2


class HRBlockEncoder(DomainPrepare, Encoder):
    """Client encoder for :class:`HRBlockParams`; values are labels or indices in ``[0, d)``."""

    params: HRBlockParams
    params_type: ClassVar[type[HRBlockParams]] = HRBlockParams

    def randomize(self, prepared: int) -> Report:
        rng, pr = self._rng, self.params
        if rng.bernoulli(pr.gamma):
            return self._report({"j": rng.randbelow(pr.order)})
        blocks, b = pr.nblocks, pr.block_order
        row = prepared // blocks + 1
        pos = rng.randbelow(b)
        if (pos & row).bit_count() & 1:
            pos ^= row & -row
        return self._report({"j": (prepared % blocks) * b + pos})

    def encode_batch(self, values: Any, rng: Any = None) -> ReportBatch:
        """Vectorized reports of value indices (:func:`ldp.batch.hadamard_block.hrb_encode_batch`)."""
        from ldp.batch.hadamard_block import hrb_encode_batch  # numpy, loaded only here

        return self._batch({"j": hrb_encode_batch(self.params, values, rng)})
