"""The privacy-loss distribution (PLD) of one shuffled window: the clone pair's, cut, graded and rounded so that it
can only be stochastically larger than the window's; :func:`pair_losses` is the law :mod:`ldp.privacy.over_time`
composes, :func:`shuffle_pld` the same as a ``dp-accounting`` PLD.

**The pair's PLD.** With A = e^ε_Δ/(e^ε_Δ + 1), given C = c clones the pair is P(x) = A·b_c(x−1) + (1−A)·b_c(x),
Q(x) = (1−A)·b_c(x−1) + A·b_c(x) over x = 0..c+1 (b_c the Bin(c, ½) law), so the privacy loss is
``L(x, c) = ln((A·x + (1−A)(c+1−x)) / ((1−A)·x + A(c+1−x)))``; a branch of weight 1 − ι has loss 0
(:class:`~ldp.privacy.shuffle.ShuffleStructure`). Every step below can only make the PLD stochastically larger, and
δ(ε) = E[(1 − e^(ε − ΣLᵢ))₊] grows with each Lᵢ, so the result stays an upper bound, composed or not:

* c is grouped: the values in ``[a, a + w)`` use the pair at c = a, which dominates them (P_{c+1}, Q_{c+1} are
  P_c, Q_c plus one fair coin); w = max(1, ⌊a·10⁻³⌋), so the loss scale is overstated by at most 0.05 %; the upper
  tail of C joins the last group, the lower tail (its exact mass, at most 10⁻³·min(τ, 10⁻¹⁸)) is charged at the
  largest loss;
* x beyond √(2 ln(2/that mass)) + 1 standard deviations of b_c (Hoeffding) is charged at the largest loss, with its
  exact mass from the binomial tails — never ``1 − Σp``, whose float rounding (~10⁻¹⁶) would be a floor under δ;
* every mass is raised by 10⁻⁹ of itself, more than scipy's rounding, so the PLD stays pessimistic;
* losses are rounded *up* to the grid (``pessimistic_estimate``); the largest losses, of total mass τ, go to the
  infinite loss (δ grows by τ per window, τ = 10⁻⁶·δ/W), the smallest are moved up to the first kept grid point.
  The cuts' charges fall within τ, so the grid spans only the body of the losses: a year at n = 10⁸ is about
  0.5 s of CPU.

Server side: numpy, scipy and ``dp-accounting`` (the ``server`` extra) are imported when a function is called.
"""

from __future__ import annotations

import math
from typing import Any

from ldp.privacy.shuffle import ShuffleStructure

__all__ = ["discretized", "pair_losses", "shuffle_pld"]

_GROUP = 1e-3
"""Relative width of a group of clone counts c (module docstring)."""
_CUT = 1e-3
"""What the cuts of C and of x may leave out, as a share of the top ``tail`` (module docstring)."""
_ROUNDING = 1e-9
"""Every mass is raised by this share: more than float rounding in scipy's binomial laws and their sums can take,
so the PLD stays pessimistic without ``1 − Σp`` charged at the top."""


def shuffle_pld(structure: ShuffleStructure, n: int, step: float, tail: float = 1e-18) -> Any:
    """The ``dp_accounting`` PLD of the clone pair of n shuffled reports with ``structure`` (module docstring),
    losses rounded up to multiples of ``step``; the largest losses of total mass ``tail`` go to the infinite loss."""
    if not (0.0 < step < math.inf and 0.0 <= tail < 1.0):
        raise ValueError(f"step must be > 0 and tail in [0, 1), got {step!r}, {tail!r}")
    return discretized(*pair_losses(structure, n, tail), step, tail)


def pair_losses(structure: ShuffleStructure, n: int, tail: float = 1e-18) -> tuple[Any, Any]:
    """The privacy losses of the clone pair of n shuffled reports with ``structure`` and their masses under P
    (module docstring), as two arrays; each mass raised by ``_ROUNDING`` of itself.

    What the cuts leave out is computed, never inferred as ``1 − Σp`` (whose float rounding alone, ~10⁻¹⁶ a window,
    would dwarf a small δ): below ``lo`` clones, the binomial's lower tail; beyond the x kept of each group, the
    exact tails of b_c under P, both charged at the top loss. The cuts are set so that both are at most
    ``_CUT``·``tail`` of mass: their charge then joins the infinite loss with the rest of the top ``tail``, and the
    PLD's grid spans only the body, so a window's cost scales with ln(1/δ), not with the top loss over the step."""
    import numpy as np

    from ldp.privacy.light_scipy import binom

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    if not 0.0 <= tail < 1.0:
        raise ValueError(f"tail must be in [0, 1), got {tail!r}")
    top = structure.epsilon_pair
    a_, b_ = 1.0 / (1.0 + math.exp(-top)), 1.0 / (1.0 + math.exp(top))  # A and 1 − A, each to full precision
    size, alpha = n - 1, structure.clone_probability
    edge = _CUT * min(tail, 1e-18) if tail > 0.0 else 1e-21  # what each cut may leave out (charged at the top)
    lo = int(binom.ppf(edge, size, alpha)) if size else 0
    hi = int(binom.isf(edge, size, alpha)) if size else 0
    lo, hi = max(0, min(lo, hi)), min(size, max(lo, hi))
    charged_top = float(binom.cdf(lo - 1, size, alpha)) if lo > 0 else 0.0  # C below lo: charged at the top loss
    starts = []
    at = lo
    while at <= hi:
        starts.append(at)
        at += max(1, int(at * _GROUP))
    begin = np.array(starts)
    masses = _group_masses(begin, np.array(starts[1:] + [size + 1]), size, alpha)
    begin, masses = begin[masses > 0.0], masses[masses > 0.0]
    # Hoeffding: b_c beyond sds·√c/2 of c/2 has mass < edge (in logs: 2/edge overflows at a tiny edge)
    sds = math.sqrt(2.0 * (math.log(2.0) - math.log(edge))) + 1.0
    half = sds * np.sqrt(begin) / 2 + 2
    x0 = np.maximum(0, ((begin + 1) / 2 - half).astype(np.int64))
    x1 = np.minimum(begin + 1, ((begin + 1) / 2 + half).astype(np.int64))
    # every group's x in one array, c repeated beside it; b_c once over x0 - 1 .. x1, read at x - 1 and at x
    lengths = x1 - x0 + 1
    c = np.repeat(begin, lengths)
    within = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    x = np.repeat(x0, lengths) + within
    spans = lengths + 1
    at = np.repeat(np.cumsum(spans) - spans, lengths) + within  # b_c(x - 1) in the array below
    b = binom.pmf(np.repeat(x0 - 1, spans) + np.arange(int(spans.sum())) - np.repeat(np.cumsum(spans) - spans, spans),
                  np.repeat(begin, spans), 0.5)
    p = a_ * b[at] + b_ * b[at + 1]
    num = a_ * x + b_ * (c + 1 - x)
    den = b_ * x + a_ * (c + 1 - x)
    outside = (a_ * (binom.cdf(x0 - 2, begin, 0.5) + binom.sf(x1 - 1, begin, 0.5))
               + b_ * (binom.cdf(x0 - 1, begin, 0.5) + binom.sf(x1, begin, 0.5)))
    charged_top += structure.informative * float((masses * outside).sum())
    losses = [np.zeros(1), np.log(num) - np.log(den)]
    probs = [np.array([1.0 - structure.informative]), structure.informative * np.repeat(masses, lengths) * p]
    loss = np.concatenate(losses + [np.array([top])])
    prob = np.concatenate(probs + [np.array([charged_top])]) * (1.0 + _ROUNDING)
    return loss, prob


def discretized(loss: Any, prob: Any, step: float, tail: float) -> Any:
    """The PLD of losses ``loss`` of masses ``prob``: each loss rounded up to a multiple of ``step`` (pessimistic),
    the largest of total mass ``tail`` to the infinite loss, the smallest of total mass ``tail`` moved up."""
    import numpy as np
    from dp_accounting.pld import pld_pmf, privacy_loss_distribution as pld_lib

    order = np.argsort(loss, kind="stable")  # cut on the points, so the grid spans only what is kept
    loss, prob = loss[order], prob[order]
    infinity = 0.0
    if tail > 0.0:  # the top of total mass <= tail to the infinite loss, the bottom moved up
        from_top = np.cumsum(prob[::-1])
        cut = int(np.searchsorted(from_top, tail, side="right"))
        infinity = float(from_top[cut - 1]) if cut else 0.0
        loss, prob = loss[:loss.size - cut], prob[:prob.size - cut].copy()
        below = np.cumsum(prob)
        skip = int(np.searchsorted(below, tail, side="right"))
        if 0 < skip < prob.size:
            prob[skip] += below[skip - 1]
            loss, prob = loss[skip:], prob[skip:]
    index = np.ceil(loss / step + 1e-9).astype(np.int64)  # rounded up: a pessimistic PLD
    first = int(index.min())
    dense = np.bincount(index - first, weights=prob)
    pmf = pld_pmf.DensePLDPmf(step, first, dense, infinity, True)
    return pld_lib.PrivacyLossDistribution(pmf)


def _group_masses(starts: Any, ends: Any, size: int, alpha: float) -> Any:
    """P(start <= C < end) for C ~ Bin(size, alpha), each group from the tail it lies in (cdf below the median,
    sf above), so a tail group's mass keeps its relative precision instead of an absolute 10⁻¹⁶."""
    import numpy as np

    from ldp.privacy.light_scipy import binom

    below = binom.cdf(ends - 1, size, alpha) - binom.cdf(starts - 1, size, alpha)
    above = binom.sf(starts - 1, size, alpha) - binom.sf(ends - 1, size, alpha)
    return np.maximum(np.where(ends - 1 <= size * alpha, below, above), 0.0)
