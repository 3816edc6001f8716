"""Projective Geometry Response and its hybrid (Feldman, Nelson, Nguyen, Talwar, "Private frequency estimation via
projective geometry", ICML 2022, §3 and §4). Client side.

**PGR** (``pgr``). The ``d`` values are the first ``d`` points of ``PG(t−1, q)``
(:mod:`~ldp.encoders.projective_space`), ``q`` prime and ``t ≥ 2`` the smallest with
``K = P_t = (q^t − 1)/(q − 1) ≥ d``. A report is a point ``j`` in ``[0, K)``; the own set of value ``v`` is its
hyperplane ``S_v`` (``s = P_{t−1}`` points), and

    ``Pr[j | v] = e^ε·p`` on ``S_v``, ``p`` elsewhere, ``p = 1/(K + (e^ε − 1)·s)``,

drawn as the mixture "uniform on ``[0, K)`` with probability ``γ = K·p = K/(K + (e^ε − 1)s)``, else uniform on
``S_v``". Two hyperplanes meet in ``c = P_{t−2}`` points, so every other value's users land in ``S_v`` with one
probability: the server's count of ``S_v`` for every ``v`` at once (a dynamic programme over the space, O(K·q·t))
debiases to an unbiased estimate whose variance is within about 2 % of the optimum in ``⌈log₂ K⌉`` bits when
``q ≈ e^ε + 1``.

**HPG** (``hpg``). The values are dealt into ``h`` blocks of ``b = P_t`` points (value ``x`` to block ``⌊x/b⌋``
as point ``x mod b``), ``t`` the smallest with ``h·b ≥ d``; a report is ``j = block·b + point`` in ``[0, K)``,
``K = h·b``, and the own set of ``x`` is its hyperplane in its own block. The law is PGR's with ``K = h·b``. A
smaller field with more blocks keeps ``K`` near ``d`` where PGR's would inflate (``ε = 6``, ``d = 1024``:
PGR's ``K = 167,691``).

Parameters: ``q`` (and ``blocks``) left out are the ones of least variance for a rare value
(:func:`~ldp.encoders.projective_layout.rare_variance`) among the primes ``q ≤ 2(e^ε − 1) + 6``
(:func:`~ldp.encoders.projective_layout.field_candidates`) and, for HPG, every
``t ≥ 2`` with ``h = ⌈d/P_t⌉ ≥ 2`` blocks; parameters whose ``K`` exceeds the aggregate limit or whose decode
would take more than :data:`~ldp.encoders.projective_layout.MAX_DECODE_WORK` steps (``K·q·t``) are refused
(``param_limit``).

Privacy: an output of ``S_v`` outside ``S_u`` has ratio ``ε* = ln(1 + K(1 − γ)/(γ·s))`` for the realized ``γ``
(:func:`~ldp.randomness.realized_probability`), exactly; the charge is ``max(ε, ε*)``.

Draw order: one ``bernoulli(γ)``; if true, ``j = randbelow(K)``; else ``r = randbelow(s)`` and ``j`` is the
block's offset plus the index of the ``r``-th point of the value's hyperplane
(:func:`~ldp.encoders.projective_space.hyperplane_point`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

from ldp.encoders.base import (
    DomainPrepare,
    Encoder,
    LabeledDomain,
    ProtocolParams,
    check_epsilon,
    check_int,
)
from ldp.encoders.base_checks import refuse_relation
from ldp.encoders.base_draws import DrawRule
from ldp.encoders.base_fields import ParamInfo, Range
from ldp.encoders.base_mixture import OwnSetMixture
from ldp.encoders.base_vdaf import Prio3Fit
from ldp.encoders.projective_layout import (
    MAX_DECODE_WORK,
    best_hpg_layout,
    best_pgr_field,
    decode_work,
    dimension,
    hpg_layouts,
    least_excess,
    own_share,
    pgr_layouts,
)
from ldp.encoders.projective_space import MAX_FIELD, hyperplane_point, is_prime, point_index, point_vector, points
from ldp.errors import RefusalValueError
from ldp.randomness import realized_probability
from ldp.reports import Report, ReportBatch

__all__ = ["PGRParams", "PGREncoder", "HPGParams", "HPGEncoder", "own_point"]

@dataclass(frozen=True)
class _ProjectiveParams(OwnSetMixture, LabeledDomain, ProtocolParams):
    """What PGR and HPG share: the layout (``q``, ``t``, blocks), the law and its privacy."""

    epsilon: float
    domain_size: int
    q: int | None
    refusal_rules: ClassVar[Mapping[str, str]] = {
        "prime_field": "q must be prime: a hyperplane then has P_{t−1} points and two meet in P_{t−2}, the counts "
                       "the estimator and the privacy claim rest on",
        "decode_work": "(a limit) the decoder's steps K·q·t, at most 2^32",
        "two_blocks": "hpg needs two blocks: at the given q, the domain must not fit in one block"}
    draw_rule = DrawRule("`B(γ)`, then `R(K)` if true, `R(s)` if false",
                         lambda s, pr, v: s.R(pr.order) if s.B(pr.gamma) else s.R(pr.set_size))

    @property
    def nblocks(self) -> int:
        """``h``: the blocks (1 for PGR)."""
        return 1

    def _check_layout(self) -> None:
        """``q`` prime in ``[2, MAX_FIELD]``, the layout within the limits, ``γ`` strictly inside (0, 1)."""
        check_int(self.field, "q", 2, MAX_FIELD)
        if not is_prime(self.field):
            raise refuse_relation(f"q={self.q} is not prime: {self.protocol} needs the field F_q", "prime_field", "q")
        work = decode_work(self.field, self.dimension, self.nblocks)
        if work > MAX_DECODE_WORK:
            raise RefusalValueError(
                f"{self.protocol} with q={self.field}, t={self.dimension} and {self.nblocks} block(s) "
                f"(K={self.order:,}) would take {work:,} steps to decode, over the limit of {MAX_DECODE_WORK:,}: "
                "choose another q"
                + (" or hpg" if self.nblocks == 1 else ""), "param_limit", limit="decode_work", got=work,
                max=MAX_DECODE_WORK)
        if self.gamma <= 0.0:
            raise refuse_relation(f"epsilon={self.epsilon} is too large for {self.protocol} with q={self.field}: the "
                                  "uniform branch rounds to probability 0 at the client's resolution, so reports "
                                  "would not be private", "epsilon_too_large", "epsilon", "domain_size", "q")
        if self.gamma >= 1.0:
            raise refuse_relation(f"epsilon={self.epsilon} is too small for {self.protocol} with q={self.field}: the "
                                  "uniform branch rounds to probability 1, so reports would carry no information",
                                  "epsilon_too_small", "epsilon", "domain_size", "q")

    def _no_layout(self, layouts: list[tuple[int, int]]) -> RefusalValueError:
        """``param_limit`` when none of the candidate ``layouts`` fits: the fewest outputs, or the least decode
        work, of any (:func:`~ldp.encoders.projective_layout.least_excess`)."""
        if not layouts:  # hpg's q given, and every t at it holds d in one block
            return refuse_relation(f"hpg over F_{self.q} holds domain_size={self.domain_size} in one block: give "
                                   "blocks, or use pgr", "two_blocks", "domain_size", "q")
        limit, got, top = least_excess(self.domain_size, layouts)
        what = "outputs" if limit == "aggregate_cells" else "decode steps"
        return RefusalValueError(
            f"no {self.protocol} layout at epsilon={self.epsilon} over domain_size={self.domain_size:,} values stays "
            f"within the limit of {top:,} {what} (the least: {got:,})", "param_limit", limit=limit, got=got, max=top)

    @classmethod
    def frequency_oracle_for(cls, domain_size: int) -> bool:
        return True

    @property
    def field(self) -> int:
        """``q`` (resolved)."""
        return self.q  # type: ignore[return-value]  # resolved in __post_init__

    @cached_property
    def dimension(self) -> int:
        """``t``: points are lines of ``F_q^t``."""
        return dimension(self.field, self.nblocks, self.domain_size)

    @cached_property
    def block_points(self) -> int:
        """``b = P_t``: the points of one block (all of them for PGR)."""
        return points(self.field, self.dimension)

    @property
    def order(self) -> int:
        """``K = h·b``: reports are ``j`` in ``[0, K)``."""
        return self.nblocks * self.block_points

    @cached_property
    def set_size(self) -> int:
        """``s = P_{t−1}``: the points of a hyperplane, a value's own set."""
        return points(self.field, self.dimension - 1)

    @cached_property
    def overlap(self) -> int:
        """``c = P_{t−2}``: the points two hyperplanes share."""
        return points(self.field, self.dimension - 2)

    @cached_property
    def gamma(self) -> float:
        """``γ``: realized probability of the uniform branch, ``K/(K + (e^ε − 1)s)``."""
        return realized_probability(own_share(self.epsilon, self.order, self.set_size))

    @property
    def own_set_size(self) -> int:
        """``s``: a value's own set is its hyperplane (:class:`~ldp.encoders.base_mixture.OwnSetMixture`)."""
        return self.set_size

    def prio3_fit(self) -> Prio3Fit:
        """The reported point, one-hot in Prio3Histogram over the ``K`` outputs (its sum is the aggregate's
        ``counts``): one index, the cheapest measurement a frequency oracle this close to optimal has."""
        return Prio3Fit("Prio3Histogram", "j", "counts", {"length": self.order})


@dataclass(frozen=True)
class PGRParams(_ProjectiveParams):
    """Projective Geometry Response at ``epsilon`` over ``domain_size`` values, over the field of ``q`` elements
    (``None``: :func:`~ldp.encoders.projective_layout.best_pgr_field`), optionally named by ``labels``."""

    epsilon: float
    domain_size: int
    q: int | None = None
    labels: tuple[str, ...] | None = None
    protocol: ClassVar[str] = "pgr"
    value_class: ClassVar[str | None] = "category"
    param_info: ClassVar[Mapping[str, ParamInfo]] = {
        "q": ParamInfo("the field order, a prime (null: the one of least variance for ε and d)",
                       (Range(min=2, max=MAX_FIELD),))}
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = ({"epsilon": 2.0, "domain_size": 1024},)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        check_int(self.domain_size, "domain_size", 2, 2**32)
        if self.q is None:
            q = best_pgr_field(self.epsilon, self.domain_size)
            if q is None:
                raise self._no_layout(pgr_layouts(self.epsilon))
            object.__setattr__(self, "q", q)
        self._check_layout()
        self._check_labels()
        self.check_collectable()

    @classmethod
    def from_labels(cls, epsilon: float, labels: Sequence[str], q: int | None = None) -> PGRParams:
        return cls(epsilon, len(labels), q, tuple(labels))

    @classmethod
    def examples(cls) -> list[PGRParams]:
        """``PG(2, 3)`` (K = 13) and ``PG(2, 5)`` (K = 31), the issue's audit configurations; a line over ``F_2``
        (K = 3, t = 2) and five labelled values at the default field (conformance suite)."""
        return [cls(1.0, 13, 3), cls(2.0, 31, 5), cls(0.5, 3, 2), cls(1.5, 5, None, tuple("abcde"))]

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> PGRParams:
        """The planner's choice: :func:`~ldp.encoders.projective_layout.best_pgr_field`."""
        return cls(epsilon, domain_size)


@dataclass(frozen=True)
class HPGParams(_ProjectiveParams):
    """Hybrid Projective Geometry Response at ``epsilon`` over ``domain_size`` values in ``blocks ≥ 2`` blocks over
    the field of ``q`` elements (``None``: :func:`~ldp.encoders.projective_layout.best_hpg_layout`), optionally
    named by ``labels``."""

    epsilon: float
    domain_size: int
    q: int | None = None
    blocks: int | None = None
    labels: tuple[str, ...] | None = None
    protocol: ClassVar[str] = "hpg"
    value_class: ClassVar[str | None] = "category"
    param_info: ClassVar[Mapping[str, ParamInfo]] = {
        "domain_size": ParamInfo("the number d of distinct values, reported as indices 0 … d − 1 (at least 4: two "
                                 "blocks of a line)", (Range(min=4, max=2**32),)),
        "q": ParamInfo("the field order, a prime (null: with blocks, the layout of least variance for ε and d)",
                       (Range(min=2, max=MAX_FIELD),)),
        "blocks": ParamInfo("the number of blocks the domain is dealt into (null: with q, the layout of least "
                            "variance)", (Range(min=2, dynamic="at most domain_size"),))}
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = ({"epsilon": 8.0, "domain_size": 65536},)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        check_int(self.domain_size, "domain_size", 4, 2**32)
        if self.q is not None:
            check_int(self.q, "q", 2, MAX_FIELD)
        if self.blocks is not None:
            check_int(self.blocks, "blocks", 2, self.domain_size)
        if self.q is None or self.blocks is None:
            if self.q is not None and not is_prime(self.q):
                raise refuse_relation(f"q={self.q} is not prime: hpg needs the field F_q", "prime_field", "q")
            layout = best_hpg_layout(self.epsilon, self.domain_size, self.q, self.blocks)
            if layout is None:
                raise self._no_layout(hpg_layouts(self.epsilon, self.domain_size, self.q, self.blocks))
            object.__setattr__(self, "q", layout[0])
            object.__setattr__(self, "blocks", layout[1])
        self._check_layout()
        self._check_labels()
        self.check_collectable()

    @classmethod
    def from_labels(cls, epsilon: float, labels: Sequence[str], q: int | None = None,
                    blocks: int | None = None) -> HPGParams:
        return cls(epsilon, len(labels), q, blocks, tuple(labels))

    @classmethod
    def examples(cls) -> list[HPGParams]:
        """Two blocks of ``PG(1, 2)`` (K = 6, the last block partial), two of ``PG(2, 3)`` (K = 26, hyperplanes of
        four points) and seven labelled values at the default layout (conformance suite)."""
        return [cls(1.0, 5, 2, 2), cls(3.0, 20, 3, 2), cls(2.0, 7, None, None, tuple("abcdefg"))]

    @classmethod
    def frequency_oracle_for(cls, domain_size: int) -> bool:
        """From four values (two blocks of a line over ``F_2``)."""
        return domain_size >= 4

    @classmethod
    def for_epsilon(cls, epsilon: float, domain_size: int) -> HPGParams:
        """The planner's choice: :func:`~ldp.encoders.projective_layout.best_hpg_layout`."""
        return cls(epsilon, domain_size)

    @property
    def nblocks(self) -> int:
        """``h`` (``blocks``, resolved)."""
        return self.blocks  # type: ignore[return-value]  # resolved in __post_init__


def own_point(params: _ProjectiveParams, value: int, r: int) -> int:
    """The report of the own-set branch: value ``value``'s block offset plus the index of the ``r``-th point of its
    hyperplane."""
    b, q, t = params.block_points, params.field, params.dimension
    block, point = divmod(value, b)
    return block * b + point_index(hyperplane_point(point_vector(point, q, t), r, q), q)


class _ProjectiveEncoder(DomainPrepare, Encoder):
    """Shared by PGR and HPG (abstract: each subclass's ``randomize`` names its law for discovery)."""

    params: Any

    def _projective_report(self, prepared: int) -> Report:
        rng, pr = self._rng, self.params
        if rng.bernoulli(pr.gamma):
            return self._report({"j": rng.randbelow(pr.order)})
        return self._report({"j": own_point(pr, prepared, rng.randbelow(pr.set_size))})

    def encode_batch(self, values: Any, rng: Any = None) -> ReportBatch:
        """Vectorized reports of value indices (:func:`ldp.batch.projective_geometry.pg_encode_batch`)."""
        from ldp.batch.projective_geometry import pg_encode_batch  # numpy, loaded only here

        return self._batch({"j": pg_encode_batch(self.params, values, rng)})


class PGREncoder(_ProjectiveEncoder):
    """Client encoder for :class:`PGRParams`; values are labels or indices in ``[0, d)``."""

    params: PGRParams
    params_type: ClassVar[type[PGRParams]] = PGRParams

    def randomize(self, prepared: int) -> Report:
        return self._projective_report(prepared)


class HPGEncoder(_ProjectiveEncoder):
    """Client encoder for :class:`HPGParams`; values are labels or indices in ``[0, d)``."""

    params: HPGParams
    params_type: ClassVar[type[HPGParams]] = HPGParams

    def randomize(self, prepared: int) -> Report:
        return self._projective_report(prepared)
