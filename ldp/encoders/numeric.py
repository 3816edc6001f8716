"""Means of bounded numbers: Duchi's 1-bit mechanism, the discrete Piecewise and the Hybrid Mechanism.
Client side (standard library only).

Every mechanism draws only through the client's exact primitives (``bernoulli`` at 2^-64 resolution,
``randbelow`` exactly uniform), so the exact audit (:mod:`ldp.privacy.audit`) enumerates it, the stated ε is
the ε of the *realized* probabilities, and a report is plain ``uint`` fields (no float on the wire).

Duchi et al. (FOCS 2013) = Microsoft's 1BitMean (Ding et al., NeurIPS 2017), protocol ``duchi``
    Round ``x`` to an end: ``b0 = bernoulli(φ)``, ``φ = (x − low)/(high − low)``; then flip ``b0`` with probability
    ``q = 1/(1 + e^ε)``. ``Pr[bit = 1 | x] = q + φ(1 − 2q) ∈ [q, 1 − q]``, so the realized ε is ``ln((1 − q)/q)``,
    attained by ``x = low`` against ``x = high``.

Discrete Piecewise Mechanism (Wang et al., ICDE 2019, on a grid of ``cells`` = G outputs), ``piecewise``
    Window width ``w = round(G/(e^{ε/2} + 1))`` (PM's band fraction ``(C − 1)/(2C)``, C =
    ``(e^{ε/2} + 1)/(e^{ε/2} − 1)``) in ``[1, G − 1]``; input grid steps ``M = G − w``. ``x`` is rounded at random to
    a grid index ``k ∈ [0, M]`` (unbiased: ``E[k] = u = φ·M``); with probability ``P_in = w·e^ε/(w·e^ε + G − w)`` the
    cell is uniform in the window ``[k, k + w)``, else uniform among the ``G − w`` others. Each cell has probability
    ``P_in/w`` or ``(1 − P_in)/(G − w)`` for every input, so the realized ε is ``ln((P_in/w)/((1 − P_in)/(G − w)))``
    (cell 0 is inside for ``x = low``, outside for ``x = high``: it is attained).

Hybrid Mechanism (Wang et al.), ``hybrid``
    With probability ``α`` report the discrete PM's cell (``pm = 1``), else Duchi's bit (``pm = 0``), both at the full
    ε: ``α = 1 − e^{−ε/2}`` for ``ε > ε*``, else 0. With that α the continuous hybrid's variance
    ``α·Var_PM(t) + (1 − α)·Var_D(t)`` does not depend on t (the t² terms cancel), so its worst case is at t = 0,
    which is below Duchi's worst case (also at t = 0) exactly when ``Var_PM(0) < Var_D(0)``:
    ``(s + 3)/(3(s − 1)²) < ((s² + 1)/(s² − 1))²`` with ``s = e^{ε/2}``, i.e. ``3s³ − s² + s − 7 > 0``.
    ``ε* = 2 ln s*`` for the cubic's real root (:data:`HYBRID_THRESHOLD` ≈ 0.6094). Realized ε: the larger branch's.

Each params class states ``epsilon`` (requested) and ``realized_epsilon`` (what the client's probabilities give,
never above the requested: moved down by the last representable step if rounding would put it above), the cost.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Self

from ldp.encoders.base import Encoder, ProtocolParams, check_epsilon, check_int
from ldp.encoders.base_checks import check_bool, check_finite, refuse_range, refuse_relation, refuse_type
from ldp.encoders.base_draws import DrawRule
from ldp.privacy.accountant import PrivacyCost
from ldp.randomness import RandomSource, bernoulli_threshold, logistic_tail, realized_probability
from ldp.reports import Field, Report, ReportBatch, ReportError

__all__ = ["NumericParams", "DuchiParams", "PiecewiseParams", "HybridParams", "DuchiEncoder", "PiecewiseEncoder",
           "HybridEncoder", "HYBRID_THRESHOLD", "PM_CROSSOVER", "MAX_CELLS"]


def __getattr__(name: str) -> Any:  # MEAN_PROTOCOLS (0.1): the registry's mean protocols, read when asked
    if name != "MEAN_PROTOCOLS":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ldp.protocols.registry import protocols_taking
    return protocols_taking("numbers")


MAX_CELLS = 1 << 16
"""Most output cells of the discrete Piecewise Mechanism."""


def _hybrid_threshold() -> float:
    """ε* = 2 ln s* for the real root s* of ``3s³ − s² + s − 7`` (module docstring), by bisection."""
    lo, hi = 1.0, 2.0  # the cubic is -4 at 1, +11 at 2 and increasing on [1, 2]
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if 3 * mid**3 - mid**2 + mid - 7 < 0 else (lo, mid)
    return 2.0 * math.log(lo)


HYBRID_THRESHOLD = _hybrid_threshold()
"""ε* ≈ 0.6094: the Hybrid Mechanism mixes in PM (α > 0) only above it."""

PM_CROSSOVER = 2.0 * math.log(((2 + 2 * math.sqrt(7)) / 3 + math.sqrt(((2 + 2 * math.sqrt(7)) / 3) ** 2 - 4)) / 2)
"""ε ≈ 1.2898 above which the continuous PM's worst-case variance ``4s/(3(s − 1)²)`` is below Duchi's
``((s² + 1)/(s² − 1))²`` (s = e^{ε/2}): equality is ``3s⁴ − 4s³ − 2s² − 4s + 3 = 0``, palindromic, so
with ``y = s + 1/s``: ``3y² − 4y − 8 = 0``, ``y = (2 + 2√7)/3``, ``s = (y + √(y² − 4))/2``."""


def _next_probability(p: float, up: bool) -> float:
    """The next probability the client realizes above (``up``) or below ``p`` (one 2^-64 step below
    2^-11, one double step above)."""
    if p < 2.0**-11:
        return math.ldexp(bernoulli_threshold(p) + (1 if up else -1), -64)
    return math.nextafter(p, 2.0 if up else -1.0)


@dataclass(frozen=True)
class NumericParams(ProtocolParams):
    """What every mean mechanism shares: ``epsilon``, the bounds ``low < high`` (finite) and ``clip``
    (clip out-of-range values to the bounds instead of refusing them)."""

    epsilon: float
    low: float
    high: float
    clip: bool = False
    population_kind: ClassVar[str] = "numbers"  # a simulation draws the users' values (ldp.simulation.numeric)
    refusal_rules: ClassVar[Mapping[str, str]] = {"low<high": "low < high", "width_finite": "high − low is finite"}

    def _check_common(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        low, high = check_finite(self.low, "low"), check_finite(self.high, "high")
        if not low < high:
            raise refuse_relation(f"the bounds need low < high, got low={low}, high={high}", "low<high", "low", "high")
        if not math.isfinite(high - low):
            raise refuse_relation(f"high - low must be finite, got low={low}, high={high}", "width_finite", "low",
                                  "high")
        check_bool(self.clip, "clip")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)

    @property
    def domain_size(self) -> None:  # the inputs are numbers in [low, high], not indices
        return None

    @classmethod
    def examples(cls) -> list[Self]:
        """``[0, 10]`` at ε = 1, ``[−1, 1]`` at ε = 4 with clipping (conformance suite)."""
        return [cls(1.0, 0.0, 10.0), cls(4.0, -1.0, 1.0, clip=True)]

    @classmethod
    def audit_examples(cls) -> list[Self]:
        """The examples with 8 cells where the mechanism has cells (1024 outputs enumerate slowly)."""
        return [cls.from_dict({**p.to_dict(), "cells": 8}) if "cells" in p.to_dict() else p for p in cls.examples()]

    def audit_inputs(self) -> list[float]:  # both bounds (they attain the realized ε) and a number between them
        return [self.low, self.low + 0.3 * (self.high - self.low), self.high]

    @cached_property
    def privacy_cost(self) -> PrivacyCost:
        """The realized ε (never above the requested ``epsilon``)."""
        return PrivacyCost(self.realized_epsilon)

    if TYPE_CHECKING:  # what each mechanism defines
        @property
        def realized_epsilon(self) -> float: ...  # the exact ε of the probabilities the client realizes

    def check_value(self, value: Any) -> float:
        """``value`` as a float in ``[low, high]``: ``TypeError`` for a bool, str or non-number,
        ``ValueError`` for NaN, ±inf (an int past the largest double among them) or a value outside the bounds
        (clipped instead if ``clip``)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise refuse_type(f"{self.protocol} values must be int or float, got {type(value).__name__}", value,
                              "float")
        try:
            x = float(value)
        except OverflowError:  # an int past the largest double: ±inf, as the other clients read it
            x = math.inf if value > 0 else -math.inf
        bounds = dict[str, Any](min=self.low, max=self.high)
        if not math.isfinite(x):
            raise refuse_range(f"{self.protocol} values must be finite, got {x}", value, **bounds, finite=True)
        if not self.low <= x <= self.high:
            if not self.clip:
                raise refuse_range(f"{self.protocol} value {x} is outside [low, high] = [{self.low}, {self.high}] "
                                   "(pass clip=True in the params to clip instead)", value, **bounds)
            x = min(max(x, self.low), self.high)
        return x

    def unit(self, x: float) -> float:
        """``(x − low)/(high − low)`` in ``[0, 1]`` (clamped against rounding)."""
        return min(max((x - self.low) / (self.high - self.low), 0.0), 1.0)


@dataclass(frozen=True)
class DuchiParams(NumericParams):
    """Duchi et al.'s 1-bit mechanism (1BitMean): one bit per report."""

    protocol: ClassVar[str] = "duchi"
    value_class: ClassVar[str | None] = "number"
    draw_rule = DrawRule("`B(unit(x))`, `B(q)`", lambda s, pr, v: (s.B(pr.unit(pr.check_value(v))), s.B(pr.q)))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = ({"epsilon": 0.5, "low": 0.001, "high": 1e16},)

    def __post_init__(self) -> None:
        self._check_common()
        if not 0.0 < self.q < 0.5:
            what = "small: the flip probability rounds to 1/2" if self.q >= 0.5 else \
                "large: the flip probability 1/(1+e^ε) is below the client's 2^-64 resolution"
            raise refuse_relation(f"epsilon={self.epsilon} is too {what}, so reports would not be private or "
                                  "informative", "epsilon_too_small" if self.q >= 0.5 else "epsilon_too_large",
                                  "epsilon")
        self.check_collectable()

    @staticmethod
    def _epsilon_of(q: float) -> float:
        return math.log1p((1.0 - 2.0 * q) / q) if q > 0 else math.inf

    @cached_property
    def q(self) -> float:
        """The realized flip probability ``1/(1 + e^ε)`` (moved up a step if rounding gave more than ε)."""
        q = realized_probability(logistic_tail(self.epsilon))
        while 0.0 < q < 0.5 and self._epsilon_of(q) > self.epsilon:
            q = realized_probability(_next_probability(q, up=True))
        return q

    @property
    def realized_epsilon(self) -> float:
        """``ln((1 − q)/q)`` of the realized q."""
        return self._epsilon_of(self.q)

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        return (Field("bit", "uint", 2),)

    @property
    def aggregate_cells(self) -> int:
        return 2


@dataclass(frozen=True)
class PiecewiseParams(NumericParams):
    """The discrete Piecewise Mechanism on ``cells`` output cells (``2 <= cells <= 2^16``)."""

    cells: int = 1024
    protocol: ClassVar[str] = "piecewise"
    value_class: ClassVar[str | None] = "number"
    draw_rule = DrawRule("`B(φ)`, `B(p_in)`, then `R(w)` if true, `R(G−w)` if false", lambda s, pr, v: (
        s.B(pr.grid(pr.check_value(v))[1]), s.R(pr.window) if s.B(pr.p_in) else s.R(pr.cells - pr.window)))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = (
        {"epsilon": 2.0, "low": -5e-05, "high": 5e-05, "cells": 16},)

    def __post_init__(self) -> None:
        self._check_common()
        check_int(self.cells, "cells", 2, MAX_CELLS)
        if self.p_in >= 1.0:
            raise refuse_relation(f"epsilon={self.epsilon} is too large for cells={self.cells}: the window "
                                  "probability rounds to 1, so reports would not be private", "epsilon_too_large",
                                  "epsilon", "cells")
        if not self.realized_epsilon > 0:
            raise refuse_relation(f"epsilon={self.epsilon} is too small for cells={self.cells}: inside and outside "
                                  "cells are equally likely at the client's resolution, so reports carry no "
                                  "information", "epsilon_too_small", "epsilon", "cells")
        self.check_collectable()

    @cached_property
    def window(self) -> int:
        """w = round(G/(e^{ε/2} + 1)) in [1, G − 1]: the high-probability band."""
        return min(max(math.floor(self.cells * logistic_tail(self.epsilon / 2) + 0.5), 1), self.cells - 1)

    @property
    def steps(self) -> int:
        """M = G − w: the input grid is ``0..M``."""
        return self.cells - self.window

    def _epsilon_of(self, p: float) -> float:
        g, w = self.cells, self.window
        return math.log1p((p * g - w) / ((1.0 - p) * w)) if p < 1.0 else math.inf

    @cached_property
    def p_in(self) -> float:
        """Realized ``Pr[cell in the window] = w·e^ε/(w·e^ε + G − w)`` (a step lower if rounding gave more than ε)."""
        g, w = self.cells, self.window
        p = realized_probability(1.0 / (1.0 + (g - w) / w * math.exp(-self.epsilon)))
        while 0.0 < p < 1.0 and self._epsilon_of(p) > self.epsilon:
            p = realized_probability(_next_probability(p, up=False))
        return p

    @property
    def realized_epsilon(self) -> float:
        """``ln((P_in/w)/((1 − P_in)/(G − w)))`` of the realized ``P_in``."""
        return self._epsilon_of(self.p_in)

    def grid(self, x: float) -> tuple[int, float]:
        """``(k, φ)``: ``u = unit(x)·M = k + φ`` with ``0 <= φ < 1`` (``k = M``, ``φ = 0`` at ``high``)."""
        m = self.steps
        u = self.unit(x) * m
        k = min(math.floor(u), m)
        return k, (u - k if k < m else 0.0)

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        return (Field("cell", "uint", self.cells),)

    @property
    def aggregate_cells(self) -> int:
        return self.cells


@dataclass(frozen=True)
class HybridParams(NumericParams):
    """The Hybrid Mechanism: the discrete PM with probability α, else Duchi, both at ε."""

    cells: int = 1024
    protocol: ClassVar[str] = "hybrid"
    value_class: ClassVar[str | None] = "number"
    draw_rule = DrawRule("`B(α)`, then piecewise's if true, duchi's if false",
                         lambda s, pr, v: (pr.piecewise if s.B(pr.alpha) else pr.duchi).replay_draws(s, v))
    conformance_extra: ClassVar[tuple[dict[str, Any], ...]] = (
        {"epsilon": 0.3, "low": 0.0, "high": 100.0, "cells": 64},)

    @classmethod
    def audit_examples(cls) -> list[Self]:  # the examples with 8 cells, and ε below HYBRID_THRESHOLD (Duchi's only)
        return [*super().audit_examples(), cls(0.3, 0.0, 10.0, cells=8)]

    def __post_init__(self) -> None:
        self._check_common()
        check_int(self.cells, "cells", 2, MAX_CELLS)
        _ = self.duchi.q, self.piecewise.p_in if self.alpha > 0 else None  # the branches' checks apply
        self.check_collectable()

    @cached_property
    def duchi(self) -> DuchiParams:
        return DuchiParams(self.epsilon, self.low, self.high, self.clip)

    @cached_property
    def piecewise(self) -> PiecewiseParams:
        return PiecewiseParams(self.epsilon, self.low, self.high, self.clip, self.cells)

    @cached_property
    def alpha(self) -> float:
        """Realized ``Pr[pm = 1]``: ``1 − e^{−ε/2}`` above :data:`HYBRID_THRESHOLD`, else 0."""
        return realized_probability(-math.expm1(-self.epsilon / 2)) if self.epsilon > HYBRID_THRESHOLD else 0.0

    @property
    def realized_epsilon(self) -> float:
        """The larger branch's realized ε (Duchi's alone when α = 0)."""
        d = self.duchi.realized_epsilon
        return max(d, self.piecewise.realized_epsilon) if self.alpha > 0 else d

    @cached_property
    def schema(self) -> tuple[Field, ...]:
        return (Field("pm", "uint", 2), Field("out", "uint", self.cells))

    @property
    def aggregate_cells(self) -> int:
        return self.cells + 2

    def validate(self, report: Report) -> None:
        """The schema's checks, and ``out < 2`` when ``pm = 0`` (a Duchi bit)."""
        super().validate(report)
        out = report.payload["out"]
        if report.payload["pm"] == 0 and isinstance(out, int) and out >= 2:  # an int: the schema checked it
            raise ReportError("out_of_range", f"out must be a bit when pm = 0, got {out}")


def duchi_bit(params: DuchiParams, x: float, rng: RandomSource) -> int:
    """Duchi's bit for ``x``: round to an end, then flip with probability q."""
    return int(rng.bernoulli(params.unit(x)) != rng.bernoulli(params.q))


def piecewise_cell(params: PiecewiseParams, x: float, rng: RandomSource) -> int:
    """The discrete PM's cell for ``x``: randomized rounding to the grid, then window or outside."""
    k, frac = params.grid(x)
    k += rng.bernoulli(frac)
    w = params.window
    if rng.bernoulli(params.p_in):
        return k + rng.randbelow(w)
    r = rng.randbelow(params.cells - w)
    return r if r < k else r + w


class _NumericEncoder(Encoder):
    params: NumericParams

    def prepare(self, value: Any) -> float:
        return self.params.check_value(value)


class DuchiEncoder(_NumericEncoder):
    """Client encoder for :class:`DuchiParams`; values are numbers in ``[low, high]``."""

    params: DuchiParams
    params_type: ClassVar[type[DuchiParams]] = DuchiParams

    def randomize(self, prepared: float) -> Report:
        return self._report({"bit": duchi_bit(self.params, prepared, self._rng)})

    def encode_batch(self, values: Any, rng: Any = None) -> ReportBatch:
        """Vectorized reports of an array of numbers (simulation; numpy)."""
        from ldp.batch.numeric import duchi_encode_batch  # numpy, loaded only here

        return self._batch({"bit": duchi_encode_batch(self.params, values, rng)})


class PiecewiseEncoder(_NumericEncoder):
    """Client encoder for :class:`PiecewiseParams`; values are numbers in ``[low, high]``."""

    params: PiecewiseParams
    params_type: ClassVar[type[PiecewiseParams]] = PiecewiseParams

    def randomize(self, prepared: float) -> Report:
        return self._report({"cell": piecewise_cell(self.params, prepared, self._rng)})

    def encode_batch(self, values: Any, rng: Any = None) -> ReportBatch:
        from ldp.batch.numeric import piecewise_encode_batch  # numpy, loaded only here

        return self._batch({"cell": piecewise_encode_batch(self.params, values, rng)})


class HybridEncoder(_NumericEncoder):
    """Client encoder for :class:`HybridParams`; values are numbers in ``[low, high]``."""

    params: HybridParams
    params_type: ClassVar[type[HybridParams]] = HybridParams

    def randomize(self, prepared: float) -> Report:
        pr, rng = self.params, self._rng
        if rng.bernoulli(pr.alpha):
            return self._report({"pm": 1, "out": piecewise_cell(pr.piecewise, prepared, rng)})
        return self._report({"pm": 0, "out": duchi_bit(pr.duchi, prepared, rng)})

    def encode_batch(self, values: Any, rng: Any = None) -> ReportBatch:
        from ldp.batch.numeric import hybrid_encode_batch  # numpy, loaded only here

        pm, out = hybrid_encode_batch(self.params, values, rng)
        return self._batch({"pm": pm, "out": out})
