"""Estimation for "pure" LDP frequency oracles (Wang, Blocki, Li & Jha, USENIX Security 2017).

A protocol is pure when each report *supports* a set of items and, for every item v,
``Pr[report supports v | input v] = p*`` and ``Pr[report supports v | input u != v] = q*``.
With ``C_v`` the number of n reports supporting v and ``f_v`` the true count of v:

* unbiased count estimate  ``ĉ_v = (C_v − n·q*) / (p* − q*)``;
* exact variance           ``Var[ĉ_v] = (f_v·p*(1−p*) + (n − f_v)·q*(1−q*)) / (p* − q*)²``
  (equivalently ``n·q*(1−q*)/(p*−q*)² + f_v·(1−p*−q*)/(p*−q*)``, Wang et al. Thm 2).

The standard error reported with an estimate plugs ``f̂_v = clip(ĉ_v, 0, n)`` into the exact variance.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["pure_count_estimate", "pure_count_variance"]


def pure_count_estimate(support_counts: npt.ArrayLike, n: float, p_star: float | npt.NDArray[np.float64],
                        q_star: float | npt.NDArray[np.float64]
                        ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Unbiased count estimates and their plug-in standard errors from support counts ``C_v``."""
    c = np.asarray(support_counts, dtype=np.float64)
    est = (c - n * q_star) / (p_star - q_star)
    var = pure_count_variance(np.clip(est, 0.0, n), n, p_star, q_star)
    return est, np.sqrt(var)


def pure_count_variance(true_counts: npt.ArrayLike, n: float, p_star: float | npt.NDArray[np.float64],
                        q_star: float | npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Exact ``Var[ĉ_v]`` (count scale) given the true counts ``f_v`` of n users (``n`` and the counts may be
    fractional: the planner's expected counts)."""
    f = np.asarray(true_counts, dtype=np.float64)
    return (f * p_star * (1.0 - p_star) + (n - f) * q_star * (1.0 - q_star)) / (p_star - q_star) ** 2
