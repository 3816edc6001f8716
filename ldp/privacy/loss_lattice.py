"""A dominating pair's privacy-loss law held on lattices, for :mod:`ldp.privacy.krr_shuffle` (the k-RR blanket):
its losses rounded to a lattice of losses and merged there (:class:`Lattice`), the pair's δ(ε) with its masses moved
the pessimistic way (:class:`Pair`, :func:`assemble`), and its ε found on a lattice of ε (:func:`lattice_epsilon`),
so that the figure is monotone in δ by construction.

Server side: numpy (the ``server`` extra), imported when a function is called.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

__all__ = ["RHO", "SHIFT", "LATTICE", "LOG_STEP", "LOSS0", "Pair", "Lattice", "assemble", "lattice_epsilon"]

RHO = 1e-9
"""Every mass is taken within this share of the true one: P moved up and Q down."""
SHIFT = 2 * math.atanh(RHO) + 1e-12
"""Losses are read this much higher (float rounding of P and Q and of their logarithms)."""
LATTICE = 2**32
"""ε is found on the lattice ε₀·j/2³² (monotone in δ by construction)."""
LOG_STEP = 1e-4
"""Relative step of the lattice that losses are rounded to (ε moves by about this share)."""
LOSS0 = 1e-15
"""The lattice's smallest non-zero |loss|."""


@dataclass(frozen=True)
class Pair:
    """Losses ``loss`` (sorted up) with P's and Q's masses at each, and ``extra`` (mass charged at the top loss)."""

    loss: Any
    p: Any
    q: Any
    extra: float
    top: float
    shift: float = SHIFT

    @functools.cached_property
    def _above(self) -> tuple[Any, Any]:
        import numpy as np

        up_p = np.append(np.cumsum(self.p[::-1])[::-1], 0.0)
        up_q = np.append(np.cumsum(self.q[::-1])[::-1], 0.0)
        return up_p, up_q

    def delta(self, eps: float) -> float:
        """Σ over losses above ε of (P − e^ε·Q), plus the charges (which sit at ε₀: counted while ε < ε₀)."""
        import numpy as np

        up_p, up_q = self._above
        i = int(np.searchsorted(self.loss, eps - self.shift, side="right"))
        body = max(float(up_p[i]) - math.exp(eps) * float(up_q[i]), 0.0)
        return min(1.0, body + (self.extra if eps < self.top else 0.0))


def lattice_epsilon(pair: Pair, delta: float, top: float, *, up: bool) -> float:
    """On the lattice ε = top·j/2³²: the smallest point with δ(ε) <= delta (``up``: a valid figure), or the largest
    with δ(ε) > delta (``up`` false: for a lower bound, the crossing lies above it)."""
    lo, hi = 0, LATTICE  # δ(top) = 0 <= delta always (no loss exceeds ε₀)
    if pair.delta(0.0) <= delta:
        return 0.0
    while hi - lo > 1:  # invariant: δ(lo) > delta >= δ(hi)
        mid = (lo + hi) // 2
        if pair.delta(top * mid / LATTICE) > delta:
            lo = mid
        else:
            hi = mid
    return top * (hi if up else lo) / LATTICE


class Lattice:
    """Losses rounded to the lattice 0, ±LOSS0·(1 + LOG_STEP)^j (j >= 0): up for a figure, down for a lower bound
    (each loss moves by at most a share LOG_STEP of itself, or to 0 or ±LOSS0 near 0), P's masses summed per point
    (a merge of outcomes at one loss: the law is the same). Sorted by construction, no sort of the components."""

    def __init__(self, *, upper: bool) -> None:
        self.upper = upper
        self.codes: list[Any] = []
        self.masses: list[Any] = []

    def add(self, loss: Any, mass: Any) -> None:
        import numpy as np

        loss, mass = np.ravel(loss), np.ravel(mass)
        keep = mass > 0
        loss, mass = loss[keep], mass[keep]
        size = np.abs(loss)
        t = np.log(np.maximum(size, LOSS0) / LOSS0) / math.log1p(LOG_STEP)
        away = self.upper == (loss > 0)  # round |loss| up (away from 0) or down (towards 0)
        j = np.where(away, np.ceil(t), np.floor(t))
        code = np.where(size < LOSS0, np.where(away & (loss != 0), 1, 0), j.astype(np.int64) + 1)
        self.codes.append(np.where(loss < 0, -code, code).astype(np.int64))
        self.masses.append(mass)

    def law(self) -> tuple[Any, Any]:
        """The lattice's losses (sorted up) and P's masses on them (points with mass only)."""
        import numpy as np

        if not self.codes:
            return np.zeros(0), np.zeros(0)
        codes = np.concatenate(self.codes)
        low = int(codes.min())
        mass = np.bincount(codes - low, weights=np.concatenate(self.masses))
        at = np.nonzero(mass > 0)[0]
        code = at + low
        size = np.where(code == 0, 0.0, LOSS0 * np.exp((np.abs(code) - 1) * math.log1p(LOG_STEP)))
        return np.sign(code) * size, mass[at]


def assemble(lattice: Lattice, extra: float, top: float) -> Pair:
    """One pair from a lattice: P's masses moved ``RHO`` the pessimistic way (up for the figure, down for the lower
    bound), Q = P·e^(−loss) moved the other way (float rounding of the masses and of exp)."""
    import numpy as np

    shift = SHIFT if lattice.upper else -SHIFT
    loss, p = lattice.law()
    if not len(loss):
        return Pair(np.zeros(1), np.zeros(1), np.zeros(1), extra, top, shift)
    q = p * np.exp(-loss)
    if lattice.upper:
        p, q = p * (1 + RHO), q * (1 - RHO)
    else:
        p, q = p * (1 - RHO), q * (1 + RHO)
    return Pair(loss, p, q, extra, top, shift)
