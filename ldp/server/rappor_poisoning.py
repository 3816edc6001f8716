"""Poisoning laws of RAPPOR (both modes): the 1 bits per cohort and in total, and per report their number and
which of them are set together.

A client's Bloom filter ``B_u`` has ``B`` set bits, ``1 <= B <= h`` (``h`` hash functions over ``k`` bits; fewer
than ``h`` when two hashes collide; the same in ``ldp`` and Google mode). A fresh client's report has each bit of
``B_u`` 1 with probability ``q*`` and each other bit 1 with ``p*`` (the PRR and IRR coins combined, ``q* > p*``),
independently, whatever its value. So:

* **Totals** (aggregate). A report's number of 1s is ``Binomial(B, q*) + Binomial(k − B, p*)``: mean
  ``k·p* + B(q* − p*)``, variance ``B·q*(1 − q*) + (k − B)·p*(1 − p*)``. ``B`` depends on the value, which the
  server does not know; both moments are linear in ``B``, so for ``N`` reports the total of 1s has mean in
  ``[N·μ(1), N·μ(h)]`` and variance at most ``N·max(σ²(1), σ²(h))``. The tests check the total against that range
  (:func:`~ldp.server.poisoning.range_check`), per cohort (the most extreme cohort, Bonferroni over the ``m``
  cohorts) and over all cohorts.
* **1s per report** (reports). That law ``P_B`` is stochastically increasing in ``B`` (a ``q*`` coin in place of
  a ``p*`` one), so every honest report, whatever its value, has ``P(ones <= L) <= P_1(ones <= L)``,
  ``P(ones >= U) <= P_h(ones >= U)`` and ``P(ones = l) <= max_B P_B(l)``. The *tails* test counts the reports
  with at most ``L`` or at least ``U`` ones (``L``, ``U``: the farthest counts whose tail bound is at most
  :data:`TAIL`); the *spike* test counts, for each ``l`` in ``0..k``, the reports with exactly ``l`` ones. Each
  count is dominated by a binomial with the bound as probability (exact one-sided test; the spike is the most
  extreme of ``k + 1``, Bonferroni). Unpadded fake reports fall in a tail or pile up on a few counts; fake
  reports padded to one typical count pile up on it.
* **Bits set together** (reports). For a set ``S`` of ``s >= h`` bits of one cohort's space, an honest report
  has all of ``S`` set with probability ``q*^j·p*^(s−j)`` for the ``j <= h`` bits of ``S`` in its filter, so at
  most ``π(s) = q*^h·p*^(s−h)``. The fold splits the reports by coins of its own; per cohort, bits that the
  reports of one side set together are chosen, and ``X`` counts the reports of the other side that have every
  chosen bit of their cohort set (:mod:`ldp.batch.rappor_evidence`: the choice never sees a tested report). So
  honest ``X`` is dominated by ``Binomial(N, π(s))`` for the ``N`` reports tested (exact one-sided test;
  Bonferroni over the sizes). A maximal gain attack sets every target's bits in its reports, whatever number of
  1s it pads to: those bits are set together, are chosen, and every fake report tested counts.

**Where they run.** The fold keeps the 1s per report as a histogram and the counts ``N`` and ``X``
(:meth:`~ldp.decoders.rappor.RapporAggregate.report_layout`), so every check runs from the aggregate: on the
collector's dashboard and in ``ldp decode`` as at fold time. Reports given beside such an aggregate add nothing.
An aggregate that holds no per-report statistics (simulated without reports, or written before they existed) is
tested by its totals alone.

The laws are those of one report per client: a client's repeated reports share its PRR, so their totals vary more
than the bound says and its reports set the same bits together (count a client once per window, or expect more
false alarms).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from ldp.batch.rappor_evidence import BitsTogether, cooccurrence_sizes
from ldp.batch.rappor_pairs import PairChoice, pair_cells_shape, pairs_enabled
from ldp.decoders.rappor import RapporAggregate
from ldp.encoders.rappor import RapporParams
from ldp.server.poisoning import LawCheck, ReportLaw, binomial_excess_check, range_check

__all__ = ["PAIR_MIN", "RapporLaw", "TAIL", "cohort_reports_check", "cooccurrence_bound", "cooccurrence_sizes",
           "pair_fake_law", "pair_law_check", "pair_likelihood_ratio", "pair_type_laws", "pair_types",
           "rappor_ones_bounds", "rappor_ones_pmfs", "rappor_ones_tails", "report_pair_cells", "report_statistics",
           "sum_of_dominated_sf"]

TAIL = 1e-3
"""Each tail the tails test counts has honest probability at most this per report."""


def rappor_ones_bounds(params: Any) -> tuple[float, float, float]:
    """``(lowest mean, highest mean, highest variance)`` of the number of 1s in one honest report, over the
    possible ``B`` in ``[1, h]``."""
    k, h, ps, qs = params.num_bloombits, params.num_hashes, params.p_star, params.q_star
    means = [k * ps + b * (qs - ps) for b in (1, h)]
    variances = [b * qs * (1 - qs) + (k - b) * ps * (1 - ps) for b in (1, h)]
    return min(means), max(means), max(variances)


def rappor_ones_pmfs(params: Any) -> npt.NDArray[np.float64]:
    """``(h, k + 1)``: row ``B − 1`` is the law of the 1s of an honest report whose filter has ``B`` set bits,
    ``Binomial(B, q*) + Binomial(k − B, p*)``."""
    k, h, ps, qs = params.num_bloombits, params.num_hashes, params.p_star, params.q_star
    out = np.empty((h, k + 1))
    for b in range(1, h + 1):
        out[b - 1] = np.convolve(stats.binom.pmf(np.arange(b + 1), b, qs),
                                 stats.binom.pmf(np.arange(k - b + 1), k - b, ps))
    return out


def rappor_ones_tails(params: Any) -> tuple[int, int, float]:
    """``(L, U, bound)``: ``L`` the largest count with ``P_1(ones <= L) <= TAIL`` (−1 if none), ``U`` the smallest
    with ``P_h(ones >= U) <= TAIL`` (``k + 1`` if none), and the sum of the two tail bounds: an honest report has
    at most ``L`` or at least ``U`` ones with probability at most ``bound``."""
    pmfs = rappor_ones_pmfs(params)
    low_cdf = np.cumsum(pmfs[0])
    high_sf = np.cumsum(pmfs[-1][::-1])[::-1]
    lows = np.flatnonzero(low_cdf <= TAIL)
    highs = np.flatnonzero(high_sf <= TAIL)
    low = int(lows[-1]) if lows.size else -1
    high = int(highs[0]) if highs.size else pmfs.shape[1]
    bound = (float(low_cdf[low]) if low >= 0 else 0.0) + (float(high_sf[high]) if high < pmfs.shape[1] else 0.0)
    return low, high, min(bound, 1.0)


def cooccurrence_bound(params: Any, s: int) -> float:
    """``π(s) = q*^j·p*^(s−j)``, ``j = min(h, s)``: the most probable an honest report has ``s`` given bits of its
    cohort's space all set (its filter holds at most ``j`` of them; ``q* > p*``)."""
    j = min(params.num_hashes, s)
    return float(params.q_star ** j * params.p_star ** (s - j))


def report_statistics(params: Any, columns: Mapping[str, Any], rng: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """``(ones_hist, together)`` of one window's reports, as the fold keeps them
    (:class:`~ldp.batch.rappor_evidence.BitsTogether`, its split drawn from ``rng``, fresh entropy by default; the
    columns are not validated)."""
    layout = RapporAggregate.report_layout(params)
    hist, together = (np.zeros(layout[name][1], layout[name][0]) for name in ("ones_hist", "together"))
    cohorts = np.asarray(columns["cohort"]).reshape(-1)
    rows = np.asarray(columns["bits"], dtype=np.uint8)
    if rows.ndim != 2 or rows.shape[0] != cohorts.size:
        raise ValueError(f"cohort and bits must have one row per report, got {cohorts.shape} and {rows.shape}")
    BitsTogether(params, rng).add(cohorts, rows, hist, together)
    return hist, together


PAIR_MIN = 200
"""Tested reports a cohort needs (in its first slot) for its pairs to enter the promoted-pair test."""


def pair_types(params: Any) -> list[tuple[int, int, int]]:
    """The honest filters as a pair ``(a, b)`` of bits sees them: ``(α, β, j)``, ``α``, ``β`` whether the filter
    holds ``a``, ``b`` and ``j`` how many other bits it holds; ``1 <= α + β + j <= h`` (``j <= k − 2``)."""
    k, h = params.num_bloombits, params.num_hashes
    return [(al, be, j) for al in (1, 0) for be in (1, 0) for j in range(min(h - al - be, k - 2) + 1)
            if al + be + j >= 1]


def _cells(pa: float, pb: float, rest: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The law over the cells ``(x_a, x_b, R)`` of independent ``x_a ~ Bernoulli(pa)``, ``x_b ~ Bernoulli(pb)``
    and ``R ~ rest``."""
    return np.concatenate([(pa if xa else 1 - pa) * (pb if xb else 1 - pb) * rest for xa in (0, 1) for xb in (0, 1)])


def pair_type_laws(params: Any) -> npt.NDArray[np.float64]:
    """``(types, 4(k − 1))``: for each of :func:`pair_types`, the law of an honest report's cell ``(x_a, x_b, R)``
    (:func:`ldp.batch.rappor_pairs.cell_of`): given its filter the bits are independent, ``q*`` inside and ``p*``
    outside, so ``x_a ~ Bernoulli(q* if α else p*)``, likewise ``x_b``, and ``R ~ Binomial(j, q*) +
    Binomial(k − 2 − j, p*)``. Every honest report's cell follows one of these, whatever its value."""
    k, ps, qs = params.num_bloombits, params.p_star, params.q_star
    out = []
    for al, be, j in pair_types(params):
        rest = np.convolve(stats.binom.pmf(np.arange(j + 1), j, qs),
                           stats.binom.pmf(np.arange(k - 2 - j + 1), k - 2 - j, ps))
        out.append(_cells(qs if al else ps, qs if be else ps, rest))
    return np.asarray(out)


def pair_fake_law(params: Any) -> npt.NDArray[np.float64]:
    """``(4(k − 1),)``: the cell of a fake report that sets both bits and draws its number of 1s ``L`` from the
    honest law of a full filter (``P_h``): ``x_a = x_b = 1``, ``R = max(L − 2, 0)``."""
    k = params.num_bloombits
    law = rappor_ones_pmfs(params)[-1]
    rest = np.zeros(k - 1)
    rest[0] = law[:3].sum()
    rest[1:] = law[3:]
    return _cells(1.0, 1.0, rest)


def _log_likelihood(w: npt.NDArray[np.float64], laws: npt.NDArray[np.float64],
                    counts: npt.NDArray[np.float64]) -> float:
    mix = w @ laws
    return float(counts @ np.log(np.maximum(mix, 1e-300)))


FIT_GAP = 1e-3
"""A fit stops once its log-likelihood is within this of the best (:func:`_gap`); ratios are computed net of it."""


def _gap(w: npt.NDArray[np.float64], laws: npt.NDArray[np.float64], counts: npt.NDArray[np.float64]) -> float:
    """An upper bound on the best log-likelihood over the simplex minus that of ``w``: ``N·log(max_t D_t / N)``,
    ``D_t = Σ_i c_i·A_ti / mix_i`` (Jensen: ``ℓ(w*) − ℓ(w) <= N·log Σ_t w*_t·D_t/N``), 0 at the optimum."""
    n = counts.sum()
    d = laws @ (counts / np.maximum(w @ laws, 1e-300))
    return float(max(n * np.log(max(float(d.max()), 1e-300) / n), 0.0))


def _em(w: npt.NDArray[np.float64], laws: npt.NDArray[np.float64], counts: npt.NDArray[np.float64],
        steps: int) -> npt.NDArray[np.float64]:
    n = counts.sum()
    for _ in range(steps):
        w = w * (laws @ (counts / np.maximum(w @ laws, 1e-300))) / n
    return w


def _fit(counts: npt.NDArray[np.float64], laws: npt.NDArray[np.float64],
         start: npt.NDArray[np.float64] | None = None) -> tuple[float, float, npt.NDArray[np.float64]]:
    """``(ℓ, gap, w)``: mixture weights ``w`` of the rows of ``laws`` (a concave problem on the simplex) with
    log-likelihood ``ℓ`` of ``counts``, and :func:`_gap`, so the best is in ``[ℓ, ℓ + gap]``: a few EM steps from
    ``start`` (uniform by default), SLSQP from there, and more EM steps while the gap is above :data:`FIT_GAP`."""
    from scipy.optimize import minimize

    t, n = laws.shape[0], counts.sum()
    w = _em(np.full(t, 1.0 / t) if start is None else np.asarray(start, np.float64).copy(), laws, counts, 20)

    def loss(v: npt.NDArray[np.float64]) -> float:
        return -_log_likelihood(v, laws, counts) / n

    def grad(v: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        out: npt.NDArray[np.float64] = -(laws @ (counts / np.maximum(v @ laws, 1e-300))) / n
        return out

    res = minimize(loss, w, jac=grad, method="SLSQP", bounds=[(0.0, 1.0)] * t,
                   constraints=[{"type": "eq", "fun": lambda v: v.sum() - 1.0, "jac": lambda v: np.ones_like(v)}],
                   options={"ftol": 1e-12, "maxiter": 300})
    v = np.clip(res.x, 0.0, None)
    v = v / v.sum() if v.sum() > 0 else w
    best = max((_log_likelihood(w, laws, counts), w), (_log_likelihood(v, laws, counts), v), key=lambda b: b[0])[1]
    for _ in range(20):
        gap = _gap(best, laws, counts)
        if gap < FIT_GAP:
            break
        best = _em(best, laws, counts, 25)
    return _log_likelihood(best, laws, counts), _gap(best, laws, counts), best


def pair_likelihood_ratio(counts: npt.ArrayLike, laws: npt.NDArray[np.float64],
                          fake: npt.NDArray[np.float64]) -> float:
    """``2·(ℓ₁ − ℓ₀)``: the likelihood ratio of the cell counts of one cohort's slot, ``ℓ₀`` the best honest
    mixture (of ``laws``: :func:`pair_type_laws`), ``ℓ₁`` the best with a share of ``fake`` reports besides
    (:func:`pair_fake_law`, a weight ``>= 0``); 0 for no reports. Computed conservatively: ``ℓ₀`` at the upper
    bound of its fit (:func:`_gap`), ``ℓ₁`` at a feasible point's value (a lower bound)."""
    c = np.asarray(counts, np.float64)
    if c.sum() <= 0:
        return 0.0
    l0, gap, w0 = _fit(c, laws)
    if float(c @ (fake / np.maximum(w0 @ laws, 1e-300))) <= c.sum():
        return 0.0  # then the ratio is at most 2·gap (the gap of w0 with a zero fake share is unchanged): 0 reported
    l1, _, _ = _fit(c, np.vstack([laws, fake]), np.append(w0 * 0.95, 0.05))
    return float(max(2.0 * (l1 - l0 - gap), 0.0))  # the honest best at its upper bound: never an inflated ratio


def sum_of_dominated_sf(total: float, terms: int, slots: int, step: float | None = None) -> tuple[float, float, float]:
    """``(p, mean, sd)``: ``P(D_1 + … + D_c >= total)`` for ``c = terms`` independent ``D`` of survival
    ``min(1, slots·P(χ²₁ >= t))`` (each the largest of ``slots`` statistics each at most ``χ²₁``: Bonferroni), each
    ``D`` rounded up to a grid of ``step`` (so the ``p`` is never below the exact one), and the sum's mean and
    standard deviation on that grid."""
    if terms <= 0 or total <= 0:
        return 1.0, 0.0, 0.0
    from scipy.signal import fftconvolve

    step = step or max(0.02, total / 4000)
    top = int(np.ceil(total / step))
    grid = np.arange(top + 1) * step
    sf = np.minimum(1.0, slots * stats.chi2.sf(grid, 1))
    one = np.zeros(top + 1)
    one[1:] = sf[:-1] - sf[1:]  # D in (t_{i-1}, t_i] -> t_i
    one[0] = 1.0 - sf[0]
    one[top] += sf[top]  # beyond the grid: counted at its end (>= total)
    law = np.zeros(top + 1)
    law[0] = 1.0
    for _ in range(terms):
        full = np.clip(fftconvolve(law, one), 0.0, None)
        law = full[:top + 1].copy()
        law[top] += full[top + 1:].sum()
    # the mean and variance of one D on a long grid, for the check's z
    fine = np.arange(0, 200.0, 0.01)
    dsf = np.minimum(1.0, slots * stats.chi2.sf(fine, 1))
    mean1 = float(dsf.sum() * 0.01)
    second = float((2 * fine * dsf).sum() * 0.01)
    return float(min(1.0, law[top])), terms * mean1, float(np.sqrt(terms * max(second - mean1 ** 2, 0.0)))


def pair_law_check(params: Any, cells: npt.ArrayLike, alpha: float, reports: int) -> LawCheck:
    """The promoted-pair test (module docstring): per cohort with at least :data:`PAIR_MIN` tested reports, the
    largest of its slots' :func:`pair_likelihood_ratio`; ``T`` their sum, against the sum of independent laws of
    survival ``min(1, J·P(χ²₁ >= t))`` (:func:`sum_of_dominated_sf`). ``reports``: the window's reports."""
    pr = params.protocol
    c = np.asarray(cells, dtype=np.int64)
    laws, fake = pair_type_laws(params), pair_fake_law(params)
    used = np.flatnonzero(c[:, 0].sum(axis=1) >= PAIR_MIN)
    slots = c.shape[1]
    ratios = [max(pair_likelihood_ratio(c[g, j], laws, fake) for j in range(slots)) for g in used.tolist()]
    total = float(sum(ratios))
    p, mean, sd = sum_of_dominated_sf(total, len(ratios), slots)
    from ldp.server.poisoning import _check_alpha, _verdict

    alpha = _check_alpha(alpha)
    verdict = _verdict(p, alpha) if ratios else "ok"
    tested = int(c[used, 0].sum()) if used.size else 0
    worst = f"; largest {max(ratios):.1f} (cohort {int(used[int(np.argmax(ratios))])})" if ratios else ""
    z = (total - mean) / sd if sd > 0 else 0.0
    msg = (f"{pr}: pairs of bits set together beyond every honest mixture: likelihood ratio {total:,.1f} over "
           f"{len(ratios)} cohorts' {slots} chosen pairs ({tested:,} reports tested{worst}; p <= {p:.2g}, "
           f"{verdict} at {alpha:g})" if ratios else
           f"{pr}: pairs of bits set together: no cohort has {PAIR_MIN} reports tested yet (ok at {alpha:g})")
    return LawCheck("pair_law", pr, int(reports), total, mean, sd, float(z), p, alpha, verdict, msg)


def cohort_reports_check(params: Any, cohort_n: npt.ArrayLike, alpha: float) -> LawCheck:
    """The reports of the most populous cohort against ``Binomial(n, 1/m)``: clients take their cohort uniformly
    at random, so the cohorts' counts are ``Multinomial(n, 1/m, …)`` and each is ``Binomial(n, 1/m)``; exact
    one-sided test of the largest, Bonferroni over the ``m`` cohorts."""
    counts = np.asarray(cohort_n, dtype=np.int64)
    n, m = int(counts.sum()), counts.size
    top = int(np.argmax(counts))
    return binomial_excess_check("cohort_reports", params.protocol, n, int(counts[top]), n, 1.0 / m, alpha,
                                 f"reports in cohort {top}, the most populous of {m}", tests=m)


def report_pair_cells(params: Any, columns: Mapping[str, Any], rng: Any = None) -> npt.NDArray[np.int64]:
    """The pair cells of one window's reports, as the fold keeps them (:class:`~ldp.batch.rappor_pairs.PairChoice`,
    its split drawn from ``rng``, fresh entropy by default; the columns are not validated)."""
    cells = np.zeros(pair_cells_shape(params), np.int64)
    PairChoice(params, rng).add(np.asarray(columns["cohort"]).reshape(-1), np.asarray(columns["bits"], np.uint8),
                                cells)
    return cells


def _pairs_recorded(aggregate: Any) -> bool:
    """Whether the aggregate's fold kept pair cells, and they are counts a fold can make (none negative, each
    cohort's slot at most its reports, the slots of a cohort alike)."""
    cells = getattr(aggregate, "pair_cells", None)
    if cells is None or cells.size == 0 or not pairs_enabled(aggregate.params):
        return False
    per = cells.sum(axis=2)
    return bool(cells.min() >= 0 and per.sum() > 0 and (per <= aggregate.cohort_n[:, None]).all()
                and (per == per[:, :1]).all())


def _cohorts_counted(aggregate: Any) -> bool:
    """Whether the cohort-count test applies: more than one cohort, some reports, and no count negative."""
    counts = aggregate.cohort_n
    return bool(counts.size > 1 and counts.sum() > 0 and counts.min() >= 0)


def _recorded(aggregate: Any) -> bool:
    """Whether the aggregate's fold kept per-report statistics (of some of its reports at least), and they are
    counts a fold can make (none negative, at most ``n`` reports, ``0 <= X_s <= N <=`` the reports counted): a
    file's arrays are not otherwise checked, so others are left out (its totals are still tested)."""
    hist, together = aggregate.ones_hist, aggregate.together
    counted = int(hist.sum())
    return bool(0 < counted <= aggregate.n and hist.min() >= 0 and 0 <= together[0] <= counted
                and (together[1:] >= 0).all() and (together[1:] <= together[0]).all())


class RapporLaw(ReportLaw):
    """RAPPOR: the total of 1s, over every cohort and in the most extreme cohort, against its honest range; the
    tails and the spikes of the 1s per report, and bits set together per cohort, from the per-report statistics
    the fold keeps (or from the reports)."""

    params_type = RapporParams

    def aggregate_check_count(self, aggregate: Any) -> int:
        return 2 + int(_cohorts_counted(aggregate)) + 3 * int(_recorded(aggregate)) + int(_pairs_recorded(aggregate))

    def report_check_count(self, params: Any) -> int:
        return 3 + int(pairs_enabled(params))

    def covers_reports(self, aggregate: Any) -> bool:
        return _recorded(aggregate)

    def aggregate_checks(self, aggregate: Any, alpha: float) -> list[LawCheck]:
        pr = aggregate.params
        lo, hi, var = rappor_ones_bounds(pr)
        n_c = aggregate.cohort_n.astype(np.float64)
        t_c = aggregate.ones.sum(axis=1).astype(np.float64)
        n = int(aggregate.n)
        total = range_check("ones_total", pr.protocol, n, float(t_c.sum()), n * lo, n * hi, n * var, alpha,
                            "total of 1 bits")
        per_report = (self.statistic_checks(pr, aggregate.ones_hist, aggregate.together, alpha)
                      if _recorded(aggregate) else [])
        if _cohorts_counted(aggregate):
            per_report.insert(0, cohort_reports_check(pr, aggregate.cohort_n, alpha))
        if _pairs_recorded(aggregate):
            per_report.append(pair_law_check(pr, aggregate.pair_cells, alpha, n))
        used = np.flatnonzero(n_c > 0)
        if used.size == 0:
            return [total, *per_report]
        m = used.size
        each = [range_check("ones_cohort", pr.protocol, int(n_c[c]), float(t_c[c]), n_c[c] * lo, n_c[c] * hi,
                            n_c[c] * var, alpha / m, f"cohort {c}'s total of 1 bits") for c in used]
        worst = min(each, key=lambda c: c.p_value)
        if m > 1:  # restate the worst cohort at the stated alpha (Bonferroni over the m cohorts)
            p = min(1.0, worst.p_value * m)
            verdict = "suspicious" if p < alpha else "ok"
            worst = LawCheck(worst.name, worst.protocol, worst.reports, worst.statistic, worst.expected, worst.std,
                             worst.z, p, alpha, verdict,
                             f"{worst.message.rsplit(' (', 1)[0]} (most extreme of {m} cohorts; Bonferroni "
                             f"p <= {p:.2g}, {verdict} at {alpha:g})")
        return [total, worst, *per_report]

    def report_checks(self, params: Any, columns: Mapping[str, Any], alpha: float) -> list[LawCheck]:
        checks = self.statistic_checks(params, *report_statistics(params, columns), alpha)
        if pairs_enabled(params):
            cells = report_pair_cells(params, columns)
            checks.append(pair_law_check(params, cells, alpha, int(np.asarray(columns["cohort"]).size)))
        return checks

    @staticmethod
    def statistic_checks(params: Any, hist: np.ndarray, together: np.ndarray, alpha: float) -> list[LawCheck]:
        """The tails and the spike of the 1s per report (``hist``: reports by number of 1s) and the bits set
        together (``together``: ``[N, X_s...]``), each at ``alpha``."""
        k, pr = params.num_bloombits, params.protocol
        counts = np.asarray(hist, dtype=np.int64)
        n = int(counts.sum())
        low, high, bound = rappor_ones_tails(params)
        where = " or ".join([f"<= {low}"] * (low >= 0) + [f">= {high}"] * (high <= k)) or "none at these parameters"
        in_tails = int(counts[:low + 1].sum() + counts[high:].sum())
        tails = binomial_excess_check("ones_tails", pr, n, in_tails, n, bound, alpha,
                                      f"reports in the tails of the 1 bits per report ({where})")
        top = rappor_ones_pmfs(params).max(axis=0)
        spike_at = int(np.argmin(stats.binom.sf(counts - 1, n, top)))
        spike = binomial_excess_check("ones_spike", pr, n, int(counts[spike_at]), n, float(top[spike_at]), alpha,
                                      f"reports with exactly {spike_at} 1 bits", tests=k + 1)
        sizes = cooccurrence_sizes(params)
        tested = int(together[0])
        each = [binomial_excess_check("bits_together", pr, n, int(x), tested, cooccurrence_bound(params, s), alpha,
                                      f"reports tested with all {s} bits chosen for their cohort set (sizes "
                                      f"{', '.join(map(str, sizes))})", tests=len(sizes))
                for s, x in zip(sizes, together[1:], strict=True)]
        return [tails, spike, min(each, key=lambda c: c.p_value)]
