"""The layout of Projective Geometry Response and its hybrid (:mod:`ldp.encoders.projective_geometry`): ``t`` from
``q``, the blocks and ``d``; the law's probabilities and the variance of one user's term; the default layout, the one
of least variance for a rare value among the feasible ones. Client side: standard library only.

For value ``x``'s estimate ``ĉ_x = α·A_x + β·T_x + const`` (``A_x`` the reports in its own set, ``T_x`` in its
block; :mod:`ldp.decoders.projective_geometry`), a user's report is in ``A_x`` with probability ``γs/K + (1−γ)``
(a user of ``x``), ``γs/K + (1−γ)c/s`` (another value of the block: two hyperplanes share ``c`` of their ``s``
points) or ``γs/K`` (another block), and in ``T_x`` with ``γ/h + (1−γ)`` (a user of the block) or ``γ/h``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ldp.encoders.base import MAX_AGGREGATE_CELLS
from ldp.encoders.projective_space import MAX_FIELD, points, primes_up_to

__all__ = ["MAX_DECODE_WORK", "dimension", "decode_work", "own_share", "report_classes", "coefficients",
           "term_variance", "class_variances", "rare_variance", "field_candidates", "best_pgr_field",
           "best_hpg_layout", "pgr_layouts", "hpg_layouts", "least_excess"]

MAX_DECODE_WORK = 1 << 32
"""The most steps (``K·q·t``, the decoder's dynamic programme) a decode may take: about ten seconds on one core."""


def dimension(q: int, blocks: int, domain_size: int) -> int:
    """``t``: the smallest ``t ≥ 2`` with ``blocks·P_t ≥ d``."""
    t = 2
    while blocks * points(q, t) < domain_size:
        t += 1
    return t


def decode_work(q: int, t: int, blocks: int) -> int:
    """``K·q·t`` (``K = blocks·P_t``): the steps of the decoder's dynamic programme, up to a constant."""
    return blocks * points(q, t) * q * t


def own_share(epsilon: float, order: int, set_size: int) -> float:
    """``γ = K/(K + (e^ε − 1)·s)``, the probability of the uniform branch, before rounding (0 past ``ε = 700``)."""
    return 0.0 if epsilon > 700.0 else order / (order + math.expm1(epsilon) * set_size)


def report_classes(g: float, s: int, c: int, k: int, blocks: int) -> tuple[tuple[float, float], ...]:
    """``(Pr[A], Pr[T])`` of one user's report for value ``x``'s estimate, for a user of ``x``, of another value in
    ``x``'s block, and of a value in another block: ``A`` the report in ``x``'s own set, ``T`` in ``x``'s block
    (``γ`` the uniform branch, ``s`` a hyperplane's points, ``c`` two hyperplanes' common points, ``K`` outputs,
    ``h`` blocks)."""
    uniform_a, uniform_t = g * s / k, g / blocks
    return ((uniform_a + 1.0 - g, uniform_t + 1.0 - g), (uniform_a + (1.0 - g) * c / s, uniform_t + 1.0 - g),
            (uniform_a, uniform_t))


def coefficients(g: float, s: int, c: int) -> tuple[float, float]:
    """``(α, β)`` of the estimator ``ĉ_x = α·A_x + β·T_x + const`` (sums over the reports): ``α = 1/((1−γ)(1 −
    c/s))``, the inverse of ``Pr[A]``'s gap between a user of ``x`` and one of another value of its block, and
    ``β = −α·c/s``, which removes the block's users (HPG; a constant for PGR, whose one block holds every user)."""
    a = 1.0 / ((1.0 - g) * (1.0 - c / s))
    return a, -a * c / s


def term_variance(a: float, b: float, pa: float, pt: float) -> float:
    """``Var[α·A + β·T]`` of one user, ``A ⊆ T``: ``α²Pr[A](1−Pr[A]) + β²Pr[T](1−Pr[T]) + 2αβ·Pr[A](1−Pr[T])``."""
    return a * a * pa * (1.0 - pa) + b * b * pt * (1.0 - pt) + 2.0 * a * b * pa * (1.0 - pt)


def class_variances(g: float, s: int, c: int, k: int, blocks: int) -> tuple[float, float, float]:
    """:func:`term_variance` of a user of ``x``, of another value of its block, and of another block."""
    a, b = coefficients(g, s, c)
    return tuple(term_variance(a, b, pa, pt) for pa, pt in report_classes(g, s, c, k, blocks))  # type: ignore[return-value]


def rare_variance(epsilon: float, q: int, t: int, blocks: int, domain_size: int) -> float:
    """Per-user ``Var[ĉ_x]/n`` of a value nobody holds in a full block, the other users spread evenly over the
    other ``d − 1`` values (the planner's population), at the unrounded ``γ``
    (:func:`ldp.decoders.projective_geometry.pg_variance`)."""
    b = points(q, t)
    s, c, k = points(q, t - 1), points(q, t - 2), blocks * b
    g = own_share(epsilon, k, s)
    if not 0.0 < g < 1.0:
        return math.inf
    _, same, other = class_variances(g, s, c, k, blocks)
    share = (min(b, domain_size) - 1) / (domain_size - 1)
    return share * same + (1 - share) * other


def field_candidates(epsilon: float) -> list[int]:
    """The field orders a default layout is chosen among: the primes ``q ≤ 2(e^ε − 1) + 6`` (the best is near
    ``e^ε + 1``), at most :data:`~ldp.encoders.projective_space.MAX_FIELD` (all primes up to it from ``ε ≈ 10.4``)."""
    bound = 2.0 * math.expm1(min(epsilon, 700.0)) + 6.0
    return _primes_to(MAX_FIELD if bound >= MAX_FIELD else math.floor(bound))


@lru_cache(maxsize=64)
def _primes_to(limit: int) -> list[int]:
    return primes_up_to(limit)


def _feasible(q: int, t: int, blocks: int) -> bool:
    return blocks * points(q, t) <= MAX_AGGREGATE_CELLS and decode_work(q, t, blocks) <= MAX_DECODE_WORK


def least_excess(domain_size: int, layouts: Any) -> tuple[str, int, int]:
    """``(limit, got, max)`` of a ``param_limit`` refusal when none of ``layouts`` (``(q, blocks)`` pairs) is
    feasible: the fewest outputs of any, against :data:`~ldp.encoders.base.MAX_AGGREGATE_CELLS`, when every one
    has too many; else the least decode work among those within it, against :data:`MAX_DECODE_WORK`."""
    sizes = [(q, blocks, dimension(q, blocks, domain_size)) for q, blocks in layouts]
    within = [decode_work(q, t, h) for q, h, t in sizes if h * points(q, t) <= MAX_AGGREGATE_CELLS]
    if not within:
        return "aggregate_cells", min(h * points(q, t) for q, h, t in sizes), MAX_AGGREGATE_CELLS
    return "decode_work", min(within), MAX_DECODE_WORK


def _best(epsilon: float, domain_size: int, layouts: Any) -> tuple[int, int] | None:
    """The feasible layout of least :func:`rare_variance`; the first feasible one when none has a finite variance
    (ε so large or so small that ``γ`` is 0 or 1 for every one: its params then refuse ε for what it is);
    ``None`` when none is feasible."""
    best, best_var = None, math.inf
    for q, blocks in layouts:
        t = dimension(q, blocks, domain_size)
        if not _feasible(q, t, blocks):
            continue
        var = rare_variance(epsilon, q, t, blocks, domain_size)
        if best is None or var < best_var * (1 - 1e-12):
            best, best_var = (q, blocks), var
    return best


@lru_cache(maxsize=256)
def best_pgr_field(epsilon: float, domain_size: int) -> int | None:
    """The ``q`` of :func:`field_candidates` of least :func:`rare_variance` (the smallest on a near tie) among the
    feasible ones (the first feasible one when no variance is finite); ``None`` when none is feasible."""
    best = _best(epsilon, domain_size, pgr_layouts(epsilon))
    return None if best is None else best[0]


def pgr_layouts(epsilon: float) -> list[tuple[int, int]]:
    """The ``(q, 1)`` :func:`best_pgr_field` chooses among."""
    return [(q, 1) for q in field_candidates(epsilon)]


def hpg_layouts(epsilon: float, domain_size: int, q: int | None = None, blocks: int | None = None) -> list[
        tuple[int, int]]:
    """The ``(q, h)`` :func:`best_hpg_layout` chooses among (``h ≥ 2``)."""
    qs = [q] if q is not None else field_candidates(epsilon)
    return [(qq, h) for qq, h in _hpg_layouts(domain_size, qs, blocks) if h >= 2]


def _hpg_layouts(domain_size: int, qs: Sequence[int], blocks: int | None) -> Any:
    for q in qs:
        if blocks is not None:
            yield q, blocks
            continue
        t = 2
        while (b := points(q, t)) < domain_size and b <= MAX_AGGREGATE_CELLS:
            yield q, -(-domain_size // b)
            t += 1


@lru_cache(maxsize=256)
def best_hpg_layout(epsilon: float, domain_size: int, q: int | None = None,
                    blocks: int | None = None) -> tuple[int, int] | None:
    """``(q, h)`` of least :func:`rare_variance` (the first on a near tie, in increasing ``q`` then ``t``) among
    the feasible ones with ``h ≥ 2``: for each candidate ``q`` (or the given one) and ``t ≥ 2``, ``h = ⌈d/P_t⌉``
    (or the given ``blocks``); the first feasible one when no variance is finite; ``None`` when none is feasible."""
    return _best(epsilon, domain_size, hpg_layouts(epsilon, domain_size, q, blocks))
