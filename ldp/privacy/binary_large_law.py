"""Binary randomized response over windows at any n: one privacy-loss law that every dataset's is a post-processing
of, from :mod:`ldp.privacy.binary_large`'s bounds (issue 88, item 3).

The construction is :meth:`ldp.privacy.binary_shuffle.WorstCase.hull_losses`'s: it needs, at a set of ε >= 0 (the
levels), an upper bound on every dataset's δ in both directions, and returns the connect-the-dots law (Doroshenko,
Ghazi, Kamath, Kumar and Manurangsi, PETS 2022) of the lower convex hull of those bounds in x = e^ε, the δ of one
pair that dominates them all. Any set of levels is valid: a pair's δ is convex in x, so between two levels it lies
below the chord of its values there, hence below the chord of the bounds; fewer levels only make the law coarser.

The datasets: the intervals of :func:`~ldp.privacy.binary_intervals.interval_cuts` but its finest near 0 (1/40 of
the others each, and 1/64, 1/128, 1/256 of them from 0; any cover is valid), each at its dominating dataset, in
both directions. The bounds are :func:`~ldp.privacy.binary_large.bound_at`'s, read in groups: for one dataset the
levels' thresholds within two deviations of one tilt are read at that tilt together, and a level whose threshold is
not bracketed there gets :func:`~ldp.privacy.binary_large.delta_bound` alone. The levels: 0, 60 even steps and 60
geometric ones (from 1/100 of the top) up to 5 % above the ε at which the first dataset's δ is 10⁻³·``tail``, and
ε₀ (the chord from the top to ε₀ puts less than that mass at loss ε₀, which the composition charges at +∞).

Server side: numpy, imported when a function is called.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from ldp.privacy.binary_large import (
    Side,
    _approx,
    _components,
    _log_r,
    _ratio,
    _read,
    _tilt,
    bound_at,
    bracket,
    delta_bound,
)

__all__ = ["delta_bounds", "window_law"]

_WINDOW = 3
"""Each level's threshold is looked for within this many points of its guess."""
_LEVELS = 60
"""Levels of ε evenly spaced, and as many geometric, up to the top (module docstring)."""


def delta_bounds(side: Side, levels: Any) -> Any:
    """Upper bounds on δ(P‖Q) of the dataset at each ε of ``levels`` (increasing), as
    :func:`~ldp.privacy.binary_large.delta_bound`'s but read in groups (module docstring)."""
    import numpy as np

    top = math.log(side.p / side.q)
    out = np.zeros(levels.size)
    todo = [i for i in range(levels.size) if levels[i] < top]  # above ε₀: δ = 0
    ratios = {i: _ratio(side, float(levels[i]))[2] for i in todo}
    centre = {i: float(sum(n * c for n, _, c, _ in _components(side, ratios[i]))) + 0.5 for i in todo}
    floor = 1 / math.sqrt(max(sum(n * c * cc for n, _, c, cc in _components(side, 0.0)), 1.0))
    while todo:
        first = centre[todo[0]]
        s = max(_tilt(side, first - 0.5), floor)
        reach = 2 * math.sqrt(max(sum(n * c * cc for n, _, c, cc in _components(side, s)), 1.0))
        group = [i for i in todo if centre[i] - first <= reach]
        s = max(_tilt(side, (first + centre[group[-1]]) / 2 - 0.5), floor)
        guesses = {i: int(round(centre[i])) for i in group}
        ks = np.unique(np.concatenate([np.arange(g - _WINDOW, g + _WINDOW + 1) for g in guesses.values()]))
        rd = _read(side, s, ks)
        lo, hi = _log_r(side, rd)
        for i in group:
            at = int(np.searchsorted(ks, guesses[i] - _WINDOW))
            got = bracket(lo[at:at + 2 * _WINDOW + 1], hi[at:at + 2 * _WINDOW + 1], ratios[i])
            eps = float(levels[i])
            out[i] = bound_at(side, eps, rd, at + got[0], at + got[1]) if got else delta_bound(side, eps)
        todo = [i for i in todo if i not in group]
    return out


@functools.lru_cache(maxsize=16)
def window_law(eps0: float, n: int, delta: float, tail: float) -> tuple[Any, Any, float]:
    """The connect-the-dots law (losses, masses under P, mass at +∞) of one pair that every dataset of the n − 1
    others is a post-processing of, in either direction, for binary RR of ε₀ (module docstring); its losses below
    −(the top level) are moved up to it. ``delta`` sets the levels' scale (the figure's ε there), ``tail`` their top
    (module docstring). Cached."""
    import numpy as np

    from ldp.privacy.binary_shuffle import WorstCase

    p = 1.0 / (1.0 + math.exp(-eps0))
    top = (n + 1) // 2  # the intervals of interval_cuts but the finest: any cover of [0, top) is valid
    cuts = sorted({k * (n + 1) // 40 for k in range(20)} | {(n + 1) // 2**j for j in (6, 7, 8)} | {top})
    pairs = zip(cuts[:-1], cuts[1:], strict=True)
    sides = [s for lo, end in pairs for s in (Side(lo, n - end, p), Side(n - end, lo, p))]
    scale = _approx(sides[0], delta, 1e-3 * eps0, eps0)
    high = min(_approx(sides[0], max(tail * 1e-3, 1e-306), scale, eps0) * 1.05, eps0)
    levels = np.unique(np.concatenate([[0.0], np.linspace(0.0, high, _LEVELS), np.geomspace(high / 100, high, _LEVELS),
                                       [eps0]]))
    profile = np.zeros(levels.size)
    for side in sides:
        profile = np.maximum(profile, delta_bounds(side, levels))
    found = WorstCase(scale, 0.0, delta, len(sides), np.array([-high]), None, 1.0, eps0, levels, profile)
    return found.hull_losses()
