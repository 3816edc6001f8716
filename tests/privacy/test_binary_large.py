"""Shuffled binary RR at any n (issue 88, item 3): :mod:`ldp.privacy.binary_large` reads each dataset's law at a few
points. Checked here against computations written independently of it: the laws themselves (mpmath, exact
convolutions, scipy's binomial tails), each dataset's δ(ε) (every outcome summed, or direct sums over one binomial at
10⁸ users), the whole-law search of :mod:`ldp.privacy.binary_shuffle` where both run, every dataset by brute force at
moderate n, and, at 10⁸ to 10¹² users, the exact ε of a real dataset (the others all on one value, from scipy's
binomial law at the exact threshold)."""

from __future__ import annotations

import math

import mpmath  # type: ignore[import-untyped]
import numpy as np
import pytest
from scipy.stats import binom

from ldp.privacy import binary_large as bl
from ldp.privacy.binary_shuffle import binary_rr_epsilon, exact_max, worst_case
from ldp.privacy.window_grid import eps_index, floor_delta

SLACK = 1 + 1e-9


def _p(eps0: float) -> float:
    return 1.0 / (1.0 + math.exp(-eps0))


def _binomial_delta(eps: float, p: float, size: int, prob: float) -> float:
    """δ(P‖Q)(ε) when the others' count is Bin(size, prob) (all others on one value): the threshold t* from
    r(t) = t(1 − prob)/((size − t + 1)·prob) > R in closed form, S(t) = A·f(t − 1) − (e^ε − 1)·Pr[Y >= t] from scipy,
    the largest S over t* ± 2 (S peaks at t*)."""
    q = 1 - p
    a, e1 = p - math.exp(eps) * q, math.expm1(eps)
    if a <= 0:
        return 0.0
    big_r = (math.exp(eps) * p - q) / a
    t0 = int((size + 1) * prob * big_r / ((1 - prob) + prob * big_r))
    t = np.arange(t0 - 2, t0 + 3)
    return float(np.max(a * binom.pmf(t - 1, size, prob) - e1 * binom.sf(t - 1, size, prob)))


def _exact_all_zero(eps0: float, n: int, delta: float) -> float:
    """The exact ε at δ of one real dataset, the n − 1 others all holding 0 (both directions: the other is the
    others all holding 1), by bisection on ε: a lower bound on any valid figure."""
    p = _p(eps0)
    lo, hi = 0.0, eps0
    for _ in range(80):
        mid = (lo + hi) / 2
        worst = max(_binomial_delta(mid, p, n - 1, 1 - p), _binomial_delta(mid, p, n - 1, p))
        lo, hi = (mid, hi) if worst > delta else (lo, mid)
    return hi


def _laws(ones: int, zeros: int, p: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """f, P and Q of one dataset, every outcome (scipy's binomials convolved directly)."""
    f = np.convolve(binom.pmf(np.arange(ones + 1), ones, p), binom.pmf(np.arange(zeros + 1), zeros, 1 - p))
    before, at = np.concatenate([[0.0], f]), np.concatenate([f, [0.0]])
    return f, p * before + (1 - p) * at, (1 - p) * before + p * at


@pytest.mark.parametrize("ones,zeros,eps0", [(0, 10**6 - 1, 1.0), (300, 500, 3.0), (1, 2000, 0.5)])
def test_reads_are_the_law_within_their_bounds(ones: int, zeros: int, eps0: float) -> None:
    """f(k) and Pr[Y >= k] read at a tilt, against mpmath (all others on one value: its binomial, 40 digits) or an
    exact convolution: within the bounds the read states, and those bounds are small."""
    p, side = _p(eps0), bl.Side(ones, zeros, _p(eps0))
    mean, sd = ones * p + zeros * (1 - p), math.sqrt((ones + zeros) * p * (1 - p))
    t = int(mean + 5 * sd)
    rd = bl._read(side, bl._tilt(side, t), np.arange(t - 2, t + 3))
    f, g = rd.f * np.exp(rd.scale), rd.h * np.exp(rd.scale)
    if ones == 0:
        mpmath.mp.dps = 40
        q = mpmath.mpf(1) - mpmath.mpf(p)
        exact_f = [mpmath.binomial(zeros, int(k)) * q ** int(k) * (1 - q) ** (zeros - int(k)) for k in rd.k]
        exact_g = [binom.sf(int(k) - 1, zeros, 1 - p) for k in rd.k]  # Boost's tail; mpmath's series is too slow here
    else:
        law = _laws(ones, zeros, p)[0]
        exact_f, exact_g = list(law[rd.k]), [law[int(k):].sum() for k in rd.k]
    for i in range(rd.k.size):
        bound_f = rd.f_err[i] / rd.f[i] + rd.par[i] + rd.scale_err[i]
        bound_g = rd.h_err[i] / rd.h[i] + rd.par[i] + rd.scale_err[i]
        assert abs(f[i] / float(exact_f[i]) - 1) <= bound_f + 1e-12  # + the reference's own rounding
        assert abs(g[i] / float(exact_g[i]) - 1) <= bound_g + 1e-12
    assert max(rd.f_err / rd.f) < 1e-12 and max(rd.par) < 1e-10


@pytest.mark.parametrize("eps0", [0.3, 1.0, 3.0, 5.9])
def test_each_datasets_delta_bound_is_above_its_exact_delta_and_tight(eps0: float) -> None:
    """δ(P‖Q)(ε) of datasets of 2,000 others, from every outcome: the bound is never below it (by more than the
    reference's rounding) and within 10⁻⁶ of it."""
    p, n = _p(eps0), 2000
    for ones in (0, 1, 200, 666, 999, 1999):
        _, big_p, big_q = _laws(ones, n - 1 - ones, p)
        side = bl.Side(ones, n - 1 - ones, p)
        for eps in np.geomspace(1e-4, eps0 * 0.99, 9):
            exact = float(np.maximum(big_p - math.exp(eps) * big_q, 0).sum())
            got = bl.delta_bound(side, eps)
            if exact > 1e-150:  # below, scipy's own pmf is off by more than 10⁻⁹
                assert exact / SLACK <= got <= exact * (1 + 1e-6)


def test_a_wrong_threshold_or_one_direction_would_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks have teeth. S read two points past the threshold is below a dataset's exact δ (2,000 others, as in
    the test above); and with only one direction of each dataset (the loss's other tail left out) the figure is below
    the exact ε of a real dataset (n = 2·10⁴, δ = 10⁻³⁰⁰, where the others all holding 1 is the worse direction)."""
    p, n, eps = _p(1.0), 2000, 0.1
    _, big_p, big_q = _laws(0, n - 1, p)
    exact = float(np.maximum(big_p - math.exp(eps) * big_q, 0).sum())
    side = bl.Side(0, n - 1, p)
    assert bl.delta_bound(side, eps) >= exact / SLACK
    real = bl._crossing

    def late(side: bl.Side, log_ratio: float) -> bl._Cross | None:
        got = real(side, log_ratio)
        assert got is not None and got.index + 2 < got.read.k.size
        return bl._Cross(got.upper + 1, got.upper + 2, got.read, got.index + 2)

    monkeypatch.setattr(bl, "_crossing", late)
    assert bl.delta_bound(side, eps) < exact * 0.99
    monkeypatch.setattr(bl, "_crossing", real)
    eps0, n, delta = 1.0, 2 * 10**4, floor_delta(1e-300)
    exact_eps = _exact_all_zero(eps0, n, delta)
    assert bl.large_epsilon.__wrapped__(eps0, n, delta)[0] >= exact_eps / SLACK
    sides = bl._sides
    monkeypatch.setattr(bl, "_sides", lambda m, p: [s for s in sides(m, p) if s[0].a <= s[0].b])
    assert bl.large_epsilon.__wrapped__(eps0, n, delta)[0] < exact_eps


@pytest.mark.parametrize("eps0,n,delta", [(1.0, 10**5, 1e-8), (4.0, 10**6, 1e-8), (1.0, 10**4, 1e-300),
                                          (5.9, 10**5, 1e-30), (0.5, 10**5, 1e-2), (5.9, 1000, 0.01), (2.0, 100, 1e-8)])
def test_agrees_with_the_whole_law_search(eps0: float, n: int, delta: float) -> None:
    """Where both run: the same grid figure as :func:`~ldp.privacy.binary_shuffle.worst_case` (within one grid step),
    never below the exact ε of its worst real dataset, and a lower value within 10⁻⁶ below that one's (which moves
    its masses 10⁻⁹ the pessimistic way: at 10⁵ users, ε up by about 1.4·10⁻⁷)."""
    d = floor_delta(delta)
    old = worst_case(eps0, n, d)
    eps, lower = bl.large_epsilon.__wrapped__(eps0, n, d)
    assert abs(eps_index(max(eps, 1e-12)) - eps_index(max(old.epsilon, 1e-12))) <= 1
    assert eps >= old.lower / SLACK and lower <= eps
    assert old.lower * (1 - 1e-6) <= lower <= old.lower * SLACK


def test_every_dataset_is_within_delta_at_the_figure() -> None:
    """n = 1,200, every dataset of the others in both directions, every outcome summed: within δ at the figure, and
    the worst needs at least 98 % of it."""
    eps0, n, delta = 2.0, 1200, 1e-6
    p = _p(eps0)
    eps = bl.large_epsilon.__wrapped__(eps0, n, floor_delta(delta))[0]
    worst, below = 0.0, 0.0
    for ones in range(n):
        _, big_p, big_q = _laws(ones, n - 1 - ones, p)
        for e, keep in ((eps, True), (0.98 * eps, False)):
            d = max(np.maximum(big_p - math.exp(e) * big_q, 0).sum(), np.maximum(big_q - math.exp(e) * big_p, 0).sum())
            worst, below = (max(worst, d), below) if keep else (worst, max(below, d))
    assert worst <= delta * SLACK < below


@pytest.mark.parametrize("eps0", [0.5, 1.0, 3.0, 5.9])
@pytest.mark.parametrize("delta,n", [(1e-8, 10**12), (1e-30, 10**10), (1e-300, 10**8)])
def test_at_large_n_within_a_few_per_cent_of_a_real_datasets_exact_epsilon(eps0: float, delta: float, n: int) -> None:
    """10⁸ to 10¹² users (the issue asks for 1.1×; measured 1.013-1.015×), never below the exact ε of the others all
    holding one value, and the lower value stated no larger than the figure."""
    eps, lower = binary_rr_epsilon(eps0, n, delta)
    exact = _exact_all_zero(eps0, n, floor_delta(delta))
    assert exact / SLACK <= eps <= 1.03 * exact
    assert lower <= eps and lower >= 0.98 * exact  # another real dataset's exact ε, within 1 % of this one's


def test_at_large_n_a_mixed_dataset_against_direct_sums() -> None:
    """Half the others on each value at n = 10⁸ (the datasets the clone bound loses on): the δ bound at ε against
    Σ_j Bin(a, p)(j)·(Pr[Bin(b, 1 − p) >= t − j], its pmf at t − 1 − j) summed directly over every j that matters, the
    threshold's bracket searched: never below, within 10⁻⁶."""
    eps0, n, eps = 1.0, 10**8, 3.5e-4
    p, a = _p(eps0), n // 2
    b = n - 1 - a
    side = bl.Side(a, b, p)
    cross = bl._crossing(side, bl._ratio(side, eps)[2])
    assert cross is not None
    sd = math.sqrt(a * p * (1 - p))
    j = np.arange(int(a * p - 12 * sd), int(a * p + 24 * sd))  # the terms that matter: ~4σ up, ±11 of their spread
    wa = binom.pmf(j, a, p)
    ts = np.arange(cross.lower, cross.upper + 2)
    m = np.arange(ts[0] - 1 - j[-1], ts[-1] - j[0])  # every t − 1 − j needed
    fb, sfb = binom.pmf(m, b, 1 - p), binom.sf(m, b, 1 - p)
    best = 0.0
    for t in ts:
        at = t - 1 - j - m[0]
        before, tail = float((wa * fb[at]).sum()), float((wa * sfb[at]).sum())
        best = max(best, (p - math.exp(eps) * (1 - p)) * before - math.expm1(eps) * tail)
    got = bl.delta_bound(side, eps)
    assert best / SLACK <= got <= best * (1 + 1e-6)


def test_non_increasing_in_n_across_the_whole_law_searchs_cap() -> None:
    """Consecutive n where the whole-law search stops (10⁴ users at δ = 10⁻²⁵⁰) and on to 10¹²; the figure at δ is
    no larger than at a neighbouring smaller grid δ."""
    delta = 1e-250
    cap = exact_max(floor_delta(delta))
    assert cap == 10**4
    got = [binary_rr_epsilon(1.0, m, delta)[0] for m in (cap - 1, cap, cap + 1, cap + 2, 10 * cap, 10**9, 10**9 + 1,
                                                          10**12)]
    assert got == sorted(got, reverse=True)
    assert got[2] >= got[1] * (1 - 1e-3)  # no jump where the method changes (one user: about ε/(2n) less)
    assert binary_rr_epsilon(1.0, 10**9, delta * 10 ** (1 / 1000))[0] <= got[-3]


def _pld_delta(loss: np.ndarray, prob: np.ndarray, infinite: float, eps: float) -> float:
    """δ(ε) of a privacy-loss law under P: E[(1 − e^(ε − L))₊] plus the mass at +∞."""
    return float((prob * np.maximum(1.0 - np.exp(eps - loss), 0.0)).sum()) + infinite


@pytest.mark.parametrize("eps0,n,delta", [(1.0, 3000, 1e-8), (4.0, 2000, 1e-6)])
def test_the_window_law_is_one_pair_above_every_dataset(eps0: float, n: int, delta: float) -> None:
    """The law composed over windows past the whole-law search's cap (ldp.privacy.binary_large_law): a valid law
    (masses >= 0, total 1 under P, at most 1 under Q), and its δ at every ε, both signs, at least every real
    dataset's in both directions (every outcome summed)."""
    from ldp.privacy.binary_large_law import window_law

    loss, prob, infinite = window_law(eps0, n, delta, 1e-6 * delta / 365)
    assert np.all(prob >= 0) and prob.sum() + infinite == pytest.approx(1.0, abs=1e-9)
    assert float((prob * np.exp(-loss)).sum()) <= 1.0 + 1e-9
    for ones in (0, 1, n // 7, n // 2, n - 1):
        _, big_p, big_q = _laws(ones, n - 1 - ones, _p(eps0))
        for eps in np.linspace(-eps0, eps0, 41):
            e = math.exp(eps)
            real = max(np.maximum(big_p - e * big_q, 0).sum(), np.maximum(big_q - e * big_p, 0).sum())
            assert real <= _pld_delta(loss, prob, infinite, eps) * SLACK + 1e-15


def test_the_window_law_composes_as_the_whole_laws() -> None:
    """A year (365 windows) at δ = 10⁻⁸: at n = 10⁶ the law composes to within 0.1 % of the whole-law search's hull
    law; at 10⁸ users it is never below a real dataset's exact δ (the others all 0, ε around the one-window figure)."""
    from ldp.privacy.binary_large_law import window_law
    from ldp.privacy.tilted_composition import LossLaw, composed_epsilon

    tail = 1e-6 * 1e-8 / 365
    new = composed_epsilon([(LossLaw.of(*window_law(1.0, 10**6, 1e-8, tail)), 365)], 1e-8)
    old = composed_epsilon([(LossLaw.of(*worst_case(1.0, 10**6, 1e-8).hull_losses()), 365)], 1e-8)
    assert new == pytest.approx(old, rel=1e-3)
    p, n = _p(1.0), 10**8
    law = window_law(1.0, n, 1e-8, tail)
    for eps in np.geomspace(1e-4, 1e-3, 7):
        real = max(_binomial_delta(eps, p, n - 1, 1 - p), _binomial_delta(eps, p, n - 1, p))
        assert real <= _pld_delta(*law, eps) * SLACK


def test_over_windows_past_the_cap_the_law_beats_the_clone_pair() -> None:
    """A year at 10⁸ users, ε₀ = 1, δ = 10⁻⁸ (past the whole-law search's cap over windows): the law answers, 17 %
    below the clone pair's law composed (0.00824 against 0.00993)."""
    from ldp.encoders.randomized_response import GRRParams
    from ldp.privacy.over_time import central_over_time
    from ldp.privacy.tilted_composition import LossLaw, composed_epsilon
    from ldp.privacy.window_pld import pair_losses

    g, n = GRRParams(1.0, 2), 10**8
    year = central_over_time(g.privacy_cost, n, 1e-8, 365, g.shuffle_structure).epsilon
    clone = composed_epsilon([(LossLaw.of(*pair_losses(g.shuffle_structure, n, 1e-6 * 1e-8 / 365)), 365)], 1e-8)
    assert year <= 0.85 * clone
