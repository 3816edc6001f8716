"""Shuffled k-ary randomized response among few users (n below :data:`SMALL_MAX`): the privacy blanket's pair of
:mod:`ldp.privacy.krr_shuffle` summed over every outcome of its sufficient statistic, with no group, band, bin or cut.

**The pair** (Balle, Bell, Gascón and Nissim, "The privacy blanket of the shuffle model", CRYPTO 2019, §4; the
reduction of :mod:`ldp.privacy.krr_shuffle`'s module docstring). k-RR over d >= 3 values keeps its input with
probability ``p = e^ε₀/(e^ε₀ + d − 1)`` and says each other value with ``q = 1/(e^ε₀ + d − 1)``. Among the n − 1
others, C ~ "blanket reports on S = {x₀, x₁}" and U ~ "blanket reports outside S" are multinomial over n − 1 with
chances (2q, (d − 2)q, 1 − dq); user 1's report is in S with probability ι = p + q (J = 1). The analyst's view is
dominated by (M, T, H₀) with M = C + J, T = U + 1 − J and H₀ the count of x₀ among the M reports on S. Its law is the
same under P (user 1 holds x₀) and Q (x₁) except for H₀: with ``w(m, t) = Pr[M = m, T = t]``,
``b_m(h) = Bin(m, ½)(h)``, ``y = 2h/m − 1``, ``κ = tanh(ε₀/2)`` and π = Pr[J = 1 | m, t] (odds (e^ε₀ + 1)·m/(2t)),

    P(m, t, h) = w(m, t)·b_m(h)·(1 + π·κ·y),     Q(m, t, h) = w(m, t)·b_m(h)·(1 − π·κ·y),

and ``w(m, t) = ι·Mult(m − 1, t)/π`` (the multinomial of the others at C = m − 1, U = t). Every dataset's shuffled
histogram is a post-processing of this pair, and δ(ε) = Σ (P − e^ε·Q)₊ over every (m, t, h), the same in both
directions (swap x₀ and x₁).

**Computed exactly.** Below :data:`SMALL_MAX` users there are at most about n³/6 (170,000) outcomes: each mass is
computed from log-factorials (``math.lgamma``, relative error below 10⁻¹² at these sizes), ``1 − π·κ·y`` as a sum of
non-negative terms (no cancellation as κ → 1), and δ(ε) summed over every outcome of positive loss with P moved up
and Q down by :data:`~ldp.privacy.loss_lattice.RHO` (the pessimistic way), in units of δ so that no mass that counts
is a subnormal float; the masses below 10⁻³⁰⁰·δ (none in practice) are charged a constant 10⁻²⁹⁴·δ at most.

**Non-increasing in n, by construction.** The pair with n + 1 users is a post-processing of the pair with n (one more
independent report: blanket with chance dq, then added to M or T, or known): its δ(ε) is at most the pair's with n at
every ε. The masses moved by RHO keep that order exactly ((1 + ρ)·δ_n(ε') with e^ε' = e^ε·(1 − ρ)/(1 + ρ), the same
ε' at every n), the charge is the same at every n, and ε is the smallest point of the fixed grid of
:mod:`ldp.privacy.window_grid` whose δ is within δ: the figure cannot rise with n, nor with δ falling, but by
floating-point rounding (about 10⁻¹³ of δ) at a grid point where δ_n and δ_{n+1} agree to that share. Nothing is
left to a grid of n, to bands moving with n, or to a running minimum.

Server side: numpy (the ``server`` extra), imported when a function is called.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from ldp.privacy.loss_lattice import RHO
from ldp.privacy.window_grid import grid_search

__all__ = ["SMALL_MAX", "SmallBlanket", "small_blanket", "small_krr_epsilon"]

SMALL_MAX = 100
"""The exact sum answers for 2 <= n < SMALL_MAX users (about n³/6 outcomes: 10 ms of CPU at n = 99); from there
:mod:`ldp.privacy.krr_shuffle`'s grouped computation does."""
_CHARGE = 1e-294
"""The most, in units of δ, that the outcomes below 10⁻³⁰⁰·δ (exp underflows there) can add: at most 10⁶ outcomes."""


@dataclass(frozen=True)
class SmallBlanket:
    """The blanket pair of n shuffled k-RR reports: ``loss`` (every outcome's privacy loss ln(P/Q), sorted up) and
    ``log_p``, ``log_q`` (the natural logarithms of P's and Q's masses there)."""

    eps0: float
    n: int
    loss: Any
    log_p: Any
    log_q: Any

    def losses(self) -> tuple[Any, Any]:
        """The pair's privacy-loss law under P (losses sorted up, masses): composing it, one per window, bounds δ for
        any datasets (every dataset is a post-processing of the pair, in either direction). The masses below the
        smallest normal float (2.2·10⁻³⁰⁸) are moved to the top loss ε₀ at that much each (stochastically larger)."""
        import numpy as np

        tiny = self.log_p < math.log(2.3e-308)
        loss = np.append(self.loss[~tiny], self.eps0)
        return loss, np.append(np.exp(self.log_p[~tiny]), 2.3e-308 * int(tiny.sum()))

    def delta_above(self, eps: float, delta: float) -> float:
        """δ(ε)/δ of the pair, P moved up and Q down by RHO, plus the charge (module docstring)."""
        import numpy as np

        k = int(np.searchsorted(self.loss, eps - 1e-12, side="right"))  # every loss above ε (rounding of logs)
        if k == len(self.loss):
            return _CHARGE
        scale = math.log(delta)
        big_p = np.exp(self.log_p[k:] - scale) * (1 + RHO)
        big_q = np.exp(self.log_q[k:] - scale + eps) * (1 - RHO)
        return float(np.maximum(big_p - big_q, 0.0).sum()) + _CHARGE

    def epsilon(self, delta: float) -> float:
        """The smallest ε of :mod:`ldp.privacy.window_grid`'s grid with δ(ε) <= ``delta`` (``eps0`` if none)."""
        import numpy as np

        if self.delta_above(0.0, delta) <= 1.0:
            return grid_search(lambda _: False, 0.0, self.eps0)
        # a guess (the answer's neighbourhood only; the grid search's own sums decide): where the top losses' P mass
        # reaches δ, below the answer (δ(ε) <= P[loss > ε])
        top_mass = np.cumsum(np.exp(self.log_p[::-1] - math.log(delta)))
        k = min(int(np.searchsorted(top_mass, 1.0)), len(self.loss) - 1)
        guess = float(self.loss[::-1][k])
        return grid_search(lambda e: self.delta_above(e, delta) > 1.0, max(guess, 1e-9), self.eps0)


def _log_factorials(n: int) -> Any:
    import numpy as np

    return np.array([math.lgamma(k + 1.0) for k in range(n + 1)])


@functools.lru_cache(maxsize=64)
def small_blanket(eps0: float, d: int, n: int) -> SmallBlanket:
    """The blanket pair of n shuffled reports of k-RR over d >= 3 values at ε₀ (module docstring), every outcome
    listed. Cached."""
    import numpy as np

    if not (0.0 < eps0 <= 50.0) or d < 3 or not 2 <= n < SMALL_MAX:
        raise ValueError(f"the exact blanket sum needs 0 < ε₀ <= 50, d >= 3, 2 <= n < {SMALL_MAX}; got "
                         f"{eps0!r}, {d!r}, {n!r}")
    e0 = math.exp(eps0)
    q = 1.0 / (e0 + d - 1)
    kappa, one_minus_kappa = math.tanh(eps0 / 2.0), 2.0 / (e0 + 1.0)
    lf = _log_factorials(n)
    others = n - 1
    log_clone, log_out, log_rest = math.log(2 * q), math.log((d - 2) * q), math.log(math.expm1(eps0) * q)
    losses, log_ps, log_qs = [np.zeros(1)], [np.zeros(1)], [np.zeros(1)]
    # M = 0: no report on S, loss 0; its mass (1 − ι)·(1 − 2q)^(n − 1) (one entry in each direction's law)
    log_ps[0][0] = log_qs[0][0] = math.log((d - 2) * q) + others * math.log1p(-2 * q)
    for m in range(1, n + 1):
        t = np.arange(0, n - m + 1, dtype=float)  # C = m − 1, U = t, the rest n − m − t
        log_mult = (lf[others] - lf[m - 1] - lf[t.astype(int)] - lf[(n - m - t).astype(int)]
                    + (m - 1) * log_clone + t * log_out + (n - m - t) * log_rest)
        not_pi = 2.0 * t / ((e0 + 1.0) * m + 2.0 * t)  # 1 − π
        pi = 1.0 - not_pi
        log_w = math.log((e0 + 1.0) * q) + log_mult - np.log(pi)
        h = np.arange(0, m + 1, dtype=float)
        log_b = lf[m] - lf[h.astype(int)] - lf[(m - h).astype(int)] - m * math.log(2.0)
        y = np.abs(2.0 * h - m) / m
        big = 1.0 + pi[:, None] * kappa * y[None, :]  # 1 + π·κ·|y|
        small = not_pi[:, None] + pi[:, None] * ((1.0 - y) + y * one_minus_kappa)[None, :]  # 1 − π·κ·|y|
        up = (2.0 * h >= m)[None, :]  # y >= 0: P has the larger factor
        base = log_w[:, None] + log_b[None, :]
        log_big, log_small = np.log(big), np.log(small)
        losses.append(np.where(up, log_big - log_small, log_small - log_big).ravel())
        log_ps.append((base + np.where(up, log_big, log_small)).ravel())
        log_qs.append((base + np.where(up, log_small, log_big)).ravel())
    loss = np.concatenate(losses)
    order = np.argsort(loss, kind="stable")
    return SmallBlanket(float(eps0), n, loss[order], np.concatenate(log_ps)[order], np.concatenate(log_qs)[order])


@functools.lru_cache(maxsize=256)
def small_krr_epsilon(eps0: float, d: int, n: int, delta: float) -> float:
    """The central ε at ``delta`` of 2 <= n < :data:`SMALL_MAX` shuffled reports of k-RR over d >= 3 values at ε₀:
    the blanket pair's, summed exactly (module docstring). Valid for every dataset; non-increasing in n and in δ.
    Cached."""
    return small_blanket(float(eps0), d, n).epsilon(float(delta))
