"""Does the candidate model fit the n-gram reports? A goodness-of-fit check of rappor-ngrams' full-string
estimates on the n-gram margins, and the widening rule it triggers (issue 33 item 5).

The full-string counts ``ĉ_s`` of the candidates come from the full-string reports alone
(:meth:`~ldp.decoders.rappor_ngrams.RapporNgramsAggregate.estimate`, with its background column for the
clients outside the candidates). The n-gram reports are other reports of the same clients with independent
noise, and their dictionary is **complete**: every n-gram a padded string can hold at position ``i`` is a
column of that position's RAPPOR least squares
(:func:`~ldp.decoders.rappor_ngrams_discovery.possible_grams`), so their counts ``ĝ_{i,g}`` are unbiased
whatever strings the clients hold. Whatever the unlisted strings are, the clients holding the n-gram ``g``
at ``i`` include every candidate holding it there, so

    ``D_{i,g} = (n/m_i)·ĝ_{i,g} − Σ_{s: g_i(s)=g} ĉ_s``,  ``E[D_{i,g}]`` = clients of other strings with g at i ≥ 0

(``m_i`` of the ``n`` clients reported position ``i``; ``g_i(s)`` is candidate ``s``'s n-gram there). A
candidate model that gave the candidates mass they do not have makes ``D`` negative.

**The check** pools the cells: ``T = (1/P)·Σ_i Σ_{g ∈ G_i} D_{i,g}`` (``G_i`` the candidates' n-grams at ``i``)
is the n-gram mass on the candidates' n-grams less the candidates' total, ``E[T] ≥ 0`` when the candidates'
counts are unbiased. ``Var[T] = (1/P²)·Σ_i [(n/m_i)²·Σ_g SE²(ĝ_{i,g}) + (n²/m_i)·F_i(1−F_i)(1 − m_i/n)]
+ Σ_s SE²(ĉ_s)``: the n-gram fits, the random split of the clients over positions (hypergeometric, ``F_i`` the
share on ``G_i``), the full-string fit. Covariances between the estimates of one fit are left out (least-squares
estimates of columns sharing Bloom bits are negatively correlated, so the variance is if anything too large and
the check conservative), as is the correlation between positions through clients reporting two of them.
The model is **rejected** when ``z = T/SE(T) < −z_{1−α}`` (one-sided; ``α = 0.01`` by default).

**The widening rule**, applied only when the check rejects: candidate ``s``'s excess over its n-grams is
estimated by ``B_s = max(0, −D̄_s)``, ``D̄_s = (1/P)·Σ_i D_{i, g_i(s)}`` (its n-grams' cells: the mass the
candidates holding them have beyond what the n-gram reports give them), and its standard error becomes
``√(SE_s² + B_s²)``: the interval keeps the count and widens by the bias the n-grams allow. The counts are
not moved. When the check passes nothing changes.

The other side of the same reports: ``n − (n/m_i)·Σ_{g ∈ G_i} ĝ_{i,g}`` estimates how many clients hold an
n-gram no candidate holds at ``i``: a lower bound on the clients outside the candidates (it misses those sharing
the n-gram of a candidate there); ``ngram_outside`` is its mean over the positions checked, with the SE of that
mean (positions taken as independent).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ldp.decoders.rappor_decode import RapporEstimates, decode
from ldp.encoders.rappor_ngrams import gram_value

if TYPE_CHECKING:
    from ldp.decoders.rappor_ngrams import RapporNgramsAggregate

__all__ = ["NgramCheck", "ngram_check", "checked", "CHECK_ALPHA"]

logger = logging.getLogger(__name__)

CHECK_ALPHA = 0.01
"""The check's level: the candidate model is rejected when ``z < −z_{1−α}``."""


@dataclass(frozen=True)
class NgramCheck:
    """The n-gram check of one estimate (module docstring): ``z`` and ``p_value`` of the pooled test, its
    ``excess`` ``T`` with ``excess_se``, ``rejected`` at ``alpha``, each candidate's ``bias_bound`` ``B_s``,
    and per position the n-gram ``outside`` lower bound with its SE (``outside_se``); ``positions`` the
    positions checked."""

    z: float
    p_value: float
    excess: float
    excess_se: float
    rejected: bool
    alpha: float
    bias_bound: npt.NDArray[np.float64]
    outside: npt.NDArray[np.float64]
    outside_se: npt.NDArray[np.float64]
    positions: int

    def summary(self) -> dict[str, Any]:
        """The fields ``estimate`` adds to its ``summary`` (prefixed ``ngram_``)."""
        k = self.outside.size
        return {"ngram_check_z": self.z, "ngram_check_p": self.p_value, "ngram_excess": self.excess,
                "ngram_excess_se": self.excess_se, "ngram_misfit": self.rejected,
                "ngram_outside": float(self.outside.mean()),
                "ngram_outside_se": float(np.sqrt((self.outside_se ** 2).sum()) / k)}


def _position_counts(agg: RapporNgramsAggregate, i: int) -> tuple[dict[str, tuple[int, float, float]], int] | None:
    """Every possible n-gram's ``(group, count, SE)`` at position ``i`` (indistinguishable n-grams share one
    group, whose count is on its first member), and ``m_i``; ``None`` when the complete dictionary cannot be fitted
    (more n-grams than half the rows, or too many to list). Fitted once per position and state of ``agg``'s
    n-gram reports: it does not depend on the candidates checked."""
    return agg._derived_value(("ngram_check_position", i), lambda: _fit_position(agg, i))


def _fit_position(agg: RapporNgramsAggregate, i: int) -> tuple[dict[str, tuple[int, float, float]], int] | None:
    """:func:`_position_counts`, computed."""
    from ldp.decoders.rappor_ngrams_discovery import possible_grams

    pr = agg.params
    try:
        grams = possible_grams(pr, i)
    except ValueError:
        return None
    pos = agg.position_aggregate(i)
    rows = int((pos.cohort_n > 0).sum()) * pr.gram_bloombits
    if pos.n == 0 or 2 * len(grams) > rows:
        return None
    est = decode(pos, [gram_value(i, g) for g in grams], selection="none", adjusted_intervals=False)
    first = {name: j for j, name in enumerate(est.items)}
    out: dict[str, tuple[int, float, float]] = {}
    for j, g in enumerate(grams):
        dup = est.extra["duplicate_of"][j]
        k = j if dup is None else first[dup]
        out[g] = (k, float(est.count[k]), float(est.std_error[k]))
    return out, pos.n


def _encodable(pr: Any, s: str) -> bool:
    """Could a client hold ``s`` (alphabet, length)? The others are left out of the check: nobody holds them."""
    try:
        pr.grams(s)
    except ValueError:
        return False
    return True


def ngram_check(agg: RapporNgramsAggregate, est: RapporEstimates, alpha: float = CHECK_ALPHA) -> NgramCheck | None:
    """The check of ``est`` (the full-string estimates of ``agg``'s candidates) on ``agg``'s n-gram reports
    (module docstring); ``None`` when no position could be checked or no candidate has a count."""
    pr, n = agg.params, agg.n
    ok = np.isfinite(est.count) & np.isfinite(est.std_error) & np.array([_encodable(pr, s) for s in est.items])
    if n == 0 or not ok.any():
        return None
    cands = [s for s, good in zip(est.items, ok, strict=True) if good]
    count, se = est.count[ok], est.std_error[ok]
    grams = [pr.grams(s) for s in cands]
    t_sum, var_sum, outside, outside_se, checked_positions = 0.0, 0.0, [], [], 0
    cells: list[np.ndarray] = []
    for i in range(pr.positions):
        got = _position_counts(agg, i)
        if got is None:
            continue
        table, m = got
        scale = n / m
        at_i = [g[i] for g in grams]
        keys = dict.fromkeys(at_i)  # the distinct n-grams of the candidates at i
        reps = {table[g][0]: table[g][1:] for g in keys}  # once per group of indistinguishable n-grams
        mass = scale * sum(c for c, _ in reps.values())
        var_g = scale ** 2 * sum(s ** 2 for _, s in reps.values())
        share = min(max(mass / n, 0.0), 1.0)
        var_split = n * n / m * share * (1.0 - share) * (1.0 - m / n)
        t_sum += mass - float(count.sum())
        var_sum += var_g + var_split
        outside.append(n - mass)
        outside_se.append(float(np.sqrt(var_g + var_split)))
        d_cell = np.empty(len(cands))
        group = np.array([table[g][0] for g in at_i])
        held = {k: float(count[group == k].sum()) for k in reps}  # the candidates' count on each group
        for j, g in enumerate(at_i):
            d_cell[j] = scale * table[g][1] - held[table[g][0]]
        cells.append(d_cell)
        checked_positions += 1
    if not checked_positions:
        return None
    per_cand = np.column_stack(cells)
    p_count = checked_positions
    excess = t_sum / p_count
    excess_se = float(np.sqrt(var_sum / p_count ** 2 + float((se ** 2).sum())))
    z = excess / excess_se if excess_se > 0 else 0.0
    p_value = NormalDist().cdf(z)
    bound = np.zeros(len(est.items))
    bound[ok] = np.maximum(0.0, -per_cand.mean(axis=1))
    return NgramCheck(float(z), float(p_value), float(excess), excess_se, bool(p_value < alpha), alpha, bound,
                      np.array(outside), np.array(outside_se), p_count)


def checked(agg: RapporNgramsAggregate, est: RapporEstimates, alpha: float = CHECK_ALPHA) -> RapporEstimates:
    """``est`` with the n-gram check in its ``summary`` (:meth:`NgramCheck.summary`) and notes; when the check
    rejects, the standard errors widened by the rule of the module docstring and a warning logged."""
    check = ngram_check(agg, est, alpha)
    if check is None:
        return replace(est, notes=est.notes + ("the n-gram check could not run (no position's n-grams can all "
                                               "be fitted)",))
    summary = {**est.summary, **check.summary()}
    s = summary
    notes = [f"n-gram check: the candidates' n-grams hold {check.excess:+.0f} ± {check.excess_se:.0f} clients "
             f"beyond the candidates' counts (z = {check.z:.2f}, p = {check.p_value:.3g}); at least "
             f"{s['ngram_outside']:.0f} ± {s['ngram_outside_se']:.0f} clients hold an n-gram no candidate holds"]
    if not check.rejected:
        return replace(est, summary=summary, notes=est.notes + tuple(notes))
    widened = np.sqrt(est.std_error ** 2 + check.bias_bound ** 2)
    warning = (f"warning: the candidate model does not fit the n-gram reports (z = {check.z:.2f} < "
               f"{NormalDist().inv_cdf(check.alpha):.2f}): the candidates hold more clients than their n-grams do, "
               "so strings outside them were probably attributed to them; standard errors widened by each "
               f"candidate's excess over its n-grams (up to {np.nanmax(check.bias_bound):.0f} clients)")
    logger.warning("rappor-ngrams estimate: %s", warning.removeprefix("warning: "))
    summary["ngram_widened"] = True
    return replace(est, std_error=widened, summary=summary, notes=est.notes + (*notes, warning))
