"""The fixed grids that make one window's central ε monotone (issue 72): ε on a grid, δ rounded down to a grid.

A figure found by a numerical search moves in its last digits with anything that changes the search's path (n, δ).
Two fixed, input-independent grids remove that noise:

* **ε on a grid**: ε_j = exp(j·:data:`EPS_STEP`) (a relative step of 2·10⁻⁵). A search answers the smallest ε_j
  whose δ bound is at most δ. If the bound is non-increasing in n (more users: a post-processing of fewer) and in ε,
  the smallest such j is non-increasing in n, exactly, whatever path the search took to find it.
* **δ rounded down** (:func:`floor_delta`): to the largest 10^(-i/1000) at most δ (at most 0.23 % below δ). A
  figure valid at δ' <= δ is valid at δ. The bounds' truncations spend at most a 10⁻⁹ share of δ', far below the
  grid's ratio 10^(1/1000), so a figure at a larger grid δ is never above one at a smaller.

What is guaranteed and what is only very likely: the order holds exactly for the bounds' exact values; the
computed values are off by floating-point rounding and by truncations of a 10⁻⁹ share of δ, which can flip the order
of two neighbours only when a bound lands within that share of δ at a grid ε — for a bound whose ratio between
grid points is about 10⁻³ or more, a chance of about 10⁻⁶ per pair.

Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["EPS_STEP", "DELTA_MIN", "eps_at", "eps_index", "floor_delta", "grid_search", "check_delta"]

EPS_STEP = 2e-5
"""ln of the ratio between neighbouring grid values of ε."""
DELTA_MIN = 1e-300
"""The smallest δ the bounds are computed for (masses below about 10⁻³⁰⁸ are no longer normal floats)."""
_EPS_FLOOR = 1e-12
"""The smallest ε a search answers (a valid figure wherever the bound allows less)."""
_DELTA_STEPS = 1000
"""Grid values of δ per decade."""


def eps_at(j: int) -> float:
    """The j-th grid value of ε: exp(j·EPS_STEP)."""
    return math.exp(j * EPS_STEP)


def eps_index(eps: float) -> int:
    """The smallest j with ``eps_at(j) >= eps`` (``eps > 0``)."""
    j = math.ceil(math.log(eps) / EPS_STEP)
    while eps_at(j - 1) >= eps:
        j -= 1
    while eps_at(j) < eps:
        j += 1
    return j


def floor_delta(delta: float) -> float:
    """The largest 10^(-i/1000), i an integer, at most ``delta`` (0 < delta <= 1)."""
    i = math.ceil(-math.log10(delta) * _DELTA_STEPS - 1e-9)
    while 10.0 ** (-i / _DELTA_STEPS) > delta:
        i += 1
    while i > 0 and 10.0 ** (-(i - 1) / _DELTA_STEPS) <= delta:
        i -= 1
    return float(10.0 ** (-i / _DELTA_STEPS))


def check_delta(delta: float) -> float:
    """``delta`` as a float, refused (:class:`~ldp.errors.RefusalValueError`, code ``param_range``, a ValueError)
    unless a number in [10⁻³⁰⁰, 1)."""
    from ldp.errors import RefusalValueError

    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not (0.0 < delta < 1.0):
        raise RefusalValueError(f"δ must be in (0, 1), got {delta!r}", "param_range", param="delta", got=delta,
                                min_exclusive=0.0, max_exclusive=1.0)
    if delta < DELTA_MIN:
        raise RefusalValueError(f"δ must be at least 1e-300 (the privacy-loss masses are floats), got {delta!r}",
                                "param_range", param="delta", got=delta, min=DELTA_MIN, max_exclusive=1.0)
    return float(delta)


def grid_search(fails: Callable[[float], bool], guess: float, top: float) -> float:
    """The smallest grid ε in (0, ``top``) at which ``fails`` is false, for ``fails`` true below some point and false
    above (monotone), starting from ``guess`` (any positive float: the answer's neighbourhood); ``top`` itself
    if every grid ε below it fails. ``fails`` is called about log2 of the grid steps between the guess and the answer
    times two."""
    hi_cap = eps_index(top)  # grid values >= top are never asked
    lo_cap = eps_index(_EPS_FLOOR)  # the answer is never below this (it is a valid figure if it passes)
    j = max(min(eps_index(max(guess, _EPS_FLOOR)), hi_cap - 1), lo_cap)
    if fails(eps_at(j)):  # answer above j: gallop up
        lo, step = j, 1
        while True:
            hi = min(lo + step, hi_cap)
            if hi == hi_cap or not fails(eps_at(hi)):
                break
            lo, step = hi, step * 2
    else:  # answer at j or below: gallop down
        hi, step = j, 1
        while True:
            lo = max(hi - step, lo_cap)
            if lo == hi:
                return eps_at(hi)
            if fails(eps_at(lo)):
                break
            hi, step = lo, step * 2
    while hi - lo > 1:  # fails(lo) and not fails(hi) (hi == hi_cap: not asked)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fails(eps_at(mid)) else (lo, mid)
    return top if hi == hi_cap else eps_at(hi)
