"""Heavy hitters over two aggregators: Poplar1's tree walk, its noise calibrated over the levels it walks, and the
threshold a prefix's noised count must pass (issue 89, items 2 and 4; the cryptography is :mod:`ldp.prio.poplar1`).

**What a level releases.** Poplar1 (VDAF draft 18 §8) gives, for a batch and an aggregation parameter (a level ℓ
and candidate prefixes of ``ℓ + 1`` bits), each candidate's count of reports whose ``L``-bit string starts with
it, as two secret shares. Each aggregator adds its own discrete noise to its share before it is sent
(:class:`~ldp.privacy.share_noise.ShareNoise`, as in the Prio3 mode), so the collector reads, per candidate,

    count + Z_leader + Z_helper,

and each aggregator's noise is calibrated to give the whole guarantee alone (one honest aggregator suffices,
``docs/two-aggregators.md`` §13).

**Neighbours and sensitivity** (the mode's, :meth:`ldp.aggregators.task.Task.sensitivity`): one device's report
replaced by another. A report adds 1 to exactly one prefix per level (Poplar1's verification refuses a report
that does otherwise), and only if that prefix is a candidate; so at one level the vector of candidate counts
moves by at most ``Δ₁ = 2`` (L1) and ``Δ₂ = √2`` (L2): one count down, one up.

**Composition over the m levels walked.** The walk asks for ``m`` levels of the same batch, each level's candidates
chosen from the previous levels' released counts: adaptive composition, which both rules below allow (Bun &
Steinke 2016, Lemma 2.3; Dwork & Roth 2014, Thm. 3.16). The walk's guarantee ``noise`` is split evenly:

* ``gaussian:EPS:DELTA``: ρ-zCDP with ``ρ_total`` the largest ρ whose CKS conversion (Canonne, Kamath & Steinke
  2020, Corollary 13) is (EPS, DELTA)-DP, ``ρ_level = ρ_total/m``. A discrete Gaussian of parameter σ on L2
  sensitivity Δ₂ is ``Δ₂²/(2σ²)``-zCDP (CKS Thm. 14) and zCDP adds up, so σ is that of one release of the m
  levels' counts together, of L2 sensitivity ``√(2m)``:
  ``σ = gaussian_sigma_zcdp(√(2m), EPS, DELTA) = √m · gaussian_sigma_zcdp(√2, EPS, DELTA)``;
* ``laplace:EPS``: ``ε_level = EPS/m``, discrete Laplace of scale ``t = Δ₁/ε_level = 2m/EPS`` (basic composition).

The walk's figures are then what the mode states for any set of releases (:func:`ldp.aggregators.release
.over_releases`, the smaller of basic composition and zCDP converted at δ; per device with k reports a window,
``k²·ρ`` or ``k·ε``): :meth:`WalkCalibration.cost`. The threshold, the cap on candidates and the choice of the
next level's candidates are computed from released counts only: post-processing, they cost nothing (Dwork &
Roth 2014, Prop. 2.1). Keeping only the largest when more pass than ``max_candidates`` allows is post-processing
too: it changes what is found, never the guarantee.

**The threshold** (:func:`recommended_threshold`): at most ``C = max_candidates`` prefixes are asked at each of the
m levels, so at most ``m·C`` counts of prefixes nobody holds are ever tested. T is the smallest integer with
``m·C·P(Z₀ + Z₁ ≥ T) ≤ α`` (the exact law of the two aggregators' noise on one count, :class:`NoiseLaw`): the
expected number of absent prefixes kept over the whole walk is at most α, and so is the probability that any is
(union bound, as PEM's and SFP's discoveries test at level α/C). For the Gaussian about ``z_{1−α/(mC)}·σ√2``.

**The walk** (:func:`walk`): a pure function of a ``counts_at(level, prefixes)`` the caller supplies (a simulation:
exact counts plus noise; a deployment: one DAP collection per level with the aggregation parameter of that level
and those prefixes), so that the same code runs in both.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

from ldp.prio.poplar1 import MAX_BITS
from ldp.privacy.cost import PrivacyCost
from ldp.privacy.share_noise import ShareNoise

if TYPE_CHECKING:
    import numpy as np

__all__ = ["SENSITIVITY_L1", "SENSITIVITY_L2", "WalkCalibration", "calibrate", "NoiseLaw", "recommended_threshold",
           "LevelTrace", "WalkResult", "walk", "check_levels", "DEFAULT_ALPHA"]

SENSITIVITY_L1 = 2
"""One level's L1 sensitivity under replacement: one candidate's count down by 1, another's up by 1."""
SENSITIVITY_L2 = math.sqrt(2)
"""One level's L2 sensitivity under replacement."""
DEFAULT_ALPHA = 0.05
"""The expected number of prefixes nobody holds that :func:`recommended_threshold` lets through a whole walk."""

CountsAt = Callable[[int, list[int]], Iterable[float]]
"""``counts_at(level, prefixes)``: one noised count per prefix (ints of ``level + 1`` bits, ascending)."""


@dataclass(frozen=True)
class WalkCalibration:
    """Each aggregator's noise at every level of a walk of ``levels`` levels, for the walk's guarantee
    (``mechanism``, ``epsilon``, ``delta``; module docstring). ``level_noise`` is one level's
    :class:`~ldp.privacy.share_noise.ShareNoise`: that level's own ε (and δ), its sensitivity (2 or √2) and the
    exact scale (t or σ²), so that a record of it composes as the mode's releases do."""

    mechanism: str
    epsilon: float
    delta: float
    levels: int
    level_noise: ShareNoise

    @property
    def rho_level(self) -> float:
        """One level's zCDP ρ: ``Δ₂²/(2σ²)`` (CKS Thm. 14) or ``ε_level²/2`` (pure ε, Bun & Steinke Prop. 1.4)."""
        if self.mechanism == "laplace":
            return self.level_noise.epsilon ** 2 / 2
        return self.level_noise.sensitivity ** 2 / (2 * float(self.level_noise.scale))

    @property
    def rho_total(self) -> float:
        """The walk's ρ: ``m·ρ_level`` (zCDP composes by adding ρ)."""
        return self.levels * self.rho_level

    @property
    def count_sd(self) -> float:
        """The standard deviation of the collector's noise on one count, both aggregators': ``√(2·Var Z)`` (for the
        Gaussian an upper bound, ``Var Z ≤ σ²``: CKS Prop. 19)."""
        return math.sqrt(2 * self.level_noise.count_variance)

    def level_record(self) -> dict[str, Any]:
        """One level's noise as an aggregator records a release's (``ldp.aggregators.release``): mechanism, the
        level's ε (and δ), sensitivity and scale."""
        noise = self.level_noise
        entry: dict[str, Any] = {"mechanism": noise.kind, "epsilon": noise.epsilon}
        if noise.kind == "gaussian":
            entry["delta"] = noise.delta
        entry.update(sensitivity=noise.sensitivity, scale=str(noise.scale))
        return entry

    def cost(self, reports_per_device: int = 1, delta: float | None = None) -> PrivacyCost:
        """The walk's (ε, δ) against the collector, per device sending ``reports_per_device`` (k) reports of the
        batch: the m level releases composed by :func:`ldp.privacy.release_composition.over_releases` (basic composition
        or zCDP at ``delta``, the smaller; default δ: the noise's, or the mode's ``DEFAULT_DELTA`` for Laplace)."""
        from ldp.privacy.release_composition import DEFAULT_DELTA, over_releases

        at = delta if delta is not None else (self.delta if self.mechanism == "gaussian" else DEFAULT_DELTA)
        out = over_releases([{"noise": self.level_record()}] * self.levels, at, reports_per_device)
        assert out is not None  # every level has noise
        return out


def _round_up(x: Fraction) -> float:
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def calibrate(noise: str | Any, levels: int) -> WalkCalibration:
    """Each level's noise for a walk of ``levels`` levels with the guarantee ``noise`` (``laplace:EPS`` or
    ``gaussian:EPS:DELTA``, as the mode's tasks write it, or a :class:`ldp.privacy.noise_spec.Noise`), by the
    mode's own calibration (:meth:`ShareNoise.laplace`, :meth:`ShareNoise.gaussian`) of the m levels' counts as
    one release: L1 sensitivity ``2m`` (basic composition), L2 sensitivity ``√(2m)`` (zCDP; module docstring).
    At one level it is exactly the Prio3 histogram's noise (Δ₁ = 2, Δ₂ = √2)."""
    from ldp.privacy.noise_spec import Noise

    spec = Noise.parse(noise) if isinstance(noise, str) else noise
    if isinstance(levels, bool) or not isinstance(levels, int) or not 1 <= levels <= MAX_BITS:
        raise ValueError(f"levels must be an int in [1, {MAX_BITS}], got {levels!r}")
    if spec.mechanism == "none" or spec.epsilon is None:
        raise ValueError("noise 'none' has nothing to calibrate: a walk without noise states no guarantee")
    eps = float(spec.epsilon)
    if spec.mechanism == "laplace":
        whole = ShareNoise.laplace(eps, SENSITIVITY_L1 * levels)
        level = replace(whole, epsilon=_round_up(SENSITIVITY_L1 / whole.scale), sensitivity=float(SENSITIVITY_L1))
        return WalkCalibration("laplace", eps, 0.0, levels, whole if levels == 1 else level)
    from ldp.privacy.central_noise import zcdp_epsilon

    delta = float(spec.delta or 0.0)
    whole = ShareNoise.gaussian(eps, delta, math.sqrt(2 * levels))
    rho = SENSITIVITY_L2 ** 2 / (2 * float(whole.scale))
    level = replace(whole, epsilon=zcdp_epsilon(rho, delta), sensitivity=SENSITIVITY_L2)
    return WalkCalibration("gaussian", eps, delta, levels, whole if levels == 1 else level)


# -- the exact law of the noise on one count ---------------------------------------------------------------
_TAIL_SIGMAS = 9.5  # a discrete Gaussian's mass beyond 9.5σ is below e^{-45}
_TAIL_SCALES = 45.0  # a discrete Laplace's beyond 45t is below e^{-45}
_MAX_SUPPORT = 5_000_000


@dataclass(frozen=True, eq=False)
class NoiseLaw:
    """The probability mass function of one aggregator's noise on one count, ``pmf[i] = P[Z = i − K]`` on
    ``[−K, K]`` (the mass beyond, below 1e-19, dropped): discrete Gaussian ``∝ exp(−z²/(2σ²))`` or discrete
    Laplace ``∝ exp(−|z|/t)`` (:mod:`ldp.privacy.central_noise`). Needs numpy."""

    half_width: int
    pmf: np.ndarray = field(repr=False)

    @classmethod
    def of(cls, noise: ShareNoise) -> NoiseLaw:
        """The law of ``noise`` (cached: a walk's levels share one)."""
        return _noise_law(noise.kind, noise.scale)

    @cached_property
    def sum_survival(self) -> np.ndarray:
        """``S[j] = P[Z₀ + Z₁ ≥ j − 2K]`` for j in ``[0, 4K + 1]``: the two aggregators' independent noises on one
        count (their pmfs convolved, then summed from the right, so small tails keep their relative precision)."""
        import numpy as np

        both = np.convolve(self.pmf, self.pmf)
        return np.append(np.cumsum(both[::-1])[::-1], 0.0)

    def tail(self, t: Any) -> Any:
        """``P[Z₀ + Z₁ ≥ t]`` for integer ``t`` (an int or an array of them): 1 below the support, 0 above."""
        import numpy as np

        j = np.clip(np.ceil(np.asarray(t, dtype=np.float64)) + 2 * self.half_width, 0, 4 * self.half_width + 1)
        out = np.minimum(self.sum_survival[j.astype(np.int64)], 1.0)
        return float(out) if out.ndim == 0 else out


@lru_cache(maxsize=64)
def _noise_law(kind: str, scale: Fraction) -> NoiseLaw:
    import numpy as np

    spread = math.sqrt(scale) if kind == "gaussian" else float(scale)
    k = math.ceil(spread * (_TAIL_SIGMAS if kind == "gaussian" else _TAIL_SCALES)) + 2
    if k > _MAX_SUPPORT:
        raise ValueError(f"noise of scale {spread:g} is too wide for an exact table (over {_MAX_SUPPORT:,} points)")
    z = np.arange(-k, k + 1, dtype=np.float64)
    w = np.exp(-z * z / (2 * float(scale))) if kind == "gaussian" else np.exp(-np.abs(z) / spread)
    return NoiseLaw(k, w / w.sum())


def recommended_threshold(calibration: WalkCalibration, max_candidates: int, alpha: float = DEFAULT_ALPHA) -> int:
    """The smallest integer T with ``m·C·P[Z₀ + Z₁ ≥ T] ≤ α`` (module docstring; m the levels, C
    ``max_candidates``, the noise's exact law :class:`NoiseLaw`): the expected number of prefixes nobody holds
    that pass T over the whole walk, and the probability that any does, is at most ``alpha``. At least 1."""
    _check_candidates(max_candidates)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    law = NoiseLaw.of(calibration.level_noise)
    level = alpha / (calibration.levels * max_candidates)
    lo, hi = 1, 2 * law.half_width + 1  # tail(hi) = 0
    while lo < hi:
        mid = (lo + hi) // 2
        if law.tail(mid) <= level:
            hi = mid
        else:
            lo = mid + 1
    return lo


# -- the walk ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LevelTrace:
    """One level of a walk: the prefixes asked (``candidates``), how many passed the threshold, how many were kept
    (fewer when the next level's candidates would exceed ``max_candidates``: the largest kept), the smallest kept
    noised count (``None``: none kept)."""

    level: int
    candidates: int
    passed: int
    kept: int
    smallest_kept: float | None


@dataclass(frozen=True)
class WalkResult:
    """What a walk found: ``strings`` (prefixes of the last level walked, ``level + 1`` bits as ints, each with its
    noised count, largest first), and each level's :class:`LevelTrace` (the walk stops at a level where nothing
    passes)."""

    bits: int
    level: int
    threshold: float
    max_candidates: int
    strings: dict[int, float]
    trace: tuple[LevelTrace, ...]

    @property
    def capped(self) -> bool:
        """Whether some level kept fewer prefixes than passed (``max_candidates``)."""
        return any(t.kept < t.passed for t in self.trace)


def _check_candidates(max_candidates: int) -> None:
    if isinstance(max_candidates, bool) or not isinstance(max_candidates, int) or max_candidates < 2:
        raise ValueError(f"max_candidates must be an int >= 2, got {max_candidates!r}")


def check_levels(levels: Sequence[int] | None, bits: int, max_candidates: int) -> list[int]:
    """The levels walked, checked: ``range(bits)`` by default, else strictly increasing ints in ``[0, bits)``
    (Poplar1 aggregates a report at a level only after lower ones); the first level's ``2^(ℓ₀+1)`` prefixes and
    each step's ``2^gap`` extensions of one prefix must fit ``max_candidates``."""
    if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= MAX_BITS:
        raise ValueError(f"bits must be an int in [1, {MAX_BITS}], got {bits!r}")
    _check_candidates(max_candidates)
    out = list(range(bits)) if levels is None else list(levels)
    if not out or any(isinstance(x, bool) or not isinstance(x, int) for x in out):
        raise ValueError(f"levels must be a non-empty sequence of ints, got {levels!r}")
    if out[0] < 0 or out[-1] >= bits or any(b <= a for a, b in zip(out, out[1:], strict=False)):
        raise ValueError(f"levels must increase strictly within [0, {bits}), got {out}")
    steps = [out[0] + 1] + [b - a for a, b in zip(out, out[1:], strict=False)]
    if max(steps) > max_candidates.bit_length() - 1:
        raise ValueError(f"a step of {max(steps)} bits asks 2^{max(steps)} prefixes of one, more than "
                         f"max_candidates={max_candidates}")
    return out


def _counts(counts_at: CountsAt, level: int, cands: list[int]) -> list[float]:
    counts = list(counts_at(level, cands))
    if len(counts) != len(cands):
        raise ValueError(f"counts_at gave {len(counts)} counts for {len(cands)} prefixes at level {level}")
    for c in counts:
        if isinstance(c, bool) or not math.isfinite(c):
            raise ValueError(f"counts_at gave a count that is not a finite number at level {level}: {c!r}")
    return counts


def walk(counts_at: CountsAt, bits: int, threshold: float, max_candidates: int, *,
         levels: Sequence[int] | None = None) -> WalkResult:
    """The collector's tree walk over ``bits``-bit strings. At each level of ``levels`` (default every level,
    :func:`check_levels`) it asks ``counts_at(level, prefixes)`` for the noised counts of the candidate prefixes
    (ascending ints of ``level + 1`` bits: the first level all of them, later ones every extension of the prefixes
    kept), keeps those whose count is at least ``threshold``, and extends each by the bits up to the next level.
    When the next level's candidates would exceed ``max_candidates``, it keeps the prefixes of largest count
    (ties: smaller prefix first) as many as fit. Post-processing only (module docstring). ``ValueError`` for bad
    input, or a ``counts_at`` that answers other than one finite count per prefix."""
    walked = check_levels(levels, bits, max_candidates)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not math.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    cands = list(range(1 << (walked[0] + 1)))
    trace: list[LevelTrace] = []
    kept: list[tuple[float, int]] = []
    for i, level in enumerate(walked):
        counts = _counts(counts_at, level, cands)
        kept = [(c, p) for p, c in zip(cands, counts, strict=True) if c >= threshold]
        passed = len(kept)
        step = walked[i + 1] - level if i + 1 < len(walked) else 0
        room = max_candidates >> step
        if passed > room:
            kept.sort(key=lambda cp: (-cp[0], cp[1]))
            kept = sorted(kept[:room], key=lambda cp: cp[1])
        trace.append(LevelTrace(level, len(cands), passed, len(kept), min((c for c, _ in kept), default=None)))
        if not kept or step == 0:
            break
        cands = [p << step | s for _, p in kept for s in range(1 << step)]
    last = trace[-1].level
    found = {p: c for c, p in sorted(kept, key=lambda cp: (-cp[0], cp[1]))} if last == walked[-1] else {}
    return WalkResult(bits, walked[-1], float(threshold), max_candidates, found, tuple(trace))
