"""Poisoning laws of RAPPOR (both modes): the 1 bits per cohort and in total, the reports per cohort, and per
report their number, which of them are set together, and the cells of each cohort's most suspicious pairs of bits.

A client's Bloom filter ``B_u`` has ``B`` set bits, ``1 <= B <= h`` (``h`` hash functions over ``k`` bits; fewer
than ``h`` when two hashes collide; the same in ``ldp`` and Google mode). A fresh client's report has each bit of
``B_u`` 1 with probability ``q*`` and each other bit 1 with ``p*`` (the PRR and IRR coins combined, ``q* > p*``),
independently, whatever its value. So:

* **Totals** (aggregate). A report's number of 1s is ``Binomial(B, q*) + Binomial(k − B, p*)``: mean
  ``k·p* + B(q* − p*)``, variance ``B·q*(1 − q*) + (k − B)·p*(1 − p*)``. ``B`` depends on the value, which the
  server does not know; both moments are linear in ``B``, so for ``N`` reports the total of 1s has mean in
  ``[N·μ(1), N·μ(h)]`` and variance at most ``N·max(σ²(1), σ²(h))``. The tests check the total against that range
  (:func:`~ldp.jobs.poisoning.range_check`), per cohort (the most extreme cohort, Bonferroni over the ``m``
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

* **Reports per cohort** (aggregate). Clients take their cohort uniformly at random, so the cohorts' counts are
  ``Multinomial(n; 1/m, …, 1/m)`` and each is ``Binomial(n, 1/m)``: the most populous cohort is tested exactly,
  ``p = m·P(Binomial(n, 1/m) >= N_max)`` (Bonferroni over the ``m`` cohorts; the enumerated multinomial keeps it at
  its level, ``tests/jobs/test_rappor_pairs.py``). Fake users who all report in one cohort (to concentrate
  their gain there) add to its count what no honest spread does.
* **Promoted pairs** (reports). Fake reports that set a target's bits and draw their number of 1s from the honest
  law pass the tests above. A pair ``(a, b)`` of one cohort's bits sees a report as a cell ``(x_a, x_b, R)``, ``R``
  its other 1s. Given its filter ``S`` an honest report's bits are independent, so its cell follows one of a few
  *type laws* (:func:`~ldp.jobs.rappor_pair_law.pair_type_laws`): ``x_a ~ Bernoulli(q* if a ∈ S else p*)``,
  likewise ``x_b``, ``R ~ Binomial(j, q*) + Binomial(k − 2 − j, p*)`` for the ``j = |S ∖ {a, b}|`` other bits,
  ``1 <= |S| <= h``. Whatever the values, the honest cells of a cohort's pair are independent draws each from a mixture
  of these laws: the *null* is every mixture, and no frequency need be known (the decoder's estimates are not used:
  a promoted string's holders are one of the types, ``S = {a, b}``, which the mixture may hold in any share). A fake
  report that sets both bits is a cell ``x_a = x_b = 1`` with ``R = L − 2``, ``L`` from the honest law ``P_h``: both
  bits always set (an honest holder sets each with ``q*`` only) and fewer other bits than a holder, whose ``R`` is
  ``Binomial(k − 2, p*)`` (:func:`~ldp.jobs.rappor_pair_law.pair_fake_law`). The test is the likelihood ratio
  ``2(ℓ₁ − ℓ₀)`` of a cell histogram, ``ℓ₀`` the best honest mixture and ``ℓ₁`` the best with a share of fake
  reports besides (:func:`~ldp.jobs.rappor_pair_law.pair_likelihood_ratio`). **Which pairs** are tested is chosen
  per cohort by the fold from reports the test never sees (:mod:`ldp.batch.rappor_pairs`: a fair coin of the
  server's per report; the pairs of largest likelihood ratio on the moments of the reports to choose from), and only
  the other reports are counted in the chosen pairs' cells. **Null law.** Given the choice, the tested cells of a
  cohort's pair are independent draws from some honest mixture, a model with the fake share on the boundary (0); the
  ratio is then asymptotically at most ``½χ²₀ + ½χ²₁`` (Chernoff 1954; Self and Liang 1987) and is taken as ``χ²₁``
  (twice that tail: a margin, not a proof, for honest shares on their own boundary, where the asymptotic law is a
  mixture of other weights). Per cohort the largest of its ``J`` slots
  has tail at most ``J·P(χ²₁ >= t)`` (Bonferroni); cohorts' tested reports are disjoint and independent, so ``T``,
  the sum over the cohorts with at least :data:`~ldp.jobs.rappor_pair_law.PAIR_MIN` tested reports, is dominated
  by the sum of independent laws of that tail, computed on a grid rounded up
  (:func:`~ldp.jobs.rappor_pair_law.sum_of_dominated_sf`): ``p = P(Σ D_c >= T)``. The fits are computed so the
  ratio is never inflated (the honest fit at an upper bound of its optimum). The law is asymptotic: the level holds
  up to the χ² approximation, checked on honest windows (200 at n = 20,000 in
  ``simulations/bench_rappor_poisoning.py``; 40 at n = 4,000 in the tests).

* **The candidates' own pairs** (aggregate and candidates: ``ldp decode``). Where the fold keeps every pair's
  cells (``pair_grid``, for ``m·(k + 1)³ <=`` :data:`~ldp.batch.rappor_pairs.GRID_LIMIT`: k = 16, m = 4 keeps
  19,652 counters), a candidate string ``s`` is tested on its own pair in each cohort (its first two distinct bits
  in hash order, :func:`~ldp.jobs.rappor_pair_law.candidate_pairs`: fixed before any report is seen; cohorts
  where its hashes give one bit, or with fewer than :data:`~ldp.jobs.rappor_pair_law.PAIR_MIN` reports, left
  out), over every report. Fake users take their cohort at random, so the fake share is the same in every cohort:
  ``T_s`` is the likelihood ratio of one share ``φ >= 0`` of fake cells in all the cohorts, each cohort's honest
  mixture free (:func:`~ldp.jobs.rappor_pair_law.common_share_ratio`). **Null law.** Cohorts' reports are
  disjoint and independent; given the pair, the cells of each are independent draws from some honest mixture, and
  the one tested parameter ``φ`` is on its boundary: ``T_s`` is asymptotically ``½χ²₀ + ½χ²₁`` and is taken as
  ``χ²₁`` (the same margin as the chosen pairs'; not a proof where honest shares are on their own boundary). The
  p-value is ``min(1, D·P(χ²₁ >= max_s T_s))``, Bonferroni over the ``D`` candidates with distinct pairs: every
  candidate is tested, so which ratios are computed (the 8 of largest score at the honest fit, the others counted
  0, a lower bound) may depend on the data without breaking the level. Elsewhere the fold keeps ``pair_bins``
  (:mod:`ldp.batch.rappor_pair_bins`): the same ratio on cells with ``L`` binned while there are at least 8 bins
  (beyond 16 cohorts, over the cohorts summed in 16 runs, :func:`~ldp.jobs.rappor_shared_share.pooled_cohorts`);
  with fewer bins beyond 16 cohorts, a sum over one half of the fold's reports with weights fitted on the other
  (cross-fitted, :func:`~ldp.jobs.rappor_cross_fit.cross_fit_scores`); a one-sided linear sum otherwise
  (:func:`~ldp.jobs.rappor_candidate_test.candidate_pair_check`). The exact cells of ``pair_grid`` beyond 16 cohorts
  are pooled the same way.
  No top candidates are chosen by their estimated
  frequency: that choice would use the tested data (a split would halve the reports). With the candidates, this
  check takes the chosen-pair test's place in the window's family (:func:`candidate_evidence`), so the family's
  size is unchanged. The level is checked on honest windows (200 at n = 20,000 in
  ``simulations/bench_rappor_poisoning.py``; 120 honest draws of 2 cohorts of tiny configurations and 3 windows
  in ``tests/jobs/test_rappor_candidate_pairs.py``).

**Where they run.** The fold keeps the 1s per report as a histogram, the counts ``N`` and ``X`` and the pair cells
(:meth:`~ldp.decoders.rappor.RapporAggregate.report_layout`), so every check runs from the aggregate: on the
ingest service's dashboard and in ``ldp decode`` as at fold time. Reports given beside such an aggregate add nothing.
An aggregate that holds no per-report statistics (simulated without reports, or written before they existed) is
tested by its totals and cohort counts alone; one written before the pair cells existed, by all but the pair
test.

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
from ldp.batch.rappor_pairs import PairChoice, grid_enabled, pair_cells_shape, pairs_enabled
from ldp.decoders.rappor import RapporAggregate
from ldp.encoders.rappor import RapporParams
from ldp.jobs.poisoning import (
    DEFAULT_ALPHA,
    Evidence,
    LawCheck,
    ReportLaw,
    _check_alpha,
    binomial_excess_check,
    range_check,
)
from ldp.jobs.rappor_candidate_test import candidate_pair_check
from ldp.jobs.rappor_pair_law import (
    PAIR_MIN,
    candidate_pairs,
    common_share_ratio,
    pair_fake_law,
    pair_law_check,
    pair_likelihood_ratio,
    pair_type_laws,
    pair_types,
    sum_of_dominated_sf,
)

__all__ = ["PAIR_MIN", "RapporLaw", "TAIL", "candidate_evidence", "candidate_evidence_summary", "candidate_pair_check",
           "candidate_source",
           "candidate_pairs", "cohort_reports_check", "common_share_ratio", "cooccurrence_bound", "cooccurrence_sizes",
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


def _grid_recorded(aggregate: Any) -> bool:
    """Whether the aggregate's fold kept every pair's cells (``pair_grid``) and they are counts a fold can make:
    none negative, each cohort's at most its reports, each pair's 1s together at most either bit's, each bit's at
    most its reports', and the reports with ``L`` ones holding ``L`` ones each (``Σ_i G[L, 0, i] = L·G[L, 0, 0]``)."""
    grid = getattr(aggregate, "pair_grid", None)
    if grid is None or grid.size == 0 or not grid_enabled(aggregate.params):
        return False
    g = np.asarray(grid, np.int64)
    n = g[:, :, 0, 0]
    ones = g[:, :, 0, 1:]
    both = g[:, :, 1:, 1:]
    k = g.shape[1] - 1
    return bool(g.min() >= 0 and n.sum() > 0 and (n.sum(axis=1) <= aggregate.cohort_n).all()
                and (ones <= n[:, :, None]).all() and (both <= ones[:, :, :, None]).all()
                and (both <= ones[:, :, None, :]).all()
                and (n[:, :, None, None] - ones[:, :, :, None] - ones[:, :, None, :] + both >= 0).all()
                and (ones.sum(axis=2) == np.arange(k + 1) * n).all())


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

    def aggregate_checks(self, aggregate: Any, alpha: float, *, pairs: bool = True) -> list[LawCheck]:
        """Every aggregate check at ``alpha`` (``pairs``: with the chosen-pair test when its cells are kept)."""
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
        if pairs and _pairs_recorded(aggregate):
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


def _bins_recorded(aggregate: Any) -> bool:
    """Whether the aggregate's fold kept ``pair_bins`` (:mod:`ldp.batch.rappor_pair_bins`) and they are counts a
    fold can make: none negative, each cohort's at most its reports, each pair's 1s together at most either bit's
    and the reports with neither at least 0, and each bin's 1s within its numbers of 1s times its reports."""
    from ldp.batch.rappor_pair_bins import ones_bins, pair_bins_shape, triangle_index

    stat = getattr(aggregate, "pair_bins", None)
    pr = aggregate.params
    if stat is None or stat.size == 0 or stat.shape != pair_bins_shape(pr):
        return False
    g = np.asarray(stat, np.int64)
    k = pr.num_bloombits
    full = g[:, :, triangle_index(k)]  # (m, B, k + 1, k + 1)
    n, ones, both = full[:, :, 0, 0], full[:, :, 0, 1:], full[:, :, 1:, 1:]
    bins = ones_bins(pr)
    low = np.array([np.flatnonzero(bins == b).min(initial=k + 1) for b in range(g.shape[1])])
    high = np.array([np.flatnonzero(bins == b).max(initial=-1) for b in range(g.shape[1])])
    total = ones.sum(axis=2)
    return bool(g.min() >= 0 and n.sum() > 0 and (n.sum(axis=1) <= aggregate.cohort_n).all()
                and (both <= ones[:, :, :, None]).all() and (both <= ones[:, :, None, :]).all()
                and (n[:, :, None, None] - ones[:, :, :, None] - ones[:, :, None, :] + both >= 0).all()
                and (total >= low * n).all() and (total <= high * n).all())


def candidate_source(aggregate: Any) -> Any:
    """What the candidates' own-pair test reads: ``pair_grid`` (exact cells) where the fold kept it, else
    ``pair_bins`` (binned cells; its two halves where the fold kept them,
    :func:`ldp.batch.rappor_pair_bins.halves_source`), each only when its counts are ones a fold can make; ``None``
    otherwise."""
    from ldp.batch.rappor_pair_bins import halves_source

    if _grid_recorded(aggregate):
        return aggregate.pair_grid
    if _bins_recorded(aggregate):
        return halves_source(aggregate)
    return None


def candidate_evidence(aggregate: Any, candidates: Any, *, alpha: float = 0.01) -> Evidence:
    """The checks of one RAPPOR window when its candidate strings are known (``ldp decode``, the ingest service),
    family-wise ``alpha``: the aggregate's checks with the candidates' own pairs (:func:`candidate_pair_check`,
    from ``pair_grid`` or ``pair_bins``, :func:`candidate_source`) in place of the chosen pairs, each at ``alpha``
    over their number (Bonferroni). Without candidates or either statistic, the aggregate's checks
    (:func:`~ldp.jobs.poisoning.poisoning_evidence`)."""
    from ldp.jobs.poisoning import poisoning_evidence

    alpha = _check_alpha(alpha)
    names = list(candidates or [])
    source = candidate_source(aggregate) if names else None
    if source is None:
        return poisoning_evidence(aggregate, alpha=alpha)
    law = RapporLaw()
    count = law.aggregate_check_count(aggregate) - int(_pairs_recorded(aggregate)) + 1
    checks = law.aggregate_checks(aggregate, alpha / count, pairs=False)
    checks.append(candidate_pair_check(aggregate.params, source, names, alpha / count, int(aggregate.n)))
    return Evidence(aggregate.params.protocol, int(aggregate.n), alpha, tuple(checks))


def candidate_evidence_summary(aggregate: Any, candidates: Any, *,
                               alpha: float = DEFAULT_ALPHA) -> dict[str, Any] | None:
    """:func:`candidate_evidence` as plain JSON, in the form of :func:`~ldp.jobs.poisoning.evidence_summary`
    (``ldp decode``'s estimates file); ``None`` for an empty aggregate."""
    if aggregate.n == 0:
        return None
    ev = candidate_evidence(aggregate, candidates, alpha=alpha)
    tested = [c for c in ev.checks if c.verdict != "untested"]
    return {"verdict": ev.verdict, "message": ev.message, "alpha": alpha,
            "p_value": min(c.p_value for c in tested) if tested else None,
            "checks": [{"name": c.name, "verdict": c.verdict, "p_value": None if c.verdict == "untested" else
                        c.p_value} for c in ev.checks]}
