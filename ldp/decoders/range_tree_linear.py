"""HH_B's server-side linear algebra: constrained inference on the tree, its adjoint, and the exact covariance of
any linear function of the node estimates (:mod:`ldp.decoders.range_tree`).

Levels are lists indexed ``l − 1`` for tree level ``l = 1..h``; level ``l`` holds ``B^l`` nodes (rows), optionally
with ``K`` columns (several inputs at once). The root (level 0) is the number of reports ``n``, known exactly.

Constrained inference (Hay, Rastogi, Miklau and Suciu, "Boosting the accuracy of differentially private histograms
through consistency", VLDB 2010, §4; per-level weights as in CKS 2019, §4.4) is the generalized least squares fit
of leaf counts to the node estimates ``y`` with diagonal weights ``w_l`` per level, under the root's constraint
``Σ leaves = n``; on a tree it takes two passes:

* up: ``z_h = y_h``; ``J_h = w_h``; for ``l = h−1..1``: ``J_l = w_l + J_{l+1}/B``, ``α_l = w_l/J_l`` and
  ``z_l = α_l·y_l + (1 − α_l)·Σ_{children} z`` (``z_l``: the best estimate of a node from its subtree's data,
  with information ``J_l``);
* down: ``s_0 = n``; for ``l = 1..h``: ``s_c = z_c + (s_parent − Σ_{siblings} z)/B``.

Both passes are linear, ``s = M·y + m·n``, and ``M·A = I`` for the tree's aggregation ``A`` (a consistent input comes
out unchanged), so ``E[y] = A·x`` gives ``E[s] = x``: the consistent estimates stay unbiased. For a query ``r = wᵀs``
the adjoint pass (:func:`adjoint`) gives ``Mᵀw`` (one coefficient per node) and the root's coefficient; the exact
variance of ``r`` is then the covariance of the node estimates (:func:`node_covariance`) as a quadratic form in those
coefficients, never forming ``M``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from ldp.encoders.range_tree import HHParams

__all__ = ["alphas", "consistent", "adjoint", "node_covariance", "LevelNoise", "children_sum", "expand", "fit_weights",
           "inverse_moment", "level_noise", "node_counts", "unconditional_rho"]

Floats = npt.NDArray[np.float64]


def children_sum(a: Floats, branching: int) -> Floats:
    """Each parent's sum over its ``B`` children (rows ``j·B .. j·B + B − 1``)."""
    return a.reshape(a.shape[0] // branching, branching, *a.shape[1:]).sum(axis=1)


def expand(a: Floats, branching: int) -> Floats:
    """Each parent's row repeated for its ``B`` children."""
    return np.repeat(a, branching, axis=0)


def alphas(weights: Sequence[float], branching: int) -> Floats:
    """``α_l`` (index ``l − 1``) of the up pass for per-node weights ``w_l`` (0 for a level without data; ``α_h``
    is 1: the leaves' own data)."""
    h = len(weights)
    out = np.ones(h)
    info = float(weights[-1])
    for lv in range(h - 2, -1, -1):
        info = float(weights[lv]) + info / branching
        out[lv] = float(weights[lv]) / info if info > 0 else 0.0
    return out


def consistent(y: Sequence[Floats], n: float | Floats, alpha: Floats, branching: int) -> list[Floats]:
    """The consistent node counts ``s_1..s_h`` from the node estimates ``y`` (module docstring)."""
    h = len(y)
    z: list[Floats] = [np.asarray(a, dtype=np.float64) for a in y]
    for lv in range(h - 2, -1, -1):
        z[lv] = alpha[lv] * z[lv] + (1.0 - alpha[lv]) * children_sum(z[lv + 1], branching)
    s: list[Floats] = []
    parent = np.asarray(n, dtype=np.float64)[None, ...]  # the root: one row
    for lv in range(h):
        gap = (parent - children_sum(z[lv], branching)) / branching
        s.append(z[lv] + expand(gap, branching))
        parent = s[-1]
    return s


def adjoint(w: Floats, alpha: Floats, branching: int, h: int) -> tuple[list[Floats], Floats]:
    """``(Mᵀw by level, root coefficient)`` for leaf weights ``w`` (``D`` rows, ``Q`` columns): the query
    ``wᵀs_h`` equals ``Σ_l ⟨coef_l, y_l⟩ + root·n`` for every input ``y``."""
    g = np.asarray(w, dtype=np.float64)
    zbar: list[Floats] = [np.zeros(0)] * h
    for lv in range(h - 1, -1, -1):  # the down pass, reversed
        d = children_sum(g, branching) / branching
        zbar[lv] = g - expand(d, branching)
        g = d
    root = g[0]
    coef: list[Floats] = [np.zeros(0)] * h
    for lv in range(h - 1):  # the up pass, reversed
        coef[lv] = alpha[lv] * zbar[lv]
        zbar[lv + 1] = zbar[lv + 1] + (1.0 - alpha[lv]) * expand(zbar[lv], branching)
    coef[h - 1] = zbar[h - 1]
    return coef, root


class LevelNoise:
    """One level's oracle noise: ``kind`` ``"oue"`` (independent supports) or ``"grr"`` (one output), realized
    ``p`` (own node) and ``q`` (each other node)."""

    def __init__(self, kind: str, p: float, q: float) -> None:
        self.kind, self.p, self.q = kind, p, q

    def null_variance(self) -> float:
        """``q(1−q)/(p−q)²``: the variance per report of a node nobody holds."""
        return self.q * (1.0 - self.q) / (self.p - self.q) ** 2


def _pair(x: Floats, y: Floats, diagonal: bool) -> Floats:
    """``xᵀy`` (``Q_x × Q_y``), or only its diagonal ``Σ_rows x·y`` (equal ``Q``)."""
    return (x * y).sum(axis=0) if diagonal else x.T @ y


def _outer(a: Floats, b: Floats, diagonal: bool) -> Floats:
    return a * b if diagonal else np.outer(a, b)


def node_covariance(u: Sequence[Floats], v: Sequence[Floats], counts: Sequence[Floats], n: float,
                    rho: Sequence[float], noise: Sequence[LevelNoise], diagonal: bool = False) -> Floats:
    """``Cov(Σ_l ⟨u_l, ŷ_l⟩, Σ_l ⟨v_l, ŷ_l⟩)`` (``Q_u × Q_v``; its diagonal only if ``diagonal``, ``u`` and ``v``
    then of equal ``Q``) of the ratio node estimates ``ŷ_l = (n/n_l)·(O_l − n_l·q)/(p − q)`` given the true node
    counts ``counts[l]`` (``c_u``) of ``n`` users, with ``ρ_l = n/n_l`` (given the level sizes) or ``E[n/n_l]``
    (over them):

        ``Cov(ŷ_u, ŷ_v) = [l = m]·ρ_l·K_l(u, v) + κ_lm·(n·c_{u∩v} − c_u·c_v)/(n − 1)``,

    ``κ_ll = ρ_l − 1``, ``κ_lm = −1`` (``l ≠ m``): the oracle's per-report covariance ``K_l`` over the level's
    users (OUE: diagonal ``(c_u·p(1−p) + (n − c_u)·q(1−q))/(p−q)²``; GRR adds ``−(q²n + q(p−q)(c_u + c_v))/(p−q)²``
    off the diagonal), and the multivariate hypergeometric split of the users among the levels (the levels'
    users are a uniform partition of sizes ``n_l``). Nested nodes have ``c_{u∩v}`` the smaller one's count, others
    0. A level without reports (``ρ_l = inf``) must have zero coefficients: it is skipped."""
    h = len(counts)
    leaves = counts[-1]
    qu, qv = u[0].shape[1], v[0].shape[1]
    out = np.zeros(qu if diagonal else (qu, qv))
    au, av = np.zeros((leaves.size, qu)), np.zeros((leaves.size, qv))
    tu, tv = np.zeros(qu), np.zeros(qv)
    for lv in range(h):
        c, ul, vl = counts[lv], u[lv], v[lv]
        if not (ul.any() or vl.any()):
            continue
        rep = leaves.size // c.size
        au += np.repeat(ul, rep, axis=0)
        av += np.repeat(vl, rep, axis=0)
        cu, cv = c @ ul, c @ vl
        tu += cu
        tv += cv
        r = float(rho[lv])
        nz = noise[lv]
        p, q = nz.p, nz.q
        dd = (p - q) ** 2
        diag = (c * p * (1 - p) + (n - c) * q * (1 - q)) / dd
        if nz.kind == "grr":
            diag = diag + (q * q * n + 2 * q * (p - q) * c) / dd
            su, sv = ul.sum(axis=0), vl.sum(axis=0)
            out -= r * (q * q * n * _outer(su, sv, diagonal)
                        + q * (p - q) * (_outer(cu, sv, diagonal) + _outer(su, cv, diagonal))) / dd
        out += r * _pair(ul, diag[:, None] * vl, diagonal)
        if n > 1:  # the split among levels: ρ_l·(…) on the level, −(…) on every pair of levels (below)
            out += r * (n * _pair(ul, c[:, None] * vl, diagonal) - _outer(cu, cv, diagonal)) / (n - 1)
    if n > 1:
        out -= (n * _pair(au, leaves[:, None] * av, diagonal) - _outer(tu, tv, diagonal)) / (n - 1)
    return out


@lru_cache(maxsize=256)
def inverse_moment(n: int, pi: float) -> float:
    """``E[n/N | N ≥ 1]`` for ``N ~ Binomial(n, π)``: the binomial law summed over ``N`` within 40 standard
    deviations of its mean (the rest has probability below 1e-300), ``inf`` when ``π = 0``."""
    from scipy import stats

    if pi <= 0.0 or n < 1:
        return float("inf")
    if pi >= 1.0:
        return 1.0
    mean, sd = n * pi, (n * pi * (1 - pi)) ** 0.5
    lo, hi = max(1, int(mean - 40 * sd - 2)), min(n, int(mean + 40 * sd + 2))
    k = np.arange(lo, hi + 1, dtype=np.float64)
    pmf = stats.binom.pmf(k, n, pi)
    return float(n * (pmf / k).sum() / -np.expm1(n * np.log1p(-pi)))


def level_noise(params: HHParams) -> list[LevelNoise]:
    """Each level's oracle kind and realized ``p``, ``q``."""
    out = []
    for lv in range(1, params.depth + 1):
        o = params.level_oracle(lv)
        out.append(LevelNoise(params.oracle_kinds[lv - 1], o.p, o.q))
    return out


def fit_weights(params: HHParams, level_sizes: Any = None) -> list[float]:
    """The constrained inference's per-node weight of each level, ``π_l/V0_l`` (0 for a level without reports)."""
    noise = level_noise(params)
    w = [pi / nz.null_variance() for pi, nz in zip(params.level_probabilities, noise, strict=True)]
    if level_sizes is not None:
        w = [wl if int(s) > 0 else 0.0 for wl, s in zip(w, level_sizes, strict=True)]
    return w


def node_counts(params: HHParams, leaves: Any) -> list[Floats]:
    """The counts of every node, level by level, from the counts of the buckets."""
    out = [np.asarray(leaves, dtype=np.float64)]
    for _ in range(params.depth - 1):
        out.append(children_sum(out[-1], params.branching))
    return out[::-1]


def unconditional_rho(params: HHParams, n: int) -> list[float]:
    """``E[n/n_l | n_l ≥ 1]`` per level (:func:`inverse_moment`)."""
    return [inverse_moment(int(n), float(pi)) for pi in params.level_probabilities]
